/**
 * An agent's refund request of an order paid over x402 (helper C, C-4). The money is in the merchant's wallet and the
 * x402 rail cannot pull it back, so the request was accepted (201 PENDING_APPROVAL) only for every approve of it to end
 * FAILED with the rail's free text. It is refused up front now, 403 NOT_ELIGIBLE `refund_by_merchant` (as the agent's
 * cancel of such an order is 409 ORDER_NOT_CANCELLABLE with that reason), with nothing written; the merchant's approve
 * of a request made before that is 409 `conflict` `refund_by_merchant`, nothing written or sent, and its reject still
 * closes it. The orders stand in for x402 ones by their rail label (as order-cancel-money.test.ts: the devnet is not
 * needed for what the store decides from the label).
 */
import { beforeAll, expect, test } from "bun:test";
import { ALL_SCOPES, createKey, type TestKey } from "../helpers/agents.ts";
import { useServer } from "../helpers/server.ts";

const BOARD = "5befd987-79cd-540c-8a5d-2ba5a30aed41"; // DS-0011, demo-store, untracked stock
const srv = useServer({ seed: true, admin: true });
let key: TestKey;

beforeAll(async () => {
  key = await createKey(srv, { scopes: ALL_SCOPES });
}, 120_000);

async function paidOrder(): Promise<{ orderId: string; captureRef: string }> {
  const c = await srv.json("/api/v1/agent/cart", { method: "POST", headers: key.headers, body: { items: [{ product_id: BOARD, quantity: 1 }] } });
  expect(c.status).toBe(201);
  const paid = await srv.json("/api/v1/agent/checkout", { method: "POST", headers: key.headers, body: { cartId: c.body.data.id, payment_method: "tok_approve" } });
  expect(paid.status).toBe(200);
  const [o] = await srv.db.sql<{ capture_ref: string }[]>`SELECT capture_ref FROM orders WHERE id = ${paid.body.data.order_id}`;
  return { orderId: paid.body.data.order_id, captureRef: o!.capture_ref };
}
const asX402 = (orderId: string) => srv.db.sql`UPDATE orders SET payment_rail = 'x402' WHERE id = ${orderId}`;
const requestRefund = (orderId: string, body: Record<string, unknown> = {}) =>
  srv.json(`/api/v1/agent/orders/${orderId}/refund`, { method: "POST", headers: key.headers, body });
const decide = (refundId: string, decision: "approve" | "reject") =>
  srv.json(`/api/v1/merchant/stores/demo-store/refunds/${refundId}/${decision}`, { method: "POST", headers: { authorization: `Bearer ${srv.admin}` } });
const refundsOf = (orderId: string) => srv.db.sql<{ id: string; status: string }[]>`SELECT id, status FROM order_refunds WHERE order_id = ${orderId}`;
const sandboxRefunded = async (captureRef: string) =>
  (await srv.db.sql<{ refunded_minor: number }[]>`SELECT refunded_minor FROM sandbox_ledger_intents WHERE capture_ref = ${captureRef}`)[0]!.refunded_minor;

test("the agent's refund request of a paid x402 order is 403 NOT_ELIGIBLE refund_by_merchant and writes no refund request, keyed or not", async () => {
  const { orderId } = await paidOrder();
  await asX402(orderId);
  for (const body of [{}, { amount: 500, reason: "arrived broken", idempotency_key: crypto.randomUUID() }]) {
    const r = await requestRefund(orderId, body);
    expect(r.status).toBe(403);
    expect(r.body).toMatchObject({ success: false, code: "NOT_ELIGIBLE", details: { order_id: orderId, payment_rail: "x402", reason: "refund_by_merchant" } });
    expect(r.body.error).toContain("merchant's wallet");
  }
  expect(await refundsOf(orderId)).toHaveLength(0);
  // its own checks come first: an amount above the order is still the amount's 400
  const tooMuch = await requestRefund(orderId, { amount: 10_000_000 });
  expect(tooMuch.status).toBe(400);
  expect(tooMuch.body.code).toBe("INVALID_ARGUMENT");
});

test("the merchant's approve of an x402 order's refund request made before is 409 refund_by_merchant, writes nothing and sends nothing; its reject closes it", async () => {
  const { orderId, captureRef } = await paidOrder();
  const made = await requestRefund(orderId, { amount: 500 });
  expect(made.status).toBe(201);
  const refundId = made.body.data.refund_id as string;
  await asX402(orderId);

  const a = await decide(refundId, "approve");
  expect(a.status).toBe(409);
  expect(a.body).toMatchObject({ code: "conflict", details: { reason: "refund_by_merchant", payment_rail: "x402", refund_id: refundId, order_id: orderId, status: "PENDING_APPROVAL" } });
  expect(a.body.error).toContain("Pay the buyer back from your wallet");
  expect([...(await refundsOf(orderId))]).toEqual([{ id: refundId, status: "PENDING_APPROVAL" }]);
  expect(await sandboxRefunded(captureRef)).toBe(0);

  const r = await decide(refundId, "reject");
  expect(r.status).toBe(200);
  expect(r.body.data.status).toBe("REJECTED");
});

test("a card order's refund request is still accepted and approved as before", async () => {
  const { orderId, captureRef } = await paidOrder();
  const made = await requestRefund(orderId, { amount: 500 });
  expect(made.status).toBe(201);
  expect(made.body.data.status).toBe("PENDING_APPROVAL");
  const a = await decide(made.body.data.refund_id, "approve");
  expect(a.status).toBe(200);
  expect(a.body.data.status).toBe("REFUNDED");
  expect(await sandboxRefunded(captureRef)).toBe(500);
});
