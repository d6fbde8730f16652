/**
 * AP2 `user_authorization`: proof that the human behind an agent key approved exactly this payment mandate.
 *
 * AP2 describes it as a verifiable presentation whose key-binding JWT, signed by the user's device key, carries
 * `transaction_data`: the secure hashes of the CartMandate and the PaymentMandateContents. We verify that part
 * with a key we can trust without a credential issuer: the device's public JWK is registered for the agent key by
 * the account that owns the key, with a proof that it holds the private key (PUT
 * /api/v1/agent-keys/{id}/ap2-user-keys/{kid}, ap2-keys.ts). The format:
 *
 *   compact JWS, protected header {alg: "ES256" | "EdDSA", kid, typ: "kb+jwt"},
 *   payload {iat, exp?, aud?: "ap2", transaction_data: [h(PaymentMandateContents), h(CartMandate) when a
 *            cart_mandate is sent, h(IntentMandate) when an intent_mandate is sent]},  h = b64url(sha256(canonical))
 *
 * The set must match exactly: a presented cart or intent mandate must be signed, and every signed hash must belong
 * to a presented part (an agent cannot drop the signed mandate that carries the user's expiry or payees). AP2 does
 * not fix the order of `transaction_data`, so a hash says nothing about the role its part was signed in; the role
 * comes from the part's shape, checked before this runs (ap2.ts `parseAp2`: an intent mandate with a cart
 * mandate's members, or the reverse, is 400), so a signed part cannot change roles to escape its expiry.
 *
 * Canonical JSON = keys sorted at every depth, no spaces (actors/cart/state-hash.ts `canonicalJson`), so a
 * changed amount, token, payee or expiry changes the hash. Any failure is 401 AGENT_TOKEN_INVALID with
 * `details.reason`: malformed | unknown_key | signature | not_yet_valid | expired | mandate_mismatch |
 * cart_mandate_mismatch | intent_mandate_mismatch | signed_part_missing. A mandate belongs to the first agent key
 * whose payment with it goes ahead (`claimMandate`, from common.ts `bindMandate`); another key presenting it is 403
 * MANDATE_LIMIT_EXCEEDED.
 */
import { createHash } from "node:crypto";
import { compactVerify, decodeProtectedHeader, importJWK, type JWK } from "jose";
import { canonicalJson } from "../../actors/cart/state-hash.ts";
import { fail } from "../../actors/runtime/errors.ts";
import type { Sql, TxSql } from "../../infra/db.ts";
import { ap2BindingId, asRecord } from "./common.ts";

export const AP2_ALGS = ["ES256", "EdDSA"] as const;
export type Ap2Alg = (typeof AP2_ALGS)[number];
/** A clock skew we forgive on `iat`. */
const SKEW_S = 60;

/** base64url(sha256(canonical JSON)) of one mandate part, as it goes into `transaction_data`. */
export function mandateHash(part: unknown): string {
  return createHash("sha256").update(canonicalJson(part)).digest("base64url");
}

/** The algorithm a public JWK is used with, or an INVALID_ARGUMENT naming what is wrong with it. */
export function algOfPublicJwk(jwk: unknown): Ap2Alg {
  const k = asRecord(jwk);
  if ("d" in k || "p" in k || "q" in k) throw fail("INVALID_ARGUMENT", "Register the public key only (no private members).", { field: "jwk.d" });
  if (k.kty === "EC" && k.crv === "P-256" && typeof k.x === "string" && typeof k.y === "string") return "ES256";
  if (k.kty === "OKP" && k.crv === "Ed25519" && typeof k.x === "string") return "EdDSA";
  throw fail("INVALID_ARGUMENT", "jwk must be a public P-256 (ES256) or Ed25519 (EdDSA) key.", { field: "jwk" });
}

const P256_P = 0xffffffff00000001000000000000000000000000ffffffffffffffffffffffffn;
const P256_B = 0x5ac635d8aa3a93e7b3ebbd55769886bc651d06b0cc53b0f63bce3c3e27d2604bn;
const coordinate = (v: unknown) => (typeof v === "string" ? BigInt(`0x0${Buffer.from(v, "base64url").toString("hex")}`) : -1n);

