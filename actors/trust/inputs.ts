/**
 * Database facts → engine inputs. `loadStoreFacts` reads a batch of stores with four aggregate queries (stores,
 * products, orders, nothing per row); `toEngineInputs` is pure and turns one store's facts into the v4.1
 * `TrustInputs` and the v2 `V2RawData`. Every mapping rule and constant is listed in docs/trust.md
 * ("Operations: inputs").
 *
 * Data the platform does not collect yet is never invented: price/stock checks at checkout, agent checkout
 * events (cart created / checkout started / completed), response latency, merchant-side request signing and
 * signed receipts are passed as "no observation" (v2: the engine's neutral default; v4.1: not_applicable, so
 * their weight is redistributed).
 */
import type { Sql } from "../../infra/db.ts";
import { catalogCompleteness, catalogFreshness, type V2RawData } from "./engine-v2.ts";
import type { Signal, TrustInputs } from "./engine-v41.ts";
import { clamp01, round } from "./types.ts";

const DAY_MS = 86_400_000;

export const INPUT_RULES = {
  /** Trailing window of the reliability rates, GMV and unique buyers (spec: 90 days). */
  windowDays: 90,
  /** Agent evidence is sparse: its rates use a longer window. */
  agentWindowDays: 180,
  /** On-time share at or below which fulfilment scores 0, and at or above which it scores 1. */
  fulfilmentZeroAt: 0.6,
  fulfilmentFullAt: 0.95,
  /** Dispute rate that scores 0 (same constant as v2: card networks treat ~1 % as excessive). */
  disputeRateZero: 0.05,
  /** Share of orders with any refund that scores 0. */
  refundRateZero: 0.25,
  /** Weight of disputes vs refunds inside disputeRefundHealth. */
  disputeShare: 0.6,
  /** Successful human orders in the window that count as full volume (log scale below it). */
  humanVolumeFull: 100,
  /**
   * Agent checkout health is combined per agent key: each key's own rate, weighted by its paid orders up to this
   * many, so one key's volume (a griefer's, or one big buyer's) cannot dominate the store's signal.
   */
  agentKeyWeightCap: 10,
  /**
   * The largest share of an order's capture that may go back with the order still counting as a sale toward the
   * tier (order counts, unique buyers, GMV). Refunded more than this, the merchant kept less than it sold: a refund of
   * all but a cent (review R5) bought a tier as a full refund did before R4-5. At 0.5 an order counts when the
   * merchant kept at least half of it; a legitimate partial refund (one item of several, a shipping or price
   * adjustment) keeps the order a sale.
   */
  saleMaxRefundedShare: 0.5,
  /** Store age that counts as fully established. */
  storeAgeFullDays: 365,
  verificationScore: { UNVERIFIED: 0, BASIC: 0.5, STANDARD: 0.75, PREMIUM: 0.9, QUALIFIED: 1 } as Record<string, number>,
  /** The policy fields a merchant is expected to declare (actors/store/schemas.ts `Policies`). */
  policyFields: [
    "acceptsReturns",
    "returnWindowDays",
    "freeShippingThresholdMinor",
    "restockingFeePercent",
    "shippingEstimateDays",
    "supportResponseTimeSla",
  ],
} as const;

/** Statuses an order only reaches once paid (orders without paid_at: merchant-recorded, imported, seeded). */
export const PAID_STATUSES = ["paid", "fulfilled", "shipped", "delivered", "partially_refunded", "refunded"] as const;

/** The money facts of one order that decide what it is evidence of (`saleOf`). */
export interface OrderMoney {
  status: string;
  totalMinor: number;
  /** What the processor captured when it is not the total (orders.captured_minor); null: the total. */
  capturedMinor: number | null;
  refundedMinor: number;
}

