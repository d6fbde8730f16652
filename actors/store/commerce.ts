/**
 * The commerce side of the `store/<slug>` actor: stock holds, orders, refunds and the agent allowlist. The
 * catalog engineer's actor (actors/store/index.ts) spreads `commerceMessages`/`commerceHandlers` into its
 * definition, so there is one writer per store for catalog and commerce alike.
 *
 * Commerce state is rows, not the actor's jsonb state: stock holds are conditional updates of
 * `products.reserved_quantity` (a CHECK and the WHERE clause make overselling impossible even if two hosts
 * briefly both own a store), orders/events/refunds are rows, and every order state change writes its webhook
 * outbox row in the same transaction. Rules live in the pure modules beside this file (order-machine.ts,
 * refunds.ts, inventory.ts); this file is the I/O around them.
 *
 * Messages (bodies below), all addressed to `store/<slug>`:
 * - `beginLeg`     hold the stock of one store's payment leg and write its order `pending` (once per session and
 *                  store; a retried attempt reuses the order). Shortage → STATE_EXECUTION_BLOCKED.
 * - `settleLeg`    `captured`: commit the stock, order `paid`; `released`: give the stock back, order stays pending.
 * - `cancelOrder`  the agent's cancel of a pending order whose session no longer holds it: canceled (its event
 *                  marked `canceled_by: agent`), stock released; answers whether this turn canceled it.
 * - `setOrderStatus` merchant moves (fulfilled, shipped, delivered, canceled; a pending cancel goes through the
 *                  cart's session, a paid/fulfilled cancel refunds the capture: refund-flow.ts).
 *   There is no agent message for a paid order: an agent cancels only pending orders and asks for money back
 *   with `proposeRefund`, which the merchant decides (gateway/rest/orders.ts, MCP cancel_order).
 * - `proposeRefund` (idempotent per caller key), `decideRefund`, `setAllowlist`.
 * Reminder `refunds`: drives again every refund of the store left APPROVED (refund-flow.ts).
 */
import { Type as T, type Static } from "@sinclair/typebox";
import type { Sql } from "../../infra/db.ts";
import { MINOR_UNIT_EXPONENTS_NOT_2, toMajor } from "../../search/money.ts";
import { isStoreEligible } from "../../search/ranking.ts";
import type { ActorContext } from "../runtime/define-actor.ts";
import { defineActor } from "../runtime/define-actor.ts";
import { ActorError, fail } from "../runtime/errors.ts";
import type { RidingWrite, SqlFragment } from "../runtime/state-write.ts";
import { enqueueWebhookEvent } from "../webhook/outbox.ts";
import { CATALOG_CHANGED, heldStockChanged } from "./messages.ts";
import { applyOrderEvent, refusedMove, type OrderActor, type OrderEvent, type OrderStatus } from "./order-machine.ts";
import { createdPayload, iso, loadOrder, loadRefund, moveOrder, orderTotalMinor, refundView, statusChangedPayload, type OrderRow, type RefundRow, type RefundView, type StatusChangedPayload } from "./order-rows.ts";
import { approveRefund, cancelPaidOrder, lockOrderOfRefund, merchantRepeatOfMove, railOfOrder, refundReminders, x402RefundRequestRefused } from "./refund-flow.ts";
import { applyRefundEvent, DEFAULT_RETURN_WINDOW_DAYS, refundRecordsOf, validateRefundRequest, type RefundStatus } from "./refunds.ts";
import { cancelPendingViaSession } from "../cart/cancel-pending.ts";
import { normalizeCouponCode } from "../cart/coupons.ts";
import { VELOCITY_READ_LIMIT, VELOCITY_WINDOW_MS } from "../payments/risk-gate.ts";
import { holdGuardColumns, holdGuardOf, type HoldGuardAsk, type HoldGuardColumns, type HoldGuardRead } from "../cart/hold-guard.ts";

export { refundReminders, refundView, type RefundView };

// ---------------------------------------------------------------------------------------------------------------
// Catalog reads for carts (until the read model offers stock holds and negotiated prices, one query here)

export interface CatalogLine {
  productId: string;
  storeSlug: string;
  title: string;
  priceMinor: number;
  currency: string;
  /** Units that can still be held: stock − held, or null when stock is not tracked; 0 when not in stock. */
  available: number | null;
  active: boolean;
  /** `available`: the variant's own units that can still be held (stock − held), null when untracked. */
  variants: { id: string; title?: string; priceMinor: number | null; stockQuantity: number | null; inStock: boolean; available: number | null }[];
  negotiated: { unitPriceMinor: number; expiresAt: number; currency: string } | null;
  store: {
    slug: string;
    eligible: boolean;
    trustScore: number | null;
    hostedStorefront: boolean;
    paymentMethods: string[];
    policyVersion: number;
    returnWindowDays: number | null;
    /** As declared (null: not declared, which takes returns): with returnWindowDays, the terms a payment records. */
    acceptsReturns: boolean | null;
    country: string;
    shipping: { baseMinor: number; perItemMinor: number; freeOverMinor: number | null } | null;
    /** Country-wide zones for its own country: more than one is a choice of methods the buyer makes (actors/cart/shipping.ts). */
    domesticShippingOptions: number;
    /** Whether the store has any shipping zone (a store with none ships free anywhere; docs/checkout.md "Shipping"). */
    hasShippingZones: boolean;
    /** Merchant enforcement rules (migration 0032): null = none; see docs/checkout.md "Enforcement". */
    enforcement: unknown;
    checkoutUrl: string | null;
  };
}

let negotiationTable: Promise<boolean> | undefined;
/** The negotiation table comes from the catalog area's migrations; the cart works without it. */
function hasNegotiationTable(sql: Sql): Promise<boolean> {
  negotiationTable ??= sql<{ t: string | null }[]>`SELECT to_regclass('negotiation_offers')::text AS t`.then((r) => r[0]?.t != null);
  return negotiationTable;
}

interface CatalogRow {
  id: string;
  store_slug: string;
  title: string;
  price_minor: number;
  currency: string;
  stock_quantity: number | null;
  reserved_quantity: number;
  in_stock: boolean;
  active: boolean;
  variants: Omit<CatalogLine["variants"][number], "available">[];
  variant_reserved: Record<string, number> | null;
  verification_level: string;
  trust_score: string | null;
  operational_status: string;
  hosted_storefront: boolean;
  payment_methods: string[];
  policy_version: number;
  policies: { returnWindowDays?: number; acceptsReturns?: boolean } | null;
  country: string;
  ship_base: number | null;
  ship_per_item: number | null;
  ship_free_over: number | null;
  ship_options: string | number | null;
  ship_any: boolean;
  neg_price: number | null;
  neg_expires: Date | null;
  neg_currency: string | null;
  checkout_enforcement: unknown;
  hosted_checkout_url: string | null;
}

// In-process hints that pick a cheaper statement shape for a leg of untracked stock (the common case: nothing to
// hold, so no products row to update and no reservation row to write or settle). They are never trusted for
// correctness: the light statements re-check in SQL and, when the hint was wrong, write nothing and leave the
// decision to the full statement. A statement that updates products or stock_reservations opens and locks those
// tables and all their indexes (6 on products) even when it changes no row; skipping it is the saving.
const HINT_LIMIT = 100_000;
/** Product ids whose stock was untracked when readCatalog last saw them. */
const untrackedSeen = new Set<string>();
/** Reservation ids whose leg began with nothing held (so no reservation row), until their settle. */
const nothingHeld = new Set<string>();
function remember(set: Set<string>, key: string): void {
  if (set.size >= HINT_LIMIT) set.clear();
  set.add(key);
}
function rememberUnheld(b: BeginLegBody): void {
  // A leg that claimed a negotiated offer settles by the full statement, which marks the offer used (paidRows). A
  // coupon's use needs nothing at settle: it was claimed with the hold (couponClaim).
  if (negotiatedLines(b).ids.length) {
    nothingHeld.delete(b.reservationId);
    return;
  }
  remember(nothingHeld, b.reservationId);
}

/**
 * The ids padded (with the last id repeated) to the next power of two: `p.id IN (...)` then has one statement
 * text per arity 1, 2, 4, … and each runs a generic plan whose row estimate is the arity. `p.id = ANY($1)` cannot:
 * its generic plan assumes ten ids, costs the lateral joins ten times, so Postgres kept choosing a fresh custom plan
 * (0.6–1.1 ms of planning, three reads per journey).
 */
export function listOfPlannedArity(ids: readonly string[]): string[] {
  let arity = 1;
  while (arity < ids.length) arity *= 2;
  const out = ids.slice();
  while (out.length < arity) out.push(ids[ids.length - 1]!);
  return out;
}

/**
 * The padded id list as `$1 , $2 …` fragments for `IN (…)`. Not `sql(list)`: postgres.js's Builder finds its
 * keyword by running six regexes over all the statement text before it, each with a `(?![\s\S]*\1)` lookahead
 * that rescans the rest — ~7 % of the Bun JS time of a checkout journey (three catalog reads, one leg hold).
 */
export function idListFragments(sql: Sql, ids: readonly string[]) {
  return listOfPlannedArity(ids).map((id, i) => (i === 0 ? sql`${id}` : sql`, ${id}`));
}

/**
 * `z`: the destination-less quote of a product's store — its cheapest country-wide domestic zone in the product's
 * currency — and `n`, how many such zones it has (more than one is a choice the buyer makes: docs/checkout.md).
 */
function domesticShipping(sql: Sql) {
  return sql`LEFT JOIN LATERAL (SELECT base_minor, per_item_minor, free_over_minor, count(*) OVER () AS n FROM shipping_zones z
        WHERE z.store_slug = p.store_slug AND z.currency = p.currency AND s.country = ANY(z.countries) AND cardinality(z.postal_prefixes) = 0
        ORDER BY base_minor LIMIT 1) z ON true`;
}

/** `ship_any`: whether the product's store has any shipping zone (one probe of the store's zone index). */
function shippingZoned(sql: Sql) {
  return sql`EXISTS (SELECT 1 FROM shipping_zones za WHERE za.store_slug = p.store_slug) AS ship_any`;
}

/** The risk gate's inputs read from the database: the key's creation time and its checkouts of the last hour. */
export interface RiskReadInputs {
  /**
   * ms since the epoch: the later of the agent key's creation and the caller's `identityCreatedAt` (an OAuth
   * principal, which has no agent_keys row); null with neither, which the gate takes for a caller created now (fail
   * closed: an owner nobody can date is a new one, never one 56 years old; audit X-2).
   */
  keyCreatedAt: number | null;
  /**
   * One time (ms) for each of the key's checkout sessions that has an order created in the hour before `now`: the
   * instant of one of its orders in that hour (the newest), at most VELOCITY_READ_LIMIT of them, the most recently
   * active first (`riskColumns`). The gate counts them (risk-gate.ts `countWithin`); every one lies in its hour.
   */
  recent: number[];
  /** The approval-hold guard's read (actors/cart/hold-guard.ts), present when the read was given a `HoldGuardAsk`. */
  holdGuard?: HoldGuardRead;
}

/**
 * Extra columns (scalar subqueries, evaluated once per statement as InitPlans) that carry `RiskReadInputs`, and the
 * hold guard's two when asked: a payment attempt reads both in one statement.
 *
 * `risk_recent`, the velocity input: a time for each checkout session of the key with an order in the
 * gate's hour (`now` − VELOCITY_WINDOW_MS, `now`], **at most VELOCITY_READ_LIMIT sessions**, the most recently active
 * first: the gate only needs to know whether there are 10 or 30 (risk-gate.ts), and grouping every order of the key's
 * hour cost ~2-3 µs of Postgres CPU per order (docs/performance.md session 13). The walk goes down orders_agent_key
 * (agent_key_id, created_at DESC) one instant at a time: each step is the key's newest order older than the last
 * instant (an index probe that stops at its first row), then the sessions of the orders at that instant not seen yet
 * (one store's order per session and store, written in one transaction: a multi-store session's orders share their
 * instant, and a session counts once however many instants it has). It stops at the limit or at the hour's start, and
 * returns for each session the instant it was found at (`ats`, kept beside `seen`; the step's new sessions are read
 * once, in a subquery OFFSET 0 keeps from being inlined into both uses), its newest order in the hour. The
 * gate only counts the times in its hour, so that decides as each session's first order in the hour did; looking the
 * first order up again cost one probe of orders_checkout_session_store per session, about a third of the read's
 * buffers (docs/performance.md session 14). The hour's start is tested
 * on each step's row, not in its index condition: with both bounds the planner, not knowing how many orders lie
 * between them, may sort every order of the key's hour at each step instead of stopping at the first (seen at 2,600
 * orders: 113 ms). The hour is the gate's clock's (`now`), so every session returned is one the gate counts.
 *
 * The walk costs about the same whatever the key's volume (~250 buffers, 0.3-0.8 ms), more than grouping the orders of
 * a key that placed few in the hour (~1-2 µs per order). So the read first takes the key's newest
 * VELOCITY_READ_ORDERS orders up to `now` (one index range, stopping there): when fewer of them than that lie in the
 * hour, they are all of the hour's orders, and grouping them by session gives the walk's answer (the sessions of the
 * hour, at most VELOCITY_READ_LIMIT, the most recently active first, each at its newest instant in the hour). Only a
 * key with at least that many orders in the hour walks (the CASE evaluates the walk, an InitPlan, only then).
 */
/**
 * How many of the key's newest orders the velocity read groups before it walks (`riskColumns`): below it, grouping
 * costs less than the walk (docs/performance.md session 13: the crossing is about 200-300 orders an hour), and a key
 * placing fewer orders an hour is the common case.
 */
export const VELOCITY_READ_ORDERS = 100;

