/**
 * A capture escalated for a human (amount mismatch, finalization failed, an order no longer pending) used to hold
 * its stock, its order and its cart for good (audit D6, repro R7). The merchant now sees it and resolves it end to
 * end: POST /merchant/stores/{slug}/orders/{id}/reconcile {action: accept | refund}.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { ALL_SCOPES, createKey, login, merchantLogin, type TestKey } from "../helpers/agents.ts";
import { startServer, type TestServer } from "../helpers/server.ts";

const SKILLET = "399d72f1-303c-5cf3-bc6a-5c82714b85d4"; // tracked stock, demo-store
let srv: TestServer;
let key: TestKey;
let owner: Record<string, string>;
let otherOwner: Record<string, string>;

beforeAll(async () => {
  srv = await startServer({ seed: true });
  key = await createKey(srv, { scopes: ALL_SCOPES, tier: "ENTERPRISE" });
  owner = { authorization: `Bearer ${await login(srv)}` }; // the demo store is the operator's
  otherOwner = { authorization: `Bearer ${await login(srv, merchantLogin("greenleaf-living"))}` };
}, 120_000);
afterAll(async () => {
  await srv?.stop();
});

const stock = async () => (await srv.db.sql<{ s: number; r: number }[]>`SELECT stock_quantity AS s, reserved_quantity AS r FROM products WHERE id = ${SKILLET}`)[0]!;
const base = "/api/v1/merchant/stores/demo-store/orders";

/** A one-skillet checkout that ends escalated: the 409 answer and the order's id. */
async function escalated(token: string) {
  const c = await srv.json("/api/v1/agent/cart", { method: "POST", headers: key.headers, body: { items: [{ product_id: SKILLET, quantity: 1 }] } });
  const cartId: string = c.body.data.id;
  const idem = crypto.randomUUID();
  const r = await srv.json("/api/v1/agent/checkout", { method: "POST", headers: key.headers, body: { cartId, payment_method: token, idempotency_key: idem } });
  expect(r.status).toBe(409);
  const [o] = await srv.db.sql<{ id: string; intent_id: string }[]>`SELECT id, intent_id FROM orders WHERE cart_id = ${cartId}`;
  return { cartId, idem, answer: r.body, orderId: o!.id, intentId: o!.intent_id };
}

