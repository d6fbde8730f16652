/**
 * The structures behind the fast search path: the bounded top-k heap, the embedded engine's postings under
 * churn (tombstones, vacuum, slot reuse), its cached store bitsets, ranking that builds only the returned page,
 * and the search service's cached store allow-list.
 */
import { describe, expect, test } from "bun:test";
import { type Candidate, type CandidateWindow, type SearchDoc, windowCandidates } from "../../search/engine.ts";
import { createEmbeddedEngine, EmbeddedSearchEngine, idOrderKey, selectWindow } from "../../search/embedded.ts";
import {
  dedupe,
  kthLargest,
  rankProducts,
  scoreProduct,
  SORTS,
  topK,
  TopK,
  type RankableProduct,
  type RankedProduct,
  type SortOrder,
  type StoreSnapshot,
  VersionedMap,
} from "../../search/ranking.ts";
import { ProductColumns } from "../../search/columns.ts";
import { SearchService } from "../../search/service.ts";
import { resolveSearchSettings } from "../../search/settings.ts";

/** Small deterministic PRNG so failures reproduce. */
function rng(seed: number): () => number {
  let s = seed >>> 0;
  return () => {
    s = (s + 0x6d2b79f5) >>> 0;
    let t = s;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

const uuid = (n: number) => `00000000-0000-4000-8000-${n.toString(16).padStart(12, "0")}`;

describe("top-k selection", () => {
  test("the k first items equal a full sort cut at k, ties included, for every k", () => {
    const r = rng(1);
    const items = Array.from({ length: 300 }, (_, i) => ({ v: Math.floor(r() * 20), id: i }));
    const cmp = (a: { v: number; id: number }, b: { v: number; id: number }) => b.v - a.v || a.id - b.id;
    const full = [...items].sort(cmp);
    for (const k of [0, 1, 2, 7, 20, 299, 300, 301, 1000]) expect(topK(items, k, cmp)).toEqual(full.slice(0, k));
  });

  test("kthLargest finds the k-th largest value, with many equal values, for every k", () => {
    const r = rng(5);
    for (const n of [1, 2, 10, 257]) {
      const values = Array.from({ length: n }, () => Math.floor(r() * 6) / 5);
      const desc = [...values].sort((a, b) => b - a);
      for (let k = 1; k <= n; k++) expect(kthLargest(Float64Array.from(values), n, k)).toBe(desc[k - 1]!);
      expect(kthLargest(Float64Array.from(values), n, n + 1)).toBe(-Infinity);
    }
  });

  test("the engine's window selection equals a full sort by text, engine score and id, with heavy ties", () => {
    const r = rng(11);
    const n = 2000;
    const text = Float64Array.from({ length: n }, () => Math.floor(r() * 4) / 4);
    const raw = Float64Array.from({ length: n }, () => (r() < 0.05 ? -1 : Math.floor(r() * 3)));
    const id = (i: number) => uuid((i * 7919) % 10007);
    const cmp = (a: number, b: number) => text[b]! - text[a]! || raw[b]! - raw[a]! || (id(a) < id(b) ? -1 : id(a) > id(b) ? 1 : 0);
    const full = Array.from({ length: n }, (_, i) => i).filter((i) => raw[i]! >= 0).sort(cmp);
    for (const window of [1, 5, 100, 499, 500, 501, 1000, 1899, 5000]) expect(selectWindow(n, window, text, raw, id)).toEqual(full.slice(0, window));
  });

  test("an id's order key never contradicts the order of the id strings", () => {
    const r = rng(5);
    const alphabet = ["0", "1", "9", "a", "f", "-", "Z", "é", "\u0000", "\u007f", "\u0080", "😀"];
    const word = () => Array.from({ length: Math.floor(r() * 10) }, () => alphabet[Math.floor(r() * alphabet.length)]!).join("");
    for (let i = 0; i < 5000; i++) {
      const a = r() < 0.5 ? uuid(Math.floor(r() * 1e6)) : word();
      const b = r() < 0.5 ? uuid(Math.floor(r() * 1e6)) : word();
      if (idOrderKey(a) < idOrderKey(b)) expect(a < b).toBe(true);
      if (idOrderKey(a) > idOrderKey(b)) expect(a > b).toBe(true);
    }
  });

  test("the window's id tie-break is exact when ids share their first characters", () => {
    const n = 3000;
    const text = new Float64Array(n).fill(0.5);
    const raw = new Float64Array(n).fill(1);
    // every id starts with the same 7 characters, so the order keys all tie and the strings decide
    const id = (i: number) => `sameprefix-${((i * 7919) % 10007).toString().padStart(5, "0")}`;
    const full = Array.from({ length: n }, (_, i) => i).sort((a, b) => (id(a) < id(b) ? -1 : 1));
    for (const window of [1, 999, 1000, 2999]) expect(selectWindow(n, window, text, raw, id)).toEqual(full.slice(0, window));
  });

  test("the heap keeps at most k items however many are pushed", () => {
    const t = new TopK<number>(5, (a, b) => a - b);
    for (let i = 1000; i > 0; i--) t.push(i);
    expect(t.size).toBe(5);
    expect(t.sorted()).toEqual([1, 2, 3, 4, 5]);
  });
});

const WORDS = ["wireless", "earbuds", "speaker", "cotton", "shirt", "yoga", "mat", "skillet", "cast", "iron", "trail", "shoes", "lamp", "desk", "organic"];

function randomDoc(r: () => number, n: number, stores: string[]): SearchDoc {
  const pick = () => WORDS[Math.floor(r() * WORDS.length)]!;
  return {
    id: uuid(n),
    storeSlug: stores[Math.floor(r() * stores.length)]!,
    title: `${pick()} ${pick()} ${pick()}`,
    description: Array.from({ length: 6 }, pick).join(" "),
    category: r() < 0.5 ? "Electronics" : "Home & Kitchen",
    brand: r() < 0.3 ? null : pick(),
    tags: r() < 0.5 ? [pick()] : [],
    priceMinor: Math.floor(r() * 10_000),
    currency: "EUR",
    inStock: r() < 0.8,
    createdAt: "2025-01-01T00:00:00.000Z",
    updatedAt: "2025-01-01T00:00:00.000Z",
  };
}

describe("embedded engine index", () => {
  const QUERIES = ["wireless earbuds", "cast iron skillet", "yoga", "cottn shirt", "tra", "organic lamp desk", "*"];

  test("after replacements and removals past the vacuum threshold, results and scores equal a fresh build", async () => {
    const r = rng(7);
    const stores = ["a", "b", "c", "d"];
    let docs = Array.from({ length: 6000 }, (_, i) => randomDoc(r, i, stores));
    const churned = createEmbeddedEngine();
    await churned.upsert(docs);
    // replace a third with new content, remove a third (well over a quarter of all postings), re-add some
    const replaced = docs.slice(0, 2000).map((d, i) => randomDoc(r, i, stores));
    await churned.upsert(replaced);
    await churned.remove(docs.slice(2000, 4000).map((d) => d.id));
    const readded = docs.slice(2000, 2500).map((d, i) => randomDoc(r, 2000 + i, stores));
    await churned.upsert(readded);
    docs = [...replaced, ...readded, ...docs.slice(4000)];

    const fresh = createEmbeddedEngine();
    await fresh.upsert(docs);
    expect(await churned.count()).toBe(docs.length);
    for (const text of QUERIES) {
      for (const filters of [{}, { inStock: true, storeSlugs: ["a", "c"] }, { category: "electronics", minPriceMinor: 1000, maxPriceMinor: 5000 }]) {
        const q = { text, window: 200, ...filters };
        const a = await churned.query(q);
        const b = await fresh.query(q);
        expect(a.map((c) => c.id)).toEqual(b.map((c) => c.id));
        a.forEach((c, i) => expect(c.textScore).toBeCloseTo(b[i]!.textScore, 12));
      }
    }
  });

  test("a removed document is never returned, also once new documents are added after it", async () => {
    const engine = new EmbeddedSearchEngine();
    const doc = (n: number, title: string): SearchDoc => ({ ...randomDoc(rng(n), n, ["a"]), title, description: "", brand: null, tags: [] });
    await engine.upsert([doc(1, "alpha lamp"), doc(2, "beta lamp")]);
    await engine.remove([uuid(1)]);
    await engine.upsert([doc(3, "gamma desk")]);
    expect((await engine.query({ text: "alpha", window: 10 })).map((c) => c.id)).toEqual([]);
    expect((await engine.query({ text: "lamp", window: 10 })).map((c) => c.id)).toEqual([uuid(2)]);
    expect((await engine.query({ text: "gamma", window: 10 })).map((c) => c.id)).toEqual([uuid(3)]);
  });

  test("a reused store allow-list still admits a store indexed after it was first used", async () => {
    const engine = createEmbeddedEngine();
    const allow = ["a", "late"];
    await engine.upsert([{ ...randomDoc(rng(1), 1, ["a"]), title: "lamp" }]);
    expect(await engine.query({ text: "lamp", window: 10, storeSlugs: allow })).toHaveLength(1);
    await engine.upsert([{ ...randomDoc(rng(2), 2, ["late"]), title: "lamp" }]);
    expect(await engine.query({ text: "lamp", window: 10, storeSlugs: allow })).toHaveLength(2);
  });

  test("after clear, store bitsets are rebuilt even when the same stores come back in another order", async () => {
    const engine = createEmbeddedEngine();
    const onlyB = ["b"];
    await engine.upsert([{ ...randomDoc(rng(1), 1, ["a"]), title: "lamp" }, { ...randomDoc(rng(2), 2, ["b"]), title: "lamp" }]);
    expect((await engine.query({ text: "lamp", window: 10, storeSlugs: onlyB })).map((c) => c.id)).toEqual([uuid(2)]);
    await engine.clear();
    await engine.upsert([{ ...randomDoc(rng(2), 2, ["b"]), title: "lamp" }, { ...randomDoc(rng(1), 1, ["a"]), title: "lamp" }]);
    expect((await engine.query({ text: "lamp", window: 10, storeSlugs: onlyB })).map((c) => c.id)).toEqual([uuid(2)]);
  });
});

describe("ranking builds only the returned page", () => {
  const NOW = new Date("2025-06-01T12:00:00.000Z");
  const stores: StoreSnapshot[] = ["s1", "s2", "s3", "s4"].map((slug, i) => ({
    slug,
    name: slug,
    trustScore: [0.9, 0.6, 0.4, 0.75][i]!,
    verificationLevel: "STANDARD",
    storeStatus: i === 2 ? "deprioritized" : "active",
    lastSyncAt: new Date(NOW.getTime() - [2, 30, 8, 100][i]! * 3_600_000).toISOString(),
    euQualified: false,
  }));
  const storeMap = new Map(stores.map((s) => [s.slug, s]));
  const r = rng(3);
  const titles = ["Lamp Pro", "pro lamp", "Desk Lamp", "Yoga Mat", "mat yoga", "Skillet"];
  const products: RankableProduct[] = Array.from({ length: 400 }, (_, i) => ({
    id: uuid(i + 1),
    storeSlug: stores[i % 4]!.slug,
    title: titles[Math.floor(r() * titles.length)]!,
    description: "",
    priceMinor: Math.floor(r() * 50) * 100,
    compareAtPriceMinor: null,
    currency: i % 5 === 0 ? "JPY" : "EUR",
    inStock: r() < 0.7,
    imageUrl: null,
    category: null,
    createdAt: new Date(Date.UTC(2025, 0, 1 + Math.floor(r() * 30))).toISOString(),
  }));
  const productMap = new Map(products.map((p) => [p.id, p]));
  const candidates: Candidate[] = products.map((p) => ({ id: p.id, textScore: Math.round(r() * 10) / 10 }));

  /** The former pipeline: every candidate fully built, deduped, sorted, then sliced. */
  function reference(sort: SortOrder, page: number, limit: number, deduplicate: boolean) {
    let all: RankedProduct[] = candidates.map((c) => {
      const p = productMap.get(c.id)!;
      const store = storeMap.get(p.storeSlug)!;
      const { score, why } = scoreProduct(c.textScore, p, store, NOW);
      return { ...p, merchant: { slug: p.storeSlug }, score, why_ranked: why } as unknown as RankedProduct;
    });
    if (deduplicate) all = dedupe(all);
    all.sort(SORTS[sort]);
    return { ids: all.slice((page - 1) * limit, page * limit).map((x) => x.id), whys: all.slice((page - 1) * limit, page * limit).map((x) => x.why_ranked), total: all.length };
  }

  for (const sort of ["relevance", "price_asc", "price_desc", "trust_score", "newest"] as SortOrder[]) {
    test(`pages of sort ${sort}, with and without dedupe, match a full sort of every candidate`, () => {
      for (const deduplicate of [false, true]) {
        for (const [page, limit] of [[1, 20], [2, 20], [3, 7], [1, 100], [40, 10]] as const) {
          const got = rankProducts({ candidates, products: productMap, stores: storeMap, request: { sort, page, limit, deduplicate, filters: { inStock: false } }, now: NOW });
          const want = reference(sort, page, limit, deduplicate);
          expect(got.total).toBe(want.total);
          expect(got.items.map((x) => x.id)).toEqual(want.ids);
          expect(got.items.map((x) => x.why_ranked)).toEqual(want.whys);
        }
      }
    });
  }

  test("ranking through candidate refs equals ranking through the id map, with duplicates and stale refs", () => {
    const byRef: Array<RankableProduct | undefined> = [];
    products.forEach((p, i) => (byRef[i * 2 + 1] = p));
    const withRefs: Candidate[] = candidates.map((c, i) => ({ ...c, ref: i * 2 + 1 }));
    // the same id twice: its best text score counts
    const dup = [...withRefs, { ...withRefs[7]!, textScore: 1 }, { ...withRefs[9]!, textScore: 0 }];
    // one ref pointing at another product: every candidate goes through the id map instead
    const stale = withRefs.map((c, i) => (i === 3 ? { ...c, ref: 1 } : c));
    const missing = withRefs.map((c, i) => (i === 5 ? { id: c.id, textScore: c.textScore } : c));
    for (const sort of ["relevance", "price_asc", "newest"] as SortOrder[]) {
      for (const deduplicate of [false, true]) {
        const request = { sort, page: 1, limit: 50, deduplicate, filters: { inStock: false } };
        const rank = (cands: Candidate[], refs?: typeof byRef) =>
          rankProducts({ candidates: cands, products: productMap, productsByRef: refs, stores: storeMap, request, now: NOW });
        for (const cands of [withRefs, dup, stale, missing]) {
          const want = rank(cands.map((c) => ({ id: c.id, textScore: c.textScore })));
          expect(rank(cands, byRef)).toEqual(want);
        }
      }
    }
  });

  test("changing the stop words changes the cached dedupe keys", () => {
    const a = { ...products[0]!, id: uuid(9001), title: "Lamp Desk Walnut" };
    const b = { ...products[1]!, id: uuid(9002), title: "Lamp Desk" };
    const map = new Map([a, b].map((p) => [p.id, p]));
    const cands = [{ id: a.id, textScore: 1 }, { id: b.id, textScore: 1 }];
    const total = (settings = resolveSearchSettings()) =>
      rankProducts({ candidates: cands, products: map, stores: storeMap, request: { deduplicate: true, filters: { inStock: false } }, now: NOW, settings }).total;
    expect(total()).toBe(2);
    expect(total(resolveSearchSettings({ stopWords: ["walnut"] }))).toBe(1);
    expect(total()).toBe(2);
  });
});

describe("store terms cached across requests", () => {
  const sync = Date.parse("2025-06-01T00:00:00.000Z");
  const p: RankableProduct = {
    id: uuid(1), storeSlug: "s", title: "Lamp", description: "", priceMinor: 100, compareAtPriceMinor: null, currency: "EUR",
    inStock: true, imageUrl: null, category: null, createdAt: "2025-01-01T00:00:00.000Z",
  };
  const products = new Map([[p.id, p]]);
  const snapshot = (over: Partial<StoreSnapshot> = {}): StoreSnapshot => ({
    slug: "s", name: "S", trustScore: 0.8, verificationLevel: "STANDARD", storeStatus: "active", lastSyncAt: new Date(sync).toISOString(), euQualified: false, ...over,
  });
  const rank = (stores: ReadonlyMap<string, StoreSnapshot>, nowMs: number) =>
    rankProducts({ candidates: [{ id: p.id, textScore: 0.5 }], products, stores, now: new Date(nowMs) }).items[0];

  test("the freshness term follows the clock across tier boundaries, to the millisecond, like an uncached store map", () => {
    const cached = new VersionedMap([["s", snapshot()]]);
    const plain = new Map([["s", snapshot()]]);
    const h = 3_600_000;
    for (const t of [-h, 0, 6 * h - 1, 6 * h, 6 * h + 1, 3 * h, 24 * h - 1, 24 * h, 72 * h - 1, 72 * h, 1000 * h, 5 * h]) {
      const a = rank(cached, sync + t);
      expect(a?.freshnessTier).toBe(rank(plain, sync + t)!.freshnessTier);
      expect(a?.relevanceScore).toBe(rank(plain, sync + t)!.relevanceScore);
      expect(a?.why_ranked).toBe(rank(plain, sync + t)!.why_ranked);
    }
  });

  test("a store written into the map (trust, status, eligibility) is re-read on the next request", () => {
    const stores = new VersionedMap([["s", snapshot()]]);
    const now = sync + 3_600_000;
    expect(rank(stores, now)!.score.trust).toBe(0.8);
    stores.set("s", snapshot({ trustScore: 0.6, storeStatus: "deprioritized" }));
    expect(rank(stores, now)!.score.trust).toBe(0.6);
    expect(rank(stores, now)!.score.multiplier).toBeCloseTo(0.8, 12);
    stores.set("s", snapshot({ trustScore: 0.2 }));
    expect(rank(stores, now)).toBeUndefined();
  });
});

describe("candidate refs", () => {
  test("the embedded engine hands back a document's ref, and leaves it out for documents without one", async () => {
    const engine = createEmbeddedEngine();
    await engine.upsert([{ ...randomDoc(rng(1), 1, ["a"]), title: "lamp", ref: 42 }, { ...randomDoc(rng(2), 2, ["a"]), title: "lamp" }]);
    const got = await engine.query({ text: "lamp", window: 10 });
    expect(got.find((c) => c.id === uuid(1))?.ref).toBe(42);
    expect(got.find((c) => c.id === uuid(2))).not.toHaveProperty("ref");
    expect((await engine.query({ text: "*", window: 10 })).find((c) => c.id === uuid(1))?.ref).toBe(42);
    await expect(engine.upsert([{ ...randomDoc(rng(3), 3, ["a"]), ref: -1 }])).rejects.toThrow(/ref/);
    await expect(engine.upsert([{ ...randomDoc(rng(3), 3, ["a"]), ref: 1.5 }])).rejects.toThrow(/ref/);
  });

  test("the search service keeps a product's ref across updates and never lets a removed product's ref find another", async () => {
    const svc = new SearchService(createEmbeddedEngine());
    const now = new Date();
    svc.stores.set("s", { slug: "s", name: "s", trustScore: 0.8, verificationLevel: "STANDARD", storeStatus: "active", lastSyncAt: now.toISOString(), euQualified: false });
    const row = (n: number, title: string, active = true) => ({
      id: uuid(n), store_slug: "s", title, description: "", brand: null, category: null, tags: [], price_minor: 1000,
      compare_at_price_minor: null, currency: "EUR", in_stock: true, images: [], active, created_at: now, updated_at: now,
    });
    const titles = async (q: string) => (await svc.search({ query: q }, now)).products.map((p) => p.title).sort();
    await svc.applyRows([row(1, "Walnut Lamp"), row(2, "Oak Lamp")]);
    expect(await titles("lamp")).toEqual(["Oak Lamp", "Walnut Lamp"]);
    await svc.applyRows([row(1, "Walnut Lamp Deluxe")]);
    expect(await titles("lamp")).toEqual(["Oak Lamp", "Walnut Lamp Deluxe"]);
    await svc.applyRows([row(2, "Oak Lamp", false), row(3, "Pine Lamp")]);
    expect(await titles("lamp")).toEqual(["Pine Lamp", "Walnut Lamp Deluxe"]);
    expect(svc.productsByRef.filter((p) => p !== undefined).map((p) => p!.id).sort()).toEqual([uuid(1), uuid(3)]);
  });
});

describe("ranking from the columns", () => {
  const NOW = new Date("2025-06-01T12:00:00.000Z");
  const stores: StoreSnapshot[] = ["s1", "s2", "s3", "s4", "s5"].map((slug, i) => ({
    slug,
    name: slug,
    trustScore: [0.9, 0.6, 0.4, 0.75, 0.2][i]!, // s5 is not eligible
    verificationLevel: i === 1 ? "PREMIUM" : "STANDARD",
    storeStatus: i === 2 ? "deprioritized" : "active",
    lastSyncAt: i === 3 ? null : new Date(NOW.getTime() - [2, 30, 8, 0, 100][i]! * 3_600_000).toISOString(),
    euQualified: false,
  }));
  const r = rng(11);
  const titles = ["Lamp Pro", "pro lamp", "Desk Lamp", "Yoga Mat", "mat yoga", "Skillet", "!!!"];
  const hex = () => Math.floor(r() * 16).toString(16);
  const categories = [null, "Home & Kitchen", "home kitchen", "Sports", "!!!"];
  const products: RankableProduct[] = Array.from({ length: 600 }, (_, i) => ({
    // random ids (the order key decides) and ids sharing their first characters (the strings decide)
    id: i % 3 === 0 ? uuid(i + 1) : Array.from({ length: 32 }, hex).join(""),
    storeSlug: stores[i % 5]!.slug,
    title: titles[Math.floor(r() * titles.length)]!,
    description: "",
    priceMinor: Math.floor(r() * 50) * 100,
    compareAtPriceMinor: null,
    currency: i % 7 === 0 ? "JPY" : i % 11 === 0 ? "KWD" : "EUR",
    inStock: r() < 0.7,
    imageUrl: null,
    category: categories[Math.floor(r() * categories.length)]!,
    createdAt: new Date(Date.UTC(2025, 0, 1 + Math.floor(r() * 30))).toISOString(),
  }));
  const productMap = new Map(products.map((p) => [p.id, p]));
  const columns = new ProductColumns();
  products.forEach((p, i) => columns.set(i * 2 + 1, p));
  // text scores with many ties, so the id tie-break decides often
  const candidates: Candidate[] = products.map((p, i) => ({ id: p.id, textScore: Math.round(r() * 5) / 5, ref: i * 2 + 1 }));
  const requests: Array<Record<string, unknown>> = [];
  for (const sort of ["relevance", "price_asc", "price_desc", "trust_score", "newest"]) {
    for (const filters of [
      { inStock: false },
      {},
      { category: "home kitchen" },
      { category: "!!!", inStock: false },
      { category: "Garden" },
      { minPrice: 10, maxPrice: 30, inStock: false },
      { maxPrice: 2000 },
      { minTrustScore: 0.7, verificationLevel: "PREMIUM" },
    ]) {
      for (const [page, limit, deduplicate] of [[1, 20, false], [2, 7, true], [1, 100, false], [30, 10, false]] as const) {
        requests.push({ sort, filters, page, limit, deduplicate });
      }
    }
  }

  test("every request ranks the same from the columns as from the records, for versioned and plain store maps", () => {
    for (const storeMap of [new VersionedMap(stores.map((s) => [s.slug, s])), new Map(stores.map((s) => [s.slug, s]))]) {
      for (const request of requests) {
        for (const now of [NOW, new Date(NOW.getTime() + 5 * 3_600_000)]) {
          const want = rankProducts({ candidates: candidates.map((c) => ({ id: c.id, textScore: c.textScore })), products: productMap, stores: storeMap, request, now });
          const got = rankProducts({ candidates, products: productMap, columns, stores: storeMap, request, now });
          expect(got).toEqual(want);
        }
      }
    }
  });

  test("duplicates keep their best text score; a ref that does not hold the candidate's id sends the request down the record path", () => {
    const storeMap = new VersionedMap(stores.map((s) => [s.slug, s]));
    const dup = [...candidates, { ...candidates[8]!, textScore: 1 }, { ...candidates[10]!, textScore: 0 }];
    const stale = candidates.map((c, i) => (i === 3 ? { ...c, ref: 1 } : c));
    const missing = candidates.map((c, i) => (i === 5 ? { id: c.id, textScore: c.textScore } : c));
    const outOfRange = candidates.map((c, i) => (i === 6 ? { ...c, ref: 1_000_000 } : c));
    for (const request of requests.filter((_, i) => i % 9 === 0)) {
      for (const cands of [dup, stale, missing, outOfRange]) {
        const want = rankProducts({ candidates: cands.map((c) => ({ id: c.id, textScore: c.textScore })), products: productMap, stores: storeMap, request, now: NOW });
        expect(rankProducts({ candidates: cands, products: productMap, columns, stores: storeMap, request, now: NOW })).toEqual(want);
      }
    }
  });

  test("a store write or a freshness tier boundary is seen by the cached per-store terms", () => {
    const storeMap = new VersionedMap(stores.map((s) => [s.slug, s]));
    const request = { filters: { inStock: false }, limit: 100 };
    const rank = (now: Date) => rankProducts({ candidates, products: productMap, columns, stores: storeMap, request, now });
    const record = (now: Date) => rankProducts({ candidates: candidates.map((c) => ({ id: c.id, textScore: c.textScore })), products: productMap, stores: storeMap, request, now });
    rank(NOW);
    storeMap.set("s1", { ...stores[0]!, trustScore: 0.5, storeStatus: "deprioritized" });
    expect(rank(NOW)).toEqual(record(NOW));
    // s1 synced 2 h before NOW: fresh until 6 h, good after
    const later = new Date(NOW.getTime() + 4 * 3_600_000 + 1000);
    expect(rank(later)).toEqual(record(later));
    expect(rank(later).items.find((p) => p.merchant.slug === "s1")?.freshnessTier).toBe("good");
  });
});

describe("candidate windows", () => {
  test("the embedded engine's window holds what query returns, in its order, for text, wildcard, filtered and empty queries", async () => {
    const engine = new EmbeddedSearchEngine();
    const r = rng(21);
    const docs = Array.from({ length: 300 }, (_, i) => ({ ...randomDoc(r, i + 1, ["a", "b", "c"]), ...(i % 4 === 0 ? {} : { ref: i * 3 }) }));
    await engine.upsert(docs);
    const queries = [
      { text: "wireless earbuds", window: 50 },
      { text: "cast iron skillet", window: 1000, unordered: true },
      { text: "*", window: 40, storeSlugs: ["a", "c"] },
      { text: "tra", window: 20, inStock: true, minPriceMinor: 500 },
      { text: "cottn shirt", window: 30, category: "electronics" },
      { text: "nothingmatches", window: 10 },
      { text: "yoga", window: 10, storeSlugs: [] },
    ];
    for (const q of queries) {
      const want = await engine.query(q);
      const w = engine.queryWindow(q);
      const got = Array.from({ length: w.length }, (_, i) => (w.refs[i]! >= 0 ? { id: w.ids[i], textScore: w.textScores[i], ref: w.refs[i] } : { id: w.ids[i], textScore: w.textScores[i] }));
      expect(got).toEqual(want);
    }
  });

  test("ranking a window equals ranking its candidates, through the columns or, when a ref is stale, the records", () => {
    const NOW = new Date("2025-06-01T12:00:00.000Z");
    const store: StoreSnapshot = { slug: "s", name: "s", trustScore: 0.8, verificationLevel: "STANDARD", storeStatus: "active", lastSyncAt: NOW.toISOString(), euQualified: false };
    const stores = new VersionedMap([["s", store]]);
    const products: RankableProduct[] = Array.from({ length: 50 }, (_, i) => ({
      id: uuid(i + 1), storeSlug: "s", title: `Lamp ${i % 7}`, description: "", priceMinor: 100 * i, compareAtPriceMinor: null, currency: "EUR",
      inStock: i % 3 !== 0, imageUrl: null, category: null, createdAt: NOW.toISOString(),
    }));
    const columns = new ProductColumns();
    products.forEach((p, i) => columns.set(i, p));
    const productMap = new Map(products.map((p) => [p.id, p]));
    const window = { length: 40, ids: products.slice(0, 45).map((p) => p.id), textScores: Float64Array.from(products.slice(0, 45), (_, i) => (i % 5) / 4), refs: Int32Array.from(products.slice(0, 45), (_, i) => i) };
    const cands = windowCandidatesOf(window);
    const request = { limit: 10, page: 2, filters: { inStock: false }, deduplicate: true };
    const want = rankProducts({ candidates: cands, products: productMap, stores, request, now: NOW });
    expect(rankProducts({ candidates: [], window, products: productMap, columns, stores, request, now: NOW })).toEqual(want);
    const stale = { ...window, refs: Int32Array.from(window.refs, (r, i) => (i === 2 ? 7 : r)) };
    expect(rankProducts({ candidates: [], window: stale, products: productMap, columns, stores, request, now: NOW })).toEqual(want);
    expect(rankProducts({ candidates: [], window, products: productMap, stores, request, now: NOW })).toEqual(want);
  });
});

function windowCandidatesOf(w: { length: number; ids: string[]; textScores: Float64Array; refs: Int32Array }): Candidate[] {
  return Array.from({ length: w.length }, (_, i) => ({ id: w.ids[i]!, textScore: w.textScores[i]!, ref: w.refs[i]! }));
}

describe("search service refs under churn", () => {
  test("refs of removed products are reused, so memory follows the live catalog, and a reused ref never finds the old product", async () => {
    const svc = new SearchService(createEmbeddedEngine());
    const now = new Date();
    svc.stores.set("s", { slug: "s", name: "s", trustScore: 0.8, verificationLevel: "STANDARD", storeStatus: "active", lastSyncAt: now.toISOString(), euQualified: false });
    const row = (n: number, title: string, active = true) => ({
      id: uuid(n), store_slug: "s", title, description: "", brand: null, category: null, tags: [], price_minor: 1000,
      compare_at_price_minor: null, currency: "EUR", in_stock: true, images: [], active, created_at: now, updated_at: now,
    });
    await svc.applyRows(Array.from({ length: 100 }, (_, i) => row(i, `Lamp ${i}`)));
    expect(svc.refCapacity).toBe(100);
    // 30 rounds: 40 products deleted (inactive rows or gone from the table), 40 new ids added
    let next = 100;
    let live = Array.from({ length: 100 }, (_, i) => i);
    for (let round = 0; round < 30; round++) {
      const gone = live.slice(0, 40);
      live = live.slice(40);
      const added = Array.from({ length: 40 }, () => next++);
      if (round % 2 === 0) await svc.applyRows([...gone.map((n) => row(n, `Lamp ${n}`, false)), ...added.map((n) => row(n, `Lamp ${n}`))]);
      else {
        // ids no longer in the table (refreshProducts)
        await svc.applyRows(added.map((n) => row(n, `Lamp ${n}`)));
        await svc.removeProducts(gone.map(uuid));
      }
      live.push(...added);
    }
    // without reuse: 100 + 30 × 40 = 1,300 refs
    expect(svc.refCapacity).toBeLessThanOrEqual(140);
    expect(svc.products.size).toBe(100);
    const found = (await svc.search({ query: "lamp", limit: 100 }, now)).products.map((p) => p.id).sort();
    expect(found).toEqual(live.map(uuid).sort());
    // a candidate list taken before a removal, ranked after its ref went to another product: the old id is dropped
    const before = await svc.engine.query({ text: "lamp", window: 1000 });
    const victim = before.find((c) => c.id === uuid(live[0]!))!;
    await svc.applyRows([row(live[0]!, "x", false)]);
    await svc.applyRows([row(next, "Lamp new")]);
    expect(svc.productsByRef[victim.ref!]?.id).toBe(uuid(next));
    const ranked = rankProducts({ candidates: before, products: svc.products, columns: svc.columns, stores: svc.stores, request: { limit: 100 }, now });
    expect(ranked.items.map((p) => p.id)).not.toContain(uuid(live[0]!));
    expect(ranked.items.map((p) => p.id)).not.toContain(uuid(next));
    expect(ranked.total).toBe(99);
  });
});

describe("window refs checked by generation", () => {
  test("ranking trusts a window's refs by the columns' generation without reading its ids, and falls back to the ids for a ref another product took since", async () => {
    const svc = new SearchService(createEmbeddedEngine());
    const now = new Date();
    svc.stores.set("s", { slug: "s", name: "s", trustScore: 0.8, verificationLevel: "STANDARD", storeStatus: "active", lastSyncAt: now.toISOString(), euQualified: false });
    const row = (n: number, title: string) => ({
      id: uuid(n), store_slug: "s", title, description: "", brand: null, category: null, tags: [], price_minor: 1000 + n,
      compare_at_price_minor: null, currency: "EUR", in_stock: true, images: [], active: true, created_at: now, updated_at: now,
    });
    await svc.applyRows(Array.from({ length: 30 }, (_, i) => row(i, `Lamp ${i}`)));
    const request = { limit: 50, sort: "price_asc" as const };
    const q = { text: "lamp", window: 1000, unordered: true };
    const counted = (w: CandidateWindow): { w: CandidateWindow; reads: () => number } => {
      let reads = 0;
      const getter = Object.getOwnPropertyDescriptor(Object.getPrototypeOf(w), "ids")!.get!;
      Object.defineProperty(w, "ids", { configurable: true, get: () => (reads++, getter.call(w)) });
      return { w, reads: () => reads };
    };
    const byRecords = (w: CandidateWindow) => rankProducts({ candidates: windowCandidates(w), products: svc.products, stores: svc.stores, request, now });

    const fresh = counted(svc.engine.queryWindow!(q));
    expect(fresh.w.length).toBe(30);
    expect(fresh.w.gensOwner).toBe(svc.columns.uid);
    for (let i = 0; i < fresh.w.length; i++) expect(fresh.w.gens![i]).toBe(svc.columns.gen[fresh.w.refs[i]!]!);
    const ranked = rankProducts({ candidates: [], window: fresh.w, products: svc.products, columns: svc.columns, stores: svc.stores, request, now });
    expect(fresh.reads()).toBe(0);
    expect(ranked.items.map((p) => p.id)).toEqual(Array.from({ length: 30 }, (_, i) => uuid(i)));
    expect(ranked).toEqual(byRecords(fresh.w));

    // the columns give product 3's ref to another product behind the engine's back: its generation no longer
    // matches, the ids decide, and the window is ranked from the records (product 3 stays, the newcomer never shows)
    const stale = counted(svc.engine.queryWindow!(q));
    const at = Array.from({ length: stale.w.length }, (_, i) => i).find((i) => stale.w.ids[i] === uuid(3))!;
    const ref = stale.w.refs[at]!;
    const intruder = { ...svc.products.get(uuid(3))!, id: uuid(99), title: "Intruder" };
    svc.columns.unset(ref);
    svc.columns.set(ref, intruder);
    expect(svc.columns.gen[ref]).not.toBe(stale.w.gens![at]);
    const reads = stale.reads();
    const rankedStale = rankProducts({ candidates: [], window: stale.w, products: svc.products, columns: svc.columns, stores: svc.stores, request, now });
    expect(stale.reads()).toBeGreaterThan(reads);
    expect(rankedStale.items.map((p) => p.id)).not.toContain(uuid(99));
    expect(rankedStale).toEqual(byRecords(stale.w));
  });

  test("an engine given documents of two columns' generations trusts neither", async () => {
    const engine = createEmbeddedEngine();
    const doc = (n: number, owner: number): SearchDoc => ({
      id: uuid(n), storeSlug: "s", title: "Lamp", description: "", brand: null, category: null, tags: [], priceMinor: 100, currency: "EUR",
      inStock: true, createdAt: "2025-01-01T00:00:00.000Z", updatedAt: "2025-01-01T00:00:00.000Z", ref: n, refGen: 1, refOwner: owner,
    });
    await engine.upsert([doc(1, 7), doc(2, 7)]);
    expect(engine.queryWindow!({ text: "lamp", window: 10 }).gensOwner).toBe(7);
    await engine.upsert([doc(3, 8)]);
    expect(engine.queryWindow!({ text: "lamp", window: 10 }).gensOwner).toBe(-1);
    await engine.clear();
    await engine.upsert([doc(4, 8)]);
    expect(engine.queryWindow!({ text: "lamp", window: 10 }).gensOwner).toBe(8);
  });
});

describe("search service allow-list cache", () => {
  test("a trust change takes a store out of search and back in without a re-index", async () => {
    const svc = new SearchService(createEmbeddedEngine());
    const now = new Date();
    for (const slug of ["good", "other"]) {
      svc.stores.set(slug, { slug, name: slug, trustScore: 0.8, verificationLevel: "STANDARD", storeStatus: "active", lastSyncAt: now.toISOString(), euQualified: false });
    }
    const row = (n: number, store: string) => ({
      id: uuid(n), store_slug: store, title: "Walnut Desk Lamp", description: "", brand: null, category: null, tags: [], price_minor: 1000,
      compare_at_price_minor: null, currency: "EUR", in_stock: true, images: [], active: true, created_at: now, updated_at: now,
    });
    await svc.applyRows([row(1, "good"), row(2, "other")]);
    const slugs = async () => (await svc.search({ query: "desk lamp" }, now)).products.map((p) => p.merchant.slug).sort();
    expect(await slugs()).toEqual(["good", "other"]);
    svc.applyTrustScore({ slug: "good", trustScore: 0.1, operationalStatus: "active", computedAt: now.toISOString() });
    expect(await slugs()).toEqual(["other"]);
    svc.applyTrustScore({ slug: "good", trustScore: 0.7, operationalStatus: "active", computedAt: now.toISOString() });
    expect(await slugs()).toEqual(["good", "other"]);
    const minTrust = async (v: number) => (await svc.search({ query: "desk lamp", filters: { minTrustScore: v } }, now)).products.length;
    expect(await minTrust(0.75)).toBe(1);
    expect(await minTrust(0.5)).toBe(2);
  });
});