export function riskColumns(sql: Sql, agentKeyId: string, now: number, guard?: HoldGuardAsk) {
  const to = new Date(now);
  const from = new Date(now - VELOCITY_WINDOW_MS);
  const sessionsAt = (at: SqlFragment, seen: SqlFragment | null) =>
    sql`ARRAY(SELECT DISTINCT checkout_session_id FROM orders WHERE agent_key_id = ${agentKeyId} AND created_at = ${at} AND checkout_session_id IS NOT NULL${
      seen ? sql` AND checkout_session_id <> ALL (${seen})` : sql``
    })`;
  return sql`(SELECT created_at FROM agent_keys WHERE id = ${agentKeyId}) AS risk_key_created,
      (WITH newest AS MATERIALIZED (SELECT checkout_session_id AS id, created_at AS at FROM orders
              WHERE agent_key_id = ${agentKeyId} AND checkout_session_id IS NOT NULL AND created_at <= ${to}::timestamptz
              ORDER BY created_at DESC LIMIT ${VELOCITY_READ_ORDERS}),
            hour AS MATERIALIZED (SELECT id, at FROM newest WHERE at > ${from}::timestamptz)
      SELECT CASE WHEN (SELECT count(*) FROM hour) < ${VELOCITY_READ_ORDERS}
        THEN ARRAY(SELECT (extract(epoch FROM max(at)) * 1000)::float8 FROM hour GROUP BY id ORDER BY max(at) DESC LIMIT ${VELOCITY_READ_LIMIT})
        ELSE ARRAY(WITH RECURSIVE walk (at, seen, ats) AS (
              SELECT i.at, n.ids, array_fill(i.at, ARRAY[cardinality(n.ids)])
              FROM (SELECT created_at AS at FROM orders WHERE agent_key_id = ${agentKeyId} AND checkout_session_id IS NOT NULL AND created_at <= ${to}::timestamptz
                    ORDER BY created_at DESC LIMIT 1) i,
                LATERAL (SELECT ${sessionsAt(sql`i.at`, null)} AS ids OFFSET 0) n
              WHERE i.at > ${from}::timestamptz
              UNION ALL
              SELECT i.at, w.seen || n.ids, w.ats || array_fill(i.at, ARRAY[cardinality(n.ids)])
              FROM walk w, LATERAL (SELECT created_at AS at FROM orders WHERE agent_key_id = ${agentKeyId} AND checkout_session_id IS NOT NULL AND created_at < w.at
                    ORDER BY created_at DESC LIMIT 1) i,
                LATERAL (SELECT ${sessionsAt(sql`i.at`, sql`w.seen`)} AS ids OFFSET 0) n
              WHERE cardinality(w.seen) < ${VELOCITY_READ_LIMIT} AND i.at > ${from}::timestamptz)
            SELECT (extract(epoch FROM t.at) * 1000)::float8
            FROM unnest((SELECT ats[1:${VELOCITY_READ_LIMIT}] FROM walk ORDER BY cardinality(seen) DESC LIMIT 1)) AS t (at)) END) AS risk_recent${guard ? sql`, ${holdGuardColumns(sql, guard)}` : sql``}`;
}

interface RiskColumns extends Partial<HoldGuardColumns> {
  risk_key_created: Date | null;
  risk_recent: number[] | null;
}

function riskOf(row: RiskColumns | undefined, identityCreatedAt?: number, guard?: HoldGuardAsk): RiskReadInputs {
  const key = row?.risk_key_created?.getTime();
  const created = key === undefined ? identityCreatedAt : identityCreatedAt === undefined ? key : Math.max(key, identityCreatedAt);
  const read: RiskReadInputs = { keyCreatedAt: created ?? null, recent: (row?.risk_recent ?? []).map(Number) };
  if (guard) read.holdGuard = holdGuardOf(row as HoldGuardColumns | undefined);
  return read;
}

/**
 * The risk inputs in a statement of their own (a catalog read that found no product has no row to carry them).
 * `identityCreatedAt`: the caller's own creation time where no agent_keys row has it (an OAuth principal, ms).
 * `guard`: also read the approval-hold guard (`holdGuard` in the result).
 */
export async function readRiskInputs(sql: Sql, agentKeyId: string, identityCreatedAt?: number, guard?: HoldGuardAsk, now = Date.now()): Promise<RiskReadInputs> {
  const [row] = await sql<RiskColumns[]>`SELECT ${riskColumns(sql, agentKeyId, now, guard)}`;
  return riskOf(row, identityCreatedAt, guard);
}

/**
 * Products with their store, live availability, the domestic shipping rule and the key's accepted negotiated
 * price, in one round trip. Shipping: the store's cheapest country-wide zone for its own country and how many
 * such zones it has (the quote of a cart without a destination, actors/cart/shipping.ts).
 */
export async function readCatalog(sql: Sql, productIds: readonly string[], agentKeyId: string): Promise<Map<string, CatalogLine>> {
  return (await catalogRead(sql, productIds, agentKeyId, false)).catalog;
}

/**
 * `readCatalog` with the risk gate's inputs for the same key as two extra columns of the same statement (a
 * completion needs both: one statement fewer per checkout than reading them apart), and with `guard` the
 * approval-hold guard's read as two more (`risk.holdGuard`).
 */
export async function readCatalogWithRisk(
  sql: Sql,
  productIds: readonly string[],
  agentKeyId: string,
  identityCreatedAt?: number,
  guard?: HoldGuardAsk,
  now = Date.now(),
): Promise<{ catalog: Map<string, CatalogLine>; risk: RiskReadInputs }> {
  const read = await catalogRead(sql, productIds, agentKeyId, { identityCreatedAt, guard, now });
  return { catalog: read.catalog, risk: read.risk ?? (await readRiskInputs(sql, agentKeyId, identityCreatedAt, guard, now)) };
}

async function catalogRead(
  sql: Sql,
  productIds: readonly string[],
  agentKeyId: string,
  withRisk: false | { identityCreatedAt?: number; guard?: HoldGuardAsk; now: number },
): Promise<{ catalog: Map<string, CatalogLine>; risk: RiskReadInputs | null }> {
  const ids = [...new Set(productIds.map((id) => id.toLowerCase()))];
  const out = new Map<string, CatalogLine>();
  if (ids.length === 0) return { catalog: out, risk: null };
  const negotiation = await hasNegotiationTable(sql);
  const idList = idListFragments(sql, ids);
  const risk = withRisk ? sql`, ${riskColumns(sql, agentKeyId, withRisk.now, withRisk.guard)}` : sql``;
  const rows = negotiation
    ? await sql<(CatalogRow & Partial<RiskColumns>)[]>`
      SELECT p.id, p.store_slug, p.title, p.price_minor, p.currency, p.stock_quantity, p.reserved_quantity, p.in_stock, p.active,
        p.variants, p.variant_reserved, s.verification_level, s.trust_score, s.operational_status, s.hosted_storefront, s.payment_methods,
        s.policy_version, s.policies, s.country, s.checkout_enforcement, s.hosted_checkout_url, z.base_minor AS ship_base, z.per_item_minor AS ship_per_item,
        z.free_over_minor AS ship_free_over, z.n AS ship_options, ${shippingZoned(sql)}, n.negotiated_price_minor AS neg_price, n.expires_at AS neg_expires, n.currency AS neg_currency${risk}
      FROM products p JOIN stores s ON s.slug = p.store_slug
      ${domesticShipping(sql)}
      LEFT JOIN LATERAL (SELECT negotiated_price_minor, expires_at, currency FROM negotiation_offers o
        WHERE o.agent_key_id = ${agentKeyId} AND o.product_id = p.id AND o.status = 'accepted' AND o.used_at IS NULL
        ORDER BY o.created_at DESC LIMIT 1) n ON true
      WHERE p.id IN (${idList})`
    : await sql<(CatalogRow & Partial<RiskColumns>)[]>`
      SELECT p.id, p.store_slug, p.title, p.price_minor, p.currency, p.stock_quantity, p.reserved_quantity, p.in_stock, p.active,
        p.variants, p.variant_reserved, s.verification_level, s.trust_score, s.operational_status, s.hosted_storefront, s.payment_methods,
        s.policy_version, s.policies, s.country, s.checkout_enforcement, s.hosted_checkout_url, z.base_minor AS ship_base, z.per_item_minor AS ship_per_item,
        z.free_over_minor AS ship_free_over, z.n AS ship_options, ${shippingZoned(sql)}, NULL::bigint AS neg_price, NULL::timestamptz AS neg_expires, NULL AS neg_currency${risk}
      FROM products p JOIN stores s ON s.slug = p.store_slug
      ${domesticShipping(sql)}
      WHERE p.id IN (${idList})`;
  for (const r of rows) {
    if (r.stock_quantity === null) remember(untrackedSeen, r.id);
    else untrackedSeen.delete(r.id);
    const trust = r.trust_score === null ? null : Number(r.trust_score);
    out.set(r.id, {
      productId: r.id,
      storeSlug: r.store_slug,
      title: r.title,
      priceMinor: Number(r.price_minor),
      currency: r.currency,
      available: !r.in_stock ? 0 : r.stock_quantity === null ? null : Math.max(0, r.stock_quantity - r.reserved_quantity),
      active: r.active,
      variants: (r.variants ?? []).map((v) => ({ ...v, available: variantAvailable(v, r.variant_reserved) })),
      negotiated:
        r.neg_price !== null && r.neg_expires
          ? { unitPriceMinor: Number(r.neg_price), expiresAt: r.neg_expires.getTime(), currency: r.neg_currency ?? r.currency }
          : null,
      store: {
        slug: r.store_slug,
        eligible: isStoreEligible({ trustScore: trust, verificationLevel: r.verification_level as never, storeStatus: r.operational_status as never }),
        trustScore: trust,
        hostedStorefront: r.hosted_storefront,
        paymentMethods: r.payment_methods,
        policyVersion: r.policy_version,
        returnWindowDays: r.policies?.returnWindowDays ?? null,
        acceptsReturns: r.policies?.acceptsReturns ?? null,
        country: r.country,
        enforcement: r.checkout_enforcement ?? null,
        checkoutUrl: r.hosted_checkout_url ?? null,
        shipping: r.ship_base === null ? null : { baseMinor: Number(r.ship_base), perItemMinor: Number(r.ship_per_item ?? 0), freeOverMinor: r.ship_free_over === null ? null : Number(r.ship_free_over) },
        domesticShippingOptions: Number(r.ship_options ?? 0),
        hasShippingZones: r.ship_any === true,
      },
    });
  }
  return { catalog: out, risk: withRisk && rows.length > 0 ? riskOf(rows[0] as RiskColumns, withRisk.identityCreatedAt, withRisk.guard) : null };
}

export interface CouponRow {
  store_slug: string;
  code: string;
  kind: "percent" | "fixed";
  value: number;
  min_spend_minor: number;
  currency: string | null;
  expires_at: Date | null;
  usage_limit: number | null;
  used_count: number;
  active: boolean;
}

/**
 * The coupon rows of `code` at these stores, as pricing reads them. `used_count` leaves out the uses claimed by
 * `ownOrders` (the pricing cart's own session orders, review RN MED-2): a use its own order holds (a leg awaiting
 * the buyer's approval, a store of a partly paid session already paid) is this cart's, so the cart still prices the
 * coupon it pays with instead of showing it exhausted, and a partly paid session's retry is not asked to reconfirm
 * the paid store's discount. The leg's hold agrees: an order that already holds the use keeps it (couponClaim `cprev`).
 * Without own orders the statement reads coupons alone.
 */
export async function findCoupons(sql: Sql, storeSlugs: readonly string[], code: string, ownOrders: readonly string[] = []): Promise<CouponRow[]> {
  const used = ownOrders.length
    ? sql`GREATEST(0, c.used_count - (SELECT count(*) FROM coupon_claims cc
        WHERE cc.order_id = ANY(${[...ownOrders]}::uuid[]) AND cc.store_slug = c.store_slug AND cc.code = c.code))::int`
    : sql`c.used_count`;
  return sql<CouponRow[]>`SELECT c.store_slug, c.code, c.kind, c.value, c.min_spend_minor, c.currency, c.expires_at, c.usage_limit, ${used} AS used_count, c.active
    FROM coupons c WHERE c.store_slug = ANY(${[...storeSlugs]}) AND c.code = ${normalizeCouponCode(code)} ORDER BY c.store_slug`;
}

// ---------------------------------------------------------------------------------------------------------------
// Webhook payloads (shapes documented by the webhook engineer: docs/webhooks.md)

/** One store's leg of an abandoned session, as `checkout.abandoned` reports it. */
export interface AbandonedLeg {
  merchantSlug: string;
  /** That store's own leg total (minor units). */
  totalMinor: number;
  /** The leg was paid: its merchant has an order, not an abandoned checkout, and gets no event. */
  captured: boolean;
}

interface AbandonedSession {
  checkoutSessionId: string;
  cartId: string;
  currency: string;
  status: string;
  now: number;
}

/**
 * `checkout.abandoned`: one outbox row per store whose leg did not capture, carrying that store's own total and only
 * its own slug (`merchantSlugs: [slug]`), so no merchant learns which other stores the buyer used or what it spent
 * there, and a merchant already paid is not told its checkout was abandoned (audit D7).
 */
export async function outboxCheckoutAbandoned(tx: Sql, e: AbandonedSession & { legs: readonly AbandonedLeg[] }): Promise<void> {
  for (const l of e.legs) {
    if (l.captured) continue;
    await enqueueWebhookEvent(tx, {
      storeSlug: l.merchantSlug,
      kind: "checkout.abandoned",
      payload: {
        event: "checkout.abandoned",
        timestamp: iso(e.now),
        checkoutSessionId: e.checkoutSessionId,
        cartId: e.cartId,
        merchantSlugs: [l.merchantSlug],
        totalAmount: toMajor(l.totalMinor, e.currency),
        currency: e.currency,
        status: e.status,
      },
    });
  }
}

