/**
 * POST /api/v1/oauth/token (grants: authorization_code with PKCE S256, refresh_token with rotation,
 * client_credentials for machine to machine) and POST /api/v1/oauth/revoke (RFC 7009).
 * Bodies are application/x-www-form-urlencoded (RFC 6749); responses follow RFC 6749 §5, not the REST envelope,
 * so every OAuth client library can read them.
 */
import { Elysia, t } from "elysia";
import { timingSafeEqualStr } from "../../infra/crypto.ts";
import { clientIp } from "../plugins/auth.ts";
import type { Services } from "../services.ts";
import { authenticateClient, touchClient, type OAuthClient } from "./clients.ts";
import { ACCESS_TOKEN_TYP, answerOAuthErrors, noStore, OAUTH_BASE, OAuthError, resourceServes, sha256b64url, sha256hex, stringFields } from "./common.ts";
import { tokenService } from "../identity.ts";
import { redeemCode, revokeRefreshToken, rotateRefreshToken, tokenResponse, type TokenResponse } from "./grants.ts";
import { revokeAccessTokenJti } from "./revocation.ts";
import { grantScopes, narrowScopes } from "./scopes.ts";

const VERIFIER = /^[A-Za-z0-9\-._~]{43,128}$/;

async function checkResource(svc: Services, resource: string | undefined, required: boolean): Promise<string | undefined> {
  if (resource === undefined) {
    if (required) throw new OAuthError("invalid_target", "resource is required: the store's MCP endpoint, e.g. {site_url}/{slug}/mcp (RFC 8707)");
    return undefined;
  }
  if (!(await resourceServes(svc, resource))) throw unknownResource(resource);
  return resource;
}

/** The refusal for a resource that is not one of ours, or whose store's MCP endpoints do not serve (RFC 8707 §2). */
function unknownResource(resource: string): OAuthError {
  return new OAuthError("invalid_target", `unknown resource ${resource}`);
}

/**
 * Whether the resource of the live code or refresh token `secret` of `clientId` serves now, read here because
 * grants.ts runs its check synchronously, just before the spending UPDATE. A store that became ineligible since the
 * consent (suspended, hidden, downgraded) gets no token: its endpoint is 404 and its metadata too, so the grant
 * must not be a way to tell it from an unknown store, nor hand out tokens for it. The code or refresh token stays
 * unspent, so the grant comes back with the store. Not found (unknown, spent, revoked, another client's): null,
 * and the grant's own refusal (invalid_grant, a replay's revocation) follows unchanged.
 */
async function liveGrantResource(svc: Services, kind: "code" | "refresh", secret: string, clientId: string): Promise<{ resource: string; serves: boolean } | null> {
  const hash = sha256hex(secret);
  const rows =
    kind === "code"
      ? await svc.sql<{ resource: string }[]>`SELECT resource FROM oauth_codes WHERE code_hash = ${hash} AND client_id = ${clientId} AND used_at IS NULL`
      : await svc.sql<{ resource: string }[]>`
          SELECT resource FROM oauth_refresh_tokens WHERE token_hash = ${hash} AND client_id = ${clientId} AND used_at IS NULL AND revoked_at IS NULL`;
  const resource = rows[0]?.resource;
  return resource === undefined ? null : { resource, serves: await resourceServes(svc, resource) };
}

/**
 * Inside the grant's check, after its own refusals: the grant's resource must be the one read (the same row: always)
 * and serve. Fails closed when the read found nothing.
 */
function requireServes(read: { resource: string; serves: boolean } | null, resource: string): void {
  if (!read || read.resource !== resource || !read.serves) throw unknownResource(resource);
}