/**
 * What one paid, not canceled order is evidence of (R4-5, review R5). `refunded`: any money went back, or the
 * merchant recorded it as `refunded` (a merchant-recorded order may say so with no amount): a refund for the health
 * rates. `sale`: a kept sale (`keptSale`: at most `saleMaxRefundedShare` of the capture went back, and not recorded as
 * `refunded`), so it counts as an order and its buyer as a buyer for the tier and GMV; an order mostly or wholly
 * refunded sold nothing the tier may count. `netMinor`: its GMV, captured minus refunded (0 when not a sale).
 * `loadStoreFacts` applies the same rule in SQL (the `refunded`, `sale` and `net_minor` columns of its orders query);
 * test/http/trust-refunded-sales.test.ts checks the two agree on one case table.
 */
export function saleOf(o: OrderMoney): { refunded: boolean; sale: boolean; netMinor: number } {
  const captured = o.capturedMinor ?? o.totalMinor;
  const sale = o.status !== "refunded" && keptSale(captured, o.refundedMinor);
  return {
    refunded: o.refundedMinor > 0 || o.status === "refunded",
    sale,
    netMinor: sale ? Math.max(0, captured - o.refundedMinor) : 0,
  };
}

/**
 * The merchant kept the sale: what went back is at most `saleMaxRefundedShare` of what was captured (a free order
 * with nothing refunded is kept; any refund of a zero capture is not). Counting what was kept, not whether a cent
 * was left, is what stops a refund of all but a cent from counting as a sale (review R5).
 */
export function keptSale(capturedMinor: number, refundedMinor: number): boolean {
  return refundedMinor <= capturedMinor * INPUT_RULES.saleMaxRefundedShare;
}

export interface ProductFacts {
  count: number;
  withTitle: number;
  withPrice: number;
  withImages: number;
  withGtin: number;
  /** GTINs failing the GS1 check digit. */
  gtinInvalid: number;
  /** GTINs that repeat inside the store's catalog (count − distinct). */
  gtinDuplicates: number;
  /** Products priced in another currency than the store's, or at zero. */
  priceCurrencyBad: number;
  stockTracked: number;
  /** Tracked products whose in_stock flag contradicts their quantity. */
  stockInconsistent: number;
}

export interface OrderFacts {
  /**
   * All-time kept sales: paid, not canceled, at most half refunded (`keptSale`; the tier counts). Unpaid orders are
   * never counted anywhere (audit A4 H1); a fully refunded order is no sale (R4-5: a merchant buying from itself and
   * refunding everything bought a tier for free), nor one refunded all but a cent (review R5).
   */
  human: number;
  agent: number;
  /** Trailing window, sales only: the sum of their net amounts (captured − refunded, `saleOf`), and their buyers. */
  gmvMinor: number;
  uniqueBuyers: number;
  /** Trailing window, paid and not canceled, fully refunded ones included: the denominator of the health rates. */
  orders: number;
  /** Trailing window, orders whose fulfilment is decided (fulfilled_on_time not null). */
  decided: number;
  onTime: number;
  disputes: number;
  refunds: number;
  /**
   * Trailing window, not canceled, refunded or disputed (a dispute is a forced refund): the refund rate's numerator.
   * Absent from facts stored before it existed; `refundsOrDisputesOf` falls back for those.
   */
  refundsOrDisputes?: number;
  /** Human orders in the window fulfilled on time without dispute or refund. */
  humanGood: number;
  /**
   * Agent window (longer): agent orders that reached payment (incl. those the merchant canceled after payment; a
   * checkout the buyer abandoned or whose payment was declined is not counted, audit A4 H2), those completed without
   * cancel, refund or dispute, decided ones.
   */
  agentAll: number;
  agentCompleted: number;
  agentDecided: number;
  agentOnTime: number;
  agentDisputes: number;
  /**
   * agentCheckout combined per agent key (`agentCheckoutRate`); null without paid agent orders. Absent from facts
   * stored before it existed: the pooled agentCompleted / agentAll is used for those.
   */
  agentCheckoutRate?: number | null;
}

