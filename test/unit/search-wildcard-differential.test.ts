/**
 * A wildcard search (`"*"`) answers as ranking every match would, whatever the catalog, the stores and the request:
 * a randomized differential test of the search service's wildcard paths (the store prefix of `rankWildcard` under
 * relevance and trust_score, the ordered walk of `rankWildcardByProduct` under price and newest, the engine's
 * per-store walk, RankInput.cap with keepFirst's cut under every sort) against
 * rankProducts' record path over every product of the allowed stores (no columns, no engine window, a plain store map:
 * none of the code under test). Between searches the catalog and the stores churn (products move stores, go out of
 * stock, are removed and come back; stores change trust, status and sync time, disappear, appear without products),
 * and the clock moves across freshness tier boundaries.
 */
import { describe, expect, test } from "bun:test";
import { createEmbeddedEngine } from "../../search/embedded.ts";
import type { Candidate } from "../../search/engine.ts";
import { allowedStoreSlugs, rankProducts, toProductSummary, type RankRequest, type StoreSnapshot } from "../../search/ranking.ts";
import { resolveSearchSettings, type SearchSettings } from "../../search/settings.ts";
import { SearchService, type ProductLoadRow, type SearchQuery } from "../../search/service.ts";
import { mulberry32 } from "../../infra/seed/prng.ts";

/** mulberry32 (infra/seed/prng.ts): a small seeded generator, so a failure names the seed that reproduces it. */
const rng = mulberry32;

const HOUR = 3_600_000;
const uuid = (n: number) => `00000000-0000-4000-8000-${n.toString(16).padStart(12, "0")}`;
const CATEGORIES = ["Lamps", "Chairs", "Rugs", "Mugs", "lamps"];
const CURRENCIES = ["EUR", "EUR", "EUR", "JPY", "KWD"];
const TITLES = ["Oak lamp", "Lamp oak", "Linen rug", "Blue mug", "The blue mug", "Chair", "Desk chair"];

interface World {
  r: () => number;
  pick: <T>(xs: readonly T[]) => T;
  svc: SearchService;
  now: Date;
  slugs: string[];
  nextId: number;
  /** Product id → its store, for the churn. */
  live: Map<string, string>;
  /** How many stores the engine's last window query allowed (the search's last call: the one it answered from). */
  lastScope: number | null;
}

function storeOf(w: World, slug: string): StoreSnapshot {
  const { r, pick } = w;
  // trusts on a coarse grid (ties between stores) or sums that are not exact in binary (0.1 + 0.2)
  // (with the default weights, 0.9 fresh out of stock scores as 0.9 very stale in stock: ties across stores' bounds)
  const trust = r() < 0.6 ? pick([0.3, 0.35, 0.5, 0.6, 0.7, 0.8, 0.9, 1, 1.2]) : r() < 0.5 ? 0.1 * Math.floor(r() * 4) + 0.2 + 0.1 : 0.3 + r() * 0.7;
  // sync ages at and around the freshness tiers' edges (6 h, 24 h, 72 h), unknown, in the future
  const edge = pick([6, 24, 72, 1, 100]) * HOUR + pick([-2, -1, 0, 1, 2, -60_000, 60_000]);
  const lastSyncAt = r() < 0.1 ? null : new Date(w.now.getTime() - (r() < 0.05 ? -HOUR : edge)).toISOString();
  return {
    slug,
    name: slug,
    trustScore: r() < 0.05 ? null : trust,
    verificationLevel: pick(["UNVERIFIED", "BASIC", "STANDARD", "PREMIUM", "QUALIFIED"] as const),
    storeStatus: pick(["active", "active", "active", "deprioritized", "deprioritized", "hidden", "suspended"] as const),
    lastSyncAt,
    euQualified: false,
  };
}

