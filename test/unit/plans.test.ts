import { describe, expect, test } from "bun:test";
import { checkAccess, FEATURES, featuresOfTier, keyHasFeature, normalizeTier, PLAN_TIERS, TIERS, validateScopes } from "../../actors/agent/access.ts";
import { assertKeyRoom, assertTierInPlan, capTier, keyPlanOf, normalizePlan, type Plan, tierInPlan } from "../../actors/agent/plans.ts";

describe("key tiers within an account's plan", () => {
  test("a merchant mints tiers up to its plan and SANDBOX always; an operator mints every tier on any plan", () => {
    for (const plan of PLAN_TIERS as readonly Plan[]) {
      const allowed = TIERS.filter((tier) => tierInPlan("merchant", plan, tier));
      expect({ plan, allowed }).toEqual({ plan, allowed: [...PLAN_TIERS.slice(0, PLAN_TIERS.indexOf(plan) + 1), "SANDBOX"] });
      expect(TIERS.every((tier) => tierInPlan("operator", plan, tier))).toBe(true);
    }
  });

  test("a tier above the plan is tier_not_in_plan with both tiers", () => {
    expect(() => assertTierInPlan("merchant", "GROWTH", "PRO")).toThrow(expect.objectContaining({ code: "tier_not_in_plan", details: { requestedTier: "PRO", planTier: "GROWTH" } }));
  });

  test("plan names: any case, FREE is STARTER, SANDBOX and others are refused", () => {
    expect(normalizePlan(" pro ")).toBe("PRO");
    expect(normalizePlan("free")).toBe("STARTER");
    for (const bad of ["SANDBOX", "GOLD", 3, null]) expect(() => normalizePlan(bad)).toThrow(expect.objectContaining({ code: "validation_error" }));
  });
});

describe("a key capped at its account's plan (review R2-1, R2-2)", () => {
  test("a key has the features of both its tier and its plan; no plan is no cap", () => {
    for (const plan of PLAN_TIERS) {
      expect(FEATURES.filter((f) => keyHasFeature("SANDBOX", plan, f))).toEqual(featuresOfTier("SANDBOX").filter((f) => featuresOfTier(plan).includes(f)));
    }
    expect(FEATURES.filter((f) => keyHasFeature("SANDBOX", "STARTER", f))).toEqual(["shipping_estimate", "return_policy"]);
    expect(FEATURES.filter((f) => keyHasFeature("SANDBOX", null, f))).toEqual(featuresOfTier("SANDBOX"));
  });

  test("the route check refuses a plan's missing feature with feature_not_in_tier and planTier", () => {
    let err: unknown;
    try {
      checkAccess({ scopes: ["search"], tier: "SANDBOX", plan: "STARTER" }, { method: "GET", path: "/api/v1/agent/products/x/price-history" });
    } catch (e) {
      err = e;
    }
    expect(err).toMatchObject({ code: "feature_not_in_tier", details: { feature: "price_history", tier: "SANDBOX", planTier: "STARTER", requiredTier: "GROWTH" } });
    expect(() => checkAccess({ scopes: ["search"], tier: "SANDBOX", plan: "GROWTH" }, { method: "GET", path: "/api/v1/agent/products/x/price-history" })).not.toThrow();
  });

  test("a new plan lowers a tier above it to the plan, leaves lower tiers and SANDBOX alone", () => {
    expect(capTier("ENTERPRISE", "STARTER")).toBe("STARTER");
    expect(capTier("PRO", "GROWTH")).toBe("GROWTH");
    expect(capTier("GROWTH", "PRO")).toBe("GROWTH");
    expect(capTier("SANDBOX", "STARTER")).toBe("SANDBOX");
  });

  test("an operator's keys carry no plan; a merchant's carry its plan", () => {
    expect(keyPlanOf("operator", "STARTER")).toBeNull();
    expect(keyPlanOf("merchant", "GROWTH")).toBe("GROWTH");
  });

  test("the live-key cap refuses the key that would pass it with too_many_keys", () => {
    expect(() => assertKeyRoom(24, 25)).not.toThrow();
    expect(() => assertKeyRoom(25, 25)).toThrow(expect.objectContaining({ code: "too_many_keys", details: { liveKeys: 25, limit: 25 } }));
  });
});

describe("an unknown tier or scope is quoted bounded, in the house form (review R2-3)", () => {
  test("a long value is cut at 100 characters", () => {
    const long = "Q".repeat(5000);
    for (const run of [() => normalizeTier(long), () => validateScopes(["search", long])]) {
      let err: { message: string; details?: Record<string, unknown> } | undefined;
      try {
        run();
      } catch (e) {
        err = e as typeof err;
      }
      expect(err!.message).toContain(`(got "${"Q".repeat(100)}…")`);
      expect(JSON.stringify(err!.details).length).toBeLessThan(400);
    }
  });
});