/** One agent key's checkouts at one store: paid ones, and those completed without cancel, refund or dispute. */
export interface AgentKeyCheckout {
  paid: number;
  completed: number;
}

export interface StoreFacts {
  slug: string;
  /** The store's currency (its GMV's); absent in facts stored before it was read: USD, the only one then. */
  currency?: string;
  verificationLevel: string;
  /** epoch ms */
  createdAt: number;
  lastSyncAt: number | null;
  policies: Record<string, unknown>;
  reviewAvg: number | null;
  reviewCount: number;
  products: ProductFacts;
  orders: OrderFacts;
}

const EMPTY_PRODUCTS: ProductFacts = {
  count: 0, withTitle: 0, withPrice: 0, withImages: 0, withGtin: 0, gtinInvalid: 0, gtinDuplicates: 0, priceCurrencyBad: 0, stockTracked: 0, stockInconsistent: 0,
};
const EMPTY_ORDERS: OrderFacts = {
  human: 0, agent: 0, gmvMinor: 0, uniqueBuyers: 0, orders: 0, decided: 0, onTime: 0, disputes: 0, refunds: 0, refundsOrDisputes: 0, humanGood: 0,
  agentAll: 0, agentCompleted: 0, agentDecided: 0, agentOnTime: 0, agentDisputes: 0, agentCheckoutRate: null,
};

const n = (v: unknown): number => (v === null || v === undefined ? 0 : Number(v));