function productRow(w: World, id: string, slug: string): ProductLoadRow {
  const { r, pick } = w;
  const created = new Date(w.now.getTime() - Math.floor(r() * 50) * HOUR); // repeated creation times (ties)
  const price = pick([0, 100, 250, 999, 1000, 1999, 5000]) + (r() < 0.3 ? Math.floor(r() * 3000) : 0);
  const variants = r() < 0.2 ? Array.from({ length: 1 + Math.floor(r() * 3) }, () => pick([50, 100, 1200, 3000, price])) : null;
  return {
    id,
    store_slug: slug,
    title: pick(TITLES),
    description: "",
    brand: null,
    category: r() < 0.1 ? null : pick(CATEGORIES),
    tags: [],
    price_minor: price,
    compare_at_price_minor: null,
    currency: pick(CURRENCIES),
    in_stock: r() < 0.7,
    variant_prices: variants,
    images: [],
    active: true,
    created_at: created,
    updated_at: created,
  };
}

function settingsOf(w: World): SearchSettings {
  const { r, pick } = w;
  return resolveSearchSettings({
    candidateWindow: pick([1, 2, 3, 5, 10, 25, 60, 200, 10_000]),
    deprioritizedPenalty: pick([0.2, 0.2, 0, 0.5, 1]),
    rankingWeights: r() < 0.6 ? { text: 0.55, trust: 0.25, freshness: 0.1, inStock: 0.1 } : { text: r(), trust: pick([0, r()]), freshness: pick([0, r()]), inStock: pick([0, 0.1, r()]) },
  });
}

async function build(seed: number): Promise<World> {
  const r = rng(seed);
  const pick = <T>(xs: readonly T[]): T => xs[Math.floor(r() * xs.length)]!;
  const engine = createEmbeddedEngine();
  const w: World = { r, pick, svc: undefined as unknown as SearchService, now: new Date("2026-03-01T12:00:00.000Z"), slugs: [], nextId: 1, live: new Map(), lastScope: null };
  const queryWindow = engine.queryWindow!.bind(engine);
  engine.queryWindow = (q) => {
    w.lastScope = q.storeSlugs?.length ?? null;
    return queryWindow(q);
  };
  const svc = (w.svc = new SearchService(engine));
  // the price and newest orders rebuilt whenever the churn made them stale, so those sorts take the ordered walk
  // (rankWildcardByProduct) after every change instead of the full pass for the default 5 s
  svc.productOrderRebuildMs = 0;
  svc.settings = settingsOf(w);
  await svc.engine.applySettings(svc.settings);
  const nStores = 2 + Math.floor(r() * 30);
  for (let i = 0; i < nStores; i++) {
    const slug = `s${String(i).padStart(2, "0")}`;
    w.slugs.push(slug);
    if (r() < 0.9) svc.stores.set(slug, storeOf(w, slug)); // some products' store has no snapshot
  }
  const rows: ProductLoadRow[] = [];
  for (const slug of w.slugs) {
    const n = r() < 0.15 ? 0 : Math.floor(r() * 25); // stores without products
    for (let j = 0; j < n; j++) {
      const id = uuid(w.nextId++);
      w.live.set(id, slug);
      rows.push(productRow(w, id, slug));
    }
  }
  await svc.applyRows(rows);
  // sometimes many more stores than the catalog holds (rankWildcard then orders the catalog's stores only)
  if (r() < 0.3) {
    for (let i = 0, n = 20 + Math.floor(r() * 60); i < n; i++) {
      const slug = `z${String(i).padStart(2, "0")}`;
      w.slugs.push(slug);
      svc.stores.set(slug, storeOf(w, slug));
    }
  }
  return w;
}

