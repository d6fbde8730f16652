/**
 * Ranking's per-product inputs as dense columns by the search service's product ref (SearchDoc.ref), kept per
 * snapshot beside the product records. Ranking a 1,000-candidate window read one record object per candidate
 * (a cache miss each, the largest part of ranking on a busy machine); from these columns it reads typed arrays
 * and touches records only for the page's summaries and for dedupe keys.
 *
 * Refs are reused after their product is gone (so the columns stay as large as the catalog under churn, not as
 * large as every id ever seen): a candidate is trusted to its ref only when `ids[ref]` is the candidate's own id
 * string (the engine hands back the very string the service gave it, so the check is a pointer comparison), or,
 * for the embedded engine's window, when `gen[ref]` is still the generation the engine was given with the ref
 * (session 16: a 4-byte read instead of reading the id at the ref and at the engine's slot, a cache miss each).
 */
import { categoryKey } from "./engine.ts";
import { idOrderKey } from "./embedded.ts";
import { minorUnitExponent } from "./money.ts";
import type { RankableProduct } from "./ranking.ts";

/** ProductColumns.uid: distinct per columns object in the process, so a generation names the columns it counts in. */
let nextColumnsUid = 1;

function grown<T extends Int32Array | Uint8Array | Float64Array>(a: T, min: number): T {
  if (a.length >= min) return a;
  const next = new (a.constructor as new (n: number) => T)(Math.max(min, a.length * 2, 1024));
  next.set(a);
  return next;
}

export class ProductColumns {
  readonly uid = nextColumnsUid++;
  /** The record per ref (undefined once its product is gone). */
  readonly records: Array<RankableProduct | undefined> = [];
  /** The product id per ref ("" once gone): the candidate check. */
  readonly ids: string[] = [];
  /**
   * Per ref, a count of the products that took it (bumped when `set` puts another id there and on `unset`, modulo
   * 2^31): the search service hands it to the engine with the ref (SearchDoc.refGen), so a window entry whose
   * generation is still the ref's is still that product, as `ids[ref]` would say, from a 4-byte read.
   */
  gen = new Int32Array(0);
  /** idOrderKey of the id: orders ids as their strings do wherever two keys differ. */
  idKey = new Float64Array(0);
  /** Index into `storeSlugs`. */
  store = new Int32Array(0);
  inStock = new Uint8Array(0);
  /** Index into `categoryKeys` of the product's category key, -1 when it has none. */
  category = new Int32Array(0);
  priceMinor = new Float64Array(0);
  /** RankableProduct.prices per ref: set only for products whose variants are priced on their own. */
  readonly prices: Array<readonly number[] | undefined> = [];
  /** Index into `currencies`. */
  currency = new Int32Array(0);
  /** Date.parse(createdAt) || 0, for sort=newest. */
  createdMs = new Float64Array(0);

  readonly storeSlugs: string[] = [];
  readonly storeIndex = new Map<string, number>();
  /**
   * Live products per store index (`storeSlugs`): a bound of a store's matches, for the wildcard search's store
   * prefix (search/service.ts `rankWildcard`).
   */
  readonly storeProducts: number[] = [];
  /**
   * Bumped whenever what orders a ref by price or creation time, or what the order keeps beside it, may have
   * changed: another product at a ref, its price, variant prices, currency, creation time, store or category, a ref
   * emptied, a reset. A stock flip (a record replaced with another `inStock` only) does not: the wildcard's
   * per-product orders (search/service.ts `productOrder`) hold for one value, and every ref in a current one is live.
   */
  keyVersion = 0;
  readonly categoryKeys: string[] = [];
  readonly categoryIndex = new Map<string, number>();
  readonly currencies: string[] = [];
  /** 10 ** minorUnitExponent(currency), per currency index (major price = minor / this, as toMajor computes it). */
  readonly currencyScale: number[] = [];
  private readonly currencyIndex = new Map<string, number>();

  private intern(map: Map<string, number>, list: string[], key: string): number {
    let i = map.get(key);
    if (i === undefined) {
      map.set(key, (i = list.length));
      list.push(key);
    }
    return i;
  }

  private ensure(n: number): void {
    if (this.idKey.length >= n) return;
    this.idKey = grown(this.idKey, n);
    this.gen = grown(this.gen, n);
    this.store = grown(this.store, n);
    this.inStock = grown(this.inStock, n);
    this.category = grown(this.category, n);
    this.priceMinor = grown(this.priceMinor, n);
    this.currency = grown(this.currency, n);
    this.createdMs = grown(this.createdMs, n);
  }

  set(ref: number, p: RankableProduct): void {
    this.ensure(ref + 1);
    while (this.records.length <= ref) {
      this.records.push(undefined);
      this.ids.push("");
    }
    const before = this.records[ref];
    if (before !== undefined) this.storeProducts[this.store[ref]!]!--;
    if (
      before === undefined ||
      before.id !== p.id ||
      before.priceMinor !== p.priceMinor ||
      before.prices !== p.prices ||
      before.currency !== p.currency ||
      before.createdAt !== p.createdAt ||
      before.storeSlug !== p.storeSlug ||
      before.category !== p.category
    ) {
      this.keyVersion++;
    }
    this.records[ref] = p;
    if (this.ids[ref] !== p.id) this.gen[ref] = (this.gen[ref]! + 1) & 0x7fff_ffff;
    this.ids[ref] = p.id;
    this.idKey[ref] = idOrderKey(p.id);
    const store = this.intern(this.storeIndex, this.storeSlugs, p.storeSlug);
    this.store[ref] = store;
    this.storeProducts[store] = (this.storeProducts[store] ?? 0) + 1;
    this.inStock[ref] = p.inStock ? 1 : 0;
    const key = p.category === null ? null : categoryKey(p.category);
    this.category[ref] = key === null ? -1 : this.intern(this.categoryIndex, this.categoryKeys, key);
    this.priceMinor[ref] = p.priceMinor;
    this.prices[ref] = p.prices;
    let c = this.currencyIndex.get(p.currency);
    if (c === undefined) {
      this.currencyIndex.set(p.currency, (c = this.currencies.length));
      this.currencies.push(p.currency);
      this.currencyScale.push(10 ** minorUnitExponent(p.currency));
    }
    this.currency[ref] = c;
    this.createdMs[ref] = Date.parse(p.createdAt) || 0;
  }

  unset(ref: number): void {
    if (ref >= this.records.length) return;
    if (this.records[ref] !== undefined) this.storeProducts[this.store[ref]!]!--;
    this.keyVersion++;
    this.records[ref] = undefined;
    this.gen[ref] = (this.gen[ref]! + 1) & 0x7fff_ffff;
    this.ids[ref] = "";
    this.prices[ref] = undefined;
  }

  reset(): void {
    this.records.length = 0;
    this.ids.length = 0;
    this.prices.length = 0;
    this.storeProducts.length = 0;
    this.keyVersion++;
  }

  /** Refs the columns cover (live or free). */
  get size(): number {
    return this.records.length;
  }
}
