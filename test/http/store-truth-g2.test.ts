/**
 * What agents are told about a store is what its cart does, and the catalog refuses input it cannot honour (audits
 * A2-F12, F9, F14, F4 and A3-6, A3-7, A3-8), through HTTP against the real server and Postgres:
 * - the free-shipping threshold and delivery days agents read (ProductDetail, merchant profile, PUT /policies' answer)
 *   are the domestic zone's, which prices the cart, whatever PUT /policies said;
 * - a store that does not accept returns shows a 0-day window everywhere; PUT /policies refuses a window with it;
 * - tracked stock 0 is out of stock even when the catalog item says `inStock: true`;
 * - compare names no price-based best across currencies;
 * - negotiation excludedCategories are bounded; image URLs are http(s); currencies are ISO 4217; impossible dates 400.
 */
import { beforeAll, describe, expect, test } from "bun:test";
import { ALL_SCOPES, createKey, login, merchantLogin, type TestKey } from "../helpers/agents.ts";
import { useServer } from "../helpers/server.ts";

const SLUG = "greenleaf-living"; // USD, US; seeded zone "Contiguous US": 5.99 + 1.00/item, free from 60.00, 3-5 days

const srv = useServer({ seed: true, config: { RATE_LIMITS_ENABLED: false } });
let key: TestKey;
let owner: Record<string, string>;

beforeAll(async () => {
  key = await createKey(srv, { tier: "ENTERPRISE", scopes: ALL_SCOPES });
  owner = { authorization: `Bearer ${await login(srv, merchantLogin(SLUG))}` };
}, 120_000);

const merchant = (path: string, method: string, body: unknown) => srv.json(`/api/v1/merchant/stores/${SLUG}${path}`, { method, headers: owner, body });
const agentGet = (path: string) => srv.json(`/api/v1/agent${path}`, { headers: key.headers });
const agentPost = (path: string, body: unknown) => srv.json(`/api/v1/agent${path}`, { method: "POST", headers: key.headers, body });

async function upsert(item: Record<string, unknown>): Promise<string> {
  const r = await merchant("/catalog", "PUT", { products: [{ title: `G2 ${item.externalId}`, price: 12.99, currency: "USD", ...item }] });
  expect(r.status).toBe(200);
  expect(r.body.data.rejected).toEqual([]);
  return r.body.data.upserted[0].id;
}

const shippingOf = async (productId: string, quantity: number): Promise<number> => {
  const cart = await agentPost("/cart", { items: [{ product_id: productId, quantity }] });
  expect(cart.status, JSON.stringify(cart.body)).toBe(201);
  return cart.body.data.totals.shipping_minor;
};

describe("return policy: one answer everywhere (A2-F9)", () => {
  test("acceptsReturns false with a 30-day window is 400 on returnWindowDays, and nothing changes", async () => {
    const before = await srv.db.sql<{ policy_version: number }[]>`SELECT policy_version FROM stores WHERE slug = ${SLUG}`;
    const r = await merchant("/policies", "PUT", { acceptsReturns: false, returnWindowDays: 30 });
    expect(r.status).toBe(400);
    expect(r.body).toMatchObject({ success: false, code: "validation_error", details: { field: "returnWindowDays" } });
    const after = await srv.db.sql<{ policy_version: number }[]>`SELECT policy_version FROM stores WHERE slug = ${SLUG}`;
    expect(after[0]!.policy_version).toBe(before[0]!.policy_version);
  });

  test("a stored contradiction (written before the check) reads 0 days in the profile, ProductDetail and /return-policy", async () => {
    await srv.db.sql`UPDATE stores SET policies = '{"acceptsReturns": false, "returnWindowDays": 30, "restockingFeePercent": 5}'::jsonb WHERE slug = ${SLUG}`;
    const [p] = await srv.db.sql<{ id: string }[]>`SELECT id FROM products WHERE store_slug = ${SLUG} AND active ORDER BY id LIMIT 1`;
    const profile = await agentGet(`/merchants/${SLUG}`);
    const detail = await agentGet(`/products/${p!.id}`);
    const returns = await agentGet(`/merchants/${SLUG}/return-policy`);
    expect([profile.body.data.policies.returnWindowDays, detail.body.data.policies.returnWindowDays, returns.body.data.returnWindowDays]).toEqual([0, 0, 0]);
    expect(profile.body.data.policies.acceptsReturns).toBe(false);
  });

  test("acceptsReturns false alone (or with 0) is accepted and shows 0 days", async () => {
    const r = await merchant("/policies", "PUT", { acceptsReturns: false, returnWindowDays: 0 });
    expect(r.status).toBe(200);
    expect(r.body.data.policies).toMatchObject({ acceptsReturns: false, returnWindowDays: 0 });
    expect((await merchant("/policies", "PUT", { acceptsReturns: true, returnWindowDays: 45 })).status).toBe(200);
  });
});

