/**
 * The one behaviour contract every SearchEngine passes (embedded and Meilisearch). Tests run in order against
 * one engine that is cleared and re-filled before each test.
 */
import { afterAll, beforeAll, beforeEach, describe, expect, test } from "bun:test";
import type { Candidate, SearchDoc, SearchEngine } from "../../search/engine.ts";
import { DEFAULT_SEARCH_SETTINGS, resolveSearchSettings } from "../../search/settings.ts";

const uuid = (n: number) => `00000000-0000-4000-8000-${n.toString(16).padStart(12, "0")}`;

export const IDS = {
  headphones: uuid(1),
  sofa: uuid(2),
  mug: uuid(3),
  speaker: uuid(4),
  shoes: uuid(5),
  espresso: uuid(6),
};

function doc(n: number, over: Partial<SearchDoc>): SearchDoc {
  return {
    id: uuid(n),
    storeSlug: "alpha",
    title: "",
    description: "",
    category: null,
    brand: null,
    tags: [],
    priceMinor: 1000,
    currency: "EUR",
    inStock: true,
    createdAt: "2025-01-01T00:00:00.000Z",
    updatedAt: "2025-01-01T00:00:00.000Z",
    ...over,
  };
}

export function fixtureDocs(): SearchDoc[] {
  return [
    doc(1, { title: "Wireless Noise Cancelling Headphones", description: "Over-ear, 30 hour battery.", brand: "Sonora", category: "Electronics", tags: ["audio"], priceMinor: 19_900, storeSlug: "alpha" }),
    doc(2, { title: "Leather Sofa", description: "Three seat, full grain leather.", category: "Furniture", priceMinor: 89_900, storeSlug: "beta" }),
    doc(3, { title: "Ceramic Coffee Mug", description: "Holds 350 ml of tea or coffee.", category: "Home & Kitchen", priceMinor: 1_500, inStock: false, storeSlug: "alpha" }),
    doc(4, { title: "Bluetooth Speaker", description: "Pairs with your phone and wireless headphones.", category: "Electronics", priceMinor: 5_900, storeSlug: "gamma" }),
    doc(5, { title: "Trail Running Shoes", description: "Grippy outsole for mud.", brand: "Kestrel", category: "Sports", priceMinor: 12_000, storeSlug: "gamma" }),
    doc(6, { title: "Espresso Machine", description: "15 bar pump, steam wand.", category: "Home & Kitchen", priceMinor: 45_000, storeSlug: "beta" }),
  ];
}

const ids = (cs: Candidate[]) => cs.map((c) => c.id);
const sorted = (xs: string[]) => [...xs].sort();

export interface ContractOptions {
  /** When set, every test is registered with test.skip and this reason is in the describe name. */
  skipReason?: string;
}