/** The tokens of one grant type, for an authenticated client registered for it. */
async function grantTokens(svc: Services, client: OAuthClient, grant: string, form: Record<string, string>): Promise<TokenResponse> {
  if (grant === "authorization_code") {
    if (!form.code) throw new OAuthError("invalid_request", "code is required");
    if (!form.code_verifier) throw new OAuthError("invalid_request", "code_verifier is required (PKCE)");
    const verifier = form.code_verifier;
    const resource = await checkResource(svc, form.resource, false);
    const read = await liveGrantResource(svc, "code", form.code, client.clientId);
    // Every check runs before the code is spent, and a code is only redeemed by its own client: a refused
    // request leaves the code usable (a wrong PKCE verifier included: docs/decisions.md).
    const wantsRefresh = client.grantTypes.includes("refresh_token");
    // the refresh token is written with the code's spending (grants.ts: a concurrent replay revokes it too)
    const code = await redeemCode(svc, form.code, client.clientId, (c) => {
      if (form.redirect_uri !== undefined && form.redirect_uri !== c.redirectUri) throw new OAuthError("invalid_grant", "redirect_uri does not match the authorization request");
      if (!VERIFIER.test(verifier) || !timingSafeEqualStr(sha256b64url(verifier), c.codeChallenge)) {
        throw new OAuthError("invalid_grant", "PKCE verification failed: code_verifier does not match the code_challenge");
      }
      if (resource !== undefined && resource !== c.resource) throw new OAuthError("invalid_target", "resource differs from the one authorized");
      requireServes(read, c.resource);
    }, wantsRefresh);
    return await tokenResponse(svc, code, code.refreshToken);
  }

  if (grant === "refresh_token") {
    if (!form.refresh_token) throw new OAuthError("invalid_request", "refresh_token is required");
    const resource = await checkResource(svc, form.resource, false);
    const read = await liveGrantResource(svc, "refresh", form.refresh_token, client.clientId);
    // scope and resource are checked against the token's grant before it is spent (a refusal keeps it usable); a
    // narrower scope narrows this access token only, the new refresh token keeps the grant's (grants.ts, RFC 6749 §6)
    const rotated = await rotateRefreshToken(svc, form.refresh_token, client.clientId, (p) => {
      const scopes = narrowScopes(form.scope, p.scopes);
      if (resource !== undefined && resource !== p.resource) throw new OAuthError("invalid_target", "resource differs from the one authorized");
      // a store suspended after the grant: refused, the refresh token kept (not rotated, the family not revoked), so a
      // temporary suspension ends no grant; invalid_target, not invalid_grant, on which clients (the MCP SDK's
      // `auth`) drop their tokens and start over
      requireServes(read, p.resource);
      return { ...p, scopes };
    });
    return await tokenResponse(svc, rotated.grant, rotated.refreshToken);
  }

  // client_credentials: a confidential client acting for the user who registered it
  if (!client.ownerUserId || client.authMethod === "none") throw new OAuthError("unauthorized_client", "client_credentials needs a confidential client with an owner");
  const resource = (await checkResource(svc, form.resource, true))!;
  const scopes = grantScopes(form.scope, client.scopes);
  return await tokenResponse(svc, {
    clientId: client.clientId,
    userId: client.ownerUserId,
    scopes,
    resource,
    machine: { authMethod: client.authMethod, secretHash: client.secretHash! },
  });
}

/**
 * RFC 7009 for an access token (audit X-1): one of ours (signature, issuer, typ at+jwt; any of our audiences), not
 * expired, issued to `clientId`, is refused from now on (revocation.ts). Returns false when `token` is not such a
 * token (a refresh token, another client's token, garbage): the caller goes on as for a refresh token.
 */
async function revokeAccessToken(svc: Services, token: string, clientId: string): Promise<boolean> {
  const parts = token.split(".");
  if (parts.length !== 3) return false;
  let aud: unknown;
  try {
    aud = (JSON.parse(Buffer.from(parts[1]!, "base64url").toString("utf8")) as { aud?: unknown }).aud;
  } catch {
    return false;
  }
  const audiences = (Array.isArray(aud) ? aud : [aud]).filter((a): a is string => typeof a === "string");
  if (!audiences.length) return false;
  // the audience is read unverified only to name it: the signature, issuer and typ are what is checked
  const verified = await (await tokenService(svc)).verifyToken(token, { audience: audiences, typ: ACCESS_TOKEN_TYP }).catch(() => null);
  if (!verified || verified.claims.client_id !== clientId || !verified.jti) return false;
  await revokeAccessTokenJti(svc, clientId, verified.jti, new Date(verified.exp * 1000));
  return true;
}

