/**
 * The catalog read model: query functions over the pool (never through the store actor) that return records,
 * the spec's MerchantSummary and ProductDetail, with eligibility applied. Writes go through `store/<slug>`;
 * reads come from here (docs/decisions.md, "Catalog: writes through the store actor, reads from a read model").
 *
 * Eligibility is `isStoreEligible` from search/ranking.ts (BASIC or higher, trust >= 0.3, not suspended or
 * hidden) for every product and merchant read, so search and reads can never disagree. An ineligible store or a
 * product of one reads exactly like an unknown one (404).
 */
import type { Sql } from "../../infra/db.ts";
import { fail } from "../runtime/errors.ts";
import { agentCheckoutOf, freshnessTier, isStoreEligible, type FreshnessTier, type MerchantSummary, type StoreSnapshot } from "../../search/ranking.ts";
import { agentPolicies, policiesView, type PoliciesView, type ShippingSummary } from "./ingest.ts";
import {
  productFromRow,
  shippingZoneFromRow,
  storeFromRow,
  toMajor,
  type ProductRecord,
  type ProductRow,
  type ShippingZone,
  type ShippingZoneRow,
  type StoreRecord,
  type StoreRow,
} from "./schemas.ts";
import { isUuid } from "../../infra/uuid.ts";

export type { MerchantSummary } from "../../search/ranking.ts";

/** The spec's MerchantSummary lists UNVERIFIED..PREMIUM; QUALIFIED (registry-checked) is shown as PREMIUM there. */
export function displayVerificationLevel(level: StoreRecord["verificationLevel"]): "UNVERIFIED" | "BASIC" | "STANDARD" | "PREMIUM" {
  return level === "QUALIFIED" ? "PREMIUM" : level;
}

export function isEligibleStore(store: Pick<StoreRecord, "trustScore" | "verificationLevel" | "operationalStatus">): boolean {
  return isStoreEligible({ trustScore: store.trustScore, verificationLevel: store.verificationLevel, storeStatus: store.operationalStatus });
}

/** EU-qualified: registry-checked (QUALIFIED) and established in the EU. */
export function isEuQualified(store: Pick<StoreRecord, "verificationLevel" | "euBased">): boolean {
  return store.verificationLevel === "QUALIFIED" && store.euBased;
}

export function merchantSummary(store: StoreRecord): MerchantSummary {
  return {
    slug: store.slug,
    name: store.name,
    trustScore: store.trustScore,
    verificationLevel: displayVerificationLevel(store.verificationLevel),
    storeStatus: store.operationalStatus === "deprioritized" ? "deprioritized" : "active",
    lastSyncAt: store.lastSyncAt,
  };
}

/** What search ranking needs of a store (accuracies unknown until the trust engine publishes components). */
export function storeSnapshot(store: StoreRecord): StoreSnapshot {
  return {
    slug: store.slug,
    name: store.name,
    trustScore: store.trustScore,
    verificationLevel: store.verificationLevel,
    storeStatus: store.operationalStatus,
    lastSyncAt: store.lastSyncAt,
    euQualified: isEuQualified(store),
    priceAccuracy: null,
    availabilityAccuracy: null,
  };
}

/**
 * `shipping_summary` of the store `s` (`ShippingSummary`): its zone count and the zone a destination-less cart is
 * charged by (the cheapest country-wide zone of its own country in its currency; the rule of `domesticShipping` in
 * actors/store/commerce.ts, ties broken as `shippingOptions` does).
 */
function shippingSummaryColumn(sql: Sql) {
  return sql`(SELECT jsonb_build_object('zones', count(*), 'domestic',
      (SELECT jsonb_build_object('name', d.name, 'freeOverMinor', d.free_over_minor, 'minDays', d.min_days, 'maxDays', d.max_days)
       FROM shipping_zones d WHERE d.store_slug = s.slug AND d.currency = s.currency AND s.country = ANY(d.countries)
         AND cardinality(d.postal_prefixes) = 0 ORDER BY d.base_minor, d.per_item_minor, d.name LIMIT 1))
    FROM shipping_zones a WHERE a.store_slug = s.slug) AS shipping_summary`;
}

