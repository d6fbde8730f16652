/**
 * In-process engine: a purpose-built inverted index (postings in typed arrays, one compact row of attributes per
 * document) with MiniSearch's radix tree (`SearchableMap`) as the term dictionary for prefix and typo expansion.
 *
 * It computes exactly what the MiniSearch-based engine computed (docs/search.md, "Text score" and "Engine"):
 * the same expansions (exact, prefix on the last word, Levenshtein typos by word length), the same BM25+ with
 * MiniSearch's parameters and weights (k 1.2, b 0.7, d 0.5; prefix 0.375, fuzzy 0.45; field boosts from
 * settings; score × number of distinct query words matched), the same expression tree (OR of words, OR of a word's
 * synonyms, AND inside a multi-word synonym) and the same coverage score. What changed is the cost: no per-match
 * result objects, match maps or filter callbacks; filters are checked once per document on typed arrays; the best
 * `window` candidates are picked with a bounded heap instead of sorting every match.
 *
 * Everything that settings change (synonyms, stop words, typos, field boosts) is applied at query time, so
 * `applySettings` never needs a re-index.
 */
import SearchableMap from "minisearch/SearchableMap";
import { fail } from "../actors/runtime/errors.ts";
import {
  categoryKey,
  isWildcardText,
  tokenize,
  windowCandidates,
  type Candidate,
  type CandidateWindow,
  type EngineQuery,
  type SearchDoc,
  type SearchEngine,
  type StockUpdate,
  anyPriceIn,
} from "./engine.ts";
import { allowedTypos, assertSearchSettings, DEFAULT_SEARCH_SETTINGS, SEARCHABLE_FIELDS, type SearchSettings } from "./settings.ts";
import { kthLargest } from "./ranking.ts";
import { combineTextScore, fieldFactors, queryGroups, SYNONYM_FACTOR, wordQuality } from "./text-score.ts";

const NF = SEARCHABLE_FIELDS.length;
/** BM25+ parameters and expansion weights: MiniSearch's defaults, so scores match the former engine. */
const BM25_K = 1.2;
const BM25_B = 0.7;
const BM25_D = 0.5;
const PREFIX_WEIGHT = 0.375;
const FUZZY_WEIGHT = 0.45;
/** Expansion cache entries kept before the cache is dropped (it is rebuilt from the dictionary in microseconds). */
const EXPANSION_CACHE_MAX = 20_000;

export function validateSearchDoc(d: SearchDoc): void {
  if (typeof d.id !== "string" || d.id.length === 0) throw fail("validation_error", "search doc without id", {});
  if (!Number.isSafeInteger(d.priceMinor) || d.priceMinor < 0) {
    throw fail("validation_error", "priceMinor must be a non-negative integer (minor units)", { id: d.id, priceMinor: d.priceMinor });
  }
  if (d.prices !== undefined && !(Array.isArray(d.prices) && d.prices.length > 0 && d.prices.every((p) => Number.isSafeInteger(p) && p >= 0))) {
    throw fail("validation_error", "prices must be non-negative integers (minor units)", { id: d.id });
  }
  if (d.ref !== undefined && !(Number.isInteger(d.ref) && d.ref >= 0 && d.ref <= 0x7fff_ffff)) {
    throw fail("validation_error", "ref must be a non-negative 31-bit integer", { id: d.id, ref: d.ref });
  }
}

/** Documents (slots) holding one term in one field, with the term frequency; dead slots are skipped and vacuumed. */
class PostingList {
  docs = new Int32Array(4);
  tfs = new Uint16Array(4);
  /** The document's field length (unique terms), beside the posting: read in order instead of by slot. */
  lens = new Uint16Array(4);
  length = 0;
  /** Live documents in the list (the BM25 document frequency). */
  live = 0;

  push(slot: number, tf: number, len: number): void {
    if (this.length === this.docs.length) {
      const docs = new Int32Array(this.length * 2);
      docs.set(this.docs);
      this.docs = docs;
      const tfs = new Uint16Array(this.length * 2);
      tfs.set(this.tfs);
      this.tfs = tfs;
      const lens = new Uint16Array(this.length * 2);
      lens.set(this.lens);
      this.lens = lens;
    }
    this.docs[this.length] = slot;
    this.tfs[this.length] = tf > 65_535 ? 65_535 : tf;
    this.lens[this.length] = len;
    this.length++;
    this.live++;
  }

