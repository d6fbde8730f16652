import { describe, expect, test } from "bun:test";
import type { Candidate } from "../../search/engine.ts";
import {
  dedupeKey,
  engineQueryFromRequest,
  freshnessTier,
  freshnessValue,
  isStoreEligible,
  normalizeRequest,
  priceConfidence,
  rankProducts,
  stockConfidence,
  toProductSummary,
  type RankableProduct,
  type RankRequest,
  type StoreSnapshot,
} from "../../search/ranking.ts";
import { resolveSearchSettings } from "../../search/settings.ts";

const NOW = new Date("2025-06-01T12:00:00.000Z");
const hoursAgo = (h: number) => new Date(NOW.getTime() - h * 3_600_000).toISOString();

function store(slug: string, over: Partial<StoreSnapshot> = {}): StoreSnapshot {
  return {
    slug,
    name: slug.toUpperCase(),
    trustScore: 0.8,
    verificationLevel: "STANDARD",
    storeStatus: "active",
    lastSyncAt: hoursAgo(2),
    euQualified: false,
    priceAccuracy: 0.99,
    availabilityAccuracy: 0.99,
    ...over,
  };
}

const STORES: StoreSnapshot[] = [
  store("acme", { trustScore: 0.9, euQualified: true }),
  store("bolt", { trustScore: 0.6, verificationLevel: "BASIC", lastSyncAt: hoursAgo(30) }),
  store("depr", { trustScore: 0.4, verificationLevel: "PREMIUM", storeStatus: "deprioritized" }),
  store("peer", { trustScore: 0.4, verificationLevel: "PREMIUM" }),
  store("qual", { trustScore: 0.8, verificationLevel: "QUALIFIED", lastSyncAt: hoursAgo(10) }),
  store("edge", { trustScore: 0.3, verificationLevel: "BASIC", lastSyncAt: null }),
  store("unver", { trustScore: 0.95, verificationLevel: "UNVERIFIED" }),
  store("low", { trustScore: 0.29, verificationLevel: "BASIC" }),
  store("nulltrust", { trustScore: null }),
  store("susp", { trustScore: 0.9, storeStatus: "suspended" }),
  store("hid", { trustScore: 0.9, storeStatus: "hidden" }),
];
const STORE_MAP = new Map(STORES.map((s) => [s.slug, s]));

let seq = 0;
function product(storeSlug: string, over: Partial<RankableProduct> = {}): RankableProduct {
  seq++;
  return {
    id: `00000000-0000-4000-8000-${seq.toString(16).padStart(12, "0")}`,
    storeSlug,
    title: `Product ${seq}`,
    description: "",
    priceMinor: 1000,
    compareAtPriceMinor: null,
    currency: "EUR",
    inStock: true,
    imageUrl: null,
    category: null,
    createdAt: "2025-01-01T00:00:00.000Z",
    ...over,
  };
}

function rank(products: RankableProduct[], candidates: Candidate[], request: RankRequest = {}, settings = resolveSearchSettings()) {
  return rankProducts({ candidates, products: new Map(products.map((p) => [p.id, p])), stores: STORE_MAP, request, now: NOW, settings });
}
const all = (ps: RankableProduct[], textScore = 0.5): Candidate[] => ps.map((p) => ({ id: p.id, textScore }));