/**
 * A store record as agents are shown it: its policies' shipping promises are its zones' (`agentPolicies`), so the
 * ProductDetail policies, the merchant profile, MCP and compare say what the cart charges (audit A2-F12).
 */
function storeFromReadRow(row: StoreRow & { shipping_summary?: unknown }): StoreRecord {
  const store = storeFromRow(row);
  const summary = (typeof row.shipping_summary === "string" ? JSON.parse(row.shipping_summary) : row.shipping_summary) as ShippingSummary | null | undefined;
  if (!summary) return store;
  const domestic = summary.domestic && { ...summary.domestic, freeOverMinor: summary.domestic.freeOverMinor === null ? null : Number(summary.domestic.freeOverMinor) };
  return { ...store, policies: agentPolicies(store.policies, { zones: Number(summary.zones), domestic }) };
}

export async function findStore(sql: Sql, slug: string): Promise<StoreRecord | null> {
  const rows = await sql<StoreRow[]>`SELECT s.*, ${shippingSummaryColumn(sql)} FROM stores s WHERE s.slug = ${slug}`;
  return rows[0] ? storeFromReadRow(rows[0]) : null;
}

/**
 * Every store, as stored: its callers (search snapshots, the public directory's MerchantSummary) show no policies, so
 * the shipping summary of `findStore` is not read (search's catch-up lists every store on each run).
 */
export async function listStores(sql: Sql): Promise<StoreRecord[]> {
  return (await sql<StoreRow[]>`SELECT * FROM stores ORDER BY slug`).map(storeFromRow);
}

/** The store when it exists and is eligible, else null: an ineligible store reads as an unknown one. */
export async function findEligibleStore(sql: Sql, slug: string): Promise<StoreRecord | null> {
  const store = await findStore(sql, slug);
  return store && isEligibleStore(store) ? store : null;
}

/** The store when it exists and is eligible; otherwise 404 store_not_found (ineligible reads like unknown). */
export async function getEligibleStore(sql: Sql, slug: string): Promise<StoreRecord> {
  const store = await findEligibleStore(sql, slug);
  if (!store) throw fail("store_not_found", `No eligible merchant ${slug}.`);
  return store;
}

export interface EligibleProduct {
  product: ProductRecord;
  store: StoreRecord;
}

/**
 * The product as an agent can buy it now: units held by pending checkouts (`reserved_quantity`, per variant
 * `variant_reserved`) are taken off the stock, and nothing left means not in stock. It is the cart's
 * `available = stock − reserved` (actors/store/commerce.ts), so detail, availability, compare and their agentHint
 * never say "in stock" for a product a cart is refused (audit A7 MED-1). Untracked stock (null) stays null.
 */
export function buyableProduct(product: ProductRecord, reserved: number, variantReserved: Readonly<Record<string, number>> | null): ProductRecord {
  return {
    ...product,
    ...buyableStock(product.stockQuantity, reserved, product.inStock),
    variants: product.variants.map((v) => ({ ...v, ...buyableStock(v.stockQuantity, variantReserved?.[v.id] ?? 0, v.inStock) })),
  };
}

/**
 * Stock that can be bought: `stock − held`, and in stock only while some is left. Untracked stock (null) is
 * unlimited: its `inStock` stands. One rule for product reads (`buyableProduct`) and the search index
 * (search/service.ts reads the same columns), so search's `inStock` filter and ranking say what product reads say.
 */
export function buyableStock(stock: number | null, held: number, inStock: boolean): { stockQuantity: number | null; inStock: boolean } {
  if (stock === null) return { stockQuantity: null, inStock };
  const left = inStock ? Math.max(0, stock - held) : 0;
  return { stockQuantity: left, inStock: inStock && left > 0 };
}

/**
 * Active products of eligible stores, by id; unknown, inactive and ineligible ids are simply absent. Stock is what
 * can be bought (`buyableProduct`): held units are not shown as available.
 */
