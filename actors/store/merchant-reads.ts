/**
 * Merchant-side reads of a store's own data (the dashboard and the merchant REST routes): which stores a user may
 * manage, the catalog with data-quality flags, orders with their history, refunds, the agent allowlist, coupons
 * and order activity per day, the policies and shipping zones as their PUTs take them. Committed rows only, straight from the pool (no actor turn): writes still go through
 * `store/<slug>`. Callers check ownership first (`assertStoreWriter`); these functions trust the slug they get.
 */
import type { Sql } from "../../infra/db.ts";
import { freshnessTier, type FreshnessTier } from "../../search/ranking.ts";
import { refundView, type RefundView } from "./commerce.ts";
import { orderTotalMinor } from "./order-rows.ts";
import type { PoliciesInput, ShippingZoneInput } from "./ingest.ts";
import { shippingZonesOf } from "./reads.ts";
import { storeFromRow, toMajor, type NegotiationRules, type StoreRecord, type StoreRow } from "./schemas.ts";

/** Stores a user may manage: the ones it owns, or every store for an operator. */
export async function storesOfUser(sql: Sql, user: { id: string; role: string }): Promise<StoreRecord[]> {
  const rows =
    user.role === "operator"
      ? await sql<StoreRow[]>`SELECT * FROM stores ORDER BY slug`
      : await sql<StoreRow[]>`SELECT * FROM stores WHERE owner_user_id = ${user.id} ORDER BY slug`;
  return rows.map(storeFromRow);
}

// ------------------------------------------------------------------------------------------------ catalog

/** Product staleness: a row no merchant sync touched for this long is flagged in the dashboard. */
export const PRODUCT_STALE_AFTER_DAYS = 7;

export type CatalogFlag = "missing_gtin" | "missing_images" | "stale" | "out_of_stock" | "inactive";
export const CATALOG_FLAGS: readonly CatalogFlag[] = ["missing_gtin", "missing_images", "stale", "out_of_stock", "inactive"];

export interface CatalogProductRow {
  id: string;
  externalId: string;
  title: string;
  priceMinor: number;
  currency: string;
  stockQuantity: number | null;
  inStock: boolean;
  active: boolean;
  gtin: string | null;
  imageCount: number;
  syncedAt: string;
  flags: CatalogFlag[];
}

export interface CatalogQuality {
  products: number;
  active: number;
  missingGtin: number;
  missingImages: number;
  stale: number;
  outOfStock: number;
  lastSyncAt: string | null;
  freshness: FreshnessTier;
  /** Required policy fields the store has not declared (returns, window, shipping estimate, support SLA). */
  missingPolicies: string[];
}

const REQUIRED_POLICY_FIELDS = ["returnWindowDays", "shippingEstimateDays", "supportResponseTimeSla"] as const;

/** Pure: the dashboard's flags of one product. */
export function productFlags(p: { gtin: string | null; imageCount: number; syncedAt: Date; inStock: boolean; active: boolean }, now: Date): CatalogFlag[] {
  const flags: CatalogFlag[] = [];
  if (!p.gtin) flags.push("missing_gtin");
  if (p.imageCount === 0) flags.push("missing_images");
  if (now.getTime() - p.syncedAt.getTime() > PRODUCT_STALE_AFTER_DAYS * 86_400_000) flags.push("stale");
  if (!p.inStock) flags.push("out_of_stock");
  if (!p.active) flags.push("inactive");
  return flags;
}

/** Pure: required policy fields that are missing (acceptsReturns is always declared; the window only matters when returns are accepted). */
export function missingPolicyFields(p: Record<string, unknown>): string[] {
  return REQUIRED_POLICY_FIELDS.filter((k) => (k === "returnWindowDays" && p.acceptsReturns === false ? false : p[k] === undefined || p[k] === null || p[k] === ""));
}