describe("the ranking score", () => {
  test("the score recomputes as text×0.55 + trust×0.25 + freshness×0.10 + inStock×0.10", () => {
    const p = product("acme");
    const [item] = rank([p], [{ id: p.id, textScore: 0.82 }]).items;
    const expected = 0.82 * 0.55 + 0.9 * 0.25 + 1 * 0.1 + 1 * 0.1;
    expect(item.score.final).toBeCloseTo(expected, 10);
    expect(item.relevanceScore).toBe(0.876);
    expect(item.why_ranked).toBe("text match 0.82×0.55=0.45; trust 0.90×0.25=0.23; fresh (synced 2 h ago) +0.10; in stock +0.10; score 0.876");
  });

  test("a stale sync, an out-of-stock product and the weights from settings all enter the formula", () => {
    const p = product("bolt", { inStock: false });
    const settings = resolveSearchSettings({ rankingWeights: { text: 0.4, trust: 0.3, freshness: 0.2, inStock: 0.1 } });
    const [item] = rank([p], [{ id: p.id, textScore: 0.5 }], { filters: { inStock: false } }, settings).items;
    expect(item.freshnessTier).toBe("stale");
    expect(item.score.final).toBeCloseTo(0.5 * 0.4 + 0.6 * 0.3 + 0.3 * 0.2 + 0, 10);
    expect(item.why_ranked).toContain("stale (synced 30 h ago) +0.06");
    expect(item.why_ranked).toContain("out of stock +0.00");
  });

  test("an unknown sync time contributes nothing and says so", () => {
    const p = product("edge");
    const [item] = rank([p], [{ id: p.id, textScore: 1 }]).items;
    expect(item.freshnessTier).toBe("unknown");
    expect(item.score.final).toBeCloseTo(0.55 + 0.3 * 0.25 + 0 + 0.1, 10);
    expect(item.why_ranked).toContain("sync time unknown +0.00");
  });

  test("relevance order follows the score, and a better text match can beat a more trusted store", () => {
    const a = product("acme");
    const q = product("qual");
    const b = product("bolt");
    const res = rank([a, q, b], [
      { id: a.id, textScore: 0.3 },
      { id: q.id, textScore: 0.9 },
      { id: b.id, textScore: 0.6 },
    ]);
    // acme 0.165+0.225+0.2=0.59; qual 0.495+0.2+0.07+0.1=0.865; bolt 0.33+0.15+0.03+0.1=0.61
    expect(res.items.map((i) => i.id)).toEqual([q.id, b.id, a.id]);
    expect(res.items.map((i) => i.relevanceScore)).toEqual([0.865, 0.61, 0.59]);
  });

  test("a deprioritized store stays visible but ranks below an equal active store, by the documented penalty", () => {
    const d = product("depr");
    const p = product("peer");
    const res = rank([d, p], all([d, p], 0.82));
    expect(res.items.map((i) => i.id)).toEqual([p.id, d.id]);
    const base = 0.82 * 0.55 + 0.4 * 0.25 + 0.1 + 0.1;
    expect(res.items[0].score.final).toBeCloseTo(base, 10);
    expect(res.items[1].score.final).toBeCloseTo(base * 0.8, 10);
    expect(res.items[1].merchant.storeStatus).toBe("deprioritized");
    expect(res.items[1].why_ranked).toContain("deprioritized store ×0.80");
  });

  test("a duplicated candidate counts once with its best text score and unknown ids are dropped", () => {
    const p = product("acme");
    const res = rank([p], [
      { id: p.id, textScore: 0.2 },
      { id: p.id, textScore: 0.7 },
      { id: "00000000-0000-4000-8000-ffffffffffff", textScore: 1 },
    ]);
    expect(res.total).toBe(1);
    expect(res.items[0].score.text).toBe(0.7);
  });

  test("a product whose store has no snapshot is dropped", () => {
    const p = product("nowhere");
    expect(rank([p], all([p])).total).toBe(0);
  });
});

describe("eligibility", () => {
  test("an UNVERIFIED store is not eligible even with a high trust score", () => {
    expect(isStoreEligible(STORE_MAP.get("unver")!)).toBe(false);
  });

  test("trust 0.29 is not eligible and trust 0.3 is", () => {
    expect(isStoreEligible(STORE_MAP.get("low")!)).toBe(false);
    expect(isStoreEligible(STORE_MAP.get("edge")!)).toBe(true);
  });

  test("a store without a trust score is not eligible", () => {
    expect(isStoreEligible(STORE_MAP.get("nulltrust")!)).toBe(false);
  });

  test("suspended and hidden stores are not eligible, deprioritized ones are", () => {
    expect(isStoreEligible(STORE_MAP.get("susp")!)).toBe(false);
    expect(isStoreEligible(STORE_MAP.get("hid")!)).toBe(false);
    expect(isStoreEligible(STORE_MAP.get("depr")!)).toBe(true);
  });

  test("QUALIFIED and BASIC stores are eligible", () => {
    expect(isStoreEligible(STORE_MAP.get("qual")!)).toBe(true);
    expect(isStoreEligible(store("b", { verificationLevel: "BASIC" }))).toBe(true);
  });

  test("search returns products of eligible stores only", () => {
    const ps = STORES.map((s) => product(s.slug));
    const res = rank(ps, all(ps), { limit: 100 });
    expect(res.items.map((i) => i.merchant.slug).sort()).toEqual(["acme", "bolt", "depr", "edge", "peer", "qual"]);
  });

  test("the engine query allow-lists only eligible stores that pass the store filters", () => {
    const q = engineQueryFromRequest("shoes", { filters: { minTrustScore: 0.5, verificationLevel: "STANDARD" } }, STORES);
    expect(q.storeSlugs).toEqual(["acme", "qual"]);
    expect(q.window).toBe(1000);
    expect(q.inStock).toBe(true);
  });
});