  compact(alive: Uint8Array): void {
    let w = 0;
    for (let i = 0; i < this.length; i++) {
      const d = this.docs[i]!;
      if (alive[d] === 1) {
        this.docs[w] = d;
        this.tfs[w] = this.tfs[i]!;
        this.lens[w] = this.lens[i]!;
        w++;
      }
    }
    this.length = w;
    if (this.docs.length > 16 && w < this.docs.length / 4) {
      this.docs = this.docs.slice(0, Math.max(4, w * 2));
      this.tfs = this.tfs.slice(0, Math.max(4, w * 2));
      this.lens = this.lens.slice(0, Math.max(4, w * 2));
    }
  }
}

/** One term of the dictionary: a posting list per searchable field (absent when no document has it there). */
type TermLists = Array<PostingList | undefined>;

/** A dictionary term a query word expands to, with MiniSearch's weight and our coverage quality. */
interface Expansion {
  term: number;
  weight: number;
  quality: number;
}

/** One word of the expression tree: group (query word) → alternative (word or synonym) → word. */
interface Leaf {
  group: number;
  alt: number;
  /** Index of the distinct word string (MiniSearch multiplies the score by the number of distinct words matched). */
  source: number;
  expansions: Expansion[];
}

const NO_CATEGORY_FILTER = -2;
const NO_SYNONYMS: string[][] = [];

/** A query's filters on slot attributes. */
interface SlotFilter {
  /** Allowed stores by store index; null = no store filter. */
  storeOk: Uint8Array | null;
  category: number;
  min: number;
  max: number;
  /** -1 any, 0 out of stock, 1 in stock. */
  stock: number;
}

function grow<T extends Int32Array | Uint8Array | Uint16Array | Float64Array>(a: T, min: number): T {
  if (a.length >= min) return a;
  const next = new (a.constructor as new (n: number) => T)(Math.max(min, a.length * 2, 1024));
  next.set(a);
  return next;
}

/**
 * A number that orders ids as their strings do, wherever it differs: the first 7 UTF-16 units as digits in base
 * 129 (exact in a double), 0 past the end, an ASCII unit as its code + 1, and anything from 127 up as 128 with
 * the rest cut off (two such units may differ, so nothing after them may count). Equal keys say nothing; the
 * caller then compares the strings. Catalog ids are UUIDs, so 7 hex digits (28 bits) nearly always decide.
 */
export function idOrderKey(id: string): number {
  let k = 0;
  let cut = false;
  for (let i = 0; i < 7; i++) {
    let digit = 0;
    if (!cut && i < id.length) {
      const c = id.charCodeAt(i);
      cut = c >= 127;
      digit = cut ? 128 : c + 1;
    }
    k = k * 129 + digit;
  }
  return k;
}

/** selectWindow's scratch: the matching rows and a copy of their text scores (quickselect permutes it). */
let selRows = new Int32Array(1024);
let selText = new Float64Array(1024);

/**
 * The first `window` rows (those with `raw >= 0`) ordered by text desc, raw desc, id asc, without a comparator
 * over every row: quickselect on text, then on raw among the rows tied at the text cut, then on the ids' order
 * keys among the rows tied on both (a synthetic catalog ties thousands of rows on both scores: sorting those by
 * id string was most of a query); only the kept rows are sorted with the comparator.
 */
export function selectWindow(
  rows: number,
  window: number,
  text: Float64Array,
  raw: Float64Array,
  idOf: (row: number) => string,
  keyOf: (row: number) => number = (row) => idOrderKey(idOf(row)),
  ordered = true,
): number[] {
  const byId = (a: number, b: number) => {
    const d = keyOf(a) - keyOf(b);
    if (d !== 0) return d;
    const ia = idOf(a);
    const ib = idOf(b);
    return ia < ib ? -1 : ia > ib ? 1 : 0;
  };
  const cmp = (a: number, b: number) => text[b]! - text[a]! || raw[b]! - raw[a]! || byId(a, b);
  // the matching rows and their text scores in reused scratch (a JS array of every match and a fresh copy of
  // its scores per query were garbage)
  if (selRows.length < rows) {
    selRows = new Int32Array(Math.max(rows, selRows.length * 2));
    selText = new Float64Array(selRows.length);
  }
  const matches = selRows;
  const scratch = selText;
  let m = 0;
  for (let r = 0; r < rows; r++) {
    if (raw[r]! >= 0) {
      matches[m] = r;
      scratch[m] = text[r]!;
      m++;
    }
  }
  let kept: number[];
  if (m <= window) {
    kept = new Array<number>(m);
    for (let j = 0; j < m; j++) kept[j] = matches[j]!;
  } else {
    const textCut = kthLargest(scratch, m, window);
    const above: number[] = [];
    let ties: number[] = [];
    for (let j = 0; j < m; j++) {
      const r = matches[j]!;
      if (text[r]! > textCut) above.push(r);
      else if (text[r] === textCut) ties.push(r);
    }
    let need = window - above.length;
    if (ties.length > need) {
      const rs = scratch; // free again once the text cut is known; ties.length <= m
      for (let j = 0; j < ties.length; j++) rs[j] = raw[ties[j]!]!;
      const rawCut = kthLargest(rs, ties.length, need);
      let ties2: number[] = [];
      for (const r of ties) {
        if (raw[r]! > rawCut) above.push(r);
        else if (raw[r] === rawCut) ties2.push(r);
      }
      need = window - above.length;
      if (ties2.length > need) ties2 = smallestIds(ties2, need, keyOf, byId);
      ties = ties2;
    }
    for (const r of ties) above.push(r);
    kept = above;
  }
  return ordered ? kept.sort(cmp) : kept;
}

