/**
 * A sandbox key lasts exactly 24 hours (spec, audit S-6): its createdAt and expiresAt come from one instant, also
 * when the service's clock and the database's disagree (here the service runs an hour behind the database).
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { login } from "../helpers/agents.ts";
import { startServer, type TestServer } from "../helpers/server.ts";

const DAY_MS = 24 * 3_600_000;
const SKEW_MS = -3_600_000;

let srv: TestServer;
let admin: string;

beforeAll(async () => {
  srv = await startServer({ seed: true, boot: { clock: { now: () => Date.now() + SKEW_MS } } });
  admin = await login(srv);
}, 60_000);
afterAll(async () => {
  await srv?.stop();
});

describe("sandbox key lifetime", () => {
  test("a new sandbox key's expiresAt is exactly 24 hours after its createdAt, in the answer and in the listing", async () => {
    const r = await srv.json("/api/v1/agent-keys", { method: "POST", headers: { authorization: `Bearer ${admin}` }, body: { name: "sandbox", tier: "SANDBOX" } });
    expect(r.status).toBe(201);
    const { id, createdAt, expiresAt } = r.body.data as { id: string; createdAt: string; expiresAt: string };
    expect(Date.parse(expiresAt) - Date.parse(createdAt)).toBe(DAY_MS);
    const listed = await srv.json("/api/v1/agent-keys", { headers: { authorization: `Bearer ${admin}` } });
    const row = (listed.body.data as { id: string; createdAt: string; expiresAt: string }[]).find((k) => k.id === id);
    expect(row).toMatchObject({ createdAt, expiresAt });
  });

  test("the lifetime is counted on the service's clock, the one the key's expiry is checked against", async () => {
    const before = Date.now() + SKEW_MS;
    const r = await srv.json("/api/v1/agent-keys", { method: "POST", headers: { authorization: `Bearer ${admin}` }, body: { name: "sandbox 2", tier: "SANDBOX" } });
    const after = Date.now() + SKEW_MS;
    expect(r.status).toBe(201);
    const created = Date.parse(r.body.data.createdAt);
    expect(created).toBeGreaterThanOrEqual(before);
    expect(created).toBeLessThanOrEqual(after);
    const used = await srv.json("/api/v1/agent/merchants/demo-store", { headers: { "x-agent-api-key": r.body.data.key } });
    expect(used.status).toBe(200);
  });

  test("a key of any other tier does not expire", async () => {
    const r = await srv.json("/api/v1/agent-keys", { method: "POST", headers: { authorization: `Bearer ${admin}` }, body: { name: "starter" } });
    expect(r.status).toBe(201);
    expect(r.body.data.expiresAt).toBeNull();
  });
});
