/**
 * cancel_order's description and its refusal send an agent the same way (session 22, helper A): a paid order is
 * refunded with onx_create_return at once, which the merchant approves. The description said "or you use
 * onx_create_return once delivered", so an agent reading tools/list waited for a delivery that a refund request does
 * not need (a paid, undelivered order is refundable: docs/checkout.md "Refunds"), while the refusal itself said to
 * request the refund now.
 */
import { afterAll, beforeAll, expect, test } from "bun:test";
import type { TestServer } from "../helpers/server.ts";
import { DEMO_PRODUCT, errorOf, startBuyingAgent, structured, type Connected } from "./helpers.ts";

let srv: TestServer;
let agent: Connected;
beforeAll(async () => {
  ({ srv, agent } = await startBuyingAgent());
}, 60_000);
afterAll(async () => {
  await agent?.close();
  await srv?.stop();
});

test("cancel_order's description sends a paid order to onx_create_return without waiting for delivery, as its refusal and the refund do", async () => {
  const { tools } = await agent.client.listTools();
  const description = tools.find((t) => t.name === "cancel_order")!.description!;
  expect(description).not.toContain("once delivered");
  expect(description).toContain("onx_create_return");

  // what the description promises: a paid order that was never delivered is refused a cancel and refunded on request
  const cart = structured(await agent.call("create_cart", { items: [{ product_id: DEMO_PRODUCT, quantity: 1 }] }));
  const preview = structured(await agent.call("preview_checkout", { cart_id: cart.cart_id }));
  const paid = structured(await agent.call("complete_checkout", { checkout_session_id: preview.checkout_session_id, idempotency_key: crypto.randomUUID(), payment_method: "MOCK" }));
  expect(paid.status).toBe("COMPLETED");
  const refused = errorOf(await agent.call("cancel_order", { order_id: paid.order_id }));
  expect(refused.code).toBe("ORDER_NOT_CANCELLABLE");
  expect(refused.details).toMatchObject({ status: "paid", refund_tool: "onx_create_return" });
  const refund = await agent.call("onx_create_return", { order_id: paid.order_id, reason: "changed my mind" });
  expect(refund.isError).toBeFalsy();
  expect(structured(refund)).toMatchObject({ order_id: paid.order_id, status: "PENDING_APPROVAL", amount_minor: 9700 });
}, 60_000);