/** The `need` rows of `rows` with the smallest ids: quickselect on the order keys, strings only at the cut. */
function smallestIds(rows: number[], need: number, keyOf: (row: number) => number, byId: (a: number, b: number) => number): number[] {
  if (need <= 0) return [];
  const keys = new Float64Array(rows.length);
  for (let j = 0; j < rows.length; j++) keys[j] = -keyOf(rows[j]!);
  const cut = -kthLargest(keys, rows.length, need);
  const out: number[] = [];
  const atCut: number[] = [];
  for (const r of rows) {
    const k = keyOf(r);
    if (k < cut) out.push(r);
    else if (k === cut) atCut.push(r);
  }
  atCut.sort(byId);
  for (let j = 0; out.length < need; j++) out.push(atCut[j]!);
  return out;
}

export class EmbeddedSearchEngine implements SearchEngine {
  readonly name = "embedded";
  private settings: SearchSettings;

  // ---- dictionary and postings
  private dict = new SearchableMap<number>();
  /** Exact lookups (the radix tree is only walked for prefix and typo expansion). */
  private termIds = new Map<string, number>();
  private terms: TermLists[] = [];
  private vocabVersion = 0;
  private expansionCache = new Map<string, Expansion[]>();
  private expansionCacheVersion = -1;

  // ---- documents, by slot
  private idToSlot = new Map<string, number>();
  private ids: string[] = [];
  /** idOrderKey of each slot's id, for the window's id tie-break without string compares. */
  private idKey = new Float64Array(0);
  /** SearchDoc.ref of each slot, -1 when the document came without one. */
  private refOf = new Int32Array(0);
  private alive = new Uint8Array(0);
  private storeOf = new Int32Array(0);
  private priceOf = new Float64Array(0);
  /** 1 when the slot's document has several prices (`SearchDoc.prices`, in `pricesOf`): the price filter reads them. */
  private multiPrice = new Uint8Array(0);
  private pricesOf: Array<readonly number[] | undefined> = [];
  /** 0 removed, 1 live and out of stock, 2 live and in stock: the query's first check is one read. */
  private liveStock = new Uint8Array(0);
  private categoryOf = new Int32Array(0);
  /** Unique terms per (slot, field): MiniSearch's field length. */
  private fieldLen = new Uint16Array(0);
  /** (term × 8 + field) of every posting of a slot, so a removal can keep document frequencies exact. */
  private docTerms: Array<Int32Array | null> = [];
  private slots = 0;
  private freeSlots: number[] = [];
  private pendingFree: number[] = [];
  private docCount = 0;
  private fieldLenSum = new Float64Array(NF);
  private totalPostings = 0;
  private deadPostings = 0;
  /** Slots sorted by id (wildcard listing), rebuilt lazily after a change. */
  private byId: Int32Array | null = null;

  private storeIndex = new Map<string, number>();
  private storeMasks = new WeakMap<readonly string[], { stores: number; mask: Uint8Array | null }>();
  private categoryIndex = new Map<string, number>();

  // ---- per-query scratch (reused: one query runs at a time, queries are synchronous)
  private rejected = new Int32Array(1024);
  private rawBuf = new Float64Array(1024);
  private covBuf = new Float64Array(1024);
  private textBuf = new Float64Array(1024);
  private rowOf = new Int32Array(0);
  private rowSlot = new Int32Array(1024);
  private rowScore = new Float64Array(1024);
  private rowQual = new Float64Array(1024);

  constructor(settings: SearchSettings = DEFAULT_SEARCH_SETTINGS) {
    assertSearchSettings(settings);
    this.settings = settings;
  }

  // ------------------------------------------------------------------------------------------ writes

