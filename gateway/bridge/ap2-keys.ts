/**
 * The AP2 user keys of an agent key: the account that owns the key registers the public key of the human's
 * device, whose signature a payment mandate's `user_authorization` must carry (ap2-auth.ts). Bearer JWT of the
 * key's owner; any other account gets 404 not_found (no oracle for other tenants' keys).
 *
 * PUT    /api/v1/agent-keys/{id}/ap2-user-keys/{kid}  {jwk, proof}  register or replace (public P-256 or Ed25519 JWK)
 * GET    /api/v1/agent-keys/{id}/ap2-user-keys                     list
 * DELETE /api/v1/agent-keys/{id}/ap2-user-keys/{kid}               remove (mandates signed by it are refused from then on)
 *
 * Proof of possession (audit V1): a public key is public, so registering one proves nothing. Without `proof` the PUT
 * is 400 MISSING_REQUIRED_ARGUMENT carrying a one-use server nonce (`details.nonce`, 5 minutes); `proof` is then a
 * compact JWS by the registered key itself, header {alg, typ: "ap2-key-proof+jwt"}, payload {nonce, agent_key_id,
 * kid}. The nonce makes it fresh, the agent key id and kid make it useless for any other registration. A key
 * (its RFC 7638 thumbprint) that another account holds with a proof is 409 conflict; one held by another account
 * without proof (registered before proofs) is taken from it, since this account proved the device and that one
 * never did.
 */
import { randomBytes } from "node:crypto";
import { Elysia, t } from "elysia";
import { compactVerify, decodeProtectedHeader } from "jose";
import { fail } from "../../actors/runtime/errors.ts";
import { errorResponses, ok } from "../envelope.ts";
import { userAuth, type UserPrincipal } from "../plugins/auth.ts";
import type { Services } from "../services.ts";
import { algOfPublicJwk, importUserKey, type Ap2Alg } from "./ap2-auth.ts";
import { asRecord } from "./common.ts";
import { strictJsonBody } from "../rest/strict-body.ts";
import { noBody } from "../rest/optional-body.ts";

const Params = t.Object({ id: t.String({ format: "uuid" }) });
const KidParams = t.Object({ id: t.String({ format: "uuid" }), kid: t.String({ pattern: "^[A-Za-z0-9._-]{1,128}$" }) });
const sec = [{ bearer: [] }];
export const KEY_PROOF_TYP = "ap2-key-proof+jwt";
const NONCE_TTL_MS = 5 * 60_000;
/**
 * Nonces one agent key may have outstanding; older ones are dropped (a PUT without proof is cheap to repeat). This
 * bound stays on the request path: it keeps one key from filling the table between the retention job's sweeps of
 * expired nonces (infra/retention.ts `ap2_key_nonces`, session 9), which used to run inside every challenge.
 */
const NONCES_PER_KEY = 10;

async function assertKeyOwner(svc: Services, id: string, user: UserPrincipal): Promise<void> {
  const rows = await svc.sql`SELECT 1 FROM agent_keys WHERE id = ${id} AND user_id = ${user.id} AND revoked_at IS NULL`;
  if (!rows.length) throw fail("not_found", "No such agent key.");
}

type Row = { kid: string; alg: string; jwk: Record<string, unknown>; thumbprint: string; proven_at: Date | null; created_at: Date };
const view = (id: string, r: Row) => ({
  agent_key_id: id,
  kid: r.kid,
  alg: r.alg,
  jwk: r.jwk,
  jwk_thumbprint: r.thumbprint,
  proven_at: r.proven_at?.toISOString() ?? null,
  created_at: r.created_at.toISOString(),
});

/** Issues a registration nonce for the agent key and answers 400 MISSING_REQUIRED_ARGUMENT with it. */
async function proofChallenge(svc: Services, agentKeyId: string, kid: string): Promise<never> {
  const nonce = randomBytes(32).toString("base64url");
  // The database's clock sets and checks the expiry, so gateways with skewed clocks agree.
  const expiresAt = await svc.sql.begin(async (tx) => {
    await tx`DELETE FROM ap2_key_nonces WHERE agent_key_id = ${agentKeyId} AND nonce NOT IN (
      SELECT nonce FROM ap2_key_nonces WHERE agent_key_id = ${agentKeyId} ORDER BY expires_at DESC LIMIT ${NONCES_PER_KEY - 1})`;
    const [row] = await tx<{ expires_at: Date }[]>`
      INSERT INTO ap2_key_nonces (nonce, agent_key_id, expires_at) VALUES (${nonce}, ${agentKeyId}, now() + ${NONCE_TTL_MS} * interval '1 millisecond')
      RETURNING expires_at`;
    return row!.expires_at;
  });
  throw fail("MISSING_REQUIRED_ARGUMENT", `proof is required: a compact JWS by this key, typ ${KEY_PROOF_TYP}, over details.proof_payload.`, {
    field: "proof",
    nonce,
    nonce_expires_at: expiresAt.toISOString(),
    proof_typ: KEY_PROOF_TYP,
    proof_payload: { nonce, agent_key_id: agentKeyId, kid },
  });
}