// ---------------------------------------------------------------------------------------------------------------
// Messages

const Uuid = T.String({ format: "uuid" });
const Minor = T.Integer({ minimum: 0 });

export const LegLine = T.Object({
  productId: Uuid,
  variantId: T.Union([Uuid, T.Null()]),
  title: T.String(),
  quantity: T.Integer({ minimum: 1 }),
  unitPriceMinor: Minor,
  /**
   * The cart priced this line from the key's accepted negotiated offer (`priceSource: negotiated`): the leg claims
   * that offer for its order before any money moves, or is refused (docs/catalog.md "negotiate").
   */
  negotiated: T.Optional(T.Boolean()),
});

export const commerceMessages = {
  beginLeg: T.Object({
    orderId: Uuid,
    checkoutSessionId: T.String({ minLength: 1 }),
    cartId: Uuid,
    reservationId: T.String({ minLength: 1 }),
    agentKeyId: Uuid,
    currency: T.String({ pattern: "^[A-Z]{3}$" }),
    paymentRail: T.String(),
    paymentMethod: T.String(),
    couponCode: T.Union([T.String(), T.Null()]),
    subtotalMinor: Minor,
    discountMinor: Minor,
    shippingMinor: Minor,
    taxMinor: Minor,
    totalMinor: Minor,
    lines: T.Array(LegLine, { minItems: 1 }),
    /**
     * The merchant's verified customer the agent bought for (MCP X-Customer-Identity), as `buyerRefOf` digests it:
     * the order's buyer_ref, so the customer sees it on the customer endpoint. Absent: `agent:<agentKeyId>`. The
     * order is the key's either way (agent_key_id).
     */
    buyerRef: T.Optional(T.String({ pattern: "^[0-9a-f]{64}$" })),
    /**
     * The store's return terms as the turn's catalog read gave them, the read whose policy version the state check
     * compared with the approved one: what the order's event records (`returnPolicyAtPurchase`). Absent: read from
     * the store in the hold statement (callers before session 17).
     */
    returnPolicy: T.Optional(T.Object({ acceptsReturns: T.Union([T.Boolean(), T.Null()]), returnWindowDays: T.Union([T.Integer({ minimum: 0 }), T.Null()]) })),
    /** How the order ships, as the buyer approved it: kept in the order's `created` history for the merchant. */
    shipping: T.Optional(
      T.Object({
        optionId: T.Union([T.String(), T.Null()]),
        name: T.Union([T.String(), T.Null()]),
        countryCode: T.Union([T.String(), T.Null()]),
        postalCode: T.Union([T.String(), T.Null()]),
      }),
    ),
  }),
  settleLeg: T.Object({
    orderId: Uuid,
    reservationId: T.String({ minLength: 1 }),
    outcome: T.Union([T.Literal("captured"), T.Literal("released")]),
    intentId: T.Optional(T.String()),
    captureRef: T.Optional(T.String()),
    simulated: T.Optional(T.Boolean()),
    note: T.Optional(T.String()),
  }),
  cancelOrder: T.Object({ orderId: Uuid, reason: T.String() }),
  setOrderStatus: T.Object({
    orderId: Uuid,
    status: T.Union(["fulfilled", "shipped", "delivered", "canceled"].map((s) => T.Literal(s))),
    userId: T.Optional(T.String()),
    note: T.Optional(T.String({ maxLength: 500 })),
  }),
  proposeRefund: T.Object({
    orderId: Uuid,
    agentKeyId: Uuid,
    amount: T.Optional(T.Unknown()),
    reason: T.Optional(T.Unknown()),
    /** The caller's key for retries (per order): the same key and request answer the first refund record. */
    idempotencyKey: T.Optional(T.String({ minLength: 1, maxLength: 255 })),
  }),
  decideRefund: T.Object({ refundId: Uuid, decision: T.Union([T.Literal("approve"), T.Literal("reject")]), userId: T.String() }),
  setAllowlist: T.Object({ agentKeyId: Uuid, status: T.Union([T.Literal("allowed"), T.Literal("blocked")]) }),
};

export type BeginLegBody = Static<(typeof commerceMessages)["beginLeg"]>;

const STATUS_EVENT: Record<string, OrderEvent> = { fulfilled: "fulfill", shipped: "ship", delivered: "deliver", canceled: "cancel" };

interface ReservationRow {
  id: string;
  order_id: string;
  status: "held" | "committed" | "released";
  lines: { productId: string; quantity: number; variants?: Record<string, number> }[];
}

/**
 * Settles one held reservation. Returns the tracked products whose stock changed (`committed`: sold) or whose held
 * units went back (`released`: every line of a reservation is tracked stock, untracked stock is never held).
 */
async function settleReservation(tx: Sql, slug: string, id: string, to: "committed" | "released"): Promise<string[]> {
  const rows = await tx<ReservationRow[]>`SELECT id, order_id, status, lines FROM stock_reservations WHERE id = ${id} AND store_slug = ${slug}`;
  const r = rows[0];
  if (!r || r.status !== "held") return []; // idempotent: already settled (or nothing was held)
  const ids = r.lines.map((l) => l.productId);
  const qs = r.lines.map((l) => l.quantity);
  const vqs = r.lines.map((l) => JSON.stringify(l.variants ?? {}));
  // Lock order: the product rows first, by id (docs/checkout.md "Lock order"; audit K-4).
  await tx`SELECT id FROM products WHERE id = ANY(${ids}::uuid[]) ORDER BY id FOR NO KEY UPDATE`;
  if (to === "committed") {
    await tx`UPDATE products p SET reserved_quantity = GREATEST(0, p.reserved_quantity - w.q),
        stock_quantity = CASE WHEN p.stock_quantity IS NULL THEN NULL ELSE GREATEST(0, p.stock_quantity - w.q) END,
        in_stock = CASE WHEN p.stock_quantity IS NULL THEN p.in_stock ELSE p.stock_quantity - w.q > 0 END,
        variant_reserved = stock_counts_add(p.variant_reserved, w.vt::jsonb, -1),
        variants = variant_stock_sell(p.variants, w.vt::jsonb),
        updated_at = now()
      FROM (SELECT unnest(${ids}::uuid[]) AS id, unnest(${qs}::int[]) AS q, unnest(${vqs}::text[]) AS vt) w WHERE p.id = w.id`;
  } else {
    await tx`UPDATE products p SET reserved_quantity = GREATEST(0, p.reserved_quantity - w.q),
        variant_reserved = stock_counts_add(p.variant_reserved, w.vt::jsonb, -1)
      FROM (SELECT unnest(${ids}::uuid[]) AS id, unnest(${qs}::int[]) AS q, unnest(${vqs}::text[]) AS vt) w WHERE p.id = w.id`;
  }
  await tx`UPDATE stock_reservations SET status = ${to}, updated_at = now() WHERE id = ${id}`;
  if (to !== "committed") return [...new Set(ids)];
  // Only tracked stock changed; untracked products need no reindex.
  const tracked = await tx<{ id: string }[]>`SELECT id FROM products WHERE id = ANY(${ids}::uuid[]) AND stock_quantity IS NOT NULL`;
  return [...new Set([...tracked.map((t) => t.id), ...r.lines.filter((l) => l.variants && Object.keys(l.variants).length).map((l) => l.productId)])];
}

// ---------------------------------------------------------------------------------------------------------------
// Payment legs as rows. Each step is ONE statement (data-modifying CTEs), so a caller can run it inside its own
// turn's transaction: the cart actor does (hold + pending order + items + event + outbox + allowlist) in the
// transaction that also commits its IN_PROGRESS state, and (commit stock + paid + event + outbox + coupon) in
// the one that commits COMPLETED. Stock is the only thing serialised per store, and a conditional UPDATE of the
// product row does that (row lock, re-checked on the latest version), so no store actor turn is needed.

export type SettleLegBody = Static<(typeof commerceMessages)["settleLeg"]>;

/**
 * The stock a leg asks for, summed per product (two variant lines of one product hold the product's stock
 * together), with each variant's own units beside it as a JSON object {variantId: units} (`vqs`, one per product).
 */
export function wantedStock(lines: readonly { productId: string; variantId?: string | null; quantity: number }[]): { ids: string[]; qs: number[]; vqs: string[] } {
  const want = new Map<string, { q: number; v: Record<string, number> }>();
  for (const l of lines) {
    const w = want.get(l.productId) ?? { q: 0, v: {} };
    w.q += l.quantity;
    if (l.variantId) w.v[l.variantId] = (w.v[l.variantId] ?? 0) + l.quantity;
    want.set(l.productId, w);
  }
  return { ids: [...want.keys()], qs: [...want.values()].map((w) => w.q), vqs: [...want.values()].map((w) => JSON.stringify(w.v)) };
}

type VariantStock = { id: string; stockQuantity?: number | null; inStock?: boolean };

/** Units of a variant that can still be held: its stock − held, null when untracked, 0 when unknown or out of stock. */
export function variantAvailable(v: VariantStock | undefined, held: Readonly<Record<string, number>> | null | undefined): number | null {
  if (!v || v.inStock === false) return 0;
  if (v.stockQuantity === null || v.stockQuantity === undefined) return null;
  return Math.max(0, v.stockQuantity - (held?.[v.id] ?? 0));
}

export interface StockShortage {
  code: "out_of_stock" | "stock_insufficient";
  store_id: string;
  product_id: string;
  variant_id?: string;
  requested: number;
  available: number;
}

/**
 * Why a leg's hold failed, from the levels read after it: each product whose own availability is short, and each
 * variant whose own stock is short (reported with `variant_id`).
 */
export function stockShortages(
  slug: string,
  ids: readonly string[],
  qs: readonly number[],
  vqs: readonly string[],
  levels: readonly { id: string; available: number | null; variants: readonly VariantStock[] | null; variant_reserved: Readonly<Record<string, number>> | null }[],
): StockShortage[] {
  const byId = new Map(levels.map((l) => [l.id, l]));
  const out: StockShortage[] = [];
  const push = (a: number, q: number, product_id: string, variant_id?: string) =>
    out.push({ code: a === 0 ? "out_of_stock" : "stock_insufficient", store_id: slug, product_id, ...(variant_id ? { variant_id } : {}), requested: q, available: a });
  ids.forEach((id, i) => {
    const level = byId.get(id);
    const a = level ? level.available : 0;
    if (a !== null && a < qs[i]) return push(a, qs[i], id);
    for (const [vid, q] of Object.entries(JSON.parse(vqs[i]) as Record<string, number>)) {
      const va = variantAvailable(level?.variants?.find((v) => v.id === vid), level?.variant_reserved);
      if (va !== null && va < q) push(va, q, id, vid);
    }
  });
  return out;
}

/** `prior`: this reservation id was begun before: its reservation row, or (nothing held, so no row) its order waiting on it. */
function priorOf(db: Sql, slug: string, b: BeginLegBody) {
  return db`prior AS (SELECT status, order_id FROM stock_reservations WHERE id = ${b.reservationId}
      UNION ALL
      SELECT 'held', id FROM orders WHERE id = ${b.orderId} AND store_slug = ${slug} AND intent_id = ${b.reservationId}
      LIMIT 1)`;
}

/**
 * The products of a leg priced from a negotiated offer: lines without a variant and variant lines at the product's
 * list price (docs/checkout.md "Negotiated prices"). The cart prices every such line of a product at the one offer's
 * price, so one claim per product covers all of them.
 */
function negotiatedLines(b: BeginLegBody): { ids: string[]; prices: number[] } {
  const byProduct = new Map<string, number>();
  for (const l of b.lines) if (l.negotiated) byProduct.set(l.productId.toLowerCase(), l.unitPriceMinor);
  return { ids: [...byProduct.keys()], prices: [...byProduct.values()] };
}

/**
 * `claim`: each negotiated line claims, for this order (`negotiation_offers.order_id`), the offer the cart priced it
 * with: the key's latest accepted, unused offer for its product (readCatalog's), at that price, unless this reservation
 * was begun before (`prior`) or the order moved on (`gone`, full hold only). An offer another order holds is not taken,
 * and no older offer stands in for it (model finding M-2: an older offer of the same price, even one past its expiry,
 * was claimed instead, so the refusal below never came and an expired offer paid an order). The claim's condition is
 * on the offer row alone, so of two legs racing for one offer the second, once the first commits, re-reads the row
 * (row lock) and claims nothing.
 * `claimed` is true when every negotiated line got its offer, `columns` names the products that did. Without
 * negotiated lines there is no `claim` (no statement text: the common leg costs nothing).
 */
function offerClaim(db: Sql, slug: string, b: BeginLegBody, withGone: boolean): { ctes: SqlFragment; claimed: SqlFragment; columns: SqlFragment } {
  const { ids, prices } = negotiatedLines(b);
  if (ids.length === 0) return { ctes: db``, claimed: db`true`, columns: db`NULL::text[] AS claimed_offers` };
  return {
    ctes: db`claim AS (
      UPDATE negotiation_offers n SET order_id = ${b.orderId}
      FROM unnest(${ids}::uuid[], ${prices}::bigint[]) AS w(product_id, price)
      WHERE n.id = (SELECT o.id FROM negotiation_offers o
          WHERE o.agent_key_id = ${b.agentKeyId} AND o.product_id = w.product_id AND o.store_slug = ${slug} AND o.status = 'accepted'
            AND o.used_at IS NULL
          ORDER BY o.created_at DESC LIMIT 1)
        AND n.negotiated_price_minor = w.price AND n.used_at IS NULL AND (n.order_id IS NULL OR n.order_id = ${b.orderId})
        AND NOT EXISTS (SELECT 1 FROM prior)${withGone ? db` AND NOT EXISTS (SELECT 1 FROM gone)` : db``}
      RETURNING n.id, n.product_id),`,
    claimed: db`(SELECT count(*) FROM claim) = ${ids.length}`,
    columns: db`ARRAY(SELECT product_id::text FROM claim) AS claimed_offers`,
  };
}

