/**
 * Negotiated offers (docs/catalog.md "negotiate", docs/checkout.md "Negotiated prices"):
 * - audit R3 MED-1: an offer on a product with variants prices the variant lines sold at the product's list price
 *   (a variant without its own price, or with the product's), is claimed by the leg and used by the settle; a variant
 *   with its own price pays its list price.
 * - audit R3 MED-2: a retry of a declined attempt that no longer prices with the offer (the list price fell below it)
 *   gives the earlier attempt's claim back, so the paid order does not keep the offer and the key's next cart can use it.
 * - audit R5 MED-1: a retry that prices with a newer offer of the same product keeps only that offer (by offer id) and
 *   gives the older claim back, so the settle does not use an offer the order never paid with.
 */
import { describe, expect, test } from "bun:test";
import { ALL_SCOPES, createKey, type TestKey } from "../helpers/agents.ts";
import { useServer } from "../helpers/server.ts";

const srv = useServer({ seed: true, config: { RATE_LIMITS_ENABLED: false } });

type Res = { status: number; body: any };
const newKey = () => createKey(srv, { tier: "ENTERPRISE", scopes: ALL_SCOPES });
const post = (k: TestKey, path: string, body: unknown): Promise<Res> => srv.json(`/api/v1${path}`, { method: "POST", headers: k.headers, body });

/** A bid at 98 % of the list price (every seeded rule auto-accepts it): the accepted offer's negotiated price. */
async function negotiate(k: TestKey, p: { id: string; priceMinor: number }): Promise<number> {
  const bidMinor = Math.ceil(p.priceMinor * 0.98);
  const r = await post(k, "/agent/negotiate", { productId: p.id, merchantSlug: "demo-store", bidPrice: bidMinor / 100, currency: "USD" });
  expect(r.status).toBe(200);
  expect(r.body.data).toMatchObject({ status: "accepted", usableInCart: true });
  return bidMinor;
}

const offers = async (k: TestKey, productId: string) => [
  ...(await srv.db.sql<{ used: boolean; order_id: string | null }[]>`
    SELECT used_at IS NOT NULL AS used, order_id::text FROM negotiation_offers WHERE agent_key_id = ${k.id} AND product_id = ${productId} AND status = 'accepted'`),
];
const itemsOf = async (orderId: string) => [
  ...(await srv.db.sql<{ variant_id: string | null; unit: number; quantity: number }[]>`
    SELECT variant_id::text, unit_price_minor::int AS unit, quantity FROM order_items WHERE order_id = ${orderId} ORDER BY unit_price_minor, variant_id`),
];

describe("a negotiated offer on a product with variants (R3 MED-1)", () => {
  test.each([
    ["tracked", 30],
    ["untracked", null],
  ])("%s stock: variant lines at the product's list price pay the negotiated price, a variant with its own price pays it; the leg claims the offer and the settle uses it", async (_, stock) => {
    // Electronics, 4 variants; v0 has no own price, v1 the product's price written out, v2 its own price.
    const id = "5d69e189-f50a-5903-bc4a-204aa49bd245";
    const [row] = await srv.db.sql<{ price: number; v: string[] }[]>`SELECT price_minor::int AS price,
      ARRAY(SELECT x->>'id' FROM jsonb_array_elements(variants) x) AS v FROM products WHERE id = ${id}`;
    const list = row!.price;
    const [v0, v1, v2] = row!.v as [string, string, string];
    await srv.db.sql`UPDATE products SET stock_quantity = ${stock === null ? null : 90}, reserved_quantity = 0, in_stock = true, variant_reserved = '{}'::jsonb,
      variants = (SELECT jsonb_agg(CASE ord WHEN 1 THEN x || jsonb_build_object('priceMinor', null, 'stockQuantity', ${stock}::int, 'inStock', true)
        WHEN 2 THEN x || jsonb_build_object('priceMinor', ${list}::int, 'stockQuantity', ${stock}::int, 'inStock', true)
        WHEN 3 THEN x || jsonb_build_object('priceMinor', ${list + 1000}::int, 'stockQuantity', ${stock}::int, 'inStock', true)
        ELSE x || '{"stockQuantity":0,"inStock":false}'::jsonb END ORDER BY ord) FROM jsonb_array_elements(variants) WITH ORDINALITY AS t(x, ord))
      WHERE id = ${id}`;
    const k = await newKey();
    const price = await negotiate(k, { id, priceMinor: list });
    expect(price).toBeLessThan(list);

    const c = await post(k, "/agent/cart", {
      items: [
        { product_id: id, variant_id: v0, quantity: 2 },
        { product_id: id, variant_id: v1, quantity: 1 },
        { product_id: id, variant_id: v2, quantity: 1 },
      ],
    });
    expect(c.status).toBe(201);
    const lines = c.body.data.items.map((l: any) => ({ variant_id: l.variant_id, unit_price_minor: l.unit_price_minor, price_source: l.price_source }));
    expect(lines).toEqual([
      { variant_id: v0, unit_price_minor: price, price_source: "negotiated" },
      { variant_id: v1, unit_price_minor: price, price_source: "negotiated" },
      { variant_id: v2, unit_price_minor: list + 1000, price_source: "list" },
    ]);

    const paid = await post(k, "/agent/checkout", { cartId: c.body.data.id, payment_method: "MOCK" });
    expect(paid.status).toBe(200);
    const orderId = paid.body.data.order_id as string;
    expect(
      (await srv.db.sql<{ status: string; total: number }[]>`SELECT status, total_minor::int AS total FROM orders WHERE id = ${orderId}`)[0],
    ).toEqual({ status: "paid", total: expect.any(Number) });
    expect(await itemsOf(orderId)).toEqual(
      [
        { variant_id: v0, unit: price, quantity: 2 },
        { variant_id: v1, unit: price, quantity: 1 },
        { variant_id: v2, unit: list + 1000, quantity: 1 },
      ].sort((a, b) => a.unit - b.unit || a.variant_id.localeCompare(b.variant_id)),
    );
    expect(await offers(k, id)).toEqual([{ used: true, order_id: orderId }]);

    // Spent: the next cart of a list-priced variant pays the list price.
    const next = await post(k, "/agent/cart", { items: [{ product_id: id, variant_id: v0, quantity: 1 }] });
    expect(next.body.data.items[0]).toMatchObject({ unit_price_minor: list, price_source: "list" });
  }, 60_000);
});

