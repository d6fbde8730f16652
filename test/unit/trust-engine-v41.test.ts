import { describe, expect, test } from "bun:test";
import {
  ASSURANCE,
  TIERS,
  assessAssurance,
  computeV41,
  selectTier,
  type Certification,
  type Signal,
  type TrustInputs,
} from "../../actors/trust/engine-v41.ts";
import type { DataQuality } from "../../actors/trust/types.ts";

const NOW = Date.UTC(2026, 0, 15);
const DAY = 86_400_000;
const s = (value: number, quality: DataQuality = "measured"): Signal => ({ value, quality });

/** Every signal of every dimension set to `v` (measured). */
function inputs(v: number, counts: Partial<TrustInputs> = {}): TrustInputs {
  return {
    merchantReliabilityBase: {
      fulfillment: s(v),
      disputeRefundHealth: s(v),
      catalogQuality: s(v),
      storeAge: s(v),
      humanOrderVolume: s(v),
    },
    agenticReadiness: { setupQuality: s(v), protocolSecurity: s(v), complianceHealth: s(v), integrationFreshness: s(v) },
    agenticEvidence: { agentCheckout: s(v), agentFulfillmentDispute: s(v), receiptIntegrity: s(v) },
    humanOrders: 0,
    agentOrders: 0,
    gmv90dMinor: null,
    uniqueBuyers90d: null,
    ...counts,
  };
}

const FULL = { gmv90dMinor: 1_000_000, uniqueBuyers90d: 20 };

describe("v4.1 tier selection", () => {
  const cases: [string, Partial<TrustInputs>, string][] = [
    ["no orders at all is cold_start", { humanOrders: 0, agentOrders: 0 }, "cold_start"],
    ["4 human orders is still cold_start", { humanOrders: 4, agentOrders: 0 }, "cold_start"],
    ["5 human orders is human_established", { humanOrders: 5, agentOrders: 0 }, "human_established"],
    ["4 agent orders with 5 human orders stays human_established", { humanOrders: 5, agentOrders: 4 }, "human_established"],
    ["4 agent orders and 4 human orders is cold_start", { humanOrders: 4, agentOrders: 4 }, "cold_start"],
    ["5 agent orders is agent_verified_thin", { humanOrders: 0, agentOrders: 5 }, "agent_verified_thin"],
    ["19 agent orders is agent_verified_thin even with full GMV and buyers", { agentOrders: 19, ...FULL }, "agent_verified_thin"],
    ["20 agent orders with GMV 1,000,000 cents and 20 buyers is agent_verified", { agentOrders: 20, ...FULL }, "agent_verified"],
    ["GMV 999,999 cents degrades to agent_verified_thin", { agentOrders: 20, gmv90dMinor: 999_999, uniqueBuyers90d: 20 }, "agent_verified_thin"],
    ["19 unique buyers degrades to agent_verified_thin", { agentOrders: 20, gmv90dMinor: 1_000_000, uniqueBuyers90d: 19 }, "agent_verified_thin"],
    ["missing GMV degrades to agent_verified_thin", { agentOrders: 50, gmv90dMinor: null, uniqueBuyers90d: 100 }, "agent_verified_thin"],
    ["undefined GMV degrades to agent_verified_thin", { agentOrders: 50, gmv90dMinor: undefined, uniqueBuyers90d: 100 }, "agent_verified_thin"],
    ["missing unique buyers degrades to agent_verified_thin", { agentOrders: 50, gmv90dMinor: 5_000_000, uniqueBuyers90d: null }, "agent_verified_thin"],
  ];
  for (const [name, counts, tier] of cases) {
    test(name, () => {
      const result = computeV41(inputs(0.8, counts), { now: NOW });
      expect(result.tier).toBe(tier as never);
      expect(result.confidence_level).toBe(tier as never);
    });
  }

  test("a degradation names its reason", () => {
    const { reasons } = selectTier({ humanOrders: 0, agentOrders: 20, gmv90dMinor: null, uniqueBuyers90d: 3 });
    expect(reasons).toEqual([
      "degraded_to_agent_verified_thin:gmv_90d_missing",
      "degraded_to_agent_verified_thin:unique_buyers_90d_below_floor",
    ]);
  });
});

