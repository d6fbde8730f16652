/**
 * onx_create_return with an idempotency key (audit D4): a retried call answers the first refund request.
 */
import { afterAll, beforeAll, expect, test } from "bun:test";
import type { TestKey } from "../helpers/agents.ts";
import type { TestServer } from "../helpers/server.ts";
import { DEMO_PRODUCT, errorOf, startBuyingAgent, structured, type Connected } from "./helpers.ts";

let srv: TestServer;
let key: TestKey;
let agent: Connected;

beforeAll(async () => {
  ({ srv, key, agent } = await startBuyingAgent());
}, 60_000);
afterAll(async () => {
  await agent?.close();
  await srv?.stop();
});

test("a retried onx_create_return with the same idempotency_key answers the first request; another amount with it is IDEMPOTENCY_KEY_CONFLICT", async () => {
  const cart = structured(await agent.call("create_cart", { items: [{ product_id: DEMO_PRODUCT, quantity: 1 }] }));
  const pv = structured(await agent.call("preview_checkout", { cart_id: cart.cart_id }));
  const o = structured(await agent.call("complete_checkout", { checkout_session_id: pv.checkout_session_id, idempotency_key: crypto.randomUUID(), payment_method: "MOCK" }));
  expect(o.status).toBe("COMPLETED");
  const k = crypto.randomUUID();
  const a = structured(await agent.call("onx_create_return", { order_id: o.order_id, amount: 100, reason: "dent", idempotency_key: k }));
  const b = structured(await agent.call("onx_create_return", { order_id: o.order_id, amount: 100, reason: "dent", idempotency_key: k }));
  expect(b.refund_id).toBe(a.refund_id);
  const e = errorOf(await agent.call("onx_create_return", { order_id: o.order_id, amount: 200, reason: "dent", idempotency_key: k }));
  expect(e.code).toBe("IDEMPOTENCY_KEY_CONFLICT");
  const [n] = await srv.db.sql<{ n: number }[]>`SELECT count(*)::int AS n FROM order_refunds WHERE order_id = ${o.order_id}`;
  expect(n.n).toBe(1);
}, 60_000);
