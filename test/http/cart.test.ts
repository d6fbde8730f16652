import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { ManualClock } from "../../actors/runtime/clock.ts";
import { ALL_SCOPES, createKey, twoTenants, type TestKey } from "../helpers/agents.ts";
import { startServer, type TestServer } from "../helpers/server.ts";

const P = {
  headphones: "1e34ef13-d99e-575f-975a-67ea08dcdf99", // DS-0001, 249.99, 26 in stock, 2 variants
  charger: "f06ae8bf-17bd-5109-8bf8-9f51023d2d8a", // DS-0002, out of stock
  earbuds: "8a3a9aee-ab77-5002-b694-85328b7ffec3", // DS-0003, 139.99
  skillet: "399d72f1-303c-5cf3-bc6a-5c82714b85d4", // DS-0005, 36.95, 12 in stock
  board: "5befd987-79cd-540c-8a5d-2ba5a30aed41", // DS-0011, 26.95, untracked
  euSkillet: "3992c90e-3e48-5368-9988-e372a806d93f", // EU-0001, EUR
  unverified: "52954734-0962-5ce1-bab3-8572bbc01b72", // UO-0001
  suspended: "a95be3f3-46a8-5adf-b80d-2e374b0a140c", // SG-0001
};

let srv: TestServer;
let key: TestKey;
let other: TestKey;
const clock = new ManualClock(Date.now());
/** A variant of the earbuds: a product with variants is bought as one of them (audit A2-F13). */
let earbudsVariant: string;

beforeAll(async () => {
  srv = await startServer({ seed: true, boot: { clock } });
  ({ key, other } = await twoTenants(srv));
  earbudsVariant = (await srv.db.sql<{ v: string }[]>`SELECT variants->0->>'id' AS v FROM products WHERE id = ${P.earbuds}`)[0].v;
}, 120_000);
afterAll(async () => {
  await srv?.stop();
});

const createCart = (k: TestKey, items: unknown[]) => srv.json("/api/v1/agent/cart", { method: "POST", headers: k.headers, body: { items } });
const applyCoupon = (k: TestKey, body: unknown, path = "/api/v1/agent/apply-coupon") => srv.json(path, { method: "POST", headers: k.headers, body });