describe("v4.1 caps and interpolation within a tier", () => {
  const perfect: [string, Partial<TrustInputs>, number][] = [
    ["cold_start", {}, 65],
    ["human_established", { humanOrders: 10 }, 85],
    ["agent_verified_thin", { agentOrders: 10 }, 92],
    ["agent_verified", { agentOrders: 25, ...FULL }, 100],
  ];
  for (const [tier, counts, cap] of perfect) {
    test(`a perfect ${tier} merchant scores exactly its cap ${cap}`, () => {
      const r = computeV41(inputs(1, counts), { now: NOW });
      expect(r.value).toBe(cap);
      expect(r.cap).toBe(cap);
    });
    test(`a ${tier} merchant with all signals at 0 scores the floor 0`, () => {
      expect(computeV41(inputs(0, counts), { now: NOW }).value).toBe(0);
    });
    test(`a ${tier} merchant at 0.5 lands halfway between floor and cap`, () => {
      expect(computeV41(inputs(0.5, counts), { now: NOW }).value).toBe(TIERS[tier as keyof typeof TIERS].cap / 2);
    });
  }

  test("cold_start scores only readiness (weights 0 / 1 / 0)", () => {
    const i = inputs(0);
    i.agenticReadiness = { setupQuality: s(0.8), protocolSecurity: s(0.8), complianceHealth: s(0.8), integrationFreshness: s(0.8) };
    const r = computeV41(i, { now: NOW });
    expect(r.value).toBe(52);
    expect(r.dimensions.map((d) => d.effectiveWeight)).toEqual([0, 1, 0]);
  });

  test("human_established weighs reliability 0.7 and readiness 0.3", () => {
    const i = inputs(1, { humanOrders: 5 });
    i.agenticReadiness = { setupQuality: s(0), protocolSecurity: s(0), complianceHealth: s(0), integrationFreshness: s(0) };
    expect(computeV41(i, { now: NOW }).value).toBe(59.5); // 0.7 × 85
  });

  test("agent_verified weighs 0.35 / 0.25 / 0.4 and contributions add up to the base", () => {
    const i = inputs(0, { agentOrders: 30, ...FULL });
    i.agenticEvidence = { agentCheckout: s(1), agentFulfillmentDispute: s(1), receiptIntegrity: s(1) };
    const r = computeV41(i, { now: NOW });
    expect(r.value).toBe(40);
    const sum = r.dimensions.reduce((a, d) => a + d.contribution0to100, 0);
    expect(sum).toBeCloseTo(r.base!, 6);
  });
});

describe("v4.1 not_applicable redistribution", () => {
  test("a not_applicable signal's weight goes to the other signals of its dimension", () => {
    const i = inputs(1, { humanOrders: 5 });
    i.merchantReliabilityBase.storeAge = { value: 0, quality: "not_applicable" };
    i.merchantReliabilityBase.fulfillment = s(0.5);
    const r = computeV41(i, { now: NOW });
    const rel = r.dimensions[0];
    expect(rel.signals.find((x) => x.name === "storeAge")!.weightInDimension).toBe(0);
    // fulfillment 0.3 of the remaining 0.9
    expect(rel.score01!).toBeCloseTo(1 - 0.5 * (0.3 / 0.9), 6);
  });

  test("a not_applicable value is never scored, whatever number it carries", () => {
    const a = inputs(0.6, { humanOrders: 5 });
    const b = inputs(0.6, { humanOrders: 5 });
    a.merchantReliabilityBase.storeAge = { value: 0, quality: "not_applicable" };
    b.merchantReliabilityBase.storeAge = { value: 1, quality: "not_applicable" };
    expect(computeV41(a, { now: NOW }).value).toBe(computeV41(b, { now: NOW }).value);
    expect(computeV41(a, { now: NOW }).value).toBe(0.6 * 85);
  });

  test("a dimension with only not_applicable signals hands its weight to the other dimensions", () => {
    const i = inputs(0.5, { agentOrders: 30, ...FULL });
    i.agenticEvidence = {
      agentCheckout: { value: 0, quality: "not_applicable" },
      agentFulfillmentDispute: { value: 0, quality: "not_applicable" },
      receiptIntegrity: { value: 0, quality: "not_applicable" },
    };
    i.merchantReliabilityBase = { fulfillment: s(1) };
    const r = computeV41(i, { now: NOW });
    expect(r.dimensions.map((d) => d.effectiveWeight)).toEqual([
      Number((0.35 / 0.6).toFixed(6)),
      Number((0.25 / 0.6).toFixed(6)),
      0,
    ]);
    expect(r.value!).toBeCloseTo(100 * ((0.35 / 0.6) * 1 + (0.25 / 0.6) * 0.5), 2);
  });

  test("missing signals count as not_applicable", () => {
    const i = inputs(0.9, { humanOrders: 5 });
    i.merchantReliabilityBase = { fulfillment: s(0.9) };
    expect(computeV41(i, { now: NOW }).value).toBe(76.5);
  });

  test("no applicable component in the tier's weighted dimensions is insufficient_data", () => {
    const i = inputs(1);
    i.agenticReadiness = {};
    const r = computeV41(i, { now: NOW });
    expect(r.tier).toBe("insufficient_data");
    expect(r.value).toBeNull();
    expect(r.reasons).toContain("no_applicable_components");
  });

  test("self_declared signals weigh half as much as measured ones within a dimension", () => {
    const i = inputs(0);
    i.agenticReadiness = {
      setupQuality: s(1, "self_declared"),
      protocolSecurity: s(0, "verified"),
    };
    // raw weights 0.3 × 0.5 and 0.3 × 1
    expect(computeV41(i, { now: NOW }).value!).toBeCloseTo(65 * (0.15 / 0.45), 2);
  });
});