/** One random change to the catalog, the stores, the settings or the clock. */
async function churn(w: World): Promise<void> {
  const { r, pick, svc } = w;
  const ids = [...w.live.keys()];
  const k = r();
  if (k < 0.2 && ids.length > 0) {
    // a product re-read: same id, maybe another store, other fields
    const id = pick(ids);
    const slug = r() < 0.5 ? pick(w.slugs) : w.live.get(id)!;
    w.live.set(id, slug);
    await svc.applyRows([productRow(w, id, slug)]);
  } else if (k < 0.3 && ids.length > 0) {
    const id = pick(ids);
    w.live.delete(id);
    await svc.applyRows([{ ...productRow(w, id, "x"), active: false }]);
  } else if (k < 0.4) {
    const slug = r() < 0.2 ? `n${w.slugs.length}` : pick(w.slugs);
    if (!w.slugs.includes(slug)) w.slugs.push(slug);
    const id = uuid(w.nextId++);
    w.live.set(id, slug);
    await svc.applyRows([productRow(w, id, slug)]);
  } else if (k < 0.5 && ids.length > 0) {
    const id = pick(ids);
    await svc.applyStockRows([{ id, active: true, in_stock: r() < 0.5, stock_quantity: null, reserved_quantity: 0 }]);
  } else if (k < 0.65) {
    const slug = r() < 0.2 ? `e${w.slugs.length}` : pick(w.slugs); // a new store with no product yet
    if (!w.slugs.includes(slug)) w.slugs.push(slug);
    svc.stores.set(slug, storeOf(w, slug));
  } else if (k < 0.7) {
    svc.stores.delete(pick(w.slugs));
  } else if (k < 0.75) {
    svc.settings = settingsOf(w);
    await svc.engine.applySettings(svc.settings);
  } else {
    // the clock: onto a store's freshness tier edge (give or take 2 ms), a few milliseconds or hours on
    const synced = [...svc.stores.values()].filter((s) => s.lastSyncAt !== null);
    const k2 = r();
    if (k2 < 0.4 && synced.length > 0) w.now = new Date(Date.parse(pick(synced).lastSyncAt!) + pick([6, 24, 72]) * HOUR + pick([-2, -1, 0, 1, 2]));
    else w.now = new Date(w.now.getTime() + (k2 < 0.7 ? Math.floor(r() * 5) : Math.floor(r() * 30) * HOUR));
  }
}

function bodyOf(w: World): SearchQuery {
  const { r, pick } = w;
  const filters: NonNullable<RankRequest["filters"]> = {};
  if (r() < 0.3) filters.category = pick(CATEGORIES);
  if (r() < 0.4) filters.inStock = false;
  if (r() < 0.2) filters.minTrustScore = pick([0.3, 0.5, 0.6, 0.8, 1]);
  if (r() < 0.15) filters.verificationLevel = pick(["BASIC", "STANDARD", "PREMIUM", "QUALIFIED"] as const);
  if (r() < 0.2) filters.minPrice = pick([0, 1, 2.5, 10]);
  if (r() < 0.2) filters.maxPrice = pick([1, 12, 20, 50]);
  const body: SearchQuery = { query: pick(["*", "*", " ", ""]) };
  if (Object.keys(filters).length > 0) body.filters = filters;
  const sort = pick([undefined, "relevance", "relevance", "trust_score", "trust_score", "price_asc", "price_desc", "newest"] as const);
  if (sort) body.sort = sort;
  if (r() < 0.3) body.deduplicate = true;
  if (r() < 0.3) body.page = 1 + Math.floor(r() * 4);
  if (r() < 0.5) body.limit = pick([1, 3, 7, 20, 100]);
  if (r() < 0.1) body.storeSlug = pick(w.slugs);
  return body;
}

/** Ranking every match of the allowed stores by rankProducts' record path: the answer the search must give. */
function oracle(w: World, body: SearchQuery): { ids: string[]; scores: number[]; total: number; totalPages: number; matches: number } {
  const svc = w.svc;
  const stores = new Map(svc.stores); // a plain map: no store terms shared with the service's calls
  const scope = body.storeSlug === undefined ? [...stores.values()] : stores.has(body.storeSlug) ? [stores.get(body.storeSlug)!] : [];
  const allowed = new Set(allowedStoreSlugs(scope, body));
  const candidates: Candidate[] = [];
  for (const p of svc.products.values()) if (allowed.has(p.storeSlug)) candidates.push({ id: p.id, textScore: 0 });
  const res = rankProducts({ candidates, products: svc.products, stores, request: body, now: w.now, settings: svc.settings, cap: svc.settings.candidateWindow });
  const items = res.items.map(toProductSummary);
  const matches = candidates.length;
  return { ids: items.map((p) => p.id), scores: items.map((p) => p.relevanceScore), total: res.total, totalPages: res.totalPages, matches };
}

