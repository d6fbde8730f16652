/**
 * Session 17 (engineer L, audit A leftover): the embedded engine counts a swap of two adjacent letters as one typo
 * (optimal string alignment), as Meilisearch does; it counted two (Levenshtein), so "sohes" (5 letters, 1 typo
 * allowed) never found "shoes". Thresholds by word length are unchanged (1 typo from 5 letters, 2 from 9).
 */
import { describe, expect, test } from "bun:test";
import SearchableMap from "minisearch/SearchableMap";
import { createEmbeddedEngine } from "../../search/embedded.ts";
import type { SearchDoc } from "../../search/engine.ts";
import { boundedOsaDistance, fuzzyOsa } from "../../search/fuzzy.ts";
import { DEFAULT_SEARCH_SETTINGS } from "../../search/settings.ts";
import { wordQuality } from "../../search/text-score.ts";

const doc = (n: number, title: string): SearchDoc => ({
  id: `00000000-0000-4000-8000-${String(n).padStart(12, "0")}`, storeSlug: "a", title, description: "", category: null, brand: null,
  tags: [], priceMinor: 100, currency: "EUR", inStock: true, createdAt: "2025-01-01T00:00:00Z", updatedAt: "2025-01-01T00:00:00Z",
});

/** Plain OSA distance, no bound: the reference. */
function osa(a: string, b: string): number {
  const d: number[][] = Array.from({ length: a.length + 1 }, (_, i) => Array.from({ length: b.length + 1 }, (_, j) => (i === 0 ? j : j === 0 ? i : 0)));
  for (let i = 1; i <= a.length; i++) {
    for (let j = 1; j <= b.length; j++) {
      d[i]![j] = Math.min(d[i - 1]![j]! + 1, d[i]![j - 1]! + 1, d[i - 1]![j - 1]! + (a[i - 1] === b[j - 1] ? 0 : 1));
      if (i > 1 && j > 1 && a[i - 1] === b[j - 2] && a[i - 2] === b[j - 1]) d[i]![j] = Math.min(d[i]![j]!, d[i - 2]![j - 2]! + 1);
    }
  }
  return d[a.length]![b.length]!;
}

describe("a transposition is one typo", () => {
  test("search: 'sohes' finds shoes, 'wirelses' finds wireless, 'haedphonse' (two swaps, 10 letters) finds headphones", async () => {
    const e = createEmbeddedEngine();
    await e.upsert([doc(1, "Running shoes"), doc(2, "Wireless mouse"), doc(3, "Studio headphones")]);
    expect((await e.query({ text: "sohes", window: 10 })).map((c) => c.id)).toEqual([doc(1, "").id]);
    expect((await e.query({ text: "wirelses mouse", window: 10 })).map((c) => c.id)).toEqual([doc(2, "").id]);
    expect((await e.query({ text: "haedphonse", window: 10 })).map((c) => c.id)).toEqual([doc(3, "").id]);
    // a swap that moves the first letter is a typo on it, which counts two (Meilisearch; review Y-3)
    expect(await e.query({ text: "ehadphonse", window: 10 })).toEqual([]);
    // thresholds unchanged: 4 letters allow no typo, a swap included
    await e.upsert([doc(4, "Wool sock")]);
    expect(await e.query({ text: "scok", window: 10 })).toEqual([]);
  });

  test("a swapped word scores as one typo (quality 0.8), not as a miss", async () => {
    expect(wordQuality("sohes", "shoes", false, DEFAULT_SEARCH_SETTINGS)).toBeCloseTo(0.8, 10);
    expect(wordQuality("haedphonse", "headphones", false, DEFAULT_SEARCH_SETTINGS)).toBeCloseTo(0.6, 10);
    expect(wordQuality("ehadphonse", "headphones", false, DEFAULT_SEARCH_SETTINGS)).toBe(0);
    expect(wordQuality("shose", "shoes", true, DEFAULT_SEARCH_SETTINGS)).toBeCloseTo(0.8, 10);
  });

  test("the tree walk finds exactly the words within the distance, with the OSA distance, and without a swap as fuzzyGet did", () => {
    const words = ["shoes", "shoe", "hose", "shows", "sohes", "house", "horse", "headphones", "headphone", "phone", "ohpne", "abcdef", "badcfe", "bacdfe", "ab", "ba", "acb", "abc", "cab", "zebra", "ezbra", "zerba", "a", "aa"];
    const map = new SearchableMap<number>();
    words.forEach((w, i) => map.set(w, i));
    for (const q of [...words, "sheos", "hoesh", "ehadphonse", "xyz", "bca"]) {
      for (const max of [1, 2]) {
        const got = fuzzyOsa<number>(map._tree, q, max);
        const want = new Map(words.filter((w) => osa(q, w) <= max).map((w) => [w, osa(q, w)]));
        expect(new Map([...got].map(([w, [, d]]) => [w, d]))).toEqual(want);
        for (const w of words) expect(boundedOsaDistance(q, w, max)).toBe(Math.min(osa(q, w), max + 1));
        // no swap involved: the same terms, distances and order as MiniSearch's Levenshtein walk
        const lev = map.fuzzyGet(q, max);
        const sameAsLevenshtein = [...got].filter(([w, [, d]]) => lev.get(w)?.[1] === d);
        const levWithin = [...lev].filter(([w]) => got.has(w));
        expect(sameAsLevenshtein.map(([w]) => w)).toEqual(levWithin.filter(([w, [, d]]) => got.get(w)![1] === d).map(([w]) => w));
        for (const [w, [, d]] of lev) expect(got.get(w)![1]).toBeLessThanOrEqual(d);
      }
    }
  });
});
