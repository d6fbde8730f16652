/**
 * The money in `order.status_changed` bodies is the order's (docs/webhooks.md "What the order events say about money
 * and status"; audit A8):
 * - MED-1: a pending order canceled after a decline and a re-priced preview says the order's total (the declined
 *   attempt's), not the preview's re-priced leg, whether the agent or the merchant cancels.
 * - MED-2: after the merchant accepts a capture of another amount (tok_amount_mismatch captures 1 minor unit more),
 *   pending → paid and the full refund's paid → refunded say the captured total.
 */
import { describe, expect, test } from "bun:test";
import { ALL_SCOPES, createKey, type TestKey } from "../helpers/agents.ts";
import { useServer } from "../helpers/server.ts";

const SKILLET = "399d72f1-303c-5cf3-bc6a-5c82714b85d4";
const srv = useServer({ seed: true, config: { RATE_LIMITS_ENABLED: false }, admin: true });

type Res = { status: number; body: any };
const owner = () => ({ authorization: `Bearer ${srv.admin}` });
const post = (k: TestKey, path: string, body: unknown): Promise<Res> => srv.json(`/api/v1${path}`, { method: "POST", headers: k.headers, body });

async function events(orderId: string): Promise<{ kind: string; from: string | null; to: string | null; total: number; currency: string }[]> {
  const rows = await srv.db.sql<{ kind: string; payload: any }[]>`SELECT kind, payload FROM webhook_events WHERE payload->>'orderId' = ${orderId} ORDER BY created_at, id`;
  return rows.map((r) => ({ kind: r.kind, from: r.payload.fromStatus ?? null, to: r.payload.toStatus ?? null, total: r.payload.totalAmount, currency: r.payload.currency }));
}

describe("pending → canceled after a re-priced preview carries the order's total (A8 MED-1)", () => {
  for (const who of ["agent", "merchant"] as const) {
    test(`${who} cancel`, async () => {
      const k = await createKey(srv, { tier: "ENTERPRISE", scopes: ALL_SCOPES });
      const up = await srv.json("/api/v1/merchant/stores/demo-store/catalog", {
        method: "PUT",
        headers: owner(),
        body: { products: [{ externalId: `f8-${crypto.randomUUID()}`, title: "F8 Lamp", category: "Kitchen", price: 100, currency: "USD", stockQuantity: null, inStock: true }] },
      });
      expect(up.status).toBe(200);
      const productId = up.body.data.upserted[0].id as string;
      const cart = await post(k, "/agent/cart", { items: [{ product_id: productId, quantity: 1 }] });
      expect(cart.status).toBe(201);
      const cartId = cart.body.data.id as string;
      const pv = await post(k, "/agent/checkout/preview", { cartId });
      expect(pv.status).toBe(200);
      const sid = pv.body.data.checkout_session_id;
      const dec = await post(k, "/agent/checkout", { cartId, checkout_session_id: sid, idempotency_key: crypto.randomUUID(), payment_method: "tok_decline" });
      expect(dec.status).toBe(402);
      await srv.db.sql`UPDATE products SET price_minor = 15000, updated_at = now() WHERE id = ${productId}`;
      const pv2 = await post(k, "/agent/checkout/preview", { cartId });
      expect(pv2.status).toBe(200);
      expect(pv2.body.data.checkout_session_id).toBe(sid);
      const [o] = await srv.db.sql<{ id: string; total_minor: number }[]>`SELECT id::text, total_minor::int FROM orders WHERE cart_id = ${cartId}`;
      expect(o!.total_minor).toBe(10000);
      const c =
        who === "agent"
          ? await post(k, `/agent/orders/${o!.id}/cancel`, { reason: "no" })
          : await srv.json(`/api/v1/merchant/stores/demo-store/orders/${o!.id}/status`, { method: "POST", headers: owner(), body: { status: "canceled" } });
      expect(c.status).toBe(200);
      const [after] = await srv.db.sql<{ status: string; total_minor: number }[]>`SELECT status, total_minor::int FROM orders WHERE id = ${o!.id}`;
      expect(after).toEqual({ status: "canceled", total_minor: 10000 });
      expect(await events(o!.id)).toEqual([
        { kind: "order.created", from: null, to: null, total: 100, currency: "USD" },
        { kind: "order.status_changed", from: "pending", to: "canceled", total: 100, currency: "USD" },
      ]);
    }, 60_000);
  }
});

test("accepted amount mismatch: pending → paid and paid → refunded carry the captured total (A8 MED-2)", async () => {
  const k = await createKey(srv, { tier: "ENTERPRISE", scopes: ALL_SCOPES });
  const c = await post(k, "/agent/cart", { items: [{ product_id: SKILLET, quantity: 1 }] });
  expect(c.status).toBe(201);
  const cartId = c.body.data.id as string;
  await post(k, "/agent/checkout", { cartId, payment_method: "tok_amount_mismatch", idempotency_key: crypto.randomUUID() });
  const [o] = await srv.db.sql<{ id: string; total_minor: number }[]>`SELECT id::text, total_minor::int FROM orders WHERE cart_id = ${cartId}`;
  const a = await srv.json(`/api/v1/merchant/stores/demo-store/orders/${o!.id}/reconcile`, { method: "POST", headers: owner(), body: { action: "accept" } });
  expect(a.status).toBe(200);
  const [row] = await srv.db.sql<{ total_minor: number; captured_minor: number; status: string }[]>`SELECT total_minor::int, captured_minor::int, status FROM orders WHERE id = ${o!.id}`;
  expect(row!.status).toBe("paid");
  expect(row!.captured_minor).toBe(row!.total_minor + 1);
  const rf = await post(k, `/agent/orders/${o!.id}/refund`, { reason: "all" });
  expect(rf.status).toBe(201);
  expect(rf.body.data.amount_minor).toBe(row!.captured_minor);
  const ap = await srv.json(`/api/v1/merchant/stores/demo-store/refunds/${rf.body.data.refund_id}/approve`, { method: "POST", headers: owner() });
  expect(ap.status).toBe(200);
  expect(ap.body.data.status).toBe("REFUNDED");
  const total = row!.total_minor / 100;
  const captured = row!.captured_minor / 100;
  expect(await events(o!.id)).toEqual([
    { kind: "order.created", from: null, to: null, total, currency: "USD" },
    { kind: "order.status_changed", from: "pending", to: "paid", total: captured, currency: "USD" },
    { kind: "order.status_changed", from: "paid", to: "refunded", total: captured, currency: "USD" },
  ]);
}, 60_000);
