/**
 * Session 17 (the agent-side twin of audit W-7): a refund request's body key the route does not have was dropped by
 * the gateway's normaliser, and "omitted = full remaining" turned `amount_cents: 500` (a partial refund meant) into a
 * request for the FULL remaining amount. Now 400 validation_error naming the key, and no refund request is made.
 */
import { afterAll, beforeAll, expect, test } from "bun:test";
import { ALL_SCOPES, createKey, placeOrder, type TestKey } from "../helpers/agents.ts";
import { startServer, type TestServer } from "../helpers/server.ts";

const SHAMPOO = "78be202c-7531-5abc-af67-04c4e6b96b7a"; // demo-store DS-0053
let srv: TestServer;
let key: TestKey;
beforeAll(async () => {
  srv = await startServer({ seed: true, config: { RATE_LIMITS_ENABLED: false } });
  key = await createKey(srv, { scopes: ALL_SCOPES });
}, 120_000);
afterAll(async () => {
  await srv?.stop();
});

test("a misspelt amount is 400 naming the key, not a request for the full amount", async () => {
  const orderId = await placeOrder(srv, key, SHAMPOO);
  const r = await srv.json(`/api/v1/agent/orders/${orderId}/refund`, { method: "POST", headers: key.headers, body: { amount_cents: 500, reason: "one item broken" } });
  expect(r.status).toBe(400);
  expect(r.body).toMatchObject({ success: false, code: "validation_error", details: { field: "amount_cents" } });
  const [{ n }] = await srv.db.sql<{ n: number }[]>`SELECT count(*)::int AS n FROM order_events WHERE order_id = ${orderId} AND type LIKE 'refund%'`;
  expect(n).toBe(0);
  const ok = await srv.json(`/api/v1/agent/orders/${orderId}/refund`, { method: "POST", headers: key.headers, body: { amount: 500, reason: "one item broken" } });
  expect(ok.status).toBe(201);
  // the count above reads the row a request writes
  const [{ m }] = await srv.db.sql<{ m: number }[]>`SELECT count(*)::int AS m FROM order_events WHERE order_id = ${orderId} AND type = 'refund_requested'`;
  expect(m).toBe(1);
});