/** A leg that did not go ahead gives back the offers its order claimed (this attempt's, or an earlier attempt's). */
async function releaseClaims(db: Sql, orderId: string): Promise<void> {
  await db`UPDATE negotiation_offers SET order_id = NULL WHERE order_id = ${orderId} AND used_at IS NULL`;
}

/** The refusal of a leg whose negotiated price another order of the key holds or has used (no money moved). */
function offerRefusal(slug: string, b: BeginLegBody, claimed: readonly string[]) {
  const missing = negotiatedLines(b).ids.filter((id) => !claimed.includes(id));
  return fail(
    "STATE_EXECUTION_BLOCKED",
    "A negotiated price of this cart pays for one order only, and another order of this key has it; preview the cart again (list price once that order is paid) or negotiate again.",
    { reasons: missing.map((product_id) => ({ code: "negotiated_price_used", store_id: slug, product_id })) },
  );
}

/**
 * `cclaim`: the leg's order takes one use of its store's coupon (audit Y2), as a negotiated offer is claimed: one
 * conditional update of the coupon row (`used_count < usage_limit`), so of legs racing for the last use the losers
 * re-read the row once the winner commits (row lock, READ COMMITTED) and update nothing. Counting at capture, as
 * before, let every concurrent checkout that priced the coupon as available pay with it. The claim is recorded per
 * order (`coupon_claims`, migration 0074) so it is given back exactly once (`couponGivenBack`) and a retry never claims
 * twice: a replayed reservation (`prior`) claims nothing, and an order that already holds this coupon's use (`cprev`:
 * a light hold of this attempt that fell through to the full one) keeps it. A claim of another code (never expected:
 * a released or canceled attempt gives its use back) is replaced and that coupon's use given back (`cswap`). Not for
 * an order `unless` names (the full hold: one that moved on, whose leg is refused before anything is held; the light
 * hold: one that exists, which the full hold decides). Without a coupon there is no `cclaim` (no statement text: the
 * common leg costs nothing). `claimed` is false only when the coupon had no use left.
 *
 * Lock order (review RN HIGH-1): coupon rows before product rows, in every statement and transaction that locks
 * both (docs/checkout.md "Lock order"). `claimed` reads every coupon CTE (`cclaim`, and `cswap` to its end), and the
 * hold's product update (`held`) is conditional on `claimed`, so the coupon rows are locked before the first product
 * row whichever CTE the statement's result reads. The release side says the same in `couponGivenBack`/`givenBack`.
 */
function couponClaim(db: Sql, slug: string, b: BeginLegBody, unless: SqlFragment): { ctes: SqlFragment; claimed: SqlFragment; columns: SqlFragment } {
  if (b.couponCode === null) return { ctes: db``, claimed: db`true`, columns: db`NULL::boolean AS coupon_claimed` };
  const code = normalizeCouponCode(b.couponCode);
  // `(SELECT count(*) FROM cswap) >= 0` is always true: it runs cswap (another code's coupon row) before anything reads `claimed`.
  const claimed = db`((EXISTS (SELECT 1 FROM cclaim) OR EXISTS (SELECT 1 FROM cprev WHERE code = ${code})) AND (SELECT count(*) FROM cswap) >= 0)`;
  return {
    ctes: db`cprev AS (SELECT store_slug, code FROM coupon_claims WHERE order_id = ${b.orderId}),
      cclaim AS (
        UPDATE coupons SET used_count = used_count + 1
        WHERE store_slug = ${slug} AND code = ${code} AND (usage_limit IS NULL OR used_count < usage_limit)
          AND NOT EXISTS (SELECT 1 FROM cprev WHERE code = ${code}) AND NOT EXISTS (SELECT 1 FROM prior) AND NOT ${unless}
        RETURNING code),
      cuse AS (
        INSERT INTO coupon_claims (order_id, store_slug, code) SELECT ${b.orderId}, ${slug}, code FROM cclaim
        ON CONFLICT (order_id) DO UPDATE SET store_slug = EXCLUDED.store_slug, code = EXCLUDED.code, created_at = now()),
      cswap AS (
        UPDATE coupons c SET used_count = GREATEST(0, c.used_count - 1) FROM cprev
        WHERE c.store_slug = cprev.store_slug AND c.code = cprev.code AND EXISTS (SELECT 1 FROM cclaim) RETURNING c.code),`,
    claimed,
    columns: db`${claimed} AS coupon_claimed`,
  };
}

/**
 * `cfreed` … `cback`: the coupon use claimed by the orders `orders` selects (a fragment naming order ids) is given back,
 * once: the claim row is deleted and the coupon's count lowered by what it took. Lock order: coupon rows before
 * product rows (see couponClaim); a statement that also gives stock back declares these CTEs before `givenBack`,
 * whose product update waits for `cback` to finish.
 */
function couponGivenBack(db: Sql, orders: SqlFragment) {
  return db`cfreed AS (DELETE FROM coupon_claims WHERE order_id IN (${orders}) RETURNING store_slug, code),
    cback AS (UPDATE coupons c SET used_count = GREATEST(0, c.used_count - 1) FROM cfreed WHERE c.store_slug = cfreed.store_slug AND c.code = cfreed.code RETURNING c.code)`;
}

/** A leg that did not go ahead gives back the coupon use its order claimed (this attempt's: an earlier one gave its back). */
async function releaseCouponClaim(db: Sql, orderId: string): Promise<void> {
  await db`WITH ${couponGivenBack(db, db`${orderId}::uuid`)} SELECT 1`;
}

/** The refusal of a leg whose coupon other orders used up since the cart priced it (no money moved). */
function couponRefusal(slug: string, b: BeginLegBody) {
  const code = normalizeCouponCode(b.couponCode ?? "");
  return fail(
    "STATE_EXECUTION_BLOCKED",
    `Coupon ${code} has no use left: other orders took its last use since this checkout was priced. Preview the cart again (the coupon then shows as exhausted and the total without its discount) and approve that total.`,
    { reasons: [{ code: "coupon_exhausted", store_id: slug, coupon_code: code }] },
  );
}

/**
 * The order side of a leg, after a CTE `ok (go)` decided whether the leg goes ahead: the order `pending` with its
 * items, `created` event, `order.created` outbox row (`ins` … `outbox`), or, for
 * another attempt of the same session, the existing order pointed at this attempt (`reuse`; without it, an existing
 * order makes the statement write nothing, which the caller sees as `inserted = 0`). Either way a leg going ahead takes
 * the key's allowlist binding (`bind`, created by the key's first order with the store) and reads the block under it.
 *
 * The reused order records what this attempt charges (audit R1-H1): a retry after a rollback is priced anew (a price,
 * negotiated offer, coupon or shipping destination changed since), so `reuse` rewrites the money columns and the
 * coupon, `dropped` + `items` replace its lines, and its `payment_attempt` event carries this attempt's totals,
 * shipping and the total it replaced (`was`, the row before this statement). Only a pending order is reused, and one
 * is pending here only while unpaid: an attempt starts from READY_FOR_PAYMENT, which a captured leg (paid order) or
 * a capture waiting for reconciliation never returns to, and the settle that records a capture moves the order out
 * of pending in the same statement. No webhook: `order.created` was the first attempt's; the pending → paid
 * `order.status_changed` carries the captured total (docs/webhooks.md).
 */
/**
 * `{return_policy: {acceptsReturns, returnWindowDays}}`: the store's return terms as the attempt charging the order
 * finds them, recorded in its `created` / `payment_attempt` event. A refund request is judged by the terms of the
 * order's last attempt (`refundPolicyColumns`), not by what the merchant declares later (audit A-3, session 16): the
 * checkout binds the buyer to the store's policy version (a change between preview and payment blocks it), so the
 * return window is part of what the buyer approved and the merchant cannot shrink it afterwards.
 */
function returnPolicyAtPurchase(db: Sql, slug: string, b: BeginLegBody) {
  // the terms of the read the state check approved, not a read of the store in this statement: a PUT /policies
  // committing between the two would be recorded though the buyer approved the earlier terms (review R-6)
  if (b.returnPolicy) return db`${db.json({ return_policy: b.returnPolicy } as never)}::jsonb`;
  return db`(SELECT jsonb_build_object('return_policy', jsonb_build_object('acceptsReturns', policies->'acceptsReturns', 'returnWindowDays', policies->'returnWindowDays'))
        FROM stores WHERE slug = ${slug})`;
}

/**
 * The return terms a refund request of order `o` (joined with its store `s`) is judged by: the more generous of those
 * recorded by the order's last payment attempt (`returnPolicyAtPurchase`) and the store's current ones; the current
 * ones alone for orders written before session 16 and human orders. Recorded terms keep what the buyer was promised
 * (audit A-3: the merchant shortening its window later); the current ones count too because a refund request is only
 * a request the merchant approves, and refusing up front what the store now offers everyone kept the merchant from
 * granting it (review R-7: a 7-day purchase at a store now granting 30 days was RETURN_WINDOW_EXPIRED).
 * Columns `accepts_returns` (false only when both sides take no returns) and `return_window_days` (the longer window
 * of the sides that take returns, an undeclared one counting as DEFAULT_RETURN_WINDOW_DAYS); the join goes after the
 * store's.
 */
export function refundPolicyColumns(db: Sql) {
  // a side's window in days, NULL when it takes no returns; a store without policies (NULL) takes them for the
  // default window, as refundWindowDays says, while a NULL recorded side means nothing was recorded
  const days = (p: ReturnType<Sql>, absent: ReturnType<Sql>) =>
    db`CASE WHEN ${p} IS NULL THEN ${absent} WHEN (${p}->>'acceptsReturns')::boolean IS FALSE THEN NULL
        ELSE COALESCE((${p}->>'returnWindowDays')::int, ${DEFAULT_RETURN_WINDOW_DAYS}::int) END`;
  const recorded = days(db`rp.p`, db`NULL::int`);
  const current = days(db`s.policies`, db`${DEFAULT_RETURN_WINDOW_DAYS}::int`);
  return {
    columns: db`(${recorded} IS NOT NULL OR ${current} IS NOT NULL) AS accepts_returns,
        GREATEST(${recorded}, ${current}) AS return_window_days`,
    join: db`LEFT JOIN LATERAL (SELECT e.data->'return_policy' AS p FROM order_events e
        WHERE e.order_id = o.id AND e.type IN ('created', 'payment_attempt') AND e.data ? 'return_policy' ORDER BY e.id DESC LIMIT 1) rp ON true`,
  };
}

function orderRows(db: Sql, slug: string, b: BeginLegBody, now: number, reuse = true) {
  const railLabel = b.paymentMethod === "MOCK" ? "MOCK" : b.paymentRail;
  const created = createdPayload({ orderId: b.orderId, merchantSlug: slug, totalMinor: b.totalMinor, currency: b.currency }, now);
  const attempt = {
    actor: "system",
    intent_id: b.reservationId,
    total_minor: b.totalMinor,
    subtotal_minor: b.subtotalMinor,
    discount_minor: b.discountMinor,
    shipping_minor: b.shippingMinor,
    tax_minor: b.taxMinor,
    currency: b.currency,
    coupon_code: b.couponCode,
    ...(b.shipping ? { shipping: b.shipping } : {}),
  };
  return db`
    ins AS (
      INSERT INTO orders (id, store_slug, channel, agent_key_id, buyer_ref, status, total_minor, currency, payment_rail, checkout_session_id,
        cart_id, subtotal_minor, discount_minor, shipping_minor, tax_minor, coupon_code, payment_method, intent_id)
      SELECT ${b.orderId}, ${slug}, 'agent', ${b.agentKeyId}, ${b.buyerRef ?? `agent:${b.agentKeyId}`}, 'pending', ${b.totalMinor}, ${b.currency}, ${railLabel},
        ${b.checkoutSessionId}, ${b.cartId}, ${b.subtotalMinor}, ${b.discountMinor}, ${b.shippingMinor}, ${b.taxMinor}, ${b.couponCode},
        ${b.paymentMethod}, ${b.reservationId}
      FROM ok WHERE go
      ON CONFLICT DO NOTHING RETURNING id),${
    reuse
      ? db`
    was AS (SELECT total_minor FROM orders WHERE id = ${b.orderId} AND store_slug = ${slug}),
    reuse AS (
      -- Another attempt of the same session: the order exists, stays pending, waits for this attempt and records
      -- what it charges (its lines are replaced by dropped and items).
      UPDATE orders SET intent_id = ${b.reservationId}, payment_method = ${b.paymentMethod}, payment_rail = ${railLabel},
        total_minor = ${b.totalMinor}, currency = ${b.currency}, subtotal_minor = ${b.subtotalMinor}, discount_minor = ${b.discountMinor},
        shipping_minor = ${b.shippingMinor}, tax_minor = ${b.taxMinor}, coupon_code = ${b.couponCode}, updated_at = now()
      WHERE id = ${b.orderId} AND store_slug = ${slug} AND status = 'pending' AND (SELECT go FROM ok) AND NOT EXISTS (SELECT 1 FROM ins) RETURNING id),
    dropped AS (DELETE FROM order_items WHERE order_id IN (SELECT id FROM reuse)),
    -- An earlier attempt's claim on an offer this attempt does not price with (the list price fell below it, the line
    -- is gone, or the key negotiated a newer offer of the product since) is given back: the order will not pay with it,
    -- and the settle uses every claim of the order (audit R3 MED-2, R5 MED-1). Kept: exactly the offer rows this
    -- statement's claim takes, by offer id, so no row is updated twice. reuse needs go, so a replayed
    -- reservation (prior, where claim takes nothing) releases nothing either.
    unclaimed AS (UPDATE negotiation_offers SET order_id = NULL WHERE order_id IN (SELECT id FROM reuse) AND used_at IS NULL${
      negotiatedLines(b).ids.length ? db` AND id NOT IN (SELECT id FROM claim)` : db``}),`
      : db``}
    items AS (
      INSERT INTO order_items (order_id, product_id, variant_id, title, quantity, unit_price_minor)
      SELECT o.id, l.* FROM (SELECT id FROM ins${reuse ? db` UNION ALL SELECT id FROM reuse` : db``}) o,
        unnest(${b.lines.map((l) => l.productId)}::uuid[], ${b.lines.map((l) => l.variantId)}::uuid[],
        ${b.lines.map((l) => l.title)}::text[], ${b.lines.map((l) => l.quantity)}::int[], ${b.lines.map((l) => l.unitPriceMinor)}::bigint[]) AS l),
    ev AS (
      INSERT INTO order_events (order_id, type, to_status, data)
      SELECT id, 'created', 'pending', ${db.json({ actor: "system", checkout_session_id: b.checkoutSessionId, intent_id: b.reservationId, ...(b.shipping ? { shipping: b.shipping } : {}) } as never)}::jsonb
        || ${returnPolicyAtPurchase(db, slug, b)} FROM ins${
        reuse
          ? db`
      UNION ALL
      SELECT id, 'payment_attempt', NULL, ${db.json(attempt as never)}::jsonb || jsonb_build_object('previous_total_minor', (SELECT total_minor FROM was))
        || ${returnPolicyAtPurchase(db, slug, b)} FROM reuse`
          : db``}),
    outbox AS (INSERT INTO webhook_events (store_slug, kind, payload) SELECT ${slug}, 'order.created', ${db.json(created as never)}::jsonb FROM ins),
    -- The key's allowlist binding at this store (refund requests need it: the key's first order creates it), locked
    -- until this statement's transaction commits, and its status as last committed: the merchant's block (setAllowlist)
    -- writes the same row, so a block and a leg going ahead wait for each other (see bindingOf).
    ${bindingOf(db, slug, b)}`;
}

