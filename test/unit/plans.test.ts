import { describe, expect, test } from "bun:test";
import { PLAN_TIERS, TIERS } from "../../actors/agent/access.ts";
import { assertTierInPlan, normalizePlan, type Plan, tierInPlan } from "../../actors/agent/plans.ts";

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