/** Reads the facts of `slugs` (unknown slugs are simply absent from the result). */
export async function loadStoreFacts(sql: Sql, slugs: readonly string[], nowMs: number): Promise<Map<string, StoreFacts>> {
  const out = new Map<string, StoreFacts>();
  if (slugs.length === 0) return out;
  const list = [...slugs];
  const since = new Date(nowMs - INPUT_RULES.windowDays * DAY_MS);
  const agentSince = new Date(nowMs - INPUT_RULES.agentWindowDays * DAY_MS);
  const PAID_SQL = sql`(o.paid_at IS NOT NULL OR o.status IN ${sql(PAID_STATUSES as unknown as string[])})`;

  const [stores, products, orders, agentKeys] = await Promise.all([
    sql<{ slug: string; currency: string; verification_level: string; created_at: Date; last_sync_at: Date | null; policies: Record<string, unknown>; review_rating_avg: string | null; review_count: number }[]>`
      SELECT slug, currency, verification_level, created_at, last_sync_at, policies, review_rating_avg, review_count
      FROM stores WHERE slug = ANY(${list})`,
    sql<Record<string, string | number>[]>`
      SELECT p.store_slug,
        count(*) AS count,
        count(*) FILTER (WHERE length(btrim(p.title)) > 0) AS with_title,
        count(*) FILTER (WHERE p.price_minor > 0) AS with_price,
        count(*) FILTER (WHERE cardinality(p.images) > 0) AS with_images,
        count(p.gtin) AS with_gtin,
        count(*) FILTER (WHERE p.gtin IS NOT NULL AND NOT gtin_check_digit_ok(p.gtin)) AS gtin_invalid,
        count(p.gtin) - count(DISTINCT p.gtin) AS gtin_duplicates,
        count(*) FILTER (WHERE p.currency <> s.currency OR p.price_minor <= 0) AS price_currency_bad,
        count(*) FILTER (WHERE p.stock_quantity IS NOT NULL) AS stock_tracked,
        count(*) FILTER (WHERE p.stock_quantity IS NOT NULL AND p.in_stock <> (p.stock_quantity > 0)) AS stock_inconsistent
      FROM products p JOIN stores s ON s.slug = p.store_slug
      WHERE p.store_slug = ANY(${list}) AND p.active
      GROUP BY p.store_slug`,
    // GMV adds minor units, which only means something in one currency: an order in another currency (a merchant
    // may import one; POST /orders does not convert) is not converted but left out of GMV (audit A2 MED-4: one
    // 61 IDR order, 6,100 "minor units", lifted a USD store over the agent_verified GMV floor). It still counts
    // as an order everywhere else: it happened, only its amount is not comparable.
    // Only transactions count (audit A4 H1): an order that was never paid (a declined, failed or unapproved checkout
    // leaves it pending until the session ends) is not a sale, so it adds nothing to the tier counts, GMV, unique
    // buyers, the rates or agent checkout health. `paid` = paid_at set (checkout) or a post-payment status (orders
    // recorded by the merchant API or imported carry no paid_at). `real` = paid and not canceled. The fulfilment
    // counts take paid orders too: a merchant may record a `pending` order with fulfilledOnTime set.
    // Only kept sales count toward the tier (R4-5, review R5): `sale` = real, not recorded `refunded`, and at most
    // `saleMaxRefundedShare` of the capture refunded (`keptSale`); GMV sums `net_minor` (captured − refunded), so
    // buying from oneself and refunding it all, or all but a cent, adds no order, buyer or GMV. A refunded order stays
    // in `orders` and `refunds`: it is evidence for refund health. `refunded`, `sale`, `net_minor` are `saleOf` in SQL.
    sql<Record<string, string | number>[]>`
      SELECT store_slug,
        count(*) FILTER (WHERE channel = 'human' AND sale) AS human,
        count(*) FILTER (WHERE channel = 'agent' AND sale) AS agent,
        coalesce(sum(net_minor) FILTER (WHERE created_at >= ${since} AND sale AND currency = store_currency), 0) AS gmv_minor,
        count(DISTINCT buyer_ref) FILTER (WHERE created_at >= ${since} AND sale) AS unique_buyers,
        count(*) FILTER (WHERE created_at >= ${since} AND real) AS orders,
        count(*) FILTER (WHERE created_at >= ${since} AND paid AND fulfilled_on_time IS NOT NULL) AS decided,
        count(*) FILTER (WHERE created_at >= ${since} AND paid AND fulfilled_on_time) AS on_time,
        count(*) FILTER (WHERE created_at >= ${since} AND real AND disputed) AS disputes,
        count(*) FILTER (WHERE created_at >= ${since} AND real AND refunded) AS refunds,
        count(*) FILTER (WHERE created_at >= ${since} AND real AND (refunded OR disputed)) AS refunds_or_disputes,
        count(*) FILTER (WHERE created_at >= ${since} AND channel = 'human' AND real AND fulfilled_on_time AND NOT disputed AND NOT refunded) AS human_good,
        count(*) FILTER (WHERE channel = 'agent' AND created_at >= ${agentSince} AND paid) AS agent_all,
        count(*) FILTER (WHERE channel = 'agent' AND created_at >= ${agentSince} AND real AND NOT refunded AND NOT disputed) AS agent_completed,
        count(*) FILTER (WHERE channel = 'agent' AND created_at >= ${agentSince} AND paid AND fulfilled_on_time IS NOT NULL) AS agent_decided,
        count(*) FILTER (WHERE channel = 'agent' AND created_at >= ${agentSince} AND paid AND fulfilled_on_time) AS agent_on_time,
        count(*) FILTER (WHERE channel = 'agent' AND created_at >= ${agentSince} AND paid AND fulfilled_on_time IS NOT NULL AND disputed) AS agent_disputes
      FROM (SELECT o.*, ${PAID_SQL} AS paid, ${PAID_SQL} AND o.status <> 'canceled' AS real, s.currency AS store_currency,
              (o.refunded_minor > 0 OR o.status = 'refunded') AS refunded,
              ${PAID_SQL} AND o.status <> 'canceled' AND o.status <> 'refunded'
                AND o.refunded_minor <= COALESCE(o.captured_minor, o.total_minor) * ${String(INPUT_RULES.saleMaxRefundedShare)}::numeric AS sale,
              GREATEST(COALESCE(o.captured_minor, o.total_minor) - o.refunded_minor, 0) AS net_minor
            FROM orders o JOIN stores s ON s.slug = o.store_slug WHERE o.store_slug = ANY(${list})) orders
      GROUP BY store_slug`,
    // Agent checkout health per agent key (audit A4 H2): the spec asks for it per agent, and one key must not
    // dominate a store's signal. Only orders that reached payment are checkouts the merchant had a part in.
    sql<{ store_slug: string; paid: string; completed: string }[]>`
      SELECT o.store_slug,
        count(*) AS paid,
        count(*) FILTER (WHERE o.status NOT IN ('canceled', 'refunded') AND o.refunded_minor = 0 AND NOT o.disputed) AS completed
      FROM orders o
      WHERE o.store_slug = ANY(${list}) AND o.channel = 'agent' AND o.created_at >= ${agentSince} AND ${PAID_SQL}
      GROUP BY o.store_slug, o.agent_key_id`,
  ]);

  const productsBy = new Map(products.map((r) => [String(r.store_slug), r]));
  const ordersBy = new Map(orders.map((r) => [String(r.store_slug), r]));
  const keysBy = new Map<string, AgentKeyCheckout[]>();
  for (const r of agentKeys) {
    const list = keysBy.get(r.store_slug) ?? [];
    list.push({ paid: n(r.paid), completed: n(r.completed) });
    keysBy.set(r.store_slug, list);
  }
  for (const s of stores) {
    const p = productsBy.get(s.slug);
    const o = ordersBy.get(s.slug);
    out.set(s.slug, {
      slug: s.slug,
      currency: s.currency,
      verificationLevel: s.verification_level,
      createdAt: s.created_at.getTime(),
      lastSyncAt: s.last_sync_at ? s.last_sync_at.getTime() : null,
      policies: s.policies ?? {},
      reviewAvg: s.review_rating_avg === null ? null : Number(s.review_rating_avg),
      reviewCount: s.review_count,
      products: p
        ? {
            count: n(p.count),
            withTitle: n(p.with_title),
            withPrice: n(p.with_price),
            withImages: n(p.with_images),
            withGtin: n(p.with_gtin),
            gtinInvalid: n(p.gtin_invalid),
            gtinDuplicates: n(p.gtin_duplicates),
            priceCurrencyBad: n(p.price_currency_bad),
            stockTracked: n(p.stock_tracked),
            stockInconsistent: n(p.stock_inconsistent),
          }
        : { ...EMPTY_PRODUCTS },
      orders: o
        ? {
            human: n(o.human),
            agent: n(o.agent),
            gmvMinor: n(o.gmv_minor),
            uniqueBuyers: n(o.unique_buyers),
            orders: n(o.orders),
            decided: n(o.decided),
            onTime: n(o.on_time),
            disputes: n(o.disputes),
            refunds: n(o.refunds),
            refundsOrDisputes: n(o.refunds_or_disputes),
            humanGood: n(o.human_good),
            agentAll: n(o.agent_all),
            agentCompleted: n(o.agent_completed),
            agentDecided: n(o.agent_decided),
            agentOnTime: n(o.agent_on_time),
            agentDisputes: n(o.agent_disputes),
            agentCheckoutRate: agentCheckoutRate(keysBy.get(s.slug) ?? []),
          }
        : { ...EMPTY_ORDERS },
    });
  }
  return out;
}