export async function catalogQuality(sql: Sql, store: StoreRecord, now: Date): Promise<CatalogQuality> {
  const staleBefore = new Date(now.getTime() - PRODUCT_STALE_AFTER_DAYS * 86_400_000);
  const [r] = await sql<{ products: number; active: number; missing_gtin: number; missing_images: number; stale: number; out_of_stock: number }[]>`
    SELECT count(*)::int AS products,
      count(*) FILTER (WHERE active)::int AS active,
      count(*) FILTER (WHERE active AND (gtin IS NULL OR gtin = ''))::int AS missing_gtin,
      count(*) FILTER (WHERE active AND cardinality(images) = 0)::int AS missing_images,
      count(*) FILTER (WHERE active AND synced_at < ${staleBefore})::int AS stale,
      count(*) FILTER (WHERE active AND NOT in_stock)::int AS out_of_stock
    FROM products WHERE store_slug = ${store.slug}`;
  return {
    products: r?.products ?? 0,
    active: r?.active ?? 0,
    missingGtin: r?.missing_gtin ?? 0,
    missingImages: r?.missing_images ?? 0,
    stale: r?.stale ?? 0,
    outOfStock: r?.out_of_stock ?? 0,
    lastSyncAt: store.lastSyncAt,
    freshness: freshnessTier(store.lastSyncAt, now),
    missingPolicies: missingPolicyFields(store.policies as unknown as Record<string, unknown>),
  };
}

/** One page of the store's products (newest sync first), optionally only those with a flag. */
export async function listStoreProducts(
  sql: Sql,
  slug: string,
  opts: { limit: number; offset: number; flag?: CatalogFlag; now: Date },
): Promise<{ total: number; items: CatalogProductRow[] }> {
  const staleBefore = new Date(opts.now.getTime() - PRODUCT_STALE_AFTER_DAYS * 86_400_000);
  const where = {
    missing_gtin: sql`AND active AND (gtin IS NULL OR gtin = '')`,
    missing_images: sql`AND active AND cardinality(images) = 0`,
    stale: sql`AND active AND synced_at < ${staleBefore}`,
    out_of_stock: sql`AND active AND NOT in_stock`,
    inactive: sql`AND NOT active`,
  };
  const filter = opts.flag ? where[opts.flag] : sql``;
  const [{ n }] = await sql<{ n: number }[]>`SELECT count(*)::int AS n FROM products WHERE store_slug = ${slug} ${filter}`;
  const rows = await sql<{ id: string; external_id: string; title: string; price_minor: number; currency: string; stock_quantity: number | null; in_stock: boolean; active: boolean; gtin: string | null; image_count: number; synced_at: Date }[]>`
    SELECT id, external_id, title, price_minor, currency, stock_quantity, in_stock, active, gtin, cardinality(images)::int AS image_count, synced_at
    FROM products WHERE store_slug = ${slug} ${filter}
    ORDER BY active DESC, synced_at DESC, external_id LIMIT ${opts.limit} OFFSET ${opts.offset}`;
  return {
    total: n,
    items: rows.map((r) => ({
      id: r.id,
      externalId: r.external_id,
      title: r.title,
      priceMinor: Number(r.price_minor),
      currency: r.currency,
      stockQuantity: r.stock_quantity,
      inStock: r.in_stock,
      active: r.active,
      gtin: r.gtin,
      imageCount: r.image_count,
      syncedAt: r.synced_at.toISOString(),
      flags: productFlags({ gtin: r.gtin, imageCount: r.image_count, syncedAt: r.synced_at, inStock: r.in_stock, active: r.active }, opts.now),
    })),
  };
}

// ------------------------------------------------------------------------------------------------- orders

