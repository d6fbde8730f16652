/**
 * PUT /api/v1/admin/users/plan: an operator sets an account's plan, the highest tier of the agent keys it may
 * mint (actors/agent/plans.ts; audit A2-F2). The account is named by its e-mail, the name an operator knows it by
 * (sessions and log-ins carry no user id). Keys already minted keep their tier.
 */
import { Elysia, t } from "elysia";
import { PLAN_TIERS } from "../../actors/agent/access.ts";
import { normalizePlan } from "../../actors/agent/plans.ts";
import { fail } from "../../actors/runtime/errors.ts";
import { errorResponses, ok, SuccessEnvelope } from "../envelope.ts";
import { requireOperator, userAuth } from "../plugins/auth.ts";
import type { Services } from "../services.ts";

/** Postgres text cannot hold NUL; refusing it here keeps such input a 400 instead of a database error. */
const NO_NUL = "^[^\\u0000]*$";

export const UserPlanOut = t.Object({
  email: t.String(),
  role: t.Union([t.Literal("operator"), t.Literal("merchant")]),
  plan: t.String({ description: "The plan now in force." }),
  previousPlan: t.String(),
});

export function adminUserRoutes(svc: Services) {
  return new Elysia({ name: "admin-user-routes" })
    .use(userAuth(svc))
    .put(
      "/api/v1/admin/users/plan",
      async ({ user, body }) => {
        requireOperator(user);
        const plan = normalizePlan(body.plan);
        const [row] = await svc.sql<{ email: string; role: "operator" | "merchant"; plan: string; previous: string }[]>`
          UPDATE users u SET plan = ${plan} FROM (SELECT id, plan FROM users WHERE lower(email) = ${body.email.trim().toLowerCase()} FOR UPDATE) old
          WHERE u.id = old.id RETURNING u.email, u.role, u.plan, old.plan AS previous`;
        if (!row) throw fail("not_found", "No account with that e-mail.", { field: "email" });
        return ok({ email: row.email, role: row.role, plan: row.plan, previousPlan: row.previous });
      },
      {
        body: t.Object({
          email: t.String({ minLength: 3, maxLength: 320, pattern: NO_NUL }),
          plan: t.String({ description: `${PLAN_TIERS.join(", ")} (FREE is an alias of STARTER; any case).` }),
        }),
        response: { 200: SuccessEnvelope(UserPlanOut), ...errorResponses(400, 401, 403, 404, 429) },
        detail: {
          tags: ["admin"],
          summary: "Set an account's plan (the highest tier of the agent keys it may mint)",
          description:
            "Operators only. A merchant account then mints keys up to this tier (SANDBOX always); above it POST /api/v1/agent-keys is 403 tier_not_in_plan. Operators mint any tier whatever their plan. Keys already minted keep their tier. 404 not_found for an unknown e-mail.",
          security: [{ bearer: [] }],
        },
      },
    );
}
