/**
 * Operator routes over accounts and their agent keys (actors/agent/plans.ts; audit A2-F2, review R2-2, R2-4):
 * - PUT /api/v1/admin/users/plan sets an account's plan, the highest tier of the agent keys it may mint, and caps the
 *   account's live keys at it at once (each key's actor is told, as revocation does it);
 * - GET /api/v1/admin/users/plan?email= reads a plan;
 * - GET /api/v1/admin/users/agent-keys?email= lists an account's keys (never the plaintext);
 * - DELETE /api/v1/admin/agent-keys/:id revokes any account's key.
 * The account is named by its e-mail, the name an operator knows it by (sessions and log-ins carry no user id),
 * matched as log-in matches it (trimmed, any case).
 */
import { Elysia, t } from "elysia";
import { agentActor } from "../../actors/agent/index.ts";
import { PLAN_TIERS } from "../../actors/agent/access.ts";
import { normalizePlan, type Plan } from "../../actors/agent/plans.ts";
import { fail } from "../../actors/runtime/errors.ts";
import { errorResponses, ok, SuccessEnvelope } from "../envelope.ts";
import { requireOperator, userAuth } from "../plugins/auth.ts";
import type { Services } from "../services.ts";
import { strictJsonBody } from "./strict-body.ts";
import { noBody } from "./optional-body.ts";
import { KeyOut, keysOf } from "./agent-keys.ts";
import { NO_NUL_PATTERN } from "../../infra/validation-message.ts";

const Email = t.String({ minLength: 3, maxLength: 320, pattern: NO_NUL_PATTERN });
const PlanName = t.Union([t.Literal("STARTER"), t.Literal("GROWTH"), t.Literal("PRO"), t.Literal("ENTERPRISE")]);

export const UserPlanOut = t.Object({
  email: t.String(),
  role: t.Union([t.Literal("operator"), t.Literal("merchant")]),
  plan: PlanName,
});

export const UserPlanSetOut = t.Composite([
  UserPlanOut,
  t.Object({
    previousPlan: PlanName,
    keysCapped: t.Integer({
      minimum: 0,
      description: "Live keys of the account whose tier was above the new plan and now is the plan (0 for an operator: operators' keys are not capped).",
    }),
  }),
]);

const emailKey = (email: string) => email.trim().toLowerCase();

interface Account {
  id: string;
  email: string;
  role: "operator" | "merchant";
  /** The column's CHECK allows only plans. */
  plan: Plan;
}

async function accountOf(svc: Services, email: string): Promise<Account> {
  const [row] = await svc.sql<Account[]>`SELECT id, email, role, plan FROM users WHERE lower(email) = ${emailKey(email)}`;
  if (!row) throw fail("not_found", "No account with that e-mail.", { field: "email" });
  return row;
}

/** PUT's body, also its `strictJsonBody` (a key it does not have is 400 naming it, as on every write: audit W-7). */
const PlanBody = t.Object({
  email: Email,
  plan: t.String({ description: `${PLAN_TIERS.join(", ")} (FREE is an alias of STARTER; any case).` }),
});

