/**
 * Review RZ-2: the per-address registration limit of /oauth/register answered its 429 in the service envelope
 * (`error` holding the sentence, no `error_description`), unlike the route's 400 and 401 (RFC 7591 §3.2.2 / RFC 6749
 * §5.2 bodies). An OAuth client reads `error` as a code and `error_description` as the message: the MCP SDK's
 * registerClient threw a ServerError with an empty message, so the reason and the wait were lost. The 429 is now an
 * OAuth error body, with Retry-After and the bucket's rate headers.
 */
import { afterAll, beforeAll, expect, test } from "bun:test";
import { parseErrorResponse } from "@modelcontextprotocol/sdk/client/auth.js";
import { startServer, type TestServer } from "../helpers/server.ts";

let srv: TestServer;
beforeAll(async () => {
  srv = await startServer();
}, 60_000);
afterAll(async () => {
  await srv?.stop();
});

const client = (i: number) => ({ client_name: `Agent ${i}`, redirect_uris: [`http://127.0.0.1:9/cb/${i}`], token_endpoint_auth_method: "none" });
const register = (metadata: unknown) => srv.json("/api/v1/oauth/register", { method: "POST", body: metadata });

test("the 21st registration from one address within the hour is refused with an OAuth error body, Retry-After and the bucket's headers, which the MCP SDK reads as its message", async () => {
  for (let i = 0; i < 20; i++) expect((await register(client(i))).status).toBe(201);
  const refused = await register(client(20));
  expect(refused.status).toBe(429);
  const retryAfter = Number(refused.headers.get("retry-after"));
  expect(retryAfter).toBeGreaterThan(3_500);
  expect(retryAfter).toBeLessThanOrEqual(3_600);
  const description = `Too many client registrations from this address; retry after ${retryAfter} seconds.`;
  expect(refused.body).toEqual({ success: false, error: "rate_limit_exceeded", error_description: description, code: "rate_limit_exceeded" });
  expect(refused.headers.get("x-ratelimit-limit")).toBe("20");
  expect(refused.headers.get("x-ratelimit-remaining")).toBe("0");
  expect(Number(refused.headers.get("x-ratelimit-reset"))).toBeGreaterThan(Date.now() / 1000 + 3_500);
  expect(refused.headers.get("cache-control")).toBe("no-store");

  // what the MCP SDK's registerClient throws on this answer: the description is its message
  const parsed = await parseErrorResponse(new Response(JSON.stringify(refused.body), { status: 429 }));
  expect(parsed.message).toBe(description);
}, 30_000);