describe("a capture whose order write failed (tok_finalization_fails)", () => {
  test("is listed for the merchant with its flag, and refunding it cancels the order, releases the hold, refunds the capture and frees the cart", async () => {
    const before = await stock();
    const e = await escalated("tok_finalization_fails");
    expect(e.answer.code).toBe("PAYMENT_CAPTURED_FINALIZATION_FAILED");
    expect((await stock()).r).toBe(before.r + 1);

    const list = await srv.json(`${base}?reconciliation=required`, { headers: owner });
    expect(list.status).toBe(200);
    expect(list.body.data.items.map((o: { id: string }) => o.id)).toContain(e.orderId);
    expect(list.body.data.items.every((o: { reconciliation: string | null }) => o.reconciliation !== null)).toBe(true);
    const one = await srv.json(`${base}/${e.orderId}`, { headers: owner });
    expect(one.body.data).toMatchObject({ id: e.orderId, status: "pending", reconciliation: "finalization_failed" });

    const r = await srv.json(`${base}/${e.orderId}/reconcile`, { method: "POST", headers: owner, body: { action: "refund" } });
    expect(r.status).toBe(200);
    expect(r.body.data).toMatchObject({ order_status: "canceled", reconciliation: null, checkout_status: "CANCELED", cart_status: "OPEN", capture_reference: e.answer.details.capture_reference });
    expect(r.body.data.refund).toMatchObject({ status: "REFUNDED" });
    const [ledger] = await srv.db.sql`SELECT state, amount_minor, refunded_minor FROM sandbox_ledger_intents WHERE intent_id = ${e.intentId}`;
    expect(Number(ledger!.refunded_minor)).toBe(Number(ledger!.amount_minor));
    expect(r.body.data.refund.amount_minor).toBe(Number(ledger!.amount_minor));
    expect(await stock()).toEqual(before);
    const [row] = await srv.db.sql`SELECT status, reconciliation, refunded_minor, total_minor FROM orders WHERE id = ${e.orderId}`;
    expect(row).toMatchObject({ status: "canceled", reconciliation: null });
    expect(Number(row!.refunded_minor)).toBe(Number(row!.total_minor));
    expect(await srv.db.sql`SELECT 1 FROM actor_reminders WHERE kind = 'cart' AND id = ${e.cartId}`).toHaveLength(0);

    // resolved once: the same decision again (a retry after a lost answer) answers it again and writes nothing
    // (helper B, B-6: it was 409); the other decision is refused, and the agent's cart buys again
    const written = () => srv.db.sql`SELECT (SELECT count(*)::int FROM order_events WHERE order_id = ${e.orderId}) AS events,
      (SELECT count(*)::int FROM order_refunds WHERE order_id = ${e.orderId}) AS refunds`;
    const before2 = await written();
    const again = await srv.json(`${base}/${e.orderId}/reconcile`, { method: "POST", headers: owner, body: { action: "refund" } });
    expect({ status: again.status, body: again.body.data }).toEqual({ status: 200, body: r.body.data });
    expect(await written()).toEqual(before2);
    const other = await srv.json(`${base}/${e.orderId}/reconcile`, { method: "POST", headers: owner, body: { action: "accept" } });
    expect(other.status).toBe(409);
    expect(other.body).toMatchObject({ code: "conflict", details: { order_id: e.orderId, resolved_action: "refund" } });
    expect(await written()).toEqual(before2);
    const buy = await srv.json("/api/v1/agent/checkout", { method: "POST", headers: key.headers, body: { cartId: e.cartId, payment_method: "tok_approve", idempotency_key: crypto.randomUUID() } });
    expect(buy.status).toBe(200);
    expect(buy.body.data.status).toBe("COMPLETED");
  }, 60_000);
});