/** Searches answered from a strict prefix of the stores (fewer candidates than the allowed stores' matches). */
let fromPrefix = 0;
let searches = 0;
/** Price and newest searches answered from a part of the per-product order (fewer candidates than matches). */
let fromOrder = 0;
let perProduct = 0;

describe("a wildcard search against ranking every match", () => {
  const seeds = Number(process.env.WILDCARD_SEEDS ?? 40);
  const first = Number(process.env.WILDCARD_SEED0 ?? 1);
  for (let seed = first; seed < first + seeds; seed++) {
    test(`answers as ranking every match does over a churning catalog (seed ${seed})`, async () => {
      const w = await build(seed);
      for (let step = 0; step < 60; step++) {
        await churn(w);
        const body = bodyOf(w);
        w.lastScope = null;
        const got = await w.svc.search(body, w.now);
        const want = oracle(w, body);
        searches++;
        if (w.lastScope !== null && w.lastScope < (got.queryMeta.eligibleStores as number)) fromPrefix++;
        if (body.sort === "newest" || body.sort === "price_asc" || body.sort === "price_desc") {
          perProduct++;
          if ((got.queryMeta.candidates as number) < want.matches) fromOrder++;
        }
        const summary = { ids: got.products.map((p) => p.id), scores: got.products.map((p) => p.relevanceScore), total: got.meta.total, totalPages: got.meta.totalPages, matches: want.matches };
        if (JSON.stringify(summary) !== JSON.stringify(want)) {
          throw new Error(`seed ${seed} step ${step}: ${JSON.stringify(body)} settings ${JSON.stringify({ w: w.svc.settings.candidateWindow, p: w.svc.settings.deprioritizedPenalty, r: w.svc.settings.rankingWeights })}\n got ${JSON.stringify(summary)}\nwant ${JSON.stringify(want)}`);
        }
        expect(summary).toEqual(want);
      }
    });
  }

  test("ranked many of those searches from a prefix of the stores", () => {
    console.log(`prefix ${fromPrefix} of ${searches}`);
    expect(fromPrefix).toBeGreaterThan(searches / 10);
  });

  test("ranked many of the price and newest searches from a part of the per-product order", () => {
    console.log(`ordered walk ${fromOrder} of ${perProduct}`);
    expect(fromOrder).toBeGreaterThan(perProduct / 10);
  });

  test("takes in a store left out whose best match ties the window's cut, though every match of the prefix outscores it", async () => {
    // default weights: trust 0.9 fresh and out of stock scores 0.9 × 0.25 + 0.1 = 0.325, as trust 0.9 very stale and
    // in stock does: the left-out store's bound equals the cut, and its product wins the tie on id
    const now = new Date("2026-03-01T12:00:00.000Z");
    const store = (slug: string, hoursAgo: number): StoreSnapshot => ({
      slug,
      name: slug,
      trustScore: 0.9,
      verificationLevel: "STANDARD",
      storeStatus: "active",
      lastSyncAt: new Date(now.getTime() - hoursAgo * HOUR).toISOString(),
      euQualified: false,
    });
    const svc = new SearchService(createEmbeddedEngine());
    svc.settings = resolveSearchSettings({ candidateWindow: 3 });
    await svc.engine.applySettings(svc.settings);
    svc.stores.set("fresh", store("fresh", 1));
    svc.stores.set("stale", store("stale", 100));
    const row = (n: number, slug: string, inStock: boolean): ProductLoadRow => ({
      id: uuid(n),
      store_slug: slug,
      title: `Item ${n}`,
      description: "",
      brand: null,
      category: null,
      tags: [],
      price_minor: 1000,
      compare_at_price_minor: null,
      currency: "EUR",
      in_stock: inStock,
      images: [],
      active: true,
      created_at: now,
      updated_at: now,
    });
    await svc.applyRows([row(1, "stale", true), row(10, "fresh", true), row(11, "fresh", true), row(12, "fresh", false), row(13, "fresh", false)]);
    const r = await svc.search({ query: "*", filters: { inStock: false } }, now);
    expect(r.products.map((p) => [p.id, p.relevanceScore])).toEqual([
      [uuid(10), 0.425],
      [uuid(11), 0.425],
      [uuid(1), 0.325],
    ]);
  });

  test("takes in a product left out whose price ties the window's cut, though a variant price put it later in the order", async () => {
    // price_asc with a price filter: the order walks by each product's lowest price, the sort reads the lowest price in
    // the filter's range. Two products with variants at 5.00 and 10.00 (8.00 and up asked) come first in the order and
    // sort at 10.00, more than the window of 1; "X" (10.00, a more trusted store) comes next: its bound equals the
    // window's cut and it wins the tie on relevance, so the walk must take it in (stopping at "next bound <= cut"
    // would answer one of the others)
    const now = new Date("2026-03-01T12:00:00.000Z");
    const store = (slug: string, trustScore: number): StoreSnapshot => ({
      slug,
      name: slug,
      trustScore,
      verificationLevel: "STANDARD",
      storeStatus: "active",
      lastSyncAt: new Date(now.getTime() - HOUR).toISOString(),
      euQualified: false,
    });
    const svc = new SearchService(createEmbeddedEngine());
    svc.settings = resolveSearchSettings({ candidateWindow: 1 });
    await svc.engine.applySettings(svc.settings);
    svc.stores.set("low", store("low", 0.5));
    svc.stores.set("high", store("high", 0.9));
    const row = (n: number, slug: string, priceMinor: number, variantPrices: number[] | null): ProductLoadRow => ({
      id: uuid(n),
      store_slug: slug,
      title: `Item ${n}`,
      description: "",
      brand: null,
      category: null,
      tags: [],
      price_minor: priceMinor,
      compare_at_price_minor: null,
      currency: "EUR",
      in_stock: true,
      variant_prices: variantPrices,
      images: [],
      active: true,
      created_at: now,
      updated_at: now,
    });
    await svc.applyRows([row(1, "low", 500, [500, 1000]), row(3, "low", 500, [500, 1000]), row(2, "high", 1000, null)]);
    const r = await svc.search({ query: "*", sort: "price_asc", filters: { minPrice: 8 } }, now);
    expect(r.products.map((p) => p.id)).toEqual([uuid(2)]);
    expect(r.meta.total).toBe(1);
  });

  test("asks the engine only for stores that hold products when most eligible stores hold none", async () => {
    // 5,000 eligible stores, 10 of them with 150 products: the prefix is taken among those 10, not among thousands of
    // empty stores interleaved with them by trust (ordering and masking those cost 6-60x the full pass: review R)
    const now = new Date("2026-03-01T12:00:00.000Z");
    const engine = createEmbeddedEngine();
    const scopes: number[] = [];
    const queryWindow = engine.queryWindow!.bind(engine);
    engine.queryWindow = (q) => {
      scopes.push(q.storeSlugs?.length ?? -1);
      return queryWindow(q);
    };
    const svc = new SearchService(engine);
    const rows: ProductLoadRow[] = [];
    for (let i = 0; i < 5000; i++) {
      const slug = `s${String(i).padStart(4, "0")}`;
      svc.stores.set(slug, { slug, name: slug, trustScore: 0.3 + (i % 700) / 1000, verificationLevel: "STANDARD", storeStatus: "active", lastSyncAt: now.toISOString(), euQualified: false });
      if (i % 500 !== 7) continue;
      for (let j = 0; j < 150; j++) {
        rows.push({ id: uuid(rows.length + 1), store_slug: slug, title: "Lamp", description: "", brand: null, category: "Lamps", tags: [], price_minor: 100, compare_at_price_minor: null, currency: "EUR", in_stock: true, images: [], active: true, created_at: now, updated_at: now });
      }
    }
    await svc.applyRows(rows);
    const r = await svc.search({ query: "*" }, now);
    expect(r.meta.total).toBe(1000);
    expect(scopes.length).toBeGreaterThan(0);
    expect(Math.max(...scopes)).toBeLessThanOrEqual(10);
    const w: World = { r: rng(1), pick: (xs) => xs[0]!, svc, now, slugs: [], nextId: 0, live: new Map(), lastScope: null };
    const want = oracle(w, { query: "*" });
    expect(r.products.map((p) => p.id)).toEqual(want.ids);
  });
});
