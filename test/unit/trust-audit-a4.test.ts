/**
 * Audit A4 (trust), the pure parts: agent checkout health per agent key (H2), order health gating reliability (M2)
 * and one anomaly alert per gain (M1). Which orders are counted (H1, H2) is tested through HTTP in
 * test/http/trust-audit-a4.test.ts.
 */
import { describe, expect, test } from "bun:test";
import { detectAnomalies, type RaisedAlert } from "../../actors/trust/anomaly.ts";
import { computeV41, ORDER_HEALTH_GATE, type TrustInputs } from "../../actors/trust/engine-v41.ts";
import type { HistoryPoint } from "../../actors/trust/explain.ts";
import { agentCheckoutRate, toV41Inputs, type StoreFacts } from "../../actors/trust/inputs.ts";
import { methodologyDocument } from "../../actors/trust/methodology.ts";

const NOW = Date.parse("2026-06-01T00:00:00Z");
const HOUR = 3_600_000;
const DAY = 24 * HOUR;

describe("agent checkout health per agent key (H2)", () => {
  test("each key's completion rate weighs by its paid orders, capped at 10: one key's volume cannot dominate", () => {
    // Pooled, the 200 failed orders of one key would give 100 / 300 = 0.3333.
    expect(agentCheckoutRate([{ paid: 100, completed: 100 }, { paid: 200, completed: 0 }])).toBe(0.5);
    expect(agentCheckoutRate([{ paid: 100, completed: 90 }, { paid: 4, completed: 2 }])).toBe(round6((10 * 0.9 + 4 * 0.5) / 14));
    expect(agentCheckoutRate([{ paid: 3, completed: 3 }])).toBe(1);
  });

  test("keys without a paid order count nothing, and no paid order at all is no observation", () => {
    expect(agentCheckoutRate([{ paid: 10, completed: 8 }, { paid: 0, completed: 0 }])).toBe(0.8);
    expect(agentCheckoutRate([])).toBeNull();
    expect(agentCheckoutRate([{ paid: 0, completed: 0 }])).toBeNull();
  });

  test("the v4.1 agentCheckout signal takes the per-key rate; facts stored before it existed use the pooled rate", () => {
    const f = facts({ agentAll: 300, agentCompleted: 100, agentCheckoutRate: 0.5 });
    expect(toV41Inputs(f, NOW).agenticEvidence.agentCheckout).toEqual({ value: 0.5, quality: "proxy" });
    const old = facts({ agentAll: 300, agentCompleted: 100 });
    delete (old.orders as { agentCheckoutRate?: number }).agentCheckoutRate;
    expect(toV41Inputs(old, NOW).agenticEvidence.agentCheckout).toEqual({ value: 0.333333, quality: "proxy" });
  });
});

