/**
 * The search service a gateway holds: one SearchEngine (embedded by default, Meilisearch when MEILISEARCH_URL is
 * set, the Postgres baseline for benchmarks), a snapshot of every store (trust, level, status, lastSyncAt,
 * euQualified) and of every active product's rankable fields, and the operator's settings.
 *
 * Every product of every store is indexed; eligibility is applied per query through the engine's store
 * allow-list (search/ranking.ts), so a trust change never needs a re-index. The indexer (search/indexer.ts) keeps
 * the snapshots and the index in step with the catalog.
 */
import type { Sql } from "../infra/db.ts";
import { fail } from "../actors/runtime/errors.ts";
import { buyableStock, listStores, storeSnapshot } from "../actors/store/reads.ts";
import { storeFromRow, type StoreRow } from "../actors/store/schemas.ts";
import { ProductColumns } from "./columns.ts";
import { categoryKey, isWildcardText, tokenize, type Candidate, type EngineQuery, type SearchDoc, type SearchEngine, type StockUpdate } from "./engine.ts";
import { MAX_SYNONYM_KEY_WORDS, stopSet } from "./text-score.ts";
import { validateSearchDoc } from "./embedded.ts";
import { log } from "../infra/log.ts";
import {
  allowedStoreSlugs,
  engineQueryFor,
  engineQueryFromRequest,
  normalizeRequest,
  rankProducts,
  toProductSummary,
  wildcardStoreOrder,
  type NormalizedRequest,
  type ProductSummary,
  type RankableProduct,
  type RankResult,
  type SortOrder,
  type RankRequest,
  type StoreSnapshot,
  VersionedMap,
} from "./ranking.ts";
import { DEFAULT_SEARCH_SETTINGS, assertSynonymKeys, cleanStoredPatch, resolveSearchSettings, type SearchSettings, type SearchSettingsPatch } from "./settings.ts";

export const SEARCH_SERVICE_KEY = "searchService";

/** Typed accessor over `svc.extras` (the service is registered by the search boot hook). */
export function getSearchService(svc: { extras: Map<string, unknown> }): SearchService {
  const s = svc.extras.get(SEARCH_SERVICE_KEY) as SearchService | undefined;
  if (!s) throw fail("service_unavailable", "Search is not ready yet.");
  return s;
}

export function setSearchService(svc: { extras: Map<string, unknown> }, s: SearchService): void {
  svc.extras.set(SEARCH_SERVICE_KEY, s);
}

/** The payload the trust engine publishes on `trust.score` after updating stores.trust_score/operational_status. */
export interface TrustScoreEvent {
  slug: string;
  trustScore: number;
  operationalStatus: StoreSnapshot["storeStatus"];
  computedAt: string;
}

export interface SearchQuery extends RankRequest {
  query: string;
  /** Only this store's products (a store's own MCP endpoint searches its catalog). */
  storeSlug?: string;
}

export interface SearchResponse {
  products: ProductSummary[];
  meta: { total: number; page: number; limit: number; totalPages: number };
  queryMeta: Record<string, unknown>;
}

export interface ProductLoadRow {
  id: string;
  store_slug: string;
  title: string;
  description: string;
  brand: string | null;
  category: string | null;
  tags: string[];
  price_minor: number;
  compare_at_price_minor: number | null;
  currency: string;
  in_stock: boolean;
  /** The variants' chargeable prices (PRODUCT_FIELDS), null without variants; absent in rows built in memory. */
  variant_prices?: (number | string)[] | null;
  /** Absent in rows built in memory (benchmarks): read as untracked stock, `in_stock` as given. */
  stock_quantity?: number | null;
  reserved_quantity?: number;
  images: string[];
  active: boolean;
  created_at: Date;
  updated_at: Date;
  /** The id of the transaction that last changed the row (xid8 as text); absent in rows built in memory. */
  change_xid?: string | null;
}

// variant_prices: what the cart charges for each variant (its own price, else the list price), of the variants in
// stock, or of all of them when none is (so an out-of-stock product still has its prices for inStock: false).
// Linear in a product's variants: the NOT EXISTS refers only to the product's row, so Postgres plans it as an
// InitPlan of the subquery, run once per product (and it stops at the first in-stock variant), not once per
// variant (EXPLAIN; 5,000 variants 16 ms, 50,000 122 ms). A one-pass CASE over bool_or was no faster (session 9).
const PRODUCT_FIELDS = `id, store_slug, title, description, brand, category, tags, price_minor, compare_at_price_minor,
  currency, in_stock, stock_quantity, reserved_quantity, images, active, created_at, updated_at, change_xid::text AS change_xid,
  (SELECT array_agg(DISTINCT COALESCE((v->>'priceMinor')::float8, price_minor::float8)) FROM jsonb_array_elements(variants) v
    WHERE (v->>'inStock')::boolean IS NOT FALSE
      OR NOT EXISTS (SELECT 1 FROM jsonb_array_elements(variants) x WHERE (x->>'inStock')::boolean IS NOT FALSE)) AS variant_prices`;

/**
 * Every price the cart can charge for a product, ascending, when that is not just its list price: a product with
 * variants is bought as one of them, at the variant's price (audit A7 MED-2: search filtered and sorted by the list
 * price while the cart charged the variant's). Undefined for a product without variants or whose variants all cost
 * the list price, so those are indexed and ranked exactly as before.
 */
export function chargeablePrices(priceMinor: number, variantPrices: readonly (number | string)[] | null | undefined): number[] | undefined {
  if (!variantPrices || variantPrices.length === 0) return undefined;
  const prices = [...new Set(variantPrices.map(Number))].sort((a, b) => a - b);
  return prices.length === 1 && prices[0] === priceMinor ? undefined : prices;
}

/** What a held-stock re-read takes of a product: enough for `buyableStock`, nothing to re-index. */
interface StockRow {
  id: string;
  active: boolean;
  in_stock: boolean;
  stock_quantity: number | null;
  reserved_quantity: number;
}
const STOCK_FIELDS = "id, active, in_stock, stock_quantity, reserved_quantity";

/**
 * In stock as an agent can buy it (stock − units held by pending checkouts), the rule product reads use
 * (actors/store/reads.ts `buyableStock`): search's `inStock` filter and in-stock term agree with product detail.
 */
function buyableInStock(r: { in_stock: boolean; stock_quantity?: number | null; reserved_quantity?: number }): boolean {
  return buyableStock(r.stock_quantity == null ? null : Number(r.stock_quantity), Number(r.reserved_quantity ?? 0), r.in_stock).inStock;
}