describe("a retry that no longer prices with the offer gives the claim back (R3 MED-2)", () => {
  test("declined at the negotiated price, list price lowered below it, the retry pays the list price: the offer is free again and the next cart uses it", async () => {
    const k = await newKey();
    for (const tracked of [false, true]) {
      const [p] = await srv.db.sql<{ id: string; price: number }[]>`
        SELECT id, price_minor::int AS price FROM products WHERE store_slug = 'demo-store' AND active AND in_stock
          AND jsonb_array_length(COALESCE(variants, '[]'::jsonb)) = 0 AND (stock_quantity IS NOT NULL) = ${tracked}
          AND (stock_quantity IS NULL OR stock_quantity >= 20) AND price_minor BETWEEN 3000 AND 20000
          AND category IS DISTINCT FROM 'Sports & Outdoors' ORDER BY external_id DESC LIMIT 1`;
      const list = p!.price;
      const price = await negotiate(k, { id: p!.id, priceMinor: list });
      const c = await post(k, "/agent/cart", { items: [{ product_id: p!.id, quantity: 1 }] });
      expect(c.body.data.items[0]).toMatchObject({ unit_price_minor: price, price_source: "negotiated" });
      const cartId = c.body.data.id as string;
      const ik = crypto.randomUUID();
      const declined = await post(k, "/agent/checkout", { cartId, payment_method: "tok_decline", idempotency_key: ik });
      expect(declined.status).toBe(402);
      const [o] = await srv.db.sql<{ id: string }[]>`SELECT id::text FROM orders WHERE cart_id = ${cartId}`;
      expect(await offers(k, p!.id)).toEqual([{ used: false, order_id: o!.id }]);

      // The merchant lowers the list price below the negotiated one: the retry prices at the list price.
      const low = price - 100;
      await srv.db.sql`UPDATE products SET price_minor = ${low} WHERE id = ${p!.id}`;
      let retry = await post(k, "/agent/checkout", { cartId, payment_method: "tok_approve", idempotency_key: ik });
      if (retry.status === 409 && retry.body.code === "STATE_RECONFIRMATION_REQUIRED") {
        retry = await post(k, "/agent/checkout", {
          cartId,
          payment_method: "tok_approve",
          idempotency_key: ik,
          reconfirmed_state_hash: retry.body.details.reconfirm_state_hash,
        });
      }
      expect(retry.status).toBe(200);
      expect(retry.body.data.order_id).toBe(o!.id);
      expect(await itemsOf(o!.id)).toEqual([{ variant_id: null, unit: low, quantity: 1 }]);
      // The paid order did not use the offer: it is free, unused.
      expect(await offers(k, p!.id)).toEqual([{ used: false, order_id: null }]);

      // The list price back: a new cart prices with the offer and pays it.
      await srv.db.sql`UPDATE products SET price_minor = ${list} WHERE id = ${p!.id}`;
      const c2 = await post(k, "/agent/cart", { items: [{ product_id: p!.id, quantity: 1 }] });
      expect(c2.body.data.items[0]).toMatchObject({ unit_price_minor: price, price_source: "negotiated" });
      const again = await post(k, "/agent/checkout", { cartId: c2.body.data.id, payment_method: "tok_approve", idempotency_key: crypto.randomUUID() });
      expect(again.status).toBe(200);
      expect(await itemsOf(again.body.data.order_id)).toEqual([{ variant_id: null, unit: price, quantity: 1 }]);
      expect(await offers(k, p!.id)).toEqual([{ used: true, order_id: again.body.data.order_id }]);
    }
  }, 90_000);
});