describe("tracked stock decides inStock (A2-F14)", () => {
  test("PUT /catalog with stockQuantity 0 and inStock true stores and shows the product out of stock", async () => {
    const id = await upsert({ externalId: "G2-ZERO", stockQuantity: 0, inStock: true });
    const [row] = await srv.db.sql<{ in_stock: boolean }[]>`SELECT in_stock FROM products WHERE id = ${id}`;
    expect(row!.in_stock).toBe(false);
    const a = await agentGet(`/availability/${id}`);
    expect(a.body.data).toMatchObject({ inStock: false, stockQuantity: 0 });
    expect((await agentGet(`/products/${id}`)).body.data.inStock).toBe(false);
  });

  test("PATCH /inventory with stockQuantity 0 and inStock true leaves it out of stock; stock back puts it in stock", async () => {
    const id = await upsert({ externalId: "G2-INV", stockQuantity: 4 });
    expect((await merchant("/inventory", "PATCH", { items: [{ productId: id, stockQuantity: 0, inStock: true }] })).status).toBe(200);
    expect((await agentGet(`/availability/${id}`)).body.data).toMatchObject({ inStock: false, stockQuantity: 0 });
    expect((await merchant("/inventory", "PATCH", { items: [{ productId: id, stockQuantity: 2 }] })).status).toBe(200);
    expect((await agentGet(`/availability/${id}`)).body.data).toMatchObject({ inStock: true, stockQuantity: 2 });
  });
});

describe("compare across currencies (A2-F4)", () => {
  test("USD and EUR products: no best value and no recommendation, with the reason; one currency still has both", async () => {
    const [usd] = await srv.db.sql<{ id: string }[]>`SELECT id FROM products WHERE store_slug = 'demo-store' AND active AND currency = 'USD' ORDER BY price_minor DESC LIMIT 1`;
    const [eur] = await srv.db.sql<{ id: string }[]>`SELECT id FROM products WHERE store_slug = 'qualified-eu-shop' AND active AND currency = 'EUR' ORDER BY price_minor LIMIT 1`;
    const mixed = await agentPost("/compare", { productIds: [usd!.id, eur!.id] });
    expect(mixed.status).toBe(200);
    expect(mixed.body.data.bestValue).toBeNull();
    expect(mixed.body.data.recommendation.productId).toBeNull();
    expect(mixed.body.data.recommendation.reasons).toEqual([
      "The products are priced in 2 currencies (EUR, USD): prices are not compared across currencies, so there is no best value or recommendation; compare products of one currency.",
    ]);
    expect(mixed.body.data.priceRange.map((r: { currency: string }) => r.currency).sort()).toEqual(["EUR", "USD"]);
    const [usd2] = await srv.db.sql<{ id: string }[]>`SELECT id FROM products WHERE store_slug = 'demo-store' AND active AND currency = 'USD' ORDER BY price_minor LIMIT 1`;
    const one = await agentPost("/compare", { productIds: [usd!.id, usd2!.id] });
    expect(one.body.data.bestValue).not.toBeNull();
    expect(one.body.data.recommendation.productId).not.toBeNull();
  });
});

