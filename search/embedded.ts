/**
 * In-process engine: a purpose-built inverted index (postings in typed arrays, one compact row of attributes per
 * document) with MiniSearch's radix tree (`SearchableMap`) as the term dictionary for prefix and typo expansion.
 *
 * It computes exactly what the MiniSearch-based engine computed (docs/search.md, "Text score" and "Engine"):
 * the same expansions (exact, prefix on the last word, typos by word length), the same BM25+ with
 * MiniSearch's parameters and weights (k 1.2, b 0.7, d 0.5; prefix 0.375, fuzzy 0.45; field boosts from
 * settings; score × number of distinct query words matched), the same expression tree (OR of words, OR of a word's
 * synonyms, AND inside a multi-word synonym) and the same coverage score. What changed is the cost: no per-match
 * result objects, match maps or filter callbacks; filters are checked once per document on typed arrays; the best
 * `window` candidates are picked with a bounded heap instead of sorting every match. A query without synonyms skips,
 * exactly, the documents that only its low-quality lists hold when they can enter neither the window nor the best
 * engine score (`prunedPass`): the answers are the same to the last bit.
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
import { fuzzyOsa, typosCounted } from "./fuzzy.ts";
import { kthLargest } from "./ranking.ts";
import { combineTextScore, COVERAGE_SHARE, fieldFactors, queryGroups, SYNONYM_FACTOR, wordQuality } from "./text-score.ts";

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
  if (d.refGen !== undefined && !(Number.isInteger(d.refGen) && d.refGen >= 0 && d.refGen <= 0x7fff_ffff)) {
    throw fail("validation_error", "refGen must be a non-negative 31-bit integer", { id: d.id, refGen: d.refGen });
  }
}

/**
 * The embedded engine's window (CandidateWindow): parallel arrays reused from query to query, the slot of each
 * entry, and `ids` filled from the slots on first read only: ranking from the columns checks refs by generation
 * (`gens`) and never reads them, and reading 1,000 ids by slot was a cache miss each.
 */
class SlotWindow implements CandidateWindow {
  length = 0;
  textScores = new Float64Array(1024);
  refs = new Int32Array(1024);
  gens = new Int32Array(1024);
  gensOwner = 0;
  slots = new Int32Array(1024);
  private idList: string[] = [];
  /** Entries of idList filled for this query (reset by `empty`). */
  private idsFilled = 0;
  constructor(private readonly idOf: (slot: number) => string) {}

  empty(): void {
    this.length = 0;
    this.idsFilled = 0;
  }