// ---------------------------------------------------------------------------------------------------------------
// Pure mapping

const R = INPUT_RULES;
const measured = (value: number): Signal => ({ value: round(clamp01(value), 6), quality: "measured" });
const NOT_APPLICABLE: Signal = { value: 0, quality: "not_applicable" };

export const fulfilmentScore = (onTimeRate: number): number =>
  clamp01((onTimeRate - R.fulfilmentZeroAt) / (R.fulfilmentFullAt - R.fulfilmentZeroAt));
export const disputeScore = (disputeRate: number): number => clamp01(1 - disputeRate / R.disputeRateZero);
export const refundScore = (refundRate: number): number => clamp01(1 - refundRate / R.refundRateZero);

/**
 * Orders refunded or disputed. Facts stored before the field existed only know both counts: their sum, capped at
 * the order count, is an upper bound (an order both refunded and disputed counts twice), which keeps the score
 * monotone too until the next refresh stores the exact count.
 */
export const refundsOrDisputesOf = (o: OrderFacts): number => o.refundsOrDisputes ?? Math.min(o.orders, o.refunds + o.disputes);

/**
 * disputeRefundHealth, monotone in bad outcomes (audit A2 LOW-1): a disputed order counts in the refund rate too.
 * With refunds alone in that rate, every disputed, unrefunded order diluted the refund rate, so once the dispute
 * score sat at 0 (rate >= 5 %) more disputes raised the signal. Now one more disputed or refunded order never
 * raises it (both rates grow: (k + 1) / (n + 1) >= k / n for k <= n) and one more clean order never lowers it.
 */
