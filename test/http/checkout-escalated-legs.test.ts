/**
 * Several legs of one attempt escalated for their merchants (a capture the service cannot record as paid):
 * - the answer names every flagged leg, not only the first (review V2-1);
 * - once one merchant refunded its capture (its order canceled), the session never goes back to READY_FOR_PAYMENT:
 *   the other leg's accept, or its reconcile, ends it FAILED as a refund alone does (review V2-2, as R5-3).
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { ALL_SCOPES, createKey, login, merchantLogin, type TestKey } from "../helpers/agents.ts";
import { approvalLink, decideAt } from "../helpers/sandbox-approval.ts";
import { startServer, type TestServer } from "../helpers/server.ts";

let srv: TestServer;
let key: TestKey;
let demoOwner: Record<string, string>;
let greenOwner: Record<string, string>;
beforeAll(async () => {
  srv = await startServer({ seed: true, config: { RATE_LIMITS_ENABLED: false } });
  key = await createKey(srv, { scopes: ALL_SCOPES, tier: "ENTERPRISE" });
  demoOwner = { authorization: `Bearer ${await login(srv)}` };
  greenOwner = { authorization: `Bearer ${await login(srv, merchantLogin("greenleaf-living"))}` };
}, 120_000);
afterAll(async () => {
  await srv?.stop();
});

const post = (path: string, body: unknown, headers = key.headers) => srv.json(path, { method: "POST", headers, body });

/** A product of the store whose stock is not tracked (no variants): any number of attempts can hold it. */
async function untracked(store: string): Promise<string> {
  const [p] = await srv.db.sql<{ id: string }[]>`SELECT id FROM products WHERE store_slug = ${store} AND active AND in_stock AND stock_quantity IS NULL
    AND (variants IS NULL OR jsonb_array_length(variants) = 0) ORDER BY id LIMIT 1`;
  return p!.id;
}

interface Order {
  id: string;
  store_slug: string;
  status: string;
  capture_ref: string | null;
  reconciliation: string | null;
}

const ordersOf = (cartId: string) =>
  srv.db.sql<Order[]>`SELECT id, store_slug, status, capture_ref, reconciliation FROM orders WHERE cart_id = ${cartId} ORDER BY store_slug, created_at`;

/** A demo + greenleaf cart paid in one call with the given tokens: the answer, the key and the two orders. */
async function twoStoreAttempt(tokens: { demo: string; green: string }) {
  const cart = await post("/api/v1/agent/cart", { items: [{ product_id: await untracked("demo-store"), quantity: 1 }, { product_id: await untracked("greenleaf-living"), quantity: 1 }] });
  expect(cart.status).toBe(201);
  const cartId = cart.body.data.id as string;
  const idem = crypto.randomUUID();
  const pay = await post("/api/v1/agent/checkout", { cartId, idempotency_key: idem, payment_methods: { "demo-store": tokens.demo, "greenleaf-living": tokens.green } });
  const [demo, green] = await ordersOf(cartId);
  return { cartId, idem, pay, demo: demo!, green: green! };
}

const reconcile = (store: string, orderId: string, action: "accept" | "refund", headers: Record<string, string>) =>
  srv.json(`/api/v1/merchant/stores/${store}/orders/${orderId}/reconcile`, { method: "POST", headers, body: { action } });

describe("an attempt that escalated two legs", () => {
  test("answers every flagged leg with its store, order, code and capture reference, and the same key answers the same list", async () => {
    const e = await twoStoreAttempt({ demo: "tok_finalization_fails", green: "tok_amount_mismatch" });
    expect(e.pay.status).toBe(409);
    expect(e.pay.body.code).toBe("PAYMENT_CAPTURED_FINALIZATION_FAILED");
    expect(e.demo).toMatchObject({ status: "pending", reconciliation: "finalization_failed" });
    expect(e.green).toMatchObject({ status: "pending", reconciliation: "amount_mismatch" });
    const d = e.pay.body.details;
    // The first leg's details stay where they were.
    expect(d).toMatchObject({ merchant_slug: "demo-store", order_id: e.demo.id, capture_reference: e.demo.capture_ref });
    expect(d.escalations).toEqual([
      { merchant_slug: "demo-store", order_id: e.demo.id, code: "PAYMENT_CAPTURED_FINALIZATION_FAILED", capture_reference: e.demo.capture_ref },
      { merchant_slug: "greenleaf-living", order_id: e.green.id, code: "PAYMENT_AMOUNT_MISMATCH", capture_reference: e.green.capture_ref, captured_minor: expect.any(Number) },
    ]);
    expect(d.stores).toEqual([
      { store_id: "demo-store", status: "unknown", outcome: "unknown" },
      { store_id: "greenleaf-living", status: "unknown", outcome: "unknown" },
    ]);
    expect(d.completed_store_ids).toEqual([]);
    expect(d.order_ids).toEqual([]);
    expect(e.pay.body.error).toContain("greenleaf-living (details.escalations)");
    expect(e.pay.body.error).toContain("do not pay again");
    const again = await post("/api/v1/agent/checkout", { cartId: e.cartId, idempotency_key: e.idem });
    expect(again.status).toBe(409);
    expect(again.body.code).toBe("PAYMENT_CAPTURED_FINALIZATION_FAILED");
    expect(again.body.details.escalations).toEqual(d.escalations);
    expect(again.body.error).toBe(e.pay.body.error);
  }, 60_000);
});