export interface StoreOrderRow {
  id: string;
  channel: "agent" | "human";
  status: string;
  /** The order's total: what was captured after an accepted amount mismatch, else what was priced (`orderTotalMinor`). */
  totalMinor: number;
  /** What the checkout priced (the items, discount, shipping and tax add up to it); equal to `totalMinor` but after an accepted amount mismatch. */
  pricedTotalMinor: number;
  refundedMinor: number;
  currency: string;
  paymentRail: string;
  agentKeyId: string | null;
  /** A capture waiting for the merchant's decision (amount_mismatch, finalization_failed), else null. */
  reconciliation: string | null;
  createdAt: string;
}

export interface StoreOrderDetail extends StoreOrderRow {
  items: { title: string; quantity: number; unitPriceMinor: number; productId: string | null }[];
  events: { at: string; type: string; fromStatus: string | null; toStatus: string | null; data: Record<string, unknown> }[];
  refunds: RefundView[];
}

interface OrderDbRow {
  id: string;
  channel: "agent" | "human";
  status: string;
  total_minor: number;
  captured_minor: number | null;
  refunded_minor: number;
  currency: string;
  payment_rail: string;
  agent_key_id: string | null;
  reconciliation: string | null;
  created_at: Date;
}

const orderRow = (r: OrderDbRow): StoreOrderRow => ({
  id: r.id,
  channel: r.channel,
  status: r.status,
  totalMinor: orderTotalMinor(r),
  pricedTotalMinor: Number(r.total_minor),
  refundedMinor: Number(r.refunded_minor),
  currency: r.currency,
  paymentRail: r.payment_rail,
  agentKeyId: r.agent_key_id,
  reconciliation: r.reconciliation,
  createdAt: r.created_at.toISOString(),
});

/**
 * The order filter that is not a status (review R1-L2): part of the capture refunded, the rest not. A partial refund
 * keeps the order's fulfilment status (audit A1 M3), so no status says it; `partially_refunded`, the status it used
 * to be, is accepted as the same filter (no order has that status any more: migration 0035).
 */
export const PARTLY_REFUNDED = "partly_refunded";
const PARTLY_REFUNDED_ALIASES: ReadonlySet<string> = new Set([PARTLY_REFUNDED, "partially_refunded"]);

/** Newest first; optional status (or `partly_refunded`) and channel filters. */
export async function listStoreOrders(
  sql: Sql,
  slug: string,
  opts: { limit: number; offset: number; status?: string; channel?: "agent" | "human"; reconciliation?: boolean },
): Promise<{ total: number; items: StoreOrderRow[] }> {
  const status = !opts.status
    ? sql``
    : PARTLY_REFUNDED_ALIASES.has(opts.status)
      ? sql`AND refunded_minor > 0 AND refunded_minor < COALESCE(captured_minor, total_minor)`
      : sql`AND status = ${opts.status}`;
  const channel = opts.channel ? sql`AND channel = ${opts.channel}` : sql``;
  const flagged = opts.reconciliation ? sql`AND reconciliation IS NOT NULL` : sql``;
  const [{ n }] = await sql<{ n: number }[]>`SELECT count(*)::int AS n FROM orders WHERE store_slug = ${slug} ${status} ${channel} ${flagged}`;
  const rows = await sql<OrderDbRow[]>`
    SELECT id, channel, status, total_minor, captured_minor, refunded_minor, currency, payment_rail, agent_key_id, reconciliation, created_at
    FROM orders WHERE store_slug = ${slug} ${status} ${channel} ${flagged}
    ORDER BY created_at DESC, id LIMIT ${opts.limit} OFFSET ${opts.offset}`;
  return { total: n, items: rows.map(orderRow) };
}

/**
 * Keys of an order event's `data` the store is never shown (audit I-1/I-2): the buyer's side of the payment. The
 * payment intent id and the agent's checkout session id (which embeds its cart id) name the buyer's payment and
 * session, not anything the merchant acts on (its order id, capture reference, refund ids and amounts are what it
 * uses); the intent id once was the whole approval capability, and the session id let another store of a
 * multi-store cart derive this store's intent id. Filtered when read, so events written before are covered too.
 */