describe("a capture of another amount than authorised (tok_amount_mismatch)", () => {
  test("accepted by the merchant, is the order's payment: paid, stock sold, session COMPLETED, and the agent's same call returns the order", async () => {
    const before = await stock();
    const e = await escalated("tok_amount_mismatch");
    expect(e.answer.code).toBe("PAYMENT_AMOUNT_MISMATCH");

    const r = await srv.json(`${base}/${e.orderId}/reconcile`, { method: "POST", headers: owner, body: { action: "accept" } });
    expect(r.status).toBe(200);
    expect(r.body.data).toMatchObject({ order_status: "paid", reconciliation: null, checkout_status: "COMPLETED", cart_status: "COMPLETED", refund: null });
    expect(await stock()).toEqual({ s: before.s - 1, r: before.r });
    const [row] = await srv.db.sql`SELECT status, capture_ref, reconciliation FROM orders WHERE id = ${e.orderId}`;
    expect(row).toEqual({ status: "paid", capture_ref: e.answer.details.capture_reference, reconciliation: null });

    const same = await srv.json("/api/v1/agent/checkout", { method: "POST", headers: key.headers, body: { cartId: e.cartId, idempotency_key: e.idem } });
    expect(same.body.code).toBe("CHECKOUT_ALREADY_IN_PROGRESS");
    expect(same.body.details.order_ids).toEqual([e.orderId]);
    const view = await srv.json(`/api/v1/agent/orders/${e.orderId}`, { headers: key.headers });
    expect(view.body.data.status).toBe("paid");
  }, 60_000);

  test("a repeated accept answers the accept again with nothing written twice, and a refund after it is 409 naming the accept", async () => {
    const e = await escalated("tok_amount_mismatch");
    const first = await srv.json(`${base}/${e.orderId}/reconcile`, { method: "POST", headers: owner, body: { action: "accept" } });
    expect(first.status).toBe(200);
    const history = async () => (await srv.db.sql<{ type: string }[]>`SELECT type FROM order_events WHERE order_id = ${e.orderId} ORDER BY id`).map((x) => x.type);
    const events = await history();
    const stockAfter = await stock();
    const repeat = await srv.json(`${base}/${e.orderId}/reconcile`, { method: "POST", headers: owner, body: { action: "accept" } });
    expect({ status: repeat.status, body: repeat.body.data }).toEqual({ status: 200, body: first.body.data });
    expect(await history()).toEqual(events);
    expect(await stock()).toEqual(stockAfter);
    const refund = await srv.json(`${base}/${e.orderId}/reconcile`, { method: "POST", headers: owner, body: { action: "refund" } });
    expect(refund.status).toBe(409);
    expect(refund.body).toMatchObject({ code: "conflict", details: { order_id: e.orderId, resolved_action: "accept" } });
    const [row] = await srv.db.sql`SELECT status FROM orders WHERE id = ${e.orderId}`;
    expect(row!.status).toBe("paid");
  }, 60_000);

  test("two accepts sent at once (a double click) both answer the accept, and it is recorded once", async () => {
    const e = await escalated("tok_amount_mismatch");
    const both = await Promise.all([0, 1].map(() => srv.json(`${base}/${e.orderId}/reconcile`, { method: "POST", headers: owner, body: { action: "accept" } })));
    expect(both.map((r) => r.status)).toEqual([200, 200]);
    expect(both[1]!.body.data).toEqual(both[0]!.body.data);
    expect(both[0]!.body.data).toMatchObject({ order_status: "paid", checkout_status: "COMPLETED", cart_status: "COMPLETED" });
    const resolved = await srv.db.sql`SELECT 1 FROM order_events WHERE order_id = ${e.orderId} AND type = 'reconciliation_resolved'`;
    expect(resolved).toHaveLength(1);
  }, 60_000);
});

describe("who may resolve what", () => {
  test("another store's owner gets 404, an order with nothing to reconcile 409, a canceled order (status injected in the database) cannot be accepted, and a bad action is 400", async () => {
    const e = await escalated("tok_finalization_fails");
    const other = await srv.json(`${base}/${e.orderId}/reconcile`, { method: "POST", headers: otherOwner, body: { action: "accept" } });
    expect(other.status).toBe(404);
    expect((await srv.json(`${base}/${e.orderId}`, { headers: otherOwner })).status).toBe(404);
    const bad = await srv.json(`${base}/${e.orderId}/reconcile`, { method: "POST", headers: owner, body: { action: "keep" } });
    expect(bad.status).toBe(400);

    // the order moved while the capture was escalated (stands in for a cancel that raced the payment)
    await srv.db.sql`UPDATE orders SET status = 'canceled' WHERE id = ${e.orderId}`;
    const accept = await srv.json(`${base}/${e.orderId}/reconcile`, { method: "POST", headers: owner, body: { action: "accept" } });
    expect(accept.status).toBe(409);
    const refund = await srv.json(`${base}/${e.orderId}/reconcile`, { method: "POST", headers: owner, body: { action: "refund" } });
    expect(refund.status).toBe(200);
    expect(refund.body.data).toMatchObject({ order_status: "canceled", checkout_status: "CANCELED" });

    const c = await srv.json("/api/v1/agent/cart", { method: "POST", headers: key.headers, body: { items: [{ product_id: SKILLET, quantity: 1 }] } });
    const paid = await srv.json("/api/v1/agent/checkout", { method: "POST", headers: key.headers, body: { cartId: c.body.data.id, payment_method: "tok_approve" } });
    const plain = await srv.json(`${base}/${paid.body.data.order_id}/reconcile`, { method: "POST", headers: owner, body: { action: "refund" } });
    expect(plain.status).toBe(409);
    expect(plain.body.code).toBe("conflict");
  }, 60_000);
});
