/**
 * Audit W-6: a webhook URL on port 0 names no service (nothing can listen there; every attempt fails with a
 * connection error for 72 h, then the endpoint is disabled after 5 days): it is refused at registration with 400
 * validation_error on url, like the other URLs that can never be delivered to.
 */
import { afterAll, beforeAll, expect, test } from "bun:test";
import { login } from "../helpers/agents.ts";
import { startServer, type TestServer } from "../helpers/server.ts";

let srv: TestServer;
let token: string;

beforeAll(async () => {
  srv = await startServer({ seed: true, config: { RATE_LIMITS_ENABLED: false } });
  token = await login(srv);
}, 60_000);
afterAll(async () => {
  await srv?.stop();
});

test("POST …/webhooks with a URL on port 0: 400 validation_error on url, no endpoint", async () => {
  const r = await srv.json("/api/v1/merchant/stores/demo-store/webhooks", {
    method: "POST",
    headers: { authorization: `Bearer ${token}` },
    body: { url: "http://127.0.0.1:0/hooks", events: ["order.created"] },
  });
  expect(r.status).toBe(400);
  expect(r.body).toMatchObject({ success: false, code: "validation_error", details: { field: "url" } });
  const [n] = await srv.db.sql<{ n: number }[]>`SELECT count(*)::int AS n FROM webhook_endpoints WHERE store_slug = 'demo-store' AND url LIKE '%:0/%'`;
  expect(n!.n).toBe(0);
});