export function disputeRefundHealth(o: OrderFacts): number | null {
  if (o.orders === 0) return null;
  return R.disputeShare * disputeScore(o.disputes / o.orders) + (1 - R.disputeShare) * refundScore(refundsOrDisputesOf(o) / o.orders);
}

/**
 * agentCheckout per agent key (audit A4 H2): the mean of each key's completion rate, each key weighted by its paid
 * orders capped at `agentKeyWeightCap`, so a key with 1,000 orders counts as much as one with 10. Keys without a paid
 * order count nothing. null when no key has one. Rounded to 6 decimals (the value is stored in the facts).
 */
export function agentCheckoutRate(keys: readonly AgentKeyCheckout[]): number | null {
  let num = 0;
  let den = 0;
  for (const k of keys) {
    if (!(k.paid > 0)) continue;
    const weight = Math.min(k.paid, R.agentKeyWeightCap);
    num += (weight * Math.min(Math.max(k.completed, 0), k.paid)) / k.paid;
    den += weight;
  }
  return den === 0 ? null : round(num / den, 6);
}

export function policyFieldsOf(policies: Record<string, unknown>): { filled: number; required: number } {
  const filled = R.policyFields.filter((f) => policies[f] !== undefined && policies[f] !== null && policies[f] !== "").length;
  return { filled, required: R.policyFields.length };
}

/** Checks behind data_consistency: price/currency, stock/quantity, GTIN check digit, GTIN uniqueness. */
export function consistencyChecks(p: ProductFacts): { total: number; passed: number } {
  const total = p.count + p.stockTracked + p.withGtin * 2;
  const failed = p.priceCurrencyBad + p.stockInconsistent + p.gtinInvalid + p.gtinDuplicates;
  return { total, passed: Math.max(0, total - failed) };
}

export function toV2Raw(f: StoreFacts): V2RawData {
  const p = f.products;
  const o = f.orders;
  return {
    products: { count: p.count, withTitle: p.withTitle, withPrice: p.withPrice, withImages: p.withImages, withGtin: p.withGtin },
    lastSuccessfulSyncAt: f.lastSyncAt,
    // Not collected yet (no live price/stock checks at checkout): no observation, the engine's neutral value.
    priceChecks: { total: 0, passed: 0 },
    stockChecks: { total: 0, passed: 0 },
    policyFields: policyFieldsOf(f.policies),
    // Agent checkout events are not recorded yet: neutral.
    agentEvents: { cartCreated: 0, checkoutStart: 0, checkoutComplete: 0 },
    // the spec's dispute rate is dispute tickets / total orders: every order of the window, not only those whose
    // fulfilment is decided (it divided by `decided`: a store with many undecided orders read a far higher rate)
    orders90d: { total: o.orders, decided: o.decided, fulfilledOnTime: o.onTime, disputes: Math.min(o.disputes, o.orders) },
    latencyP95Ms: null,
    ratings: { count: f.reviewCount, average0to5: f.reviewAvg },
    consistencyChecks: consistencyChecks(p),
  };
}

