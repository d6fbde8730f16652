import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { dedupeKey } from "../../search/ranking.ts";
import { createKey, type TestKey } from "../helpers/agents.ts";
import { startServer, type TestServer } from "../helpers/server.ts";

let srv: TestServer;
let key: TestKey;

// fresh-start-studio (seeded without a score) is scored at boot: cold_start 0.41, deprioritized but visible.
const INELIGIBLE = ["unverified-outlet", "lowtrust-bazaar", "suspended-goods"];

beforeAll(async () => {
  srv = await startServer({ seed: true, config: { RATE_LIMITS_ENABLED: false } });
  key = await createKey(srv, { tier: "ENTERPRISE" });
}, 60_000);
afterAll(async () => {
  await srv.stop();
});

const search = (body: unknown, headers: Record<string, string> = key.headers) =>
  srv.json("/api/v1/agent/search", { method: "POST", headers, body: body as Record<string, unknown> });

function expectError(r: { status: number; body: any }, status: number, code: string) {
  expect(r.status).toBe(status);
  expect(r.body.success).toBe(false);
  expect(typeof r.body.error).toBe("string");
  expect(r.body.code).toBe(code);
}

describe("the search envelope", () => {
  test("a search answers 200 with products, integer meta and a queryMeta naming the engine and the time taken", async () => {
    const r = await search({ query: "wireless headphones" });
    expect(r.status).toBe(200);
    expect(r.body.success).toBe(true);
    const { products, meta, queryMeta } = r.body.data;
    expect(products.length).toBeGreaterThan(0);
    for (const k of ["total", "page", "limit", "totalPages"]) expect(Number.isInteger(meta[k])).toBe(true);
    expect(meta).toMatchObject({ page: 1, limit: 20 });
    expect(meta.totalPages).toBe(Math.ceil(meta.total / meta.limit));
    expect(queryMeta.engine).toBe("embedded");
    expect(typeof queryMeta.tookMs).toBe("number");
    expect(queryMeta.filters).toEqual({ inStock: true });
    expect(queryMeta.sort).toBe("relevance");
  });

  test("every ProductSummary carries every required field with the spec's types", async () => {
    const r = await search({ query: "cast iron skillet", filters: { inStock: false } });
    for (const p of r.body.data.products) {
      expect(p.id).toMatch(/^[0-9a-f-]{36}$/);
      expect(typeof p.title).toBe("string");
      expect(typeof p.description).toBe("string");
      expect(typeof p.price).toBe("number");
      expect(p.compareAtPrice === null || typeof p.compareAtPrice === "number").toBe(true);
      expect(p.currency).toMatch(/^[A-Z]{3}$/);
      expect(typeof p.inStock).toBe("boolean");
      expect(p.imageUrl === null || typeof p.imageUrl === "string").toBe(true);
      expect(p.category === null || typeof p.category === "string").toBe(true);
      expect(Object.keys(p.merchant).filter((k) => !k.startsWith("agentCheckout")).sort()).toEqual(["lastSyncAt", "name", "slug", "storeStatus", "trustScore", "verificationLevel"]);
      expect(typeof p.merchant.agentCheckout).toBe("boolean"); // additive (audit A7 LOW-4)
      expect(["UNVERIFIED", "BASIC", "STANDARD", "PREMIUM"]).toContain(p.merchant.verificationLevel);
      expect(["active", "deprioritized"]).toContain(p.merchant.storeStatus);
      expect(typeof p.relevanceScore).toBe("number");
      expect(["fresh", "good", "stale", "very_stale", "unknown"]).toContain(p.freshnessTier);
      expect(["high", "medium", "low"]).toContain(p.stockConfidence);
      expect(["high", "medium", "low"]).toContain(p.priceConfidence);
      expect(p.why_ranked).toContain("text match");
      expect(typeof p.euQualified).toBe("boolean");
    }
  });

  test("a missing key is 401 unauthorized and a key without the search scope is 403 forbidden", async () => {
    expectError(await search({ query: "mat" }, {}), 401, "unauthorized");
    const narrow = await createKey(srv, { scopes: ["cart"] });
    expectError(await search({ query: "mat" }, narrow.headers), 403, "forbidden");
  });
});

