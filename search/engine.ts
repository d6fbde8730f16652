/**
 * The search engine contract. An engine is a text index with filter push-down; it knows nothing about trust,
 * merchants' eligibility or paging. `search/ranking.ts` turns its candidates into ranked results.
 *
 * Two implementations pass the same contract suite (`test/search/contract.ts`): `search/embedded.ts`
 * (in-process, MiniSearch) and `search/meilisearch.ts` (Meilisearch server, official client).
 */
import type { SearchSettings } from "./settings.ts";

/** What is indexed per product. Money in integer minor units of `currency`. */
export interface SearchDoc {
  id: string;
  storeSlug: string;
  title: string;
  description: string;
  category: string | null;
  brand: string | null;
  tags: string[];
  priceMinor: number;
  /**
   * Optional: every price the cart can charge for the product, when that is not just `priceMinor` (a product with
   * variants priced on their own, search/service.ts `chargeablePrices`). The price filter then matches when one of
   * them is in range. Minor units of `currency`, ascending, no duplicates.
   */
  prices?: number[];
  currency: string;
  inStock: boolean;
  /** ISO 8601 date-time. */
  createdAt: string;
  /** ISO 8601 date-time. */
  updatedAt: string;
  /**
   * Optional: a small non-negative integer the caller attaches to the document (the search service's slot for
   * the product record). An engine that can keep it returns it on the document's candidates, so ranking finds
   * the record without a hash lookup by id; engines that cannot (Meilisearch) leave it out.
   */
  ref?: number;
  /**
   * Optional, with `ref`: the search service's generation of that ref (ProductColumns.gen: it changes whenever
   * another product takes the ref) and the columns it belongs to (ProductColumns.uid). An engine that returns them
   * on its window (CandidateWindow.gens) lets ranking check a ref without reading the id stored at it.
   */
  refGen?: number;
  refOwner?: number;
}

/** A document's new buyable-stock state (SearchEngine.setStock). */
export interface StockUpdate {
  id: string;
  inStock: boolean;
}

/**
 * A text query plus the filters an engine must apply inside its own query, so ineligible or filtered-out
 * products never use up the candidate window.
 */
export interface EngineQuery {
  /** Free text; empty or "*" lists every document that passes the filters, with textScore 0. */
  text: string;
  /** Inclusive lower bound on `priceMinor` (a document with `prices`: on one of them, the same one as the upper bound). */
  minPriceMinor?: number;
  /** Inclusive upper bound on `priceMinor` (or one of `prices`). */
  maxPriceMinor?: number;
  /** Exact category, compared case-insensitively. */
  category?: string;
  /** When set, only documents whose `inStock` equals it. */
  inStock?: boolean;
  /** Allow-list of store slugs; an empty list matches nothing, `undefined` means no store filter. */
  storeSlugs?: string[];
  /** Maximum number of candidates returned (best first). */
  window: number;
  /**
   * The caller orders the window itself (ranking does): the engine may return the same candidates in any order
   * instead of best first. Sorting 1,000 candidates that ranking re-orders anyway was a sixth of an embedded query.
   */
  unordered?: boolean;
}

/**
 * One match. `textScore` is in 0..1 and is meant to be comparable across queries: 1 means every query word
 * matched exactly in the most important field. How each engine gets there is documented in docs/search.md.
 */
export interface Candidate {
  id: string;
  textScore: number;
  /** The document's `SearchDoc.ref`, when it had one and the engine keeps them. A hint: ranking checks the id. */
  ref?: number;
}

/**
 * Candidates as parallel arrays, without an object per candidate: `ids[i]`, `textScores[i]`, `refs[i]` (−1 for a
 * document without a ref) for i < length, in the order `query` would return them, each id (and so each ref) at
 * most once: ranking takes them without de-duplicating. The arrays are the engine's scratch: valid until its next
 * query or write, so the caller ranks them right away (synchronously).
 */