describe("creating a cart", () => {
  test("a cart of eligible, in-stock products is created with totals, revision 1 and status OPEN", async () => {
    const r = await createCart(key, [{ product_id: P.skillet, quantity: 2 }, { product_id: P.board, quantity: 1 }]);
    expect(r.status).toBe(201);
    expect(r.body.success).toBe(true);
    const cart = r.body.data;
    expect(cart.id).toMatch(/^[0-9a-f-]{36}$/);
    expect(cart.status).toBe("OPEN");
    expect(cart.revision).toBe(1);
    expect(cart.currency).toBe("USD");
    expect(cart.items.map((i: { product_id: string; quantity: number }) => [i.product_id, i.quantity])).toEqual([
      [P.skillet, 2],
      [P.board, 1],
    ]);
    expect(cart.totals.subtotal_minor).toBe(2 * 3695 + 2695);
    // demo-store ships free at $50 after discount
    expect(cart.totals.shipping_minor).toBe(0);
    expect(cart.totals.total).toBe(100.85);
  });

  test("repeated lines of one product add up, and a variant line carries the variant", async () => {
    const g = await srv.db.sql<{ v: string }[]>`SELECT variants->0->>'id' AS v FROM products WHERE id = ${P.headphones}`;
    const r = await createCart(key, [
      { product_id: P.skillet, quantity: 1 },
      { product_id: P.skillet, quantity: 2 },
      { product_id: P.headphones, quantity: 1, variant_id: g[0].v },
    ]);
    expect(r.status).toBe(201);
    expect(r.body.data.items).toHaveLength(2);
    expect(r.body.data.items[0].quantity).toBe(3);
    expect(r.body.data.items[1].variant_id).toBe(g[0].v);
  });

  test("an empty item list, a quantity of 0 and a non-uuid product id are 400 validation_error", async () => {
    for (const items of [[], [{ product_id: P.skillet, quantity: 0 }], [{ product_id: "nope", quantity: 1 }], [{ product_id: P.skillet, quantity: 1.5 }]]) {
      const r = await createCart(key, items);
      expect(r.status).toBe(400);
      expect(r.body.code).toBe("validation_error");
    }
  });

  test("an unknown product, an unknown variant and products of ineligible merchants are 404 PRODUCT_NOT_FOUND", async () => {
    for (const item of [
      { product_id: crypto.randomUUID(), quantity: 1 },
      { product_id: P.skillet, quantity: 1, variant_id: crypto.randomUUID() },
      { product_id: P.unverified, quantity: 1 },
      { product_id: P.suspended, quantity: 1 },
    ]) {
      const r = await createCart(key, [item]);
      expect(r.status).toBe(404);
      expect(r.body.code).toBe("PRODUCT_NOT_FOUND");
    }
  });

  test("an out-of-stock product, or more units than in stock, is 400 INVALID_ARGUMENT with the reason", async () => {
    const a = await createCart(key, [{ product_id: P.charger, quantity: 1 }]);
    expect(a.status).toBe(400);
    expect(a.body.code).toBe("INVALID_ARGUMENT");
    expect(a.body.details.reason).toBe("out_of_stock");
    const b = await createCart(key, [{ product_id: P.skillet, quantity: 13 }]);
    expect(b.status).toBe(400);
    expect(b.body.details).toMatchObject({ reason: "stock_insufficient", requested: 13, available: 12 });
  });

  test("items in two currencies are 400 CURRENCY_MISMATCH", async () => {
    const r = await createCart(key, [{ product_id: P.skillet, quantity: 1 }, { product_id: P.euSkillet, quantity: 1 }]);
    expect(r.status).toBe(400);
    expect(r.body.code).toBe("CURRENCY_MISMATCH");
    expect(r.body.details.currencies.sort()).toEqual(["EUR", "USD"]);
  });

  test("a SANDBOX key is refused with 403, and a key without the cart scope with 403 forbidden", async () => {
    const sandbox = await createKey(srv, { scopes: ALL_SCOPES, tier: "SANDBOX" });
    const a = await createCart(sandbox, [{ product_id: P.skillet, quantity: 1 }]);
    expect(a.status).toBe(403);
    expect(a.body.code).toBe("sandbox_not_allowed");
    const narrow = await createKey(srv, { scopes: ["search"] });
    const b = await createCart(narrow, [{ product_id: P.skillet, quantity: 1 }]);
    expect(b.status).toBe(403);
    expect(b.body.code).toBe("forbidden");
  });
});

describe("reading a cart", () => {
  test("the owner reads the cart; another key and an unknown id get 404 CART_NOT_FOUND", async () => {
    const c = await createCart(key, [{ product_id: P.skillet, quantity: 1 }]);
    const mine = await srv.json(`/api/v1/agent/cart/${c.body.data.id}`, { headers: key.headers });
    expect(mine.status).toBe(200);
    expect(mine.body.data.id).toBe(c.body.data.id);
    const theirs = await srv.json(`/api/v1/agent/cart/${c.body.data.id}`, { headers: other.headers });
    expect(theirs.status).toBe(404);
    expect(theirs.body.code).toBe("CART_NOT_FOUND");
    const none = await srv.json(`/api/v1/agent/cart/${crypto.randomUUID()}`, { headers: key.headers });
    expect(none.status).toBe(404);
    expect(none.body.code).toBe("CART_NOT_FOUND");
  });
});