  async upsert(docs: SearchDoc[]): Promise<void> {
    for (const d of docs) validateSearchDoc(d);
    for (const d of docs) {
      const old = this.idToSlot.get(d.id);
      if (old !== undefined) this.removeSlot(old);
      this.addDoc(d);
    }
    this.maybeVacuum();
  }

  async remove(ids: string[]): Promise<void> {
    for (const id of ids) {
      const slot = this.idToSlot.get(id);
      if (slot !== undefined) this.removeSlot(slot);
    }
    this.maybeVacuum();
  }

  /** One byte per document: the postings, vocabulary and id order are untouched, so nothing else is invalidated. */
  async setStock(updates: readonly StockUpdate[]): Promise<void> {
    for (const u of updates) {
      const slot = this.idToSlot.get(u.id);
      if (slot !== undefined && this.liveStock[slot] !== 0) this.liveStock[slot] = u.inStock ? 2 : 1;
    }
  }

  async applySettings(s: SearchSettings): Promise<void> {
    assertSearchSettings(s);
    this.settings = s;
    this.expansionCache.clear();
    this.synonymIndex = null;
    this.fieldTermsCache = null;
  }

  async count(): Promise<number> {
    return this.docCount;
  }

  async clear(): Promise<void> {
    this.dict = new SearchableMap<number>();
    this.termIds = new Map();
    this.terms = [];
    this.vocabVersion++;
    this.expansionCache.clear();
    this.idToSlot = new Map();
    this.storeIndex = new Map();
    this.categoryIndex = new Map();
    this.storeMasks = new WeakMap();
    this.ids = [];
    this.idKey = new Float64Array(0);
    this.refOf = new Int32Array(0);
    this.alive = new Uint8Array(0);
    this.storeOf = new Int32Array(0);
    this.priceOf = new Float64Array(0);
    this.multiPrice = new Uint8Array(0);
    this.pricesOf = [];
    this.liveStock = new Uint8Array(0);
    this.categoryOf = new Int32Array(0);
    this.fieldLen = new Uint16Array(0);
    this.docTerms = [];
    this.slots = 0;
    this.freeSlots = [];
    this.pendingFree = [];
    this.docCount = 0;
    this.fieldLenSum = new Float64Array(NF);
    this.totalPostings = 0;
    this.deadPostings = 0;
    this.byId = null;
    this.rowOf = new Int32Array(0);
  }

  private intern(map: Map<string, number>, key: string): number {
    let i = map.get(key);
    if (i === undefined) map.set(key, (i = map.size));
    return i;
  }

  private allocSlot(): number {
    const reused = this.freeSlots.pop();
    if (reused !== undefined) return reused;
    const slot = this.slots++;
    if (slot >= this.alive.length) {
      const n = Math.max(1024, this.alive.length * 2);
      this.alive = grow(this.alive, n);
      this.idKey = grow(this.idKey, n);
      this.refOf = grow(this.refOf, n);
      this.storeOf = grow(this.storeOf, n);
      this.priceOf = grow(this.priceOf, n);
      this.multiPrice = grow(this.multiPrice, n);
      this.liveStock = grow(this.liveStock, n);
      this.categoryOf = grow(this.categoryOf, n);
      this.fieldLen = grow(this.fieldLen, n * NF);
      this.rowOf = grow(this.rowOf, n);
    }
    return slot;
  }

  private termId(term: string): number {
    const found = this.termIds.get(term);
    if (found !== undefined) return found;
    const id = this.terms.length;
    this.terms.push(new Array<PostingList | undefined>(NF));
    this.termIds.set(term, id);
    this.dict.set(term, id);
    this.vocabVersion++;
    return id;
  }

  private addDoc(d: SearchDoc): void {
    const slot = this.allocSlot();
    this.idToSlot.set(d.id, slot);
    this.ids[slot] = d.id;
    this.idKey[slot] = idOrderKey(d.id);
    this.refOf[slot] = d.ref ?? -1;
    this.alive[slot] = 1;
    this.storeOf[slot] = this.intern(this.storeIndex, d.storeSlug);
    this.priceOf[slot] = d.priceMinor;
    const several = d.prices !== undefined && !(d.prices.length === 1 && d.prices[0] === d.priceMinor);
    this.multiPrice[slot] = several ? 1 : 0;
    this.pricesOf[slot] = several ? [...d.prices!] : undefined;
    this.liveStock[slot] = d.inStock ? 2 : 1;
    const cat = categoryKey(d.category);
    this.categoryOf[slot] = cat === null ? -1 : this.intern(this.categoryIndex, cat);
    const entries: number[] = [];
    for (let f = 0; f < NF; f++) {
      const field = SEARCHABLE_FIELDS[f]!;
      const v = field === "tags" ? d.tags.join(" ") : (d[field] ?? "");
      const counts = new Map<string, number>();
      for (const t of tokenize(String(v))) counts.set(t, (counts.get(t) ?? 0) + 1);
      const len = counts.size > 65_535 ? 65_535 : counts.size;
      this.fieldLen[slot * NF + f] = len;
      this.fieldLenSum[f] += len;
      for (const [t, tf] of counts) {
        const id = this.termId(t);
        const lists = this.terms[id]!;
        (lists[f] ??= new PostingList()).push(slot, tf, len);
        entries.push(id * 8 + f);
      }
    }
    this.totalPostings += entries.length;
    this.docTerms[slot] = Int32Array.from(entries);
    this.docCount++;
    this.byId = null;
  }

