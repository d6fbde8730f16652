import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { createKey, login, merchantLogin, type TestKey } from "../helpers/agents.ts";
import { startServer, type TestServer } from "../helpers/server.ts";
import { getIndexer } from "../../search/indexer.ts";

let srv: TestServer;
let key: TestKey;
let owner: Record<string, string>;
let other: Record<string, string>;
let admin: Record<string, string>;
const SLUG = "greenleaf-living";

beforeAll(async () => {
  srv = await startServer({ seed: true, config: { RATE_LIMITS_ENABLED: false } });
  key = await createKey(srv, { tier: "ENTERPRISE", scopes: ["search", "compare", "merchants:read", "protocols:discover"] });
  owner = { authorization: `Bearer ${await login(srv, merchantLogin(SLUG))}` };
  other = { authorization: `Bearer ${await login(srv, merchantLogin("maple-pine-home"))}` };
  admin = { authorization: `Bearer ${await login(srv)}` };
}, 60_000);
afterAll(async () => {
  await srv.stop();
});

function expectError(r: { status: number; body: any }, status: number, code: string) {
  expect(r.status).toBe(status);
  expect(r.body.success).toBe(false);
  expect(typeof r.body.error).toBe("string");
  expect(r.body.code).toBe(code);
}

const search = (query: string) => srv.json("/api/v1/agent/search", { method: "POST", headers: key.headers, body: { query, filters: { inStock: false } } });
const settle = () => getIndexer(srv.running.services)!.idle();

describe("agent merchant reads", () => {
  test("an eligible merchant's profile carries the MerchantSummary fields and its policies", async () => {
    const r = await srv.json("/api/v1/agent/merchants/demo-store", { headers: key.headers });
    expect(r.status).toBe(200);
    // the score the trust actor computed at boot, not a seeded placeholder
    const [store] = await srv.db.sql<{ trust_score: string }[]>`SELECT trust_score FROM stores WHERE slug = 'demo-store'`;
    expect(r.body.data).toMatchObject({ slug: "demo-store", name: "Demo Store", trustScore: Number(store.trust_score), verificationLevel: "STANDARD", storeStatus: "active" });
    expect(typeof r.body.data.lastSyncAt).toBe("string");
    expect(r.body.data.policies.acceptsReturns).toBe(true);
  });

  test("QUALIFIED shows as PREMIUM in the summary and a deprioritized store says so", async () => {
    const q = await srv.json("/api/v1/agent/merchants/qualified-eu-shop", { headers: key.headers });
    expect(q.body.data).toMatchObject({ verificationLevel: "PREMIUM", verificationLevelDetail: "QUALIFIED", euQualified: true });
    const d = await srv.json("/api/v1/agent/merchants/deprioritized-depot", { headers: key.headers });
    expect(d.body.data.storeStatus).toBe("deprioritized");
  });

  test("UNVERIFIED, low-trust, suspended and unknown merchants are 404 on every merchant page", async () => {
    for (const slug of ["unverified-outlet", "lowtrust-bazaar", "suspended-goods", "no-such-store"]) {
      for (const tail of ["", "/protocols", "/return-policy"]) {
        expectError(await srv.json(`/api/v1/agent/merchants/${slug}${tail}`, { headers: key.headers }), 404, "store_not_found");
      }
    }
  });

  test("protocols name the preferred one and the return policy is structured", async () => {
    const p = await srv.json("/api/v1/agent/merchants/demo-store/protocols", { headers: key.headers });
    expect(p.status).toBe(200);
    expect(p.body.data.preferred).toBe("card");
    expect(p.body.data.protocols.map((x: any) => x.id)).toEqual(["MOCK", "card", "x402"]);
    const rp = await srv.json("/api/v1/agent/merchants/demo-store/return-policy", { headers: key.headers });
    expect(rp.body.data).toMatchObject({ acceptsReturns: true, returnWindowDays: 30, restockingFeePercent: 0 });
  });
});