const BUYER_SIDE_EVENT_KEYS: ReadonlySet<string> = new Set(["intent_id", "checkout_session_id", "cart_id"]);

/** An event's data as the merchant sees it: without the buyer-side keys. */
export function merchantEventData(data: Record<string, unknown> | null | undefined): Record<string, unknown> {
  if (!data || typeof data !== "object") return {};
  return Object.fromEntries(Object.entries(data).filter(([k]) => !BUYER_SIDE_EVENT_KEYS.has(k)));
}

/** One order of the store with items, history (oldest first) and refund requests; null when not this store's. */
export async function storeOrderDetail(sql: Sql, slug: string, orderId: string): Promise<StoreOrderDetail | null> {
  const [o] = await sql<OrderDbRow[]>`
    SELECT id, channel, status, total_minor, captured_minor, refunded_minor, currency, payment_rail, agent_key_id, reconciliation, created_at
    FROM orders WHERE id = ${orderId} AND store_slug = ${slug}`;
  if (!o) return null;
  const items = await sql<{ title: string; quantity: number; unit_price_minor: number; product_id: string | null }[]>`
    SELECT title, quantity, unit_price_minor, product_id FROM order_items WHERE order_id = ${orderId} ORDER BY id`;
  const events = await sql<{ at: Date; type: string; from_status: string | null; to_status: string | null; data: Record<string, unknown> }[]>`
    SELECT at, type, from_status, to_status, data FROM order_events WHERE order_id = ${orderId} ORDER BY at, id`;
  return {
    ...orderRow(o),
    items: items.map((i) => ({ title: i.title, quantity: i.quantity, unitPriceMinor: Number(i.unit_price_minor), productId: i.product_id })),
    events: events.map((e) => ({ at: e.at.toISOString(), type: e.type, fromStatus: e.from_status, toStatus: e.to_status, data: merchantEventData(e.data) })),
    refunds: await listRefunds(sql, slug, { orderId }),
  };
}

export interface DayActivity {
  day: string;
  humanOrders: number;
  agentOrders: number;
}

/** Orders per UTC day over the last `days` days (every day present, zero when quiet), oldest first. */
export async function orderActivity(sql: Sql, slug: string, days: number, now: Date): Promise<DayActivity[]> {
  const start = new Date(Date.UTC(now.getUTCFullYear(), now.getUTCMonth(), now.getUTCDate()) - (days - 1) * 86_400_000);
  const rows = await sql<{ day: string; human: number; agent: number }[]>`
    SELECT to_char(date_trunc('day', created_at AT TIME ZONE 'UTC'), 'YYYY-MM-DD') AS day,
      count(*) FILTER (WHERE channel = 'human')::int AS human, count(*) FILTER (WHERE channel = 'agent')::int AS agent
    FROM orders WHERE store_slug = ${slug} AND created_at >= ${start} GROUP BY 1`;
  const byDay = new Map(rows.map((r) => [r.day, r]));
  const out: DayActivity[] = [];
  for (let i = 0; i < days; i++) {
    const day = new Date(start.getTime() + i * 86_400_000).toISOString().slice(0, 10);
    const r = byDay.get(day);
    out.push({ day, humanOrders: r?.human ?? 0, agentOrders: r?.agent ?? 0 });
  }
  return out;
}

// ------------------------------------------------------------------------------------ refunds, allowlist

export type RefundStatusFilter = "PENDING_APPROVAL" | "APPROVED" | "REJECTED" | "REFUNDED" | "FAILED";

/** The most refund requests one unpaged read returns (the merchant order detail's `refunds`). */
export const REFUNDS_UNPAGED_MAX = 500;

type RefundFilter = { status?: RefundStatusFilter; orderId?: string };

