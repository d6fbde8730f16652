/**
 * An accepted negotiated price pays for one order (audit A1 H1; docs/catalog.md "negotiate"): every unit of that
 * product's line in the order that uses it, then it is spent. The leg claims the offer for its order before any money
 * moves (negotiation_offers.order_id), the settle that records the capture marks it used (used_at); a second order
 * of the key wanting the same offer while the first holds it is refused (409 STATE_EXECUTION_BLOCKED, reason
 * negotiated_price_used) with nothing charged; a canceled order gives its claim back. Bids past maxRounds are answered
 * and not recorded (audit A1 L3).
 */
import { describe, expect, test } from "bun:test";
import { ALL_SCOPES, createKey, type TestKey } from "../helpers/agents.ts";
import { useServer } from "../helpers/server.ts";

const srv = useServer({ seed: true, config: { RATE_LIMITS_ENABLED: false } });

type Res = { status: number; body: any };
const newKey = () => createKey(srv, { tier: "ENTERPRISE", scopes: ALL_SCOPES });
const post = (k: TestKey, path: string, body: unknown): Promise<Res> => srv.json(`/api/v1${path}`, { method: "POST", headers: k.headers, body });

/**
 * The nth active product of a store without variants, untracked (`tracked` false) or tracked stock (null: either), in
 * a category every seeded rule negotiates (northwind-outfitters excludes Sports & Outdoors).
 */
async function product(slug: string, tracked: boolean | null, nth = 0): Promise<{ id: string; priceMinor: number }> {
  const rows = await srv.db.sql<{ id: string; price_minor: number }[]>`
    SELECT id, price_minor FROM products WHERE store_slug = ${slug} AND active AND in_stock AND jsonb_array_length(COALESCE(variants, '[]'::jsonb)) = 0
      AND (${tracked}::boolean IS NULL OR (stock_quantity IS NOT NULL) = ${tracked}::boolean) AND (stock_quantity IS NULL OR stock_quantity >= 20)
      AND category IS DISTINCT FROM 'Sports & Outdoors' ORDER BY external_id OFFSET ${nth} LIMIT 1`;
  expect(rows.length).toBe(1);
  return { id: rows[0]!.id, priceMinor: Number(rows[0]!.price_minor) };
}

/** A bid at 98 % of the list price (every seeded rule auto-accepts it): the accepted offer's negotiated price. */
async function negotiate(k: TestKey, p: { id: string; priceMinor: number }, slug = "demo-store"): Promise<number> {
  const bidMinor = Math.ceil(p.priceMinor * 0.98);
  const r = await post(k, "/agent/negotiate", { productId: p.id, merchantSlug: slug, bidPrice: bidMinor / 100, currency: "USD" });
  expect(r.status).toBe(200);
  expect(r.body.data).toMatchObject({ status: "accepted", usableInCart: true });
  expect(bidMinor).toBeLessThan(p.priceMinor);
  return bidMinor;
}

async function cart(k: TestKey, items: { product_id: string; quantity: number }[]): Promise<string> {
  const c = await post(k, "/agent/cart", { items });
  expect(c.status).toBe(201);
  return c.body.data.id;
}

const offers = async (k: TestKey, productId: string): Promise<{ used: boolean; order_id: string | null }[]> => [
  ...(await srv.db.sql<{ used: boolean; order_id: string | null }[]>`
    SELECT used_at IS NOT NULL AS used, order_id::text FROM negotiation_offers WHERE agent_key_id = ${k.id} AND product_id = ${productId} AND status = 'accepted'`),
];
const orderOf = async (orderId: string) =>
  (await srv.db.sql<{ status: string; total_minor: number; unit: number; quantity: number }[]>`
    SELECT o.status, o.total_minor::int, i.unit_price_minor::int AS unit, i.quantity FROM orders o JOIN order_items i ON i.order_id = o.id WHERE o.id = ${orderId}`)[0]!;