describe("merchant ingestion: PUT /catalog", () => {
  test("a batch is written per item: valid items land, rejected items are listed with every reason and nothing of them is written", async () => {
    const r = await srv.json(`/api/v1/merchant/stores/${SLUG}/catalog`, {
      method: "PUT",
      headers: owner,
      body: {
        products: [
          { externalId: "GL-NEW-1", title: "Quokka Ceramic Planter", price: 24.5, currency: "USD", stockQuantity: 4, category: "Garden" },
          { externalId: "GL-BAD-1", title: "Broken", price: 10.999, currency: "USD" },
          { externalId: "GL-BAD-2", price: -1, currency: "usd" },
          "not an object",
        ],
      },
    });
    expect(r.status).toBe(200);
    expect(r.body.data.accepted).toBe(1);
    expect(r.body.data.rejected.map((x: any) => x.index)).toEqual([1, 2, 3]);
    expect(r.body.data.rejected[0]).toMatchObject({ externalId: "GL-BAD-1" });
    expect(r.body.data.rejected[0].errors[0].field).toBe("price");
    expect(r.body.data.rejected[1].errors.length).toBeGreaterThanOrEqual(2);
    const rows = await srv.db.sql`SELECT external_id FROM products WHERE store_slug = ${SLUG} AND external_id LIKE 'GL-BAD-%'`;
    expect(rows.length).toBe(0);
    await settle();
    const s = await search("quokka planter");
    expect(s.body.data.products.map((p: any) => p.title)).toEqual(["Quokka Ceramic Planter"]);
  });

  test("a price change records price history and updates the store's last sync", async () => {
    const before = await srv.db.sql<{ last_sync_at: Date }[]>`SELECT last_sync_at FROM stores WHERE slug = ${SLUG}`;
    const r = await srv.json(`/api/v1/merchant/stores/${SLUG}/catalog`, {
      method: "PUT",
      headers: owner,
      body: { products: [{ externalId: "GL-NEW-1", title: "Quokka Ceramic Planter", price: 19.5, currency: "USD", stockQuantity: 4 }] },
    });
    expect(r.status).toBe(200);
    const id = r.body.data.upserted[0].id;
    // a change within the hour of the product's latest row folds into it (6e34afd): its close, first, lowest, highest
    const hist = await srv.db.sql<{ price_minor: number; first_minor: number | null; lo_minor: number | null; hi_minor: number | null }[]>`
      SELECT price_minor::int, first_minor::int, lo_minor::int, hi_minor::int FROM product_price_history WHERE product_id = ${id} ORDER BY id`;
    if (hist.length === 1) expect(hist[0]).toEqual({ price_minor: 1950, first_minor: 2450, lo_minor: 1950, hi_minor: 2450 });
    // the product's first row was written in the previous hour: the change starts a row of its own
    else expect(hist.map((h) => Number(h.price_minor))).toEqual([2450, 1950]);
    const after = await srv.db.sql<{ last_sync_at: Date }[]>`SELECT last_sync_at FROM stores WHERE slug = ${SLUG}`;
    expect(new Date(after[0]!.last_sync_at).getTime()).toBeGreaterThan(new Date(before[0]!.last_sync_at).getTime());
    const d = await srv.json(`/api/v1/agent/products/${id}`, { headers: key.headers });
    expect(d.body.data.price).toBe(19.5);
  });

  test("removing an externalId takes the product out of search and reads", async () => {
    const r = await srv.json(`/api/v1/merchant/stores/${SLUG}/catalog`, { method: "PUT", headers: owner, body: { products: [], remove: ["GL-NEW-1"] } });
    expect(r.body.data.removed).toBe(1);
    await settle();
    expect((await search("quokka planter")).body.data.products.length).toBe(0);
    const [row] = await srv.db.sql<{ id: string }[]>`SELECT id FROM products WHERE store_slug = ${SLUG} AND external_id = 'GL-NEW-1'`;
    expectError(await srv.json(`/api/v1/agent/products/${row!.id}`, { headers: key.headers }), 404, "not_found");
  });

  test("more than 1,000 products or a body without products is 400", async () => {
    const many = Array.from({ length: 1001 }, (_, i) => ({ externalId: `X-${i}`, title: "x", price: 1, currency: "USD" }));
    expectError(await srv.json(`/api/v1/merchant/stores/${SLUG}/catalog`, { method: "PUT", headers: owner, body: { products: many } }), 400, "validation_error");
    expectError(await srv.json(`/api/v1/merchant/stores/${SLUG}/catalog`, { method: "PUT", headers: owner, body: {} }), 400, "validation_error");
  });

  test("another merchant's token, or an unknown store, is 404 store_not_found; no token is 401; an operator may write", async () => {
    const body = { products: [{ externalId: "GL-OP-1", title: "Operator Item", price: 1, currency: "USD" }] };
    expectError(await srv.json(`/api/v1/merchant/stores/${SLUG}/catalog`, { method: "PUT", headers: other, body }), 404, "store_not_found");
    expectError(await srv.json(`/api/v1/merchant/stores/nope/catalog`, { method: "PUT", headers: owner, body }), 404, "store_not_found");
    expectError(await srv.json(`/api/v1/merchant/stores/${SLUG}/catalog`, { method: "PUT", body }), 401, "unauthorized");
    expect((await srv.json(`/api/v1/merchant/stores/${SLUG}/catalog`, { method: "PUT", headers: admin, body })).status).toBe(200);
  });
});

