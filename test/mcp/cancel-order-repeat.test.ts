/**
 * MCP cancel_order declares idempotentHint: a repeated cancel of an order this agent's cancel canceled (nothing
 * charged) answers `canceled` again, sent at once with the first or after it (review RC-3), without asking the human
 * again; an order its merchant canceled stays ORDER_NOT_CANCELLABLE (details.status canceled), as over REST.
 */
import { afterAll, beforeAll, expect, test } from "bun:test";
import { login } from "../helpers/agents.ts";
import type { TestServer } from "../helpers/server.ts";
import { counted, DEMO_PRODUCT, errorOf, startBuyingAgent, structured, type Connected } from "./helpers.ts";

let srv: TestServer;
let agent: Connected;
beforeAll(async () => {
  ({ srv, agent } = await startBuyingAgent());
}, 60_000);
afterAll(async () => {
  await agent?.close();
  await srv?.stop();
});

async function pendingOrder(): Promise<string> {
  const cart = structured(await agent.call("create_cart", { items: [{ product_id: DEMO_PRODUCT, quantity: 1 }] }));
  const cartId = cart.cart_id ?? cart.id;
  const preview = structured(await agent.call("preview_checkout", { cart_id: cartId }));
  const first = await agent.call("complete_checkout", { checkout_session_id: preview.checkout_session_id, idempotency_key: crypto.randomUUID(), payment_method: "tok_needs_approval" });
  expect(structured(first).status).toBe("PENDING_EXTERNAL_CONFIRMATION");
  const [o] = await srv.db.sql<{ id: string }[]>`SELECT id FROM orders WHERE cart_id = ${cartId}`;
  return o!.id;
}

test("cancel_order sent twice at once answers canceled to both, and a later retry answers canceled too", async () => {
  const orderId = await pendingOrder();
  const both = await Promise.all([agent.call("cancel_order", { order_id: orderId }), agent.call("cancel_order", { order_id: orderId })]);
  for (const r of both) {
    expect(r.isError).toBeFalsy();
    expect(structured(r)).toMatchObject({ order_id: orderId, status: "canceled" });
  }
  // the repeat is answered without asking the human again (review RE-2)
  const { result: later, asked } = await counted(agent, () => agent.call("cancel_order", { order_id: orderId }));
  expect(asked).toBe(0);
  expect(later.isError).toBeFalsy();
  expect(structured(later)).toMatchObject({ order_id: orderId, status: "canceled" });
}, 60_000);

test("cancel_order of a pending order its merchant canceled is ORDER_NOT_CANCELLABLE with status canceled", async () => {
  const orderId = await pendingOrder();
  const admin = await login(srv);
  const m = await srv.json(`/api/v1/merchant/stores/demo-store/orders/${orderId}/status`, { method: "POST", headers: { authorization: `Bearer ${admin}` }, body: { status: "canceled" } });
  expect(m.status).toBe(200);
  const r = await agent.call("cancel_order", { order_id: orderId });
  const err = errorOf(r);
  expect(err.code).toBe("ORDER_NOT_CANCELLABLE");
  expect(err.details.status).toBe("canceled");
}, 60_000);
