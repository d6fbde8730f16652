/**
 * A wildcard search under the relevance or trust_score sort ranks only the stores whose best possible match can
 * still enter the candidate window (search/service.ts `rankWildcard`), instead of every match of the catalog. These
 * tests hold it to the answer of ranking every match (a service whose engine hides its window path, so the search
 * service takes the full pass) on a catalog built to hit each of its branches: stores tied on their bound at the
 * prefix's edge, deprioritized stores, out-of-stock products (inStock: false) ranked below other stores' in-stock ones, filters that
 * leave fewer matches than the window in the first prefix, trust and verification filters, deduplicate and pages.
 */
import { describe, expect, test } from "bun:test";
import { createEmbeddedEngine } from "../../search/embedded.ts";
import type { SearchEngine } from "../../search/engine.ts";
import type { StoreSnapshot } from "../../search/ranking.ts";
import { resolveSearchSettings } from "../../search/settings.ts";
import { SearchService, type ProductLoadRow, type SearchQuery } from "../../search/service.ts";

const NOW = new Date("2025-06-01T12:00:00.000Z");
const uuid = (n: number) => `00000000-0000-4000-8000-${n.toString(16).padStart(12, "0")}`;
const CATEGORIES = ["Lamps", "Chairs", "Rugs", "Mugs"];

/**
 * 40 stores, every fourth deprioritized, sync ages over the freshness tiers; `tied`: trust in 8 levels, so 5 stores tie
 * on their bound (the prefix takes ties together); else a trust of its own per store, so a prefix whose products fill
 * the window with out-of-stock ones has its cut below the next store's bound (the prefix then grows to the cut).
 */
function stores(tied: boolean): StoreSnapshot[] {
  return Array.from({ length: 40 }, (_, i) => ({
    slug: `store-${String(i).padStart(2, "0")}`,
    name: `Store ${i}`,
    trustScore: tied ? [0.95, 0.9, 0.8, 0.7, 0.6, 0.5, 0.4, 0.35][i % 8]! : 0.97 - i * 0.016,
    verificationLevel: (["BASIC", "STANDARD", "PREMIUM", "QUALIFIED"] as const)[i % 4]!,
    storeStatus: i % 4 === 3 ? "deprioritized" : "active",
    lastSyncAt: new Date(NOW.getTime() - [1, 30, 300, 3000][i % 4]! * 60_000).toISOString(),
    euQualified: false,
  }));
}

/** 30 products a store; a third out of stock; categories and prices spread so the filters cut across stores. */
function rows(all: StoreSnapshot[]): ProductLoadRow[] {
  const out: ProductLoadRow[] = [];
  let n = 0;
  for (const s of all) {
    for (let j = 0; j < 30; j++, n++) {
      const created = new Date(NOW.getTime() - ((n * 7919) % 1000) * 3_600_000);
      out.push({
        id: uuid(n + 1),
        store_slug: s.slug,
        title: `Item ${n % 97} ${CATEGORIES[n % 4]}`,
        description: "",
        brand: null,
        category: CATEGORIES[(n * 3 + j) % 4]!,
        tags: [],
        price_minor: 500 + ((n * 131) % 5000),
        compare_at_price_minor: null,
        currency: "EUR",
        in_stock: (n + j) % 3 !== 0,
        images: [],
        active: true,
        created_at: created,
        updated_at: created,
      });
    }
  }
  return out;
}

/** The same engine without its window path: the search service then ranks every match (the full pass). */
function withoutWindow(engine: SearchEngine): SearchEngine {
  return new Proxy(engine, {
    get: (target, prop) => {
      if (prop === "queryWindow") return undefined;
      const value: unknown = Reflect.get(target, prop, target);
      return typeof value === "function" ? value.bind(target) : value;
    },
  });
}

async function service(full: boolean, candidateWindow: number, tied = true): Promise<SearchService> {
  const engine = createEmbeddedEngine();
  const svc = new SearchService(full ? withoutWindow(engine) : engine);
  svc.settings = resolveSearchSettings({ candidateWindow });
  await svc.engine.applySettings(svc.settings);
  const all = stores(tied);
  for (const s of all) svc.stores.set(s.slug, s);
  await svc.applyRows(rows(all));
  return svc;
}

const bodies: SearchQuery[] = [];
for (const sort of [undefined, "relevance", "trust_score"] as const) {
  for (const filters of [
    undefined,
    { category: "Lamps" },
    { inStock: false },
    { category: "Rugs", inStock: false },
    { inStock: false, minTrustScore: 0.5 },
    { minTrustScore: 0.6 },
    { verificationLevel: "PREMIUM" as const },
    { minPrice: 10, maxPrice: 20 },
  ]) {
    for (const extra of [{}, { deduplicate: true }, { page: 3, limit: 7 }]) bodies.push({ query: "*", ...(sort ? { sort } : {}), ...(filters ? { filters } : {}), ...extra } as SearchQuery);
  }
}

const answer = (r: Awaited<ReturnType<SearchService["search"]>>) => ({ meta: r.meta, products: r.products });

describe("a wildcard search ranked from a prefix of the stores", () => {
  for (const [window, tied] of [7, 40, 100, 450, 7, 40, 100].map((w, i) => [w, i < 4] as const)) {
    test(`answers exactly as ranking every match does, with a candidate window of ${window}, ${tied ? "stores tied on trust" : "a trust per store"}`, async () => {
      const prefix = await service(false, window, tied);
      const full = await service(true, window, tied);
      let filled = 0;
      for (const body of bodies) {
        const a = await prefix.search(body, NOW);
        const b = await full.search(body, NOW);
        expect(answer(a)).toEqual(answer(b));
        if (a.meta.total === window) filled++;
      }
      // the window is full for many bodies, so the prefix and its extensions decide them (450 is past most listings)
      expect(filled).toBeGreaterThan(window <= 100 ? bodies.length / 4 : 0);
    });
  }

  test("ranks fewer candidates than the catalog holds when the best stores fill the window", async () => {
    const svc = await service(false, 40);
    const r = await svc.search({ query: "*" } as SearchQuery, NOW);
    expect(r.meta.total).toBe(40);
    const full = await service(true, 40);
    const f = await full.search({ query: "*" } as SearchQuery, NOW);
    expect(f.queryMeta.candidates as number).toBeGreaterThan(600); // every eligible store's products
    expect(r.queryMeta.candidates as number).toBeLessThan((f.queryMeta.candidates as number) / 3);
    expect(answer(r)).toEqual(answer(f));
  });
});