describe("SearchRequest bounds", () => {
  test("a missing, empty or 501-character query is 400 and a 500-character query is accepted", async () => {
    expectError(await search({}), 400, "validation_error");
    expectError(await search({ query: "" }), 400, "validation_error");
    expectError(await search({ query: "a".repeat(501) }), 400, "validation_error");
    expect((await search({ query: "a".repeat(500) })).status).toBe(200);
  });

  test("page below 1 or fractional is 400, and page 2 continues where page 1 stopped", async () => {
    expectError(await search({ query: "organic", page: 0 }), 400, "validation_error");
    expectError(await search({ query: "organic", page: 1.5 }), 400, "validation_error");
    const p1 = await search({ query: "organic", limit: 3, filters: { inStock: false } });
    const p2 = await search({ query: "organic", limit: 3, page: 2, filters: { inStock: false } });
    expect(p2.status).toBe(200);
    expect(p2.body.data.meta.page).toBe(2);
    const ids1 = p1.body.data.products.map((p: any) => p.id);
    for (const p of p2.body.data.products) expect(ids1).not.toContain(p.id);
  });

  test("limit below 1 is 400, the default is 20, and anything above 100 is served as 100", async () => {
    expectError(await search({ query: "*", limit: 0 }), 400, "validation_error");
    expectError(await search({ query: "*", limit: 2.5 }), 400, "validation_error");
    expect((await search({ query: "*" })).body.data.meta.limit).toBe(20);
    const big = await search({ query: "*", limit: 500 });
    expect(big.status).toBe(200);
    expect(big.body.data.meta.limit).toBe(100);
    expect(big.body.data.products.length).toBe(100);
    expect(big.body.data.queryMeta).toMatchObject({ limit: 100, requestedLimit: 500 });
    expect((await search({ query: "*", limit: 100 })).body.data.meta.limit).toBe(100);
  });

  test("minTrustScore outside 0..1 is 400 and a valid one keeps only merchants at or above it", async () => {
    expectError(await search({ query: "*", filters: { minTrustScore: -0.1 } }), 400, "validation_error");
    expectError(await search({ query: "*", filters: { minTrustScore: 1.1 } }), 400, "validation_error");
    const r = await search({ query: "*", limit: 100, filters: { minTrustScore: 0.9 } });
    expect(r.body.data.products.length).toBeGreaterThan(0);
    for (const p of r.body.data.products) expect(p.merchant.trustScore).toBeGreaterThanOrEqual(0.9);
  });

  test("verificationLevel outside the enum is 400 and QUALIFIED keeps only registry-checked merchants", async () => {
    expectError(await search({ query: "*", filters: { verificationLevel: "UNVERIFIED" } }), 400, "validation_error");
    expectError(await search({ query: "*", filters: { verificationLevel: "GOLD" } }), 400, "validation_error");
    const r = await search({ query: "*", limit: 100, filters: { verificationLevel: "QUALIFIED", inStock: false } });
    expect(r.body.data.products.length).toBeGreaterThan(0);
    for (const p of r.body.data.products) {
      expect(p.merchant.slug).toBe("qualified-eu-shop");
      expect(p.merchant.verificationLevel).toBe("PREMIUM");
      expect(p.euQualified).toBe(true);
    }
    const premium = await search({ query: "*", limit: 100, filters: { verificationLevel: "PREMIUM", inStock: false } });
    const slugs = new Set<string>(premium.body.data.products.map((p: any) => p.merchant.slug as string));
    for (const s of slugs) expect(["northwind-outfitters", "greenleaf-living", "qualified-eu-shop"]).toContain(s);
  });

  test("a negative price bound or an inverted range is 400", async () => {
    expectError(await search({ query: "*", filters: { minPrice: -1 } }), 400, "validation_error");
    expectError(await search({ query: "*", filters: { maxPrice: -5 } }), 400, "validation_error");
    expectError(await search({ query: "*", filters: { minPrice: 50, maxPrice: 10 } }), 400, "validation_error");
  });

  test("a price range keeps prices inside it, inclusive", async () => {
    const r = await search({ query: "*", limit: 100, filters: { minPrice: 20, maxPrice: 40, inStock: false } });
    expect(r.body.data.products.length).toBeGreaterThan(0);
    for (const p of r.body.data.products) {
      expect(p.price).toBeGreaterThanOrEqual(20);
      expect(p.price).toBeLessThanOrEqual(40);
    }
  });

  test("inStock defaults to true, and false also returns out-of-stock products", async () => {
    const def = await search({ query: "*", limit: 100 });
    for (const p of def.body.data.products) expect(p.inStock).toBe(true);
    let sawOut = false;
    for (let page = 1; page <= 10 && !sawOut; page++) {
      const r = await search({ query: "*", limit: 100, page, filters: { inStock: false } });
      sawOut = r.body.data.products.some((p: any) => !p.inStock);
    }
    expect(sawOut).toBe(true);
    expect((await search({ query: "*", filters: { inStock: false } })).body.data.meta.total).toBeGreaterThan(def.body.data.meta.total);
  });

  test("the category filter ignores case and punctuation", async () => {
    const r = await search({ query: "*", limit: 50, filters: { category: "home kitchen" } });
    expect(r.body.data.products.length).toBeGreaterThan(0);
    for (const p of r.body.data.products) expect(p.category).toBe("Home & Kitchen");
  });

  test("an unknown sort is 400 and each sort orders by its key", async () => {
    expectError(await search({ query: "*", sort: "cheapest" }), 400, "validation_error");
    const asc = (await search({ query: "yoga mat", sort: "price_asc", limit: 50 })).body.data.products.map((p: any) => p.price);
    expect(asc).toEqual([...asc].sort((a, b) => a - b));
    const desc = (await search({ query: "yoga mat", sort: "price_desc", limit: 50 })).body.data.products.map((p: any) => p.price);
    expect(desc).toEqual([...desc].sort((a, b) => b - a));
    const trust = (await search({ query: "*", sort: "trust_score", limit: 100 })).body.data.products.map((p: any) => p.merchant.trustScore);
    expect(trust).toEqual([...trust].sort((a, b) => b - a));
    const newest = await search({ query: "*", sort: "newest", limit: 20 });
    const ids = newest.body.data.products.map((p: any) => p.id);
    const rows = await srv.db.sql<{ id: string; created_at: Date }[]>`SELECT id, created_at FROM products WHERE id = ANY(${ids}::uuid[])`;
    const created = new Map(rows.map((r) => [r.id, new Date(r.created_at).getTime()]));
    const times = ids.map((id: string) => created.get(id)!);
    expect(times).toEqual([...times].sort((a, b) => b - a));
  });
});