/**
 * A fresh snapshot's bounds (xid8 as text). xmax: the newest ENDED transaction's id + 1 (PostgreSQL 14 on; before,
 * the next id to be given out): no transaction at or past it had ended when the snapshot was taken, though some may
 * have been running (a writer whose id is the newest leaves xmin = xmax = its id until a later one ends). xmin: the
 * oldest transaction still running below xmax, or xmax; every transaction with a smaller id has ended, so what it
 * wrote is visible to any later statement.
 */
async function xidSnapshot(sql: Sql): Promise<{ xmin: string; xmax: string }> {
  const [r] = await sql<{ xmin: string; xmax: string }[]>`
    SELECT pg_snapshot_xmin(s)::text AS xmin, pg_snapshot_xmax(s)::text AS xmax FROM pg_current_snapshot() s`;
  return r!;
}

/** Rows per page of the catch-up's (change_xid, id) scan and of the full loads. */
const PAGE_SIZE = 5000;
/** A catch-up horizon held in place this long by an open writer is logged (warn), then again every as long. */
export const HORIZON_STALL_WARN_MS = 10 * 60_000;
const NO_UUID = "00000000-0000-0000-0000-000000000000";

/** Spec: the MerchantSummary lists UNVERIFIED..PREMIUM; QUALIFIED is shown as PREMIUM (euQualified carries the rest). */
function displaySummary(p: ProductSummary): ProductSummary {
  return p.merchant.verificationLevel === "QUALIFIED" ? { ...p, merchant: { ...p.merchant, verificationLevel: "PREMIUM" } } : p;
}

/** Why a product cannot be indexed (the engines' own document check, plus compareAt), or null. */
function unindexable(doc: SearchDoc, compareAtPriceMinor: number | null): string | null {
  try {
    validateSearchDoc(doc);
  } catch (err) {
    return (err as Error).message;
  }
  if (compareAtPriceMinor !== null && !(Number.isSafeInteger(compareAtPriceMinor) && compareAtPriceMinor >= 0)) {
    return "compareAtPriceMinor must be a non-negative integer (minor units)";
  }
  return null;
}

/**
 * The text score a product needs to be related to a source without a category (SearchService.related): 0.5 is
 * about half of the title's words or more, matched exactly in the title (0.9 × coverage + 0.1 × the relative BM25
 * part, docs/search.md "Text score"): 3 of 5 words pass (≥ 0.54), 2 of 5 never do (≤ 0.46); typos, other fields and
 * synonyms count less. With Meilisearch the score is its ranking score, which also grows with the words matched.
 */
export const RELATED_MIN_TEXT_SCORE = 0.5;

/** Live refs by a price or newest sort's bound, best first, with their store and category indexes beside them. */
interface ProductOrder {
  refs: Int32Array;
  bounds: Float64Array;
  stores: Int32Array;
  categories: Int32Array;
}

/** At most one rebuild of a stale per-product wildcard order per this interval (SearchService.productOrder). */
const PRODUCT_ORDER_REBUILD_MS = 5_000;

/**
 * The text a search asks its engine for. A query the engines reduce to no word at all (every word a stop word, "the"
 * or "and of", or only punctuation, "!!!") is the wildcard, as a blank one is: the embedded engine answered nothing for
 * it while a blank query lists everything, and Meilisearch runs a query made only of stop words as a placeholder
 * search (its own rule; it would still match a last stop word as a prefix, "the" finding "thermal", where the
 * embedded engine drops it). Asking both engines for "" keeps them alike (docs/search.md "Blank and stop-word
 * queries"). Words are the engines' (`tokenize`), stop words the operator's settings, as the engines apply them.
 */
export function engineText(query: string, settings: SearchSettings): string {
  if (isWildcardText(query)) return query;
  // the set the embedded engine's own query words are filtered by (text-score.ts queryGroups), built once per settings
  const stop = stopSet(settings);
  for (const w of tokenize(query)) if (!stop.has(w)) return query;
  return "";
}

export class SearchService {
  readonly stores = new VersionedMap<string, StoreSnapshot>();
  /** Store allow-lists by (trust, verification filter, store scope), valid for one stores version. */
  private allowCache = new Map<string, string[]>();
  private allowCacheVersion = -1;
  /** The product snapshot by id (replaced whole when a reindex swaps its build in: `loadAll`). */
  get products(): ReadonlyMap<string, RankableProduct> {
    return this.productMap;
  }
  private productMap = new Map<string, RankableProduct>();
  /**
   * Ranking's inputs by a dense ref given to the engine with each document (SearchDoc.ref) and handed back on its
   * candidates: the records and typed columns of their rankable fields (search/columns.ts), so ranking 1,000
   * candidates neither hashes ids into a 100k-entry map nor reads a record per candidate.
   * A removed product's ref is reused by a later product once the engine has dropped the document (so the
   * columns stay as large as the live catalog under churn); ranking trusts a candidate's ref only when the
   * columns hold the candidate's own id there, or the generation the engine was given with the ref
   * (SearchDoc.refGen, ProductColumns.gen), so a stale ref can only miss, never point at another product.
   */
  get columns(): ProductColumns {
    return this.productColumns;
  }
  private productColumns = new ProductColumns();
  private refs = new Map<string, number>();
  /** Refs free for reuse, and refs of products forgotten whose engine removal has not completed yet. */
  private freeRefs: number[] = [];
  private pendingRefs: number[] = [];
  private currencyCounts = new Map<string, number>();
  settings: SearchSettings;
  settingsVersion = 0;
  /**
   * The catch-up horizon: the oldest transaction id (xid8, as text) that may still commit a product write this
   * service has not read; the next catch-up re-reads `change_xid >= horizon`. See `catchUp`.
   */
  horizon: string | null = null;
  private lastCatchUp = 0;
  /**
   * Each product row's `change_xid` as last applied, by any path (load, event, catch-up): a committed row keeps its
   * change_xid until another transaction changes it, so a catch-up skips the rows whose value is the one applied.
   */
  private appliedXid = new Map<string, string>();
  /** When the horizon last moved, or was last found with no writer open (wall clock, ms). */
  private horizonMovedAt = Date.now();
  private stallWarnedAt = 0;
  /** How long an open writer may hold the horizon in place before it is logged (tests shorten it). */
  stallWarnMs = HORIZON_STALL_WARN_MS;
  /** Whether rows carrying ids ahead of this server (a restore from another server) were logged already. */
  private aheadLogged = false;
  /** Rows per page of the catch-up's scan (tests shorten it). */
  catchUpPageSize = PAGE_SIZE;
  /** Runs a full load in turn with the other index mutations (the indexer's queue, set by the Indexer). */
  private exclusive: <T>(what: string, fn: () => Promise<T>) => Promise<T> = (_what, fn) => fn();

  /** The engine searches ask (replaced by a reindex's build: `loadAll`). */
  get engine(): SearchEngine {
    return this.liveEngine;
  }
  private liveEngine: SearchEngine;

