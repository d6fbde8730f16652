/**
 * Checkouts where the buyer could be charged and the money or stock stranded (audit D): a capture whose order is no
 * longer pending (D1), and a leg of nothing to charge (D9). Through HTTP against the real server.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { ALL_SCOPES, createKey, login, type TestKey } from "../helpers/agents.ts";
import { startServer, type TestServer } from "../helpers/server.ts";
import { decideAt } from "../helpers/sandbox-approval.ts";

const SKILLET = "399d72f1-303c-5cf3-bc6a-5c82714b85d4"; // tracked stock, demo-store
const GREEN = "4ef5cf23-f828-5e3e-bd0b-833653bc4c5a"; // greenleaf-living, card only
let srv: TestServer;
let key: TestKey;
let admin: string;

beforeAll(async () => {
  srv = await startServer({ seed: true });
  key = await createKey(srv, { scopes: ALL_SCOPES, tier: "ENTERPRISE" });
  admin = await login(srv);
}, 120_000);
afterAll(async () => {
  await srv?.stop();
});

const stock = async () => (await srv.db.sql<{ s: number; r: number }[]>`SELECT stock_quantity AS s, reserved_quantity AS r FROM products WHERE id = ${SKILLET}`)[0]!;
const sessionStatus = async (cartId: string) =>
  (await srv.db.sql<{ s: string }[]>`SELECT state->'session'->>'status' AS s FROM actor_state WHERE kind = 'cart' AND id = ${cartId}`)[0]?.s;

async function cart(): Promise<string> {
  const c = await srv.json("/api/v1/agent/cart", { method: "POST", headers: key.headers, body: { items: [{ product_id: SKILLET, quantity: 1 }] } });
  expect(c.status).toBe(201);
  return c.body.data.id;
}

describe("a capture whose order is no longer pending", () => {
  test("is answered 409 PAYMENT_CAPTURED_FINALIZATION_FAILED with the capture reference, the order flagged, and no stock sold (the cancel is injected in the database: no API path cancels a pending order under a live leg)", async () => {
    const before = await stock();
    const cartId = await cart();
    const idem = crypto.randomUUID();
    const w = await srv.json("/api/v1/agent/checkout", { method: "POST", headers: key.headers, body: { cartId, payment_method: "tok_needs_approval", idempotency_key: idem } });
    expect(w.status).toBe(202);
    const sid = w.body.details.checkout_session_id;
    const [o] = await srv.db.sql<{ id: string; intent_id: string }[]>`SELECT id, intent_id FROM orders WHERE cart_id = ${cartId}`;
    // A cancel that raced the payment (the store side now refuses it; this stands in for any move of the order
    // while the buyer approves): the order row is no longer pending when the capture comes back.
    await srv.db.sql`UPDATE orders SET status = 'canceled' WHERE id = ${o!.id}`;
    const a = await decideAt(srv, String(w.body.details.approval_url), "approve");
    expect(a.status).toBe(200);

    const done = await srv.json("/api/v1/agent/checkout", { method: "POST", headers: key.headers, body: { cartId, checkout_session_id: sid, idempotency_key: idem } });
    expect(done.status).toBe(409);
    expect(done.body.code).toBe("PAYMENT_CAPTURED_FINALIZATION_FAILED");
    expect(done.body.details.capture_reference).toStartWith("cap_");
    const [row] = await srv.db.sql`SELECT status, reconciliation, capture_ref FROM orders WHERE id = ${o!.id}`;
    expect(row).toEqual({ status: "canceled", reconciliation: "finalization_failed", capture_ref: done.body.details.capture_reference });
    expect((await stock()).s).toBe(before.s); // not sold for a canceled order
    expect(await sessionStatus(cartId)).toBe("SETTLEMENT_UNKNOWN");

    // the same key gets the same answer, never a COMPLETED
    const again = await srv.json("/api/v1/agent/checkout", { method: "POST", headers: key.headers, body: { cartId, checkout_session_id: sid, idempotency_key: idem } });
    expect(again.status).toBe(409);
    expect(again.body.code).toBe("PAYMENT_CAPTURED_FINALIZATION_FAILED");
    expect((await stock()).s).toBe(before.s);
  }, 60_000);
});

describe("a leg the rail refuses outright", () => {
  test("rolls back with its hold released and the session ready for another attempt, instead of staying IN_PROGRESS", async () => {
    // The sandbox processor refuses MOCK for any store but the demo store (an ActorError, not a lost answer); a store
    // whose own list says MOCK stands in for any request a rail refuses after the session was committed IN_PROGRESS.
    await srv.db.sql`UPDATE stores SET payment_methods = '{card,MOCK}' WHERE slug = 'greenleaf-living'`;
    try {
      const c = await srv.json("/api/v1/agent/cart", { method: "POST", headers: key.headers, body: { items: [{ product_id: GREEN, quantity: 1 }] } });
      const cartId = c.body.data.id;
      const idem = crypto.randomUUID();
      const r = await srv.json("/api/v1/agent/checkout", { method: "POST", headers: key.headers, body: { cartId, payment_method: "MOCK", idempotency_key: idem } });
      expect(r.body.code).toBe("PAYMENT_FAILED_ROLLED_BACK");
      expect(await sessionStatus(cartId)).toBe("READY_FOR_PAYMENT");
      const held = await srv.db.sql`SELECT r.status FROM stock_reservations r JOIN orders o ON o.id = r.order_id WHERE o.cart_id = ${cartId}`;
      expect(held.map((h) => h.status)).not.toContain("held");

      // the same key retries with a card the rail accepts
      const ok = await srv.json("/api/v1/agent/checkout", { method: "POST", headers: key.headers, body: { cartId, payment_method: "tok_approve", idempotency_key: idem } });
      expect(ok.status).toBe(200);
      expect(ok.body.data.status).toBe("COMPLETED");
    } finally {
      await srv.db.sql`UPDATE stores SET payment_methods = '{card}' WHERE slug = 'greenleaf-living'`;
    }
  }, 60_000);
});

describe("a leg of nothing to charge (100 % coupon, free shipping)", () => {
  test("completes without a rail call: the order paid at 0 with no capture reference, the unit sold, nothing left held", async () => {
    const M = { authorization: `Bearer ${admin}` };
    expect((await srv.json("/api/v1/merchant/stores/demo-store/shipping-zones", { method: "PUT", headers: M, body: { zones: [] } })).status).toBe(200);
    expect((await srv.json("/api/v1/merchant/stores/demo-store/coupons", { method: "POST", headers: M, body: { code: "ALLFREE", kind: "percent", value: 100 } })).status).toBe(201);
    const before = await stock();
    const cartId = await cart();
    const ap = await srv.json("/api/v1/agent/apply-coupon", { method: "POST", headers: key.headers, body: { cartId, code: "ALLFREE" } });
    expect(ap.body.data.cart.totals.total_minor).toBe(0);

    const r = await srv.json("/api/v1/agent/checkout", { method: "POST", headers: key.headers, body: { cartId, payment_method: "tok_approve", idempotency_key: crypto.randomUUID() } });
    expect(r.status).toBe(200);
    expect(r.body.data.status).toBe("COMPLETED");
    expect(r.body.data.total_minor).toBe(0);
    expect(r.body.data.orders[0].capture_reference).toBeNull();
    const [o] = await srv.db.sql`SELECT status, total_minor, capture_ref, intent_id FROM orders WHERE cart_id = ${cartId}`;
    expect(o).toMatchObject({ status: "paid", capture_ref: null });
    expect(Number(o!.total_minor)).toBe(0);
    expect(await srv.db.sql`SELECT 1 FROM sandbox_ledger_intents WHERE intent_id = ${o!.intent_id}`).toHaveLength(0);
    const after = await stock();
    expect(after).toEqual({ s: before.s - 1, r: before.r });
    expect(await sessionStatus(cartId)).toBe("COMPLETED");
  }, 60_000);
});