/** 32 bytes (a P-256 coordinate, an Ed25519 key) spelled the one way: 43 unpadded base64url characters. */
const COORDINATE = /^[A-Za-z0-9_-]{43}$/;

/**
 * The key in its one spelling, or 400 INVALID_ARGUMENT (review RV-2). A JWK thumbprint hashes the coordinates as
 * text, and one key has several texts that import and verify: `=` padding, the 2 unused bits of the last character,
 * and for P-256 leading zero bytes (the coordinate is read as an integer). Each had its own thumbprint, so the same
 * key registered twice claimed one mandate twice. RFC 7518 §6.2.1.2 and RFC 8037 §2 fix one spelling (the curve's
 * full 32 bytes, unpadded base64url), which every JOSE library writes; any other is refused rather than rewritten,
 * so what is stored and shown is what the client sent. Only kty, crv and the coordinates are kept (no private
 * member: refused; others such as kid or use: dropped), and the point must be one of its curve (importUserKey).
 */
async function canonicalUserKey(raw: Record<string, unknown>): Promise<{ alg: Ap2Alg; jwk: Record<string, string> }> {
  const alg = algOfPublicJwk(raw);
  const members = alg === "ES256" ? (["x", "y"] as const) : (["x"] as const);
  for (const m of members) {
    const v = raw[m] as string;
    if (!COORDINATE.test(v) || Buffer.from(v, "base64url").toString("base64url") !== v) {
      throw fail("INVALID_ARGUMENT", `jwk.${m} must be the key's 32 bytes as unpadded base64url, 43 characters, leading zeros kept (RFC 7518 §6.2.1.2, RFC 8037 §2).`, {
        field: `jwk.${m}`,
        reason: "non_canonical",
      });
    }
  }
  const jwk: Record<string, string> = alg === "ES256" ? { kty: "EC", crv: "P-256", x: raw.x as string, y: raw.y as string } : { kty: "OKP", crv: "Ed25519", x: raw.x as string };
  try {
    await importUserKey(jwk, alg);
  } catch {
    throw fail("INVALID_ARGUMENT", "jwk is not a public key of its curve.", { field: "jwk", reason: "invalid_key" });
  }
  return { alg, jwk };
}

const badProof = (reason: string, message: string) => fail("INVALID_ARGUMENT", message, { field: "proof", reason });

/** The proof's nonce once its signature by `jwk` and its agent key id and kid are right (the nonce is not yet used). */
async function verifiedProofNonce(proof: string, jwk: Record<string, string>, alg: Ap2Alg, agentKeyId: string, kid: string): Promise<string> {
  let header: ReturnType<typeof decodeProtectedHeader>;
  try {
    header = decodeProtectedHeader(proof);
  } catch {
    throw badProof("malformed", "proof must be a compact JWS.");
  }
  if (header.typ !== KEY_PROOF_TYP || header.alg !== alg) throw badProof("malformed", `proof needs typ ${KEY_PROOF_TYP} and alg ${alg} (the registered key's).`);
  let payload: Record<string, unknown>;
  try {
    const { payload: raw } = await compactVerify(proof, await importUserKey(jwk, alg), { algorithms: [alg] });
    payload = asRecord(JSON.parse(new TextDecoder().decode(raw)));
  } catch {
    throw badProof("signature", "proof's signature does not verify with the key being registered.");
  }
  if (payload.agent_key_id !== agentKeyId || payload.kid !== kid) throw badProof("binding", "proof is for another agent key or kid (payload agent_key_id and kid).");
  if (typeof payload.nonce !== "string") throw badProof("nonce", "proof's payload needs the nonce the server issued.");
  return payload.nonce;
}

