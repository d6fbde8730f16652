/**
 * Audit W-7 (session 17), the webhook routes: a key their body schemas do not have was dropped by the gateway's
 * normaliser, so `overlapSecond: 0` on a secret rotation (meant to kill a leaked secret at once) kept the old secret
 * signing for the default 24 h, and `enabled: false` on a registration made an enabled endpoint. Now 400
 * validation_error naming the key (gateway/rest/strict-body.ts), nothing written.
 */
import { afterAll, beforeAll, expect, test } from "bun:test";
import { login } from "../helpers/agents.ts";
import { startServer, type TestServer } from "../helpers/server.ts";

let srv: TestServer;
let auth: Record<string, string>;
const BASE = "/api/v1/merchant/stores/demo-store/webhooks";
beforeAll(async () => {
  srv = await startServer({ config: { RATE_LIMITS_ENABLED: false, ALLOW_PRIVATE_URLS: true } });
  auth = { authorization: `Bearer ${await login(srv)}` };
}, 60_000);
afterAll(async () => {
  await srv?.stop();
});

test("a registration with a key the route does not have is 400 naming it, and registers nothing", async () => {
  const r = await srv.json(BASE, { method: "POST", headers: auth, body: { url: "http://127.0.0.1:9/h", events: ["order.created"], enabled: false } });
  expect(r.status).toBe(400);
  expect(r.body).toMatchObject({ success: false, code: "validation_error", details: { field: "enabled" } });
  const list = await srv.json(BASE, { headers: auth });
  expect(list.body.data).toEqual([]);
});

test("a secret rotation with a misspelt overlap is 400 naming it, and the secret is not rotated", async () => {
  const created = await srv.json(BASE, { method: "POST", headers: auth, body: { url: "http://127.0.0.1:9/h", events: ["order.created"] } });
  expect(created.status).toBe(201);
  const id = created.body.data.id;
  const r = await srv.json(`${BASE}/${id}/rotate-secret`, { method: "POST", headers: auth, body: { overlapSecond: 0 } });
  expect(r.status).toBe(400);
  expect(r.body).toMatchObject({ code: "validation_error", details: { field: "overlapSecond" } });
  const ok = await srv.json(`${BASE}/${id}/rotate-secret`, { method: "POST", headers: auth, body: { overlapSeconds: 0 } });
  expect(ok.status).toBe(200);
  expect(ok.body.data.secret).not.toBe(created.body.data.secret);
});