describe("request filters", () => {
  test("price bounds are decimal amounts in the product's currency, inclusive", () => {
    const a = product("acme", { priceMinor: 1999 });
    const b = product("acme", { priceMinor: 2000 });
    const y = product("acme", { priceMinor: 2000, currency: "JPY" });
    const res = rank([a, b, y], all([a, b, y]), { filters: { minPrice: 19.99, maxPrice: 19.99 } });
    expect(res.items.map((i) => i.id)).toEqual([a.id]);
    const yen = rank([a, b, y], all([a, b, y]), { filters: { minPrice: 2000, maxPrice: 2000 } });
    expect(yen.items.map((i) => i.id)).toEqual([y.id]);
  });

  test("the pushed-down price range is exact for one exponent and widened across exponents", () => {
    expect(engineQueryFromRequest("x", { filters: { minPrice: 19.99, maxPrice: 50 } }, STORES)).toMatchObject({ minPriceMinor: 1999, maxPriceMinor: 5000 });
    expect(engineQueryFromRequest("x", { filters: { minPrice: 10, maxPrice: 50 } }, STORES, undefined, ["EUR", "JPY", "KWD"])).toMatchObject({
      minPriceMinor: 10,
      maxPriceMinor: 50_000,
    });
  });

  test("inStock defaults to true, and false lets out-of-stock products in below in-stock ones", () => {
    const inS = product("acme");
    const out = product("acme", { inStock: false });
    expect(rank([inS, out], all([inS, out])).items.map((i) => i.id)).toEqual([inS.id]);
    const both = rank([inS, out], all([inS, out]), { filters: { inStock: false } });
    expect(both.items.map((i) => i.id)).toEqual([inS.id, out.id]);
    expect(engineQueryFromRequest("x", { filters: { inStock: false } }, STORES).inStock).toBeUndefined();
  });

  test("category matches case-insensitively", () => {
    const a = product("acme", { category: "Home & Kitchen" });
    const b = product("acme", { category: "Garden" });
    expect(rank([a, b], all([a, b]), { filters: { category: "home & kitchen" } }).items.map((i) => i.id)).toEqual([a.id]);
  });

  test("minTrustScore and verificationLevel keep only stores at or above them", () => {
    const ps = STORES.map((s) => product(s.slug));
    const trust = rank(ps, all(ps), { filters: { minTrustScore: 0.8 } });
    expect(trust.items.map((i) => i.merchant.slug).sort()).toEqual(["acme", "qual"]);
    const level = rank(ps, all(ps), { filters: { verificationLevel: "PREMIUM" } });
    expect(level.items.map((i) => i.merchant.slug).sort()).toEqual(["depr", "peer", "qual"]);
    const qualified = rank(ps, all(ps), { filters: { verificationLevel: "QUALIFIED" } });
    expect(qualified.items.map((i) => i.merchant.slug)).toEqual(["qual"]);
  });
});

