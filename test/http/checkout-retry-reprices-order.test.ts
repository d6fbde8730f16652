/**
 * A retried checkout's order records what this attempt charges (review R1-H1; docs/checkout.md "Implementation"):
 * a later attempt of the same session reuses the session's pending order, and when the attempt is priced anew (a
 * price, a negotiated offer, a coupon or the shipping destination changed after a decline) the order's money
 * columns, coupon, items and shipping (its `payment_attempt` event) are this attempt's. So the order total equals the
 * capture and a full refund of it succeeds. Both ways the leg's rows are written: riding in the cart's state
 * statement (one store, tracked stock) and the transactional statement (untracked stock, several stores).
 */
import { describe, expect, test } from "bun:test";
import { ALL_SCOPES, createKey, type TestKey } from "../helpers/agents.ts";
import { useServer } from "../helpers/server.ts";
import { LEAF, ledger, twoStoreSession } from "../helpers/two-store-session.ts";
import { GREEN } from "../helpers/partly-paid.ts";

const srv = useServer({ seed: true, config: { RATE_LIMITS_ENABLED: false }, admin: true });

type Res = { status: number; body: any };
const newKey = () => createKey(srv, { tier: "ENTERPRISE", scopes: ALL_SCOPES });
const post = (k: TestKey, path: string, body: unknown): Promise<Res> => srv.json(`/api/v1${path}`, { method: "POST", headers: k.headers, body });
const asAdmin = () => ({ authorization: `Bearer ${srv.admin}` });

/** A new demo-store product (untracked stock: null) at `price` dollars, through the merchant's catalog upload. */
async function newProduct(price: number, stock: number | null): Promise<string> {
  const r = await srv.json("/api/v1/merchant/stores/demo-store/catalog", {
    method: "PUT",
    headers: { authorization: `Bearer ${srv.admin}` },
    body: { products: [{ externalId: `f3-${crypto.randomUUID()}`, title: `F3 Lamp ${price}`, category: "Kitchen", price, currency: "USD", stockQuantity: stock, inStock: true }] },
  });
  expect(r.status).toBe(200);
  return r.body.data.upserted[0].id as string;
}

const setPrice = (productId: string, minor: number) => srv.db.sql`UPDATE products SET price_minor = ${minor}, updated_at = now() WHERE id = ${productId}`;

async function cartOf(k: TestKey, items: { product_id: string; quantity: number }[]): Promise<string> {
  const c = await post(k, "/agent/cart", { items });
  expect(c.status).toBe(201);
  return c.body.data.id;
}

async function previewOf(k: TestKey, cartId: string, extra: Record<string, unknown> = {}): Promise<Res> {
  const p = await post(k, "/agent/checkout/preview", { cartId, ...extra });
  expect(p.status).toBe(200);
  return p;
}

interface OrderFacts {
  status: string;
  total_minor: number;
  subtotal_minor: number;
  discount_minor: number;
  shipping_minor: number;
  tax_minor: number;
  coupon_code: string | null;
  captured: number;
  items: { product_id: string; quantity: number; unit_price_minor: number }[];
}

/** The order row, its items and what the sandbox processor captured for it. */
async function facts(orderId: string): Promise<OrderFacts> {
  const [o] = await srv.db.sql<Omit<OrderFacts, "items">[]>`
    SELECT o.status, o.total_minor::int, o.subtotal_minor::int, o.discount_minor::int, o.shipping_minor::int, o.tax_minor::int, o.coupon_code,
      (SELECT amount_minor::int FROM sandbox_ledger_intents l WHERE l.capture_ref = o.capture_ref AND l.state = 'captured') AS captured
    FROM orders o WHERE o.id = ${orderId}`;
  const items = await srv.db.sql<OrderFacts["items"]>`
    SELECT product_id::text, quantity, unit_price_minor::int FROM order_items WHERE order_id = ${orderId} ORDER BY id`;
  return { ...o!, items: [...items] };
}

/** The session's pending order at demo-store (a decline leaves it pending; details.order_ids names paid orders only). */
async function orderOfCart(cartId: string): Promise<string> {
  const rows = await srv.db.sql<{ id: string; status: string }[]>`SELECT id::text, status FROM orders WHERE cart_id = ${cartId}`;
  expect(rows.map((r) => r.status)).toEqual(["pending"]);
  return rows[0]!.id;
}

