/**
 * The token side of the authorization server: issuing EdDSA access tokens (RFC 9068, audience = the store's MCP
 * resource), opaque refresh tokens rotated on every use with reuse detection, and single-use authorization codes.
 * Spending a code or refresh token is a conditional SQL statement (`... WHERE used_at IS NULL RETURNING`), so two
 * gateways racing on the same code or refresh token cannot both win; the refresh token it yields is written in the
 * same transaction, so the loser, whose UPDATE waits on the winner's row lock, revokes a family that already holds
 * the winner's token (review R2 J-2). A code or refresh token is spent only once the whole request has been found
 * valid: a refused token request changes nothing (docs/access.md).
 */
import type { TxSql } from "../../infra/db.ts";
import { tokenService } from "../identity.ts";
import type { Services } from "../services.ts";
import {
  ACCESS_TOKEN_TTL_SECONDS,
  ACCESS_TOKEN_TYP,
  CODE_TTL_SECONDS,
  OAuthError,
  randomSecret,
  REFRESH_FAMILY_MAX_SECONDS,
  REFRESH_TOKEN_TTL_SECONDS,
  sha256hex,
} from "./common.ts";
import { secretFingerprint } from "./revocation.ts";

export interface TokenResponse {
  access_token: string;
  token_type: "Bearer";
  expires_in: number;
  scope: string;
  refresh_token?: string;
}

export interface Grant {
  clientId: string;
  userId: string;
  scopes: string[];
  resource: string;
  /**
   * Set for the client_credentials grant only: the token then carries `gty`, the agent trust signal (`authMethod`:
   * the method the client used, which is the one it registered) and `sfp`, the fingerprint of the secret that minted
   * it (revocation.ts: a rotated secret's tokens are refused). The token endpoint always gives `secretHash`; a token
   * without `sfp` (minted before it existed, or by a test for a client with no row) is not tied to a secret.
   */
  machine?: { authMethod: "client_secret_basic" | "client_secret_post"; secretHash?: string };
  /** The refresh-token family (the user's grant) the token belongs to, authorization code flow only: its `gid` claim. */
  familyId?: string;
}

/** `gty` of an access token issued to a machine-to-machine client (client_credentials). */
export const CLIENT_CREDENTIALS_GTY = "client_credentials";

/**
 * The agent trust signal (spec, Authentication 1: a real merchant's checkout bucket demands OAuth 2.0
 * machine-to-machine credentials, a payment mandate and an agent trust signal; its form is left open). Ours is a
 * claim the authorization server signs into a client_credentials access token: what the platform itself
 * established about the calling agent — it authenticated with a client secret, and the client was registered by a
 * signed-in platform user who answers for it. A bearer cannot add or alter it; docs/access.md describes it.
 */
export interface AgentTrustSignal {
  v: 1;
  /** How the client proved its identity at the token endpoint (never "none"). */
  client_auth: "client_secret_basic" | "client_secret_post";
  /** The client was registered by a platform user (the token's `sub`), who is accountable for it. */
  accountable_owner: true;
}

export function isAgentTrustSignal(v: unknown): v is AgentTrustSignal {
  const o = v as Partial<AgentTrustSignal> | null;
  return !!o && typeof o === "object" && o.v === 1 && (o.client_auth === "client_secret_basic" || o.client_auth === "client_secret_post") && o.accountable_owner === true;
}

export async function issueAccessToken(svc: Services, g: Grant): Promise<string> {
  const tokens = await tokenService(svc);
  return tokens.issueToken({
    sub: g.userId,
    aud: g.resource,
    scope: g.scopes,
    ttlSeconds: ACCESS_TOKEN_TTL_SECONDS,
    typ: ACCESS_TOKEN_TYP,
    extra: g.machine
      ? {
          client_id: g.clientId,
          gty: CLIENT_CREDENTIALS_GTY,
          agent_trust: { v: 1, client_auth: g.machine.authMethod, accountable_owner: true } satisfies AgentTrustSignal,
          ...(g.machine.secretHash ? { sfp: secretFingerprint(g.machine.secretHash) } : {}),
        }
      : { client_id: g.clientId, ...(g.familyId ? { gid: g.familyId } : {}) },
  });
}

/**
 * Writes a refresh token, inside the transaction that spent the code or refresh token it comes from. It lasts
 * REFRESH_TOKEN_TTL_SECONDS, but never past its family's end (`familyEnd`, REFRESH_FAMILY_MAX_SECONDS after the code).
 */
async function newRefreshToken(svc: Services, tx: TxSql, g: Grant, familyId: string, familyEnd: Date): Promise<string> {
  const token = randomSecret("rt_");
  const expires = new Date(Math.min(svc.clock.now() + REFRESH_TOKEN_TTL_SECONDS * 1000, familyEnd.getTime()));
  await tx`INSERT INTO oauth_refresh_tokens (token_hash, family_id, client_id, user_id, scopes, resource, expires_at, family_expires_at)
           VALUES (${sha256hex(token)}, ${familyId}, ${g.clientId}, ${g.userId}, ${g.scopes}, ${g.resource}, ${expires}, ${familyEnd})`;
  return token;
}

