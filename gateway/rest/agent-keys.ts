/**
 * Agent API keys (Bearer JWT of the owning user). The plaintext `agnt_…` key is returned once, by POST; only its
 * keyed hash is stored. Revocation goes through the key's actor, so every gateway refuses the key at once.
 * A merchant account mints keys up to its plan's tier (`users.plan`, set by an operator: admin-users.ts) and
 * SANDBOX keys; an operator mints any tier (actors/agent/plans.ts).
 */
import { Elysia, t } from "elysia";
import { agentActor } from "../../actors/agent/index.ts";
import { DEFAULT_SCOPES, keyExpiresAt, normalizeTier, SCOPES, TIERS, validateScopes } from "../../actors/agent/access.ts";
import { generateAgentKey } from "../../actors/agent/keys.ts";
import { assertTierInPlan, DEFAULT_PLAN, isPlan } from "../../actors/agent/plans.ts";
import { fail } from "../../actors/runtime/errors.ts";
import { errorResponses, ok, SuccessEnvelope } from "../envelope.ts";
import { pepper } from "../identity.ts";
import { userAuth } from "../plugins/auth.ts";
import type { Services } from "../services.ts";

const KeyOut = t.Object({
  id: t.String({ format: "uuid" }),
  name: t.String(),
  prefix: t.String({ description: "Non-secret lookup prefix; the key is shown as agnt_<prefix>…" }),
  scopes: t.Array(t.String()),
  tier: t.String(),
  createdAt: t.String({ format: "date-time" }),
  expiresAt: t.Union([t.String({ format: "date-time" }), t.Null()]),
  revokedAt: t.Union([t.String({ format: "date-time" }), t.Null()]),
});

/** Postgres text cannot hold NUL; refusing it here keeps such input a 400 instead of a database error. */
const NO_NUL = "^[^\\u0000]*$";

export function agentKeyRoutes(svc: Services) {
  return new Elysia({ name: "agent-key-routes" })
    .use(userAuth(svc))
    .post(
      "/api/v1/agent-keys",
      async ({ body, user, set }) => {
        const scopes = body.scopes === undefined ? [...DEFAULT_SCOPES] : validateScopes(body.scopes);
        const tierInput = body.tier ?? "STARTER";
        const tier = normalizeTier(tierInput);
        if (user.role !== "operator" && tier !== "SANDBOX") {
          const [row] = await svc.sql<{ plan: string }[]>`SELECT plan FROM users WHERE id = ${user.id}`;
          assertTierInPlan(user.role, row && isPlan(row.plan) ? row.plan : DEFAULT_PLAN, tier);
        }
        const id = crypto.randomUUID();
        const expiresAt = keyExpiresAt(tier, new Date(svc.clock.now()));
        // A prefix collision (62^12 space) is astronomically unlikely; retry once with a fresh key if it happens.
        for (let attempt = 0; ; attempt++) {
          const key = generateAgentKey(pepper(svc));
          try {
            const created = await svc.actors.ask(agentActor, key.prefix, "create", {
              id,
              userId: user.id,
              name: body.name,
              hash: key.hash,
              scopes,
              tier,
              expiresAt: expiresAt?.toISOString() ?? null,
            });
            set.status = 201;
            return ok({ ...created, key: key.plaintext });
          } catch (err) {
            if ((err as { code?: string }).code !== "conflict" || attempt > 2) throw err;
          }
        }
      },
      {
        body: t.Object({
          name: t.String({ minLength: 1, maxLength: 200, pattern: NO_NUL }),
          scopes: t.Optional(t.Array(t.String(), { description: `Any of: ${SCOPES.join(", ")}. Default: ${DEFAULT_SCOPES.join(", ")}.` })),
          tier: t.Optional(
            t.String({
              description: `${TIERS.join(", ")} (FREE is an alias of STARTER). SANDBOX keys expire after 24 h. At most the account's plan (403 tier_not_in_plan); SANDBOX always, any tier for operators.`,
            }),
          ),
        }),
        response: { 201: SuccessEnvelope(t.Composite([KeyOut, t.Object({ key: t.String({ description: "The plaintext key, shown once." }) })])), ...errorResponses(400, 401, 403, 429) },
        detail: { tags: ["accounts"], summary: "Create an agent API key", security: [{ bearer: [] }] },
      },
    )
    .get(
      "/api/v1/agent-keys",
      async ({ user }) => {
        const rows = await svc.sql<
          { id: string; name: string; prefix: string; scopes: string[]; tier: string; created_at: Date; expires_at: Date | null; revoked_at: Date | null }[]
        >`SELECT id, name, prefix, scopes, tier, created_at, expires_at, revoked_at FROM agent_keys WHERE user_id = ${user.id} ORDER BY created_at`;
        return ok(
          rows.map((r) => ({
            id: r.id,
            name: r.name,
            prefix: r.prefix,
            scopes: r.scopes,
            tier: r.tier,
            createdAt: r.created_at.toISOString(),
            expiresAt: r.expires_at?.toISOString() ?? null,
            revokedAt: r.revoked_at?.toISOString() ?? null,
          })),
        );
      },
      { response: { 200: SuccessEnvelope(t.Array(KeyOut)), ...errorResponses(401, 429) }, detail: { tags: ["accounts"], summary: "List your agent keys (never the plaintext)", security: [{ bearer: [] }] } },
    )
    .delete(
      "/api/v1/agent-keys/:id",
      async ({ params, user }) => {
        const rows = await svc.sql<{ prefix: string }[]>`SELECT prefix FROM agent_keys WHERE id = ${params.id} AND user_id = ${user.id}`;
        if (!rows.length) throw fail("not_found", "No such agent key.");
        const revoked = await svc.actors.ask(agentActor, rows[0].prefix, "revoke", { userId: user.id });
        return ok(revoked);
      },
      {
        params: t.Object({ id: t.String({ format: "uuid" }) }),
        response: { 200: SuccessEnvelope(KeyOut), ...errorResponses(400, 401, 404, 429) },
        detail: { tags: ["accounts"], summary: "Revoke an agent key (refused at once on every gateway)", security: [{ bearer: [] }] },
      },
    );
}