describe("coupons", () => {
  test("WELCOME10 takes 10 % off, on both apply-coupon paths, and bumps the revision", async () => {
    const c = await createCart(key, [{ product_id: P.earbuds, variant_id: earbudsVariant, quantity: 1 }]);
    const r = await applyCoupon(key, { cartId: c.body.data.id, code: "welcome10" });
    expect(r.status).toBe(200);
    expect(r.body.data).toMatchObject({ applied: true, code: "WELCOME10", discount_minor: 1400 });
    expect(r.body.data.cart.revision).toBe(2);
    expect(r.body.data.cart.totals.discount_minor).toBe(1400);
    const c2 = await createCart(key, [{ product_id: P.earbuds, variant_id: earbudsVariant, quantity: 1 }]);
    const r2 = await applyCoupon(key, { cartId: c2.body.data.id, code: "WELCOME10" }, "/api/v1/agent/cart/apply-coupon");
    expect(r2.status).toBe(200);
    expect(r2.body.data.applied).toBe(true);
  });

  test("unknown, expired, exhausted and below-minimum coupons are rejected with 200 and the reason, leaving the cart unchanged", async () => {
    const [cheap] = await srv.db.sql<{ id: string }[]>`SELECT id FROM products WHERE store_slug = 'demo-store' AND active AND in_stock
      AND price_minor < 2500 AND stock_quantity IS NULL ORDER BY price_minor LIMIT 1`;
    const c = await createCart(key, [{ product_id: cheap.id, quantity: 1 }]);
    for (const [code, reason] of [
      ["NOPE", "invalid"],
      ["EXPIRED15", "expired"],
      ["LIMITED50", "exhausted"],
      ["FIVEOFF", "below_minimum"],
    ] as const) {
      const r = await applyCoupon(key, { cartId: c.body.data.id, code });
      expect(r.status).toBe(200);
      expect(r.body.data).toMatchObject({ applied: false, reason });
      expect(r.body.data.cart.revision).toBe(1);
    }
  });

  test("another key's cart is 404, and a stale expected_revision is 409 CART_NOT_MUTABLE", async () => {
    const c = await createCart(key, [{ product_id: P.earbuds, variant_id: earbudsVariant, quantity: 1 }]);
    const theirs = await applyCoupon(other, { cartId: c.body.data.id, code: "WELCOME10" });
    expect(theirs.status).toBe(404);
    expect(theirs.body.code).toBe("CART_NOT_FOUND");
    await applyCoupon(key, { cartId: c.body.data.id, code: "WELCOME10", expected_revision: 1 });
    const stale = await applyCoupon(key, { cartId: c.body.data.id, code: "FIVEOFF", expected_revision: 1 });
    expect(stale.status).toBe(409);
    expect(stale.body.code).toBe("CART_NOT_MUTABLE");
    expect(stale.body.details).toMatchObject({ reason: "stale_revision", revision: 2, expected_revision: 1 });
  });

  test("apply-coupon on a cart that is not open (in checkout) is 409 CART_NOT_MUTABLE", async () => {
    const c = await createCart(key, [{ product_id: P.earbuds, variant_id: earbudsVariant, quantity: 1 }]);
    const p = await srv.json("/api/v1/agent/checkout/preview", { method: "POST", headers: key.headers, body: { cartId: c.body.data.id } });
    expect(p.status).toBe(200);
    const r = await applyCoupon(key, { cartId: c.body.data.id, code: "WELCOME10" });
    expect(r.status).toBe(409);
    expect(r.body.code).toBe("CART_NOT_MUTABLE");
    expect(r.body.details.reason).toBe("checkout_in_progress");
  });
});

describe("expiry", () => {
  test("a cart idle for 24 hours reads as 404 CART_NOT_FOUND and refuses changes with 409 CART_NOT_MUTABLE", async () => {
    const c = await createCart(key, [{ product_id: P.earbuds, variant_id: earbudsVariant, quantity: 1 }]);
    clock.advance(24 * 60 * 60 * 1000 + 1000);
    const read = await srv.json(`/api/v1/agent/cart/${c.body.data.id}`, { headers: key.headers });
    expect(read.status).toBe(404);
    expect(read.body.code).toBe("CART_NOT_FOUND");
    expect(read.body.details.reason).toBe("expired");
    const write = await applyCoupon(key, { cartId: c.body.data.id, code: "WELCOME10" });
    expect(write.status).toBe(409);
    expect(write.body.code).toBe("CART_NOT_MUTABLE");
    expect(write.body.details.reason).toBe("expired");
  });
});
