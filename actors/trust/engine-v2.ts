/**
 * Legacy trust engine v2 (scale 0..1): the degraded fallback. Twelve components, each a pure normalisation of raw
 * data to 0..1, combined by the spec's weights and clamped to 0..1. It applies no tier caps and no agent-evidence
 * checks and is not comparable with v4.1. Every normalisation is described in docs/trust.md.
 */
import { V2_MODEL_VERSION, clamp01, round } from "./types.ts";

export type V2ComponentName =
  | "catalog_completeness"
  | "catalog_freshness"
  | "price_accuracy"
  | "availability_accuracy"
  | "policy_coverage"
  | "checkout_success_rate"
  | "fulfillment_rate"
  | "dispute_rate"
  | "agent_satisfaction_rate"
  | "response_latency"
  | "review_sentiment"
  | "data_consistency";

export const V2_COMPONENTS: readonly { name: V2ComponentName; weight: number; source: "verified" | "declared" }[] = [
  { name: "catalog_completeness", weight: 0.11, source: "verified" },
  { name: "catalog_freshness", weight: 0.11, source: "verified" },
  { name: "price_accuracy", weight: 0.12, source: "verified" },
  { name: "availability_accuracy", weight: 0.08, source: "verified" },
  { name: "policy_coverage", weight: 0.08, source: "declared" },
  { name: "checkout_success_rate", weight: 0.11, source: "verified" },
  { name: "fulfillment_rate", weight: 0.08, source: "verified" },
  { name: "dispute_rate", weight: 0.07, source: "verified" },
  { name: "agent_satisfaction_rate", weight: 0.08, source: "verified" },
  { name: "response_latency", weight: 0.05, source: "verified" },
  { name: "review_sentiment", weight: 0.05, source: "declared" },
  { name: "data_consistency", weight: 0.06, source: "verified" },
];

/** Ratio checks: `passed` of `total` observations agreed. */
export interface CheckCounts {
  total: number;
  passed: number;
}

export interface V2RawData {
  products: { count: number; withTitle: number; withPrice: number; withImages: number; withGtin: number };
  /** epoch ms of the last successful catalog sync; null = never synced. */
  lastSuccessfulSyncAt: number | null;
  /** Listed price vs the live price at checkout. */
  priceChecks: CheckCounts;
  /** Stock status shown vs actual inventory. */
  stockChecks: CheckCounts;
  policyFields: { filled: number; required: number };
  agentEvents: { cartCreated: number; checkoutStart: number; checkoutComplete: number };
  /** Trailing 90 days. */
  /**
   * `total`: every order of the window (paid, not canceled), the dispute rate's denominator (spec: dispute tickets /
   * total orders). `decided`: those whose fulfilment is decided (on time or late), the fulfilment rate's; absent, the
   * total (inputs written before the two were told apart: helper C, session 21).
   */
  orders90d: { total: number; decided?: number; fulfilledOnTime: number; disputes: number };
  latencyP95Ms: number | null;
  ratings: { count: number; average0to5: number | null };
  /** price/currency, stock/quantity and GTIN-uniqueness checks. */
  consistencyChecks: CheckCounts;
}

/** Normalisation constants (documented in docs/trust.md). */
export const V2_NORMALISATION = {
  /** A value with no observations: neither rewarded nor punished. */
  neutral: 0.5,
  freshFullHours: 6,
  freshZeroHours: 168,
  latencyFullMs: 200,
  latencyZeroMs: 2000,
  /** Dispute rate at which dispute_rate scores 0 (card networks treat ~1% as excessive). */
  disputeRateZero: 0.05,
} as const;

const N = V2_NORMALISATION;
const HOUR_MS = 3_600_000;

const num = (n: number): number => (Number.isFinite(n) && n > 0 ? n : 0);

/** passed/total clamped; `empty` when nothing was observed. */
export function ratio(passed: number, total: number, empty: number = N.neutral): number {
  const t = num(total);
  return t === 0 ? empty : clamp01(num(passed) / t);
}

export function catalogCompleteness(p: V2RawData["products"]): number {
  const count = num(p.count);
  if (count === 0) return 0; // no catalog is not a complete catalog
  return (ratio(p.withTitle, count) + ratio(p.withPrice, count) + ratio(p.withImages, count) + ratio(p.withGtin, count)) / 4;
}