  private removeSlot(slot: number): void {
    const id = this.ids[slot]!;
    this.idToSlot.delete(id);
    this.ids[slot] = "";
    this.alive[slot] = 0;
    this.liveStock[slot] = 0;
    this.multiPrice[slot] = 0;
    this.pricesOf[slot] = undefined;
    for (let f = 0; f < NF; f++) this.fieldLenSum[f] -= this.fieldLen[slot * NF + f]!;
    const entries = this.docTerms[slot];
    if (entries) {
      for (let i = 0; i < entries.length; i++) {
        const e = entries[i]!;
        this.terms[e >> 3]![e & 7]!.live--;
      }
      this.deadPostings += entries.length;
    }
    this.docTerms[slot] = null;
    this.pendingFree.push(slot);
    this.docCount--;
    this.byId = null;
  }

  /** Drops dead postings once they are a quarter of all postings; their slots become reusable only then. */
  private maybeVacuum(): void {
    if (this.deadPostings < 10_000 || this.deadPostings < this.totalPostings / 4) return;
    for (const lists of this.terms) for (const l of lists) l?.compact(this.alive);
    this.totalPostings -= this.deadPostings;
    this.deadPostings = 0;
    for (const s of this.pendingFree) this.freeSlots.push(s);
    this.pendingFree = [];
  }

  // ------------------------------------------------------------------------------------------ query

  async query(q: EngineQuery): Promise<Candidate[]> {
    return windowCandidates(this.queryWindow(q));
  }

  /** The window's arrays, reused from query to query (see CandidateWindow). */
  private out: CandidateWindow = { length: 0, ids: [], textScores: new Float64Array(1024), refs: new Int32Array(1024) };

  /** Only `length` is reset: entries past it are stale and never read (truncating `ids` would reallocate it). */
  private emptyWindow(): CandidateWindow {
    this.out.length = 0;
    return this.out;
  }

  /** Appends a slot to the window being built. */
  private emit(slot: number, textScore: number): void {
    const o = this.out;
    const i = o.length++;
    if (i === o.refs.length) {
      o.refs = grow(o.refs, i * 2);
      o.textScores = grow(o.textScores, i * 2);
    }
    o.ids[i] = this.ids[slot]!;
    o.textScores[i] = textScore;
    o.refs[i] = this.refOf[slot]!;
  }

