/**
 * Review Y-3 (session 17, 986618e): the embedded engine now counts an adjacent swap as one typo "as Meilisearch", but
 * Meilisearch also counts a typo on a word's FIRST letter as two (docs: typo tolerance calculations, "caturday is not
 * accepted because it contains two typos ... a typo on the first letter of a word is treated as two typos"; milli PR
 * 439). So a swap that moves the first letter ("hsoes" for shoes, 5 letters, 1 typo allowed) is two typos there and
 * does not match; the embedded engine matches it (and test/unit/search-typo-transposition.test.ts asserts that
 * "ehadphonse", first-letter swap + another swap = 3 typos in Meilisearch, finds headphones). The first-letter rule was
 * already missing for substitutions ("caturday"); the transposition widened the gap. Copy into test/unit/ and run
 * `bun test/run.ts test/unit/<file>`.
 */
import { describe, expect, test } from "bun:test";
import { createEmbeddedEngine } from "../../search/embedded.ts";
import type { SearchDoc } from "../../search/engine.ts";

const doc = (n: number, title: string): SearchDoc => ({
  id: `00000000-0000-4000-8000-${String(n).padStart(12, "0")}`, storeSlug: "a", title, description: "", category: null, brand: null,
  tags: [], priceMinor: 100, currency: "EUR", inStock: true, createdAt: "2025-01-01T00:00:00Z", updatedAt: "2025-01-01T00:00:00Z",
});

describe("a typo on the first letter counts two, as in Meilisearch", () => {
  test("'sohes' finds shoes (second/third letters swapped: one typo) but 'hsoes' does not (first letter moved: two)", async () => {
    const e = createEmbeddedEngine();
    await e.upsert([doc(1, "Running shoes"), doc(2, "Studio headphones"), doc(3, "Saturday market")]);
    expect((await e.query({ text: "sohes", window: 10 })).map((c) => c.id)).toEqual([doc(1, "").id]);
    expect(await e.query({ text: "hsoes", window: 10 })).toEqual([]);
    expect(await e.query({ text: "ehadphonse", window: 10 })).toEqual([]);
    expect(await e.query({ text: "caturday", window: 10 })).toEqual([]);
  });
});