describe("merchant ingestion: inventory, orders, policies, shipping zones", () => {
  test("PATCH /inventory sets stock by product and by variant and rejects unknown products per item", async () => {
    const [p] = await srv.db.sql<{ id: string; variants: { id: string }[] }[]>`SELECT id, variants FROM products WHERE store_slug = ${SLUG} AND jsonb_array_length(variants) > 1 ORDER BY external_id LIMIT 1`;
    const v = p!.variants[0]!.id;
    const r = await srv.json(`/api/v1/merchant/stores/${SLUG}/inventory`, {
      method: "PATCH",
      headers: owner,
      body: { items: [{ productId: p!.id, variantId: v, stockQuantity: 0 }, { productId: "00000000-0000-4000-8000-000000000000", stockQuantity: 3 }] },
    });
    expect(r.status).toBe(200);
    expect(r.body.data.updated).toBe(1);
    expect(r.body.data.rejected[0].index).toBe(1);
    const a = await srv.json(`/api/v1/agent/availability/${p!.id}`, { headers: key.headers });
    expect(a.body.data.variants.find((x: any) => x.id === v)).toMatchObject({ stockQuantity: 0, inStock: false });
    expectError(await srv.json(`/api/v1/merchant/stores/${SLUG}/inventory`, { method: "PATCH", headers: owner, body: { items: [] } }), 400, "validation_error");
  });

  test("POST /orders records human orders once per externalId", async () => {
    const order = { externalId: "ORD-1", buyer: "Jane@Example.com", status: "delivered", currency: "USD", items: [{ title: "Planter", quantity: 2, unitPrice: 12.5 }], fulfilledOnTime: true };
    const r = await srv.json(`/api/v1/merchant/stores/${SLUG}/orders`, { method: "POST", headers: owner, body: { orders: [order] } });
    expect(r.status).toBe(201);
    expect(r.body.data.orders[0].duplicate).toBe(false);
    const again = await srv.json(`/api/v1/merchant/stores/${SLUG}/orders`, { method: "POST", headers: owner, body: { orders: [order] } });
    expect(again.body.data.orders[0]).toMatchObject({ duplicate: true, orderId: r.body.data.orders[0].orderId });
    const [row] = await srv.db.sql<{ channel: string; total_minor: number; buyer_ref: string }[]>`SELECT channel, total_minor, buyer_ref FROM orders WHERE id = ${r.body.data.orders[0].orderId}`;
    expect(row).toMatchObject({ channel: "human" });
    expect(Number(row!.total_minor)).toBe(2500);
    expect(row!.buyer_ref).not.toContain("jane");
    // a status outside the enum is that order's rejection, not a 400 for the batch (audit A2 LOW-3)
    const lost = await srv.json(`/api/v1/merchant/stores/${SLUG}/orders`, { method: "POST", headers: owner, body: { orders: [{ ...order, externalId: "ORD-LOST", status: "lost" }] } });
    expect(lost.status).toBe(201);
    expect(lost.body.data).toMatchObject({ accepted: 0, rejected: [{ index: 0, externalId: "ORD-LOST", errors: [{ field: "status" }] }] });
  });

  test("PUT /policies replaces the policies, bumps the version and shows in the agent profile", async () => {
    const r = await srv.json(`/api/v1/merchant/stores/${SLUG}/policies`, {
      method: "PUT",
      headers: owner,
      body: { acceptsReturns: true, returnWindowDays: 45, freeShippingThreshold: 60, restockingFeePercent: 5, shippingEstimateDays: "2-3" },
    });
    expect(r.status).toBe(200);
    expect(r.body.data.policies).toMatchObject({ returnWindowDays: 45, freeShippingThreshold: 60 });
    const m = await srv.json(`/api/v1/agent/merchants/${SLUG}`, { headers: key.headers });
    expect(m.body.data.policies).toMatchObject({ returnWindowDays: 45, freeShippingThreshold: 60, restockingFeePercent: 5 });
    expectError(await srv.json(`/api/v1/merchant/stores/${SLUG}/policies`, { method: "PUT", headers: owner, body: { returnWindowDays: 10 } }), 400, "validation_error");
  });

  test("PUT /shipping-zones replaces the zones the shipping estimate uses; an inverted day range is 400", async () => {
    const r = await srv.json(`/api/v1/merchant/stores/${SLUG}/shipping-zones`, {
      method: "PUT",
      headers: owner,
      body: { zones: [{ name: "France", countries: ["FR"], currency: "USD", base: 15, minDays: 6, maxDays: 9 }, { name: "Paris", countries: ["FR"], postalPrefixes: ["75"], currency: "USD", base: 9, minDays: 3, maxDays: 4 }] },
    });
    expect(r.status).toBe(200);
    const [p] = await srv.db.sql<{ id: string; price_minor: number }[]>`SELECT id, price_minor FROM products WHERE store_slug = ${SLUG} AND active AND price_minor < 6000 ORDER BY external_id LIMIT 1`;
    const e = await srv.json("/api/v1/agent/shipping-estimate", { method: "POST", headers: key.headers, body: { productId: p!.id, postalCode: "75011", countryCode: "FR" } });
    expect(e.body.data).toMatchObject({ shippable: true, zone: "Paris", cost: 9, minDays: 3, maxDays: 4 });
    const us = await srv.json("/api/v1/agent/shipping-estimate", { method: "POST", headers: key.headers, body: { productId: p!.id, postalCode: "94107", countryCode: "US" } });
    expect(us.body.data.shippable).toBe(false);
    expectError(
      await srv.json(`/api/v1/merchant/stores/${SLUG}/shipping-zones`, { method: "PUT", headers: owner, body: { zones: [{ name: "X", countries: ["FR"], currency: "USD", base: 1, minDays: 5, maxDays: 2 }] } }),
      400,
      "validation_error",
    );
  });
});