describe("order health gates reliability (M2)", () => {
  // The audit's cozy-paws-supply after 520 disputed, late orders: fulfilment 0 and dispute/refund health 0, carried
  // to 0.3425 (deprioritized, discoverable) by catalog quality 0.99, store age 0.82 and human order volume 0.67.
  const failing: TrustInputs = {
    merchantReliabilityBase: {
      fulfillment: { value: 0, quality: "measured" },
      disputeRefundHealth: { value: 0, quality: "measured" },
      catalogQuality: { value: 0.99, quality: "measured" },
      storeAge: { value: 0.82, quality: "measured" },
      humanOrderVolume: { value: 0.67, quality: "measured" },
    },
    agenticReadiness: {
      setupQuality: { value: 1, quality: "self_declared" },
      protocolSecurity: { value: 0, quality: "not_applicable" },
      complianceHealth: { value: 0, quality: "measured" },
      integrationFreshness: { value: 1, quality: "measured" },
    },
    agenticEvidence: {},
    humanOrders: 560,
    agentOrders: 3,
  };

  test("a store whose orders are all late and disputed falls below the discovery threshold (0.3)", () => {
    const r = computeV41(failing, { now: NOW });
    expect(r.tier).toBe("human_established");
    const reliability = r.dimensions.find((d) => d.dimension === "merchantReliabilityBase")!;
    // Catalog, age and volume may lift reliability at most 0.25 above order health (0 here).
    expect(reliability.score01).toBe(ORDER_HEALTH_GATE.margin);
    expect(reliability.orderHealthGate).toBeCloseTo(0.25 / (0.2 * 0.99 + 0.1 * 0.82 + 0.15 * 0.67), 6);
    // 85 × (0.7 × 0.25 + 0.3 × readiness); without the gate reliability was 0.3805 and the value 34.14.
    expect(r.value).toBeLessThan(30);
    expect(r.value).toBe(round2(85 * (0.7 * 0.25 + 0.3 * readinessOf(r))));
  });

  test("the breakdown still adds up: the gated signals' weights carry the gate", () => {
    const r = computeV41(failing, { now: NOW });
    const reliability = r.dimensions.find((d) => d.dimension === "merchantReliabilityBase")!;
    const sum = reliability.signals.reduce((s, x) => s + (x.value ?? 0) * x.weightInDimension, 0);
    expect(sum).toBeCloseTo(reliability.score01!, 5);
    expect(reliability.signals.find((s) => s.name === "fulfillment")!.weightInDimension).toBe(0.3);
    expect(reliability.signals.find((s) => s.name === "catalogQuality")!.weightInDimension).toBeLessThan(0.2);
  });

  test("healthy orders leave reliability untouched, and so does the absence of order-health signals", () => {
    const healthy = structuredClone(failing);
    healthy.merchantReliabilityBase.fulfillment = { value: 0.6, quality: "measured" };
    healthy.merchantReliabilityBase.disputeRefundHealth = { value: 0.5, quality: "measured" };
    const rel = computeV41(healthy, { now: NOW }).dimensions.find((d) => d.dimension === "merchantReliabilityBase")!;
    expect(rel.orderHealthGate).toBe(1);
    expect(rel.score01).toBeCloseTo(0.3 * 0.6 + 0.25 * 0.5 + 0.2 * 0.99 + 0.1 * 0.82 + 0.15 * 0.67, 6);

    const noOrders = structuredClone(failing);
    delete noOrders.merchantReliabilityBase.fulfillment;
    delete noOrders.merchantReliabilityBase.disputeRefundHealth;
    const rel2 = computeV41(noOrders, { now: NOW }).dimensions.find((d) => d.dimension === "merchantReliabilityBase")!;
    expect(rel2.orderHealthGate).toBe(1);
    expect(rel2.score01).toBeCloseTo((0.2 * 0.99 + 0.1 * 0.82 + 0.15 * 0.67) / 0.45, 6);
  });

  test("the methodology document states the gate, and that external assurance is not collected (L1)", () => {
    const doc = methodologyDocument() as unknown as {
      dimensions: { merchantReliabilityBase: { order_health_gate: { signals: string[]; margin: number } } };
      external_assurance: { collected: boolean };
    };
    expect(doc.dimensions.merchantReliabilityBase.order_health_gate).toMatchObject({ signals: ["fulfillment", "disputeRefundHealth"], margin: 0.25 });
    expect(doc.external_assurance.collected).toBe(false);
  });

  test("the gate only ever lowers reliability, and more order health never lowers it", () => {
    let last = -1;
    for (let h = 0; h <= 1.0001; h += 0.05) {
      const x = structuredClone(failing);
      x.merchantReliabilityBase.fulfillment = { value: Math.min(1, h), quality: "measured" };
      x.merchantReliabilityBase.disputeRefundHealth = { value: Math.min(1, h), quality: "measured" };
      const rel = computeV41(x, { now: NOW }).dimensions.find((d) => d.dimension === "merchantReliabilityBase")!.score01!;
      const ungated = 0.55 * Math.min(1, h) + 0.2 * 0.99 + 0.1 * 0.82 + 0.15 * 0.67;
      expect(rel).toBeLessThanOrEqual(ungated + 1e-6);
      expect(rel).toBeGreaterThanOrEqual(last - 1e-9);
      last = rel;
    }
  });
});