/**
 * `bind`: the key's allowlist binding at this store, taken by a leg that goes ahead (`ok.go`), with `blocked`, the
 * result column that refuses the leg (review G, session 14: a block committing between the attempt's hold guard read
 * and its hold's commit was paid). The guard read (actors/cart/hold-guard.ts) is a snapshot taken earlier in the
 * turn; this is the check under a lock the block shares:
 * - one upsert of the row the block writes (`setAllowlist`: INSERT … ON CONFLICT DO UPDATE SET status): a key's first
 *   order inserts it `allowed`; an existing row is locked (ON CONFLICT DO UPDATE locks the conflicting row even when
 *   its WHERE is false, so nothing is written for an allowed key) and the WHERE reads its last committed version, not
 *   this statement's snapshot — in READ COMMITTED even a row another transaction inserted after the snapshot (a block
 *   of a key that never ordered here), which a SELECT … FOR SHARE would not see;
 * - a blocked row is "updated" to itself (no change; rolled back with the leg) so that RETURNING says `blocked`.
 * So a block that committed before this lock is seen and the leg refused (riding: the write is refused, the general
 * path's `beginLegRows` throws NOT_ELIGIBLE and the turn rolls back: nothing held, no order); a block arriving after it
 * waits until the attempt's hold commits and is then ordered after it (its cancel queues behind the cart's turn). Its
 * cost is a tuple lock (one WAL record) on the binding per leg, no statement; the row is locked after the leg's product
 * rows (it reads `ok`), and nothing locks a binding before products, so the lock order stays acyclic. Two attempts of
 * one key at one store wait for each other only from this CTE to their commit.
 */
function bindingOf(db: Sql, slug: string, b: BeginLegBody) {
  return db`bind AS (
      INSERT INTO store_agent_allowlist AS a (store_slug, agent_key_id) SELECT ${slug}, ${b.agentKeyId} FROM ok WHERE go
      ON CONFLICT (store_slug, agent_key_id) DO UPDATE SET status = a.status WHERE a.status = 'blocked'
      RETURNING a.status)`;
}

/** `bindingOf`'s verdict as a result column: true when the merchant blocked the key (the leg must not go ahead). */
const bindingBlocked = (db: Sql) => db`EXISTS (SELECT 1 FROM bind WHERE status = 'blocked')`;

/** The refusal of a leg whose merchant blocked the key, as the hold guard's (actors/cart/hold-guard.ts assertMayHold). */
function blockedRefusal(slug: string, b: BeginLegBody) {
  return fail("NOT_ELIGIBLE", `The merchant ${slug} has blocked this agent key; it cannot check out at that store.`, {
    reason: "agent_blocked_by_merchant",
    merchant_slugs: [slug],
    checkout_session_id: b.checkoutSessionId,
  });
}

/** A statement's CTEs and result columns, so it can run alone or ride in a turn's state statement. */
interface Parts {
  ctes: SqlFragment;
  select: SqlFragment;
}

function run<R extends readonly object[]>(db: Sql, p: Parts) {
  return db<R>`WITH ${p.ctes} SELECT ${p.select}`;
}

/**
 * The hold of a leg whose stock was untracked when last read: nothing to hold, so the statement touches neither
 * products nor reservations, and, as a first attempt's order does not exist yet, it has no `reuse` update of orders
 * either. `go` is false (and nothing written) unless every product is still untracked, active and in stock; nothing
 * is inserted when the order exists (a later attempt of the session). In both cases the full hold decides.
 */
function lightHoldParts(db: Sql, slug: string, b: BeginLegBody, ids: string[], now: number): Parts {
  const idList = idListFragments(db, ids);
  const claim = offerClaim(db, slug, b, false);
  const coupon = couponClaim(db, slug, b, db`EXISTS (SELECT 1 FROM orders WHERE id = ${b.orderId} AND store_slug = ${slug})`);
  return {
    ctes: db`want AS MATERIALIZED (SELECT w.id, ${slug}::text AS slug FROM unnest(${ids}::uuid[]) AS w(id)),
      ${priorOf(db, slug, b)},
      ${claim.ctes}
      ${coupon.ctes}
      free AS (
        SELECT p.id FROM products p JOIN want w ON w.id = p.id
        WHERE p.id IN (${idList}) AND p.store_slug = w.slug AND p.active AND p.in_stock AND p.stock_quantity IS NULL),
      ok AS (SELECT NOT EXISTS (SELECT 1 FROM prior) AND (SELECT count(*) FROM free) = ${ids.length} AND ${claim.claimed} AND ${coupon.claimed} AS go),
      ${orderRows(db, slug, b, now, false)}`,
    select: db`(SELECT status FROM prior) AS prior_status, (SELECT order_id FROM prior)::text AS prior_order, (SELECT go FROM ok) AS go,
        (SELECT count(*) FROM ins)::int AS inserted, ${bindingBlocked(db)} AS blocked`,
  };
}

/** Untracked stock as last read (readCatalog): the light hold applies. */
function lightHoldApplies(ids: readonly string[], vqs: readonly string[]): boolean {
  return vqs.every((v) => v === "{}") && ids.every((id) => untrackedSeen.has(id));
}

type Held = { id: string; q: number; vq: Record<string, number> };

/**
 * Told the tracked products whose held units a leg's statement moved (its hold, or its release: decline, rollback,
 * cancel, expiry), so that the caller publishes `heldStockChanged` once its turn commits: search then re-reads their
 * buyable stock at once instead of at its catch-up. Never called for untracked stock (nothing is held for it).
 */
export type HeldSink = (productIds: string[]) => void;

function fullHoldParts(db: Sql, slug: string, b: BeginLegBody, ids: string[], qs: number[], vqs: string[], now: number): Parts {
  const idList = idListFragments(db, ids);
  const claim = offerClaim(db, slug, b, true);
  const coupon = couponClaim(db, slug, b, db`EXISTS (SELECT 1 FROM gone)`);
  return {
    ctes: db`want AS MATERIALIZED (SELECT w.id, w.q, w.vt::jsonb AS vq, ${slug}::text AS slug FROM unnest(${ids}::uuid[], ${qs}::int[], ${vqs}::text[]) AS w(id, q, vt)),
    ${priorOf(db, slug, b)},
    -- The session's order exists and is no longer pending (a merchant canceled it): nothing is held for it.
    gone AS (SELECT status FROM orders WHERE id = ${b.orderId} AND store_slug = ${slug} AND status <> 'pending'),
    ${claim.ctes}
    ${coupon.ctes}
    -- Lock order (audit K-4): the tracked product rows of the leg are locked first, by id, after the coupon row (the
    -- one-time filter on the coupon's claim runs its CTEs to the end first). Without it the update locked them in
    -- its plan's order (the cart's line order), the capture settle in another: concurrent one-store checkouts of
    -- two tracked products deadlocked. Only the rows the held update may write are locked (its store, active, in-stock and
    -- tracked conditions): untracked stock, and a line naming an untracked variant of an untracked product, is never
    -- locked (review RC-2: a variant line locked the product row whether or not the variant's stock is tracked).
    lk AS (
      SELECT p.id FROM products p JOIN want w ON w.id = p.id
      WHERE p.id IN (${idList}) AND p.store_slug = w.slug AND p.active AND p.in_stock
        AND (p.stock_quantity IS NOT NULL OR CASE WHEN w.vq = '{}'::jsonb THEN false ELSE variant_holds_tracked(p.variants, w.vq) <> '{}'::jsonb END)
        AND ${coupon.claimed}
      ORDER BY p.id FOR NO KEY UPDATE OF p),
    -- Tracked stock (the product's, and each tracked variant's) is held by one conditional update of the product
    -- row; untracked stock is unlimited and never locked.
    -- Plan, index-driven by construction: the only condition on products alone is p.id IN (ids), the primary key
    -- (the list padded to a power of two, so the generic plan's estimate is the number of ids, see listOfPlannedArity).
    -- The store is compared through the materialised want row (a join condition): a generic plan cannot see that
    -- want holds one product, and given p.store_slug = $slug it read the whole store (~240 rows) by the store index.
    -- The variant functions are SQL functions, planned anew by each statement that calls them: CASE keeps them off
    -- lines without variants (for those they would answer {} / true anyway).
    held AS (
      UPDATE products p SET
        reserved_quantity = p.reserved_quantity + CASE WHEN p.stock_quantity IS NULL THEN 0 ELSE w.q END,
        variant_reserved = CASE WHEN w.vq = '{}'::jsonb THEN p.variant_reserved
          ELSE stock_counts_add(p.variant_reserved, variant_holds_tracked(p.variants, w.vq), 1) END
      FROM want w
      WHERE p.id IN (${idList}) AND p.id = w.id AND p.store_slug = w.slug AND p.active AND p.in_stock
        AND (p.stock_quantity IS NOT NULL OR CASE WHEN w.vq = '{}'::jsonb THEN false ELSE variant_holds_tracked(p.variants, w.vq) <> '{}'::jsonb END)
        AND (p.stock_quantity IS NULL OR p.stock_quantity - p.reserved_quantity >= w.q)
        AND CASE WHEN w.vq = '{}'::jsonb THEN true ELSE variant_stock_covers(p.variants, p.variant_reserved, w.vq) END
        AND NOT EXISTS (SELECT 1 FROM prior) AND NOT EXISTS (SELECT 1 FROM gone) AND ${claim.claimed} AND ${coupon.claimed}
        AND (SELECT count(*) FROM lk) >= 0
      RETURNING p.id, CASE WHEN p.stock_quantity IS NULL THEN 0 ELSE w.q END AS q,
        CASE WHEN w.vq = '{}'::jsonb THEN '{}'::jsonb ELSE variant_holds_tracked(p.variants, w.vq) END AS vq),
    free AS (
      SELECT p.id FROM products p JOIN want w ON w.id = p.id
      WHERE p.id IN (${idList}) AND p.store_slug = w.slug AND p.active AND p.in_stock AND p.stock_quantity IS NULL
        AND CASE WHEN w.vq = '{}'::jsonb THEN true
          ELSE variant_holds_tracked(p.variants, w.vq) = '{}'::jsonb AND variant_stock_covers(p.variants, p.variant_reserved, w.vq) END),
    ok AS (SELECT NOT EXISTS (SELECT 1 FROM prior) AND NOT EXISTS (SELECT 1 FROM gone) AND ${claim.claimed} AND ${coupon.claimed}
      AND (SELECT count(*) FROM held) + (SELECT count(*) FROM free) = ${ids.length} AS go),
    -- A reservation row only when something is held: untracked stock holds nothing, and a row with no lines was
    -- written here and updated again by the settle for nothing (two heap tuples, five index entries per order).
    -- Settle, release and cancel start from the reservation row, so without one they give nothing back, which is
    -- right; the order row carries the intent id either way.
    -- agent_key_id: the order's key, by which the approval-hold guard finds the caller's holds (migration 0095,
    -- actors/cart/hold-guard.ts): an order written earlier by another attempt keeps the key it was written with, and
    -- one this statement writes (ins, not visible here) gets the attempt's.
    res AS (
      INSERT INTO stock_reservations (id, store_slug, order_id, lines, agent_key_id)
      SELECT ${b.reservationId}, ${slug}, ${b.orderId}, (SELECT jsonb_agg(jsonb_build_object('productId', id, 'quantity', q, 'variants', vq)) FROM held),
        COALESCE((SELECT agent_key_id FROM orders WHERE id = ${b.orderId}), ${b.agentKeyId}::uuid)
      FROM ok WHERE go AND EXISTS (SELECT 1 FROM held)),
    ${orderRows(db, slug, b, now)}`,
    select: db`(SELECT status FROM prior) AS prior_status, (SELECT order_id FROM prior)::text AS prior_order, (SELECT go FROM ok) AS go,
      (SELECT jsonb_agg(jsonb_build_object('id', id, 'q', q, 'vq', vq)) FROM held) AS held, (SELECT count(*) FROM ins)::int AS inserted,
      (SELECT status FROM gone) AS gone_status, ${claim.columns}, ${coupon.columns}, ${bindingBlocked(db)} AS blocked`,
  };
}

