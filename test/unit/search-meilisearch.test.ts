import { describe, expect, test } from "bun:test";
import {
  createMeilisearchEngine,
  meiliString,
  toMeilisearchFilter,
  toMeilisearchSettings,
} from "../../search/meilisearch.ts";
import { resolveSearchSettings } from "../../search/settings.ts";
import { searchEngineContract } from "../search/contract.ts";

const url = process.env.MEILISEARCH_URL;

searchEngineContract(
  "meilisearch",
  () =>
    createMeilisearchEngine({
      url: url ?? "",
      apiKey: process.env.MEILISEARCH_API_KEY,
      indexUid: `contract_${Date.now()}_${Math.floor(Math.random() * 1e6)}`,
    }),
  url ? {} : { skipReason: "MEILISEARCH_URL not set" },
);

describe("meilisearch adapter without a server", () => {
  test("an unreachable server fails fast with service_unavailable naming the URL", async () => {
    const t0 = performance.now();
    const err = await createMeilisearchEngine({ url: "http://127.0.0.1:9", requestTimeoutMs: 1000 }).then(
      () => null,
      (e: unknown) => e,
    );
    expect(err).toMatchObject({ code: "service_unavailable" });
    expect(String((err as Error).message)).toContain("http://127.0.0.1:9");
    expect(performance.now() - t0).toBeLessThan(3000);
  });

  test("filters become Meilisearch filter expressions with quoted strings", () => {
    expect(
      toMeilisearchFilter({ storeSlugs: ["alpha", 'we"ird\\'], inStock: true, minPriceMinor: 100, maxPriceMinor: 2500, category: "Home & Kitchen" }),
    ).toEqual([
      'storeSlug IN ["alpha", "we\\"ird\\\\"]',
      "inStock = true",
      "pricesMinor 100 TO 2500",
      'categoryKey = "home kitchen"',
    ]);
    // one bound alone: one comparison on the chargeable prices
    expect(toMeilisearchFilter({ minPriceMinor: 100 })).toEqual(["pricesMinor >= 100"]);
    expect(toMeilisearchFilter({ maxPriceMinor: 2500 })).toEqual(["pricesMinor <= 2500"]);
    expect(toMeilisearchFilter({})).toEqual([]);
    expect(meiliString("a")).toBe('"a"');
  });

  test("index settings list searchable attributes from the heaviest field down", () => {
    const s = toMeilisearchSettings(
      resolveSearchSettings({ synonyms: { TV: ["Television"] }, typoTolerance: { minWordSizeForOneTypo: 4 }, candidateWindow: 3000 }),
    );
    expect(s.searchableAttributes).toEqual(["title", "brand", "category", "tags", "description"]);
    expect(s.filterableAttributes).toEqual(["storeSlug", "categoryKey", "inStock", "priceMinor", "pricesMinor", "currency"]);
    expect(s.sortableAttributes).toEqual(["priceMinor", "createdAtMs"]);
    expect(s.synonyms).toEqual({ tv: ["television"] });
    expect(s.typoTolerance).toEqual({ enabled: true, minWordSizeForTypos: { oneTypo: 4, twoTypos: 9 } });
    expect(s.pagination).toEqual({ maxTotalHits: 3000 });
  });
});