export async function findEligibleProducts(sql: Sql, ids: readonly string[]): Promise<Map<string, EligibleProduct>> {
  const wanted = [...new Set(ids.filter((id) => isUuid(id)).map((id) => id.toLowerCase()))];
  const out = new Map<string, EligibleProduct>();
  if (wanted.length === 0) return out;
  const rows = await sql<(ProductRow & { s: StoreRow; shipping_summary: unknown; reserved_quantity: number | null; variant_reserved: unknown })[]>`
    SELECT p.*, to_jsonb(s.*) AS s, ${shippingSummaryColumn(sql)} FROM products p JOIN stores s ON s.slug = p.store_slug
    WHERE p.id = ANY(${wanted}::uuid[]) AND p.active`;
  for (const row of rows) {
    const store = storeFromReadRow({ ...row.s, shipping_summary: row.shipping_summary });
    if (!isEligibleStore(store)) continue;
    const held = (typeof row.variant_reserved === "string" ? JSON.parse(row.variant_reserved) : row.variant_reserved) as Record<string, number> | null;
    out.set(row.id, { product: buyableProduct(productFromRow(row), Number(row.reserved_quantity ?? 0), held), store });
  }
  return out;
}

/** One eligible product, else 404 not_found. */
export async function getEligibleProduct(sql: Sql, id: string): Promise<EligibleProduct> {
  const found = (await findEligibleProducts(sql, [id.toLowerCase()])).get(id.toLowerCase());
  if (!found) throw fail("not_found", "Product not found or not available.", { productId: id });
  return found;
}

export interface ProductDetail {
  id: string;
  title: string;
  description: string;
  price: number;
  compareAtPrice: number | null;
  currency: string;
  inStock: boolean;
  stockQuantity: number | null;
  images: string[];
  variants: Record<string, unknown>[];
  attributes: Record<string, unknown>;
  category: string | null;
  merchant: MerchantSummary;
  policies: PoliciesView;
  freshnessTier: FreshnessTier;
}

export function toProductDetail(product: ProductRecord, store: StoreRecord, now: Date): ProductDetail {
  return {
    id: product.id,
    title: product.title,
    description: product.description,
    price: toMajor(product.priceMinor, product.currency),
    compareAtPrice: product.compareAtPriceMinor === null ? null : toMajor(product.compareAtPriceMinor, product.currency),
    currency: product.currency,
    inStock: product.inStock,
    stockQuantity: product.stockQuantity,
    images: product.images,
    variants: product.variants.map(({ priceMinor, ...v }) => ({
      ...v,
      price: priceMinor === null ? toMajor(product.priceMinor, product.currency) : toMajor(priceMinor, product.currency),
      // The id that names this variant in ACP/UCP items (docs/protocols.md "Variants"): variant ids alone are not unique.
      itemId: `${product.id}:${v.id}`,
    })),
    attributes: { ...product.attributes, ...(product.brand ? { brand: product.brand } : {}), ...(product.gtin ? { gtin: product.gtin } : {}) },
    category: product.category,
    // a checkout at a store below the agent-checkout threshold is refused (NOT_ELIGIBLE): the read says so up front,
    // as search's summary does (audit A7 LOW-4)
    merchant: { ...merchantSummary(store), ...agentCheckoutOf(store.trustScore) },
    policies: policiesView(store.policies, store.currency),
    freshnessTier: freshnessTier(store.lastSyncAt, now),
  };
}

export interface PricePoint {
  priceMinor: number;
  currency: string;
  recordedAt: string;
}

/**
 * At most this many points in a price-history window (audit Q-3): one an hour over 30 days. A merchant writes one
 * observation per catalog write that changes a price, with no bound on how many, so the whole series made the answer
 * grow without bound (200,000 observations in 30 days: 10.5 MB) and, past ~1,000,000, a 500.
 */
export const PRICE_HISTORY_MAX_POINTS = 720;

/** The longest window a read answers (gateway/rest/products.ts PRICE_HISTORY_DAYS): retention keeps this much. */
export const PRICE_HISTORY_LONGEST_DAYS = 90;

