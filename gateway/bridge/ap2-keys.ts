/**
 * The AP2 user keys of an agent key: the account that owns the key registers the public key of the human's
 * device, whose signature a payment mandate's `user_authorization` must carry (ap2-auth.ts). Bearer JWT of the
 * key's owner; any other account gets 404 not_found (no oracle for other tenants' keys).
 *
 * PUT    /api/v1/agent-keys/{id}/ap2-user-keys/{kid}  {jwk}  register or replace (public P-256 or Ed25519 JWK)
 * GET    /api/v1/agent-keys/{id}/ap2-user-keys               list
 * DELETE /api/v1/agent-keys/{id}/ap2-user-keys/{kid}         remove (mandates signed by it are refused from then on)
 */
import { Elysia, t } from "elysia";
import { fail } from "../../actors/runtime/errors.ts";
import { errorResponses, ok } from "../envelope.ts";
import { userAuth, type UserPrincipal } from "../plugins/auth.ts";
import type { Services } from "../services.ts";
import { algOfPublicJwk } from "./ap2-auth.ts";

const Params = t.Object({ id: t.String({ format: "uuid" }) });
const KidParams = t.Object({ id: t.String({ format: "uuid" }), kid: t.String({ pattern: "^[A-Za-z0-9._-]{1,128}$" }) });
const sec = [{ bearer: [] }];

async function assertKeyOwner(svc: Services, id: string, user: UserPrincipal): Promise<void> {
  const rows = await svc.sql`SELECT 1 FROM agent_keys WHERE id = ${id} AND user_id = ${user.id} AND revoked_at IS NULL`;
  if (!rows.length) throw fail("not_found", "No such agent key.");
}

type Row = { kid: string; alg: string; jwk: Record<string, unknown>; created_at: Date };
const view = (id: string, r: Row) => ({ agent_key_id: id, kid: r.kid, alg: r.alg, jwk: r.jwk, created_at: r.created_at.toISOString() });

export function ap2KeyRoutes(svc: Services) {
  return new Elysia({ name: "ap2-user-key-routes" })
    .use(userAuth(svc))
    .put(
      "/api/v1/agent-keys/:id/ap2-user-keys/:kid",
      async ({ params, body, user }) => {
        await assertKeyOwner(svc, params.id, user);
        const alg = algOfPublicJwk(body.jwk);
        const { kty, crv, x, y } = body.jwk as Record<string, string>;
        const jwk = { kty, crv, x, ...(y ? { y } : {}) };
        const [r] = await svc.sql<Row[]>`
          INSERT INTO ap2_user_keys (agent_key_id, kid, alg, jwk) VALUES (${params.id}, ${params.kid}, ${alg}, ${svc.sql.json(jwk)})
          ON CONFLICT (agent_key_id, kid) DO UPDATE SET alg = EXCLUDED.alg, jwk = EXCLUDED.jwk, created_at = now()
          RETURNING kid, alg, jwk, created_at`;
        return ok(view(params.id, r));
      },
      {
        params: KidParams,
        body: t.Object({ jwk: t.Record(t.String(), t.Unknown(), { description: "Public JWK: EC P-256 (ES256) or OKP Ed25519 (EdDSA)" }) }),
        response: errorResponses(400, 401, 404),
        detail: { tags: ["accounts"], summary: "Register the user's device key that signs AP2 mandates for this agent key", security: sec },
      },
    )
    .get(
      "/api/v1/agent-keys/:id/ap2-user-keys",
      async ({ params, user }) => {
        await assertKeyOwner(svc, params.id, user);
        const rows = await svc.sql<Row[]>`SELECT kid, alg, jwk, created_at FROM ap2_user_keys WHERE agent_key_id = ${params.id} ORDER BY created_at, kid`;
        return ok(rows.map((r) => view(params.id, r)));
      },
      { params: Params, response: errorResponses(400, 401, 404), detail: { tags: ["accounts"], summary: "List the AP2 user keys of an agent key", security: sec } },
    )
    .delete(
      "/api/v1/agent-keys/:id/ap2-user-keys/:kid",
      async ({ params, user }) => {
        await assertKeyOwner(svc, params.id, user);
        const gone = await svc.sql`DELETE FROM ap2_user_keys WHERE agent_key_id = ${params.id} AND kid = ${params.kid}`;
        if (gone.count !== 1) throw fail("not_found", "No such AP2 user key.", { kid: params.kid });
        return ok({ agent_key_id: params.id, kid: params.kid, deleted: true });
      },
      { params: KidParams, response: errorResponses(400, 401, 404), detail: { tags: ["accounts"], summary: "Remove an AP2 user key", security: sec } },
    );
}