describe("v4.1 fails closed", () => {
  test("any synthetic_blocked signal collapses the score to insufficient_data", () => {
    const i = inputs(1, { agentOrders: 30, ...FULL });
    i.agenticEvidence.receiptIntegrity = { value: 1, quality: "synthetic_blocked" };
    const r = computeV41(i, { now: NOW });
    expect(r.tier).toBe("insufficient_data");
    expect(r.confidence_level).toBe("insufficient_data");
    expect(r.value).toBeNull();
    expect(r.reasons).toEqual(["synthetic_blocked:agenticEvidence.receiptIntegrity"]);
  });

  test("a synthetic_blocked signal in a dimension the tier does not weigh still blocks", () => {
    const i = inputs(1);
    i.agenticEvidence.agentCheckout = { value: 1, quality: "synthetic_blocked" };
    expect(computeV41(i, { now: NOW }).tier).toBe("insufficient_data");
  });

  const invalid: [string, Signal][] = [
    ["above 1", s(1.2)],
    ["negative", s(-0.1)],
    ["NaN", s(Number.NaN)],
  ];
  for (const [name, sig] of invalid) {
    test(`a signal value ${name} is insufficient_data, not a number`, () => {
      const i = inputs(0.5);
      i.agenticReadiness.setupQuality = sig;
      expect(computeV41(i, { now: NOW }).value).toBeNull();
    });
  }

  test("a negative order count is insufficient_data", () => {
    expect(computeV41(inputs(0.5, { humanOrders: -1 }), { now: NOW }).tier).toBe("insufficient_data");
  });
});

describe("v4.1 external assurance bonus", () => {
  const cert = (over: Partial<Certification> = {}): Certification => ({
    id: "c1",
    kind: "pci_dss",
    issuer: "PCI SSC",
    validFrom: NOW - 100 * DAY,
    validUntil: NOW + 100 * DAY,
    evidenceQuality: "verified",
    ...over,
  });

  test("a passing certification adds 5 points after the capped base", () => {
    const r = computeV41({ ...inputs(1, { humanOrders: 5 }), certifications: [cert()] }, { now: NOW });
    expect(r.base).toBe(85);
    expect(r.bonus).toBe(5);
    expect(r.value).toBe(90);
  });

  test("the bonus is at most 10 points however many certifications pass", () => {
    const certs = [cert(), cert({ id: "c2", kind: "iso_27001", issuer: "ISO/IEC accredited body" }), cert({ id: "c3", kind: "soc2_type2", issuer: "AICPA SOC" })];
    const r = computeV41({ ...inputs(0.5), certifications: certs }, { now: NOW });
    expect(r.bonus).toBe(ASSURANCE.maxBonus);
    expect(r.value).toBe(32.5 + 10);
    expect(r.assurance.map((a) => a.reason)).toEqual(["accepted", "accepted", "bonus_cap_reached"]);
  });

  test("the final score is clamped to 100", () => {
    const certs = [cert(), cert({ id: "c2", kind: "iso_27001" })];
    const r = computeV41({ ...inputs(1, { agentOrders: 20, ...FULL }), certifications: certs }, { now: NOW });
    expect(r.base).toBe(100);
    expect(r.value).toBe(100);
  });

  const gates: [string, Partial<Certification>, string][] = [
    ["an issuer off the allowlist", { issuer: "Self-Certify Inc" }, "issuer_not_allowlisted"],
    ["an expired certificate", { validUntil: NOW }, "expired"],
    ["a certificate not yet valid", { validFrom: NOW + DAY }, "not_yet_valid"],
    ["self-declared evidence", { evidenceQuality: "self_declared" }, "evidence_not_verified"],
    ["measured (not verified) evidence", { evidenceQuality: "measured" }, "evidence_not_verified"],
  ];
  for (const [name, over, reason] of gates) {
    test(`${name} earns no bonus`, () => {
      const r = computeV41({ ...inputs(1, { humanOrders: 5 }), certifications: [cert(over)] }, { now: NOW });
      expect(r.bonus).toBe(0);
      expect(r.value).toBe(85);
      expect(r.assurance[0].reason).toBe(reason as never);
    });
  }

  test("two certificates of the same kind count once", () => {
    expect(assessAssurance([cert(), cert({ id: "c2" })], NOW).bonus).toBe(5);
  });

  test("a caller-supplied allowlist replaces the default one", () => {
    expect(assessAssurance([cert()], NOW, ["Other"]).bonus).toBe(0);
    expect(assessAssurance([cert({ issuer: "Other" })], NOW, ["Other"]).bonus).toBe(5);
  });

  test("insufficient_data gets no bonus and no value", () => {
    const i = { ...inputs(1), certifications: [cert()] };
    i.agenticReadiness.setupQuality = { value: 1, quality: "synthetic_blocked" };
    const r = computeV41(i, { now: NOW });
    expect(r.value).toBeNull();
    expect(r.bonus).toBe(0);
  });
});