describe("sorting", () => {
  const cheap = product("bolt", { priceMinor: 500, createdAt: "2025-03-01T00:00:00Z" });
  const mid = product("acme", { priceMinor: 1500, createdAt: "2025-05-01T00:00:00Z" });
  const dear = product("qual", { priceMinor: 9900, createdAt: "2025-01-01T00:00:00Z" });
  const yen = product("acme", { priceMinor: 1200, currency: "JPY", createdAt: "2024-01-01T00:00:00Z" }); // 1200 in major units
  const ps = [cheap, mid, dear, yen];
  const cands: Candidate[] = [
    { id: cheap.id, textScore: 0.9 },
    { id: mid.id, textScore: 0.1 },
    { id: dear.id, textScore: 0.5 },
    { id: yen.id, textScore: 0.2 },
  ];
  const order = (sort: RankRequest["sort"]) => rank(ps, cands, { sort }).items.map((i) => i.id);

  test("relevance is the default sort", () => {
    // cheap 0.495+0.15+0.03+0.1=0.775; dear 0.275+0.2+0.07+0.1=0.645; yen 0.11+0.225+0.2=0.535; mid 0.055+0.425=0.48
    expect(order(undefined)).toEqual([cheap.id, dear.id, yen.id, mid.id]);
    expect(order("relevance")).toEqual([cheap.id, dear.id, yen.id, mid.id]);
  });

  test("price_asc and price_desc order by the decimal price", () => {
    expect(order("price_asc")).toEqual([cheap.id, mid.id, dear.id, yen.id]);
    expect(order("price_desc")).toEqual([yen.id, dear.id, mid.id, cheap.id]);
  });

  test("trust_score orders by store trust and breaks ties by relevance", () => {
    // acme 0.9 (yen 0.535 > mid 0.48), qual 0.8, bolt 0.6
    expect(order("trust_score")).toEqual([yen.id, mid.id, dear.id, cheap.id]);
  });

  test("newest orders by creation date, latest first", () => {
    expect(order("newest")).toEqual([mid.id, cheap.id, dear.id, yen.id]);
  });

  test("equal prices fall back to relevance so pages are stable", () => {
    const a = product("acme", { priceMinor: 700 });
    const b = product("acme", { priceMinor: 700 });
    const res = rank([a, b], [{ id: a.id, textScore: 0.1 }, { id: b.id, textScore: 0.9 }], { sort: "price_asc" });
    expect(res.items.map((i) => i.id)).toEqual([b.id, a.id]);
  });
});

describe("paging", () => {
  const many = Array.from({ length: 250 }, (_, i) => product("acme", { title: `Item ${i}` }));
  const cands = many.map((p, i) => ({ id: p.id, textScore: 1 - i / 1000 }));

  test("limit defaults to 20 and page to 1", () => {
    const res = rank(many, cands);
    expect(res).toMatchObject({ total: 250, page: 1, limit: 20, totalPages: 13 });
    expect(res.items).toHaveLength(20);
    expect(res.items[0].id).toBe(many[0].id);
  });

  test("the effective limit is capped at 100 whatever is sent", () => {
    const res = rank(many, cands, { limit: 500 });
    expect(res.limit).toBe(100);
    expect(res.items).toHaveLength(100);
    expect(res.totalPages).toBe(3);
    expect(normalizeRequest({ limit: 0, page: -3 })).toMatchObject({ limit: 1, page: 1 });
  });

  test("pages follow each other without overlap and the last page is partial", () => {
    const p2 = rank(many, cands, { limit: 100, page: 2 });
    expect(p2.items[0].id).toBe(many[100].id);
    const p3 = rank(many, cands, { limit: 100, page: 3 });
    expect(p3.items).toHaveLength(50);
    expect(p3.items.at(-1)!.id).toBe(many[249].id);
    const p4 = rank(many, cands, { limit: 100, page: 4 });
    expect(p4.items).toEqual([]);
    expect(p4.total).toBe(250);
  });

  test("no results give zero pages", () => {
    expect(rank([], [])).toMatchObject({ items: [], total: 0, totalPages: 0 });
  });
});