  constructor(engine: SearchEngine, settings: SearchSettings = DEFAULT_SEARCH_SETTINGS) {
    this.liveEngine = engine;
    this.settings = settings;
  }

  /** The product records by ref (undefined where the ref is free). */
  get productsByRef(): ReadonlyArray<RankableProduct | undefined> {
    return this.columns.records;
  }

  /** Refs handed out, live or free: bounded by the largest live catalog, not by every id ever seen. */
  get refCapacity(): number {
    return this.columns.size;
  }

  /** Currencies in the catalog (kept as one array until one appears or disappears: asked for on every search). */
  private currencyList: string[] | null = null;
  get currencies(): string[] {
    return (this.currencyList ??= [...this.currencyCounts.keys()]);
  }

  // ------------------------------------------------------------------------------------------ loading

  /**
   * Boot and operator reindex: settings, every store, then every product in keyset pages (bounded memory per page).
   *
   * The products are loaded into a new snapshot beside the one searches read, and, with an engine that can make an
   * empty twin (`SearchEngine.fresh`: the embedded one), into a new engine; both are swapped in by one synchronous
   * assignment once the last page is in (audit Q-2). It cleared the live engine and snapshot first and refilled them
   * page by page, so a search answered during a reindex ranked a half-built index: 200 with `total: 0` or too few
   * products, for every agent, with nothing saying so. The price is the old and the new index in memory together
   * until the swap (docs/search.md "Reindex"). A shared engine (Meilisearch, the Postgres baseline) is upserted in
   * place, as before: its documents stay searchable, and only the snapshot is built beside the live one.
   *
   * A build that fails part-way (the engine timed out on a page) is dropped: the live index, snapshot and horizon stay
   * as they were, consistent with each other (the indexer's queue kept every other mutation out meanwhile), so the
   * next catch-up reads what changed since that horizon. A first load that fails leaves no horizon, so the next
   * catch-up reads every row (review RZ-1).
   */
  async loadAll(sql: Sql, opts: { pageSize?: number } = {}): Promise<{ products: number; stores: number; ms: number }> {
    const started = performance.now();
    // Before the first page: a write the pages miss (committed after its page was read) is at or past this horizon.
    const { xmin: horizon } = await xidSnapshot(sql);
    await this.loadSettings(sql, true);
    for (const s of await listStores(sql)) this.stores.set(s.slug, storeSnapshot(s));
    let settings = this.settings;
    const next = new SearchService(this.liveEngine.fresh?.(settings) ?? this.liveEngine, settings);
    next.slugs = this.slugs;
    const total = await next.loadPages(sql, "active AND", opts.pageSize ?? PAGE_SIZE);
    // an operator's settings update applied to the live engine while the pages loaded: the new one takes it too
    while (next.liveEngine !== this.liveEngine && settings !== this.settings) {
      settings = this.settings;
      await next.liveEngine.applySettings(settings);
    }
    // the swap: nothing below awaits, so a search sees the old index or the new one, never a mix
    this.liveEngine = next.liveEngine;
    this.productMap = next.productMap;
    this.productColumns = next.productColumns;
    this.refs = next.refs;
    this.freeRefs = next.freeRefs;
    this.pendingRefs = next.pendingRefs;
    this.currencyCounts = next.currencyCounts;
    this.currencyList = null;
    this.appliedXid = next.appliedXid;
    this.held = next.held;
    this.horizon = horizon;
    this.horizonMovedAt = Date.now();
    this.lastCatchUp = Date.now();
    return { products: total, stores: this.stores.size, ms: Math.round(performance.now() - started) };
  }

  /** Reads and applies the products matching `filter` (SQL ending in AND, or "") in id order, a page at a time. */
  private async loadPages(sql: Sql, filter: string, pageSize: number): Promise<number> {
    let after = NO_UUID;
    let total = 0;
    for (;;) {
      const rows = await sql.unsafe<ProductLoadRow[]>(
        `SELECT ${PRODUCT_FIELDS} FROM products WHERE ${filter} id > $1 ORDER BY id LIMIT ${pageSize}`,
        [after],
      );
      if (rows.length === 0) break;
      await this.applyRows(rows);
      total += rows.length;
      after = rows[rows.length - 1]!.id;
      if (rows.length < pageSize) break;
    }
    return total;
  }

  /** One string per store slug instead of one per product row: less memory, and Map lookups hit the same string. */
  private slugs = new Map<string, string>();
  private internSlug(slug: string): string {
    let s = this.slugs.get(slug);
    if (s === undefined) this.slugs.set(slug, (s = slug));
    return s;
  }

  private refFor(id: string): number {
    let ref = this.refs.get(id);
    if (ref === undefined) this.refs.set(id, (ref = this.freeRefs.pop() ?? this.columns.size));
    return ref;
  }

  private forget(id: string): void {
    this.productMap.delete(id);
    this.held.delete(id);
    const ref = this.refs.get(id);
    if (ref === undefined) return;
    this.refs.delete(id);
    this.columns.unset(ref);
    this.pendingRefs.push(ref);
  }

  /** After the engine has removed the forgotten documents: their refs may serve new products. */
  private releaseRefs(): void {
    for (const r of this.pendingRefs) this.freeRefs.push(r);
    this.pendingRefs = [];
  }

  private track(p: RankableProduct | undefined, delta: 1 | -1): void {
    if (!p) return;
    const n = (this.currencyCounts.get(p.currency) ?? 0) + delta;
    if (n <= 0 || !this.currencyCounts.has(p.currency)) this.currencyList = null;
    if (n <= 0) this.currencyCounts.delete(p.currency);
    else this.currencyCounts.set(p.currency, n);
  }