describe("one merchant refunds its escalated leg", () => {
  test("and the other merchant's accept ends the session FAILED, not READY_FOR_PAYMENT with a canceled order", async () => {
    const e = await twoStoreAttempt({ demo: "tok_finalization_fails", green: "tok_amount_mismatch" });
    expect(e.pay.status).toBe(409);
    const refund = await reconcile("demo-store", e.demo.id, "refund", demoOwner);
    expect(refund.status).toBe(200);
    expect(refund.body.data).toMatchObject({ order_status: "canceled", checkout_status: "SETTLEMENT_UNKNOWN" });
    const accept = await reconcile("greenleaf-living", e.green.id, "accept", greenOwner);
    expect(accept.status).toBe(200);
    expect(accept.body.data).toMatchObject({ order_status: "paid", checkout_status: "FAILED" });
    const [demo, green] = await ordersOf(e.cartId);
    expect(demo!.status).toBe("canceled");
    expect(green!.status).toBe("paid");
    // The same key learns the session ended, with the paid merchant named.
    const again = await post("/api/v1/agent/checkout", { cartId: e.cartId, idempotency_key: e.idem, checkout_session_id: e.pay.body.details.checkout_session_id });
    expect(again.status).toBe(409);
    expect(again.body.code).toBe("SESSION_INACTIVE");
    expect(again.body.details).toMatchObject({ status: "FAILED", captured_merchant_slugs: ["greenleaf-living"] });
    // A new checkout pays the refunded store again and carries the paid one over (not charged twice).
    const next = await post("/api/v1/agent/checkout", { cartId: e.cartId, idempotency_key: crypto.randomUUID(), payment_method: "tok_approve" });
    expect(next.status).toBe(200);
    expect(next.body.data.status).toBe("COMPLETED");
    const after = await ordersOf(e.cartId);
    expect(after.map((o) => [o.store_slug, o.status])).toEqual([["demo-store", "canceled"], ["demo-store", "paid"], ["greenleaf-living", "paid"]]);
  }, 60_000);

  test("while the other leg's answer was lost: its reconcile ends the session FAILED, not READY_FOR_PAYMENT", async () => {
    const e = await twoStoreAttempt({ demo: "tok_finalization_fails", green: "tok_lost_response" });
    expect(e.pay.status).toBe(409);
    expect(e.pay.body.code).toBe("PAYMENT_CAPTURED_FINALIZATION_FAILED");
    const refund = await reconcile("demo-store", e.demo.id, "refund", demoOwner);
    expect(refund.status).toBe(200);
    const sessionId = e.pay.body.details.checkout_session_id as string;
    expect(sessionId).toStartWith("cs_");
    // The agent's same key reconciles the lost leg (or the session's timer did it first): captured, the session ends.
    const again = await post("/api/v1/agent/checkout", { cartId: e.cartId, idempotency_key: e.idem, checkout_session_id: sessionId });
    expect(again.status).toBe(409);
    expect(again.body.code).toBe("SESSION_INACTIVE");
    expect(again.body.details).toMatchObject({ status: "FAILED", captured_merchant_slugs: ["greenleaf-living"] });
    const [row] = await srv.db.sql<{ status: string }[]>`SELECT state->'session'->>'status' AS status FROM actor_state WHERE kind = 'cart' AND id = ${e.cartId}`;
    expect(row!.status).toBe("FAILED");
    const [demo, green] = await ordersOf(e.cartId);
    expect(demo!.status).toBe("canceled");
    expect(green!.status).toBe("paid");
  }, 60_000);
  test("while the other leg waited for its buyer, who refuses: the resume ends the session FAILED, not READY_FOR_PAYMENT with a canceled order (review V4-1)", async () => {
    const e = await twoStoreAttempt({ demo: "tok_finalization_fails", green: "tok_needs_approval" });
    const sessionId = e.pay.body.details.checkout_session_id as string;
    expect(sessionId).toStartWith("cs_");
    const refund = await reconcile("demo-store", e.demo.id, "refund", demoOwner);
    expect(refund.status).toBe(200);
    await decideAt(srv, approvalLink(e.pay, "greenleaf-living"), "reject");
    const resume = await post("/api/v1/agent/checkout", { cartId: e.cartId, idempotency_key: e.idem, checkout_session_id: sessionId });
    expect(resume.status).toBe(409);
    expect(resume.body.code).toBe("SESSION_INACTIVE");
    expect(resume.body.details).toMatchObject({ status: "FAILED", reason: "checkout_failed_merchant_refunded" });
    const [row] = await srv.db.sql<{ status: string }[]>`SELECT state->'session'->>'status' AS status FROM actor_state WHERE kind = 'cart' AND id = ${e.cartId}`;
    expect(row!.status).toBe("FAILED");
    const [demo] = await ordersOf(e.cartId);
    expect(demo!.status).toBe("canceled");
  }, 60_000);
});