/** 1 within one refresh interval (6 h) of the last sync, linear to 0 at 7 days; never synced = 0. */
export function catalogFreshness(lastSuccessfulSyncAt: number | null, now: number): number {
  if (lastSuccessfulSyncAt === null || !Number.isFinite(lastSuccessfulSyncAt)) return 0;
  const ageHours = Math.max(0, now - lastSuccessfulSyncAt) / HOUR_MS; // a future timestamp (clock skew) counts as fresh
  if (ageHours <= N.freshFullHours) return 1;
  if (ageHours >= N.freshZeroHours) return 0;
  return 1 - (ageHours - N.freshFullHours) / (N.freshZeroHours - N.freshFullHours);
}

export const priceAccuracy = (c: CheckCounts): number => ratio(c.passed, c.total);
export const availabilityAccuracy = (c: CheckCounts): number => ratio(c.passed, c.total);

/** Fraction of required policy fields filled; nothing required is treated as nothing declared (0). */
export const policyCoverage = (p: V2RawData["policyFields"]): number => ratio(p.filled, p.required, 0);

export const checkoutSuccessRate = (e: V2RawData["agentEvents"]): number => ratio(e.checkoutComplete, e.checkoutStart);

/** Agent checkout conversion: carts an agent created that ended in a completed checkout. */
export const agentSatisfactionRate = (e: V2RawData["agentEvents"]): number => ratio(e.checkoutComplete, e.cartCreated);

export const fulfillmentRate = (o: V2RawData["orders90d"]): number => ratio(o.fulfilledOnTime, o.decided ?? o.total);

/** Lower is better: 0 disputes = 1, a rate of 5% or more = 0, linear between. */
export function disputeRate(o: V2RawData["orders90d"]): number {
  const total = num(o.total);
  if (total === 0) return N.neutral;
  const rate = num(o.disputes) / total;
  return clamp01(1 - rate / N.disputeRateZero);
}

/** p95 latency: 1.0 at or under 200 ms, 0.0 at or over 2000 ms, linear between; unmeasured = neutral. */
export function responseLatency(p95Ms: number | null): number {
  if (p95Ms === null || !Number.isFinite(p95Ms)) return N.neutral;
  if (p95Ms <= N.latencyFullMs) return 1;
  if (p95Ms >= N.latencyZeroMs) return 0;
  return 1 - (p95Ms - N.latencyFullMs) / (N.latencyZeroMs - N.latencyFullMs);
}

/** Average rating 0..5 mapped to 0..1; 0.5 when there are no ratings. */
export function reviewSentiment(r: V2RawData["ratings"]): number {
  if (num(r.count) === 0 || r.average0to5 === null || !Number.isFinite(r.average0to5)) return N.neutral;
  return clamp01(r.average0to5 / 5);
}

export const dataConsistency = (c: CheckCounts): number => ratio(c.passed, c.total);

export interface V2Component {
  name: V2ComponentName;
  weight: number;
  source: "verified" | "declared";
  /** 0..1 */
  value: number;
  /** weight × value, on the 0..1 scale */
  contribution: number;
}

export interface V2Result {
  engine: "v2";
  modelVersion: typeof V2_MODEL_VERSION;
  score0to1: number;
  components: V2Component[];
}

export function componentValues(raw: V2RawData, now: number): Record<V2ComponentName, number> {
  return {
    catalog_completeness: catalogCompleteness(raw.products),
    catalog_freshness: catalogFreshness(raw.lastSuccessfulSyncAt, now),
    price_accuracy: priceAccuracy(raw.priceChecks),
    availability_accuracy: availabilityAccuracy(raw.stockChecks),
    policy_coverage: policyCoverage(raw.policyFields),
    checkout_success_rate: checkoutSuccessRate(raw.agentEvents),
    fulfillment_rate: fulfillmentRate(raw.orders90d),
    dispute_rate: disputeRate(raw.orders90d),
    agent_satisfaction_rate: agentSatisfactionRate(raw.agentEvents),
    response_latency: responseLatency(raw.latencyP95Ms),
    review_sentiment: reviewSentiment(raw.ratings),
    data_consistency: dataConsistency(raw.consistencyChecks),
  };
}

export function computeV2(raw: V2RawData, now: number): V2Result {
  const values = componentValues(raw, now);
  const components = V2_COMPONENTS.map((c) => ({
    ...c,
    value: round(values[c.name], 6),
    contribution: round(c.weight * values[c.name], 6),
  }));
  const sum = V2_COMPONENTS.reduce((s, c) => s + c.weight * values[c.name], 0);
  return { engine: "v2", modelVersion: V2_MODEL_VERSION, score0to1: round(clamp01(sum), 4), components };
}
