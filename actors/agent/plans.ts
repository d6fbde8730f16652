/**
 * Who may mint a key of which tier (audit A2-F2). Each user account has a plan (`users.plan`): the highest tier
 * its keys may have. SANDBOX sits outside the ladder and is always allowed (the spec: "a sandbox key is free");
 * operators mint any tier. The gateway reads the plan and calls `assertTierInPlan` before the key is created.
 */
import { fail } from "../runtime/errors.ts";
import { PLAN_TIERS, type Tier } from "./access.ts";

export type Plan = Exclude<Tier, "SANDBOX">;

export const DEFAULT_PLAN: Plan = "STARTER";

export function isPlan(value: unknown): value is Plan {
  return typeof value === "string" && (PLAN_TIERS as readonly string[]).includes(value);
}

/** A plan name in any case; FREE is the spec's alias of STARTER, as for key tiers. SANDBOX is not a plan. */
export function normalizePlan(input: unknown): Plan {
  if (typeof input === "string") {
    const upper = input.trim().toUpperCase();
    if (upper === "FREE") return "STARTER";
    if (isPlan(upper)) return upper;
  }
  const shown = typeof input === "string" ? JSON.stringify(input.slice(0, 100)) : JSON.stringify(input);
  throw fail("validation_error", `Invalid body field 'plan': must be one of ${[...PLAN_TIERS, "FREE"].map((p) => `'${p}'`).join(", ")} (got ${shown})`, {
    location: "body",
    field: "plan",
    allowed: [...PLAN_TIERS, "FREE"],
  });
}

/** True when an account of this role and plan may mint a key of this tier. */
export function tierInPlan(role: "operator" | "merchant", plan: Plan, tier: Tier): boolean {
  if (role === "operator" || tier === "SANDBOX") return true;
  return PLAN_TIERS.indexOf(tier) <= PLAN_TIERS.indexOf(plan);
}

/** 403 `tier_not_in_plan` naming the tier asked for and the plan's tier, unless the plan allows it. */
export function assertTierInPlan(role: "operator" | "merchant", plan: Plan, tier: Tier): void {
  if (tierInPlan(role, plan, tier)) return;
  throw fail("tier_not_in_plan", `Your account's plan allows keys up to ${plan}, not ${tier}; an operator can raise the plan.`, {
    requestedTier: tier,
    planTier: plan,
  });
}