/** The store's refund requests matching `f`, newest first, `limit` of them from `offset`. */
async function refundRows(sql: Sql, slug: string, f: RefundFilter, limit: number, offset: number): Promise<RefundView[]> {
  const rows = await sql`SELECT id, order_id, store_slug, status, amount_minor, currency, reason, refund_ref, created_at, updated_at
    FROM order_refunds WHERE store_slug = ${slug} ${refundWhere(sql, f)} ORDER BY created_at DESC, id LIMIT ${limit} OFFSET ${offset}`;
  return rows.map((r) => refundView(r as never));
}

function refundWhere(sql: Sql, f: RefundFilter) {
  return sql`${f.status ? sql`AND status = ${f.status}` : sql``} ${f.orderId ? sql`AND order_id = ${f.orderId}` : sql``}`;
}

/**
 * Refund requests of the store, newest first, by status or order, one page at a time (`total`: all that match), for
 * GET /merchant/stores/{slug}/refunds (audit A1 M2: an unpaged list hid every request past the 500 newest).
 */
export async function listRefundsPage(sql: Sql, slug: string, opts: RefundFilter & { limit: number; offset: number }): Promise<{ total: number; items: RefundView[] }> {
  const total = await countRefunds(sql, slug, opts);
  return { total, items: await refundRows(sql, slug, opts, opts.limit, opts.offset) };
}

/** How many of the store's refund requests match (the dashboard's badges, a page's `total`). */
export async function countRefunds(sql: Sql, slug: string, f: RefundFilter): Promise<number> {
  const [{ n }] = await sql<{ n: number }[]>`SELECT count(*)::int AS n FROM order_refunds WHERE store_slug = ${slug} ${refundWhere(sql, f)}`;
  return n;
}

/** Refund requests of the store, newest first (the first REFUNDS_UNPAGED_MAX), by status or order: no count. */
export async function listRefunds(sql: Sql, slug: string, opts: RefundFilter = {}): Promise<RefundView[]> {
  return refundRows(sql, slug, opts, REFUNDS_UNPAGED_MAX, 0);
}

export interface AllowlistEntry {
  key_id: string;
  status: string;
  created_at: string;
  updated_at: string;
}

export type AllowlistStatusFilter = "allowed" | "blocked";

/**
 * Agent keys bound to the store (a key's first order creates the binding, and nothing deletes one), newest first, by
 * status, one page at a time (`total`: all that match), for GET /merchant/stores/{slug}/allowlist and the dashboard's
 * settings page. Audit M-1: the list was read and answered whole, and any key that ever started a payment at the store
 * adds a row (20,000 keys made a 3 MB answer and a 12 MB settings page), so it is paged like the refunds
 * (`listRefundsPage`, audit A1 M2). Newest first: the keys a merchant looks for are the ones that just ordered; the
 * key id breaks ties so that pages neither repeat nor skip a binding made in the same instant.
 */
export async function listAllowlistPage(
  sql: Sql,
  slug: string,
  opts: { status?: AllowlistStatusFilter; limit: number; offset: number },
): Promise<{ total: number; items: AllowlistEntry[] }> {
  const status = opts.status ? sql`AND status = ${opts.status}` : sql``;
  const [{ n }] = await sql<{ n: number }[]>`SELECT count(*)::int AS n FROM store_agent_allowlist WHERE store_slug = ${slug} ${status}`;
  const rows = await sql<{ agent_key_id: string; status: string; created_at: Date; updated_at: Date }[]>`
    SELECT agent_key_id, status, created_at, updated_at FROM store_agent_allowlist WHERE store_slug = ${slug} ${status}
    ORDER BY created_at DESC, agent_key_id LIMIT ${opts.limit} OFFSET ${opts.offset}`;
  const items = rows.map((r) => ({ key_id: r.agent_key_id, status: r.status, created_at: r.created_at.toISOString(), updated_at: r.updated_at.toISOString() }));
  return { total: n, items };
}

// ------------------------------------------------------------------------------------------------ coupons

