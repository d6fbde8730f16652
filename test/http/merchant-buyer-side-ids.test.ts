/**
 * Review RA-4 (LOW): merchants are not shown the buyer side of a payment (docs/checkout.md "Payment method"): the
 * buyer's checkout session id embeds the agent's cart id. The order detail already dropped it; the merchant's
 * reconcile answer and the merchant cancel's ORDER_NOT_CANCELLABLE details still carried it. Now neither does (the
 * checkout.abandoned webhook keeps checkoutSessionId and cartId: docs/webhooks.md defines that payload). Through HTTP
 * against the real server, with Postgres and the seeded demo data.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { ALL_SCOPES, createKey, login, type TestKey } from "../helpers/agents.ts";
import { startServer, type TestServer } from "../helpers/server.ts";

const DEMO = "demo-store";
const BOARD = "5befd987-79cd-540c-8a5d-2ba5a30aed41"; // demo-store

let srv: TestServer;
let key: TestKey;
let owner: Record<string, string>;

beforeAll(async () => {
  srv = await startServer({ seed: true });
  key = await createKey(srv, { scopes: ALL_SCOPES });
  owner = { authorization: `Bearer ${await login(srv)}` };
}, 120_000);
afterAll(async () => {
  await srv?.stop();
});

/** An agent checkout of one board paid with `token`: the answer, the buyer's session id and the merchant's order. */
async function checkout(token: string) {
  const c = await srv.json("/api/v1/agent/cart", { method: "POST", headers: key.headers, body: { items: [{ product_id: BOARD, quantity: 1 }] } });
  expect(c.status).toBe(201);
  const cartId: string = c.body.data.id;
  const r = await srv.json("/api/v1/agent/checkout", { method: "POST", headers: key.headers, body: { cartId, payment_method: token, idempotency_key: crypto.randomUUID() } });
  const [o] = await srv.db.sql<{ id: string; sid: string }[]>`SELECT id::text AS id, checkout_session_id AS sid FROM orders WHERE cart_id = ${cartId} AND store_slug = ${DEMO}`;
  return { answer: r, cartId, orderId: o!.id, sid: o!.sid };
}

const merchantCancel = (orderId: string) =>
  srv.json(`/api/v1/merchant/stores/${DEMO}/orders/${orderId}/status`, { method: "POST", headers: owner, body: { status: "canceled" } });

/** Nothing in the merchant's answer names the buyer's session or cart. */
function expectNoBuyerSide(body: unknown, ids: { sid: string; cartId: string }): void {
  const text = JSON.stringify(body);
  for (const s of ["checkout_session_id", "cart_id", ids.sid, ids.sid.slice(3, 35), ids.cartId]) expect(text).not.toContain(s);
}

describe("merchant answers do not carry the buyer's checkout session or cart id", () => {
  test("the merchant's cancel of an order whose payment outcome is unknown is 409 ORDER_NOT_CANCELLABLE payment_in_progress without the buyer's session id", async () => {
    const a = await checkout("tok_amount_mismatch");
    expect(a.answer.status).toBe(409);
    // only the live session stands in the way (the reconciliation flag has its own refusal, next test)
    await srv.db.sql`UPDATE orders SET reconciliation = NULL WHERE id = ${a.orderId}`;
    const m = await merchantCancel(a.orderId);
    expect(m.status).toBe(409);
    expect(m.body).toEqual({
      success: false,
      error: "A payment for this order is running or awaiting its outcome; ask again when it has finished.",
      code: "ORDER_NOT_CANCELLABLE",
      details: { status: "pending", reason: "payment_in_progress", order_id: a.orderId },
    });
    expectNoBuyerSide(m.body, a);
  }, 90_000);

  test("a captured order waiting for the merchant's decision: its cancel is 409 ORDER_NOT_CANCELLABLE reconciliation_required and its reconcile answer is 200, neither naming the buyer's session or cart", async () => {
    const a = await checkout("tok_finalization_fails");
    expect(a.answer.status).toBe(409);
    const m = await merchantCancel(a.orderId);
    expect(m.status).toBe(409);
    expect(m.body.code).toBe("ORDER_NOT_CANCELLABLE");
    expect(m.body.details).toMatchObject({ status: "pending", reason: "reconciliation_required" });
    expectNoBuyerSide(m.body, a);

    const r = await srv.json(`/api/v1/merchant/stores/${DEMO}/orders/${a.orderId}/reconcile`, { method: "POST", headers: owner, body: { action: "accept" } });
    expect(r.status).toBe(200);
    expect(r.body.success).toBe(true);
    expect(r.body.data).toMatchObject({ order_id: a.orderId, merchant_slug: DEMO, action: "accept", order_status: "paid", checkout_status: "COMPLETED" });
    expect(r.body.data.checkout_session_id).toBeUndefined();
    expectNoBuyerSide(r.body, a);
  }, 90_000);
});