/**
 * Starts one store's payment leg: holds tracked stock (untracked stock is unlimited and never locked), writes the
 * reservation and the order `pending` with its items, `created` event, `order.created` outbox row and the key's
 * allowlist binding. Idempotent per reservation id; a later attempt of the same session reuses the order.
 * A key the merchant has blocked, as last committed under the binding's lock, throws NOT_ELIGIBLE
 * `agent_blocked_by_merchant` after writing the leg: the caller's transaction must roll back (a turn's error does).
 * A shortage gives back what the statement held and throws STATE_EXECUTION_BLOCKED; so does a later attempt whose
 * order is no longer pending (the merchant canceled it), which holds nothing (reasons[0].code `order_canceled`).
 */
export async function beginLegRows(db: Sql, slug: string, b: BeginLegBody, now: number, onHeld?: HeldSink): Promise<{ orderId: string; created: boolean }> {
  const { ids, qs, vqs } = wantedStock(b.lines);
  if (lightHoldApplies(ids, vqs)) {
    const [l] = await run<{ prior_status: string | null; prior_order: string | null; go: boolean; inserted: number; blocked: boolean }[]>(db, lightHoldParts(db, slug, b, ids, now));
    if (l.prior_status) {
      if (l.prior_status === "released") throw fail("conflict", "This reservation was released.", { reservation_id: b.reservationId });
      return { orderId: l.prior_order as string, created: false };
    }
    // The statement wrote the leg's order: the caller's transaction rolls it back with this error (see bindingOf).
    if (l.blocked) throw blockedRefusal(slug, b);
    if (l.go && l.inserted > 0) {
      rememberUnheld(b);
      return { orderId: b.orderId, created: true };
    }
  }
  const [r] = await run<{
    prior_status: string | null;
    prior_order: string | null;
    go: boolean;
    held: Held[] | null;
    inserted: number;
    gone_status: OrderStatus | null;
    claimed_offers: string[] | null;
    coupon_claimed: boolean | null;
    blocked: boolean;
  }[]>(
    db,
    fullHoldParts(db, slug, b, ids, qs, vqs, now),
  );
  if (r.prior_status) {
    if (r.prior_status === "released") throw fail("conflict", "This reservation was released.", { reservation_id: b.reservationId });
    return { orderId: r.prior_order as string, created: false };
  }
  if (r.gone_status) {
    // Another attempt of a session whose order the merchant canceled (or that moved on): never charged or held.
    throw fail("STATE_EXECUTION_BLOCKED", `The merchant's order for this checkout is ${r.gone_status}; start a new checkout.`, {
      reasons: [{ code: r.gone_status === "canceled" ? "order_canceled" : "order_not_pending", store_id: slug, order_id: b.orderId, status: r.gone_status }],
    });
  }
  // The merchant blocked the key (only a leg that went ahead reads it): its hold and order are written, and the caller's
  // transaction rolls them back with this error (the cart's turn, or the store's beginLeg turn); see bindingOf.
  if (r.blocked) throw blockedRefusal(slug, b);
  if (!r.go) {
    const claim = negotiatedLines(b).ids.length;
    if (claim > 0) await releaseClaims(db, b.orderId);
    if (b.couponCode !== null) await releaseCouponClaim(db, b.orderId);
    if (claim > 0 && (r.claimed_offers ?? []).length < claim) throw offerRefusal(slug, b, r.claimed_offers ?? []);
    if (r.coupon_claimed === false) throw couponRefusal(slug, b);
    const held = r.held ?? [];
    if (held.length) {
      // Give back what this statement held before it found another line short.
      await db`UPDATE products p SET reserved_quantity = GREATEST(0, p.reserved_quantity - w.q),
          variant_reserved = stock_counts_add(p.variant_reserved, w.vq, -1)
        FROM jsonb_to_recordset(${db.json(held as never)}::jsonb) AS w(id uuid, q int, vq jsonb) WHERE p.id = w.id`;
    }
    const levels = await db<{ id: string; available: number | null; variants: VariantStock[] | null; variant_reserved: Record<string, number> | null }[]>`
      SELECT id, CASE WHEN NOT in_stock OR NOT active OR store_slug <> ${slug} THEN 0 WHEN stock_quantity IS NULL THEN NULL
        ELSE GREATEST(0, stock_quantity - reserved_quantity) END AS available, variants, variant_reserved
      FROM products WHERE id = ANY(${ids}::uuid[])`;
    throw fail("STATE_EXECUTION_BLOCKED", "Stock no longer covers the cart.", { reasons: stockShortages(slug, ids, qs, vqs, levels) });
  }
  if (r.held?.length) {
    nothingHeld.delete(b.reservationId);
    onHeld?.(r.held.map((h) => h.id));
  } else rememberUnheld(b);
  return { orderId: b.orderId, created: r.inserted > 0 };
}

/**
 * `beginLegRows` as a write riding in the cart turn's state statement (host.ts `checkpointWith`): the leg's rows
 * and the session's IN_PROGRESS state in one autocommit statement. It is sent for the plain outcome only — the leg
 * goes ahead (light hold: its order inserted) — and otherwise refuses (AF002), writing nothing, so that every other
 * outcome (a replayed reservation, a shortage, a stale hint) is decided by `beginLegRows` as before. `done` reads
 * the committed row and returns the tracked products it held (none for the light hold).
 */
export function beginLegRiding(db: Sql, slug: string, b: BeginLegBody, now: number): { write: RidingWrite; done(row: Record<string, unknown>): string[] } {
  const { ids, qs, vqs } = wantedStock(b.lines);
  if (lightHoldApplies(ids, vqs)) {
    const p = lightHoldParts(db, slug, b, ids, now);
    return {
      write: { ctes: p.ctes, select: db`CASE WHEN (SELECT go FROM ok) AND EXISTS (SELECT 1 FROM ins) AND NOT ${bindingBlocked(db)} THEN 1 ELSE actor_write_refused('leg_hold') END AS leg_ok` },
      done: () => {
        rememberUnheld(b);
        return [];
      },
    };
  }
  const p = fullHoldParts(db, slug, b, ids, qs, vqs, now);
  return {
    write: {
      ctes: p.ctes,
      select: db`CASE WHEN (SELECT go FROM ok) AND NOT ${bindingBlocked(db)} THEN 1 ELSE actor_write_refused('leg_hold') END AS leg_ok,
        ARRAY(SELECT id::text FROM held) AS leg_held`,
    },
    done: (row) => {
      const held = (row.leg_held as string[] | null) ?? [];
      if (held.length) nothingHeld.delete(b.reservationId);
      else rememberUnheld(b);
      return held;
    },
  };
}

/**
 * `w`: the lines of the reservation just updated in `rsv`, summed per product (id, quantity, variant counts). Shared
 * by settle, release and cancel, which all start from a reservation row.
 */
function reservedPerProduct(db: Sql) {
  return db`w AS (SELECT (e->>'productId')::uuid AS id, sum((e->>'quantity')::int)::int AS q, stock_counts_sum(array_agg(COALESCE(e->'variants', '{}'::jsonb))) AS vq
        FROM rsv, jsonb_array_elements(rsv.lines) e GROUP BY 1)`;
}

/**
 * `back`: the quantities in `w` are no longer held by their products. The ids reach products as one InitPlan value
 * (p.id = ANY(ARRAY(SELECT id FROM w))), so the primary key is the way in (see the settle statement). `heldBack` is
 * the column of the products given back (all tracked: only tracked stock is held), for the caller's HeldSink.
 *
 * Lock order: coupon rows before product rows, as the hold takes them (couponClaim; review RN HIGH-1). The statement
 * declares `couponGivenBack` first, and `(SELECT count(*) FROM cback) >= 0` (always true, a one-time filter evaluated
 * before the first product row is read) runs `cback` to its end first. Without it the order was whatever the
 * statement's result happened to read: once `heldBack` read `back`, a release locked the product and then the
 * coupon, and a hold racing it (coupon, then product) was a 40P01 deadlock.
 */
function givenBack(db: Sql) {
  return db`blk AS (SELECT p.id FROM products p WHERE (SELECT count(*) FROM cback) >= 0 AND p.id = ANY(ARRAY(SELECT id FROM w))
        ORDER BY p.id FOR NO KEY UPDATE),
    back AS (UPDATE products p SET reserved_quantity = GREATEST(0, p.reserved_quantity - w.q),
        variant_reserved = stock_counts_add(p.variant_reserved, w.vq, -1)
      FROM w WHERE (SELECT count(*) FROM blk) >= 0 AND p.id = ANY(ARRAY(SELECT id FROM w)) AND p.id = w.id RETURNING p.id)`;
}
const heldBack = (db: Sql) => db`ARRAY(SELECT id::text FROM back) AS held_back`;

/**
 * `o` … `outbox`: a pending order moves to `to` with its capture reference, its history event and its
 * `order.status_changed` outbox row. `guard` is an extra condition on the order's update. The coupon's use is not
 * counted here: the leg's hold claimed it (couponClaim), and a paid order keeps it.
 * `offers`: the negotiated offers the order claimed when its leg began are used from now on (`used`), in the statement
 * that records the capture. The light settle leaves it out: a leg that claimed an offer never takes it (rememberUnheld).
 */
function paidRows(db: Sql, slug: string, b: SettleLegBody, to: OrderStatus, changedPayload: StatusChangedPayload, guard: ReturnType<Sql>, offers = false) {
  return db`o AS (
      UPDATE orders SET status = ${to}, capture_ref = ${b.captureRef ?? null}, intent_id = ${b.intentId ?? b.reservationId},
        simulated = ${b.simulated ?? false}, paid_at = now(), updated_at = now(), version = version + 1
      WHERE id = ${b.orderId} AND store_slug = ${slug} AND status = 'pending' ${guard} RETURNING id),
    ev AS (
      INSERT INTO order_events (order_id, type, from_status, to_status, data)
      SELECT id, 'mark_paid', 'pending', ${to}, ${db.json({ actor: "system", capture_ref: b.captureRef ?? null, intent_id: b.intentId ?? null } as never)}::jsonb FROM o),
    outbox AS (INSERT INTO webhook_events (store_slug, kind, payload) SELECT ${slug}, 'order.status_changed', ${db.json(changedPayload as never)}::jsonb FROM o)${
      offers ? db`,
    used AS (UPDATE negotiation_offers n SET used_at = now() FROM o WHERE n.order_id = o.id AND n.used_at IS NULL)` : db``}`;
}

/** The pending → paid move of a captured leg, as `settleLegRows` and `settleCapturedLegRiding` send it. */
function capturedMove(slug: string, b: SettleLegBody, totalMinor: number, currency: string, now: number) {
  // The machine names the move (pending → paid by the system); the statement applies it only to a pending order.
  const to = applyOrderEvent({ status: "pending" as OrderStatus, createdAt: now, deliveredAt: null, history: [] }, "mark_paid", "system", now).status;
  const changedPayload = statusChangedPayload({ orderId: b.orderId, merchantSlug: slug, totalMinor, currency }, "pending", to, now);
  return { to, changedPayload };
}

/**
 * The settle of a captured leg that held nothing (no reservation row): only the order moves. The guard re-checks that
 * in SQL; an order still pending after it (a reservation row after all) was left untouched for the full settle.
 */
function lightSettleCtes(db: Sql, slug: string, b: SettleLegBody, to: OrderStatus, changedPayload: StatusChangedPayload) {
  return paidRows(db, slug, b, to, changedPayload, db`AND NOT EXISTS (SELECT 1 FROM stock_reservations WHERE id = ${b.reservationId})`);
}

function fullSettleCtes(db: Sql, slug: string, b: SettleLegBody, to: OrderStatus, changedPayload: StatusChangedPayload) {
  // The stock is sold only for an order still waiting for its payment (review R5 note): a canceled order's hold is
  // never committed, whoever sends the settle (the CTEs see the order as it was before this statement).
  return db`rsv AS (
      UPDATE stock_reservations SET status = 'committed', updated_at = now()
      WHERE id = ${b.reservationId} AND store_slug = ${slug} AND status = 'held'
        AND EXISTS (SELECT 1 FROM orders WHERE id = ${b.orderId} AND store_slug = ${slug} AND status = 'pending') RETURNING lines),
    ${reservedPerProduct(db)},
    -- Lock order (audit K-4): the product rows first, by id, as the hold and the release take them.
    slk AS (SELECT p.id FROM products p WHERE p.id = ANY(ARRAY(SELECT id FROM w)) ORDER BY p.id FOR NO KEY UPDATE),
    -- p.id = ANY(ARRAY(SELECT id FROM w)): the ids reach products as one InitPlan value, so the primary key is the
    -- way in; joined on w alone the generic plan expects 100 lines (jsonb_array_elements) and reads every product.
    sold AS (
      UPDATE products p SET reserved_quantity = GREATEST(0, p.reserved_quantity - w.q),
        stock_quantity = CASE WHEN p.stock_quantity IS NULL THEN NULL ELSE GREATEST(0, p.stock_quantity - w.q) END,
        in_stock = CASE WHEN p.stock_quantity IS NULL THEN p.in_stock ELSE p.stock_quantity - w.q > 0 END,
        variant_reserved = stock_counts_add(p.variant_reserved, w.vq, -1),
        variants = variant_stock_sell(p.variants, w.vq),
        updated_at = now()
      FROM w WHERE (SELECT count(*) FROM slk) >= 0 AND p.id = ANY(ARRAY(SELECT id FROM w)) AND p.id = w.id
      RETURNING p.id, p.stock_quantity IS NOT NULL OR w.vq <> '{}'::jsonb AS tracked),
    ${paidRows(db, slug, b, to, changedPayload, db``, true)}`;
}