export function searchEngineContract(
  name: string,
  makeEngine: () => SearchEngine | Promise<SearchEngine>,
  opts: ContractOptions = {},
): void {
  const skip = opts.skipReason !== undefined;
  const it = skip ? test.skip : test;
  let engine: SearchEngine;

  describe(`search engine contract: ${name}${skip ? ` (skipped: ${opts.skipReason})` : ""}`, () => {
    beforeAll(async () => {
      if (!skip) engine = await makeEngine();
    });
    beforeEach(async () => {
      if (skip) return;
      await engine.clear();
      await engine.applySettings(DEFAULT_SEARCH_SETTINGS);
      await engine.upsert(fixtureDocs());
    });
    afterAll(async () => {
      if (!skip) await engine.clear();
    });

    it("an upserted product is found by a word of its title", async () => {
      expect(await engine.count()).toBe(6);
      const res = await engine.query({ text: "espresso", window: 10 });
      expect(res[0]?.id).toBe(IDS.espresso);
    });

    it("upserting an existing id replaces the document instead of adding one", async () => {
      await engine.upsert([{ ...fixtureDocs()[5], title: "Pour Over Kettle" }]);
      expect(await engine.count()).toBe(6);
      expect(ids(await engine.query({ text: "espresso", window: 10 }))).not.toContain(IDS.espresso);
      expect(ids(await engine.query({ text: "kettle", window: 10 }))).toEqual([IDS.espresso]);
    });

    it("a removed product is no longer found and unknown ids are ignored", async () => {
      await engine.remove([IDS.shoes, uuid(999)]);
      expect(await engine.count()).toBe(5);
      expect(await engine.query({ text: "running", window: 10 })).toEqual([]);
    });

    it("a price range keeps only products priced inside it, bounds included", async () => {
      const res = await engine.query({ text: "*", minPriceMinor: 12_000, maxPriceMinor: 45_000, window: 10 });
      expect(sorted(ids(res))).toEqual(sorted([IDS.headphones, IDS.shoes, IDS.espresso]));
    });

    it("a product with several chargeable prices matches a price range when one of them is inside it", async () => {
      // list price 50.00, variants at 30.00 and 70.00: the cart never charges 50.00
      await engine.upsert([doc(7, { title: "Variant Lamp", storeSlug: "delta", priceMinor: 5_000, prices: [3_000, 7_000] })]);
      const inRange = async (min?: number, max?: number) =>
        ids(await engine.query({ text: "*", storeSlugs: ["delta"], window: 10, ...(min !== undefined ? { minPriceMinor: min } : {}), ...(max !== undefined ? { maxPriceMinor: max } : {}) }));
      expect(await inRange(2_500, 3_500)).toEqual([uuid(7)]);
      expect(await inRange(6_500, 8_000)).toEqual([uuid(7)]);
      expect(await inRange(4_000, 6_000)).toEqual([]); // between the prices, around the list price
      expect(await inRange(7_001)).toEqual([]);
      expect(await inRange(6_000)).toEqual([uuid(7)]);
      expect(await inRange(undefined, 2_999)).toEqual([]);
      expect(await inRange(undefined, 3_000)).toEqual([uuid(7)]);
      // the same through a text query, and replaced by a single-priced version
      expect(ids(await engine.query({ text: "lamp", minPriceMinor: 4_000, maxPriceMinor: 6_000, window: 10 }))).toEqual([]);
      await engine.upsert([doc(7, { title: "Variant Lamp", storeSlug: "delta", priceMinor: 5_000 })]);
      expect(ids(await engine.query({ text: "lamp", minPriceMinor: 4_000, maxPriceMinor: 6_000, window: 10 }))).toEqual([uuid(7)]);
    });

    it("a category filter matches regardless of case", async () => {
      const res = await engine.query({ text: "*", category: "home & KITCHEN", window: 10 });
      expect(sorted(ids(res))).toEqual(sorted([IDS.mug, IDS.espresso]));
    });

    it("the inStock filter keeps only products with that stock state", async () => {
      expect(ids(await engine.query({ text: "*", inStock: false, window: 10 }))).toEqual([IDS.mug]);
      expect(await engine.query({ text: "*", inStock: true, window: 10 })).toHaveLength(5);
    });

    it("a stock-only update moves a product across the inStock filter and leaves its text, price and count alone", async () => {
      const before = await engine.query({ text: "headphones", window: 10 });
      await engine.setStock([{ id: IDS.headphones, inStock: false }, { id: IDS.mug, inStock: true }]);
      expect(await engine.count()).toBe(6);
      expect(sorted(ids(await engine.query({ text: "*", inStock: false, window: 10 })))).toEqual([IDS.headphones]);
      expect(ids(await engine.query({ text: "*", inStock: true, window: 10 }))).toContain(IDS.mug);
      expect(ids(await engine.query({ text: "headphones", inStock: true, window: 10 }))).not.toContain(IDS.headphones);
      // the document is otherwise the same: text scores and the price filter as before
      expect(await engine.query({ text: "headphones", window: 10 })).toEqual(before);
      expect(ids(await engine.query({ text: "*", minPriceMinor: 19_900, maxPriceMinor: 19_900, window: 10 }))).toEqual([IDS.headphones]);
      await engine.setStock([{ id: IDS.headphones, inStock: true }]);
      expect(ids(await engine.query({ text: "headphones", inStock: true, window: 10 }))).toContain(IDS.headphones);
    });

    it("a store allow-list keeps only those stores and an empty list matches nothing", async () => {
      const res = await engine.query({ text: "*", storeSlugs: ["alpha"], window: 10 });
      expect(sorted(ids(res))).toEqual(sorted([IDS.headphones, IDS.mug]));
      expect(await engine.query({ text: "headphones", storeSlugs: [], window: 10 })).toEqual([]);
    });

    it("filters apply together with the text query", async () => {
      const res = await engine.query({ text: "headphones", storeSlugs: ["gamma"], inStock: true, window: 10 });
      expect(ids(res)).toEqual([IDS.speaker]);
    });

    it("the last query word matches as a prefix", async () => {
      expect(ids(await engine.query({ text: "headph", window: 10 }))).toContain(IDS.headphones);
      expect(ids(await engine.query({ text: "espres", window: 10 }))[0]).toBe(IDS.espresso);
    });

    it("a word with one typo still matches", async () => {
      expect(ids(await engine.query({ text: "expresso", window: 10 }))[0]).toBe(IDS.espresso);
      expect(ids(await engine.query({ text: "haedphones", window: 10 }))).toContain(IDS.headphones);
    });

    it("a title match ranks above a description match", async () => {
      const res = await engine.query({ text: "headphones", window: 10 });
      expect(ids(res).slice(0, 2)).toEqual([IDS.headphones, IDS.speaker]);
      expect(res[0].textScore).toBeGreaterThan(res[1].textScore);
    });

    it("a synonym finds products that only contain the other word", async () => {
      expect(await engine.query({ text: "couch", window: 10 })).toEqual([]);
      await engine.applySettings(resolveSearchSettings({ synonyms: { couch: ["sofa"], sofa: ["couch"] } }));
      expect(ids(await engine.query({ text: "couch", window: 10 }))).toEqual([IDS.sofa]);
    });

    it("text scores stay within 0..1 and a full title match scores high", async () => {
      for (const text of ["espresso machine", "wireless", "coffee mug tea", "grain", "headphnes", "*"]) {
        for (const c of await engine.query({ text, window: 10 })) {
          expect(c.textScore).toBeGreaterThanOrEqual(0);
          expect(c.textScore).toBeLessThanOrEqual(1);
        }
      }
      const exact = await engine.query({ text: "espresso machine", window: 10 });
      expect(exact[0].id).toBe(IDS.espresso);
      expect(exact[0].textScore).toBeGreaterThanOrEqual(0.7);
    });

    it("a lone weak match does not get the top score just because it is the only hit", async () => {
      const res = await engine.query({ text: "grain", window: 10 });
      expect(ids(res)).toEqual([IDS.sofa]);
      expect(res[0].textScore).toBeLessThan(1);
      const full = await engine.query({ text: "leather sofa", window: 10 });
      expect(full[0].textScore).toBeGreaterThan(res[0].textScore);
    });

    it("the candidate window caps the number of results", async () => {
      await engine.upsert(Array.from({ length: 30 }, (_, i) => doc(100 + i, { title: `Widget model ${i}` })));
      expect(await engine.query({ text: "widget", window: 5 })).toHaveLength(5);
      expect(await engine.query({ text: "widget", window: 100 })).toHaveLength(30);
      expect(await engine.query({ text: "widget", window: 0 })).toEqual([]);
    });

    it("an unordered window holds the same candidates and scores as the ordered one", async () => {
      await engine.upsert(Array.from({ length: 30 }, (_, i) => doc(200 + i, { title: `Gadget ${i % 2 ? "deluxe" : "basic"} ${i}`, description: i % 3 ? "gadget" : "" })));
      const byId = (a: { id: string }, b: { id: string }) => (a.id < b.id ? -1 : a.id > b.id ? 1 : 0);
      for (const window of [5, 12, 100]) {
        const ordered = await engine.query({ text: "gadget deluxe", window });
        const unordered = await engine.query({ text: "gadget deluxe", window, unordered: true });
        expect([...unordered].sort(byId)).toEqual([...ordered].sort(byId));
      }
    });

    it("clear empties the index", async () => {
      await engine.clear();
      expect(await engine.count()).toBe(0);
      expect(await engine.query({ text: "espresso", window: 10 })).toEqual([]);
    });
  });
}
