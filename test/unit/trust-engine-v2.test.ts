import { describe, expect, test } from "bun:test";
import {
  V2_COMPONENTS,
  agentSatisfactionRate,
  availabilityAccuracy,
  catalogCompleteness,
  catalogFreshness,
  checkoutSuccessRate,
  computeV2,
  dataConsistency,
  disputeRate,
  fulfillmentRate,
  policyCoverage,
  priceAccuracy,
  responseLatency,
  reviewSentiment,
  type V2RawData,
} from "../../actors/trust/engine-v2.ts";

const NOW = Date.UTC(2026, 0, 15);
const HOUR = 3_600_000;

function perfectRaw(): V2RawData {
  return {
    products: { count: 10, withTitle: 10, withPrice: 10, withImages: 10, withGtin: 10 },
    lastSuccessfulSyncAt: NOW - HOUR,
    priceChecks: { total: 50, passed: 50 },
    stockChecks: { total: 50, passed: 50 },
    policyFields: { filled: 6, required: 6 },
    agentEvents: { cartCreated: 10, checkoutStart: 10, checkoutComplete: 10 },
    orders90d: { total: 100, fulfilledOnTime: 100, disputes: 0 },
    latencyP95Ms: 120,
    ratings: { count: 40, average0to5: 5 },
    consistencyChecks: { total: 30, passed: 30 },
  };
}

describe("v2 weights", () => {
  test("the twelve component weights sum to 1", () => {
    expect(V2_COMPONENTS).toHaveLength(12);
    expect(V2_COMPONENTS.reduce((s, c) => s + c.weight, 0)).toBeCloseTo(1, 10);
  });

  test("policy_coverage and review_sentiment are the declared components, all others verified", () => {
    expect(V2_COMPONENTS.filter((c) => c.source === "declared").map((c) => c.name)).toEqual(["policy_coverage", "review_sentiment"]);
  });
});

describe("v2 component normalisation", () => {
  test("catalog_completeness averages the title, price, images and GTIN ratios", () => {
    expect(catalogCompleteness({ count: 10, withTitle: 10, withPrice: 10, withImages: 5, withGtin: 0 })).toBe(0.625);
  });
  test("an empty catalog has completeness 0", () => {
    expect(catalogCompleteness({ count: 0, withTitle: 0, withPrice: 0, withImages: 0, withGtin: 0 })).toBe(0);
  });

  const freshness: [string, number | null, number][] = [
    ["synced 1 hour ago is fully fresh", NOW - HOUR, 1],
    ["synced exactly 6 hours ago is fully fresh", NOW - 6 * HOUR, 1],
    ["synced 87 hours ago is half fresh", NOW - 87 * HOUR, 0.5],
    ["synced 7 days ago has freshness 0", NOW - 168 * HOUR, 0],
    ["synced 30 days ago has freshness 0", NOW - 720 * HOUR, 0],
    ["never synced has freshness 0", null, 0],
    ["a sync time in the future counts as fresh", NOW + HOUR, 1],
  ];
  for (const [name, at, expected] of freshness) {
    test(`catalog_freshness: ${name}`, () => expect(catalogFreshness(at, NOW)).toBeCloseTo(expected, 10));
  }

  test("price_accuracy is the share of price checks that matched at checkout", () => {
    expect(priceAccuracy({ total: 20, passed: 15 })).toBe(0.75);
  });
  test("availability_accuracy is the share of stock checks that matched inventory", () => {
    expect(availabilityAccuracy({ total: 4, passed: 1 })).toBe(0.25);
  });
  test("accuracy with no checks is neutral 0.5", () => {
    expect(priceAccuracy({ total: 0, passed: 0 })).toBe(0.5);
    expect(availabilityAccuracy({ total: 0, passed: 0 })).toBe(0.5);
  });
  test("more passes than checks never scores above 1", () => {
    expect(priceAccuracy({ total: 2, passed: 5 })).toBe(1);
  });

  test("policy_coverage is filled over required fields", () => {
    expect(policyCoverage({ filled: 3, required: 6 })).toBe(0.5);
  });
  test("policy_coverage with nothing required is 0", () => {
    expect(policyCoverage({ filled: 0, required: 0 })).toBe(0);
  });

  test("checkout_success_rate is checkout_complete over checkout_start", () => {
    expect(checkoutSuccessRate({ cartCreated: 100, checkoutStart: 8, checkoutComplete: 6 })).toBe(0.75);
  });
  test("agent_satisfaction_rate is completed checkouts over agent-created carts", () => {
    expect(agentSatisfactionRate({ cartCreated: 20, checkoutStart: 8, checkoutComplete: 5 })).toBe(0.25);
  });
  test("no agent events score neutral 0.5", () => {
    expect(checkoutSuccessRate({ cartCreated: 0, checkoutStart: 0, checkoutComplete: 0 })).toBe(0.5);
    expect(agentSatisfactionRate({ cartCreated: 0, checkoutStart: 0, checkoutComplete: 0 })).toBe(0.5);
  });

  test("fulfillment_rate is on-time fulfilled over orders in 90 days", () => {
    expect(fulfillmentRate({ total: 40, fulfilledOnTime: 30, disputes: 0 })).toBe(0.75);
  });

  const disputes: [string, number, number, number][] = [
    ["no disputes score 1", 0, 100, 1],
    ["a 1% dispute rate scores 0.8", 1, 100, 0.8],
    ["a 2.5% dispute rate scores 0.5", 5, 200, 0.5],
    ["a 5% dispute rate scores 0", 5, 100, 0],
    ["a 20% dispute rate scores 0", 20, 100, 0],
    ["no orders score neutral 0.5", 0, 0, 0.5],
  ];
  for (const [name, d, total, expected] of disputes) {
    test(`dispute_rate: ${name}`, () => expect(disputeRate({ total, fulfilledOnTime: 0, disputes: d })).toBeCloseTo(expected, 10));
  }

  const latency: [number | null, number][] = [
    [50, 1],
    [200, 1],
    [1100, 0.5],
    [2000, 0],
    [5000, 0],
    [null, 0.5],
  ];
  for (const [ms, expected] of latency) {
    test(`response_latency of p95 ${ms ?? "unmeasured"} ms scores ${expected}`, () => expect(responseLatency(ms)).toBeCloseTo(expected, 10));
  }

  test("review_sentiment maps an average of 4 stars to 0.8", () => {
    expect(reviewSentiment({ count: 10, average0to5: 4 })).toBe(0.8);
  });
  test("review_sentiment defaults to 0.5 with no ratings", () => {
    expect(reviewSentiment({ count: 0, average0to5: null })).toBe(0.5);
    expect(reviewSentiment({ count: 0, average0to5: 5 })).toBe(0.5);
  });
  test("review_sentiment clamps an average above 5", () => {
    expect(reviewSentiment({ count: 1, average0to5: 7 })).toBe(1);
  });

  test("data_consistency is passed over run consistency checks", () => {
    expect(dataConsistency({ total: 10, passed: 9 })).toBe(0.9);
  });
});

