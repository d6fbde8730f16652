/**
 * Variant-level stock holds: a variant's own stock is held, committed and released exactly like a product's
 * (migration 0033, actors/store/commerce.ts beginLegRows / settleLegRows / cancelPendingOrderRows).
 */
import { beforeAll, beforeEach, describe, expect, test } from "bun:test";
import { ALL_SCOPES, createKey, type TestKey } from "../helpers/agents.ts";
import { useServer } from "../helpers/server.ts";

const HEADPHONES = "1e34ef13-d99e-575f-975a-67ea08dcdf99"; // DS-0001, demo-store, 2 variants

const srv = useServer({ seed: true, config: { RATE_LIMITS_ENABLED: false } });
let alice: TestKey;
let bob: TestKey;
let carol: TestKey;
let A: string; // variant 0
let B: string; // variant 1

beforeAll(async () => {
  [alice, bob, carol] = await Promise.all([0, 1, 2].map(() => createKey(srv, { scopes: ALL_SCOPES })));
  const [v] = await srv.db.sql<{ a: string; b: string }[]>`SELECT variants->0->>'id' AS a, variants->1->>'id' AS b FROM products WHERE id = ${HEADPHONES}`;
  A = v.a;
  B = v.b;
}, 120_000);

/** Variant A: `a` units, variant B: `b` units; the product tracks their sum; nothing held. */
async function setStock(a: number, b: number) {
  await srv.db.sql`UPDATE products SET stock_quantity = ${a + b}, reserved_quantity = 0, in_stock = true, variant_reserved = '{}'::jsonb,
    variants = jsonb_set(jsonb_set(jsonb_set(jsonb_set(variants, '{0,stockQuantity}', to_jsonb(${a}::int)), '{0,inStock}', 'true'),
      '{1,stockQuantity}', to_jsonb(${b}::int)), '{1,inStock}', 'true')
    WHERE id = ${HEADPHONES}`;
}

async function level() {
  const [p] = await srv.db.sql<{ stock: number; reserved: number; held: Record<string, number>; a: number; b: number; a_in: boolean }[]>`
    SELECT stock_quantity AS stock, reserved_quantity AS reserved, variant_reserved AS held,
      (variants->0->>'stockQuantity')::int AS a, (variants->1->>'stockQuantity')::int AS b, (variants->0->>'inStock')::boolean AS a_in
    FROM products WHERE id = ${HEADPHONES}`;
  return p;
}

async function cart(k: TestKey, variant: string, quantity = 1): Promise<string> {
  const r = await srv.json("/api/v1/agent/cart", { method: "POST", headers: k.headers, body: { items: [{ product_id: HEADPHONES, variant_id: variant, quantity }] } });
  expect(r.status).toBe(201);
  return r.body.data.id as string;
}

const checkout = (k: TestKey, body: Record<string, unknown>) => srv.json("/api/v1/agent/checkout", { method: "POST", headers: k.headers, body });

beforeEach(async () => {
  await setStock(1, 5);
});