/**
 * Settles one leg in one statement. `captured`: the held stock is committed, the order moves pending → paid with
 * its capture reference, history event and `order.status_changed` outbox row (the coupon use its hold claimed stays
 * spent). `released`: the stock and the coupon use go back and the order stays pending (history
 * `payment_rolled_back`). Idempotent: a settled reservation
 * and a non-pending order are left alone. Returns the order's status and the tracked products whose stock changed.
 */
export async function settleLegRows(
  db: Sql,
  slug: string,
  b: SettleLegBody & { totalMinor?: number; currency?: string },
  now: number,
  onHeld?: HeldSink,
): Promise<{ status: OrderStatus; changed: string[] }> {
  if (b.outcome === "released") {
    nothingHeld.delete(b.reservationId);
    const [r] = await db<{ status: OrderStatus | null; held_back: string[] }[]>`
      WITH rsv AS (
        UPDATE stock_reservations SET status = 'released', updated_at = now()
        WHERE id = ${b.reservationId} AND store_slug = ${slug} AND status = 'held' RETURNING lines),
      ${reservedPerProduct(db)},
      -- The coupon use this attempt's hold claimed, while the order still waits on this attempt (a late release of an
      -- earlier attempt must not give back the current one's); the claim row makes a replay give nothing. Declared
      -- before givenBack: the coupon row is locked before the product rows (lock order, see givenBack).
      ${couponGivenBack(db, db`SELECT id FROM orders WHERE id = ${b.orderId} AND store_slug = ${slug} AND status = 'pending' AND intent_id = ${b.reservationId}`)},
      ${givenBack(db)},
      -- A leg that held nothing has no reservation row; its release writes one, so a replay of this reservation id
      -- is refused (conflict) as for held stock, instead of being taken for the order's current attempt.
      mark AS (
        INSERT INTO stock_reservations (id, store_slug, order_id, lines, status)
        SELECT ${b.reservationId}, ${slug}, id, '[]'::jsonb, 'released' FROM orders WHERE id = ${b.orderId} AND store_slug = ${slug}
        ON CONFLICT (id) DO NOTHING),
      ev AS (
        INSERT INTO order_events (order_id, type, data)
        SELECT id, 'payment_rolled_back', ${db.json({ intent_id: b.reservationId, note: b.note ?? null } as never)}::jsonb
        FROM orders WHERE id = ${b.orderId} AND store_slug = ${slug})
      SELECT (SELECT status FROM orders WHERE id = ${b.orderId} AND store_slug = ${slug}) AS status, ${heldBack(db)}`;
    if (!r?.status) throw fail("ORDER_NOT_FOUND", "No order with that id for this store.", { order_id: b.orderId });
    if (r.held_back.length) onHeld?.(r.held_back);
    return { status: r.status, changed: [] };
  }
  let totalMinor = b.totalMinor;
  let currency = b.currency;
  if (totalMinor === undefined || currency === undefined) {
    const o = await loadOrder(db, slug, b.orderId);
    totalMinor = Number(o.total_minor);
    currency = o.currency;
  }
  const { to, changedPayload } = capturedMove(slug, b, totalMinor, currency, now);
  if (nothingHeld.delete(b.reservationId)) {
    // Nothing was held for this reservation (no row): only the order moves. The guard re-checks it in SQL; an order
    // still pending after this statement (a reservation row after all) was left untouched, and the full settle runs.
    const [l] = await db<{ paid: number; status: OrderStatus | null }[]>`
      WITH ${lightSettleCtes(db, slug, b, to, changedPayload)}
      SELECT (SELECT count(*) FROM o)::int AS paid, (SELECT status FROM orders WHERE id = ${b.orderId} AND store_slug = ${slug}) AS status`;
    if (!l.status) throw fail("ORDER_NOT_FOUND", "No order with that id for this store.", { order_id: b.orderId });
    if (l.paid) return { status: to, changed: [] };
    if (l.status !== "pending") return { status: l.status, changed: [] };
  }
  const [r] = await db<{ paid: number; changed: string[]; status: OrderStatus | null }[]>`
    WITH ${fullSettleCtes(db, slug, b, to, changedPayload)}
    SELECT (SELECT count(*) FROM o)::int AS paid, ARRAY(SELECT id::text FROM sold WHERE tracked) AS changed,
      (SELECT status FROM orders WHERE id = ${b.orderId} AND store_slug = ${slug}) AS status`;
  if (!r.status) throw fail("ORDER_NOT_FOUND", "No order with that id for this store.", { order_id: b.orderId });
  return { status: r.paid ? to : r.status, changed: r.changed };
}

/**
 * The settle of a captured leg riding in the cart turn's state statement (host.ts `checkpointWith`): the order paid
 * and the session COMPLETED in one autocommit statement. Sent for the plain outcome only — this statement moves the
 * order from pending to paid — and otherwise refuses (AF002), writing nothing, so that `settleLegRows` decides every
 * other case (an order already moved, a stale hint) as before. `changed`: the tracked products whose stock changed.
 */
export function settleCapturedLegRiding(
  db: Sql,
  slug: string,
  b: SettleLegBody & { totalMinor: number; currency: string },
  now: number,
): { write: RidingWrite; changed(row: Record<string, unknown>): string[] } {
  const { to, changedPayload } = capturedMove(slug, b, b.totalMinor, b.currency, now);
  const guard = db`CASE WHEN EXISTS (SELECT 1 FROM o) THEN 1 ELSE actor_write_refused('leg_settle') END AS leg_ok`;
  // the hint is used once: a refusal leaves the decision to the full settle
  if (nothingHeld.delete(b.reservationId)) {
    return { write: { ctes: lightSettleCtes(db, slug, b, to, changedPayload), select: guard }, changed: () => [] };
  }
  return {
    write: { ctes: fullSettleCtes(db, slug, b, to, changedPayload), select: db`${guard}, ARRAY(SELECT id::text FROM sold WHERE tracked) AS leg_changed` },
    changed: (row) => (row.leg_changed as string[] | null) ?? [],
  };
}

/**
 * A pending order whose session ended unpaid: its held stock released and the order canceled with its event and
 * `order.status_changed` outbox row, in one statement. Any other status is left as it is (and returned).
 */
export async function cancelPendingOrderRows(
  db: Sql,
  slug: string,
  o: {
    orderId: string;
    reason: string;
    /** The agent's own cancel of its session: recorded as `canceled_by: agent`. */
    byAgent?: boolean;
    /** A merchant's cancel of its own pending order through the session: recorded as `canceled_by: merchant` (its repeat answers 200, audit D-1). */
    byMerchant?: boolean;
  },
  now: number,
  onHeld?: HeldSink,
): Promise<{ status: OrderStatus | null }> {
  const to = applyOrderEvent({ status: "pending" as OrderStatus, createdAt: now, deliveredAt: null, history: [] }, "cancel", "system", now).status;
  // The payload's total and currency are the canceled row's (audit A8 MED-1): a preview after a decline re-prices the
  // session's leg, not the pending order, so the caller's leg total may be one the order never had. The builder's
  // shape is kept; `totalAmount` is toMajor in SQL (float8 division, as exact as JS's; jsonb keeps the shortest form).
  const { totalAmount: _t, currency: _c, ...head } = statusChangedPayload({ orderId: o.orderId, merchantSlug: slug, totalMinor: 0, currency: "USD" }, "pending", to, now);
  const [r] = await db<{ canceled: number; status: OrderStatus | null; held_back: string[] }[]>`
    WITH rsv AS (
      UPDATE stock_reservations SET status = 'released', updated_at = now()
      WHERE order_id = ${o.orderId} AND store_slug = ${slug} AND status = 'held' RETURNING lines),
    ${reservedPerProduct(db)},
    c AS (
      UPDATE orders SET status = ${to}, updated_at = now(), version = version + 1
      WHERE id = ${o.orderId} AND store_slug = ${slug} AND status = 'pending' RETURNING id, intent_id, total_minor, currency),
    -- The attempt of a leg that held nothing has no reservation row: one is written released, so a replay of its
    -- reservation id is refused (conflict) instead of being reported as held for a canceled order.
    mark AS (
      INSERT INTO stock_reservations (id, store_slug, order_id, lines, status)
      SELECT c.intent_id, ${slug}, c.id, '[]'::jsonb, 'released' FROM c WHERE c.intent_id IS NOT NULL
      ON CONFLICT (id) DO NOTHING),
    ev AS (
      INSERT INTO order_events (order_id, type, from_status, to_status, data)
      SELECT id, 'cancel', 'pending', ${to}, ${db.json({ actor: "system", reason: o.reason, ...(o.byAgent ? { canceled_by: "agent" } : o.byMerchant ? { canceled_by: "merchant" } : {}) } as never)}::jsonb FROM c),
    outbox AS (
      INSERT INTO webhook_events (store_slug, kind, payload)
      SELECT ${slug}, 'order.status_changed', ${db.json(head as never)}::jsonb || jsonb_build_object(
        'totalAmount', c.total_minor::float8 / power(10::float8, COALESCE((${db.json(MINOR_UNIT_EXPONENTS_NOT_2 as never)}::jsonb ->> upper(c.currency))::int, 2)),
        'currency', c.currency) FROM c),
    -- A negotiated offer the order claimed is free again for another order of the key (it was never paid with).
    freed AS (UPDATE negotiation_offers n SET order_id = NULL FROM c WHERE n.order_id = c.id AND n.used_at IS NULL),
    -- So is the coupon use its leg's hold claimed (no hold is live for a canceled order); declared before givenBack:
    -- the coupon row is locked before the product rows (lock order, see givenBack).
    ${couponGivenBack(db, db`SELECT id FROM c`)},
    ${givenBack(db)}
    SELECT (SELECT count(*) FROM c)::int AS canceled, (SELECT status FROM orders WHERE id = ${o.orderId} AND store_slug = ${slug}) AS status, ${heldBack(db)}`;
  if (r.held_back.length) onHeld?.(r.held_back);
  return { status: r.canceled ? to : r.status };
}

type Ctx = ActorContext<unknown>;

/**
 * A pending order canceled in the store's turn: its coupon use and held stock given back, then the move (any other
 * status is returned, its held stock released). The coupon first: coupon rows before product rows (lock order, see
 * givenBack); if the move then finds the order changed meanwhile, the turn's transaction rolls all of it back.
 */
async function cancelPendingHere(ctx: Ctx, orderId: string, actor: OrderActor, data: Record<string, unknown>): Promise<{ status: OrderStatus; canceled: boolean }> {
  const tx = await ctx.tx();
  const order = await loadOrder(tx, ctx.id, orderId);
  if (order.status === "pending") await releaseCouponClaim(tx, orderId);
  const holds = await tx<{ id: string }[]>`SELECT id FROM stock_reservations WHERE order_id = ${orderId} AND status = 'held'`;
  const released: string[] = [];
  for (const h of holds) released.push(...(await settleReservation(tx, ctx.id, h.id, "released")));
  // published when this turn commits (search re-reads the buyable stock of what went back)
  const ev = heldStockChanged(ctx.id, released);
  if (ev) ctx.publish(CATALOG_CHANGED, ev);
  if (order.status !== "pending") return { status: order.status, canceled: false };
  const to = await moveOrder(tx, order, "cancel", actor, ctx.now(), data);
  await releaseClaims(tx, orderId);
  return { status: to, canceled: true };
}

/**
 * The merchant cancels a pending order, through its checkout session as the agent's own cancel does
 * (actors/cart/cancel-pending.ts, with the merchant's store named): refused while a capture waits for
 * reconciliation (`reconciliation_required`), while a payment runs or may have run (`payment_in_progress`), and
 * while the buyer's checkout also holds another merchant's unpaid order (`shared_checkout`: canceling the session
 * would cancel that order too); otherwise the cart cancels the session (its unpaid orders canceled, their stock
 * released) in its turn, so that no later attempt of the session can charge for a canceled order. A session the
 * cart no longer has, and an order without one, is canceled here.
 */