/** The order's history events of one type (data only). */
const eventsOf = async (orderId: string, type: string) =>
  (await srv.db.sql<{ data: any }[]>`SELECT data FROM order_events WHERE order_id = ${orderId} AND type = ${type} ORDER BY id`).map((e) => e.data);

/** The agent asks for everything back (no amount), the merchant approves: REFUNDED, the order refunded, the processor refunded the capture. */
async function fullRefundSucceeds(k: TestKey, orderId: string, slug: string, captured: number): Promise<void> {
  const asked = await post(k, `/agent/orders/${orderId}/refund`, { reason: "changed my mind" });
  expect(asked.status).toBe(201);
  expect(asked.body.data).toMatchObject({ status: "PENDING_APPROVAL", amount_minor: captured });
  const ok = await srv.json(`/api/v1/merchant/stores/${slug}/refunds/${asked.body.data.refund_id}/approve`, { method: "POST", headers: asAdmin() });
  expect(ok.status).toBe(200);
  expect(ok.body.data).toMatchObject({ status: "REFUNDED", amount_minor: captured });
  const [o] = await srv.db.sql<{ status: string; refunded_minor: number; ledger_refunded: number }[]>`
    SELECT o.status, o.refunded_minor::int, (SELECT refunded_minor::int FROM sandbox_ledger_intents l WHERE l.capture_ref = o.capture_ref) AS ledger_refunded
    FROM orders o WHERE o.id = ${orderId}`;
  expect(o).toEqual({ status: "refunded", refunded_minor: captured, ledger_refunded: captured });
}