  /**
   * Upserts active rows and removes inactive ones, in the engine and the product snapshot. Each row's change_xid is
   * recorded as applied only once the engine has taken the batch (review RZ-1): recorded before, a write the engine
   * failed (a Meilisearch timeout or restart) looked applied, so the catch-up skipped the row and the engine kept
   * the old document until the row changed again. On failure the rows are forgotten instead, and the next pass
   * re-reads them (the catch-up keeps its horizon when a pass throws; an event's or a reindex page's rows are read
   * by the next pass while their change_xid is still at or past its horizon).
   */
  async applyRows(rows: readonly ProductLoadRow[]): Promise<void> {
    const docs: SearchDoc[] = [];
    const gone: string[] = [];
    for (const r of rows) {
      const updatedAt = new Date(r.updated_at).toISOString();
      if (!r.active) {
        if (this.products.has(r.id)) {
          this.track(this.products.get(r.id), -1);
          this.forget(r.id);
        }
        gone.push(r.id);
        continue;
      }
      const createdAt = new Date(r.created_at).toISOString();
      const priceMinor = Number(r.price_minor);
      const prices = chargeablePrices(priceMinor, r.variant_prices);
      const rp: RankableProduct = {
        id: r.id,
        storeSlug: this.internSlug(r.store_slug),
        title: r.title,
        description: r.description,
        priceMinor,
        ...(prices !== undefined ? { prices } : {}),
        compareAtPriceMinor: r.compare_at_price_minor === null ? null : Number(r.compare_at_price_minor),
        currency: r.currency,
        inStock: buyableInStock(r),
        imageUrl: r.images?.[0] ?? null,
        category: r.category,
        createdAt,
      };
      const doc: SearchDoc = {
        id: r.id,
        storeSlug: rp.storeSlug,
        title: r.title,
        description: r.description,
        category: r.category,
        brand: r.brand,
        tags: r.tags ?? [],
        priceMinor: rp.priceMinor,
        ...(prices !== undefined ? { prices } : {}),
        currency: r.currency,
        inStock: rp.inStock,
        createdAt,
        updatedAt,
      };
      // One merchant row the engine cannot hold (a price beyond 2^53 minor units written before ingestion bounded
      // it) is skipped and logged: it must not fail the rest of its batch, the catch-up, or the start-up's full load.
      const problem = unindexable(doc, rp.compareAtPriceMinor);
      if (problem) {
        log.warn("search index: product skipped", { productId: r.id, storeSlug: r.store_slug, problem });
        if (this.products.has(r.id)) {
          this.track(this.products.get(r.id), -1);
          this.forget(r.id);
        }
        gone.push(r.id);
        continue;
      }
      this.track(this.products.get(r.id), -1);
      this.productMap.set(r.id, rp);
      const ref = this.refFor(r.id);
      this.columns.set(ref, rp);
      this.noteHeld(r.id, Number(r.reserved_quantity ?? 0));
      this.track(rp, 1);
      doc.ref = ref;
      doc.refGen = this.columns.gen[ref]!;
      doc.refOwner = this.columns.uid;
      docs.push(doc);
    }
    try {
      if (docs.length) await this.engine.upsert(docs);
      if (gone.length) await this.engine.remove(gone);
    } catch (err) {
      for (const r of rows) this.appliedXid.delete(r.id);
      throw err;
    }
    for (const r of rows) {
      if (r.change_xid) this.appliedXid.set(r.id, r.change_xid);
      else this.appliedXid.delete(r.id);
    }
    this.releaseRefs();
  }

  /**
   * Re-reads the named products (a `catalog.changed` event, the catch-up's changed rows); ids no longer in the table
   * are removed. Returns how many rows were read.
   */
  async refreshProducts(sql: Sql, ids: readonly string[]): Promise<number> {
    if (ids.length === 0) return 0;
    const rows = await sql.unsafe<ProductLoadRow[]>(`SELECT ${PRODUCT_FIELDS} FROM products WHERE id = ANY($1::uuid[])`, [ids as string[]]);
    const found = new Set(rows.map((r) => r.id));
    const missing = ids.filter((id) => !found.has(id));
    await this.applyRows(rows);
    await this.removeProducts(missing);
    return rows.length;
  }

  /** Drops products that are no longer in the table, from the snapshot and the engine. */
  async removeProducts(ids: readonly string[]): Promise<void> {
    if (ids.length === 0) return;
    for (const id of ids) {
      this.track(this.products.get(id), -1);
      this.forget(id);
      this.appliedXid.delete(id);
    }
    await this.engine.remove([...ids]);
    this.releaseRefs();
  }

  /**
   * Products last read with units held (reserved_quantity > 0): the catch-up re-reads their stock even when
   * nothing else holds them any more, so a release whose event was missed is applied within one interval.
   */
  private held = new Set<string>();
  private noteHeld(id: string, reserved: number): void {
    if (reserved > 0) this.held.add(id);
    else this.held.delete(id);
  }

  /**
   * Units held or given back (`catalog.changed` with `held`): re-reads only the stock columns of these products and
   * flips `inStock` where the buyable stock crossed zero: one byte in the embedded index, a partial document
   * update in Meilisearch, no re-index. Unknown, inactive and unindexed ids are left to the full refresh paths.
   */
  async refreshHeldStock(sql: Sql, ids: readonly string[]): Promise<number> {
    if (ids.length === 0) return 0;
    const rows = await sql.unsafe<StockRow[]>(`SELECT ${STOCK_FIELDS} FROM products WHERE id = ANY($1::uuid[])`, [ids as string[]]);
    return this.applyStockRows(rows);
  }

  /**
   * Applies stock rows to the snapshot, the columns and the engine; returns how many documents changed. If the
   * engine fails the update, the snapshot takes back the records it had (as the engine still does) and the products
   * are kept among the held ones: the next catch-up re-reads their stock, finds it differs and sends it again.
   * Left flipped, the snapshot would match the table and the engine would keep the old flag (as review RZ-1 for rows).
   */
  async applyStockRows(rows: readonly StockRow[]): Promise<number> {
    const updates: StockUpdate[] = [];
    const before: { prev: RankableProduct; next: RankableProduct }[] = [];
    for (const r of rows) {
      const cur = this.products.get(r.id);
      if (!cur || !r.active) continue;
      this.noteHeld(r.id, Number(r.reserved_quantity ?? 0));
      const inStock = buyableInStock(r);
      if (inStock === cur.inStock) continue;
      // records are replaced, never mutated: a page being built keeps the record it read
      const next: RankableProduct = { ...cur, inStock };
      this.setRecord(next);
      before.push({ prev: cur, next });
      updates.push({ id: r.id, inStock });
    }
    if (updates.length === 0) return 0;
    try {
      await this.engine.setStock(updates);
    } catch (err) {
      for (const { prev, next } of before) {
        this.held.add(prev.id);
        if (this.products.get(prev.id) === next) this.setRecord(prev); // unless something newer replaced it
      }
      throw err;
    }
    return updates.length;
  }

  /** Replaces a product's record in the snapshot and its columns. */
  private setRecord(p: RankableProduct): void {
    this.productMap.set(p.id, p);
    const ref = this.refs.get(p.id);
    if (ref !== undefined) this.columns.set(ref, p);
  }

  async refreshStore(sql: Sql, slug: string): Promise<void> {
    const rows = await sql<StoreRow[]>`SELECT * FROM stores WHERE slug = ${slug}`;
    if (rows[0]) this.stores.set(slug, storeSnapshot(storeFromRow(rows[0])));
    else this.stores.delete(slug);
  }

  applyTrustScore(ev: TrustScoreEvent): void {
    const cur = this.stores.get(ev.slug);
    if (!cur) return;
    this.stores.set(ev.slug, { ...cur, trustScore: ev.trustScore, storeStatus: ev.operationalStatus });
  }