export function adminUserRoutes(svc: Services) {
  return new Elysia({ name: "admin-user-routes" })
    .use(userAuth(svc))
    .put(
      "/api/v1/admin/users/plan",
      async ({ user, body }) => {
        requireOperator(user);
        const plan = normalizePlan(body.plan);
        // Locks the account's row as a mint does (the key's actor), so no key is minted under the old plan after this
        // commits; the keys listed below are then every live key the new plan must reach.
        const [row] = await svc.sql<{ id: string; email: string; role: "operator" | "merchant"; plan: Plan; previous: Plan }[]>`
          UPDATE users u SET plan = ${plan} FROM (SELECT id, plan FROM users WHERE lower(email) = ${emailKey(body.email)} FOR UPDATE) old
          WHERE u.id = old.id RETURNING u.id, u.email, u.role, u.plan, old.plan AS previous`;
        if (!row) throw fail("not_found", "No account with that e-mail.", { field: "email" });
        let keysCapped = 0;
        if (row.role === "merchant") {
          // Every live key, not only those above the plan: a SANDBOX key's features follow the plan both ways. A
          // failure part way answers 503 and a repeat of the same PUT finishes the job (each step is idempotent).
          const live = await svc.sql<{ prefix: string }[]>`
            SELECT prefix FROM agent_keys
            WHERE user_id = ${row.id} AND revoked_at IS NULL AND (expires_at IS NULL OR expires_at > ${new Date(svc.clock.now())})
            ORDER BY created_at, id`;
          for (const { prefix } of live) {
            const r = await svc.actors.ask(agentActor, prefix, "capPlan", {});
            if (r.tierLowered) keysCapped++;
          }
        }
        return ok({ email: row.email, role: row.role, plan: row.plan, previousPlan: row.previous, keysCapped });
      },
      {
        ...strictJsonBody(PlanBody),
        response: { 200: SuccessEnvelope(UserPlanSetOut), ...errorResponses(400, 401, 403, 404, 429) },
        detail: {
          tags: ["admin"],
          summary: "Set an account's plan (the highest tier of the agent keys it may mint) and cap its live keys at it",
          description:
            "Operators only. A merchant account then mints keys up to this tier (SANDBOX always); above it POST /api/v1/agent-keys is 403 tier_not_in_plan. Operators mint any tier whatever their plan. The account's live keys are capped at once on every gateway: a tier above the plan comes down to it (keysCapped counts them), and every key, SANDBOX included, has at most the plan's features. A raised plan raises no key's tier. 404 not_found for an unknown e-mail.",
          security: [{ bearer: [] }],
        },
      },
    )
    .get(
      "/api/v1/admin/users/plan",
      async ({ user, query }) => {
        requireOperator(user);
        const a = await accountOf(svc, query.email);
        return ok({ email: a.email, role: a.role, plan: a.plan });
      },
      {
        query: t.Object({ email: Email }),
        response: { 200: SuccessEnvelope(UserPlanOut), ...errorResponses(400, 401, 403, 404, 429) },
        detail: { tags: ["admin"], summary: "Read an account's plan", description: "Operators only. 404 not_found for an unknown e-mail.", security: [{ bearer: [] }] },
      },
    )
    .get(
      "/api/v1/admin/users/agent-keys",
      async ({ user, query }) => {
        requireOperator(user);
        const a = await accountOf(svc, query.email);
        return ok(await keysOf(svc.sql, a.id));
      },
      {
        query: t.Object({ email: Email }),
        response: { 200: SuccessEnvelope(t.Array(KeyOut)), ...errorResponses(400, 401, 403, 404, 429) },
        detail: {
          tags: ["admin"],
          summary: "List an account's agent keys (never the plaintext)",
          description: "Operators only; revoked and expired keys included, oldest first. 404 not_found for an unknown e-mail.",
          security: [{ bearer: [] }],
        },
      },
    )
    .delete(
      "/api/v1/admin/agent-keys/:id",
      async ({ user, params }) => {
        requireOperator(user);
        const [row] = await svc.sql<{ prefix: string; user_id: string }[]>`SELECT prefix, user_id FROM agent_keys WHERE id = ${params.id}`;
        if (!row) throw fail("not_found", "No such agent key.");
        return ok(await svc.actors.ask(agentActor, row.prefix, "revoke", { userId: row.user_id }));
      },
      {
        params: t.Object({ id: t.String({ format: "uuid" }) }),
        ...noBody(),
        response: { 200: SuccessEnvelope(KeyOut), ...errorResponses(400, 401, 403, 404, 429) },
        detail: {
          tags: ["admin"],
          summary: "Revoke any account's agent key (refused at once on every gateway)",
          description: "Operators only. Revoking a revoked key answers it as it is. 404 not_found for an unknown id.",
          security: [{ bearer: [] }],
        },
      },
    );
}
