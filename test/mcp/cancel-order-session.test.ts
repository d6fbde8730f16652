/**
 * MCP `cancel_order` on a pending order goes through the cart's session (cart.cancel), exactly as REST
 * POST /agent/orders/{id}/cancel does: it is refused while money may move, and otherwise the session ends with it, so
 * a later completion cannot charge the buyer for an order already canceled (audit D, finding D1, repro R10).
 */
import { afterAll, beforeAll, expect, test } from "bun:test";
import type { TestKey } from "../helpers/agents.ts";
import type { TestServer } from "../helpers/server.ts";
import { DEMO_PRODUCT, errorOf, startBuyingAgent, structured, type Connected } from "./helpers.ts";
import { decideIntent } from "../helpers/sandbox-approval.ts";

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

async function startCheckout(paymentMethod: string) {
  const cart = structured(await agent.call("create_cart", { items: [{ product_id: DEMO_PRODUCT, quantity: 1 }] }));
  const cartId = cart.cart_id ?? cart.id;
  const preview = structured(await agent.call("preview_checkout", { cart_id: cartId }));
  const args = { checkout_session_id: preview.checkout_session_id, idempotency_key: crypto.randomUUID(), payment_method: paymentMethod };
  const first = await agent.call("complete_checkout", args);
  const [o] = await srv.db.sql<{ id: string; intent_id: string }[]>`SELECT id, intent_id FROM orders WHERE cart_id = ${cartId}`;
  return { cartId, args, first, order: o! };
}

test("an order canceled over MCP while the buyer has not approved ends its session, and the same completion charges nothing", async () => {
  const { args, first, order } = await startCheckout("tok_needs_approval");
  expect(structured(first).status).toBe("PENDING_EXTERNAL_CONFIRMATION");

  const c = await agent.call("cancel_order", { order_id: order.id });
  expect(c.isError).toBeFalsy();
  expect(structured(c).status).toBe("canceled");

  // the buyer approves at the link anyway; the agent's completion must not capture for the canceled order
  await decideIntent(srv, order.intent_id, "approve");
  const again = await agent.call("complete_checkout", args);
  expect(errorOf(again).code).toBe("SESSION_INACTIVE");
  const [row] = await srv.db.sql`SELECT status, capture_ref FROM orders WHERE id = ${order.id}`;
  expect(row).toEqual({ status: "canceled", capture_ref: null });
  const led = await srv.db.sql`SELECT state FROM sandbox_ledger_intents WHERE intent_id = ${order.intent_id}`;
  expect(led.map((l) => l.state)).not.toContain("captured");
}, 60_000);

test("an order whose capture is being reconciled is not canceled over MCP: ORDER_NOT_CANCELLABLE payment_in_progress, as over REST", async () => {
  const { first, order } = await startCheckout("tok_finalization_fails");
  expect(errorOf(first).code).toBe("PAYMENT_CAPTURED_FINALIZATION_FAILED");

  const c = await agent.call("cancel_order", { order_id: order.id });
  const err = errorOf(c);
  expect(err.code).toBe("ORDER_NOT_CANCELLABLE");
  expect(err.details.reason).toBe("payment_in_progress");
  const [row] = await srv.db.sql`SELECT status, reconciliation FROM orders WHERE id = ${order.id}`;
  expect(row).toEqual({ status: "pending", reconciliation: "finalization_failed" });

  const rest = await srv.json(`/api/v1/agent/orders/${order.id}/cancel`, { method: "POST", headers: key.headers, body: {} });
  expect(rest.status).toBe(409);
  expect(rest.body.code).toBe("ORDER_NOT_CANCELLABLE");
}, 60_000);