  /**
   * Durable catch-up: products changed by transactions at or past the horizon, every store row, and the settings.
   * Applies what events missed while this node was down or disconnected.
   *
   * The horizon is a transaction id, not a time (audit Z-2): updated_at is now(), the writing transaction's START,
   * so a write that committed more than a margin after it began fell behind a time watermark other writes had moved,
   * and was never read again. `products.change_xid` is the id of the transaction that last changed the row
   * (migration 0076's trigger). The new horizon is the xmin of a snapshot taken BEFORE this pass reads: every
   * transaction below it had ended then, so its writes are in this read; every write this read cannot see comes from
   * a transaction still running then (id >= xmin) or begun later (id >= that snapshot's xmax): the next pass reads
   * it, however long it stayed open. Only a transaction that has written holds the horizon back (ids are assigned at
   * the first write), but one in ANY database of the server does (the snapshot is the server's).
   *
   * What a pass costs is bounded by what changed (review RS-3/4): it scans `(change_xid, id)` of the rows in
   * [horizon, xmax) in keyset pages (an index-only walk, migration 0078), and reads and re-indexes only the rows whose
   * change_xid differs from the one last applied: a row an event already applied, or one an open writer keeps in the
   * window pass after pass, is not read again. Rows at or past xmax were written by transactions not ended at the
   * snapshot (the next pass reads them), or carry ids this server has not handed out: a restore from another
   * server (pg_dump copies the data before it creates the trigger) keeps the source's ids. They are left out (the
   * full load at start-up read them; logged once); when the counter reaches one, the scan finds it applied already,
   * and a local write of the row gives it a local id.
   */
  async catchUp(sql: Sql): Promise<{ products: number; scanned: number }> {
    const snap = await xidSnapshot(sql);
    let read = 0;
    let scanned = 0;
    if (this.horizon === null) {
      read = scanned = await this.loadPages(sql, "", this.catchUpPageSize); // never loaded: every row
    } else {
      let after = { xid: this.horizon, id: NO_UUID };
      for (;;) {
        const page = await sql<{ id: string; x: string }[]>`
          SELECT id, change_xid::text AS x FROM products
          WHERE (change_xid, id) > (${after.xid}::xid8, ${after.id}::uuid) AND change_xid < ${snap.xmax}::xid8
          ORDER BY change_xid, id LIMIT ${this.catchUpPageSize}`;
        scanned += page.length;
        read += await this.refreshProducts(sql, page.filter((r) => this.appliedXid.get(r.id) !== r.x).map((r) => r.id));
        if (page.length < this.catchUpPageSize) break;
        const last = page[page.length - 1]!;
        after = { xid: last.x, id: last.id };
      }
      if (!this.aheadLogged) await this.logIdsAhead(sql);
      await this.watchHorizon(sql, snap);
    }
    this.horizon = snap.xmin;
    // Holds and releases do not move change_xid (a checkout's hold is not a catalog change): the products holding
    // units now, and those that held some when last read, have their stock re-read, so a missed held-stock event is
    // applied within one interval. A scan of the stock columns (no index on reserved_quantity), once per interval.
    const stock = await sql.unsafe<StockRow[]>(
      `SELECT ${STOCK_FIELDS} FROM products WHERE active AND (reserved_quantity > 0 OR id = ANY($1::uuid[]))`,
      [[...this.held]],
    );
    await this.applyStockRows(stock);
    const fresh = await listStores(sql);
    const seen = new Set<string>();
    for (const s of fresh) {
      this.stores.set(s.slug, storeSnapshot(s));
      seen.add(s.slug);
    }
    for (const slug of [...this.stores.keys()]) if (!seen.has(slug)) this.stores.delete(slug);
    await this.loadSettings(sql, false);
    this.lastCatchUp = Date.now();
    return { products: read, scanned };
  }

  /**
   * Says once that products carry transaction ids this server has not handed out yet (a restore), if any do. Each
   * statement compares with its OWN snapshot's xmax, not the pass's: a product write committed while the pass ran
   * has an id at or past the pass's xmax, yet it is this server's (it was logged as a restore, and the one real
   * restore after it was then never logged). A row this statement sees was written by a transaction ended before
   * the statement's snapshot, so its id is below that snapshot's xmax unless it came from another server.
   */
  private async logIdsAhead(sql: Sql): Promise<void> {
    const [any] = await sql<{ e: boolean | null }[]>`
      SELECT max(change_xid) >= pg_snapshot_xmax(pg_current_snapshot()) AS e FROM products`;
    if (!any!.e) return; // one index probe a pass (the end of products_change_xid_id)
    const [r] = await sql<{ n: number; xmax: string }[]>`
      SELECT count(*)::int AS n, pg_snapshot_xmax(pg_current_snapshot())::text AS xmax
      FROM products WHERE change_xid >= pg_snapshot_xmax(pg_current_snapshot())`;
    if (r!.n === 0) return; // the server's counter reached them between the two statements
    this.aheadLogged = true;
    log.warn("search catch-up: products carry transaction ids ahead of this server (restored from another server?); the catch-up leaves them out, the start-up load read them", {
      products: r!.n,
      serverNextXid: r!.xmax,
    });
  }

  /**
   * Logs (warn) a horizon an open writer has held in place for `stallWarnMs`, naming the session or prepared
   * transaction that holds it (any database of the server; another role's session shows only with pg_read_all_stats).
   * While it stays, each pass scans the product rows changed since that transaction began (reads none of them again).
   */
  private async watchHorizon(sql: Sql, snap: { xmin: string; xmax: string }): Promise<void> {
    const now = Date.now();
    if (snap.xmin !== this.horizon || snap.xmin === snap.xmax) {
      this.horizonMovedAt = now;
      return;
    }
    const heldMs = now - this.horizonMovedAt;
    if (heldMs < this.stallWarnMs || now - this.stallWarnedAt < this.stallWarnMs) return;
    this.stallWarnedAt = now;
    // pg_stat_activity and pg_prepared_xacts show 32-bit xids: the xmin's low 32 bits
    const xid32 = (BigInt(snap.xmin) % 4294967296n).toString();
    const sessions = await sql<{ pid: number; database: string | null; user: string | null; state: string | null; xact_start: Date | null }[]>`
      SELECT pid, datname AS database, usename AS user, state, xact_start FROM pg_stat_activity WHERE backend_xid::text = ${xid32}`;
    const prepared = await sql<{ gid: string; database: string; prepared: Date }[]>`
      SELECT gid, database, prepared FROM pg_prepared_xacts WHERE transaction::text = ${xid32}`;
    log.warn("search catch-up: the horizon has not moved; an open transaction that wrote holds it back", {
      horizon: snap.xmin,
      heldForMs: heldMs,
      sessions: sessions.map((x) => ({ pid: x.pid, database: x.database, user: x.user, state: x.state, xactStart: x.xact_start?.toISOString() ?? null })),
      prepared: prepared.map((x) => ({ gid: x.gid, database: x.database, prepared: x.prepared.toISOString() })),
    });
  }