/** The token response: a fresh access token, and the refresh token already written when the grant spent something. */
export async function tokenResponse(svc: Services, g: Grant, refreshToken?: string): Promise<TokenResponse> {
  const access = await issueAccessToken(svc, g);
  const out: TokenResponse = { access_token: access, token_type: "Bearer", expires_in: ACCESS_TOKEN_TTL_SECONDS, scope: g.scopes.join(" ") };
  if (refreshToken) out.refresh_token = refreshToken;
  return out;
}

/** Longest chain of concurrent rotations one revocation follows (each round is one UPDATE; two is the usual). */
const REVOKE_ROUNDS = 8;

/**
 * Revokes every refresh token of a family. Repeated until a round finds nothing: a rotation that held a token's row
 * lock while the UPDATE ran commits its new token after the UPDATE's snapshot, and the next round revokes it
 * (a rotation that has not locked its token yet finds it revoked and spends nothing).
 */
export async function revokeFamily(svc: Services, familyId: string): Promise<void> {
  for (let round = 0; round < REVOKE_ROUNDS; round++) {
    const hit = await svc.sql`UPDATE oauth_refresh_tokens SET revoked_at = now() WHERE family_id = ${familyId} AND revoked_at IS NULL`;
    if (hit.count === 0) return;
  }
}

/** How many expired rows of oauth_revoked_families each replay deletes (the table stays ~15 minutes' worth). */
const REVOKED_FAMILY_SWEEP_BATCH = 100;

/**
 * A replayed code's family: its refresh tokens revoked (revokeFamily), and the family itself marked revoked for as
 * long as an access token of it can live (oauth_revoked_families). A client registered without the refresh_token
 * grant has no refresh-token row the per-request check could find revoked (review R2-2), and the access token the
 * code gave must stop all the same (OAuth 2.1 §4.1.3; docs/access.md). Deletes a batch of expired marks on the way.
 */
async function revokeReplayedFamily(svc: Services, familyId: string): Promise<void> {
  await svc.sql.begin(async (tx) => {
    await tx`INSERT INTO oauth_revoked_families (family_id, expires_at)
             VALUES (${familyId}, ${new Date(svc.clock.now() + ACCESS_TOKEN_TTL_SECONDS * 1000)}) ON CONFLICT (family_id) DO NOTHING`;
    await tx`DELETE FROM oauth_revoked_families WHERE family_id IN (
               SELECT family_id FROM oauth_revoked_families WHERE expires_at < now() LIMIT ${REVOKED_FAMILY_SWEEP_BATCH} FOR UPDATE SKIP LOCKED)`;
  });
  await revokeFamily(svc, familyId);
}

export async function createCode(svc: Services, g: Grant & { redirectUri: string; codeChallenge: string }): Promise<string> {
  const code = randomSecret("ac_");
  const expires = new Date(svc.clock.now() + CODE_TTL_SECONDS * 1000);
  await svc.sql`INSERT INTO oauth_codes (code_hash, client_id, user_id, redirect_uri, code_challenge, scopes, resource, family_id, expires_at)
                VALUES (${sha256hex(code)}, ${g.clientId}, ${g.userId}, ${g.redirectUri}, ${g.codeChallenge}, ${g.scopes},
                        ${g.resource}, ${crypto.randomUUID()}, ${expires})`;
  return code;
}

export interface RedeemedCode extends Grant {
  redirectUri: string;
  codeChallenge: string;
  familyId: string;
  /** Written with the spending of the code when the caller asked for one. */
  refreshToken?: string;
}

const CODE_REFUSED = "authorization code is invalid, expired or already used";
const REFRESH_REFUSED = "refresh token is invalid, expired, revoked or already used";

/**
 * Redeems a code for `clientId`: marks it used and returns it. A refused request changes nothing (RFC 6749 §5.2):
 * `check` sees the stored code first (redirect URI, PKCE, resource) and throws to refuse, and a code presented by
 * a client it was not issued to is refused without being touched, so holding someone else's code (useless without
 * its PKCE verifier) is not enough to burn it. A code its own client presents a second time is refused and the
 * tokens it already produced are revoked (OAuth 2.1 §4.1.3: a replayed code means it leaked). The spending UPDATE
 * repeats `used_at IS NULL` and the client, so two gateways racing on the same code cannot both win, and it writes
 * the refresh token (`withRefresh`) in its transaction: a concurrent replay waits for it and then revokes it too.
 */