describe("dedupe", () => {
  test("near-duplicate titles normalise to the same key regardless of case, punctuation, stop words and word order", () => {
    const k = dedupeKey("Apple iPhone 15 Pro, 128GB");
    expect(dedupeKey("iphone 15 PRO 128gb apple")).toBe(k);
    expect(dedupeKey("The Apple iPhone 15 Pro (128GB)!")).toBe(k);
    expect(dedupeKey("Apple iPhone 15 Pro 256GB")).not.toBe(k);
  });

  test("deduplicate keeps only the highest-scoring product of each near-duplicate group", () => {
    const a = product("acme", { title: "Apple iPhone 15 Pro, 128GB" });
    const b = product("bolt", { title: "iphone 15 pro 128gb apple" });
    const c = product("qual", { title: "The Apple iPhone 15 Pro (128GB)!" });
    const other = product("bolt", { title: "Apple iPhone 15 Pro 256GB" });
    const cands: Candidate[] = [
      { id: a.id, textScore: 0.5 },
      { id: b.id, textScore: 0.95 },
      { id: c.id, textScore: 0.6 },
      { id: other.id, textScore: 0.4 },
    ];
    // a 0.275+0.225+0.2=0.7; b 0.5225+0.15+0.03+0.1=0.8025; c 0.33+0.2+0.07+0.1=0.7
    const deduped = rank([a, b, c, other], cands, { deduplicate: true });
    expect(deduped.items.map((i) => i.id)).toEqual([b.id, other.id]);
    expect(deduped.total).toBe(2);
    expect(rank([a, b, c, other], cands).total).toBe(4);
  });
});

describe("freshness tiers and confidences", () => {
  test("freshness tier boundaries sit at 6, 24 and 72 hours", () => {
    expect(freshnessTier(hoursAgo(0), NOW)).toBe("fresh");
    expect(freshnessTier(hoursAgo(5.99), NOW)).toBe("fresh");
    expect(freshnessTier(hoursAgo(6), NOW)).toBe("good");
    expect(freshnessTier(hoursAgo(23.99), NOW)).toBe("good");
    expect(freshnessTier(hoursAgo(24), NOW)).toBe("stale");
    expect(freshnessTier(hoursAgo(71.99), NOW)).toBe("stale");
    expect(freshnessTier(hoursAgo(72), NOW)).toBe("very_stale");
    expect(freshnessTier(hoursAgo(24 * 365), NOW)).toBe("very_stale");
  });

  test("a missing or unreadable sync time is unknown and a future one counts as fresh", () => {
    expect(freshnessTier(null, NOW)).toBe("unknown");
    expect(freshnessTier("not a date", NOW)).toBe("unknown");
    expect(freshnessTier(hoursAgo(-3), NOW)).toBe("fresh");
  });

  test("tier values are 1, 0.7, 0.3, 0 and 0", () => {
    expect(["fresh", "good", "stale", "very_stale", "unknown"].map((t) => freshnessValue(t as never))).toEqual([1, 0.7, 0.3, 0, 0]);
  });

  test("stock confidence is high only for a fresh sync with accurate availability", () => {
    expect(stockConfidence({ lastSyncAt: hoursAgo(1), availabilityAccuracy: 0.97 }, NOW)).toBe("high");
    expect(stockConfidence({ lastSyncAt: hoursAgo(1) }, NOW)).toBe("medium");
    expect(stockConfidence({ lastSyncAt: hoursAgo(1), availabilityAccuracy: 0.9 }, NOW)).toBe("medium");
    expect(stockConfidence({ lastSyncAt: hoursAgo(1), availabilityAccuracy: 0.7 }, NOW)).toBe("low");
    expect(stockConfidence({ lastSyncAt: hoursAgo(12), availabilityAccuracy: 0.99 }, NOW)).toBe("medium");
    expect(stockConfidence({ lastSyncAt: hoursAgo(30), availabilityAccuracy: 0.99 }, NOW)).toBe("low");
    expect(stockConfidence({ lastSyncAt: null, availabilityAccuracy: 0.99 }, NOW)).toBe("low");
  });

  test("price confidence stays high for a day and drops to medium when stale", () => {
    expect(priceConfidence({ lastSyncAt: hoursAgo(12), priceAccuracy: 0.99 }, NOW)).toBe("high");
    expect(priceConfidence({ lastSyncAt: hoursAgo(30), priceAccuracy: 0.99 }, NOW)).toBe("medium");
    expect(priceConfidence({ lastSyncAt: hoursAgo(100), priceAccuracy: 0.99 }, NOW)).toBe("low");
    expect(priceConfidence({ lastSyncAt: hoursAgo(1), priceAccuracy: 0.5 }, NOW)).toBe("low");
    expect(priceConfidence({ lastSyncAt: hoursAgo(1), priceAccuracy: null }, NOW)).toBe("medium");
  });

  test("ranked items carry the tier, both confidences and euQualified from their store", () => {
    const p = product("acme", { priceMinor: 1999, compareAtPriceMinor: 2499 });
    const [item] = rank([p], all([p])).items;
    expect(item).toMatchObject({ freshnessTier: "fresh", stockConfidence: "high", priceConfidence: "high", euQualified: true });
    const summary = toProductSummary(item);
    expect(summary).toMatchObject({ price: 19.99, compareAtPrice: 24.99, merchant: { slug: "acme", name: "ACME", storeStatus: "active" } });
    expect("score" in summary).toBe(false);
  });
});

