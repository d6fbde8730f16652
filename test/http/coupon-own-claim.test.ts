/**
 * A cart's own coupon use is not counted against it (review RN MED-2; docs/checkout.md "Coupons and totals"). The
 * leg's hold claims a use for the cart's order; pricing leaves out the uses its own session orders hold, so the cart
 * still shows the coupon it pays with (its own order charges the discount) while every other cart sees the coupon
 * exhausted. Before, GET /agent/cart said `exhausted` and the full price while its own order awaited approval with the
 * discount, and a partly paid session's retry was asked to reconfirm the paid store's one-use discount.
 */
import { expect, test } from "bun:test";
import { ALL_SCOPES, createKey, type TestKey } from "../helpers/agents.ts";
import { GREEN } from "../helpers/partly-paid.ts";
import { useServer } from "../helpers/server.ts";
import { DEMO, LEAF, TRACKED_BOARD } from "../helpers/two-store-session.ts";

const srv = useServer({ seed: true, config: { RATE_LIMITS_ENABLED: false }, admin: true });

type Res = { status: number; body: any };
const newKey = () => createKey(srv, { tier: "ENTERPRISE", scopes: ALL_SCOPES });
const post = (k: TestKey, path: string, body: unknown): Promise<Res> => srv.json(`/api/v1${path}`, { method: "POST", headers: k.headers, body });
const getCart = (k: TestKey, cartId: string): Promise<Res> => srv.json(`/api/v1/agent/cart/${cartId}`, { headers: k.headers });

/** A 10 % coupon with this usage limit at each store named; its code. */
async function newCoupon(limits: Record<string, number>): Promise<string> {
  const code = `OWN${crypto.randomUUID().slice(0, 8).toUpperCase()}`;
  for (const [store, limit] of Object.entries(limits)) {
    await srv.db.sql`INSERT INTO coupons (store_slug, code, kind, value, min_spend_minor, currency, usage_limit, active) VALUES (${store}, ${code}, 'percent', 10, 0, 'USD', ${limit}, true)`;
  }
  return code;
}

async function cartWith(k: TestKey, items: { product_id: string; quantity: number }[], code: string): Promise<string> {
  const c = await post(k, "/agent/cart", { items });
  expect(c.status).toBe(201);
  const cartId = c.body.data.id as string;
  const a = await post(k, "/agent/apply-coupon", { cartId, code });
  expect(a.body.data.applied).toBe(true);
  return cartId;
}

test("while its checkout awaits the buyer's approval, the cart still shows the coupon its own order holds, and another cart sees it exhausted", async () => {
  const r = await srv.json(`/api/v1/merchant/stores/${DEMO}/catalog`, {
    method: "PUT",
    headers: { authorization: `Bearer ${srv.admin}` },
    body: { products: [{ externalId: `own-${crypto.randomUUID()}`, title: "Own Kettle", category: "Kitchen", price: 100, currency: "USD", stockQuantity: null, inStock: true }] },
  });
  const productId = r.body.data.upserted[0].id as string;
  const code = await newCoupon({ [DEMO]: 1 });
  const k = await newKey();
  const cartId = await cartWith(k, [{ product_id: productId, quantity: 1 }], code);
  const p = await post(k, "/agent/checkout/preview", { cartId });
  expect(p.status).toBe(200);
  const w = await post(k, "/agent/checkout", { cartId, checkout_session_id: p.body.data.checkout_session_id, payment_method: "tok_needs_approval", idempotency_key: crypto.randomUUID() });
  expect(w.status).toBe(202);
  const [order] = await srv.db.sql<{ status: string; total: number; discount: number }[]>`
    SELECT status, total_minor::int AS total, discount_minor::int AS discount FROM orders WHERE cart_id = ${cartId}`;
  expect(order).toEqual({ status: "pending", total: 9000, discount: 1000 });

  const cart = await getCart(k, cartId);
  expect(cart.status).toBe(200);
  expect(cart.body.data.coupon).toEqual({ code, applied: true, discount_minor: 1000 });
  expect(cart.body.data.totals).toMatchObject({ subtotal_minor: 10000, discount_minor: 1000, total_minor: 9000 });

  // The use is this cart's only: another buyer's cart is told the coupon has none left.
  const other = await newKey();
  const c2 = await post(other, "/agent/cart", { items: [{ product_id: productId, quantity: 1 }] });
  const a2 = await post(other, "/agent/apply-coupon", { cartId: c2.body.data.id, code });
  expect(a2.status).toBe(200);
  expect(a2.body.data).toMatchObject({ applied: false, reason: "exhausted", discount_minor: 0 });
}, 60_000);

test("a partly paid two-store session's retry pays the other store without reconfirming the paid store's one-use coupon", async () => {
  await srv.db.sql`UPDATE products SET stock_quantity = 1000, reserved_quantity = 0, in_stock = true WHERE id = ${TRACKED_BOARD}`;
  const code = await newCoupon({ [DEMO]: 1, [LEAF]: 5 });
  const k = await newKey();
  const cartId = await cartWith(k, [{ product_id: TRACKED_BOARD, quantity: 1 }, { product_id: GREEN, quantity: 1 }], code);
  const p = await post(k, "/agent/checkout/preview", { cartId });
  expect(p.status).toBe(200);
  const sid = p.body.data.checkout_session_id as string;
  const ik = crypto.randomUUID();
  const first = await post(k, "/agent/checkout", { cartId, checkout_session_id: sid, idempotency_key: ik, payment_methods: { [DEMO]: "tok_approve", [LEAF]: "tok_decline" } });
  expect(first.status).toBe(402);
  expect(first.body.code).toBe("PAYMENT_DECLINED");

  const again = await post(k, "/agent/checkout", { cartId, checkout_session_id: sid, idempotency_key: ik, payment_methods: { [DEMO]: "tok_approve", [LEAF]: "tok_approve" } });
  expect(again.status).toBe(200);
  expect(again.body.data.status).toBe("COMPLETED");
  const orders = await srv.db.sql<{ store: string; status: string; discounted: boolean }[]>`
    SELECT store_slug AS store, status, discount_minor > 0 AS discounted FROM orders WHERE cart_id = ${cartId} ORDER BY store_slug`;
  expect([...orders]).toEqual([
    { store: DEMO, status: "paid", discounted: true },
    { store: LEAF, status: "paid", discounted: true },
  ]);
  // Each store's use claimed once: the paid store's by its order, the retried store's by its own.
  const uses = await srv.db.sql<{ store: string; used: number; claims: number }[]>`
    SELECT c.store_slug AS store, c.used_count AS used, (SELECT count(*)::int FROM coupon_claims cc WHERE cc.store_slug = c.store_slug AND cc.code = c.code) AS claims
    FROM coupons c WHERE c.code = ${code} ORDER BY c.store_slug`;
  expect([...uses]).toEqual([
    { store: DEMO, used: 1, claims: 1 },
    { store: LEAF, used: 1, claims: 1 },
  ]);
}, 60_000);