describe("input bounds (A3-6, A3-7, A3-8)", () => {
  const rules = { enabled: true, floorPercent: 80, autoAcceptPercent: 95, maxRounds: 3 };

  test("negotiation.excludedCategories: more than 100, or one longer than 255 characters, is 400; 100 of 255 pass", async () => {
    const many = await merchant("/policies", "PUT", { acceptsReturns: true, negotiation: { ...rules, excludedCategories: Array.from({ length: 101 }, (_, i) => `c${i}`) } });
    expect(many.status).toBe(400);
    // the object-or-null union names the inner rule that failed (infra/validation-message.ts innerUnionFailure)
    expect(many.body).toMatchObject({ code: "validation_error", details: { field: "negotiation.excludedCategories", maxItems: 100 } });
    const long = await merchant("/policies", "PUT", { acceptsReturns: true, negotiation: { ...rules, excludedCategories: ["x".repeat(256)] } });
    expect(long.status).toBe(400);
    expect(long.body).toMatchObject({ code: "validation_error", details: { field: "negotiation.excludedCategories.0", maxLength: 255 } });
    const [row] = await srv.db.sql<{ n: number | null }[]>`SELECT jsonb_array_length(negotiation_rules->'excludedCategories') AS n FROM stores WHERE slug = ${SLUG}`;
    expect(row!.n ?? 0).toBeLessThanOrEqual(1);
    const ok = await merchant("/policies", "PUT", { acceptsReturns: true, returnWindowDays: 45, negotiation: { ...rules, excludedCategories: Array.from({ length: 100 }, (_, i) => `${i}`.padEnd(255, "c")) } });
    expect(ok.status).toBe(200);
  });

  test("PUT /catalog: javascript: and file: image URLs are per-item rejections on images.N; https is accepted", async () => {
    const r = await merchant("/catalog", "PUT", {
      products: [
        { externalId: "G2-JS", title: "G2 js", price: 1, currency: "USD", images: ["https://img.example/a.jpg", "javascript:alert(document.cookie)"] },
        { externalId: "G2-FILE", title: "G2 file", price: 1, currency: "USD", images: ["file:///etc/passwd"] },
        { externalId: "G2-IMG", title: "G2 img", price: 1, currency: "USD", images: ["https://img.example/a.jpg", "HTTP://img.example/b.png"] },
      ],
    });
    expect(r.status).toBe(200);
    expect(r.body.data.rejected).toEqual([
      { index: 0, externalId: "G2-JS", errors: [{ field: "images.1", message: "must be an http or https URL" }] },
      { index: 1, externalId: "G2-FILE", errors: [{ field: "images.0", message: "must be an http or https URL" }] },
    ]);
    expect(r.body.data.upserted.map((u: { externalId: string }) => u.externalId)).toEqual(["G2-IMG"]);
  });

  test("a currency outside ISO 4217 is refused for products, shipping zones and human orders", async () => {
    const p = await merchant("/catalog", "PUT", { products: [{ externalId: "G2-ZZZ", title: "G2 zzz", price: 1, currency: "ZZZ" }] });
    expect(p.body.data.rejected).toEqual([{ index: 0, externalId: "G2-ZZZ", errors: [{ field: "currency", message: "ZZZ is not an ISO 4217 currency code" }] }]);
    const z = await merchant("/shipping-zones", "PUT", { zones: [{ name: "Z", countries: ["US"], currency: "ZZZ", base: 1, minDays: 1, maxDays: 2 }] });
    expect(z.status).toBe(400);
    expect(z.body).toMatchObject({ code: "validation_error", details: { field: "zones.0.currency" } });
    const [zones] = await srv.db.sql<{ n: number }[]>`SELECT count(*)::int AS n FROM shipping_zones WHERE store_slug = ${SLUG} AND currency = 'ZZZ'`;
    expect(zones!.n).toBe(0);
    const o = await merchant("/orders", "POST", { orders: [{ externalId: "G2-O-ZZZ", buyer: "a@example.com", status: "paid", currency: "ZZZ", items: [{ title: "x", quantity: 1, unitPrice: 1 }] }] });
    expect(o.status).toBe(201);
    expect(o.body.data.rejected).toEqual([{ index: 0, externalId: "G2-O-ZZZ", errors: [{ field: "currency", message: "ZZZ is not an ISO 4217 currency code" }] }]);
  });

  test("an impossible date is 400 for a coupon's expiresAt and a per-order rejection for createdAt; real dates pass", async () => {
    const bad = await merchant("/coupons", "POST", { code: "G2FEB", kind: "percent", value: 10, expiresAt: "2027-02-30T00:00:00Z" });
    expect(bad.status).toBe(400);
    expect(bad.body).toMatchObject({ code: "validation_error", error: "Invalid expiresAt: 2027-02-30 is not a date in the calendar", details: { field: "expiresAt" } });
    const [none] = await srv.db.sql<{ n: number }[]>`SELECT count(*)::int AS n FROM coupons WHERE store_slug = ${SLUG} AND code = 'G2FEB'`;
    expect(none!.n).toBe(0);
    const good = await merchant("/coupons", "POST", { code: "G2FEB", kind: "percent", value: 10, expiresAt: "2028-02-29T00:00:00Z" });
    expect(good.status).toBe(201);
    expect(good.body.data.expiresAt).toBe("2028-02-29T00:00:00.000Z");
    const o = await merchant("/orders", "POST", { orders: [{ externalId: "G2-O-FEB", buyer: "a@example.com", status: "paid", currency: "USD", createdAt: "2026-02-29T10:00:00Z", items: [{ title: "x", quantity: 1, unitPrice: 1 }] }] });
    expect(o.body.data.rejected).toEqual([{ index: 0, externalId: "G2-O-FEB", errors: [{ field: "createdAt", message: "2026-02-29 is not a date in the calendar" }] }]);
  });
});