/** Whether (x, y) is a point of P-256: y² = x³ - 3x + b (mod p), both coordinates below p. */
function onP256(jwk: JWK): boolean {
  const [x, y] = [coordinate(jwk.x), coordinate(jwk.y)];
  if (x < 0n || y < 0n || x >= P256_P || y >= P256_P) return false;
  return (((y * y - (x * x * x - 3n * x + P256_B)) % P256_P) + P256_P) % P256_P === 0n;
}

/**
 * A user key as WebCrypto takes it, or an error. A P-256 point off the curve is refused here rather than by the
 * import: Bun's import of one fails but leaves BoringSSL's error queue set, and the process's next keyed hash (the
 * HMAC of the next agent key authenticated, actors/agent/keys.ts) then throws that error, a 500 for another request.
 */
export async function importUserKey(jwk: JWK, alg: Ap2Alg): Promise<Awaited<ReturnType<typeof importJWK>>> {
  if (alg === "ES256" && !onP256(jwk)) throw new Error("not a point of P-256");
  return importJWK(jwk, alg);
}

const invalid = (reason: string, message: string, extra: Record<string, unknown> = {}) =>
  fail("AGENT_TOKEN_INVALID", message, { reason, field: "payment_mandate.user_authorization", ...extra });

/**
 * Verifies the mandate's `user_authorization` against the keys registered for this agent key and returns its signer
 * (the key's thumbprint). Throws AGENT_TOKEN_INVALID (details.reason) unless it is a valid signature by a registered
 * key over this mandate, and MANDATE_LIMIT_EXCEEDED when another agent key already holds the mandate. It claims
 * nothing: index.ts `ap2Pay` hands the signer to bindMandate, which claims the mandate once the payment goes ahead
 * (RV-3).
 *
 * `until` (returned): the last instant this presentation could pay a cart, the first of the mandate's signed expiries
 * (`mandateExpiresAt`, from its intent and cart mandates, and the authorization's `exp`, after which it is refused here
 * before anything else is read); null when it has none. Every presentation whose signature verifies moves the
 * mandate's existing claim (whoever holds it) and this agent key's binding to it, if later (`extendMandateRows`),
 * before the refusal of another key's mandate: the rows refuse what this signature could still pay, so they must
 * outlive it (infra/retention.ts deletes them a grace after the recorded instant; a second agent key must not take a
 * mandate whose first signature's rows went while a later signature of it lives).
 */