describe("eligibility", () => {
  test("products of the UNVERIFIED, low-trust and suspended merchants never appear, on any page", async () => {
    const seen = new Set<string>();
    for (const filters of [{ inStock: false }, { inStock: true }]) {
      for (let page = 1; ; page++) {
        const r = await search({ query: "*", limit: 100, page, filters });
        for (const p of r.body.data.products) seen.add(p.merchant.slug);
        if (page >= r.body.data.meta.totalPages) break;
      }
    }
    for (const q of ["Auralis Pro ANC Wireless Headphones", "Voltiq 65W USB-C GaN Charger", "organic cotton t-shirt", "linen", "toy"]) {
      const r = await search({ query: q, limit: 100, filters: { inStock: false } });
      for (const p of r.body.data.products) seen.add(p.merchant.slug);
    }
    for (const s of INELIGIBLE) expect(seen.has(s)).toBe(false);
    expect(seen.has("demo-store")).toBe(true);
    expect(seen.has("deprioritized-depot")).toBe(true);
  });

  test("the total counts only eligible merchants' products", async () => {
    const r = await search({ query: "*", filters: { inStock: false } });
    const [row] = await srv.db.sql<{ n: number }[]>`SELECT count(*)::int AS n FROM products p JOIN stores s ON s.slug = p.store_slug
      WHERE p.active AND s.verification_level <> 'UNVERIFIED' AND s.trust_score >= 0.3 AND s.operational_status IN ('active', 'deprioritized')`;
    expect(r.body.data.meta.total).toBe(Math.min(row!.n, 1000));
  });
});