describe("a bid on a product whose every variant has its own price (R3 MED-1's leftover)", () => {
  test("is rejected with reason variants_priced_separately and is not usable in a cart, instead of accepted but unusable", async () => {
    const id = "5d69e189-f50a-5903-bc4a-204aa49bd245";
    const [row] = await srv.db.sql<{ price: number }[]>`SELECT price_minor::int AS price FROM products WHERE id = ${id}`;
    const list = row!.price;
    await srv.db.sql`UPDATE products SET variants = (SELECT jsonb_agg(x || jsonb_build_object('priceMinor', ${list}::int + 100 * ord::int) ORDER BY ord)
      FROM jsonb_array_elements(variants) WITH ORDINALITY AS t(x, ord)) WHERE id = ${id}`;
    const k = await newKey();
    const r = await post(k, "/agent/negotiate", { productId: id, merchantSlug: "demo-store", bidPrice: Math.ceil(list * 0.98) / 100, currency: "USD" });
    expect(r.status).toBe(200);
    expect(r.body.data).toMatchObject({ status: "rejected", reason: "variants_priced_separately", usableInCart: false, negotiatedPrice: null });
  }, 60_000);
});

describe("a retry that prices with a newer offer of the same product gives the older claim back (R5 MED-1)", () => {
  test.each([
    ["untracked", false],
    ["tracked", true],
  ])("%s stock: declined with offer A, offer B negotiated, the retry pays B: A is free again, B used by the order, total = capture", async (_, tracked) => {
    const k = await newKey();
    const [p] = await srv.db.sql<{ id: string; price: number }[]>`
      SELECT id, price_minor::int AS price FROM products WHERE store_slug = 'demo-store' AND active AND in_stock
        AND jsonb_array_length(COALESCE(variants, '[]'::jsonb)) = 0 AND (stock_quantity IS NOT NULL) = ${tracked}
        AND (stock_quantity IS NULL OR stock_quantity >= 20) AND price_minor BETWEEN 3000 AND 20000
        AND category IS DISTINCT FROM 'Sports & Outdoors' ORDER BY external_id DESC OFFSET 1 LIMIT 1`;
    const bid = async (pct: number) => {
      const m = Math.ceil(p!.price * pct);
      const r = await post(k, "/agent/negotiate", { productId: p!.id, merchantSlug: "demo-store", bidPrice: m / 100, currency: "USD" });
      expect(r.status).toBe(200);
      expect(r.body.data).toMatchObject({ status: "accepted", usableInCart: true });
      return m;
    };
    const byPrice = async () => [
      ...(await srv.db.sql<{ price: number; used: boolean; order_id: string | null }[]>`
        SELECT negotiated_price_minor::int AS price, used_at IS NOT NULL AS used, order_id::text FROM negotiation_offers
        WHERE agent_key_id = ${k.id} AND product_id = ${p!.id} AND status = 'accepted' ORDER BY created_at`),
    ];
    const a = await bid(0.98);
    const c = await post(k, "/agent/cart", { items: [{ product_id: p!.id, quantity: 1 }] });
    expect(c.body.data.items[0]).toMatchObject({ unit_price_minor: a, price_source: "negotiated" });
    const cartId = c.body.data.id as string;
    const ik = crypto.randomUUID();
    const declined = await post(k, "/agent/checkout", { cartId, payment_method: "tok_decline", idempotency_key: ik });
    expect(declined.status).toBe(402);
    const [o] = await srv.db.sql<{ id: string }[]>`SELECT id::text FROM orders WHERE cart_id = ${cartId}`;
    expect(await byPrice()).toEqual([{ price: a, used: false, order_id: o!.id }]);

    // A newer offer of the same product: the cart prices with it, so the retry claims it instead of A.
    const b = await bid(0.99);
    expect(b).not.toBe(a);
    let retry = await post(k, "/agent/checkout", { cartId, payment_method: "tok_approve", idempotency_key: ik });
    if (retry.status === 409 && retry.body.code === "STATE_RECONFIRMATION_REQUIRED") {
      retry = await post(k, "/agent/checkout", { cartId, payment_method: "tok_approve", idempotency_key: ik, reconfirmed_state_hash: retry.body.details.reconfirm_state_hash });
    }
    expect(retry.status).toBe(200);
    expect(retry.body.data.order_id).toBe(o!.id);
    expect(await itemsOf(o!.id)).toEqual([{ variant_id: null, unit: b, quantity: 1 }]);
    // The order's total is what the processor captured (its sandbox ledger), priced with B.
    const [row] = await srv.db.sql<{ status: string; total: number; captured: number | null; subtotal: number; ledger: number }[]>`
      SELECT o.status, o.total_minor::int AS total, o.captured_minor::int AS captured, o.subtotal_minor::int AS subtotal, l.amount_minor::int AS ledger
      FROM orders o JOIN sandbox_ledger_intents l ON l.capture_ref = o.capture_ref AND l.state = 'captured' WHERE o.id = ${o!.id}`;
    expect(row).toEqual({ status: "paid", total: retry.body.data.total_minor, captured: null, subtotal: b, ledger: retry.body.data.total_minor });
    // Only the offer the order paid with is used; A is free again for the key's next cart.
    expect(await byPrice()).toEqual([
      { price: a, used: false, order_id: null },
      { price: b, used: true, order_id: o!.id },
    ]);
  }, 90_000);
});