/**
 * The storage's grain (migration 0098): a row is at most one hour of one currency of one product, the observations
 * of that hour folded into it (actors/store/index.ts ingestCatalog). An hour is the finest span a window answers
 * (30 days / PRICE_HISTORY_MAX_POINTS), and every window's span (1, 2 or 3 h) is a whole number of them on the
 * epoch's grid, so a row never straddles a span or a window's start.
 */
export const PRICE_HISTORY_ROW_SECONDS = 3600;

export interface PriceWindow {
  /** The last observation before the window, in any currency (the price the window opened at). */
  opening: PricePoint | null;
  /**
   * The window's rows in `currency`, oldest first, each its hour's last observation at its own time: every one when
   * there are at most PRICE_HISTORY_MAX_POINTS, else the last one of each of PRICE_HISTORY_MAX_POINTS equal spans of
   * the window (the price the span closed at, with its own time), so still real observations.
   */
  points: PricePoint[];
  /** Lowest and highest price of ALL the window's observations in `currency` (null without any): exact, not sampled. */
  lowestMinor: number | null;
  highestMinor: number | null;
  /** How many rows (observation-hours) the window holds in `currency`. */
  observations: number;
  /** The window's first observation in `currency` (its price, and its row's time). */
  first: PricePoint | null;
}

/**
 * The window's observations in `currency` (bounded, see PriceWindow), plus the last one before the window.
 *
 * The window starts on its span's grid (`since`): `days` before `now` rounded up to the next multiple of the span
 * (1 h for 30 days, 2 h for 60, 3 h for 90) since the epoch, so it covers at most PRICE_HISTORY_MAX_POINTS spans and
 * every stored hour lies wholly inside it or before it: its lowest, highest, opening and first price are exact over
 * the observations from `since` on, although rows fold an hour's observations. A product's rows are at most one per
 * hour and currency, and retention keeps 90 days of them (and the last one before), so the read's cost is bounded
 * however often its price changes (docs/catalog.md "Price history").
 */
export async function priceHistory(sql: Sql, productId: string, currency: string, days: number, now: Date): Promise<PriceWindow> {
  const span = (days * 86_400) / PRICE_HISTORY_MAX_POINTS; // seconds: 3600, 7200 or 10800
  const since = new Date(Math.ceil((now.getTime() - days * 86_400_000) / (span * 1000)) * span * 1000);
  type Row = { price_minor: number; first_minor: string | null; currency: string; recorded_at: Date };
  // Per span of the window: how many rows, the lowest and highest observed, and the last row (its close). One hashed
  // aggregate over the window's rows and at most PRICE_HISTORY_MAX_POINTS index probes for the closes (date_part's
  // float8, not extract's numeric, keeps the grouping cheap). A row's own lowest and highest (NULL: one observation,
  // its price) cover the observations folded into it.
  const spans = await sql<{ n: number; lo: string; hi: string; price_minor: number; first_minor: string | null; currency: string; recorded_at: Date }[]>`
    WITH s AS (
      SELECT count(*)::int AS n, min(coalesce(lo_minor, price_minor)) AS lo, max(coalesce(hi_minor, price_minor)) AS hi, max(recorded_at) AS at
      FROM product_price_history
      WHERE product_id = ${productId} AND currency = ${currency} AND recorded_at >= ${since} AND recorded_at <= ${now}
      GROUP BY least(floor(date_part('epoch', recorded_at - ${since}::timestamptz) / ${span}::float8)::int, ${PRICE_HISTORY_MAX_POINTS - 1}::int)
    )
    SELECT s.n, s.lo::text AS lo, s.hi::text AS hi, c.price_minor, c.first_minor, c.currency, c.recorded_at FROM s
    CROSS JOIN LATERAL (
      SELECT price_minor, first_minor::text AS first_minor, currency, recorded_at FROM product_price_history h
      WHERE h.product_id = ${productId} AND h.recorded_at = s.at AND h.currency = ${currency} ORDER BY h.id DESC LIMIT 1
    ) c
    ORDER BY c.recorded_at`;
  let n = 0;
  let lo: number | null = null;
  let hi: number | null = null;
  for (const x of spans) {
    n += x.n;
    lo = lo === null ? Number(x.lo) : Math.min(lo, Number(x.lo));
    hi = hi === null ? Number(x.hi) : Math.max(hi, Number(x.hi));
  }
  // within the bound: every row, as before
  const rows =
    n <= PRICE_HISTORY_MAX_POINTS
      ? await sql<Row[]>`
          SELECT price_minor, first_minor::text AS first_minor, currency, recorded_at FROM product_price_history
          WHERE product_id = ${productId} AND currency = ${currency} AND recorded_at >= ${since} AND recorded_at <= ${now}
          ORDER BY recorded_at, id`
      : spans;
  const first =
    n <= PRICE_HISTORY_MAX_POINTS
      ? rows.slice(0, 1)
      : await sql<Row[]>`
          SELECT price_minor, first_minor::text AS first_minor, currency, recorded_at FROM product_price_history
          WHERE product_id = ${productId} AND currency = ${currency} AND recorded_at >= ${since} AND recorded_at <= ${now}
          ORDER BY recorded_at, id LIMIT 1`;
  const before = await sql<Row[]>`
    SELECT price_minor, first_minor::text AS first_minor, currency, recorded_at FROM product_price_history
    WHERE product_id = ${productId} AND recorded_at < ${since} ORDER BY recorded_at DESC, id DESC LIMIT 1`;
  const map = (r: Row): PricePoint => ({
    priceMinor: Number(r.price_minor),
    currency: r.currency.trim(),
    recordedAt: new Date(r.recorded_at).toISOString(),
  });
  // the first row's first observation: a row keeps the price its hour opened at when others folded into it
  const opened = (r: Row): PricePoint => ({ ...map(r), priceMinor: Number(r.first_minor ?? r.price_minor) });
  return {
    opening: before[0] ? map(before[0]) : null,
    points: rows.map(map),
    lowestMinor: lo,
    highestMinor: hi,
    observations: n,
    first: first[0] ? opened(first[0]) : null,
  };
}