  // ------------------------------------------------------------------------------------------ settings

  private async loadSettings(sql: Sql, force: boolean): Promise<void> {
    const rows = await sql<{ patch: unknown; version: number }[]>`SELECT patch, version FROM search_settings WHERE id = 1`;
    const version = rows[0]?.version ?? 0;
    if (!force && version === this.settingsVersion) return;
    let settings: SearchSettings;
    try {
      settings = resolveSearchSettings(cleanStoredPatch(rows[0]?.patch));
    } catch (err) {
      // only a patch stored before the checks were complete (all-zero ranking weights) gets here; start with the
      // defaults instead of refusing to boot, and say so: the next PUT replaces it
      log.error("search settings: the stored patch is invalid; defaults used until an operator stores a valid one", { version, error: err as Error });
      settings = DEFAULT_SEARCH_SETTINGS;
    }
    await this.engine.applySettings(settings);
    this.settings = settings;
    this.settingsVersion = version;
  }

  /**
   * Operator change: overlays `patch` on the stored patch, validates, stores it (version + 1) and applies it.
   * The read-merge-write runs in one transaction under an advisory lock, so two PUTs (on one gateway or on
   * several: the lock is the database's) are applied one after the other and neither loses the other's keys
   * (audit U MED-4). `ifVersion` (the PUT's If-Match) makes it conditional: another version stored meanwhile is
   * 409 `conflict`, for a caller who replaces a whole list or map it read before.
   * Returns whether the engine had to re-index (only a Meilisearch settings task re-indexes; the embedded engine
   * applies everything at query time).
   */
  async updateSettings(
    sql: Sql,
    patch: SearchSettingsPatch,
    userId: string | null,
    ifVersion?: number,
  ): Promise<{ settings: SearchSettings; version: number; reindexed: boolean }> {
    const { settings, version } = await sql.begin(async (tx) => {
      await tx`SELECT pg_advisory_xact_lock(hashtext('search_settings'))`;
      const rows = await tx<{ patch: unknown; version: number }[]>`SELECT patch, version FROM search_settings WHERE id = 1`;
      const current = rows[0]?.version ?? 0;
      if (ifVersion !== undefined && ifVersion !== current) {
        throw fail("conflict", `the search settings are at version ${current}, not ${ifVersion}; read them again`, { currentVersion: current, ifMatch: ifVersion });
      }
      const prev = cleanStoredPatch(rows[0]?.patch);
      const merged: SearchSettingsPatch = {
        ...prev,
        ...patch,
        typoTolerance: { ...prev.typoTolerance, ...patch.typoTolerance },
        fieldWeights: { ...prev.fieldWeights, ...patch.fieldWeights },
        rankingWeights: { ...prev.rankingWeights, ...patch.rankingWeights },
      };
      assertSynonymKeys(patch.synonyms, MAX_SYNONYM_KEY_WORDS, tokenize); // only the new map: a stored one keeps loading
      const settings = resolveSearchSettings(merged); // throws validation_error
      const [row] = await tx<{ version: number }[]>`INSERT INTO search_settings (id, patch, version, updated_by) VALUES (1, ${tx.json(merged as never)}, 1, ${userId})
        ON CONFLICT (id) DO UPDATE SET patch = EXCLUDED.patch, version = search_settings.version + 1, updated_at = now(), updated_by = EXCLUDED.updated_by
        RETURNING version`;
      return { settings, version: row!.version };
    });
    // two updates in this process commit in order but may apply out of order: never go back to an older version
    if (version > this.settingsVersion) {
      // outside the indexer's queue: a reindex may swap its engine in while this one applies (audit Q-2), and the
      // engine it swapped in was given the settings as they were before this update: it takes them too
      for (let engine = this.liveEngine; ; engine = this.liveEngine) {
        await engine.applySettings(settings);
        if (engine === this.liveEngine) break;
      }
      this.settings = settings;
      this.settingsVersion = version;
    }
    return { settings, version, reindexed: this.engine.name === "meilisearch" };
  }

  /**
   * Full rebuild from the database (operator action, or after a settings change an engine cannot apply live). Runs
   * in the indexer's queue when there is one: interleaved with a catch-up, a page read before a newer write could be
   * applied after it and the catch-up could then move the horizon past that write (review RS), and the rebuild's
   * clearing of the engine could interleave with an event's upsert.
   */
  async reindex(sql: Sql): Promise<{ products: number; ms: number }> {
    const r = await this.exclusive("reindex", () => this.loadAll(sql));
    return { products: r.products, ms: r.ms };
  }

  /** The indexer hands its queue here, so `reindex` runs in turn with the events and catch-ups it applies. */
  serializeWith(run: <T>(what: string, fn: () => Promise<T>) => Promise<T>): void {
    this.exclusive = run;
  }

  // -------------------------------------------------------------------------------------------- query

  async search(q: SearchQuery, now: Date): Promise<SearchResponse> {
    const started = performance.now();
    const norm: NormalizedRequest = normalizeRequest(q);
    const engineQuery = engineQueryFor(engineText(q.query, this.settings), q, this.allowedSlugs(q), this.settings, this.currencies);
    engineQuery.unordered = true; // rankProducts orders the window
    const cap = this.wildcardWindow(engineQuery);
    let ranked = cap === undefined ? null : (this.rankWildcard(q, engineQuery, cap, now) ?? this.rankWildcardByProduct(q, engineQuery, cap, now));
    if (ranked === null) {
      // the embedded engine's window as arrays, ranked right away (they are its scratch); other engines' objects
      const window = this.engine.queryWindow?.(engineQuery);
      const candidates = window === undefined ? await this.engine.query(engineQuery) : [];
      const result = rankProducts({ candidates, window, products: this.products, columns: this.columns, stores: this.stores, request: q, now, settings: this.settings, cap });
      ranked = { result, candidates: window === undefined ? candidates.length : window.length };
    }
    const { result, candidates: candidateCount } = ranked;
    const tookMs = Math.round((performance.now() - started) * 100) / 100;
    return {
      products: result.items.map((p) => displaySummary(toProductSummary(p))),
      meta: { total: result.total, page: result.page, limit: result.limit, totalPages: result.totalPages },
      queryMeta: {
        query: q.query,
        filters: norm.filters,
        sort: norm.sort,
        page: norm.page,
        limit: norm.limit,
        ...(q.limit !== undefined && q.limit !== norm.limit ? { requestedLimit: q.limit } : {}),
        deduplicate: norm.deduplicate,
        engine: this.engine.name,
        tookMs,
        candidates: candidateCount,
        candidateWindow: this.settings.candidateWindow,
        eligibleStores: engineQuery.storeSlugs?.length ?? null,
        rankingWeights: this.settings.rankingWeights,
      },
    };
  }