describe("a retry of the same checkout session re-prices its pending order", () => {
  for (const tracked of [false, true]) {
    test(`price raised after a decline (${tracked ? "tracked stock: the hold rides in the state statement" : "untracked stock: the transactional statement"}): the order is the captured total with the new unit price, its attempt event says what it replaced, and a full refund succeeds`, async () => {
      const k = await newKey();
      const p = await newProduct(100, tracked ? 10 : null);
      const cartId = await cartOf(k, [{ product_id: p, quantity: 1 }]);
      const sid = (await previewOf(k, cartId)).body.data.checkout_session_id;
      const ik = crypto.randomUUID();
      const declined = await post(k, "/agent/checkout", { cartId, checkout_session_id: sid, idempotency_key: ik, payment_method: "tok_decline" });
      expect(declined.status).toBe(402);
      expect(declined.body.code).toBe("PAYMENT_DECLINED");
      const orderId = await orderOfCart(cartId);
      expect((await facts(orderId)).total_minor).toBe(10000 + (await facts(orderId)).shipping_minor + (await facts(orderId)).tax_minor);

      await setPrice(p, 15000);
      const again = await previewOf(k, cartId);
      expect(again.body.data.checkout_session_id).toBe(sid);
      const total = again.body.data.totals.total_minor as number;
      const paid = await post(k, "/agent/checkout", { cartId, checkout_session_id: sid, idempotency_key: ik, payment_method: "tok_approve" });
      expect(paid.status).toBe(200);
      expect(paid.body.data).toMatchObject({ status: "COMPLETED", order_id: orderId });

      const f = await facts(orderId);
      expect(f).toMatchObject({ status: "paid", total_minor: total, subtotal_minor: 15000, discount_minor: 0, coupon_code: null, captured: total });
      expect(f.items).toEqual([{ product_id: p, quantity: 1, unit_price_minor: 15000 }]);
      const [attempt] = await eventsOf(orderId, "payment_attempt");
      expect(attempt).toMatchObject({ total_minor: total, subtotal_minor: 15000, currency: "USD", coupon_code: null, previous_total_minor: total - 5000 });
      const view = await srv.json(`/api/v1/agent/orders/${orderId}`, { headers: k.headers });
      expect(view.body.data.total_minor).toBe(total);
      // Webhooks (docs/webhooks.md): order.created was the first attempt's total; the re-pricing sends nothing; the
      // pending -> paid status change carries the captured total.
      const hooks = await srv.db.sql<{ kind: string; total: number; to: string | null }[]>`
        SELECT kind, (payload->>'totalAmount')::float8 AS total, payload->>'toStatus' AS to FROM webhook_events WHERE payload->>'orderId' = ${orderId} ORDER BY kind`;
      expect([...hooks]).toEqual([
        { kind: "order.created", total: (total - 5000) / 100, to: null },
        { kind: "order.status_changed", total: total / 100, to: "paid" },
      ]);
      if (tracked) {
        const [s] = await srv.db.sql<{ stock_quantity: number; reserved_quantity: number }[]>`SELECT stock_quantity, reserved_quantity FROM products WHERE id = ${p}`;
        expect(s).toEqual({ stock_quantity: 9, reserved_quantity: 0 });
      }
      await fullRefundSucceeds(k, orderId, "demo-store", total);
    }, 60_000);
  }

  test("a negotiated price accepted after a decline at the list price: the order carries the negotiated unit price and total, the offer is used by it, and a full refund succeeds", async () => {
    const k = await newKey();
    const p = await newProduct(100, null);
    const cartId = await cartOf(k, [{ product_id: p, quantity: 2 }]);
    const sid = (await previewOf(k, cartId)).body.data.checkout_session_id;
    const ik = crypto.randomUUID();
    const declined = await post(k, "/agent/checkout", { cartId, checkout_session_id: sid, idempotency_key: ik, payment_method: "tok_decline" });
    expect(declined.status).toBe(402);
    const orderId = await orderOfCart(cartId);
    expect((await facts(orderId)).items).toEqual([{ product_id: p, quantity: 2, unit_price_minor: 10000 }]);

    const bid = await post(k, "/agent/negotiate", { productId: p, merchantSlug: "demo-store", bidPrice: 98, currency: "USD" });
    expect(bid.status).toBe(200);
    expect(bid.body.data.status).toBe("accepted");
    const total = (await previewOf(k, cartId)).body.data.totals.total_minor as number;
    const paid = await post(k, "/agent/checkout", { cartId, checkout_session_id: sid, idempotency_key: ik, payment_method: "tok_approve" });
    expect(paid.status).toBe(200);

    const f = await facts(orderId);
    expect(f).toMatchObject({ status: "paid", subtotal_minor: 19600, total_minor: total, captured: total });
    expect(f.items).toEqual([{ product_id: p, quantity: 2, unit_price_minor: 9800 }]);
    const offers = await srv.db.sql<{ used: boolean; order_id: string }[]>`
      SELECT used_at IS NOT NULL AS used, order_id::text FROM negotiation_offers WHERE agent_key_id = ${k.id} AND product_id = ${p} AND status = 'accepted'`;
    expect([...offers]).toEqual([{ used: true, order_id: orderId }]);
    await fullRefundSucceeds(k, orderId, "demo-store", total);
  }, 60_000);

  test("another destination previewed after a decline: the order's shipping and total are the new destination's, and its attempt event names it", async () => {
    const k = await newKey();
    const p = await newProduct(20, null);
    const cartId = await cartOf(k, [{ product_id: p, quantity: 1 }]);
    const us = await previewOf(k, cartId, { shipping: { country_code: "US", postal_code: "10001" } });
    const sid = us.body.data.checkout_session_id;
    const ik = crypto.randomUUID();
    const declined = await post(k, "/agent/checkout", { cartId, checkout_session_id: sid, idempotency_key: ik, payment_method: "tok_decline" });
    expect(declined.status).toBe(402);
    const orderId = await orderOfCart(cartId);
    expect((await facts(orderId)).shipping_minor).toBe(us.body.data.totals.shipping_minor);

    const de = await previewOf(k, cartId, { shipping: { country_code: "DE", postal_code: "10115" } });
    expect(de.body.data.checkout_session_id).toBe(sid);
    const deShipping = de.body.data.totals.shipping_minor as number;
    expect(deShipping).not.toBe(us.body.data.totals.shipping_minor);
    const paid = await post(k, "/agent/checkout", { cartId, checkout_session_id: sid, idempotency_key: ik, payment_method: "tok_approve" });
    expect(paid.status).toBe(200);

    const total = de.body.data.totals.total_minor as number;
    expect(await facts(orderId)).toMatchObject({ status: "paid", shipping_minor: deShipping, total_minor: total, captured: total });
    const [created] = await eventsOf(orderId, "created");
    expect(created.shipping).toMatchObject({ countryCode: "US", postalCode: "10001" });
    const [attempt] = await eventsOf(orderId, "payment_attempt");
    expect(attempt).toMatchObject({ shipping_minor: deShipping, total_minor: total, shipping: { countryCode: "DE", postalCode: "10115" } });
    // The merchant's order detail shows both in its history, the latest attempt last.
    const detail = await srv.json(`/api/v1/merchant/stores/demo-store/orders/${orderId}`, { headers: asAdmin() });
    expect(detail.status).toBe(200);
    expect(detail.body.data.totalMinor).toBe(total);
    const shipped = (detail.body.data.events as { type: string; data: any }[]).filter((e) => e.data.shipping).map((e) => [e.type, e.data.shipping.countryCode]);
    expect(shipped).toEqual([["created", "US"], ["payment_attempt", "DE"]]);
    await fullRefundSucceeds(k, orderId, "demo-store", total);
  }, 60_000);

  test("a coupon that stopped applying after a decline: the order has no discount and no coupon, and the coupon's use is not counted", async () => {
    const k = await newKey();
    const p = await newProduct(100, null);
    const code = `F3${crypto.randomUUID().slice(0, 8).toUpperCase()}`;
    await srv.db.sql`INSERT INTO coupons (store_slug, code, kind, value, min_spend_minor, currency, active) VALUES ('demo-store', ${code}, 'percent', 10, 0, 'USD', true)`;
    const cartId = await cartOf(k, [{ product_id: p, quantity: 1 }]);
    const applied = await post(k, "/agent/apply-coupon", { cartId, code });
    expect(applied.status).toBe(200);
    const sid = (await previewOf(k, cartId)).body.data.checkout_session_id;
    const ik = crypto.randomUUID();
    const declined = await post(k, "/agent/checkout", { cartId, checkout_session_id: sid, idempotency_key: ik, payment_method: "tok_decline" });
    expect(declined.status).toBe(402);
    const orderId = await orderOfCart(cartId);
    expect(await facts(orderId)).toMatchObject({ discount_minor: 1000, coupon_code: code });

    await srv.db.sql`UPDATE coupons SET active = false WHERE store_slug = 'demo-store' AND code = ${code}`;
    const again = await previewOf(k, cartId);
    expect(again.body.data.totals.discount_minor).toBe(0);
    const paid = await post(k, "/agent/checkout", { cartId, checkout_session_id: sid, idempotency_key: ik, payment_method: "tok_approve" });
    expect(paid.status).toBe(200);

    const total = again.body.data.totals.total_minor as number;
    expect(await facts(orderId)).toMatchObject({ status: "paid", discount_minor: 0, coupon_code: null, subtotal_minor: 10000, total_minor: total, captured: total });
    const [c] = await srv.db.sql<{ used_count: number }[]>`SELECT used_count FROM coupons WHERE store_slug = 'demo-store' AND code = ${code}`;
    expect(c!.used_count).toBe(0);
    await fullRefundSucceeds(k, orderId, "demo-store", total);
  }, 60_000);

  test("the multi-store resume: one store paid, the other declined, re-priced and paid with the same key: its order is what was captured, and a full refund of it succeeds", async () => {
    const k = await newKey();
    const a = await twoStoreSession(srv, k);
    const first = await a.pay({ "demo-store": "tok_approve", [LEAF]: "tok_decline" });
    expect(first.status).toBe(402);
    expect(first.body.details).toMatchObject({ partially_captured: true, captured_merchant_slugs: ["demo-store"] });
    const [leafOrder] = await srv.db.sql<{ id: string; price: number }[]>`
      SELECT o.id::text, (SELECT price_minor::int FROM products WHERE id = ${GREEN}) AS price FROM orders o WHERE o.cart_id = ${a.cartId} AND o.store_slug = ${LEAF}`;
    const before = await facts(leafOrder!.id);
    expect(before.status).toBe("pending");

    const newPrice = leafOrder!.price + 3000;
    try {
      await setPrice(GREEN, newPrice);
      const again = await previewOf(k, a.cartId);
      expect(again.body.data.checkout_session_id).toBe(a.sid);
      const done = await a.pay({ [LEAF]: "tok_approve" });
      expect(done.status).toBe(200);
      expect(done.body.data.status).toBe("COMPLETED");
    } finally {
      await setPrice(GREEN, leafOrder!.price);
    }
    const f = await facts(leafOrder!.id);
    expect(f.status).toBe("paid");
    expect(f.items).toEqual([{ product_id: GREEN, quantity: 1, unit_price_minor: newPrice }]);
    expect(f.subtotal_minor).toBe(newPrice);
    expect(f.total_minor).toBe(f.captured);
    expect(f.total_minor).toBeGreaterThan(before.total_minor);
    expect((await ledger(srv, a, LEAF)).map((l) => l.state)).toEqual(["declined", "captured"]);
    await fullRefundSucceeds(k, leafOrder!.id, LEAF, f.total_minor);
  }, 60_000);
});