/**
 * PUT's body, also its strict check (`strictJsonBody`): a key beside `jwk` and `proof` is 400 naming it (a misspelt `proof` was dropped and
 * answered with a new nonce challenge; audit W-7). The JWK's own members are the JWK's (a record, not looked into).
 */
const UserKeyBody = t.Object({
  jwk: t.Record(t.String(), t.Unknown(), { description: "Public JWK: EC P-256 (ES256) or OKP Ed25519 (EdDSA)" }),
  proof: t.Optional(
    t.String({ maxLength: 16_384, description: `Compact JWS by this key, typ ${KEY_PROOF_TYP}, payload {nonce, agent_key_id, kid}; omit it to get a nonce (400 details.nonce)` }),
  ),
});

export function ap2KeyRoutes(svc: Services) {
  return new Elysia({ name: "ap2-user-key-routes" })
    .use(userAuth(svc))
    .put(
      "/api/v1/agent-keys/:id/ap2-user-keys/:kid",
      async ({ params, body, user }) => {
        await assertKeyOwner(svc, params.id, user);
        const { alg, jwk } = await canonicalUserKey(body.jwk);
        if (body.proof === undefined) return proofChallenge(svc, params.id, params.kid);
        const nonce = await verifiedProofNonce(body.proof, jwk, alg, params.id, params.kid);
        const r = await svc.sql.begin(async (tx) => {
          const used = await tx`DELETE FROM ap2_key_nonces WHERE nonce = ${nonce} AND agent_key_id = ${params.id} AND expires_at > now() RETURNING 1`;
          if (used.length === 0) throw badProof("nonce", "proof's nonce is unknown, used or expired: send the PUT without proof for a new one.");
          const [{ thumbprint }] = await tx<{ thumbprint: string }[]>`SELECT ap2_jwk_thumbprint(${tx.json(jwk)}::jsonb) AS thumbprint`;
          // One registration of a key at a time, so two accounts cannot both pass the check below.
          await tx`SELECT pg_advisory_xact_lock(hashtextextended(${`ap2_user_key:${thumbprint}`}, 0))`;
          const held = await tx<{ proven: boolean }[]>`
            SELECT u.proven_at IS NOT NULL AS proven FROM ap2_user_keys u JOIN agent_keys k ON k.id = u.agent_key_id
            WHERE u.thumbprint = ${thumbprint} AND k.user_id <> ${user.id} AND k.revoked_at IS NULL`;
          if (held.some((h) => h.proven)) {
            throw fail("conflict", "This key is registered by another account; a user key belongs to one account.", {
              field: "jwk",
              reason: "user_key_registered_by_another_account",
              jwk_thumbprint: thumbprint,
            });
          }
          const taken = await tx`
            DELETE FROM ap2_user_keys u USING agent_keys k
            WHERE k.id = u.agent_key_id AND u.thumbprint = ${thumbprint} AND k.user_id <> ${user.id} AND u.proven_at IS NULL`;
          if (taken.count > 0) svc.log.info("ap2 user key taken from unproven registrations of another account", { agentKeyId: params.id, removed: taken.count });
          const [row] = await tx<Row[]>`
            INSERT INTO ap2_user_keys (agent_key_id, kid, alg, jwk, proven_at) VALUES (${params.id}, ${params.kid}, ${alg}, ${tx.json(jwk)}, now())
            ON CONFLICT (agent_key_id, kid) DO UPDATE SET alg = EXCLUDED.alg, jwk = EXCLUDED.jwk, proven_at = EXCLUDED.proven_at, created_at = now()
            RETURNING kid, alg, jwk, thumbprint, proven_at, created_at`;
          return row!;
        });
        return ok(view(params.id, r));
      },
      {
        params: KidParams,
        ...strictJsonBody(UserKeyBody),
        response: errorResponses(400, 401, 404),
        detail: { tags: ["accounts"], summary: "Register the user's device key that signs AP2 mandates for this agent key (with a proof of possession)", security: sec },
      },
    )
    .get(
      "/api/v1/agent-keys/:id/ap2-user-keys",
      async ({ params, user }) => {
        await assertKeyOwner(svc, params.id, user);
        const rows = await svc.sql<Row[]>`SELECT kid, alg, jwk, thumbprint, proven_at, created_at FROM ap2_user_keys WHERE agent_key_id = ${params.id} ORDER BY created_at, kid`;
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
      { ...noBody(), params: KidParams, response: errorResponses(400, 401, 404), detail: { tags: ["accounts"], summary: "Remove an AP2 user key", security: sec } },
    );
}
