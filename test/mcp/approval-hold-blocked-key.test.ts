/**
 * Over MCP, a merchant's block of an agent key (audit X-3, docs/checkout.md "What one caller may hold"): the block
 * cancels the key's checkout waiting for the buyer (its hold released), a buyer who approves at the link afterwards is
 * charged nothing, and the key's next complete_checkout at that store is NOT_ELIGIBLE agent_blocked_by_merchant.
 */
import { afterAll, beforeAll, expect, test } from "bun:test";
import { login, type TestKey } from "../helpers/agents.ts";
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
  return { cartId, args, first };
}

test("a key blocked while its checkout waits for the buyer has that checkout canceled, charges nothing after a late approval, and is refused its next checkout", async () => {
  const { cartId, args, first } = await startCheckout("tok_needs_approval");
  expect(structured(first).status).toBe("PENDING_EXTERNAL_CONFIRMATION");
  const [order] = await srv.db.sql<{ id: string; intent_id: string; store_slug: string }[]>`SELECT id, intent_id, store_slug FROM orders WHERE cart_id = ${cartId}`;
  const held = await srv.db.sql`SELECT 1 FROM stock_reservations WHERE order_id = ${order!.id} AND status = 'held'`;

  const operator = await login(srv);
  const block = await srv.json(`/api/v1/merchant/stores/${order!.store_slug}/allowlist/${key.id}`, {
    method: "POST",
    headers: { authorization: `Bearer ${operator}` },
    body: { status: "blocked" },
  });
  expect(block.status).toBe(200);
  const [row] = await srv.db.sql`SELECT status, capture_ref FROM orders WHERE id = ${order!.id}`;
  expect(row).toEqual({ status: "canceled", capture_ref: null });
  if (held.length) expect(await srv.db.sql`SELECT 1 FROM stock_reservations WHERE order_id = ${order!.id} AND status = 'held'`).toHaveLength(0);

  // the buyer approves at the link anyway: the agent's completion captures nothing for the canceled order
  await decideIntent(srv, order!.intent_id, "approve");
  expect(errorOf(await agent.call("complete_checkout", args)).code).toBe("SESSION_INACTIVE");
  const led = await srv.db.sql`SELECT state FROM sandbox_ledger_intents WHERE intent_id = ${order!.intent_id}`;
  expect(led.map((l) => l.state)).not.toContain("captured");

  // the next checkout at that store is refused before any hold
  const next = await startCheckout("tok_approve");
  const err = errorOf(next.first);
  expect({ code: err.code, remedy: err.remedy, retryable: err.retryable, reason: err.details.reason, merchants: err.details.merchant_slugs }).toEqual({
    code: "NOT_ELIGIBLE",
    remedy: "different_path",
    retryable: false,
    reason: "agent_blocked_by_merchant",
    merchants: [order!.store_slug],
  });
  expect(await srv.db.sql`SELECT 1 FROM orders WHERE cart_id = ${next.cartId}`).toHaveLength(0);
}, 60_000);