  /**
   * A wildcard query (`"*"`, browsing a category) has no text to choose its candidate window by: every match scores
   * 0, and an engine's first `window` of them are its first ids (the embedded engine) or its newest (Meilisearch),
   * so a price, newest or trust sort, or the relevance formula, ordered an arbitrary subset and missed the cheapest,
   * newest or best matches past the window (helper A, session 20). For such a query the engine is asked for every
   * match (its window widened to the catalog in place), and the window becomes ranking's `cap`: the first
   * `candidateWindow` matches of the requested order, so `total` keeps its bound. Undefined for a text query, whose
   * window stays the engine's most relevant candidates. An engine that caps its answer (Meilisearch's maxTotalHits)
   * still ranks only what it returns.
   */
  /**
   * A wildcard query under the relevance or trust_score sort (a browse's default) without ranking every match: with no
   * text, a match's place on those sorts' first criterion is bounded by its store's (wildcardStoreOrder: the final
   * score of an in-stock product, or the trust). The stores are taken best first until they hold enough products for
   * the window (per-store counts, scaled by the share of them that matched the filters last time), the engine is asked
   * for their matches only, and ranking keeps the first `cap` as for every match (RankInput.cap). That is the answer of
   * ranking every match exactly when the window filled and the best store left out is strictly below the window's
   * cut (RankResult.capCut): none of its products could enter it. Otherwise the prefix grows (every store at or above
   * the cut, or more products) and is ranked again. Null (the caller ranks every match): not the embedded engine,
   * another sort (price and newest are per product), or the prefix would be every store. At 100k products / 1,000
   * stores a default browse ranks ~1,000 matches instead of 100,000 (~20 ms to ~1 ms).
   */
  private rankWildcard(q: SearchQuery, eq: EngineQuery, cap: number, now: Date): { result: RankResult; candidates: number } | null {
    const queryWindow = this.engine.queryWindow?.bind(this.engine);
    if (queryWindow === undefined || eq.storeSlugs === undefined) return null;
    const cols = this.columns;
    // Only a store the columns hold (every product indexed is set there first) can have a match: the order is taken
    // over those when they are fewer than the allowed stores (wildcardStoreOrder applies the request's store filters
    // itself). Thousands of eligible stores without products, ordered and masked on every browse, cost 6-60x the full
    // pass they were to save (review R, session 20). A request scoped to one store keeps its allow-list.
    const slugs = q.storeSlug === undefined && cols.storeSlugs.length < eq.storeSlugs.length ? cols.storeSlugs : eq.storeSlugs;
    const order = wildcardStoreOrder(this.stores, slugs, q, now, this.settings);
    if (order === null) return null;
    const productsOf = (slug: string) => cols.storeProducts[cols.storeIndex.get(slug) ?? -1] ?? 0;
    let target = cap;
    let atLeast = 0;
    for (;;) {
      let take = 0;
      let products = 0;
      while (take < order.length && (take < atLeast || products < target)) products += productsOf(order[take++]!.slug);
      // stores tied with the last one taken go with it: the cut compares with the first store left out
      while (take > 0 && take < order.length && order[take]!.bound === order[take - 1]!.bound) products += productsOf(order[take++]!.slug);
      if (take >= order.length) return null;
      const window = queryWindow({ ...eq, storeSlugs: order.slice(0, take).map((o) => o.slug).sort() });
      const result = rankProducts({ candidates: [], window, products: this.products, columns: cols, stores: this.stores, request: q, now, settings: this.settings, cap });
      const cut = result.capCut;
      if (cut !== undefined) {
        if (order[take]!.bound < cut) return { result, candidates: window.length };
        // a store left out reaches the cut: the next prefix holds every store at or above it
        atLeast = take + 1;
        while (atLeast < order.length && order[atLeast]!.bound >= cut) atLeast++;
      } else {
        // fewer matches than the window: as many more products as the share that matched says (none matched: all)
        if (window.length === 0) return null;
        target = Math.max(target * 2, Math.ceil((products * cap * 1.5) / window.length));
      }
    }
  }

  /**
   * A wildcard query under a price or newest sort without ranking every match: those sorts' first criterion is per
   * product, bounded by a value of the product alone (newest: its creation time; price_asc: minus its lowest price,
   * price_desc: its highest, in major units: a price filter can only pick a variant price inside those). The live refs
   * are kept ordered by that bound (`productOrder`); the walk takes them in order, skipping stores the request may
   * not see, until it holds `cap` candidates and every ref tied with the last, ranks them with the same `cap`, and
   * accepts the answer as for the store prefix: the window filled and the next ref's bound is strictly below the
   * window's cut (RankResult.capCut). Otherwise it walks on (past every ref at or above the cut, or twice as far) and
   * ranks again; having walked every ref, what it holds is every match. Null (the caller ranks every match): another
   * sort, not the embedded engine (its `queryWindow` marks the catalog the columns describe), or no fresh order.
   */
  private rankWildcardByProduct(q: SearchQuery, eq: EngineQuery, cap: number, now: Date): { result: RankResult; candidates: number } | null {
    if (this.engine.queryWindow === undefined || eq.storeSlugs === undefined) return null;
    const req = normalizeRequest(q);
    const sort = req.sort;
    if (sort !== "newest" && sort !== "price_asc" && sort !== "price_desc") return null;
    const order = this.productOrder(sort);
    if (order === null) return null;
    const cols = this.columns;
    const allowed = new Uint8Array(cols.storeSlugs.length);
    for (const slug of eq.storeSlugs) {
      const i = cols.storeIndex.get(slug);
      if (i !== undefined) allowed[i] = 1;
    }
    // The filters a product's columns decide at once are checked here too, so the walk gathers matches, not every
    // product of a category it must skip: ranking re-applies them and the rest (prices), so this may only leave out
    // what ranking would.
    const wantCategory = req.filters.category === undefined ? -2 : (cols.categoryIndex.get(categoryKey(req.filters.category) ?? "") ?? -1);
    if (wantCategory === -1) return null; // no product has that category: the full pass finds nothing, at no cost
    const inStockOnly = req.filters.inStock;
    // A current order's refs are all live, and its store and category copies are the columns' (keyVersion), read in
    // order: reading a product's id or columns at random per ref walked was ~0.6 us a ref at 100k (cache misses).
    const { refs, bounds, stores, categories } = order;
    const n = refs.length;
    const ids = cols.ids;
    const stock = cols.inStock;
    const candidates: Candidate[] = [];
    let pos = 0;
    const take = (at: number) => {
      if (allowed[stores[at]!] !== 1 || (wantCategory >= 0 && categories[at] !== wantCategory)) return;
      const ref = refs[at]!;
      if (inStockOnly && stock[ref] !== 1) return;
      candidates.push({ id: ids[ref]!, textScore: 0, ref });
    };
    let target = cap;
    let cutAt = Infinity; // walk on past every bound at or above this
    for (;;) {
      while (pos < n && (candidates.length < target || bounds[pos]! >= cutAt)) take(pos++);
      // refs tied with the last one taken go with it: the cut compares with the first ref left out
      while (pos > 0 && pos < n && bounds[pos] === bounds[pos - 1]) take(pos++);
      const result = rankProducts({ candidates, products: this.products, columns: cols, stores: this.stores, request: q, now, settings: this.settings, cap });
      if (pos >= n) return { result, candidates: candidates.length };
      const cut = result.capCut;
      if (cut !== undefined && bounds[pos]! < cut) return { result, candidates: candidates.length };
      if (cut !== undefined) cutAt = cut;
      else target = Math.max(target * 2, candidates.length * 2); // the price filter (or dedupe) left too few
    }
  }