export function toV41Inputs(f: StoreFacts, nowMs: number): TrustInputs {
  const p = f.products;
  const o = f.orders;
  const completeness = catalogCompleteness(toV2Raw(f).products);
  const checks = consistencyChecks(p);
  const consistency = checks.total === 0 ? 0 : checks.passed / checks.total;
  const disputeRate = o.orders === 0 ? null : o.disputes / o.orders;
  const health = disputeRefundHealth(o);
  const policy = policyFieldsOf(f.policies);

  return {
    merchantReliabilityBase: {
      fulfillment: o.decided === 0 ? NOT_APPLICABLE : measured(fulfilmentScore(o.onTime / o.decided)),
      disputeRefundHealth: health === null ? NOT_APPLICABLE : measured(health),
      // Multiplied, not averaged: a complete catalog full of contradictory data is not a good catalog.
      catalogQuality: measured(p.count === 0 ? 0 : completeness * consistency),
      storeAge: measured(Math.max(0, nowMs - f.createdAt) / DAY_MS / R.storeAgeFullDays),
      humanOrderVolume: measured(Math.log10(1 + o.humanGood) / Math.log10(1 + R.humanVolumeFull)),
    },
    agenticReadiness: {
      // The merchant's own declaration of its policies.
      setupQuality: { value: round(policy.required === 0 ? 0 : policy.filled / policy.required, 6), quality: "self_declared" },
      // Merchant-side Ed25519 request/response signing is not integrated yet.
      protocolSecurity: NOT_APPLICABLE,
      // Identity verification level, held back by a dispute rate card networks would flag.
      complianceHealth: measured((R.verificationScore[f.verificationLevel] ?? 0) * (disputeRate === null ? 1 : disputeScore(disputeRate))),
      integrationFreshness: measured(catalogFreshness(f.lastSyncAt, nowMs)),
    },
    agenticEvidence:
      o.agentAll === 0
        ? { agentCheckout: NOT_APPLICABLE, agentFulfillmentDispute: NOT_APPLICABLE, receiptIntegrity: NOT_APPLICABLE }
        : {
            // Orders are a proxy for checkout health until checkout events are recorded.
            agentCheckout: { value: round(clamp01(o.agentCheckoutRate ?? o.agentCompleted / o.agentAll), 6), quality: "proxy" },
            agentFulfillmentDispute:
              o.agentDecided === 0
                ? NOT_APPLICABLE
                : // The weaker of the two: shipping on time does not make up for disputes, nor the reverse.
                  measured(Math.min(fulfilmentScore(o.agentOnTime / o.agentDecided), disputeScore(o.agentDisputes / o.agentDecided))),
            // Signed receipts are not issued yet.
            receiptIntegrity: NOT_APPLICABLE,
          },
    humanOrders: o.human,
    agentOrders: o.agent,
    gmv90dMinor: o.gmvMinor,
    gmv90dCurrency: f.currency ?? null,
    uniqueBuyers90d: o.uniqueBuyers,
    certifications: [],
  };
}

/** Signals backed by measured or verified data (the anomaly rule's evidence count). */
export function verifiedEvidenceCount(inputs: TrustInputs): number {
  let count = 0;
  for (const dim of [inputs.merchantReliabilityBase, inputs.agenticReadiness, inputs.agenticEvidence]) {
    for (const s of Object.values(dim) as (Signal | undefined)[]) if (s && (s.quality === "measured" || s.quality === "verified")) count++;
  }
  return count;
}

export interface EngineInputs {
  v41: TrustInputs;
  v2: V2RawData;
}

export function toEngineInputs(f: StoreFacts, nowMs: number): EngineInputs {
  return { v41: toV41Inputs(f, nowMs), v2: toV2Raw(f) };
}