describe("one anomaly alert per gain (M1)", () => {
  const at = (h: number) => NOW + h * HOUR;
  const point = (h: number, score: number, verifiedEvidence = 5): HistoryPoint => ({ at: at(h), score0to1: score, engine: "v41", verifiedEvidence });
  // The audit's a4-bound: 0.4136 (cold_start) to 0.6514 after fabricated orders, then recomputed unchanged.
  const history = [point(0, 0.4136), point(1, 0.6514)];
  const first = detectAnomalies("s", [point(0, 0.4136)], point(1, 0.6514));
  const raised: RaisedAlert[] = first.map((a) => ({ kind: a.kind, engine: "v41", at: a.at, from0to1: a.from0to1, to0to1: a.to0to1 }));

  test("the gain raises rapid_gain and band_jump once", () => {
    expect(first.map((a) => a.kind)).toEqual(["rapid_gain", "band_jump_without_evidence"]);
  });

  test("the next recomputes of the same score raise nothing, whether the first alerts are open or resolved", () => {
    expect(detectAnomalies("s", history, point(2, 0.6514), raised)).toEqual([]);
    expect(detectAnomalies("s", [...history, point(2, 0.6514)], point(8, 0.66), raised)).toEqual([]);
    // Without the raised alerts, the same point alerts again (the behaviour the audit saw).
    expect(detectAnomalies("s", history, point(2, 0.6514)).length).toBe(2);
  });

  test("a further gain of 0.15 above the level already alerted, or a higher band, alerts again", () => {
    const higher = detectAnomalies("s", history, point(3, 0.81), raised);
    expect(higher.map((a) => a.kind)).toEqual(["rapid_gain", "band_jump_without_evidence"]);
    expect(higher[0]).toMatchObject({ from0to1: 0.4136, to0to1: 0.81 });
    // 0.72: ACCEPTABLE, a band above the alerted CAUTION, but only +0.07 above 0.6514: no second rapid_gain.
    expect(detectAnomalies("s", history, point(3, 0.72), raised).map((a) => a.kind)).toEqual(["band_jump_without_evidence"]);
  });

  test("alerts of another engine, another starting level or outside the window do not hold a gain back", () => {
    const v2 = raised.map((a) => ({ ...a, engine: "v2" }));
    expect(detectAnomalies("s", history, point(2, 0.6514), v2).length).toBe(2);
    const lower = [point(0, 0.4136), point(1, 0.6514), point(2, 0.40)];
    expect(detectAnomalies("s", lower, point(3, 0.6514), raised).length).toBe(2);
    const old = raised.map((a) => ({ ...a, at: at(-30) }));
    expect(detectAnomalies("s", history, point(2, 0.6514), old).length).toBe(2);
  });
});

// ---------------------------------------------------------------------------------------------------------------

function round6(x: number): number {
  return Math.round(x * 1e6) / 1e6;
}
function round2(x: number): number {
  return Math.round(x * 100) / 100;
}
function readinessOf(r: ReturnType<typeof computeV41>): number {
  return r.dimensions.find((d) => d.dimension === "agenticReadiness")!.score01!;
}

function facts(orders: Partial<StoreFacts["orders"]>): StoreFacts {
  return {
    slug: "shop",
    verificationLevel: "STANDARD",
    createdAt: NOW - 400 * DAY,
    lastSyncAt: NOW - 60_000,
    policies: {},
    reviewAvg: null,
    reviewCount: 0,
    products: { count: 1, withTitle: 1, withPrice: 1, withImages: 1, withGtin: 0, gtinInvalid: 0, gtinDuplicates: 0, priceCurrencyBad: 0, stockTracked: 0, stockInconsistent: 0 },
    orders: {
      human: 0, agent: 30, gmvMinor: 0, uniqueBuyers: 0, orders: 30, decided: 0, onTime: 0, disputes: 0, refunds: 0, humanGood: 0,
      agentAll: 30, agentCompleted: 30, agentDecided: 0, agentOnTime: 0, agentDisputes: 0,
      ...orders,
    },
  };
}
