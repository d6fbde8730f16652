/**
 * Merchant cancels and money (audit D1, D2, D5, D10): a merchant cancel of a pending order goes through its checkout
 * session and never lets a later attempt charge for a canceled order; a merchant cancel of a paid or fulfilled order
 * refunds the capture; a merchant's paid-order cancel supersedes open refund requests and refunds only what is left;
 * an agent's cancel of a paid order moves no money; an x402 order is not refunded through the card rail.
 */
import { beforeAll, describe, expect, test } from "bun:test";
import { ALL_SCOPES, createKey, type TestKey } from "../helpers/agents.ts";
import { useServer } from "../helpers/server.ts";
import { decideAt, linkPath } from "../helpers/sandbox-approval.ts";

const SKILLET = "399d72f1-303c-5cf3-bc6a-5c82714b85d4"; // tracked stock, demo-store
const BOARD = "5befd987-79cd-540c-8a5d-2ba5a30aed41"; // untracked stock, demo-store
const srv = useServer({ seed: true, admin: true });
let key: TestKey;

beforeAll(async () => {
  key = await createKey(srv, { scopes: ALL_SCOPES });
}, 120_000);

async function cart(productId: string): Promise<string> {
  const r = await srv.json("/api/v1/agent/cart", { method: "POST", headers: key.headers, body: { items: [{ product_id: productId, quantity: 1 }] } });
  expect(r.status).toBe(201);
  return r.body.data.id;
}
const checkout = (body: Record<string, unknown>) => srv.json("/api/v1/agent/checkout", { method: "POST", headers: key.headers, body });
const merchantMove = (orderId: string, status: string) =>
  srv.json(`/api/v1/merchant/stores/demo-store/orders/${orderId}/status`, { method: "POST", headers: { authorization: `Bearer ${srv.admin}` }, body: { status } });
const stock = async () => (await srv.db.sql<{ s: number; r: number }[]>`SELECT stock_quantity AS s, reserved_quantity AS r FROM products WHERE id = ${SKILLET}`)[0];
const orderOfCart = async (cartId: string) => (await srv.db.sql<{ id: string; status: string }[]>`SELECT id, status FROM orders WHERE cart_id = ${cartId} ORDER BY created_at`)[0];
const ledgerOf = async (captureRef: string) =>
  (await srv.db.sql<{ state: string; amount_minor: number; refunded_minor: number }[]>`
    SELECT state, amount_minor, refunded_minor FROM sandbox_ledger_intents WHERE capture_ref = ${captureRef}`)[0];

async function paidOrder(productId = BOARD): Promise<{ orderId: string; totalMinor: number; captureRef: string }> {
  const paid = await checkout({ cartId: await cart(productId), payment_method: "tok_approve" });
  expect(paid.status).toBe(200);
  const [o] = await srv.db.sql<{ capture_ref: string }[]>`SELECT capture_ref FROM orders WHERE id = ${paid.body.data.order_id}`;
  return { orderId: paid.body.data.order_id, totalMinor: paid.body.data.total_minor, captureRef: o.capture_ref };
}

