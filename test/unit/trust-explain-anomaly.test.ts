import { describe, expect, test } from "bun:test";
import { detectAnomalies } from "../../actors/trust/anomaly.ts";
import { explainTrust, trendOf, type HistoryPoint } from "../../actors/trust/explain.ts";
import type { SelectedTrustScore } from "../../actors/trust/select.ts";
import type { V2Component, V2ComponentName } from "../../actors/trust/engine-v2.ts";
import { computeV41, type Signal } from "../../actors/trust/engine-v41.ts";
import { selectTrustScore } from "../../actors/trust/select.ts";
import { computeV2 } from "../../actors/trust/engine-v2.ts";

const NOW = Date.UTC(2026, 0, 15);
const HOUR = 3_600_000;
const DAY = 24 * HOUR;

function v2Selected(score0to1: number, values: Partial<Record<V2ComponentName, number>>): SelectedTrustScore {
  const names: [V2ComponentName, number][] = [
    ["catalog_completeness", 0.11],
    ["catalog_freshness", 0.11],
    ["price_accuracy", 0.12],
    ["availability_accuracy", 0.08],
    ["policy_coverage", 0.08],
    ["checkout_success_rate", 0.11],
    ["fulfillment_rate", 0.08],
    ["dispute_rate", 0.07],
    ["agent_satisfaction_rate", 0.08],
    ["response_latency", 0.05],
    ["review_sentiment", 0.05],
    ["data_consistency", 0.06],
  ];
  const components: V2Component[] = names.map(([name, weight]) => {
    const value = values[name] ?? 0.65;
    return { name, weight, source: "verified", value, contribution: weight * value };
  });
  return {
    engines: { overall: "v2", breakdown: "v2" },
    confidence_level: "human_established",
    score0to100: score0to1 * 100,
    score0to1,
    modelVersion: "2.0",
    breakdown: { engine: "v2", components },
  };
}

const point = (hoursAgo: number, score0to1: number, extra: Partial<HistoryPoint> = {}): HistoryPoint => ({
  at: NOW - hoursAgo * HOUR,
  score0to1,
  engine: "v41",
  ...extra,
});

describe("trust explanation", () => {
  test("strengths are components at 0.8 or more, largest impact first", () => {
    const e = explainTrust(v2Selected(0.8, { price_accuracy: 0.95, response_latency: 1, catalog_freshness: 0.9 }), [], NOW);
    expect(e.strengths.map((s) => s.name)).toEqual(["price_accuracy", "catalog_freshness", "response_latency"]);
  });

  test("weaknesses are components below 0.5, largest loss first, at most three", () => {
    const e = explainTrust(
      v2Selected(0.75, { dispute_rate: 0, price_accuracy: 0.4, review_sentiment: 0.1, data_consistency: 0.2 }),
      [],
      NOW,
    );
    expect(e.weaknesses.map((w) => w.name)).toEqual(["price_accuracy", "dispute_rate", "data_consistency"]); // losses .072, .07, .048 (.045 dropped)
    expect(e.recommendation).toContain("Weakest area: price accuracy.");
  });

  const recs: [number, string][] = [
    [0.1, "avoid"],
    [0.25, "avoid"],
    [0.5, "human_review"],
    [0.6999, "human_review"],
    [0.7, "proceed"],
    [0.95, "proceed"],
  ];
  for (const [score, code] of recs) {
    test(`a score of ${score} recommends ${code}`, () => {
      expect(explainTrust(v2Selected(score, {}), [], NOW).recommendationCode).toBe(code as never);
    });
  }

  test("a cold_start merchant above the agent threshold is recommended with caution", () => {
    const sel = { ...v2Selected(0.75, {}), confidence_level: "cold_start" as const };
    expect(explainTrust(sel, [], NOW).recommendationCode).toBe("proceed_with_caution");
  });

  test("a v4.1 breakdown is explained by its signals", () => {
    const m = (value: number): Signal => ({ value, quality: "measured" });
    const v41 = computeV41(
      {
        merchantReliabilityBase: { fulfillment: m(0.95), disputeRefundHealth: m(0.2) },
        agenticReadiness: { setupQuality: m(0.9) },
        agenticEvidence: {},
        humanOrders: 10,
        agentOrders: 0,
      },
      { now: NOW },
    );
    const v2 = computeV2(
      {
        products: { count: 0, withTitle: 0, withPrice: 0, withImages: 0, withGtin: 0 },
        lastSuccessfulSyncAt: null,
        priceChecks: { total: 0, passed: 0 },
        stockChecks: { total: 0, passed: 0 },
        policyFields: { filled: 0, required: 0 },
        agentEvents: { cartCreated: 0, checkoutStart: 0, checkoutComplete: 0 },
        orders90d: { total: 0, fulfilledOnTime: 0, disputes: 0 },
        latencyP95Ms: null,
        ratings: { count: 0, average0to5: null },
        consistencyChecks: { total: 0, passed: 0 },
      },
      NOW,
    );
    const sel = selectTrustScore({ v41, v2, flags: { TRUST_SCORE_PUBLIC_V41_ENABLED: true, TRUST_SCORE_PUBLIC_COHERENT_ENGINE_ENABLED: true } });
    const e = explainTrust(sel, [], NOW);
    expect(e.strengths.map((s) => s.name)).toContain("merchantReliabilityBase.fulfillment");
    expect(e.weaknesses.map((s) => s.name)).toEqual(["merchantReliabilityBase.disputeRefundHealth"]);
  });
});