export async function redeemCode(
  svc: Services,
  code: string,
  clientId: string,
  check: (code: RedeemedCode) => void = () => {},
  withRefresh = false,
): Promise<RedeemedCode> {
  const hash = sha256hex(code);
  const now = new Date(svc.clock.now());
  const rows = await svc.sql<
    { client_id: string; user_id: string; redirect_uri: string; code_challenge: string; scopes: string[]; resource: string; family_id: string; expires_at: Date; used_at: Date | null }[]
  >`SELECT client_id, user_id, redirect_uri, code_challenge, scopes, resource, family_id, expires_at, used_at FROM oauth_codes WHERE code_hash = ${hash}`;
  const r = rows[0];
  if (!r || r.client_id !== clientId) throw new OAuthError("invalid_grant", CODE_REFUSED);
  if (r.used_at) {
    await revokeReplayedFamily(svc, r.family_id);
    throw new OAuthError("invalid_grant", CODE_REFUSED);
  }
  if (r.expires_at.getTime() <= now.getTime()) throw new OAuthError("invalid_grant", CODE_REFUSED);
  const redeemed: RedeemedCode = {
    clientId: r.client_id,
    userId: r.user_id,
    redirectUri: r.redirect_uri,
    codeChallenge: r.code_challenge,
    scopes: r.scopes,
    resource: r.resource,
    familyId: r.family_id,
  };
  check(redeemed);
  const won = await svc.sql.begin(async (tx) => {
    const spent = await tx`
      UPDATE oauth_codes SET used_at = ${now} WHERE code_hash = ${hash} AND used_at IS NULL AND client_id = ${clientId} RETURNING family_id`;
    if (!spent[0]) return false;
    if (withRefresh) redeemed.refreshToken = await newRefreshToken(svc, tx, redeemed, redeemed.familyId, new Date(now.getTime() + REFRESH_FAMILY_MAX_SECONDS * 1000));
    return true;
  });
  if (!won) {
    // another redemption of the same code won meanwhile (its transaction, refresh token included, has committed:
    // this UPDATE waited on its row lock): a replay
    await revokeReplayedFamily(svc, r.family_id);
    throw new OAuthError("invalid_grant", CODE_REFUSED);
  }
  return redeemed;
}

/**
 * Rotates a refresh token: the presented one is spent and a new one of the same family is issued, in one
 * transaction. `next` sees the token's grant before anything is spent (requested scope, resource), throws to
 * refuse and returns the grant of the new access token (its scopes may be fewer: the new refresh token keeps the
 * spent one's, RFC 6749 §6): a refused request leaves the token usable, so the client's next, correct refresh is
 * not taken for a replay. A token that was already spent (or belongs to a revoked family)
 * revokes the whole family: either the client or an attacker holds a stale copy, and the server cannot tell which.
 */
export async function rotateRefreshToken(
  svc: Services,
  token: string,
  clientId: string,
  next: (prior: Grant & { familyId: string }) => Grant = (prior) => prior,
): Promise<{ grant: Grant; refreshToken: string }> {
  const hash = sha256hex(token);
  const now = new Date(svc.clock.now());
  const rows = await svc.sql<
    { family_id: string; client_id: string; user_id: string; scopes: string[]; resource: string; expires_at: Date; family_expires_at: Date | null }[]
  >`
    SELECT family_id, client_id, user_id, scopes, resource, expires_at, family_expires_at FROM oauth_refresh_tokens
    WHERE token_hash = ${hash} AND used_at IS NULL AND revoked_at IS NULL AND client_id = ${clientId}`;
  const r = rows[0];
  if (r) {
    if (r.expires_at.getTime() <= now.getTime()) throw new OAuthError("invalid_grant", REFRESH_REFUSED);
    const prior = { familyId: r.family_id, clientId: r.client_id, userId: r.user_id, scopes: r.scopes, resource: r.resource };
    const grant = next(prior);
    // the same conditions again: of two requests racing on one token only one spends it, the other is a reuse
    const rotated = await svc.sql.begin(async (tx) => {
      const spent = await tx`
        UPDATE oauth_refresh_tokens SET used_at = ${now}
        WHERE token_hash = ${hash} AND used_at IS NULL AND revoked_at IS NULL AND client_id = ${clientId}
        RETURNING family_id`;
      // a family from before migration 0090 has no end yet: it gets one now
      const familyEnd = r.family_expires_at ?? new Date(now.getTime() + REFRESH_FAMILY_MAX_SECONDS * 1000);
      // the new refresh token keeps the scopes of the one spent (RFC 6749 §6: "identical"); a narrower `scope` only
      // narrows this access token, not the user's grant (audit A-1)
      return spent[0] ? await newRefreshToken(svc, tx, { ...grant, scopes: prior.scopes }, r.family_id, familyEnd) : null;
    });
    if (rotated) return { grant, refreshToken: rotated };
  }
  const seen = await svc.sql<{ family_id: string; client_id: string }[]>`SELECT family_id, client_id FROM oauth_refresh_tokens WHERE token_hash = ${hash}`;
  if (seen[0] && seen[0].client_id === clientId) await revokeFamily(svc, seen[0].family_id);
  throw new OAuthError("invalid_grant", REFRESH_REFUSED);
}

/** RFC 7009: revoking a refresh token revokes its family. Unknown tokens are not an error. */
export async function revokeRefreshToken(svc: Services, token: string, clientId: string): Promise<void> {
  const rows = await svc.sql<{ family_id: string }[]>`
    SELECT family_id FROM oauth_refresh_tokens WHERE token_hash = ${sha256hex(token)} AND client_id = ${clientId}`;
  if (rows[0]) await revokeFamily(svc, rows[0].family_id);
}