describe("the indexer", () => {
  test("a trust.score event hides a suspended store from search at once", async () => {
    expect((await search("Kindred Pet Large Orthopedic Dog Bed")).body.data.products.some((p: any) => p.merchant.slug === "cozy-paws-supply")).toBe(true);
    await srv.running.transport.publish("trust.score", { slug: "cozy-paws-supply", trustScore: 0.1, operationalStatus: "suspended", computedAt: new Date().toISOString() });
    await settle();
    expect((await search("Kindred Pet Large Orthopedic Dog Bed")).body.data.products.some((p: any) => p.merchant.slug === "cozy-paws-supply")).toBe(false);
  });

  test("a change whose event was missed is applied by the catch-up", async () => {
    await srv.db.sql`UPDATE products SET title = 'Wombat Walnut Bookend', updated_at = now() WHERE store_slug = 'demo-store' AND external_id = 'DS-0100'`;
    expect((await search("wombat bookend")).body.data.products.length).toBe(0);
    await getIndexer(srv.running.services)!.catchUp();
    expect((await search("wombat bookend")).body.data.products.map((p: any) => p.title)).toEqual(["Wombat Walnut Bookend"]);
  });
});

describe("search settings (operator)", () => {
  test("an operator reads and changes the settings; synonyms apply to the next search", async () => {
    const g = await srv.json("/api/v1/admin/search/settings", { headers: admin });
    expect(g.status).toBe(200);
    expect(g.body.data.settings.rankingWeights).toEqual({ text: 0.55, trust: 0.25, freshness: 0.1, inStock: 0.1 });
    expect((await search("zorblat")).body.data.products.length).toBe(0);
    const p = await srv.json("/api/v1/admin/search/settings", { method: "PUT", headers: admin, body: { synonyms: { zorblat: ["duvet"] } } });
    expect(p.status).toBe(200);
    expect(p.body.data.version).toBeGreaterThanOrEqual(1);
    expect((await search("zorblat")).body.data.products.length).toBeGreaterThan(0);
  });

  test("an invalid patch is 400 and a merchant is 403", async () => {
    expectError(await srv.json("/api/v1/admin/search/settings", { method: "PUT", headers: admin, body: { candidateWindow: 0 } }), 400, "validation_error");
    expectError(await srv.json("/api/v1/admin/search/settings", { headers: owner }), 403, "forbidden");
  });
});
