/**
 * In-process engine on MiniSearch (chosen by bench/search-engines.ts; figures and reasons in docs/search.md).
 * Everything that settings change (synonyms, stop words, typos, field boosts) is applied at query time, so
 * `applySettings` never needs a re-index. Filters run inside MiniSearch's search call on stored fields.
 */
import MiniSearch, { type Query, type SearchResult } from "minisearch";
import { fail } from "../actors/runtime/errors.ts";
import { categoryKey, isWildcardText, tokenize, type Candidate, type EngineQuery, type SearchDoc, type SearchEngine } from "./engine.ts";
import { allowedTypos, assertSearchSettings, DEFAULT_SEARCH_SETTINGS, SEARCHABLE_FIELDS, type SearchSettings } from "./settings.ts";
import { combineTextScore, coverage, fieldFactors, queryGroups, type QueryGroup } from "./text-score.ts";

interface Stored {
  storeSlug: string;
  priceMinor: number;
  inStock: boolean;
  categoryKey: string | null;
}

type IndexedDoc = SearchDoc & { categoryKey: string | null };

const TEXT_FIELDS: ReadonlySet<string> = new Set(SEARCHABLE_FIELDS);

export function validateSearchDoc(d: SearchDoc): void {
  if (typeof d.id !== "string" || d.id.length === 0) throw fail("validation_error", "search doc without id", {});
  if (!Number.isSafeInteger(d.priceMinor) || d.priceMinor < 0) {
    throw fail("validation_error", "priceMinor must be a non-negative integer (minor units)", { id: d.id, priceMinor: d.priceMinor });
  }
}

export class EmbeddedSearchEngine implements SearchEngine {
  readonly name = "embedded";
  private settings: SearchSettings;
  private index: MiniSearch<IndexedDoc>;

  constructor(settings: SearchSettings = DEFAULT_SEARCH_SETTINGS) {
    assertSearchSettings(settings);
    this.settings = settings;
    this.index = EmbeddedSearchEngine.newIndex();
  }

  private static newIndex(): MiniSearch<IndexedDoc> {
    return new MiniSearch<IndexedDoc>({
      fields: [...SEARCHABLE_FIELDS],
      storeFields: ["storeSlug", "priceMinor", "inStock", "categoryKey"],
      tokenize,
      // tokenize already lower-cases and folds accents; stop words stay indexed so changing them needs no re-index
      processTerm: (t) => t,
      // MiniSearch also uses this for stored fields: keep their types (numbers, booleans) intact
      extractField: (doc, field) => {
        const v = (doc as unknown as Record<string, unknown>)[field];
        if (!TEXT_FIELDS.has(field)) return v as string;
        if (Array.isArray(v)) return v.join(" ");
        return v == null ? "" : String(v);
      },
    });
  }

  async upsert(docs: SearchDoc[]): Promise<void> {
    for (const d of docs) validateSearchDoc(d);
    for (const d of docs) {
      const row: IndexedDoc = { ...d, tags: [...d.tags], categoryKey: categoryKey(d.category) };
      if (this.index.has(d.id)) this.index.replace(row);
      else this.index.add(row);
    }
  }

  async remove(ids: string[]): Promise<void> {
    for (const id of ids) if (this.index.has(id)) this.index.discard(id);
  }

  async applySettings(s: SearchSettings): Promise<void> {
    assertSearchSettings(s);
    this.settings = s;
  }

  async count(): Promise<number> {
    return this.index.documentCount;
  }

  async clear(): Promise<void> {
    this.index = EmbeddedSearchEngine.newIndex();
  }

  async query(q: EngineQuery): Promise<Candidate[]> {
    const window = Math.max(0, Math.floor(q.window));
    if (window === 0 || (q.storeSlugs !== undefined && q.storeSlugs.length === 0)) return [];
    const filter = this.filterFor(q);
    if (isWildcardText(q.text)) {
      return this.index
        .search(MiniSearch.wildcard, { filter })
        .map((r) => String(r.id))
        .sort()
        .slice(0, window)
        .map((id) => ({ id, textScore: 0 }));
    }
    const s = this.settings;
    const groups = queryGroups(tokenize(q.text), s, (w) => this.synonymsOf(w));
    if (groups.length === 0) return [];
    const results = this.index.search(this.toMiniSearchQuery(groups), {
      boost: { ...s.fieldWeights },
      fuzzy: (term) => allowedTypos(term, s),
      maxFuzzy: 2,
      filter,
    });
    if (results.length === 0) return [];
    const factors = fieldFactors(s);
    const cache = new Map<string, Map<string, number>>();
    const best = results[0].score; // MiniSearch returns best first
    const scored = results.map((r) => ({
      id: String(r.id),
      raw: r.score,
      textScore: combineTextScore(coverage(groups, r.match, s, factors, cache), r.score, best),
    }));
    scored.sort((a, b) => b.textScore - a.textScore || b.raw - a.raw || (a.id < b.id ? -1 : a.id > b.id ? 1 : 0));
    return scored.slice(0, window).map(({ id, textScore }) => ({ id, textScore }));
  }

  private synonymsOf(word: string): string[][] {
    const out: string[][] = [];
    for (const [key, values] of Object.entries(this.settings.synonyms)) {
      if (tokenize(key).join(" ") !== word) continue;
      for (const v of values) out.push(tokenize(v));
    }
    return out;
  }

  private toMiniSearchQuery(groups: QueryGroup[]): Query {
    return {
      combineWith: "OR",
      queries: groups.map((g) => ({
        combineWith: "OR",
        queries: g.alternatives.map((alt, i) => ({
          combineWith: "AND",
          queries: alt,
          prefix: i === 0 && g.prefix,
        })),
      })),
    };
  }

  private filterFor(q: EngineQuery): ((r: SearchResult) => boolean) | undefined {
    const allow = q.storeSlugs ? new Set(q.storeSlugs) : null;
    const cat = q.category !== undefined ? categoryKey(q.category) : undefined;
    const { minPriceMinor: min, maxPriceMinor: max, inStock } = q;
    if (allow === null && cat === undefined && min === undefined && max === undefined && inStock === undefined) return undefined;
    return (r) => {
      const d = r as unknown as Stored;
      return (
        (allow === null || allow.has(d.storeSlug)) &&
        (inStock === undefined || d.inStock === inStock) &&
        (min === undefined || d.priceMinor >= min) &&
        (max === undefined || d.priceMinor <= max) &&
        (cat === undefined || d.categoryKey === cat)
      );
    };
  }
}

export function createEmbeddedEngine(settings: SearchSettings = DEFAULT_SEARCH_SETTINGS): SearchEngine {
  return new EmbeddedSearchEngine(settings);
}