// Last: these change the store's zones.
describe("shipping promises are the zones' (A2-F12)", () => {
  test("a threshold and estimate that disagree with the domestic zone: agents are shown the zone's, which the cart charges", async () => {
    const id = await upsert({ externalId: "G2-SHIP" }); // 12.99, untracked
    const put = await merchant("/policies", "PUT", { acceptsReturns: true, returnWindowDays: 45, freeShippingThreshold: 10, shippingEstimateDays: "1-2" });
    expect(put.status).toBe(200);
    expect(put.body.data.policies).toMatchObject({ freeShippingThreshold: 60, shippingEstimateDays: "3-5" });
    expect(put.body.data.notes).toHaveLength(2);
    const detail = await agentGet(`/products/${id}`);
    const profile = await agentGet(`/merchants/${SLUG}`);
    for (const p of [detail.body.data.policies, profile.body.data.policies]) expect(p).toMatchObject({ freeShippingThreshold: 60, shippingEstimateDays: "3-5" });
    // 12.99 is above the 10 PUT /policies said, below the zone's 60: the cart charges 5.99 + 1.00; 5 × 12.99 ships free
    expect(await shippingOf(id, 1)).toBe(699);
    expect(await shippingOf(id, 5)).toBe(0);
  });

  test("new zones change what agents read at once; no domestic zone: neither; no zones at all: free, the stated estimate", async () => {
    const id = (await srv.db.sql<{ id: string }[]>`SELECT id FROM products WHERE store_slug = ${SLUG} AND external_id = 'G2-SHIP'`)[0]!.id;
    const zone = (name: string, countries: string[], extra: Record<string, unknown>) => ({ name, countries, currency: "USD", base: 4, minDays: 2, maxDays: 4, ...extra });
    expect((await merchant("/shipping-zones", "PUT", { zones: [zone("Home", ["US"], { freeOver: 25 }), zone("Canada", ["CA"], { base: 9, freeOver: 5, minDays: 1, maxDays: 1 })] })).status).toBe(200);
    expect((await agentGet(`/products/${id}`)).body.data.policies).toMatchObject({ freeShippingThreshold: 25, shippingEstimateDays: "2-4" });
    expect([await shippingOf(id, 1), await shippingOf(id, 2)]).toEqual([400, 0]);

    expect((await merchant("/shipping-zones", "PUT", { zones: [zone("Home", ["US"], {})] })).status).toBe(200);
    const never = (await agentGet(`/merchants/${SLUG}`)).body.data.policies;
    expect(never.shippingEstimateDays).toBe("2-4");
    expect(never.freeShippingThreshold).toBeUndefined(); // a zone without freeOver never ships free
    expect(await shippingOf(id, 10)).toBe(400);

    expect((await merchant("/shipping-zones", "PUT", { zones: [zone("Canada", ["CA"], { freeOver: 5 })] })).status).toBe(200);
    const abroad = (await agentGet(`/merchants/${SLUG}`)).body.data.policies;
    expect([abroad.freeShippingThreshold, abroad.shippingEstimateDays]).toEqual([undefined, undefined]);

    expect((await merchant("/shipping-zones", "PUT", { zones: [] })).status).toBe(200);
    expect((await agentGet(`/merchants/${SLUG}`)).body.data.policies).toMatchObject({ freeShippingThreshold: 0, shippingEstimateDays: "1-2" });
    expect(await shippingOf(id, 1)).toBe(0);
  });
});
