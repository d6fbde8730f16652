/**
 * The embedded engine's exact dynamic pruning (search/embedded.ts prunedPass): a query skips documents that can
 * enter neither the candidate window nor the best engine score every text score is normalised by, and answers
 * exactly what the full postings pass answers (same candidates, same text scores to the last bit).
 */
import { describe, expect, test } from "bun:test";
import { EmbeddedSearchEngine } from "../../search/embedded.ts";
import type { EngineQuery, SearchDoc } from "../../search/engine.ts";
import { resolveSearchSettings, type SearchSettings } from "../../search/settings.ts";

const WORDS = ["widget", "gizmo", "lamp", "desk", "chair", "cable", "charger", "wireless", "steel", "bottle", "mat", "yoga", "material", "matte"];

function id(n: number): string {
  return `00000000-0000-4000-8000-${String(n).padStart(12, "0")}`;
}

function doc(n: number, title: string, description: string, extra: Partial<SearchDoc> = {}): SearchDoc {
  return {
    id: id(n), storeSlug: `store-${n % 7}`, title, description, category: n % 3 === 0 ? "Home" : "Sports", brand: null, tags: [],
    priceMinor: 100 + (n % 50) * 10, currency: "EUR", inStock: n % 5 !== 0, createdAt: "2025-01-01T00:00:00Z", updatedAt: "2025-01-01T00:00:00Z",
    ...extra,
  };
}

/** A deterministic catalog where many documents tie on coverage (the synthetic catalog's shape). */
function catalog(size: number): SearchDoc[] {
  let seed = 12345;
  const rnd = (k: number) => {
    seed = (seed * 1103515245 + 12345) % 2147483648;
    return seed % k;
  };
  const out: SearchDoc[] = [];
  for (let n = 0; n < size; n++) {
    const t = [WORDS[rnd(WORDS.length)]!, WORDS[rnd(WORDS.length)]!];
    const d = [...t, WORDS[rnd(WORDS.length)]!, WORDS[rnd(WORDS.length)]!, "and", "more", "words"];
    out.push(doc(n, t.join(" "), d.join(" ")));
  }
  return out;
}

async function engines(docs: SearchDoc[], settings?: SearchSettings): Promise<{ pruned: EmbeddedSearchEngine; full: EmbeddedSearchEngine }> {
  const pruned = new EmbeddedSearchEngine(settings);
  const full = new EmbeddedSearchEngine(settings);
  full.pruning = false;
  await pruned.upsert(docs);
  await full.upsert(docs);
  return { pruned, full };
}

/** The window as "id:textScore" strings (full precision), sorted (the service asks unordered). */
function answer(engine: EmbeddedSearchEngine, q: EngineQuery): string[] {
  const w = engine.queryWindow(q);
  return Array.from({ length: w.length }, (_, i) => `${w.ids[i]}:${w.textScores[i]}`).sort();
}

describe("embedded engine pruning", () => {
  test("pruned queries return the same candidates and text scores as the full postings pass", async () => {
    const { pruned, full } = await engines(catalog(3000));
    const queries: EngineQuery[] = [];
    for (const text of ["widget", "wireless charger", "yoga mat", "mat", "steel bottle", "desk lamp cable", "gizmo widget lamp chair", "wirless", "cha"]) {
      for (const window of [5, 50, 300]) {
        queries.push({ text, window, unordered: true });
        queries.push({ text, window, unordered: true, inStock: true, maxPriceMinor: 400 });
        queries.push({ text, window, unordered: true, category: "home", storeSlugs: ["store-1", "store-2", "store-3"] });
        queries.push({ text, window }); // ordered
      }
    }
    for (const q of queries) expect(answer(pruned, q)).toEqual(answer(full, q));
    // ordered windows come back in the same order too
    const ordered = { text: "wireless charger", window: 50 };
    expect(pruned.queryWindow(ordered).ids.slice(0, 50)).toEqual(full.queryWindow(ordered).ids.slice(0, 50));
    expect(pruned.prunedQueries).toBeGreaterThan(0);
    expect(full.prunedQueries).toBe(0);
  });

  test("a document the pruned lists alone hold that has the best engine score still normalises every text score", async () => {
    // ten title matches fill a window of five; one document has the word only in a short description, 60 times:
    // it cannot enter the window (its coverage is the description's), but its BM25 score is the best of all
    const settings = resolveSearchSettings({ fieldWeights: { title: 1.5, brand: 1, category: 1, tags: 1, description: 1 } });
    const docs: SearchDoc[] = [];
    for (let n = 0; n < 10; n++) docs.push(doc(n, `widget ${WORDS[n]}`, "a plain description of something else entirely"));
    docs.push(doc(10, "something else", Array.from({ length: 60 }, () => "widget").join(" ")));
    for (let n = 11; n < 1000; n++) docs.push(doc(n, "filler item", "a long filler description with several words in it"));
    const { pruned, full } = await engines(docs, settings);
    const q: EngineQuery = { text: "widget", window: 5, unordered: true };
    const got = answer(pruned, q);
    expect(got).toEqual(answer(full, q));
    expect(got.some((c) => c.startsWith(id(10)))).toBe(false);
    expect(pruned.fallbacks).toBe(1);
  });

  test("queries with synonyms or a repeated word are not pruned and answer as before", async () => {
    const settings = resolveSearchSettings({ synonyms: { lamp: ["light"], widget: ["gizmo"] } });
    const { pruned, full } = await engines(catalog(2000), settings);
    for (const text of ["lamp", "widget desk", "mat mat"]) {
      const q = { text, window: 20, unordered: true };
      expect(answer(pruned, q)).toEqual(answer(full, q));
    }
    expect(pruned.prunedQueries).toBe(0);
  });

  test("pruning stays exact after removals and replacements", async () => {
    const docs = catalog(3000);
    const { pruned, full } = await engines(docs);
    const gone = docs.filter((_, i) => i % 4 === 0).map((d) => d.id);
    const changed = docs.filter((_, i) => i % 4 === 1).map((d) => ({ ...d, title: `${d.title} widget`, inStock: !d.inStock }));
    for (const e of [pruned, full]) {
      await e.remove(gone);
      await e.upsert(changed);
      await e.setStock(changed.slice(0, 200).map((d) => ({ id: d.id, inStock: !d.inStock })));
    }
    for (const text of ["widget", "wireless charger", "yoga ma", "steel"]) {
      for (const window of [10, 200]) {
        const q = { text, window, unordered: true };
        expect(answer(pruned, q)).toEqual(answer(full, q));
      }
    }
    expect(pruned.prunedQueries).toBeGreaterThan(0);
  });
});
