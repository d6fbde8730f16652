/**
 * One coupon code at two stores of one cart (audit A3-2): codes are unique per store only, so a multi-store cart can
 * meet a row of that code at each store. Every store's row is evaluated against its own lines (actors/cart/totals.ts
 * discountsOf): another store's inactive row never hides an applicable one, and two applicable rows each discount
 * their own store (docs/checkout.md "Coupons").
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { ADMIN, ALL_SCOPES, createKey, login, merchantLogin, type TestKey } from "../helpers/agents.ts";
import { GREEN } from "../helpers/partly-paid.ts";
import { startServer, type TestServer } from "../helpers/server.ts";
import { DEMO, LEAF, TRACKED_BOARD } from "../helpers/two-store-session.ts";

let srv: TestServer;
let key: TestKey;
const owners: Record<string, Record<string, string>> = {};
let price: Record<string, number>; // product id → list price in minor units

beforeAll(async () => {
  srv = await startServer({ seed: true, config: { RATE_LIMITS_ENABLED: false } });
  key = await createKey(srv, { scopes: ALL_SCOPES });
  owners[DEMO] = { authorization: `Bearer ${await login(srv, ADMIN)}` };
  owners[LEAF] = { authorization: `Bearer ${await login(srv, merchantLogin(LEAF))}` };
  const rows = await srv.db.sql<{ id: string; p: number }[]>`SELECT id, price_minor::int AS p FROM products WHERE id IN ${srv.db.sql([TRACKED_BOARD, GREEN])}`;
  price = Object.fromEntries(rows.map((r) => [r.id, r.p]));
  await srv.db.sql`UPDATE products SET stock_quantity = 50, in_stock = true WHERE id IN ${srv.db.sql([TRACKED_BOARD, GREEN])} AND stock_quantity IS NOT NULL`;
}, 120_000);
afterAll(async () => {
  await srv?.stop();
});

const coupon = (store: string, body: Record<string, unknown>) =>
  srv.json(`/api/v1/merchant/stores/${store}/coupons`, { method: "POST", headers: owners[store], body });
const deactivate = (store: string, code: string) => srv.json(`/api/v1/merchant/stores/${store}/coupons/${code}`, { method: "DELETE", headers: owners[store] });

async function twoStoreCart(): Promise<string> {
  const c = await srv.json("/api/v1/agent/cart", { method: "POST", headers: key.headers, body: { items: [{ product_id: TRACKED_BOARD, quantity: 1 }, { product_id: GREEN, quantity: 1 }] } });
  expect(c.status).toBe(201);
  return c.body.data.id;
}
const apply = (cartId: string, code: string) => srv.json("/api/v1/agent/cart/apply-coupon", { method: "POST", headers: key.headers, body: { cartId, code } });
const tenPercent = (minor: number) => Math.round(minor / 10); // the test prices divide without a half

describe("one code at two stores of a cart", () => {
  test("store A's inactive coupon does not hide store B's: B's applies to B's lines only, and only B's order carries and counts it", async () => {
    const code = "SHADOW10";
    expect((await coupon(LEAF, { code, kind: "percent", value: 10 })).status).toBe(201);
    expect((await coupon(DEMO, { code, kind: "percent", value: 10 })).status).toBe(201);
    expect((await deactivate(DEMO, code)).status).toBe(200);
    const cartId = await twoStoreCart();
    const r = await apply(cartId, code);
    expect(r.status).toBe(200);
    const leafDiscount = tenPercent(price[GREEN]);
    expect(r.body.data).toMatchObject({ applied: true, code, discount_minor: leafDiscount });
    expect(r.body.data.cart.coupon).toEqual({ code, applied: true, discount_minor: leafDiscount });

    const p = await srv.json("/api/v1/agent/checkout/preview", { method: "POST", headers: key.headers, body: { cartId } });
    expect(p.status).toBe(200);
    const byStore = Object.fromEntries(p.body.data.merchants.map((m: { merchant_slug: string; discount_minor: number }) => [m.merchant_slug, m.discount_minor]));
    expect(byStore).toEqual({ [DEMO]: 0, [LEAF]: leafDiscount });

    const done = await srv.json("/api/v1/agent/checkout", { method: "POST", headers: key.headers, body: { cartId, payment_methods: { [DEMO]: "tok_approve", [LEAF]: "tok_approve" } } });
    expect({ status: done.status, body: done.status === 200 ? null : done.body }).toEqual({ status: 200, body: null });
    expect(done.body.data.status).toBe("COMPLETED");
    const orders = await srv.db.sql<{ store_slug: string; coupon_code: string | null; discount_minor: number }[]>`
      SELECT store_slug, coupon_code, discount_minor::int FROM orders WHERE cart_id = ${cartId} ORDER BY store_slug`;
    expect([...orders]).toEqual([
      { store_slug: DEMO, coupon_code: null, discount_minor: 0 },
      { store_slug: LEAF, coupon_code: code, discount_minor: leafDiscount },
    ]);
    const used = await srv.db.sql<{ store_slug: string; used_count: number }[]>`SELECT store_slug, used_count FROM coupons WHERE code = ${code} ORDER BY store_slug`;
    expect([...used]).toEqual([
      { store_slug: DEMO, used_count: 0 },
      { store_slug: LEAF, used_count: 1 },
    ]);
  }, 60_000);

  test("two stores with an applicable coupon of the code each discount their own lines", async () => {
    const code = "BOTHSTORES";
    expect((await coupon(DEMO, { code, kind: "percent", value: 10 })).status).toBe(201);
    expect((await coupon(LEAF, { code, kind: "fixed", value: 1 })).status).toBe(201);
    const cartId = await twoStoreCart();
    const r = await apply(cartId, code);
    expect(r.status).toBe(200);
    const demoDiscount = tenPercent(price[TRACKED_BOARD]);
    expect(r.body.data).toMatchObject({ applied: true, code, discount_minor: demoDiscount + 100 });
    const p = await srv.json("/api/v1/agent/checkout/preview", { method: "POST", headers: key.headers, body: { cartId } });
    expect(p.status).toBe(200);
    const byStore = Object.fromEntries(p.body.data.merchants.map((m: { merchant_slug: string; discount_minor: number }) => [m.merchant_slug, m.discount_minor]));
    expect(byStore).toEqual({ [DEMO]: demoDiscount, [LEAF]: 100 });
    expect(p.body.data.totals.discount_minor).toBe(demoDiscount + 100);
  }, 60_000);

  test("when no store's coupon applies, the answer gives the reason of the one that came closest (below_minimum over another store's inactive row)", async () => {
    const code = "NEARLY";
    expect((await coupon(DEMO, { code, kind: "percent", value: 10 })).status).toBe(201);
    expect((await deactivate(DEMO, code)).status).toBe(200);
    const minSpend = (price[GREEN] + 100) / 100;
    expect((await coupon(LEAF, { code, kind: "percent", value: 10, minSpend })).status).toBe(201);
    const cartId = await twoStoreCart();
    const r = await apply(cartId, code);
    expect(r.status).toBe(200);
    expect(r.body.data).toMatchObject({
      applied: false,
      code,
      reason: "below_minimum",
      details: { min_spend_minor: price[GREEN] + 100, eligible_subtotal_minor: price[GREEN] },
      discount_minor: 0,
    });
    expect(r.body.data.cart.coupon).toBeNull();
  }, 60_000);
});