  /** How often a stale per-product order may be rebuilt (tests set 0: rebuilt whenever stale). */
  productOrderRebuildMs = PRODUCT_ORDER_REBUILD_MS;
  /** The live refs by the bound of a price or newest sort's first criterion, best first; see rankWildcardByProduct. */
  private productOrders = new Map<SortOrder, ProductOrder & { version: number; builtAt: number }>();

  /**
   * The order for `sort`, rebuilt when a product's price, prices, currency or creation time changed since (not for a
   * stock flip): ~50-70 ms at 100k products. Under steady catalog writes it is rebuilt at most once per
   * PRODUCT_ORDER_REBUILD_MS; in between a stale order is not used (null: the full pass), so a browse never pays more
   * than one rebuild per interval and never reads a stale order.
   */
  private productOrder(sort: "newest" | "price_asc" | "price_desc"): ProductOrder | null {
    const cols = this.columns;
    const cached = this.productOrders.get(sort);
    if (cached && cached.version === cols.keyVersion) return cached;
    const clock = performance.now();
    if (cached && clock - cached.builtAt < this.productOrderRebuildMs) return null;
    const live: number[] = [];
    const key: number[] = [];
    for (let ref = 0; ref < cols.size; ref++) {
      const p = cols.records[ref];
      if (p === undefined) continue;
      let b: number;
      if (sort === "newest") b = cols.createdMs[ref]!;
      else {
        let lo = cols.priceMinor[ref]!;
        let hi = lo;
        const several = cols.prices[ref];
        if (several !== undefined) {
          lo = Infinity;
          hi = -Infinity;
          for (const v of several) {
            if (v < lo) lo = v;
            if (v > hi) hi = v;
          }
        }
        const scale = cols.currencyScale[cols.currency[ref]!]!;
        b = sort === "price_asc" ? -(lo / scale) : hi / scale;
      }
      live.push(ref);
      key.push(b);
    }
    const idx = Array.from(live.keys()).sort((a, b) => key[b]! - key[a]!);
    const refs = Int32Array.from(idx, (i) => live[i]!);
    const built = {
      version: cols.keyVersion,
      builtAt: clock,
      refs,
      bounds: Float64Array.from(idx, (i) => key[i]!),
      stores: Int32Array.from(refs, (ref) => cols.store[ref]!),
      categories: Int32Array.from(refs, (ref) => cols.category[ref]!),
    };
    this.productOrders.set(sort, built);
    return built;
  }

  private wildcardWindow(q: EngineQuery): number | undefined {
    if (!isWildcardText(q.text)) return undefined;
    q.window = Math.max(q.window, this.productMap.size);
    return this.settings.candidateWindow;
  }

  /**
   * The eligible stores passing the request's store filters: 1,000 stores are a few hundred microseconds per
   * request to re-derive, so the list is cached per filter shape until a store snapshot changes.
   */
  allowedSlugs(q: SearchQuery): string[] {
    if (this.allowCacheVersion !== this.stores.version) {
      this.allowCache.clear();
      this.allowCacheVersion = this.stores.version;
    }
    const f = q.filters;
    const key = `${f?.minTrustScore ?? ""}|${f?.verificationLevel ?? ""}|${q.storeSlug ?? ""}`;
    let slugs = this.allowCache.get(key);
    if (!slugs) {
      const only = q.storeSlug === undefined ? undefined : this.stores.get(q.storeSlug);
      const stores = q.storeSlug === undefined ? this.stores.values() : only ? [only] : [];
      slugs = allowedStoreSlugs(stores, q);
      if (this.allowCache.size > 1000) this.allowCache.clear();
      this.allowCache.set(key, slugs);
    }
    return slugs;
  }

  /**
   * Cross-merchant related products: the source title as the query, same category, other merchants only,
   * ranked by the same formula. A source without a category has no category to hold the matches to, and any
   * product sharing one word of its title (the brand, "linen") was "related" (audit A, session 16 leftover): there,
   * related means the title finds the product, a text score of at least RELATED_MIN_TEXT_SCORE (docs/catalog.md).
   */
  async related(source: { id: string; title: string; category: string | null; storeSlug: string }, limit: number, now: Date): Promise<ProductSummary[]> {
    const others = [...this.stores.values()].filter((s) => s.slug !== source.storeSlug);
    const req: RankRequest = { filters: { inStock: false, ...(source.category ? { category: source.category } : {}) }, limit };
    const eq = engineQueryFromRequest(engineText(source.title, this.settings), req, others, this.settings, this.currencies);
    eq.unordered = true;
    // a title with no words to match ("*", blank, stop words only: engineText) is a wildcard query: every match, ranked (wildcardWindow; review R)
    let cap = this.wildcardWindow(eq);
    let candidates = await this.engine.query(eq);
    if (!source.category) candidates = candidates.filter((c) => c.textScore >= RELATED_MIN_TEXT_SCORE);
    if (candidates.length === 0 && source.category) {
      // nothing shares a word with the title: fall back to the category alone (every match, ranked: wildcardWindow)
      const all: EngineQuery = { ...eq, text: "" };
      cap = this.wildcardWindow(all);
      candidates = await this.engine.query(all);
    }
    const othersMap = new Map(others.map((s) => [s.slug, s]));
    const ranked = rankProducts({
      candidates: candidates.filter((c) => c.id !== source.id),
      products: this.products,
      columns: this.columns,
      stores: othersMap,
      request: req,
      now,
      settings: this.settings,
      cap,
    });
    return ranked.items.map((p) => displaySummary(toProductSummary(p)));
  }

  /** Milliseconds since the last catch-up (for /health-style readiness). */
  sinceCatchUpMs(): number {
    return Date.now() - this.lastCatchUp;
  }
}