  queryWindow(q: EngineQuery): CandidateWindow {
    this.emptyWindow();
    const window = Math.max(0, Math.floor(q.window));
    if (window === 0 || (q.storeSlugs !== undefined && q.storeSlugs.length === 0)) return this.out;
    const filter = this.filterFor(q);
    if (filter === null) return this.out;
    if (isWildcardText(q.text)) return this.wildcard(filter, window);

    const s = this.settings;
    const groups = queryGroups(tokenize(q.text), s, (w) => this.synonymsOf(w));
    if (groups.length === 0) return this.out;

    // leaves of the expression tree, with their dictionary expansions
    const leaves: Leaf[] = [];
    const sources = new Map<string, number>();
    groups.forEach((g, gi) =>
      g.alternatives.forEach((alt, ai) => {
        for (const word of alt) {
          let source = sources.get(word);
          if (source === undefined) sources.set(word, (source = sources.size));
          leaves.push({ group: gi, alt: ai, source, expansions: this.expand(word, ai === 0 && g.prefix) });
        }
      }),
    );
    const L = leaves.length;
    const { factorOf, boostOf } = this.fieldTerms(s);
    const avgLen: number[] = [];
    for (let f = 0; f < NF; f++) avgLen.push(this.docCount > 0 ? this.fieldLenSum[f]! / this.docCount : 0);

    // accumulate per (document, leaf): BM25+ score and best quality × field factor
    // rowOf per slot: 0 not seen yet, -1 filtered out, row + 1; reset to 0 right after the pass (cheaper than an
    // epoch stamp read on every posting)
    const rowOf = this.rowOf;
    let rejected = this.rejected;
    let nRejected = 0;
    const N = this.docCount;
    // the filter, inlined below (checked once per document, on typed arrays)
    const { liveStock, storeOf, priceOf, multiPrice, pricesOf, categoryOf } = this;
    const { storeOk, category, min, max, stock } = filter;
    const priceFiltered = min > -Infinity || max < Infinity;
    const wantStock = stock + 1;
    let rows = 0;
    let rowScore = this.rowScore;
    let rowQual = this.rowQual;
    let rowSlot = this.rowSlot;
    for (let li = 0; li < L; li++) {
      for (const ex of leaves[li]!.expansions) {
        const lists = this.terms[ex.term]!;
        for (let f = 0; f < NF; f++) {
          const list = lists[f];
          if (list === undefined || list.live === 0) continue;
          const idf = Math.log(1 + (N - list.live + 0.5) / (list.live + 0.5));
          const w = ex.weight * boostOf[f]! * idf;
          const qf = ex.quality * factorOf[f]!;
          const norm = BM25_K * (1 - BM25_B);
          const lenCoef = (BM25_K * BM25_B) / (avgLen[f]! || 1);
          const docs = list.docs;
          const tfs = list.tfs;
          const lens = list.lens;
          for (let i = 0, n = list.length; i < n; i++) {
            const slot = docs[i]!;
            let r = rowOf[slot]! - 1;
            if (r === -2) continue;
            if (r === -1) {
              if (
                liveStock[slot] === 0 ||
                (stock >= 0 && liveStock[slot] !== wantStock) ||
                (storeOk !== null && storeOk[storeOf[slot]!] !== 1) ||
                (priceFiltered && (multiPrice[slot] === 1 ? !anyPriceIn(pricesOf[slot]!, min, max) : priceOf[slot]! < min || priceOf[slot]! > max)) ||
                (category !== NO_CATEGORY_FILTER && categoryOf[slot] !== category)
              ) {
                rowOf[slot] = -1;
                if (nRejected === rejected.length) rejected = this.rejected = grow(rejected, nRejected * 2);
                rejected[nRejected++] = slot;
                continue;
              }
              r = rows++;
              rowOf[slot] = r + 1;
              if (rows > rowSlot.length || rows * L > rowScore.length) {
                rowSlot = this.rowSlot = grow(rowSlot, rows * 2);
                rowScore = this.rowScore = grow(rowScore, rows * 2 * L);
                rowQual = this.rowQual = grow(rowQual, rows * 2 * L);
              }
              rowSlot[r] = slot;
              for (let j = r * L, end = j + L; j < end; j++) {
                rowScore[j] = 0;
                rowQual[j] = 0;
              }
            }
            const tf = tfs[i]!;
            const k = r * L + li;
            rowScore[k] += w * (BM25_D + (tf * (BM25_K + 1)) / (tf + norm + lenCoef * lens[i]!));
            if (qf > rowQual[k]!) rowQual[k] = qf;
          }
        }
      }
    }
    for (let r = 0; r < rows; r++) rowOf[rowSlot[r]!] = 0;
    for (let j = 0; j < nRejected; j++) rowOf[rejected[j]!] = 0;
    if (rows === 0) return this.out;

    // evaluate the tree per document: raw score (MiniSearch's) and coverage
    const G = groups.length;
    if (this.rawBuf.length < rows) {
      this.rawBuf = new Float64Array(rows * 2);
      this.covBuf = new Float64Array(rows * 2);
      this.textBuf = new Float64Array(rows * 2);
    }
    // reused between queries (only the first `rows` entries are written and read): fresh arrays of up to 40k
    // doubles per query were garbage the collector then had to clear
    const raw = this.rawBuf;
    const cov = this.covBuf;
    const altStart: number[] = []; // first leaf of each (group, alt) run, in leaf order
    for (let li = 0; li < L; li++) if (li === 0 || leaves[li]!.alt !== leaves[li - 1]!.alt || leaves[li]!.group !== leaves[li - 1]!.group) altStart.push(li);
    altStart.push(L);
    const S = sources.size;
    const seenSource = new Uint8Array(S);
    const groupBest = new Float64Array(G);
    let best = 0;
    let matched = 0;
    // The usual query (no synonyms, no repeated word) has one leaf per group: the same arithmetic, in the same
    // order, without the tree walk.
    const oneLeafPerGroup = L === G && S === L;
    for (let r = 0; oneLeafPerGroup && r < rows; r++) {
      const base = r * L;
      let score = 0;
      let distinct = 0;
      let c = 0;
      for (let li = 0; li < L; li++) {
        const v = rowScore[base + li]!;
        if (v !== 0) {
          score += v;
          distinct++;
        }
        c += rowQual[base + li]!;
      }
      if (distinct === 0) {
        raw[r] = -1;
        continue;
      }
      matched++;
      raw[r] = score * distinct;
      if (raw[r]! > best) best = raw[r]!;
      cov[r] = c / G;
    }
    for (let r = 0; !oneLeafPerGroup && r < rows; r++) {
      const base = r * L;
      let score = 0;
      let distinct = 0;
      // plain loops: a native fill() call per row showed up as a tenth of a query in profiles
      for (let j = 0; j < S; j++) seenSource[j] = 0;
      for (let g = 0; g < G; g++) groupBest[g] = 0;
      for (let a = 0; a + 1 < altStart.length; a++) {
        const from = altStart[a]!;
        const to = altStart[a + 1]!;
        const leaf = leaves[from]!;
        let all = true;
        let sum = 0;
        let minQ = Infinity;
        for (let li = from; li < to; li++) {
          const v = rowScore[base + li]!;
          if (v === 0) all = false;
          sum += v;
          const qv = rowQual[base + li]!;
          if (qv < minQ) minQ = qv;
        }
        // coverage: a multi-word synonym counts as well as its weakest word; synonyms × 0.9
        const c = minQ * (leaf.alt === 0 ? 1 : SYNONYM_FACTOR);
        if (c > groupBest[leaf.group]!) groupBest[leaf.group] = c;
        if (!all) continue;
        score += sum;
        for (let li = from; li < to; li++) {
          const src = leaves[li]!.source;
          if (seenSource[src] === 0) {
            seenSource[src] = 1;
            distinct++;
          }
        }
      }
      if (distinct === 0) {
        raw[r] = -1; // matched only part of a multi-word synonym: not a result
        continue;
      }
      matched++;
      raw[r] = score * distinct;
      if (raw[r]! > best) best = raw[r]!;
      let c = 0;
      for (let g = 0; g < G; g++) c += groupBest[g]!;
      cov[r] = c / G;
    }
    if (matched === 0) return this.out;

    // best `window` by textScore, then raw score, then id
    const ids = this.ids;
    const text = this.textBuf;
    for (let r = 0; r < rows; r++) if (raw[r]! >= 0) text[r] = combineTextScore(cov[r]!, raw[r]!, best);
    const idKey = this.idKey;
    const picked = selectWindow(rows, window, text, raw, (r) => ids[rowSlot[r]!]!, (r) => idKey[rowSlot[r]!]!, q.unordered !== true);
    for (const r of picked) this.emit(rowSlot[r]!, text[r]!);
    return this.out;
  }