export async function verifyUserAuthorization(
  sql: Sql,
  agentKeyId: string,
  body: unknown,
  now: number,
  mandateExpiresAt: number | null,
): Promise<{ thumbprint: string; until: number | null }> {
  const b = asRecord(body);
  const pm = asRecord(b.payment_mandate);
  const jws = pm.user_authorization;
  if (typeof jws !== "string" || !/^[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+$/.test(jws) || jws.length > 16_384) {
    throw invalid("malformed", "user_authorization must be a compact JWS signed by the user's registered key.");
  }
  let header: ReturnType<typeof decodeProtectedHeader>;
  try {
    header = decodeProtectedHeader(jws);
  } catch {
    throw invalid("malformed", "user_authorization has an unreadable header.");
  }
  if (typeof header.kid !== "string" || !AP2_ALGS.includes(header.alg as Ap2Alg)) {
    throw invalid("malformed", "user_authorization needs a kid and alg ES256 or EdDSA.");
  }
  const [row] = await sql<{ alg: Ap2Alg; jwk: JWK; thumbprint: string }[]>`
    SELECT alg, jwk, thumbprint FROM ap2_user_keys WHERE agent_key_id = ${agentKeyId} AND kid = ${header.kid}`;
  if (!row) throw invalid("unknown_key", "No user key with this kid is registered for your agent key.");
  if (row.alg !== header.alg) throw invalid("signature", "user_authorization is not signed with the registered key's algorithm.");
  let payload: Record<string, unknown>;
  try {
    const key = await importUserKey(row.jwk, row.alg);
    const { payload: raw } = await compactVerify(jws, key, { algorithms: [row.alg] });
    payload = asRecord(JSON.parse(new TextDecoder().decode(raw)));
  } catch {
    throw invalid("signature", "user_authorization's signature does not verify with the registered key.");
  }
  const nowS = Math.floor(now / 1000);
  if (typeof payload.iat !== "number") throw invalid("malformed", "user_authorization needs an iat.");
  if (payload.iat > nowS + SKEW_S) throw invalid("not_yet_valid", "user_authorization is issued in the future.");
  if (typeof payload.exp === "number" && nowS >= payload.exp) throw invalid("expired", "user_authorization has expired.");
  const signed = Array.isArray(payload.transaction_data) ? payload.transaction_data.filter((x): x is string => typeof x === "string") : [];
  if (!signed.includes(mandateHash(pm.payment_mandate_contents ?? null))) {
    throw invalid("mandate_mismatch", "user_authorization does not sign this payment mandate (its contents changed after the user signed).");
  }
  // Every presented part is signed, and every signed part is presented: the limits the user set (the expiries, the
  // payees of the intent) live in the cart and intent mandates, so an agent that left a signed one out would pay
  // outside them, and an unsigned one would set limits the user never saw (an intent's `merchants` widens payees).
  const presented: { part: "cart_mandate" | "intent_mandate"; hash: string | null }[] = [
    { part: "cart_mandate", hash: b.cart_mandate !== undefined ? mandateHash(b.cart_mandate) : null },
    { part: "intent_mandate", hash: b.intent_mandate !== undefined ? mandateHash(b.intent_mandate) : null },
  ];
  for (const { part, hash } of presented) {
    if (hash !== null && !signed.includes(hash)) throw invalid(`${part}_mismatch`, `user_authorization does not sign this ${part.replace("_", " ")}.`);
  }
  const known = new Set([mandateHash(pm.payment_mandate_contents ?? null), ...presented.flatMap((p) => (p.hash === null ? [] : [p.hash]))]);
  const unmatched = signed.filter((h) => !known.has(h));
  if (unmatched.length > 0) {
    const absent = presented.filter((p) => p.hash === null).map((p) => p.part);
    throw invalid("signed_part_missing", `user_authorization signs ${unmatched.length} mandate part(s) that were not presented; send the signed ${absent.join(" / ") || "parts"} unchanged.`, {
      unmatched_hashes: unmatched.length,
      absent_parts: absent,
    });
  }
  const mandateId = asRecord(pm.payment_mandate_contents).payment_mandate_id;
  if (typeof mandateId !== "string") throw invalid("malformed", "payment_mandate_id must be a string.");
  const expiries = [mandateExpiresAt, typeof payload.exp === "number" ? payload.exp * 1000 : null].filter((t): t is number => t !== null);
  const until = expiries.length ? Math.min(...expiries) : null;
  await extendMandateRows(sql, row.thumbprint, mandateId, agentKeyId, until);
  // Refused here already when another key holds it, before the cart is read; taken only by bindMandate (below).
  await refuseHeldByAnother(sql, row.thumbprint, mandateId, agentKeyId);
  return { thumbprint: row.thumbprint, until };
}

/**
 * A signed mandate belongs to the agent key whose payment with it went ahead first (audit V1): called by common.ts
 * `bindMandate` in the transaction that binds the mandate to the cart, so after the cart was found and inside the
 * mandate's limits (review RV-3: a claim taken at verification let any key holding the user's key lock the mandate
 * away from the agent the user signed for by presenting it with a cart that 404s). The cart binding is per agent
 * key, and the user's key may be registered on several agent keys (and, before proofs, on several accounts): without
 * this, each of them paid one more cart with the same mandate. The mandate is named by its id within its signer's key
 * (the canonical JWK thumbprint, migration 0080), so another user's mandate with an equal id is its own. The
 * refusal names neither the other key nor its cart.
 *
 * `until` (ms) is the last instant this presentation of the mandate could be accepted (index.ts `ap2Pay`; null: it has
 * no expiry, stored as 'infinity'): the retention job deletes the claim a grace after it (migration 0087). The
 * holder's later presentation with a later expiry moves it later; a claim recorded before 0087 (NULL) stays unrecorded.
 */
export async function claimMandate(tx: TxSql, agentKeyId: string, mandateId: string, thumbprint: string, until: number | null): Promise<void> {
  await tx`
    INSERT INTO ap2_mandate_agents AS a (thumbprint, payment_mandate_id, agent_key_id, expires_at)
    VALUES (${thumbprint}, ${mandateId}, ${agentKeyId}, COALESCE(${until === null ? null : new Date(until)}::timestamptz, 'infinity'))
    ON CONFLICT (thumbprint, payment_mandate_id) DO UPDATE SET expires_at = CASE WHEN a.expires_at IS NULL THEN NULL ELSE GREATEST(a.expires_at, EXCLUDED.expires_at) END
    WHERE a.agent_key_id = EXCLUDED.agent_key_id`;
  await refuseHeldByAnother(tx, thumbprint, mandateId, agentKeyId);
}

/**
 * Moves the recorded acceptance instant (migration 0087) of the mandate's claim, of `agentKeyId`'s binding and of the
 * claim holder's binding to `until` (null: no expiry, 'infinity') when that is later; never earlier, never a row
 * recorded before 0087 (NULL), never creates a row. Writes nothing in the usual case (the instant is already as late).
 * The holder's binding too (review V1-2): when another agent key presents a later signature, it is refused, but the
 * holder has now seen that signature, and only its binding refuses it for a second cart; left at the first signature's
 * instant, the job deleted it while the later signature lived, and the holder paid another cart with it.
 * Autocommit statements, none waiting for a lock while holding another (bindMandate takes the binding, then the claim);
 * the bindings' update locks its rows in primary-key order (the index scan sorts the ids).
 */
async function extendMandateRows(sql: Sql, thumbprint: string, mandateId: string, agentKeyId: string, until: number | null): Promise<void> {
  const at = sql`COALESCE(${until === null ? null : new Date(until)}::timestamptz, 'infinity')`;
  const [claim] = await sql<{ holder: string }[]>`
    WITH moved AS (UPDATE ap2_mandate_agents SET expires_at = ${at}
      WHERE thumbprint = ${thumbprint} AND payment_mandate_id = ${mandateId} AND expires_at < ${at})
    SELECT agent_key_id AS holder FROM ap2_mandate_agents WHERE thumbprint = ${thumbprint} AND payment_mandate_id = ${mandateId}`;
  const ids = [...new Set([agentKeyId, claim?.holder ?? agentKeyId])].map((k) => ap2BindingId(k, mandateId));
  await sql`UPDATE bridge_sessions SET mandate_expires_at = ${at}
    WHERE id = ANY(${ids}::text[]) AND protocol = 'ap2' AND mandate_expires_at < ${at}`;
}

/** 403 MANDATE_LIMIT_EXCEEDED when another agent key holds the mandate. */
async function refuseHeldByAnother(sql: Sql | TxSql, thumbprint: string, mandateId: string, agentKeyId: string): Promise<void> {
  const held = await sql`
    SELECT 1 FROM ap2_mandate_agents WHERE thumbprint = ${thumbprint} AND payment_mandate_id = ${mandateId} AND agent_key_id <> ${agentKeyId} LIMIT 1`;
  if (held.length > 0) {
    throw fail("MANDATE_LIMIT_EXCEEDED", "This payment mandate was presented by another agent key; a mandate pays one cart.", {
      violated: "cart",
      reason: "presented_by_another_agent_key",
      mandate: { payment_mandate_id: mandateId },
    });
  }
}