export function tokenRoutes(svc: Services) {
  return new Elysia({ name: "oauth-token" })
    .post(
      `${OAUTH_BASE}/token`,
      async ({ body, request, server, set }) => {
        const headers = set.headers as Record<string, string>;
        noStore(headers);
        return answerOAuthErrors(
          set,
          async () => {
            const form = stringFields(body);
            const client = await authenticateClient(svc, request.headers.get("authorization"), form, clientIp(request, server));
            const grant = form.grant_type;
            if (!grant) throw new OAuthError("invalid_request", "grant_type is required");
            if (!["authorization_code", "refresh_token", "client_credentials"].includes(grant)) {
              throw new OAuthError("unsupported_grant_type", `unsupported grant_type "${grant}"`);
            }
            if (!client.grantTypes.includes(grant as never)) throw new OAuthError("unauthorized_client", `the client is not registered for ${grant}`);
            const issued = await grantTokens(svc, client, grant, form);
            // a token issued is a use (the sweep keeps used clients); a refused request is not: anyone can send one
            await touchClient(svc, client);
            return issued;
          },
          (err) => {
            if (err.error === "invalid_client" && request.headers.get("authorization")?.toLowerCase().startsWith("basic")) {
              headers["www-authenticate"] = 'Basic realm="oauth"';
            }
          },
        );
      },
      {
        body: t.Unknown(),
        detail: {
          tags: ["oauth"],
          summary: "OAuth 2.1 token endpoint",
          description:
            "application/x-www-form-urlencoded. grant_type=authorization_code (code, redirect_uri, code_verifier; PKCE S256 only), refresh_token (refresh_token; the token is rotated, a reused one revokes its family), client_credentials (confidential clients registered with a user session; resource required). Access tokens are EdDSA JWTs (typ at+jwt) for 15 minutes whose audience is the store's MCP endpoint; refresh tokens last 30 days. Use it after a 401 token_expired. A store whose MCP endpoint does not serve (ineligible: below BASIC, trust under 0.3, suspended or hidden) is an unknown resource, as an unknown slug: every grant for it is refused with invalid_target, and the code or refresh token stays unspent, usable again once the store is eligible. Errors follow RFC 6749 §5.2 (`error` is the OAuth code, repeated in `code`).",
          responses: {
            200: { description: "Token response (RFC 6749 §5.1)" },
            400: { description: "invalid_request, invalid_grant, unauthorized_client, unsupported_grant_type, invalid_scope, invalid_target" },
            401: { description: "invalid_client" },
            429: { description: "rate_limit_exceeded" },
            503: { description: "temporarily_unavailable with Retry-After: the client's metadata document cannot be fetched right now (too many fetches in flight)" },
          },
        },
      },
    )
    .post(
      `${OAUTH_BASE}/revoke`,
      async ({ body, request, server, set }) => {
        noStore(set.headers as Record<string, string>);
        return answerOAuthErrors(set, async () => {
          const form = stringFields(body);
          const client = await authenticateClient(svc, request.headers.get("authorization"), form, clientIp(request, server));
          if (!form.token) throw new OAuthError("invalid_request", "token is required");
          // An access token is refused from now on (its jti until its exp); a refresh token revokes its family.
          if (!(await revokeAccessToken(svc, form.token, client.clientId))) await revokeRefreshToken(svc, form.token, client.clientId);
          return {};
        });
      },
      {
        body: t.Unknown(),
        detail: {
          tags: ["oauth"],
          summary: "Token revocation (RFC 7009)",
          description:
            "Revokes a refresh token and every token rotated from the same authorization (and the access tokens issued under it), or an access token (refused from then on on every MCP endpoint). Only the client the token was issued to revokes it; 200 {} also for unknown tokens, expired ones and other clients' tokens (RFC 7009 §2.2).",
          responses: {
            200: { description: "Revoked (or unknown)" },
            400: { description: "invalid_request" },
            401: { description: "invalid_client" },
            429: { description: "rate_limit_exceeded" },
            503: { description: "temporarily_unavailable with Retry-After: the client's metadata document cannot be fetched right now (too many fetches in flight)" },
          },
        },
      },
    );
}