  /** Per-field coverage factors and BM25 boosts, per settings object. */
  private fieldTermsCache: { settings: SearchSettings; factorOf: number[]; boostOf: number[] } | null = null;
  private fieldTerms(s: SearchSettings): { factorOf: number[]; boostOf: number[] } {
    const hit = this.fieldTermsCache;
    if (hit !== null && hit.settings === s) return hit;
    const factors = fieldFactors(s);
    const terms = { settings: s, factorOf: SEARCHABLE_FIELDS.map((f) => factors[f]), boostOf: SEARCHABLE_FIELDS.map((f) => s.fieldWeights[f] || 1) };
    this.fieldTermsCache = terms;
    return terms;
  }

  /** The filter of a query on slot attributes, or null when nothing can pass. */
  private filterFor(q: EngineQuery): SlotFilter | null {
    let storeOk: Uint8Array | null = null;
    if (q.storeSlugs !== undefined) {
      storeOk = this.storeMask(q.storeSlugs);
      if (storeOk === null) return null;
    }
    let category = NO_CATEGORY_FILTER;
    if (q.category !== undefined) {
      const key = categoryKey(q.category);
      const i = key === null ? undefined : this.categoryIndex.get(key);
      if (i === undefined) return null;
      category = i;
    }
    return {
      storeOk,
      category,
      min: q.minPriceMinor ?? -Infinity,
      max: q.maxPriceMinor ?? Infinity,
      stock: q.inStock === undefined ? -1 : q.inStock ? 1 : 0,
    };
  }