async function merchantCancelPending(
  ctx: Ctx,
  order: OrderRow,
  userId: string | null,
  note: string | null,
): Promise<{ order_id: string; status: OrderStatus; refund?: RefundView | null; refund_by_merchant?: true }> {
  const [flag] = await ctx.sql<{ reconciliation: string | null }[]>`SELECT reconciliation FROM orders WHERE id = ${order.id}`;
  // Imported here, not at the top: the cart module imports this one (leg rows). The cart never asks the store
  // actor anything, so this store turn waiting on the cart's cannot deadlock.
  const { cartActor } = await import("../cart/index.ts");
  const viaSession = await cancelPendingViaSession(
    (cartId, body) => ctx.ask(cartActor, cartId, "cancel", body),
    { id: order.id, cartId: order.cart_id, checkoutSessionId: order.checkout_session_id, agentKeyId: order.agent_key_id, reconciliation: flag?.reconciliation ?? null },
    { actor: "merchant", storeSlug: ctx.id },
  );
  let status: OrderStatus;
  if (viaSession) [{ status }] = await ctx.sql<{ status: OrderStatus }[]>`SELECT status FROM orders WHERE id = ${order.id}`;
  else {
    const here = await cancelPendingHere(ctx, order.id, "merchant", { user_id: userId, note });
    status = here.status;
    // Canceled meanwhile, not by this call: most often a session past its expiry, which the cart's `cancel` has just
    // ended (its orders canceled checkout_expired) before refusing. The merchant gets the order machine's own 409 for
    // a cancel of a canceled order, as after the session's timer had run (the same answer either side of the timer).
    if (!here.canceled && status === "canceled") throw refusedMove(status, "cancel", "merchant");
  }
  if (status === "paid" || status === "fulfilled") {
    // The payment won the race with this cancel (the session completed after the order was read pending): the
    // merchant's cancel of a captured order refunds it, as it would have a moment later (audit A1 M1).
    const paid = await loadOrder(await ctx.tx(), ctx.id, order.id);
    return cancelPaidOrder(ctx, paid, { actor: "merchant", agentKeyId: paid.agent_key_id, userId, reason: null, note });
  }
  return { order_id: order.id, status };
}

/**
 * The blocked key's pending orders here, canceled through their sessions (see setAllowlist). Every one, not only
 * those holding stock (audit M-2): a checkout of an untracked product holds nothing, yet its session waiting for the
 * buyer's approval could still be resumed and captured. Pending orders of the key, from orders_agent_key.
 */
async function releaseBlockedKeyHolds(ctx: Ctx, agentKeyId: string): Promise<void> {
  const held = await ctx.sql<{ id: string }[]>`
    SELECT o.id FROM orders o
    WHERE o.agent_key_id = ${agentKeyId}::uuid AND o.store_slug = ${ctx.id} AND o.status = 'pending'`;
  for (const { id } of held) {
    const order = await loadOrder(ctx.sql, ctx.id, id);
    if (order.status !== "pending") continue;
    try {
      await merchantCancelPending(ctx, order, null, "agent key blocked by the merchant");
    } catch (err) {
      // ORDER_NOT_CANCELLABLE (money may move, reconciliation, a shared checkout): left to end as its session does.
      // conflict: canceled meanwhile by another (its session's expiry, the agent), which is what the block wants.
      if (!(err instanceof ActorError) || (err.code !== "ORDER_NOT_CANCELLABLE" && err.code !== "conflict")) throw err;
    }
  }
}

export const commerceHandlers = {
  async beginLeg(ctx: Ctx, b: BeginLegBody): Promise<{ orderId: string; created: boolean }> {
    return beginLegRows(await ctx.tx(), ctx.id, b, ctx.now());
  },

  async settleLeg(ctx: Ctx, b: SettleLegBody): Promise<{ status: OrderStatus }> {
    const r = await settleLegRows(await ctx.tx(), ctx.id, b, ctx.now());
    if (r.changed.length) ctx.publish("catalog.changed", { storeSlug: ctx.id, upserted: r.changed, removed: [] });
    return { status: r.status };
  },

  /**
   * The agent's cancel at the store (its only caller): `canceled`: this turn moved the order from pending (false: it
   * was no longer pending, `status` says what it is). The event records `canceled_by: agent`, so that the agent's
   * repeated cancel answers alike (gateway/rest/orders.ts agentCanceledUnpaid, review RC-3).
   */
  async cancelOrder(ctx: Ctx, b: Static<(typeof commerceMessages)["cancelOrder"]>): Promise<{ status: OrderStatus; canceled: boolean }> {
    return cancelPendingHere(ctx, b.orderId, "system", { reason: b.reason, canceled_by: "agent" });
  },

  /**
   * Merchant moves. A cancel of a `pending` order goes through its checkout session (`cart.cancel`), which refuses
   * while money may move (409 ORDER_NOT_CANCELLABLE, `details.reason: payment_in_progress`) and otherwise cancels
   * the session's unpaid orders and releases their stock in the cart's turn. A cancel of a `paid` or `fulfilled`
   * order refunds what is left of the capture (refund-flow.ts `cancelPaidOrder`, as the agent's cancel).
   */
  async setOrderStatus(
    ctx: Ctx,
    b: Static<(typeof commerceMessages)["setOrderStatus"]>,
  ): Promise<{ order_id: string; status: OrderStatus; refund?: RefundView | null; refund_by_merchant?: true }> {
    // Read through the pool: a pending cancel waits on the cart's turn and must not hold a connection meanwhile.
    const order = await loadOrder(ctx.sql, ctx.id, b.orderId);
    // The merchant's repeat of its own move (a retry after a lost answer, a double click) answers as the first did,
    // and drives a cancel's refund still APPROVED (audit D-1); any other move to a decided order keeps its 409.
    const repeat = await merchantRepeatOfMove(ctx, order, b.status, STATUS_EVENT[b.status]);
    if (repeat) return repeat;
    if (b.status === "canceled" && order.status === "pending") return merchantCancelPending(ctx, order, b.userId ?? null, b.note ?? null);
    if (b.status === "canceled" && (order.status === "paid" || order.status === "fulfilled")) {
      return cancelPaidOrder(ctx, order, { actor: "merchant", agentKeyId: order.agent_key_id, userId: b.userId ?? null, reason: null, note: b.note ?? null });
    }
    const tx = await ctx.tx();
    const to = await moveOrder(tx, order, STATUS_EVENT[b.status], "merchant", ctx.now(), { user_id: b.userId ?? null, note: b.note ?? null });
    return { order_id: order.id, status: to };
  },

  async proposeRefund(ctx: Ctx, b: Static<(typeof commerceMessages)["proposeRefund"]>): Promise<RefundView> {
    const slug = ctx.id;
    const tx = await ctx.tx();
    const terms = refundPolicyColumns(tx);
    const rows = await tx<(OrderRow & { accepts_returns: boolean | null; return_window_days: number | null; binding: string | null })[]>`
      SELECT o.id, o.store_slug, o.status, o.total_minor, o.currency, o.agent_key_id, o.created_at, o.delivered_at, o.capture_ref,
        o.refunded_minor, o.payment_rail, o.captured_minor, ${terms.columns}, a.status AS binding
      FROM orders o JOIN stores s ON s.slug = o.store_slug ${terms.join}
      LEFT JOIN store_agent_allowlist a ON a.store_slug = o.store_slug AND a.agent_key_id = ${b.agentKeyId}
      WHERE o.id = ${b.orderId} AND o.store_slug = ${slug}`;
    const o = rows[0];
    // Not the key's order, or no allowed binding with this store: the same 404 (no oracle for other tenants).
    if (!o || o.agent_key_id !== b.agentKeyId || o.binding !== "allowed") throw fail("ORDER_NOT_FOUND", "No such order for this key.");
    // What the caller asked, as sent (an omitted amount stays null): a retry must send the same.
    const request = { amount: b.amount ?? null, reason: b.reason ?? null };
    if (b.idempotencyKey) {
      const [prev] = await tx<(RefundRow & { idempotency_request: unknown })[]>`
        SELECT id, order_id, store_slug, status, amount_minor, currency, reason, refund_ref, created_at, updated_at, idempotency_request
        FROM order_refunds WHERE order_id = ${o.id} AND idempotency_key = ${b.idempotencyKey}`;
      if (prev) {
        // Checked before the bounds: after the first request nothing may be left to refund, yet its retry is answered.
        const asked = prev.idempotency_request as { amount?: unknown; reason?: unknown } | null;
        if (!asked || (asked.amount ?? null) !== request.amount || (asked.reason ?? null) !== request.reason) {
          throw fail("IDEMPOTENCY_KEY_CONFLICT", "This idempotency key was used for a refund request with another amount or reason.", {
            refund_id: prev.id,
          });
        }
        return refundView(prev);
      }
    }
    const refunds = await tx<{ status: RefundStatus; amount_minor: number }[]>`SELECT status, amount_minor FROM order_refunds WHERE order_id = ${o.id}`;
    const { amountMinor, reason } = validateRefundRequest({
      // Bounded by what was captured (an accepted amount mismatch may differ from the total: migration 0071).
      order: { status: o.status, totalMinor: orderTotalMinor(o), createdAt: o.created_at.getTime(), deliveredAt: o.delivered_at?.getTime() ?? null },
      refunds: refundRecordsOf(refunds),
      // The window every view shows (refunds.ts refundWindowDays): a store that does not accept returns has 0 days (audit M-4).
      policy: { acceptsReturns: o.accepts_returns, returnWindowDays: o.return_window_days },
      amount: b.amount,
      reason: b.reason,
      now: ctx.now(),
    });
    // After the request's own checks (a pending order is cancelled, not refunded; a closed window is closed for all):
    // an x402 payment cannot be pulled back, so no request that could only fail is written (helper C, C-4).
    if (railOfOrder(o.payment_rail) === "x402") throw x402RefundRequestRefused(o.id);
    const [r] = await tx<RefundRow[]>`INSERT INTO order_refunds (order_id, store_slug, agent_key_id, amount_minor, currency, reason, idempotency_key, idempotency_request)
      VALUES (${o.id}, ${slug}, ${b.agentKeyId}, ${amountMinor}, ${o.currency}, ${reason}, ${b.idempotencyKey ?? null},
        ${b.idempotencyKey ? tx.json(request as never) : null})
      RETURNING id, order_id, store_slug, status, amount_minor, currency, reason, refund_ref, created_at, updated_at`;
    await tx`INSERT INTO order_events (order_id, type, data) VALUES (${o.id}, 'refund_requested', ${tx.json({ refund_id: r.id, amount_minor: amountMinor } as never)})`;
    return refundView(r);
  },

  async decideRefund(ctx: Ctx, b: Static<(typeof commerceMessages)["decideRefund"]>): Promise<RefundView> {
    if (b.decision === "approve") return approveRefund(ctx, b.refundId, b.userId);
    const tx = await ctx.tx();
    // The order row first, then the refund row: the reconcile refund (the cart's turn) takes them in that order
    // (audit K-2). Read after the lock, the refund's status is the one the reconcile committed, if it ran.
    await lockOrderOfRefund(tx, ctx.id, b.refundId);
    const refund = await loadRefund(tx, ctx.id, b.refundId);
    // A repeated reject of a refund a merchant rejected answers it as it is (audit D-1). One the system closed (a
    // cancel superseded it: its event says `actor: system`) was not the merchant's reject and stays 409.
    if (refund.status === "REJECTED") {
      const [byMerchant] = await tx<{ yes: boolean }[]>`SELECT EXISTS (SELECT 1 FROM order_events WHERE order_id = ${refund.order_id}
        AND type = 'refund_rejected' AND data ->> 'refund_id' = ${refund.id} AND COALESCE(data ->> 'actor', 'merchant') = 'merchant') AS yes`;
      if (byMerchant?.yes) return refundView(refund);
    }
    const next = applyRefundEvent({ status: refund.status, amountMinor: Number(refund.amount_minor) }, "reject", "merchant");
    // Conditional on the status read (audit K-1): a FAILED refund retried meanwhile (APPROVED, at the processor) is
    // never overwritten; the merchant is answered 409 with its current status.
    const rejected = await tx`UPDATE order_refunds SET status = ${next.status}, decided_by = ${b.userId}, updated_at = now() WHERE id = ${refund.id} AND status = ${refund.status}`;
    if (rejected.count === 0) {
      const now = await loadRefund(tx, ctx.id, refund.id);
      throw fail("conflict", `reject is not allowed on a ${now.status} refund by merchant.`, { status: now.status, event: "reject" });
    }
    await tx`INSERT INTO order_events (order_id, type, data) VALUES (${refund.order_id}, 'refund_rejected', ${tx.json({ actor: "merchant", refund_id: refund.id } as never)})`;
    return refundView(await loadRefund(tx, ctx.id, refund.id));
  },

  /**
   * Allow or block an agent key at this store. A blocked key is refused checkout here (actors/cart/hold-guard.ts, and
   * when a payment that waited for the buyer resumes: cart/index.ts runPayment, audit M-2), and its unpaid checkouts
   * at this store (holding stock or not, audit M-2) are canceled now through their sessions, as the merchant's own
   * cancel of each pending order would (merchantCancelPending): the session CANCELED, nothing captured, the stock
   * back on sale (audit X-3). An order that cannot be canceled so is left as it is: a payment running or waiting for
   * its outcome (`payment_in_progress`: it may have captured), a capture waiting for reconciliation, a checkout that
   * also holds another merchant's unpaid order (`shared_checkout`); those end as their session does.
   * The block is committed before the cancels (autocommit), so it stands whatever they answer.
   */
  async setAllowlist(ctx: Ctx, b: Static<(typeof commerceMessages)["setAllowlist"]>): Promise<{ merchant_slug: string; key_id: string; status: string }> {
    await ctx.sql`INSERT INTO store_agent_allowlist (store_slug, agent_key_id, status) VALUES (${ctx.id}, ${b.agentKeyId}, ${b.status})
      ON CONFLICT (store_slug, agent_key_id) DO UPDATE SET status = EXCLUDED.status, updated_at = now()`;
    if (b.status === "blocked") await releaseBlockedKeyHolds(ctx, b.agentKeyId);
    return { merchant_slug: ctx.id, key_id: b.agentKeyId, status: b.status };
  },
};

/**
 * A typing handle for callers (`ctx.ask(storeCommerce, slug, "beginLeg", …)`): the transport routes by kind, so
 * this reaches the registered `store` actor, which carries these messages. Never registered itself.
 */
export const storeCommerce = defineActor({
  kind: "store",
  initialState: (): unknown => ({}),
  messages: commerceMessages,
  handlers: commerceHandlers,
  reminders: refundReminders,
});