export interface StoreCoupon {
  code: string;
  kind: "percent" | "fixed";
  value: number;
  minSpendMinor: number;
  currency: string | null;
  expiresAt: string | null;
  usageLimit: number | null;
  usedCount: number;
  active: boolean;
}

export async function listCoupons(sql: Sql, slug: string): Promise<StoreCoupon[]> {
  const rows = await sql<{ code: string; kind: "percent" | "fixed"; value: number; min_spend_minor: number; currency: string | null; expires_at: Date | null; usage_limit: number | null; used_count: number; active: boolean }[]>`
    SELECT code, kind, value, min_spend_minor, currency, expires_at, usage_limit, used_count, active FROM coupons WHERE store_slug = ${slug} ORDER BY code`;
  return rows.map((r) => ({
    code: r.code,
    kind: r.kind,
    value: Number(r.value),
    minSpendMinor: Number(r.min_spend_minor),
    currency: r.currency,
    expiresAt: r.expires_at ? r.expires_at.toISOString() : null,
    usageLimit: r.usage_limit,
    usedCount: r.used_count,
    active: r.active,
  }));
}

// ------------------------------------------------------------------------------------ policies and shipping zones
// GET /policies and GET /shipping-zones answer the body their PUT takes (ingest.ts `PoliciesInput`,
// `ShippingZoneInput`): a client reads, changes one field and sends the answer back. They are the inverses of
// `policiesFromInput` and `zonesFromInput` (a change there is a change here: test/http/merchant-read-back.test.ts
// sends every answer back and checks that nothing moved).

/**
 * The policies the merchant declared, as PUT /policies takes them: `freeShippingThreshold` a decimal in the store's
 * currency, a field never declared left out (not the 30-day window refunds apply to a store that accepts returns
 * without declaring one, not the zones' promises agents are shown: `policiesView`, `agentPolicies`), and the
 * negotiation rules (null: none). A row stored before `policiesFromInput` refused a window at a store that takes no
 * returns shows the window refunds apply, 0, which PUT takes.
 */
export function declaredPolicies(store: StoreRecord): PoliciesInput & { negotiation: NegotiationRules | null } {
  const p = store.policies;
  const out: PoliciesInput = { acceptsReturns: p.acceptsReturns };
  if (p.returnWindowDays !== undefined) out.returnWindowDays = p.acceptsReturns ? p.returnWindowDays : 0;
  if (p.freeShippingThresholdMinor !== undefined) out.freeShippingThreshold = toMajor(p.freeShippingThresholdMinor, store.currency);
  if (p.restockingFeePercent !== undefined) out.restockingFeePercent = p.restockingFeePercent;
  if (p.shippingEstimateDays !== undefined) out.shippingEstimateDays = p.shippingEstimateDays;
  if (p.supportResponseTimeSla !== undefined) out.supportResponseTimeSla = p.supportResponseTimeSla;
  return { ...out, negotiation: store.negotiationRules };
}

/**
 * The store's zones as PUT /shipping-zones takes them (`{zones}`, by name): amounts decimals in each zone's currency,
 * `perItem` and `postalPrefixes` always given (0 and [] when none), `freeOver` null when shipping is never free. No
 * zone id: the PUT takes none (a zone sent back with the same terms keeps its row and id).
 */
export async function declaredShippingZones(sql: Sql, slug: string): Promise<{ zones: ShippingZoneInput[] }> {
  const zones = await shippingZonesOf(sql, slug);
  return {
    zones: zones.map((z) => ({
      name: z.name,
      countries: z.countries,
      postalPrefixes: z.postalPrefixes,
      currency: z.currency,
      base: toMajor(z.baseMinor, z.currency),
      perItem: toMajor(z.perItemMinor, z.currency),
      freeOver: z.freeOverMinor === null ? null : toMajor(z.freeOverMinor, z.currency),
      minDays: z.minDays,
      maxDays: z.maxDays,
    })),
  };
}
