/**
 * Who may mint a key of which tier (audit A2-F2). Each user account has a plan (`users.plan`): the highest tier
 * its keys may have. SANDBOX sits outside the ladder and is always allowed (the spec: "a sandbox key is free");
 * operators mint any tier. The key's actor reads the plan (the user row locked) and calls `assertTierInPlan` in the
 * turn that stores the key, and stores the plan with the key: a key's features are capped at it (a SANDBOX key's
 * too: review R2-1), and PUT /api/v1/admin/users/plan sends each live key the new plan (`capTier`; R2-2).
 */
import { fail } from "../runtime/errors.ts";
import { preview } from "../../infra/echo.ts";
import { PLAN_TIERS, quoted, type Tier } from "./access.ts";

export type Plan = Exclude<Tier, "SANDBOX">;

export const DEFAULT_PLAN: Plan = "STARTER";

export function isPlan(value: unknown): value is Plan {
  return typeof value === "string" && (PLAN_TIERS as readonly string[]).includes(value);
}

/** A plan as stored (users.plan, agent_keys.plan): a value that is not a plan reads as the lowest (fail closed). */
export function storedPlan(stored: string): Plan {
  return isPlan(stored) ? stored : DEFAULT_PLAN;
}

/** A plan name in any case; FREE is the spec's alias of STARTER, as for key tiers. SANDBOX is not a plan. */
export function normalizePlan(input: unknown): Plan {
  if (typeof input === "string") {
    const upper = input.trim().toUpperCase();
    if (upper === "FREE") return "STARTER";
    if (isPlan(upper)) return upper;
  }
  throw fail("validation_error", `Invalid body field 'plan': must be one of ${quoted([...PLAN_TIERS, "FREE"])} (got ${preview(input)})`, {
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

/** The plan a new key of this account is capped at: none for an operator (operators mint any tier). */
export function keyPlanOf(role: "operator" | "merchant", plan: Plan): Plan | null {
  return role === "operator" ? null : plan;
}

/** A key's tier under a (new) plan: a plan tier above the plan comes down to it; SANDBOX stays SANDBOX. */
export function capTier(tier: Tier, plan: Plan): Tier {
  if (tier === "SANDBOX") return tier;
  return PLAN_TIERS.indexOf(tier) > PLAN_TIERS.indexOf(plan) ? plan : tier;
}

/** 409 too_many_keys unless the account may hold one more live (unrevoked, unexpired) key. */
export function assertKeyRoom(live: number, limit: number): void {
  if (live < limit) return;
  throw fail("too_many_keys", `Your account already holds ${live} live agent keys, the most allowed (${limit}); revoke one (DELETE /api/v1/agent-keys/{id}) first.`, {
    liveKeys: live,
    limit,
  });
}