describe("a merchant cancel of a pending order goes through its checkout session", () => {
  test("an order awaiting the buyer's approval is canceled with its session: the hold is released and the buyer's later approval charges nothing", async () => {
    const before = await stock();
    const cartId = await cart(SKILLET);
    const idem = crypto.randomUUID();
    const w = await checkout({ cartId, payment_method: "tok_needs_approval", idempotency_key: idem });
    expect(w.status).toBe(202);
    const sid = w.body.details.checkout_session_id;
    const o = await orderOfCart(cartId);
    expect((await stock()).r).toBe(before.r + 1);

    const m = await merchantMove(o.id, "canceled");
    expect(m.status).toBe(200);
    expect(m.body.data).toMatchObject({ order_id: o.id, status: "canceled" });
    expect(await stock()).toEqual(before);

    const link = linkPath(String(w.body.details.approval_url));
    const intentId = link.split("/")[5];
    await decideAt(srv, link, "approve");
    const done = await checkout({ cartId, checkout_session_id: sid, idempotency_key: idem });
    expect(done.status).toBe(409);
    expect(done.body.code).toBe("SESSION_INACTIVE");
    const [ledger] = await srv.db.sql<{ state: string }[]>`SELECT state FROM sandbox_ledger_intents WHERE intent_id = ${intentId!}`;
    expect(ledger.state).not.toBe("captured");
    const [row] = await srv.db.sql<{ status: string; capture_ref: string | null }[]>`SELECT status, capture_ref FROM orders WHERE id = ${o.id}`;
    expect(row).toEqual({ status: "canceled", capture_ref: null });
    expect(await stock()).toEqual(before);
  });

  test("after a declined attempt the merchant's cancel ends the session, so the agent's retry never charges the canceled order", async () => {
    const before = await stock();
    const cartId = await cart(SKILLET);
    const idem = crypto.randomUUID();
    const d = await checkout({ cartId, payment_method: "tok_decline", idempotency_key: idem });
    expect(d.status).toBe(402);
    const o = await orderOfCart(cartId);
    expect(o.status).toBe("pending");
    const m = await merchantMove(o.id, "canceled");
    expect(m.status).toBe(200);
    expect(m.body.data.status).toBe("canceled");

    const r = await checkout({ cartId, payment_method: "tok_approve", idempotency_key: idem });
    const [row] = await srv.db.sql<{ status: string; capture_ref: string | null }[]>`SELECT status, capture_ref FROM orders WHERE id = ${o.id}`;
    expect(row).toEqual({ status: "canceled", capture_ref: null });
    if (r.status === 200) {
      // A new session, with its own order: the canceled one is not the one paid.
      expect(r.body.data.order_id).not.toBe(o.id);
      expect((await stock()).s).toBe(before.s - 1);
    }
    expect((await stock()).r).toBe(before.r);
  });

  test("a payment whose outcome is unknown cannot be canceled by the merchant: 409 ORDER_NOT_CANCELLABLE payment_in_progress, nothing changes", async () => {
    const before = await stock();
    const cartId = await cart(SKILLET);
    // tok_amount_mismatch leaves the session SETTLEMENT_UNKNOWN; its reconciliation flag is cleared so that only the
    // live session stands in the way (the flag has its own refusal, next test).
    const m0 = await checkout({ cartId, payment_method: "tok_amount_mismatch", idempotency_key: crypto.randomUUID() });
    expect(m0.status).toBe(409);
    const o = await orderOfCart(cartId);
    await srv.db.sql`UPDATE orders SET reconciliation = NULL WHERE id = ${o.id}`;
    const m = await merchantMove(o.id, "canceled");
    expect(m.status).toBe(409);
    expect(m.body).toMatchObject({ success: false, code: "ORDER_NOT_CANCELLABLE", details: { status: "pending", reason: "payment_in_progress" } });
    expect((await orderOfCart(cartId)).status).toBe("pending");
    expect((await stock()).r).toBe(before.r + 1);
  });

  test("a pending order flagged for reconciliation (money captured) is 409 for the merchant's cancel, not a silent cancel", async () => {
    const cartId = await cart(BOARD);
    const f = await checkout({ cartId, payment_method: "tok_finalization_fails", idempotency_key: crypto.randomUUID() });
    expect(f.status).toBe(409);
    const o = await orderOfCart(cartId);
    const m = await merchantMove(o.id, "canceled");
    expect(m.status).toBe(409);
    expect(m.body).toMatchObject({ code: "ORDER_NOT_CANCELLABLE", details: { reason: "reconciliation_required" } });
    expect((await orderOfCart(cartId)).status).toBe("pending");
  });

  test("a later attempt of a session whose order was canceled behind its back holds nothing and charges nothing (409 STATE_EXECUTION_BLOCKED order_canceled)", async () => {
    const before = await stock();
    const cartId = await cart(SKILLET);
    const idem = crypto.randomUUID();
    expect((await checkout({ cartId, payment_method: "tok_decline", idempotency_key: idem })).status).toBe(402);
    const o = await orderOfCart(cartId);
    // Stands in for a cancel that bypassed the session (the route fixed above, or a racing writer).
    await srv.db.sql`UPDATE orders SET status = 'canceled' WHERE id = ${o.id}`;
    const r = await checkout({ cartId, payment_method: "tok_approve", idempotency_key: idem });
    expect(r.status).toBe(409);
    expect(r.body).toMatchObject({ code: "STATE_EXECUTION_BLOCKED", details: { reasons: [{ code: "order_canceled", order_id: o.id, status: "canceled" }] } });
    expect(await stock()).toEqual(before);
    const [captures] = await srv.db.sql<{ n: number }[]>`SELECT count(*)::int AS n FROM orders WHERE cart_id = ${cartId} AND capture_ref IS NOT NULL`;
    expect(captures.n).toBe(0);
  });
});