export interface CandidateWindow {
  length: number;
  /** May be filled on first read (the embedded engine's: ranking from the columns does not read it, see `gens`). */
  ids: string[];
  textScores: Float64Array;
  refs: Int32Array;
  /**
   * Optional: each entry's `SearchDoc.refGen` (−1 when the document came without one), valid for the columns whose
   * uid is `gensOwner`. When the columns still hold that generation at the ref, the ref still holds the document's
   * product (the generation changes whenever another product takes the ref), so ranking need not compare ids:
   * a 4-byte read per candidate instead of two reads of 100k-entry id arrays (the engine's and the columns').
   */
  gens?: Int32Array;
  gensOwner?: number;
}

/** The window as Candidate objects (what `query` returns for it). */
export function windowCandidates(w: CandidateWindow): Candidate[] {
  const out: Candidate[] = new Array(w.length);
  for (let i = 0; i < w.length; i++) {
    const ref = w.refs[i]!;
    out[i] = ref >= 0 ? { id: w.ids[i]!, textScore: w.textScores[i]!, ref } : { id: w.ids[i]!, textScore: w.textScores[i]! };
  }
  return out;
}

export interface SearchEngine {
  readonly name: string;
  /**
   * Optional, synchronous: the same candidates as `query`, as a CandidateWindow (the embedded engine: building
   * 1,000 candidate objects per query was a few percent of a search).
   */
  queryWindow?(q: EngineQuery): CandidateWindow;
  /** Insert or fully replace documents by id. */
  upsert(docs: SearchDoc[]): Promise<void>;
  /** Remove documents by id; unknown ids are ignored. */
  remove(ids: string[]): Promise<void>;
  /**
   * Stock-only update (units held or given back by checkouts): only each document's `inStock` changes, nothing is
   * re-tokenised. The ids must be documents the caller indexed (the search service sends only those): a
   * Meilisearch partial update would otherwise create a document holding nothing but the stock.
   */
  setStock(updates: readonly StockUpdate[]): Promise<void>;
  /** Candidates best first, at most `q.window` of them, all passing the filters. */
  query(q: EngineQuery): Promise<Candidate[]>;
  applySettings(s: SearchSettings): Promise<void>;
  count(): Promise<number>;
  clear(): Promise<void>;
  /**
   * Optional: a new, empty engine of the same kind with these settings, that a full reload is built in beside this
   * one and then swapped in for it (search/service.ts `loadAll`, audit Q-2: searches never see a half-built index).
   * Absent for an engine whose index is shared (Meilisearch, the Postgres baseline): a reload upserts into it in place.
   */
  fresh?(settings: SearchSettings): SearchEngine;
}

/** Words of a text as both engines see them: lower-case, accents folded, split on anything not a letter or digit. */
export function tokenize(text: string): string[] {
  return text
    .normalize("NFKD")
    .replace(/\p{M}+/gu, "")
    .toLowerCase()
    .split(/[^\p{L}\p{N}]+/u)
    .filter((w) => w.length > 0);
}

/** The key a category filter compares against (case- and accent-insensitive). */
export function categoryKey(category: string | null | undefined): string | null {
  if (category == null) return null;
  const k = tokenize(category).join(" ");
  return k.length > 0 ? k : null;
}

/** Whether one of `prices` is in [min, max] (a product with several chargeable prices, SearchDoc.prices). */
export function anyPriceIn(prices: readonly number[], min: number, max: number): boolean {
  for (let i = 0; i < prices.length; i++) if (prices[i]! >= min && prices[i]! <= max) return true;
  return false;
}

/**
 * The price a product with several chargeable prices (ascending) is price-sorted by: the lowest one in [min, max]
 * (`highest`: the highest one, for price_desc); NaN when none is in range.
 */
export function matchingPrice(prices: readonly number[], min: number, max: number, highest: boolean): number {
  if (highest) {
    for (let i = prices.length - 1; i >= 0; i--) if (prices[i]! >= min && prices[i]! <= max) return prices[i]!;
  } else {
    for (let i = 0; i < prices.length; i++) if (prices[i]! >= min && prices[i]! <= max) return prices[i]!;
  }
  return NaN;
}

export function isWildcardText(text: string): boolean {
  const t = text.trim();
  return t === "" || t === "*";
}

export function clamp01(x: number): number {
  if (!Number.isFinite(x)) return 0;
  return x < 0 ? 0 : x > 1 ? 1 : x;
}