describe("ranking", () => {
  test("results come best first and each relevanceScore is the spec's weighted sum", async () => {
    const r = await search({ query: "trail running shoes", limit: 50 });
    const ps = r.body.data.products;
    const scores = ps.map((p: any) => p.relevanceScore);
    expect(scores).toEqual([...scores].sort((a, b) => b - a));
    for (const p of ps) {
      const text = Number(/text match ([\d.]+)/.exec(p.why_ranked)![1]);
      const fresh = { fresh: 1, good: 0.7, stale: 0.3, very_stale: 0, unknown: 0 }[p.freshnessTier as string]!;
      let expected = text * 0.55 + p.merchant.trustScore * 0.25 + fresh * 0.1 + (p.inStock ? 0.1 : 0);
      if (p.merchant.storeStatus === "deprioritized") expected *= 0.8;
      expect(Math.abs(p.relevanceScore - expected)).toBeLessThan(0.006); // text is shown rounded to 2 decimals
    }
  });

  test("a deprioritized store's copy of an item ranks below an active store's copy and says why", async () => {
    const r = await search({ query: "Voltiq GaN Charger 65W USB-C", limit: 50, filters: { inStock: false } });
    const ps = r.body.data.products;
    const depot = ps.findIndex((p: any) => p.merchant.slug === "deprioritized-depot");
    const demo = ps.findIndex((p: any) => p.merchant.slug === "demo-store");
    expect(depot).toBeGreaterThan(-1);
    expect(demo).toBeGreaterThan(-1);
    expect(demo).toBeLessThan(depot);
    expect(ps[depot].merchant.storeStatus).toBe("deprioritized");
    expect(ps[depot].why_ranked).toContain("deprioritized store ×0.80");
  });

  test("an exact title match outranks a description-only match", async () => {
    const r = await search({ query: "Kindred Pet Orthopedic Dog Bed", limit: 5, filters: { inStock: false } });
    expect(r.body.data.products[0].title.toLowerCase()).toContain("orthopedic dog bed");
  });
});

describe("deduplicate", () => {
  test("deduplicate true collapses the same item sold by several merchants and keeps the best-scoring copy", async () => {
    const q = { query: "Voltiq GaN Charger 65W USB-C", limit: 50, filters: { inStock: false } };
    const plain = (await search(q)).body.data;
    const dedup = (await search({ ...q, deduplicate: true })).body.data;
    expect(dedup.queryMeta.deduplicate).toBe(true);
    expect(dedup.meta.total).toBeLessThan(plain.meta.total);
    const keys = dedup.products.map((p: any) => dedupeKey(p.title));
    expect(new Set(keys).size).toBe(keys.length);
    const pair = plain.products.filter((p: any) => dedupeKey(p.title) === dedupeKey("Voltiq 65W USB-C GaN Charger"));
    expect(pair.map((p: any) => p.merchant.slug).sort()).toEqual(["demo-store", "deprioritized-depot"]);
    const kept = dedup.products.filter((p: any) => dedupeKey(p.title) === dedupeKey("Voltiq 65W USB-C GaN Charger"));
    expect(kept.map((p: any) => p.merchant.slug)).toEqual(["demo-store"]);
  });

  test("deduplicate is read from the raw body: a non-boolean value is not a validation error and does not dedupe", async () => {
    const r = await search({ query: "Ridgeback Cork Yoga Mat 6mm", deduplicate: "please", filters: { inStock: false } });
    expect(r.status).toBe(200);
    expect(r.body.data.queryMeta.deduplicate).toBe(false);
    const slugs = r.body.data.products.filter((p: any) => dedupeKey(p.title) === dedupeKey("Ridgeback Cork Yoga Mat 6mm")).map((p: any) => p.merchant.slug);
    expect(slugs.length).toBeGreaterThanOrEqual(2);
    const d = await search({ query: "Ridgeback Cork Yoga Mat 6mm", deduplicate: true, filters: { inStock: false } });
    expect(d.body.data.products.filter((p: any) => dedupeKey(p.title) === dedupeKey("Ridgeback Cork Yoga Mat 6mm")).length).toBe(1);
  });
});
