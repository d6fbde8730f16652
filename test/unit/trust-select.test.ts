import { describe, expect, test } from "bun:test";
import { computeV41, type Signal, type TrustInputs } from "../../actors/trust/engine-v41.ts";
import { computeV2, type V2RawData } from "../../actors/trust/engine-v2.ts";
import { flagOn, selectTrustScore, type TrustFlags } from "../../actors/trust/select.ts";

const NOW = Date.UTC(2026, 0, 15);
const m = (value: number): Signal => ({ value, quality: "measured" });

const v41Inputs = (): TrustInputs => ({
  merchantReliabilityBase: { fulfillment: m(0.9) },
  agenticReadiness: { setupQuality: m(0.9) },
  agenticEvidence: { agentCheckout: m(0.9) },
  humanOrders: 50,
  agentOrders: 30,
  gmv90dMinor: 2_000_000,
  uniqueBuyers90d: 40,
});

const raw = (): V2RawData => ({
  products: { count: 4, withTitle: 4, withPrice: 4, withImages: 2, withGtin: 2 },
  lastSuccessfulSyncAt: NOW,
  priceChecks: { total: 10, passed: 9 },
  stockChecks: { total: 10, passed: 8 },
  policyFields: { filled: 3, required: 6 },
  agentEvents: { cartCreated: 10, checkoutStart: 5, checkoutComplete: 4 },
  orders90d: { total: 10, fulfilledOnTime: 9, disputes: 0 },
  latencyP95Ms: 300,
  ratings: { count: 2, average0to5: 4 },
  consistencyChecks: { total: 3, passed: 3 },
});

const v41 = computeV41(v41Inputs(), { now: NOW }); // 90 on 0..100
const blockedInputs = v41Inputs();
blockedInputs.agenticEvidence.receiptIntegrity = { value: 1, quality: "synthetic_blocked" };
const v41Blocked = computeV41(blockedInputs, { now: NOW });
const v2 = computeV2(raw(), NOW);

const flags = (v41on: boolean, coherentOn: boolean): TrustFlags => ({
  TRUST_SCORE_PUBLIC_V41_ENABLED: v41on,
  TRUST_SCORE_PUBLIC_COHERENT_ENGINE_ENABLED: coherentOn,
});

describe("engine selection matrix", () => {
  const matrix: [string, boolean, boolean, "ok" | "blocked" | "absent", "v41" | "v2", "v41" | "v2"][] = [
    ["both flags off uses v2 for the number and the breakdown", false, false, "ok", "v2", "v2"],
    ["only the coherent flag on still uses v2 for both", false, true, "ok", "v2", "v2"],
    ["only the v41 flag on gives a v4.1 number with the v2 breakdown", true, false, "ok", "v41", "v2"],
    ["both flags on use v4.1 for the number and the breakdown", true, true, "ok", "v41", "v41"],
    ["both flags on with insufficient_data fall back to v2 for both", true, true, "blocked", "v2", "v2"],
    ["the v41 flag on with insufficient_data falls back to v2", true, false, "blocked", "v2", "v2"],
    ["both flags on without a v4.1 run fall back to v2", true, true, "absent", "v2", "v2"],
  ];
  for (const [name, f41, fCoh, state, overall, breakdown] of matrix) {
    test(name, () => {
      const chosen = state === "ok" ? v41 : state === "blocked" ? v41Blocked : null;
      const r = selectTrustScore({ v41: chosen, v2, flags: flags(f41, fCoh) });
      expect(r.engines).toEqual({ overall, breakdown });
      expect(r.breakdown.engine).toBe(breakdown);
      expect(Number.isFinite(r.score0to100)).toBe(true);
      expect(Number.isFinite(r.score0to1)).toBe(true);
      if (breakdown === "v2") expect(r.breakdown.engine === "v2" && r.breakdown.components.length).toBe(12);
    });
  }
});

describe("the score on both scales", () => {
  test("a v4.1 number of 90 is 90 on 0..100 and 0.9 on 0..1", () => {
    expect(v41.value).toBe(90);
    const r = selectTrustScore({ v41, v2, flags: flags(true, true) });
    expect(r.score0to100).toBe(90);
    expect(r.score0to1).toBe(0.9);
    expect(r.modelVersion).toBe("4.1.0");
  });

  test("a v2 number keeps its 0..1 value and is shown ×100 on the 0..100 scale", () => {
    const r = selectTrustScore({ v41, v2, flags: flags(false, false) });
    expect(r.score0to1).toBe(v2.score0to1);
    expect(r.score0to100).toBeCloseTo(v2.score0to1 * 100, 6);
    expect(r.modelVersion).toBe("2.0");
  });

  test("confidence_level is the v4.1 tier even when v2 is published", () => {
    expect(selectTrustScore({ v41, v2, flags: flags(false, false) }).confidence_level).toBe("agent_verified");
  });

  test("confidence_level is insufficient_data when v4.1 collapsed or did not run", () => {
    expect(selectTrustScore({ v41: v41Blocked, v2, flags: flags(true, true) }).confidence_level).toBe("insufficient_data");
    expect(selectTrustScore({ v41: null, v2, flags: flags(true, true) }).confidence_level).toBe("insufficient_data");
  });

  test("the v4.1 breakdown carries the tier, cap and dimensions", () => {
    const r = selectTrustScore({ v41, v2, flags: flags(true, true) });
    if (r.breakdown.engine !== "v41") throw new Error("expected a v4.1 breakdown");
    expect(r.breakdown.tier).toBe("agent_verified");
    expect(r.breakdown.cap).toBe(100);
    expect(r.breakdown.dimensions).toHaveLength(3);
  });
});

describe("flag parsing", () => {
  for (const raw of ["1", "true", "TRUE", " on ", "yes"]) test(`"${raw}" turns a flag on`, () => expect(flagOn(raw)).toBe(true));
  for (const raw of [undefined, null, "", "0", "false", "off", "no", "enabled?"]) {
    test(`${JSON.stringify(raw)} leaves a flag off`, () => expect(flagOn(raw)).toBe(false));
  }
});
