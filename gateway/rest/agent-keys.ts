/**
 * Agent API keys (Bearer JWT of the owning user). The plaintext `agnt_…` key is returned once, by POST; only its
 * keyed hash is stored. Revocation goes through the key's actor, so every gateway refuses the key at once.
 * A merchant account mints keys up to its plan's tier (`users.plan`, set by an operator: admin-users.ts) and
 * SANDBOX keys, holds at most AGENT_KEYS_MAX_LIVE live keys, and each key carries the plan that caps its features;
 * an operator mints any tier and any number (actors/agent/plans.ts; the key's actor checks, in the turn that stores).
 */
import { Elysia, t } from "elysia";
import type { Sql } from "../../infra/db.ts";
import { agentActor } from "../../actors/agent/index.ts";
import { DEFAULT_SCOPES, keyExpiresAt, normalizeTier, SCOPES, TIERS, validateScopes } from "../../actors/agent/access.ts";
import { generateAgentKey } from "../../actors/agent/keys.ts";
import { fail } from "../../actors/runtime/errors.ts";
import { errorResponses, ok, SuccessEnvelope } from "../envelope.ts";
import { pepper } from "../identity.ts";
import { userAuth } from "../plugins/auth.ts";
import { CodePointString } from "../plugins/schema-formats.ts";
import type { Services } from "../services.ts";
import { NO_NUL_PATTERN } from "../../infra/validation-message.ts";
import { strictJsonBody } from "./strict-body.ts";
import { noBody } from "./optional-body.ts";

export const KeyOut = t.Object({
  id: t.String({ format: "uuid" }),
  name: t.String(),
  prefix: t.String({ description: "Non-secret lookup prefix; the key is shown as agnt_<prefix>…" }),
  scopes: t.Array(t.String()),
  tier: t.String(),
  plan: t.Union([t.String(), t.Null()], {
    description: "The account's plan this key is capped at (its features are those of both its tier and this plan); null for an operator's key (no cap).",
  }),
  createdAt: t.String({ format: "date-time" }),
  expiresAt: t.Union([t.String({ format: "date-time" }), t.Null()]),
  revokedAt: t.Union([t.String({ format: "date-time" }), t.Null()]),
});

/** Bounds of what POST may send (review R2-3): the longest name is 18 characters, tiers and scopes are fewer. */
const TIER_MAX_CHARS = 32;
const SCOPE_MAX_CHARS = 64;
const SCOPES_MAX_ITEMS = 32;

/** POST's body, also its `strictJsonBody`: a misspelt `scope` or `tiers` is 400 naming it, not a key with the defaults (audit W-7). */
const CreateKeyBody = t.Object({
  name: t.String({ minLength: 1, maxLength: 200, pattern: NO_NUL_PATTERN }),
  scopes: t.Optional(
    t.Array(CodePointString({ maxLength: SCOPE_MAX_CHARS }), {
      maxItems: SCOPES_MAX_ITEMS,
      description: `Any of: ${SCOPES.join(", ")}. Default: ${DEFAULT_SCOPES.join(", ")}.`,
    }),
  ),
  tier: t.Optional(
    CodePointString({
      maxLength: TIER_MAX_CHARS,
      description: `${TIERS.join(", ")} (FREE is an alias of STARTER; any case). SANDBOX keys expire after 24 h. At most the account's plan (403 tier_not_in_plan); SANDBOX always, any tier for operators. A merchant account holds at most AGENT_KEYS_MAX_LIVE live keys (409 too_many_keys).`,
    }),
  ),
});

/** An account's keys, oldest first, as GET shows them (never the plaintext, never the hash). */
export async function keysOf(sql: Sql, userId: string) {
  const rows = await sql<
    { id: string; name: string; prefix: string; scopes: string[]; tier: string; plan: string | null; created_at: Date; expires_at: Date | null; revoked_at: Date | null }[]
  >`SELECT id, name, prefix, scopes, tier, plan, created_at, expires_at, revoked_at FROM agent_keys WHERE user_id = ${userId} ORDER BY created_at, id`;
  return rows.map((r) => ({
    id: r.id,
    name: r.name,
    prefix: r.prefix,
    scopes: r.scopes,
    tier: r.tier,
    plan: r.plan,
    createdAt: r.created_at.toISOString(),
    expiresAt: r.expires_at?.toISOString() ?? null,
    revokedAt: r.revoked_at?.toISOString() ?? null,
  }));
}

export function agentKeyRoutes(svc: Services) {
  return new Elysia({ name: "agent-key-routes" })
    .use(userAuth(svc))
    .post(
      "/api/v1/agent-keys",
      async ({ body, user, set }) => {
        const scopes = body.scopes === undefined ? [...DEFAULT_SCOPES] : validateScopes(body.scopes);
        const tier = normalizeTier(body.tier ?? "STARTER");
        const id = crypto.randomUUID();
        // sent for an actor host of the previous version only (it stored this); the actor now derives its own (S-6)
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
              maxLiveKeys: svc.config.AGENT_KEYS_MAX_LIVE,
            });
            set.status = 201;
            return ok({ ...created, key: key.plaintext });
          } catch (err) {
            if ((err as { code?: string }).code !== "conflict" || attempt > 2) throw err;
          }
        }
      },
      {
        ...strictJsonBody(CreateKeyBody),
        response: { 201: SuccessEnvelope(t.Composite([KeyOut, t.Object({ key: t.String({ description: "The plaintext key, shown once." }) })])), ...errorResponses(400, 401, 403, 409, 429) },
        detail: { tags: ["accounts"], summary: "Create an agent API key", security: [{ bearer: [] }] },
      },
    )
    .get(
      "/api/v1/agent-keys",
      async ({ user }) => ok(await keysOf(svc.sql, user.id)),
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
        ...noBody(),
        response: { 200: SuccessEnvelope(KeyOut), ...errorResponses(400, 401, 404, 429) },
        detail: { tags: ["accounts"], summary: "Revoke an agent key (refused at once on every gateway)", security: [{ bearer: [] }] },
      },
    );
}