describe("v2 overall score", () => {
  test("a perfect merchant scores 1", () => {
    expect(computeV2(perfectRaw(), NOW).score0to1).toBe(1);
  });

  test("the score is the weighted sum of the components", () => {
    const raw = perfectRaw();
    raw.latencyP95Ms = 2000; // response_latency 0 → lose 0.05
    raw.priceChecks = { total: 2, passed: 1 }; // price_accuracy 0.5 → lose 0.06
    const r = computeV2(raw, NOW);
    expect(r.score0to1).toBe(0.89);
    expect(r.components.find((c) => c.name === "price_accuracy")!.contribution).toBe(0.06);
  });

  test("a merchant with nothing at all scores from the neutral defaults only", () => {
    const r = computeV2(
      {
        products: { count: 0, withTitle: 0, withPrice: 0, withImages: 0, withGtin: 0 },
        lastSuccessfulSyncAt: null,
        priceChecks: { total: 0, passed: 0 },
        stockChecks: { total: 0, passed: 0 },
        policyFields: { filled: 0, required: 6 },
        agentEvents: { cartCreated: 0, checkoutStart: 0, checkoutComplete: 0 },
        orders90d: { total: 0, fulfilledOnTime: 0, disputes: 0 },
        latencyP95Ms: null,
        ratings: { count: 0, average0to5: null },
        consistencyChecks: { total: 0, passed: 0 },
      },
      NOW,
    );
    // neutral: price .12 avail .08 checkout .11 fulfil .08 dispute .07 satisfaction .08 latency .05 review .05 consistency .06
    expect(r.score0to1).toBe(0.35);
  });

  test("the score stays within 0..1 with garbage counts", () => {
    const raw = perfectRaw();
    raw.priceChecks = { total: -5, passed: Number.NaN };
    const r = computeV2(raw, NOW);
    expect(r.score0to1).toBeGreaterThanOrEqual(0);
    expect(r.score0to1).toBeLessThanOrEqual(1);
  });
});