describe("page items built from per-store parts", () => {
  test("why_ranked, tier and confidences follow the clock back and forth, and a settings change re-formats them", () => {
    const p = product("acme");
    const s = resolveSearchSettings();
    const at = (hours: number, settings = s) => {
      const now = new Date(NOW.getTime() + hours * 3_600_000);
      const [item] = rankProducts({ candidates: all([p], 0.82), products: new Map([[p.id, p]]), stores: STORE_MAP, request: {}, now, settings }).items;
      return { why: item!.why_ranked, tier: item!.freshnessTier, stock: item!.stockConfidence, price: item!.priceConfidence };
    };
    // acme synced 2 h before NOW
    const fresh = { why: "text match 0.82×0.55=0.45; trust 0.90×0.25=0.23; fresh (synced 2 h ago) +0.10; in stock +0.10; score 0.876", tier: "fresh", stock: "high", price: "high" } as const;
    expect(at(0)).toEqual(fresh);
    expect(at(5)).toEqual({ why: "text match 0.82×0.55=0.45; trust 0.90×0.25=0.23; good (synced 7 h ago) +0.07; in stock +0.10; score 0.846", tier: "good", stock: "medium", price: "high" } as const);
    expect(at(0)).toEqual(fresh);
    expect(at(30).why).toContain("stale (synced 32 h ago) +0.03");
    expect(at(30).price).toBe("medium");
    const heavier = resolveSearchSettings({ rankingWeights: { text: 0.65, trust: 0.15, freshness: 0.1, inStock: 0.1 } });
    expect(at(0, heavier).why).toBe("text match 0.82×0.65=0.53; trust 0.90×0.15=0.14; fresh (synced 2 h ago) +0.10; in stock +0.10; score 0.868");
    expect(at(0)).toEqual(fresh);
  });

  test("items of one store share the store's parts but keep their own text, stock and score", () => {
    const a = product("depr", { inStock: false });
    const b = product("depr");
    const res = rankProducts({ candidates: [{ id: a.id, textScore: 0.5 }, { id: b.id, textScore: 0.9 }], products: new Map([a, b].map((x) => [x.id, x])), stores: STORE_MAP, request: { filters: { inStock: false } }, now: NOW });
    expect(res.items.map((i) => i.why_ranked)).toEqual([
      "text match 0.90×0.55=0.50; trust 0.40×0.25=0.10; fresh (synced 2 h ago) +0.10; in stock +0.10; deprioritized store ×0.80; score 0.636; agent checkout refused: trust 0.40 below 0.70",
      "text match 0.50×0.55=0.28; trust 0.40×0.25=0.10; fresh (synced 2 h ago) +0.10; out of stock +0.00; deprioritized store ×0.80; score 0.380; agent checkout refused: trust 0.40 below 0.70",
    ]);
    expect(res.items[0]!.merchant).toEqual({
      slug: "depr", name: "DEPR", trustScore: 0.4, verificationLevel: "PREMIUM", storeStatus: "deprioritized", lastSyncAt: hoursAgo(2),
      agentCheckout: false, agentCheckoutReason: "trust_below_agent_threshold",
    });
  });
});