describe("a merchant cancel of a paid or fulfilled order refunds the capture", () => {
  test("a paid order canceled by the merchant answers canceled with a REFUNDED refund of the whole capture, and the processor refunded it once", async () => {
    const { orderId, totalMinor, captureRef } = await paidOrder();
    const m = await merchantMove(orderId, "canceled");
    expect(m.status).toBe(200);
    expect(m.body.data).toMatchObject({ order_id: orderId, status: "canceled", refund: { status: "REFUNDED", amount_minor: totalMinor } });
    expect(await ledgerOf(captureRef)).toMatchObject({ state: "captured", refunded_minor: totalMinor });
    const view = await srv.json(`/api/v1/agent/orders/${orderId}`, { headers: key.headers });
    expect(view.body.data).toMatchObject({ status: "canceled", refunded_minor: totalMinor });
    expect(view.body.data.refunds).toHaveLength(1);
    const [reminders] = await srv.db.sql<{ n: number }[]>`SELECT count(*)::int AS n FROM actor_reminders WHERE kind = 'store' AND id = 'demo-store' AND name = 'refunds'`;
    expect(reminders.n).toBe(0);
  });

  test("a fulfilled order canceled by the merchant is refunded the same way", async () => {
    const { orderId, totalMinor, captureRef } = await paidOrder();
    expect((await merchantMove(orderId, "fulfilled")).status).toBe(200);
    const m = await merchantMove(orderId, "canceled");
    expect(m.status).toBe(200);
    expect(m.body.data).toMatchObject({ status: "canceled", refund: { status: "REFUNDED", amount_minor: totalMinor } });
    expect((await ledgerOf(captureRef)).refunded_minor).toBe(totalMinor);
  });

  test("a merchant cancel supersedes a request still PENDING_APPROVAL and refunds the whole capture once", async () => {
    const { orderId, totalMinor, captureRef } = await paidOrder();
    const p = await srv.json(`/api/v1/agent/orders/${orderId}/refund`, { method: "POST", headers: key.headers, body: { amount: 500 } });
    expect(p.status).toBe(201);
    const m = await merchantMove(orderId, "canceled");
    expect(m.body.data.refund).toMatchObject({ status: "REFUNDED", amount_minor: totalMinor });
    const [old] = await srv.db.sql<{ status: string }[]>`SELECT status FROM order_refunds WHERE id = ${p.body.data.refund_id}`;
    expect(old.status).toBe("REJECTED");
    expect((await ledgerOf(captureRef)).refunded_minor).toBe(totalMinor);
  });
});

describe("an agent's cancel never moves a paid order's money (audit E: the merchant approves refunds)", () => {
  test("the agent's cancel of a paid order with a request PENDING_APPROVAL is 409 and leaves the request to the merchant", async () => {
    const { orderId, captureRef } = await paidOrder();
    const p = await srv.json(`/api/v1/agent/orders/${orderId}/refund`, { method: "POST", headers: key.headers, body: { amount: 1000 } });
    expect(p.status).toBe(201);
    const c = await srv.json(`/api/v1/agent/orders/${orderId}/cancel`, { method: "POST", headers: key.headers, body: {} });
    expect(c.status).toBe(409);
    expect(c.body).toMatchObject({ code: "ORDER_NOT_CANCELLABLE", details: { status: "paid" } });
    const [old] = await srv.db.sql<{ status: string }[]>`SELECT status FROM order_refunds WHERE id = ${p.body.data.refund_id}`;
    expect(old.status).toBe("PENDING_APPROVAL");
    expect((await ledgerOf(captureRef)).refunded_minor).toBe(0);
    const a = await srv.json(`/api/v1/merchant/stores/demo-store/refunds/${p.body.data.refund_id}/approve`, { method: "POST", headers: { authorization: `Bearer ${srv.admin}` } });
    expect(a.status).toBe(200);
    expect(a.body.data.status).toBe("REFUNDED");
    expect((await ledgerOf(captureRef)).refunded_minor).toBe(1000);
  });
});

describe("x402 orders are refunded by the merchant from its wallet (D10)", () => {
  test("the agent's cancel of a paid x402 order is 409 ORDER_NOT_CANCELLABLE refund_by_merchant and leaves no refund record", async () => {
    const { orderId } = await paidOrder();
    // Stands in for an order paid over x402 (the devnet is not part of this suite): only the rail label differs.
    await srv.db.sql`UPDATE orders SET payment_rail = 'x402' WHERE id = ${orderId}`;
    const c = await srv.json(`/api/v1/agent/orders/${orderId}/cancel`, { method: "POST", headers: key.headers, body: {} });
    expect(c.status).toBe(409);
    expect(c.body).toMatchObject({ code: "ORDER_NOT_CANCELLABLE", details: { status: "paid", reason: "refund_by_merchant" } });
    const [o] = await srv.db.sql<{ status: string }[]>`SELECT status FROM orders WHERE id = ${orderId}`;
    expect(o.status).toBe("paid");
    const refunds = await srv.db.sql`SELECT id FROM order_refunds WHERE order_id = ${orderId}`;
    expect(refunds).toHaveLength(0);
  });

  test("the merchant's cancel of a paid x402 order answers refund_by_merchant without a refund record that could only fail", async () => {
    const { orderId, captureRef } = await paidOrder();
    await srv.db.sql`UPDATE orders SET payment_rail = 'x402' WHERE id = ${orderId}`;
    const m = await merchantMove(orderId, "canceled");
    expect(m.status).toBe(200);
    expect(m.body.data).toMatchObject({ status: "canceled", refund: null, refund_by_merchant: true });
    expect(await srv.db.sql`SELECT id FROM order_refunds WHERE order_id = ${orderId}`).toHaveLength(0);
    expect((await ledgerOf(captureRef)).refunded_minor).toBe(0);
  });
});