  get ids(): string[] {
    const list = this.idList;
    for (let i = this.idsFilled; i < this.length; i++) list[i] = this.idOf(this.slots[i]!);
    this.idsFilled = this.length;
    return list;
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
  /**
   * The largest tf and the shortest field length ever pushed: with them a list's largest BM25+ term is bounded
   * (query pruning, EmbeddedSearchEngine.prunedPass). Removals and compaction leave them as they are (still bounds).
   */
  maxTf = 0;
  minLen = 65_535;

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
    const t = tf > 65_535 ? 65_535 : tf;
    this.docs[this.length] = slot;
    this.tfs[this.length] = t;
    this.lens[this.length] = len;
    if (t > this.maxTf) this.maxTf = t;
    if (len < this.minLen) this.minLen = len;
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

/** One posting list of a query leaf with its per-query BM25 terms (see scanList). */
interface ListPass {
  li: number;
  list: PostingList;
  /** Expansion weight × field boost × idf. */
  w: number;
  /** Expansion quality × field factor: what a match here gives the coverage. */
  qf: number;
  lenCoef: number;
}

/** scanList modes. */
const SCAN_ALL = 0;
const SCAN_KNOWN = 1;
const SCAN_NEW = 2;

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
  /**
   * Per slot, side by side: SearchDoc.ref (-1 when the document came without one) and SearchDoc.refGen (-1 when
   * it came without one or from other columns than `genOwner`): the window reads both with one cache miss.
   */
  private refGen = new Int32Array(0);
  /** The SearchDoc.refOwner of every document with a refGen: 0 none yet, -1 when documents came from several. */
  private genOwner = 0;
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
  /** Live slots per store index, for a wildcard that wants every match (built on demand, dropped with byId). */
  private byStore: Int32Array[] | null = null;

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
  private nRows = 0;
  private nRejected = 0;
  private lbBuf = new Float64Array(1024);
  /**
   * Exact dynamic pruning of the postings pass (prunedPass); on by default. Off only to compare against (tests,
   * benchmarks): the answers are the same either way.
   */
  pruning = true;
  /** Queries whose postings pass skipped documents, and those of them that then had to score those after all. */
  prunedQueries = 0;
  fallbacks = 0;

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

  /** An empty twin a reindex builds in beside this engine (SearchEngine.fresh; audit Q-2). */
  fresh(settings: SearchSettings): EmbeddedSearchEngine {
    const e = new EmbeddedSearchEngine(settings);
    e.pruning = this.pruning;
    return e;
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
    this.refGen = new Int32Array(0);
    this.genOwner = 0;
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
    this.byStore = null;
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
      this.refGen = grow(this.refGen, 2 * n);
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
    this.refGen[2 * slot] = d.ref ?? -1;
    let gen = -1;
    if (d.refGen !== undefined && d.ref !== undefined && d.refOwner !== undefined && d.refOwner > 0) {
      if (this.genOwner === 0) this.genOwner = d.refOwner;
      if (this.genOwner === d.refOwner) gen = d.refGen;
      else this.genOwner = -1; // documents of two columns: no generation is trusted any more (until clear)
    }
    this.refGen[2 * slot + 1] = gen;
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
    this.byStore = null;
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
    this.byStore = null;
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
  private out = new SlotWindow((slot) => this.ids[slot]!);

  /** Only `length` is reset: entries past it are stale and never read (truncating `ids` would reallocate it). */
  private emptyWindow(): CandidateWindow {
    this.out.empty();
    this.out.gensOwner = this.genOwner;
    return this.out;
  }

  /** Appends a slot to the window being built. */
  private emit(slot: number, textScore: number): void {
    const o = this.out;
    const i = o.length++;
    if (i === o.refs.length) {
      o.refs = grow(o.refs, i * 2);
      o.gens = grow(o.gens, i * 2);
      o.slots = grow(o.slots, i * 2);
      o.textScores = grow(o.textScores, i * 2);
    }
    o.slots[i] = slot;
    o.textScores[i] = textScore;
    o.refs[i] = this.refGen[2 * slot]!;
    o.gens[i] = this.refGen[2 * slot + 1]!;
  }

  queryWindow(q: EngineQuery): CandidateWindow {
    this.emptyWindow();
    const window = Math.max(0, Math.floor(q.window));
    if (window === 0 || (q.storeSlugs !== undefined && q.storeSlugs.length === 0)) return this.out;
    const filter = this.filterFor(q);
    if (filter === null) return this.out;
    if (isWildcardText(q.text)) return this.wildcard(filter, window);

    const s = this.settings;
    const groups = queryGroups(tokenize(q.text), s, (w) => this.synonymsOf(w), this.synonymKeyWords());
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

    // the posting lists of each leaf, in the order their scores are summed (expansion, then field)
    const N = this.docCount;
    const G = groups.length;
    const S = sources.size;
    const leafLists: ListPass[][] = [];
    for (let li = 0; li < L; li++) {
      const passes: ListPass[] = [];
      for (const ex of leaves[li]!.expansions) {
        const lists = this.terms[ex.term]!;
        for (let f = 0; f < NF; f++) {
          const list = lists[f];
          if (list === undefined || list.live === 0) continue;
          const idf = Math.log(1 + (N - list.live + 0.5) / (list.live + 0.5));
          passes.push({ li, list, w: ex.weight * boostOf[f]! * idf, qf: ex.quality * factorOf[f]!, lenCoef: (BM25_K * BM25_B) / (avgLen[f]! || 1) });
        }
      }
      leafLists.push(passes);
    }

    // accumulate per (document, leaf): BM25+ score and best quality × field factor (scanList)
    this.nRows = 0;
    this.nRejected = 0;
    // The usual query (no synonyms, no repeated word) has one leaf per group.
    const oneLeafPerGroup = L === G && S === L;
    const prune = oneLeafPerGroup && this.pruning;
    const pruning = prune ? this.prunedPass(leafLists, filter, L, window) : null;
    if (!prune) for (const passes of leafLists) for (const lp of passes) this.scanList(lp, SCAN_ALL, 0, filter, L);
    let rows = this.nRows;
    if (rows === 0) {
      this.resetRows();
      return this.out;
    }

    // evaluate the tree per document: raw score (MiniSearch's) and coverage
    if (this.rawBuf.length < rows) {
      this.rawBuf = new Float64Array(rows * 2);
      this.covBuf = new Float64Array(rows * 2);
      this.textBuf = new Float64Array(rows * 2);
    }
    let best = this.evalRows(0, rows, 0, leaves, G, S, oneLeafPerGroup);
    if (pruning !== null && !(pruning.skippedRawBound * (1 + 1e-9) < best)) {
      // a document the pruned lists alone hold might have the best engine score, which every text score is
      // normalised by: score those documents too (they cannot enter the window, but the best must be exact)
      const base = rows;
      for (let li = 0; li < L; li++) for (let j = pruning.from[li]!; j < leafLists[li]!.length; j++) this.scanList(leafLists[li]![j]!, SCAN_NEW, base, filter, L);
      rows = this.nRows;
      if (rows > base) {
        if (this.rawBuf.length < rows) {
          const grownRaw = new Float64Array(rows * 2);
          grownRaw.set(this.rawBuf.subarray(0, base));
          const grownCov = new Float64Array(rows * 2);
          grownCov.set(this.covBuf.subarray(0, base));
          this.rawBuf = grownRaw;
          this.covBuf = grownCov;
          this.textBuf = new Float64Array(rows * 2);
        }
        best = this.evalRows(base, rows, best, leaves, G, S, oneLeafPerGroup);
      }
      this.fallbacks++;
    }
    this.resetRows();
    const raw = this.rawBuf;
    const cov = this.covBuf;
    let matched = 0;
    for (let r = 0; r < rows; r++) if (raw[r]! >= 0) matched++;
    if (matched === 0) return this.out;

    // best `window` by textScore, then raw score, then id
    const ids = this.ids;
    const text = this.textBuf;
    for (let r = 0; r < rows; r++) if (raw[r]! >= 0) text[r] = combineTextScore(cov[r]!, raw[r]!, best);
    const idKey = this.idKey;
    const rowSlot = this.rowSlot;
    const picked = selectWindow(rows, window, text, raw, (r) => ids[rowSlot[r]!]!, (r) => idKey[rowSlot[r]!]!, q.unordered !== true);
    for (const r of picked) this.emit(rowSlot[r]!, text[r]!);
    return this.out;
  }

  /**
   * Adds one posting list's BM25+ scores and coverage qualities to the rows of the documents in it (row = the
   * document's place in the per-query accumulators; rowOf per slot: 0 not seen yet, -1 filtered out, row + 1,
   * reset by resetRows). SCAN_ALL gives every unseen document that passes the filter a row; SCAN_KNOWN only adds
   * to documents that already have one (the pruned lists: a document only they hold cannot enter the window);
   * SCAN_NEW gives unseen documents rows and adds only to rows from `base` on (the pruned lists again, for the
   * documents SCAN_KNOWN skipped). The filter is checked once per document, on typed arrays.
   */
  private scanList(lp: ListPass, mode: number, base: number, filter: SlotFilter, L: number): void {
    const rowOf = this.rowOf;
    let rejected = this.rejected;
    let nRejected = this.nRejected;
    const { liveStock, storeOf, priceOf, multiPrice, pricesOf, categoryOf } = this;
    const { storeOk, category, min, max, stock } = filter;
    const priceFiltered = min > -Infinity || max < Infinity;
    const wantStock = stock + 1;
    let rows = this.nRows;
    let rowScore = this.rowScore;
    let rowQual = this.rowQual;
    let rowSlot = this.rowSlot;
    const list = lp.list;
    const li = lp.li;
    const w = lp.w;
    const qf = lp.qf;
    const norm = BM25_K * (1 - BM25_B);
    const lenCoef = lp.lenCoef;
    const docs = list.docs;
    const tfs = list.tfs;
    const lens = list.lens;
    for (let i = 0, n = list.length; i < n; i++) {
      const slot = docs[i]!;
      let r = rowOf[slot]! - 1;
      if (r === -2) continue;
      if (r === -1) {
        if (mode === SCAN_KNOWN) continue;
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
      } else if (r < base) continue;
      const tf = tfs[i]!;
      const k = r * L + li;
      rowScore[k] += w * (BM25_D + (tf * (BM25_K + 1)) / (tf + norm + lenCoef * lens[i]!));
      if (qf > rowQual[k]!) rowQual[k] = qf;
    }
    this.nRows = rows;
    this.nRejected = nRejected;
  }

  /** Clears rowOf for every document the query's scans touched. */
  private resetRows(): void {
    const rowOf = this.rowOf;
    const rowSlot = this.rowSlot;
    for (let r = 0, n = this.nRows; r < n; r++) rowOf[rowSlot[r]!] = 0;
    const rejected = this.rejected;
    for (let j = 0, n = this.nRejected; j < n; j++) rowOf[rejected[j]!] = 0;
  }

  /**
   * The postings pass of a query with one leaf per group, with exact dynamic pruning (MaxScore-like, over the
   * coverage part of the text score), or null when it does not apply (then the caller scans every list).
   *
   * The window is the best `window` documents by textScore = 0.9 × coverage + 0.1 × raw / best (clamped), where
   * coverage = Σ per leaf of the best quality × field factor among the lists holding the document, / G. Phase 1
   * scans, per leaf, its lists up to the last one with the leaf's top quality × factor (the exact title match,
   * usually). Every row's partial coverage is a lower bound of its final one, so 0.9 × partial coverage is a lower
   * bound of its text score. A document the leaves' remaining lists alone hold has coverage at most
   * Σ (the largest quality × factor among them) / G and a relative part at most 0.1: when at least `window` rows
   * are already strictly above that bound, no such document can enter the window, and those lists are scanned
   * only for the rows they hold (SCAN_KNOWN: no filter check, no row, no tree evaluation, no selection for the
   * others). Per leaf the remaining lists are a suffix of its lists in their order, the lists before it are scanned
   * fully, so every row's scores are summed in the same order as without pruning (the same floating-point sums).
   * The skipped documents must not hold the best raw score either: `skippedRawBound` bounds it (per list the
   * largest BM25+ term from its largest tf and shortest field, summed, × the leaves that have skipped lists); the
   * caller compares it with the best raw score of the rows and scans the skipped documents after all (SCAN_NEW)
   * when it is not strictly below.
   */
  private prunedPass(leafLists: ListPass[][], filter: SlotFilter, L: number, window: number): { from: number[]; skippedRawBound: number } | null {
    // phase 1: per leaf, up to the last list with the leaf's top quality × factor
    const cut: number[] = [];
    let rest = 0;
    for (let li = 0; li < L; li++) {
      const passes = leafLists[li]!;
      let top = 0;
      let last = -1;
      for (let j = 0; j < passes.length; j++) {
        if (passes[j]!.qf > top) top = passes[j]!.qf;
      }
      for (let j = 0; j < passes.length; j++) if (passes[j]!.qf === top) last = j;
      cut.push(last + 1);
      rest += passes.length - (last + 1);
    }
    for (let li = 0; li < L; li++) for (let j = 0; j < cut[li]!; j++) this.scanList(leafLists[li]![j]!, SCAN_ALL, 0, filter, L);
    if (rest === 0) return null;
    const rows = this.nRows;
    let from: number[] | null = null;
    if (rows >= window) {
      // 0.9 × partial coverage per row, summed as evalRows sums it
      if (this.lbBuf.length < rows) this.lbBuf = new Float64Array(rows * 2);
      const lb = this.lbBuf;
      const rowQual = this.rowQual;
      for (let r = 0; r < rows; r++) {
        let c = 0;
        for (let li = 0, base = r * L; li < L; li++) c += rowQual[base + li]!;
        lb[r] = COVERAGE_SHARE * (c / L);
      }
      // the largest skippable suffix first: qualities of the remaining lists, best first
      const qs: number[] = [];
      for (let li = 0; li < L; li++) for (let j = cut[li]!; j < leafLists[li]!.length; j++) qs.push(leafLists[li]![j]!.qf);
      qs.sort((a, b) => b - a);
      for (let x = 0; x < qs.length; x++) {
        if (x > 0 && qs[x] === qs[x - 1]) continue;
        const limit = qs[x]!;
        const start: number[] = [];
        let coverBound = 0;
        for (let li = 0; li < L; li++) {
          const passes = leafLists[li]!;
          let j = passes.length;
          let top = 0;
          while (j > cut[li]! && passes[j - 1]!.qf <= limit) {
            j--;
            if (passes[j]!.qf > top) top = passes[j]!.qf;
          }
          start.push(j);
          coverBound += top;
        }
        const bound = COVERAGE_SHARE * (coverBound / L) + (1 - COVERAGE_SHARE) + 1e-9;
        let above = 0;
        for (let r = 0; r < rows && above < window; r++) if (lb[r]! > bound) above++;
        if (above >= window) {
          from = start;
          break;
        }
      }
    }
    if (from === null) {
      for (let li = 0; li < L; li++) for (let j = cut[li]!; j < leafLists[li]!.length; j++) this.scanList(leafLists[li]![j]!, SCAN_ALL, 0, filter, L);
      return null;
    }
    let boundSum = 0;
    let skippedLeaves = 0;
    const norm = BM25_K * (1 - BM25_B);
    for (let li = 0; li < L; li++) {
      const passes = leafLists[li]!;
      for (let j = cut[li]!; j < from[li]!; j++) this.scanList(passes[j]!, SCAN_ALL, 0, filter, L);
      for (let j = from[li]!; j < passes.length; j++) {
        const lp = passes[j]!;
        this.scanList(lp, SCAN_KNOWN, 0, filter, L);
        const tf = lp.list.maxTf;
        boundSum += lp.w * (BM25_D + (tf * (BM25_K + 1)) / (tf + norm + lp.lenCoef * lp.list.minLen));
      }
      if (from[li]! < passes.length) skippedLeaves++;
    }
    this.prunedQueries++;
    return { from, skippedRawBound: skippedLeaves * boundSum };
  }

  /**
   * The tree per row in [from, to): raw score (MiniSearch's: Σ leaf scores × distinct words matched; −1 for a
   * document that matched only part of a multi-word synonym) and coverage. Returns the best raw score (from `best`).
   */
  private evalRows(from: number, to: number, best: number, leaves: Leaf[], G: number, S: number, oneLeafPerGroup: boolean): number {
    const L = leaves.length;
    const raw = this.rawBuf;
    const cov = this.covBuf;
    const rowScore = this.rowScore;
    const rowQual = this.rowQual;
    if (oneLeafPerGroup) {
      // the same arithmetic as the tree walk below, in the same order, without it
      for (let r = from; r < to; r++) {
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
        raw[r] = score * distinct;
        if (raw[r]! > best) best = raw[r]!;
        cov[r] = c / G;
      }
      return best;
    }
    const altStart: number[] = []; // first leaf of each (group, alt) run, in leaf order
    for (let li = 0; li < L; li++) if (li === 0 || leaves[li]!.alt !== leaves[li - 1]!.alt || leaves[li]!.group !== leaves[li - 1]!.group) altStart.push(li);
    altStart.push(L);
    const seenSource = new Uint8Array(S);
    const groupBest = new Float64Array(G);
    for (let r = from; r < to; r++) {
      const base = r * L;
      let score = 0;
      let distinct = 0;
      // plain loops: a native fill() call per row showed up as a tenth of a query in profiles
      for (let j = 0; j < S; j++) seenSource[j] = 0;
      for (let g = 0; g < G; g++) groupBest[g] = 0;
      for (let a = 0; a + 1 < altStart.length; a++) {
        const a0 = altStart[a]!;
        const a1 = altStart[a + 1]!;
        const leaf = leaves[a0]!;
        let all = true;
        let sum = 0;
        let minQ = Infinity;
        for (let li = a0; li < a1; li++) {
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
        for (let li = a0; li < a1; li++) {
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
      raw[r] = score * distinct;
      if (raw[r]! > best) best = raw[r]!;
      let c = 0;
      for (let g = 0; g < G; g++) c += groupBest[g]!;
      cov[r] = c / G;
    }
    return best;
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
    const ok = filter.storeOk;
    if (ok !== null && window >= this.docCount) {
      // Every match is wanted (no window to cut), so their order does not matter: only the allowed stores' documents
      // are visited (the search service's wildcard asks for a prefix of the stores: search/service.ts rankWildcard).
      if (this.byStore === null) {
        const lists: number[][] = Array.from({ length: this.storeIndex.size }, () => []);
        for (const [, slot] of this.idToSlot) lists[this.storeOf[slot]!]!.push(slot);
        this.byStore = lists.map((l) => Int32Array.from(l));
      }
      const lists = this.byStore;
      for (let si = 0, n = Math.min(lists.length, ok.length); si < n; si++) {
        if (ok[si] !== 1) continue;
        const list = lists[si]!;
        for (let i = 0; i < list.length; i++) if (this.passes(filter, list[i]!)) this.emit(list[i]!, 0);
      }
      return this.out;
    }
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
   * typos (0.45 × |t| / (|t| + distance)) that are not prefix matches. Typos are counted by optimal string alignment
   * (an adjacent transposition is one typo, as in Meilisearch; search/fuzzy.ts), session 17. Cached per word until the vocabulary or
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
      for (const [term, [id, distance]] of fuzzyOsa<number>(this.dict._tree, word, typos)) {
        if (!distance || prefixed.has(term) || typosCounted(word, term, distance) > typos) continue;
        out.push({ term: id, weight: (FUZZY_WEIGHT * term.length) / (term.length + distance), quality: wordQuality(word, term, prefix, s) });
      }
    }
    this.expansionCache.set(key, out);
    return out;
  }

  /**
   * Synonyms by the tokenized key (words joined by one space), built once per settings object (in the settings'
   * entry order), and the most words any key has (queryGroups looks 2- and 3-word keys up only when there are some).
   */
  private synonymIndex: { synonyms: SearchSettings["synonyms"]; byWord: Map<string, string[][]>; maxKeyWords: number } | null = null;
  private synonymMap(): { byWord: Map<string, string[][]>; maxKeyWords: number } {
    const synonyms = this.settings.synonyms;
    if (this.synonymIndex === null || this.synonymIndex.synonyms !== synonyms) {
      const byWord = new Map<string, string[][]>();
      let maxKeyWords = 1;
      for (const [key, values] of Object.entries(synonyms)) {
        const words = tokenize(key);
        if (words.length > maxKeyWords) maxKeyWords = words.length;
        const k = words.join(" ");
        let list = byWord.get(k);
        if (list === undefined) byWord.set(k, (list = []));
        for (const v of values) list.push(tokenize(v));
      }
      this.synonymIndex = { synonyms, byWord, maxKeyWords };
    }
    return this.synonymIndex;
  }
  private synonymsOf(key: string): string[][] {
    return this.synonymMap().byWord.get(key) ?? NO_SYNONYMS;
  }
  private synonymKeyWords(): number {
    return this.synonymMap().maxKeyWords;
  }
}

export function createEmbeddedEngine(settings: SearchSettings = DEFAULT_SEARCH_SETTINGS): SearchEngine {
  return new EmbeddedSearchEngine(settings);
}