describe("an accepted negotiated price pays for one order", () => {
  test("the first order pays the negotiated price for every unit, the settle marks the offer used, and the next cart pays the list price", async () => {
    const k = await newKey();
    for (const tracked of [false, true]) {
      const p = await product("demo-store", tracked);
      const price = await negotiate(k, p);
      const first = await post(k, "/agent/checkout", { cartId: await cart(k, [{ product_id: p.id, quantity: 3 }]), payment_method: "MOCK" });
      expect(first.status).toBe(200);
      const orderId = first.body.data.order_id as string;
      expect(await orderOf(orderId)).toMatchObject({ status: "paid", unit: price, quantity: 3 });
      expect(await offers(k, p.id)).toEqual([{ used: true, order_id: orderId }]);

      const next = await cart(k, [{ product_id: p.id, quantity: 1 }]);
      const pv = await post(k, "/agent/checkout/preview", { cartId: next });
      expect(pv.status).toBe(200);
      const line = (await srv.json(`/api/v1/agent/cart/${next}`, { headers: k.headers })).body.data.items[0];
      expect(line).toMatchObject({ price_source: "list", unit_price_minor: p.priceMinor });
      const second = await post(k, "/agent/checkout", { cartId: next, checkout_session_id: pv.body.data.checkout_session_id, payment_method: "MOCK" });
      expect(second.status).toBe(200);
      expect(await orderOf(second.body.data.order_id)).toMatchObject({ status: "paid", unit: p.priceMinor, quantity: 1 });
    }
  }, 60_000);

  test("while one order holds the offer, another checkout with it is 409 STATE_EXECUTION_BLOCKED negotiated_price_used before any money moves; once the first is paid the other cart pays the list price", async () => {
    const k = await newKey();
    const p = await product("demo-store", true, 1);
    const price = await negotiate(k, p);
    const reservedBefore = (await srv.db.sql<{ r: number }[]>`SELECT reserved_quantity AS r FROM products WHERE id = ${p.id}`)[0]!.r;
    // A: the buyer's approval is outstanding, the order pending with the offer claimed.
    const cartA = await cart(k, [{ product_id: p.id, quantity: 2 }]);
    const ikA = crypto.randomUUID();
    const waiting = await post(k, "/agent/checkout", { cartId: cartA, payment_method: "tok_needs_approval", idempotency_key: ikA });
    expect(waiting.status).toBe(202);
    const [orderA] = await srv.db.sql<{ id: string }[]>`SELECT id FROM orders WHERE cart_id = ${cartA}`;
    expect(await offers(k, p.id)).toEqual([{ used: false, order_id: orderA!.id }]);

    // B: priced with the same offer (still unused), refused at its leg, nothing charged or held, no order.
    const cartB = await cart(k, [{ product_id: p.id, quantity: 1 }]);
    const refused = await post(k, "/agent/checkout", { cartId: cartB, payment_method: "tok_approve" });
    expect(refused.status).toBe(409);
    expect(refused.body).toMatchObject({
      success: false,
      code: "STATE_EXECUTION_BLOCKED",
      details: { reasons: [{ code: "negotiated_price_used", store_id: "demo-store", product_id: p.id }] },
    });
    expect(await srv.db.sql`SELECT id FROM orders WHERE cart_id = ${cartB}`).toHaveLength(0);
    expect((await srv.db.sql<{ r: number }[]>`SELECT reserved_quantity AS r FROM products WHERE id = ${p.id}`)[0]!.r).toBe(reservedBefore + 2);
    expect(await offers(k, p.id)).toEqual([{ used: false, order_id: orderA!.id }]);

    // A is approved and paid at the negotiated price; the offer is used.
    expect((await fetch(`${waiting.body.details.approval_url}/approve`, { method: "POST" })).status).toBe(200);
    const done = await post(k, "/agent/checkout", { cartId: cartA, checkout_session_id: waiting.body.details.checkout_session_id, idempotency_key: ikA });
    expect(done.status).toBe(200);
    expect(await orderOf(orderA!.id)).toMatchObject({ status: "paid", unit: price, quantity: 2 });
    expect(await offers(k, p.id)).toEqual([{ used: true, order_id: orderA!.id }]);

    // B again: the list price now.
    const again = await post(k, "/agent/checkout", { cartId: cartB, payment_method: "tok_approve" });
    expect(again.status).toBe(200);
    expect(await orderOf(again.body.data.order_id)).toMatchObject({ status: "paid", unit: p.priceMinor, quantity: 1 });
  }, 60_000);

  test("a pending order canceled unpaid gives its offer back: the next order pays the negotiated price", async () => {
    const k = await newKey();
    const p = await product("demo-store", false, 1);
    const price = await negotiate(k, p);
    const cartA = await cart(k, [{ product_id: p.id, quantity: 1 }]);
    expect((await post(k, "/agent/checkout", { cartId: cartA, payment_method: "tok_needs_approval", idempotency_key: crypto.randomUUID() })).status).toBe(202);
    const [orderA] = await srv.db.sql<{ id: string }[]>`SELECT id FROM orders WHERE cart_id = ${cartA}`;
    expect(await offers(k, p.id)).toEqual([{ used: false, order_id: orderA!.id }]);
    const c = await post(k, `/agent/orders/${orderA!.id}/cancel`, {});
    expect(c.status).toBe(200);
    expect(c.body.data.status).toBe("canceled");
    expect(await offers(k, p.id)).toEqual([{ used: false, order_id: null }]);
    const b = await post(k, "/agent/checkout", { cartId: await cart(k, [{ product_id: p.id, quantity: 2 }]), payment_method: "MOCK" });
    expect(b.status).toBe(200);
    expect(await orderOf(b.body.data.order_id)).toMatchObject({ status: "paid", unit: price, quantity: 2 });
    expect(await offers(k, p.id)).toEqual([{ used: true, order_id: b.body.data.order_id }]);
  }, 60_000);

  test("a declined attempt keeps the offer with its order: the retry of the same session pays the negotiated price and uses it", async () => {
    const k = await newKey();
    for (const tracked of [false, true]) {
      const p = await product("demo-store", tracked, 5);
      const price = await negotiate(k, p);
      const cartId = await cart(k, [{ product_id: p.id, quantity: 2 }]);
      const ik = crypto.randomUUID();
      const declined = await post(k, "/agent/checkout", { cartId, payment_method: "tok_decline", idempotency_key: ik });
      expect(declined.status).toBe(402);
      expect(declined.body.code).toBe("PAYMENT_DECLINED");
      const [o] = await srv.db.sql<{ id: string }[]>`SELECT id FROM orders WHERE cart_id = ${cartId}`;
      expect(await offers(k, p.id)).toEqual([{ used: false, order_id: o!.id }]);
      const paid = await post(k, "/agent/checkout", { cartId, payment_method: "tok_approve", idempotency_key: ik });
      expect(paid.status).toBe(200);
      expect(paid.body.data.order_id).toBe(o!.id);
      expect(await orderOf(o!.id)).toMatchObject({ status: "paid", unit: price, quantity: 2 });
      expect(await offers(k, p.id)).toEqual([{ used: true, order_id: o!.id }]);
    }
  }, 60_000);

  test("two checkouts racing with one offer: one order pays the negotiated price, the other is refused or pays the list price, and the offer is used once", async () => {
    for (const tracked of [false, true]) {
      const k = await newKey();
      const p = await product("demo-store", tracked, 2);
      const price = await negotiate(k, p);
      const carts = await Promise.all([1, 2, 3].map(() => cart(k, [{ product_id: p.id, quantity: 1 }])));
      const rs = await Promise.all(carts.map((cartId) => post(k, "/agent/checkout", { cartId, payment_method: "tok_approve", idempotency_key: crypto.randomUUID() })));
      const units: number[] = [];
      for (const r of rs) {
        if (r.status === 200) units.push((await orderOf(r.body.data.order_id)).unit);
        else expect(r.body).toMatchObject({ code: "STATE_EXECUTION_BLOCKED", details: { reasons: [{ code: "negotiated_price_used", product_id: p.id }] } });
      }
      expect(units.filter((u) => u === price)).toHaveLength(1);
      expect(units.filter((u) => u !== price).every((u) => u === p.priceMinor)).toBe(true);
      // the processor captured once at the negotiated price, never for a refused checkout
      const captured = await srv.db.sql<{ amount: number }[]>`
        SELECT l.amount_minor::int AS amount FROM sandbox_ledger_intents l JOIN orders o ON o.intent_id = l.intent_id
        WHERE o.cart_id IN ${srv.db.sql(carts)} AND l.state = 'captured'`;
      expect(captured).toHaveLength(units.length);
      const offerRows = await offers(k, p.id);
      expect(offerRows).toHaveLength(1);
      expect(offerRows[0]!.used).toBe(true);
    }
  }, 60_000);

  test("multi-store: each store's leg claims its own offer; a refused leg gives back the other store's claim and nothing is charged", async () => {
    const k = await newKey();
    const demo = await product("demo-store", true, 3);
    const bright = await product("brightside-electronics", null, 0);
    const demoPrice = await negotiate(k, demo);
    const brightPrice = await negotiate(k, bright, "brightside-electronics");
    // A holds the demo-store offer (pending, awaiting the buyer).
    const cartA = await cart(k, [{ product_id: demo.id, quantity: 1 }]);
    const ikA = crypto.randomUUID();
    const waiting = await post(k, "/agent/checkout", { cartId: cartA, payment_method: "tok_needs_approval", idempotency_key: ikA });
    expect(waiting.status).toBe(202);
    const items = [{ product_id: demo.id, quantity: 1 }, { product_id: bright.id, quantity: 2 }];
    const cartB = await cart(k, items);
    const refused = await post(k, "/agent/checkout", { cartId: cartB, payment_method: "tok_approve" });
    expect(refused.status).toBe(409);
    expect(refused.body).toMatchObject({ code: "STATE_EXECUTION_BLOCKED", details: { reasons: [{ code: "negotiated_price_used", store_id: "demo-store", product_id: demo.id }] } });
    expect(await offers(k, bright.id)).toEqual([{ used: false, order_id: null }]);
    expect(await srv.db.sql`SELECT id FROM orders WHERE cart_id = ${cartB} AND status <> 'canceled'`).toHaveLength(0);
    expect(
      await srv.db.sql`SELECT 1 FROM sandbox_ledger_intents l JOIN orders o ON o.intent_id = l.intent_id WHERE o.cart_id = ${cartB} AND l.state = 'captured'`,
    ).toHaveLength(0);

    // A canceled: both offers are free, and one two-store order pays both negotiated prices and uses both.
    expect((await post(k, `/agent/checkout/${waiting.body.details.checkout_session_id}/cancel`, {})).status).toBe(200);
    const r = await post(k, "/agent/checkout", { cartId: await cart(k, items), payment_method: "tok_approve" });
    expect(r.status).toBe(200);
    expect(r.body.data.orders).toHaveLength(2);
    const rows = await srv.db.sql<{ store_slug: string; id: string; unit: number; quantity: number }[]>`
      SELECT o.store_slug, o.id::text, i.unit_price_minor::int AS unit, i.quantity FROM orders o JOIN order_items i ON i.order_id = o.id
      WHERE o.checkout_session_id = ${r.body.data.checkout_session_id} AND o.status = 'paid' ORDER BY o.store_slug`;
    expect(rows.map((x) => [x.store_slug, x.unit, x.quantity])).toEqual([
      ["brightside-electronics", brightPrice, 2],
      ["demo-store", demoPrice, 1],
    ]);
    expect(await offers(k, bright.id)).toEqual([{ used: true, order_id: rows[0]!.id }]);
    expect(await offers(k, demo.id)).toEqual([{ used: true, order_id: rows[1]!.id }]);
  }, 60_000);
});

describe("negotiation rounds", () => {
  test("a bid past maxRounds is answered rejected max_rounds_reached with no offer id and is not recorded", async () => {
    const k = await newKey();
    const p = await product("demo-store", false, 4);
    const bid = () => post(k, "/agent/negotiate", { productId: p.id, merchantSlug: "demo-store", bidPrice: 1, currency: "USD" });
    for (let i = 1; i <= 3; i++) expect((await bid()).body.data).toMatchObject({ round: i, status: "rejected", reason: "below_floor" });
    const past = await Promise.all([bid(), bid(), bid()]);
    for (const r of past) {
      expect(r.status).toBe(200);
      expect(r.body.data).toMatchObject({ offerId: null, status: "rejected", reason: "max_rounds_reached", round: 3, maxRounds: 3, usableInCart: false });
    }
    const [n] = await srv.db.sql<{ n: number }[]>`SELECT count(*)::int AS n FROM negotiation_offers WHERE agent_key_id = ${k.id} AND product_id = ${p.id}`;
    expect(n!.n).toBe(3);
  });
});
