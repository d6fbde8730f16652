/**
 * A call naming no payment method repeats the method the cart's earlier attempt used, also when that attempt's
 * session has ended and the call opens a new one (audit DZ-1's rule, docs/checkout.md "Payment method"). The cart
 * forgot it with the session: an agent that started a payment needing the buyer's approval and then called again the
 * way it had been calling (`{cartId, idempotency_key}` on the one-call route: 202 "waiting for the buyer" while the
 * approval was open) had, once the approval hold had expired, a new session opened and the store's default method
 * captured, with nobody asked. The same after a decline: the new session's call naming no method charged the default
 * card instead of being declined again until the agent names another method.
 *
 * The server runs without a reminder poll (`reminderPollMs: 0`) on the test's clock: a due session is ended by the
 * call that finds it (as its timer would end it), so nothing runs behind the test's back.
 */
import { beforeAll, describe, expect, test } from "bun:test";
import { ManualClock } from "../../actors/runtime/clock.ts";
import { ALL_SCOPES, createKey, type TestKey } from "../helpers/agents.ts";
import { useServer } from "../helpers/server.ts";

const SKILLET = "399d72f1-303c-5cf3-bc6a-5c82714b85d4"; // demo-store (its default method: MOCK, captured at once)
const APPROVAL_HOLD_MS = 60 * 60_000; // CHECKOUT_APPROVAL_HOLD_MS default
const READY_LIFETIME_MS = 30 * 60_000;

const clock = new ManualClock(Date.now());
const srv = useServer({ seed: true, boot: { clock, reminderPollMs: 0 } });
let key: TestKey;

beforeAll(async () => {
  key = await createKey(srv, { scopes: ALL_SCOPES });
}, 120_000);

const cart = async () => {
  const r = await srv.json("/api/v1/agent/cart", { method: "POST", headers: key.headers, body: { items: [{ product_id: SKILLET, quantity: 1 }] } });
  expect(r.status).toBe(201);
  return r.body.data.id as string;
};
const checkout = (body: Record<string, unknown>) => srv.json("/api/v1/agent/checkout", { method: "POST", headers: key.headers, body });
const paidOrders = (cartId: string) => srv.db.sql`SELECT id FROM orders WHERE cart_id = ${cartId} AND paid_at IS NOT NULL`;

describe("a call naming no payment method after the cart's session ended", () => {
  test("after the buyer's approval expired, the same one-call checkout asks the buyer again in a new session instead of capturing the default method", async () => {
    const cartId = await cart();
    const k = crypto.randomUUID();
    const first = await checkout({ cartId, payment_method: "tok_needs_approval", idempotency_key: k });
    expect(first.status).toBe(202);
    const waiting = await checkout({ cartId, idempotency_key: k });
    expect(waiting.status).toBe(202); // the same call while the approval is open: still waiting, nothing charged

    clock.advance(APPROVAL_HOLD_MS);
    const again = await checkout({ cartId, idempotency_key: k });
    expect(again.status).toBe(202);
    expect(again.body.code).toBe("user_action_required");
    expect(again.body.details.checkout_session_id).not.toBe(first.body.details.checkout_session_id);
    expect(again.body.details.approval_url).not.toBe(first.body.details.approval_url);
    expect(await paidOrders(cartId)).toHaveLength(0);
  });

  test("after a decline and the session's expiry, a new session's call naming no method is declined again; naming one pays", async () => {
    const cartId = await cart();
    const declined = await checkout({ cartId, payment_method: "tok_decline", idempotency_key: crypto.randomUUID() });
    expect(declined.status).toBe(402);

    clock.advance(READY_LIFETIME_MS);
    const p = await srv.json("/api/v1/agent/checkout/preview", { method: "POST", headers: key.headers, body: { cartId } });
    expect(p.body.data.checkout_session_id).not.toBe(declined.body.details.checkout_session_id);
    const k = crypto.randomUUID();
    const again = await checkout({ cartId, checkout_session_id: p.body.data.checkout_session_id, idempotency_key: k });
    expect(again.status).toBe(402);
    expect(again.body.code).toBe("PAYMENT_DECLINED");
    expect(await paidOrders(cartId)).toHaveLength(0);

    const named = await checkout({ cartId, checkout_session_id: p.body.data.checkout_session_id, idempotency_key: k, payment_method: "tok_approve" });
    expect(named.status).toBe(200);
    expect(named.body.data.status).toBe("COMPLETED");
  });

  test("a cart's first session with no earlier attempt still pays with the store's default method", async () => {
    const cartId = await cart();
    const r = await checkout({ cartId, idempotency_key: crypto.randomUUID() });
    expect(r.status).toBe(200);
    const [o] = await srv.db.sql<{ payment_method: string }[]>`SELECT payment_method FROM orders WHERE cart_id = ${cartId}`;
    expect(o.payment_method).toBe("MOCK");
  });

  test("after the agent canceled a session, the next session's call naming no method repeats the canceled attempt's method", async () => {
    const cartId = await cart();
    const first = await checkout({ cartId, payment_method: "tok_needs_approval", idempotency_key: crypto.randomUUID() });
    expect(first.status).toBe(202);
    const cancel = await srv.json(`/api/v1/agent/checkout/${first.body.details.checkout_session_id}/cancel`, { method: "POST", headers: key.headers });
    expect(cancel.status).toBe(200);
    const again = await checkout({ cartId, idempotency_key: crypto.randomUUID() });
    expect(again.status).toBe(202);
    expect(await paidOrders(cartId)).toHaveLength(0);
  });
});