describe("variant stock holds", () => {
  test("two agents competing for the last unit of one variant make one order; the loser is 409 STATE_EXECUTION_BLOCKED naming the variant", async () => {
    const [ca, cb] = await Promise.all([cart(alice, A), cart(bob, A)]);
    const [ra, rb] = await Promise.all([checkout(alice, { cartId: ca, payment_method: "MOCK" }), checkout(bob, { cartId: cb, payment_method: "MOCK" })]);
    const results = [ra, rb];
    const won = results.filter((r) => r.status === 200);
    const lost = results.filter((r) => r.status === 409);
    expect(won).toHaveLength(1);
    expect(lost).toHaveLength(1);
    expect(won[0].body.data.status).toBe("COMPLETED");
    expect(lost[0].body).toMatchObject({ success: false, code: "STATE_EXECUTION_BLOCKED" });
    expect(lost[0].body.details.reasons).toContainEqual(expect.objectContaining({ product_id: HEADPHONES, variant_id: A, code: "out_of_stock", available: 0 }));
    const paid = await srv.db.sql<{ n: number }[]>`SELECT count(*)::int AS n FROM orders o JOIN order_items i ON i.order_id = o.id
      WHERE i.variant_id = ${A} AND o.status = 'paid' AND o.cart_id = ANY(${[ca, cb]}::uuid[])`;
    expect(paid[0].n).toBe(1);
    // The sale came off the variant and the product; nothing stays held.
    expect(await level()).toEqual({ stock: 5, reserved: 0, held: {}, a: 0, b: 5, a_in: false });
  }, 60_000);

  test("the other variant of the same product is unaffected by the sold-out one: it can still be bought", async () => {
    await setStock(0, 5);
    await srv.db.sql`UPDATE products SET variants = jsonb_set(variants, '{0,inStock}', 'false') WHERE id = ${HEADPHONES}`;
    const id = await cart(carol, B, 2);
    const r = await checkout(carol, { cartId: id, payment_method: "MOCK" });
    expect(r.status).toBe(200);
    expect(r.body.data.status).toBe("COMPLETED");
    expect(await level()).toEqual({ stock: 3, reserved: 0, held: {}, a: 0, b: 3, a_in: false });
  }, 60_000);

  test("a payment waiting for the buyer holds the variant: another agent is refused; canceling the session releases it", async () => {
    const ca = await cart(alice, A);
    const cb = await cart(bob, A);
    const w = await checkout(alice, { cartId: ca, payment_method: "tok_needs_approval", idempotency_key: crypto.randomUUID() });
    expect(w.status).toBe(202);
    expect(w.body.details.status).toBe("PENDING_EXTERNAL_CONFIRMATION");
    expect(await level()).toMatchObject({ reserved: 1, held: { [A]: 1 }, a: 1 });
    const refused = await checkout(bob, { cartId: cb, payment_method: "MOCK" });
    expect(refused.status).toBe(409);
    expect(refused.body.code).toBe("STATE_EXECUTION_BLOCKED");
    expect(refused.body.details.reasons).toContainEqual(expect.objectContaining({ variant_id: A, code: "out_of_stock" }));
    const c = await srv.json(`/api/v1/agent/checkout/${w.body.details.checkout_session_id}/cancel`, { method: "POST", headers: alice.headers });
    expect(c.status).toBe(200);
    expect(await level()).toEqual({ stock: 6, reserved: 0, held: {}, a: 1, b: 5, a_in: true });
    const cb2 = await cart(bob, A);
    const ok = await checkout(bob, { cartId: cb2, payment_method: "MOCK" });
    expect(ok.status).toBe(200);
  }, 60_000);

  test("a failed payment releases the variant hold: 402 PAYMENT_FAILED_ROLLED_BACK, then another agent buys the unit", async () => {
    const ca = await cart(alice, A);
    const f = await checkout(alice, { cartId: ca, payment_method: "tok_fail" });
    expect(f.status).toBe(402);
    expect(f.body).toMatchObject({ success: false, code: "PAYMENT_FAILED_ROLLED_BACK", details: { status: "READY_FOR_PAYMENT" } });
    expect(await level()).toEqual({ stock: 6, reserved: 0, held: {}, a: 1, b: 5, a_in: true });
    const cb = await cart(bob, A);
    const ok = await checkout(bob, { cartId: cb, payment_method: "MOCK" });
    expect(ok.status).toBe(200);
    expect(await level()).toEqual({ stock: 5, reserved: 0, held: {}, a: 0, b: 5, a_in: false });
  }, 60_000);

  test("a leg asking for more of a variant than it has holds nothing at all, not even the product's units", async () => {
    const id = await cart(alice, B, 5);
    // Another buyer takes 3 of B meanwhile (a merchant sync lowering B to 2 has the same effect).
    await srv.db.sql`UPDATE products SET variants = jsonb_set(variants, '{1,stockQuantity}', '2') WHERE id = ${HEADPHONES}`;
    const r = await checkout(alice, { cartId: id, payment_method: "MOCK" });
    expect(r.status).toBe(409);
    expect(r.body.code).toBe("STATE_EXECUTION_BLOCKED");
    expect(await level()).toEqual({ stock: 6, reserved: 0, held: {}, a: 1, b: 2, a_in: true });
  }, 60_000);
});