describe("trend", () => {
  test("fewer than two points of the same engine is insufficient_history", () => {
    expect(trendOf([point(1, 0.8)], NOW).trend).toBe("insufficient_history");
    expect(trendOf([point(10, 0.5, { engine: "v2" }), point(1, 0.8)], NOW).trend).toBe("insufficient_history");
  });
  test("a rise of 0.03 or more over 30 days is improving", () => {
    expect(trendOf([point(24 * 20, 0.7), point(1, 0.73)], NOW)).toEqual({ trend: "improving", delta: 0.03 });
  });
  test("a fall of 0.03 or more is declining", () => {
    expect(trendOf([point(24 * 20, 0.8), point(1, 0.7)], NOW).trend).toBe("declining");
  });
  test("a smaller move is stable", () => {
    expect(trendOf([point(24 * 20, 0.8), point(1, 0.81)], NOW).trend).toBe("stable");
  });
  test("points older than 30 days are ignored", () => {
    expect(trendOf([point(24 * 40, 0.2), point(24 * 10, 0.8), point(1, 0.8)], NOW).trend).toBe("stable");
  });
});

describe("anomaly alerts for rapid suspicious gains", () => {
  test("a gain of 0.15 within 24 hours raises rapid_gain", () => {
    const alerts = detectAnomalies("s", [point(20, 0.55, { verifiedEvidence: 3 })], point(0, 0.7, { verifiedEvidence: 5 }));
    expect(alerts.map((a) => a.kind)).toEqual(["rapid_gain"]);
    expect(alerts[0]).toMatchObject({ storeSlug: "s", from0to1: 0.55, to0to1: 0.7, delta0to1: 0.15, reviewRequired: true });
  });

  test("a gain of 0.1499 within 24 hours with new verified evidence raises nothing", () => {
    expect(detectAnomalies("s", [point(20, 0.55, { verifiedEvidence: 3 })], point(0, 0.6999, { verifiedEvidence: 4 }))).toEqual([]);
  });

  test("a gain of 0.15 spread over more than 24 hours raises nothing", () => {
    expect(detectAnomalies("s", [point(25, 0.55, { verifiedEvidence: 3 })], point(0, 0.7, { verifiedEvidence: 9 }))).toEqual([]);
  });

  test("the gain is measured from the lowest point of the window", () => {
    const history = [point(23, 0.6), point(12, 0.5), point(6, 0.58)];
    expect(detectAnomalies("s", history, point(0, 0.66, { verifiedEvidence: 1 })).map((a) => a.kind)).toEqual(["rapid_gain"]);
  });

  test("a full band jump without more verified evidence raises band_jump_without_evidence", () => {
    const alerts = detectAnomalies("s", [point(5, 0.66, { verifiedEvidence: 4 })], point(0, 0.72, { verifiedEvidence: 4 }));
    expect(alerts.map((a) => a.kind)).toEqual(["band_jump_without_evidence"]);
    expect(alerts[0]).toMatchObject({ fromBand: "CAUTION", toBand: "ACCEPTABLE" });
  });

  test("the same band jump with more verified evidence raises nothing", () => {
    expect(detectAnomalies("s", [point(5, 0.66, { verifiedEvidence: 4 })], point(0, 0.72, { verifiedEvidence: 6 }))).toEqual([]);
  });

  test("creeping over a band boundary by less than 0.05 raises nothing", () => {
    expect(detectAnomalies("s", [point(5, 0.69)], point(0, 0.71))).toEqual([]);
  });

  test("a big gain without evidence raises both alerts", () => {
    const kinds = detectAnomalies("s", [point(5, 0.5)], point(0, 0.9)).map((a) => a.kind);
    expect(kinds).toEqual(["rapid_gain", "band_jump_without_evidence"]);
  });

  test("an engine switch from v2 to v4.1 is not a gain", () => {
    expect(detectAnomalies("s", [point(5, 0.4, { engine: "v2" })], point(0, 0.9))).toEqual([]);
  });

  test("no history raises nothing", () => {
    expect(detectAnomalies("s", [], point(0, 0.9))).toEqual([]);
  });
});
