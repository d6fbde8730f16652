/**
 * GET /agent/merchants/{slug}/trust-explanation: strengths, weaknesses, trend and a recommendation, derived from
 * whichever breakdown was published (v4.1 signals or the 12 v2 components) and from the score history.
 */
import { AGENT_THRESHOLD, operationalStatus } from "./bands.ts";
import type { SelectedTrustScore } from "./select.ts";
import { round, type EngineId } from "./types.ts";

/** A component at or above this (0..1) is a strength, below WEAKNESS_BELOW a weakness. */
export const STRENGTH_AT_LEAST = 0.8;
export const WEAKNESS_BELOW = 0.5;
export const TREND_WINDOW_DAYS = 30;
/** Smaller moves (0..1 scale) over the window are noise: "stable". */
export const TREND_MIN_DELTA = 0.03;
export const MAX_ITEMS = 3;

export interface HistoryPoint {
  /** epoch ms */
  at: number;
  score0to1: number;
  engine: EngineId;
  /** Count of verified-quality signals at that time; used by the anomaly rule. */
  verifiedEvidence?: number;
}

export interface ExplainedFactor {
  name: string;
  /** 0..1 */
  value: number;
  /** Share of the overall score this factor carries (0..1). */
  weight: number;
}

export type Trend = "improving" | "declining" | "stable" | "insufficient_history";

export type RecommendationCode = "proceed" | "proceed_with_caution" | "human_review" | "avoid";

export interface TrustExplanation {
  strengths: ExplainedFactor[];
  weaknesses: ExplainedFactor[];
  trend: Trend;
  /** Change over the trend window on the 0..1 scale, null without enough history. */
  trendDelta0to1: number | null;
  recommendation: string;
  recommendationCode: RecommendationCode;
}

/** Flattens the published breakdown into factors with their share of the overall score. */
export function factorsOf(selected: SelectedTrustScore): ExplainedFactor[] {
  const b = selected.breakdown;
  if (b.engine === "v2") return b.components.map((c) => ({ name: c.name, value: c.value, weight: c.weight }));
  const out: ExplainedFactor[] = [];
  for (const d of b.dimensions) {
    if (d.effectiveWeight === 0) continue;
    for (const s of d.signals) {
      if (s.value === null || s.weightInDimension === 0) continue;
      out.push({ name: `${d.dimension}.${s.name}`, value: s.value, weight: round(d.effectiveWeight * s.weightInDimension, 6) });
    }
  }
  return out;
}

/**
 * Trend over the last 30 days, comparing the oldest and newest points produced by the same engine as the newest
 * point (v2 and v4.1 numbers are not comparable, so an engine switch is not a trend).
 */
export function trendOf(history: readonly HistoryPoint[], now: number): { trend: Trend; delta: number | null } {
  const windowStart = now - TREND_WINDOW_DAYS * 86_400_000;
  const inWindow = history.filter((p) => p.at >= windowStart && p.at <= now).sort((a, b) => a.at - b.at);
  const latest = inWindow[inWindow.length - 1];
  if (!latest) return { trend: "insufficient_history", delta: null };
  const same = inWindow.filter((p) => p.engine === latest.engine);
  if (same.length < 2) return { trend: "insufficient_history", delta: null };
  const delta = round(latest.score0to1 - same[0].score0to1, 4);
  if (delta >= TREND_MIN_DELTA) return { trend: "improving", delta };
  if (delta <= -TREND_MIN_DELTA) return { trend: "declining", delta };
  return { trend: "stable", delta };
}

const label = (name: string): string => name.replace(/^[a-zA-Z]+\./, "").replace(/([a-z])([A-Z])/g, "$1 $2").replace(/_/g, " ").toLowerCase();

/**
 * `opts.eligible`: whether the store passes the discovery eligibility rule (search/ranking.ts `isStoreEligible`:
 * BASIC or higher, trust >= 0.3, not hidden or suspended). The score alone cannot say it: an UNVERIFIED store over
 * 0.7 is refused by every agent read and cart, so the recommendation must not call it eligible for agent checkout
 * (helper D, session 20: the dashboard showed "Agent checkout: not allowed" beside "Eligible for agent checkout.").
 * The agent surfaces (REST, MCP) only explain eligible stores; the merchant dashboard explains any store.
 */
export function explainTrust(selected: SelectedTrustScore, history: readonly HistoryPoint[], now: number, opts: { eligible?: boolean } = {}): TrustExplanation {
  const factors = factorsOf(selected);
  // Largest impact first: a strong factor that carries much weight matters more than a strong minor one.
  const strengths = factors
    .filter((f) => f.value >= STRENGTH_AT_LEAST)
    .sort((a, b) => b.weight * b.value - a.weight * a.value || a.name.localeCompare(b.name))
    .slice(0, MAX_ITEMS);
  const weaknesses = factors
    .filter((f) => f.value < WEAKNESS_BELOW)
    .sort((a, b) => b.weight * (1 - b.value) - a.weight * (1 - a.value) || a.name.localeCompare(b.name))
    .slice(0, MAX_ITEMS);
  const { trend, delta } = trendOf(history, now);

  const score = selected.score0to1;
  const status = operationalStatus(score);
  let recommendationCode: RecommendationCode;
  let recommendation: string;
  if (status === "suspended" || status === "hidden") {
    recommendationCode = "avoid";
    recommendation = "Do not transact: the merchant is below the discovery threshold.";
  } else if (opts.eligible === false) {
    // Score and status pass, so what fails eligibility is the verification level (below BASIC).
    recommendationCode = "avoid";
    recommendation = "Do not transact: the merchant's identity is not verified, so agents cannot discover it or check out there.";
  } else if (score < AGENT_THRESHOLD) {
    recommendationCode = "human_review";
    recommendation = "Below the agent checkout threshold (0.7): ask a human before buying.";
  } else if (selected.confidence_level === "insufficient_data" || selected.confidence_level === "cold_start" || trend === "declining") {
    recommendationCode = "proceed_with_caution";
    recommendation =
      trend === "declining"
        ? "Eligible for agent checkout, but the score is declining: prefer small orders."
        : "Eligible for agent checkout on limited evidence: prefer small orders.";
  } else {
    recommendationCode = "proceed";
    recommendation = "Eligible for agent checkout.";
  }
  if (weaknesses.length > 0) recommendation += ` Weakest area: ${label(weaknesses[0].name)}.`;

  return { strengths, weaknesses, trend, trendDelta0to1: delta, recommendation, recommendationCode };
}