  /**
   * The allow-list as a bitset by store index. Callers that keep the same list between changes (the search
   * service caches it per filter shape) get the same bitset back without re-reading it.
   */
  private storeMask(slugs: readonly string[]): Uint8Array | null {
    const hit = this.storeMasks.get(slugs);
    if (hit && hit.stores === this.storeIndex.size) return hit.mask;
    const mask = new Uint8Array(this.storeIndex.size);
    let any = false;
    for (const slug of slugs) {
      const i = this.storeIndex.get(slug);
      if (i !== undefined) {
        mask[i] = 1;
        any = true;
      }
    }
    const out = any ? mask : null;
    this.storeMasks.set(slugs, { stores: this.storeIndex.size, mask: out });
    return out;
  }

  private passes(f: SlotFilter, slot: number): boolean {
    return (
      this.alive[slot] === 1 &&
      (f.storeOk === null || f.storeOk[this.storeOf[slot]!] === 1) &&
      (f.stock < 0 || this.liveStock[slot] === f.stock + 1) &&
      (this.multiPrice[slot] === 1 ? anyPriceIn(this.pricesOf[slot]!, f.min, f.max) : this.priceOf[slot]! >= f.min && this.priceOf[slot]! <= f.max) &&
      (f.category === NO_CATEGORY_FILTER || this.categoryOf[slot] === f.category)
    );
  }

  private wildcard(filter: SlotFilter, window: number): CandidateWindow {
    if (this.byId === null) {
      const live: number[] = [];
      for (const [, slot] of this.idToSlot) live.push(slot);
      const ids = this.ids;
      live.sort((a, b) => (ids[a]! < ids[b]! ? -1 : ids[a]! > ids[b]! ? 1 : 0));
      this.byId = Int32Array.from(live);
    }
    for (let i = 0; i < this.byId.length && this.out.length < window; i++) {
      const slot = this.byId[i]!;
      if (this.passes(filter, slot)) this.emit(slot, 0);
    }
    return this.out;
  }

  /**
   * Dictionary terms a query word matches, as MiniSearch expanded them: the word itself (weight 1), with prefix
   * every longer term starting with it (0.375 × |t| / (|t| + 0.3 × extra letters)), and terms within the allowed
   * typos (0.45 × |t| / (|t| + distance)) that are not prefix matches. Cached per word until the vocabulary or
   * the settings change.
   */
  private expand(word: string, prefix: boolean): Expansion[] {
    const s = this.settings;
    const typos = allowedTypos(word, s);
    if (this.expansionCacheVersion !== this.vocabVersion || this.expansionCache.size > EXPANSION_CACHE_MAX) {
      this.expansionCache.clear();
      this.expansionCacheVersion = this.vocabVersion;
    }
    const key = `${prefix ? "p" : "x"}${typos}:${word}`;
    const cached = this.expansionCache.get(key);
    if (cached) return cached;
    const out: Expansion[] = [];
    const exact = this.termIds.get(word);
    if (exact !== undefined) out.push({ term: exact, weight: 1, quality: 1 });
    const prefixed = new Set<string>();
    if (prefix) {
      for (const [term, id] of this.dict.atPrefix(word)) {
        const distance = term.length - word.length;
        if (!distance) continue;
        prefixed.add(term);
        out.push({ term: id, weight: (PREFIX_WEIGHT * term.length) / (term.length + 0.3 * distance), quality: wordQuality(word, term, true, s) });
      }
    }
    if (typos > 0) {
      for (const [term, [id, distance]] of this.dict.fuzzyGet(word, typos)) {
        if (!distance || prefixed.has(term)) continue;
        out.push({ term: id, weight: (FUZZY_WEIGHT * term.length) / (term.length + distance), quality: wordQuality(word, term, prefix, s) });
      }
    }
    this.expansionCache.set(key, out);
    return out;
  }

  /** Synonyms by the tokenized key, built once per settings object (in the settings' entry order). */
  private synonymIndex: { synonyms: SearchSettings["synonyms"]; byWord: Map<string, string[][]> } | null = null;
  private synonymsOf(word: string): string[][] {
    const synonyms = this.settings.synonyms;
    if (this.synonymIndex === null || this.synonymIndex.synonyms !== synonyms) {
      const byWord = new Map<string, string[][]>();
      for (const [key, values] of Object.entries(synonyms)) {
        const k = tokenize(key).join(" ");
        let list = byWord.get(k);
        if (list === undefined) byWord.set(k, (list = []));
        for (const v of values) list.push(tokenize(v));
      }
      this.synonymIndex = { synonyms, byWord };
    }
    return this.synonymIndex.byWord.get(word) ?? NO_SYNONYMS;
  }
}

export function createEmbeddedEngine(settings: SearchSettings = DEFAULT_SEARCH_SETTINGS): SearchEngine {
  return new EmbeddedSearchEngine(settings);
}