export async function shippingZonesOf(sql: Sql, slug: string): Promise<ShippingZone[]> {
  return (await sql<ShippingZoneRow[]>`SELECT * FROM shipping_zones WHERE store_slug = ${slug} ORDER BY name`).map(shippingZoneFromRow);
}

/** Every zone of these stores, by store slug (a cart with a destination is quoted from them). */
export async function shippingZonesOfStores(sql: Sql, slugs: readonly string[]): Promise<Map<string, ShippingZone[]>> {
  const out = new Map<string, ShippingZone[]>(slugs.map((s) => [s, []]));
  if (slugs.length === 0) return out;
  const rows = await sql<ShippingZoneRow[]>`SELECT * FROM shipping_zones WHERE store_slug = ANY(${[...slugs]}::text[]) ORDER BY store_slug, name`;
  for (const r of rows) out.get(r.store_slug)?.push(shippingZoneFromRow(r));
  return out;
}

export async function activeProductCount(sql: Sql, slug: string): Promise<number> {
  const [row] = await sql<{ n: number }[]>`SELECT count(*)::int AS n FROM products WHERE store_slug = ${slug} AND active`;
  return row?.n ?? 0;
}

/**
 * Merchant write routes: the caller must own the store or be an operator. Anything else, including a store that
 * does not exist, is 404 store_not_found so other merchants' slugs are not revealed. The record is the stored one:
 * its policies are what the merchant wrote (the dashboard's forms show and send them back), not `agentPolicies`.
 */
export async function assertStoreWriter(sql: Sql, slug: string, user: { id: string; role: string }): Promise<StoreRecord> {
  // the stored record (the merchant's own policies, not the agent view of `findStore`): writers send it back
  const rows = await sql<StoreRow[]>`SELECT * FROM stores WHERE slug = ${slug}`;
  const store = rows[0] ? storeFromRow(rows[0]) : null;
  if (!store || (user.role !== "operator" && store.ownerUserId !== user.id)) throw fail("store_not_found", `No store ${slug} of yours.`);
  return store;
}
