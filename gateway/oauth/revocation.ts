/**
 * Revoking OAuth credentials (audit X-1; docs/access.md "Revoking OAuth credentials"). Access tokens are EdDSA JWTs,
 * checked by signature; what can take one out of service before its 15 minutes end is looked up on each use:
 *  - its client was deleted (`oauth_clients.deleted_at`, DELETE /api/v1/oauth/clients/{client_id});
 *  - for a client_credentials token, the client's secret was rotated since it was minted (the token's `sfp` claim,
 *    a fingerprint of the secret that minted it, no longer matches the client's);
 *  - for an authorization code flow token, its grant (refresh-token family, the `gid` claim) was revoked: by the user
 *    (DELETE /api/v1/oauth/grants/{id}), by RFC 7009 revocation of a refresh token, by reuse detection, or with its
 *    client;
 *  - the token itself was revoked (RFC 7009 on an access token: its `jti` in oauth_revoked_access_tokens until its exp).
 *  - its metadata-document client was blocked by an operator (oauth_blocked_clients, the same DELETE on its URL);
 *  - a replayed authorization code's family, for a client without refresh tokens (oauth_revoked_families).
 * One statement of a few primary-key / index probes per MCP request that carries an access token; no cache, so a
 * revocation holds on every gateway at once. A token naming a client that has no row is accepted: rows go only when no
 * access token of theirs can still be live (clients.ts deleteUnusedClients), and tokens are only ever signed here.
 */
import type { JWTPayload } from "jose";
import type { Services } from "../services.ts";
import { isMetadataDocumentId } from "./clients.ts";
import { sha256hex } from "./common.ts";

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/** How many expired rows of oauth_revoked_access_tokens each revocation deletes (the table stays ~15 minutes' worth). */
const REVOKED_SWEEP_BATCH = 100;

/**
 * The fingerprint of a client secret (by its stored hash) that a client_credentials access token carries as `sfp`: it
 * says which secret minted the token and reveals nothing of it (a hash of the 256-bit secret's hash, cut to 128 bits).
 */
export function secretFingerprint(secretHash: string): string {
  return sha256hex(`oauth-client-secret:${secretHash}`).slice(0, 32);
}

/** Why a verified access token is no longer accepted, or null when it still is. */
export type AccessTokenRevoked = "client_deleted" | "client_blocked" | "secret_rotated" | "grant_revoked" | "token_revoked";

/** The check every MCP request with a verified access token goes through (gateway/oauth/access.ts verifyMcpAccess). */
export async function accessTokenRevoked(svc: Services, clientId: string, claims: JWTPayload): Promise<AccessTokenRevoked | null> {
  const jti = typeof claims.jti === "string" ? claims.jti : "";
  const gid = typeof claims.gid === "string" && UUID.test(claims.gid) ? claims.gid : null;
  const sfp = typeof claims.sfp === "string" ? claims.sfp : null;
  const registered = !isMetadataDocumentId(clientId);
  const [row] = await svc.sql<{ deleted: boolean | null; blocked: boolean; secret_hash: string | null; token_revoked: boolean; grant_revoked: boolean }[]>`
    SELECT (SELECT deleted_at IS NOT NULL FROM oauth_clients WHERE client_id = ${registered ? clientId : ""}) AS deleted,
           ${registered ? svc.sql`false` : svc.sql`EXISTS (SELECT 1 FROM oauth_blocked_clients WHERE client_id = ${clientId})`} AS blocked,
           (SELECT secret_hash FROM oauth_clients WHERE client_id = ${registered ? clientId : ""}) AS secret_hash,
           EXISTS (SELECT 1 FROM oauth_revoked_access_tokens WHERE jti = ${jti}) AS token_revoked,
           ${
             gid
               ? svc.sql`(EXISTS (SELECT 1 FROM oauth_refresh_tokens WHERE family_id = ${gid}::uuid AND revoked_at IS NOT NULL)
                          OR EXISTS (SELECT 1 FROM oauth_revoked_families WHERE family_id = ${gid}::uuid))`
               : svc.sql`false`
           } AS grant_revoked`;
  if (!row) return null;
  if (row.deleted) return "client_deleted";
  if (row.blocked) return "client_blocked";
  if (sfp !== null && row.secret_hash !== null && sfp !== secretFingerprint(row.secret_hash)) return "secret_rotated";
  if (row.grant_revoked) return "grant_revoked";
  if (row.token_revoked) return "token_revoked";
  return null;
}

/**
 * RFC 7009 on an access token: refused from now on until its `exp` (then it is refused as expired anyway). Only the
 * client it was issued to may revoke it; another client's token, like an unknown one, is answered 200 and left alone
 * (RFC 7009 §2.2). Deletes a batch of expired rows on the way, so the table holds the revocations of the last
 * ACCESS_TOKEN_TTL_SECONDS or so.
 */
export async function revokeAccessTokenJti(svc: Services, clientId: string, jti: string, expiresAt: Date): Promise<void> {
  await svc.sql.begin(async (tx) => {
    await tx`INSERT INTO oauth_revoked_access_tokens (jti, client_id, expires_at) VALUES (${jti}, ${clientId}, ${expiresAt}) ON CONFLICT (jti) DO NOTHING`;
    await tx`DELETE FROM oauth_revoked_access_tokens WHERE jti IN (
               SELECT jti FROM oauth_revoked_access_tokens WHERE expires_at < now() LIMIT ${REVOKED_SWEEP_BATCH} FOR UPDATE SKIP LOCKED)`;
  });
}
