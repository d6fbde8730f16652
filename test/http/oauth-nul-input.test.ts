/**
 * The OAuth endpoints answer a value their database cannot take (a NUL byte: Postgres class 22) as an OAuth error
 * (RFC 6749 §5.2: `error` a registered code, `error_description` the sentence), not the service's generic 400 body,
 * whose `error` was a sentence an OAuth client cannot branch on (audit F-7). Through HTTP against the real server.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { startServer, type TestServer } from "../helpers/server.ts";

let srv: TestServer;
const UNACCEPTABLE_VALUE = "A value in the request is not acceptable (for example a NUL byte, broken Unicode text or an out-of-range number).";

beforeAll(async () => {
  srv = await startServer();
}, 60_000);
afterAll(async () => {
  await srv?.stop();
});

const form = (path: string, body: string) =>
  srv.json(path, { method: "POST", headers: { "content-type": "application/x-www-form-urlencoded" }, body });

const clients = async () => (await srv.db.sql<{ n: number }[]>`SELECT count(*)::int AS n FROM oauth_clients`)[0]!.n;

describe("a NUL byte sent to an OAuth endpoint", () => {
  test("in a registration's client_name is 400 with an OAuth error body and registers no client", async () => {
    const before = await clients();
    const r = await srv.json("/api/v1/oauth/register", { method: "POST", body: { redirect_uris: ["https://a.example/cb"], client_name: "a\u0000b" } });
    expect(r.status).toBe(400);
    expect(r.body).toEqual({ success: false, error: "invalid_client_metadata", error_description: UNACCEPTABLE_VALUE, code: "invalid_client_metadata" });
    expect(await clients()).toBe(before);
  }, 30_000);

  test("in the token endpoint's client_id is 400 invalid_request with an error_description", async () => {
    const r = await form("/api/v1/oauth/token", "grant_type=client_credentials&client_id=%00&client_secret=%00");
    expect(r.status).toBe(400);
    expect(r.body).toEqual({ success: false, error: "invalid_request", error_description: UNACCEPTABLE_VALUE, code: "invalid_request" });
    expect(r.headers.get("cache-control")).toBe("no-store");
  }, 30_000);

  test("in the revocation endpoint's token and client_id is 400 invalid_request with an error_description", async () => {
    const r = await form("/api/v1/oauth/revoke", "token=%00&client_id=%00");
    expect(r.status).toBe(400);
    expect(r.body).toEqual({ success: false, error: "invalid_request", error_description: UNACCEPTABLE_VALUE, code: "invalid_request" });
  }, 30_000);

  test("leaves the other answers as they were: an unknown client without a NUL is still 401 invalid_client", async () => {
    const r = await form("/api/v1/oauth/token", "grant_type=client_credentials&client_id=mcpc_nobody&client_secret=x");
    expect(r.status).toBe(401);
    expect(r.body).toMatchObject({ success: false, error: "invalid_client", code: "invalid_client" });
  }, 30_000);
});
