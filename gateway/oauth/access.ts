/**
 * `verifyMcpAccess`: who is calling a store's MCP endpoint. An MCP endpoint accepts either an agent key
 * (`X-Agent-Api-Key`) or an OAuth access token (`Authorization: Bearer`, an EdDSA JWT with typ at+jwt whose
 * audience is one of this store's MCP resources). Every 401 carries
 * `WWW-Authenticate: Bearer resource_metadata="…"` naming the metadata of the endpoint requested
 * (`{site_url}/.well-known/oauth-protected-resource/{slug}/mcp[/{sub}]`, or `…/mcp/{slug}` for the older path), which
 * is how an MCP client discovers the authorization server (MCP authorization, revision 2025-11-25; RFC 9728 §3.3).
 *
 * When `limits` is given it also does the request's rate admission for the MCP layers (and sets the headers):
 * a key is admitted on its agent actor; an OAuth caller gets the same per-key layers, held per (client, user) by
 * `oauth/<clientId>:<userId>`; an anonymous caller is counted per IP. Do not call authenticateAgent/admitAnonymous
 * again for the same request.
 */
import { assertKeyActive, type Scope } from "../../actors/agent/access.ts";
import { agentActor } from "../../actors/agent/index.ts";
import { bucketsFor, type BucketDescriptor, type BucketOwner, type Surface } from "../../actors/agent/limits.ts";
import { ActorError, fail } from "../../actors/runtime/errors.ts";
import { SESSION_AUDIENCE, tokenService } from "../identity.ts";
import {
  admitAnonymous,
  admitOthers,
  authenticateAgent,
  setRateHeaders,
  setStaticRateHeaders,
  type AgentPrincipal,
} from "../plugins/auth.ts";
import type { Services } from "../services.ts";
import { ACCESS_TOKEN_TYP, legacyMcpResource, MCP_SUB_ENDPOINTS, mcpResource, mcpResourceRefOf, metadataUrlOfRef, type McpResourceRef } from "./common.ts";
import { CLIENT_CREDENTIALS_GTY, isAgentTrustSignal } from "./grants.ts";
import { accessTokenRevoked, type AccessTokenRevoked } from "./revocation.ts";

/**
 * Why a credential that authenticated a request is no longer good: an access token's revocation
 * (`AccessTokenRevoked`), an agent key revoked or gone, or either past its expiry.
 */
export type CredentialLapse = AccessTokenRevoked | "key_revoked" | "key_deleted" | "expired";

/**
 * What a long-lived request authorized by one credential (an MCP GET event stream) re-checks: the per-request check
 * again, and when the credential ends by itself. One concept for both kinds, so the stream treats them alike. Both are
 * functions of the verified access (so, like it, they are not part of its JSON).
 */
export interface CredentialWatch {
  /** When it stops being good by itself (ms since the epoch, services' clock), or null: never. */
  expiresAt: () => Promise<number | null>;
  /**
   * Why it is no longer good, or null while it is: one cheap read (an access token: `accessTokenRevoked`, the
   * per-request statement; an agent key: its actor's in-memory record, what every request's `authorize` reads). A
   * failed read rejects: the caller keeps what it has.
   */
  lapsed: () => Promise<CredentialLapse | null>;
}

export type McpAccess =
  | ({ kind: "key"; agent: AgentPrincipal } & CredentialWatch)
  | ({
      kind: "oauth";
      sub: string;
      clientId: string;
      scopes: Scope[];
      /** Issued by the client_credentials grant and carrying a valid agent trust signal (grants.ts). */
      machineToMachine: boolean;
      /** The token's audience (one of the store's MCP resources). */
      audience: string;
    } & CredentialWatch)
  | { kind: "anonymous" };

export interface VerifyMcpAccessInput {
  slug: string;
  request: Request;
  /** The response headers (Elysia `set.headers`): WWW-Authenticate and X-RateLimit-* are written here. */
  headers: Record<string, string | number>;
  /** Return `{kind: "anonymous"}` instead of 401 when the request carries no credential (public discovery tools). */
  allowAnonymous?: boolean;
  /** Rate admission for this request; omit it to admit yourself. `ip` from `clientIp(request, server)`. */
  limits?: { ip: string; surface: Surface; toolName?: string; customerId?: string };
}

/**
 * The challenge every 401 from a store's MCP endpoint carries. `target`: the endpoint requested (`mcpResourceRefOf`),
 * whose own metadata it names; a bare slug is the store's main endpoint.
 */
export function mcpChallenge(
  svc: Services,
  target: string | McpResourceRef,
  error?: { code?: "invalid_token" | "insufficient_scope"; description?: string; scope?: string },
): string {
  const ref = typeof target === "string" ? { slug: target } : target;
  let h = `Bearer resource_metadata="${metadataUrlOfRef(svc, ref)}"`;
  if (error?.code) h += `, error="${error.code}", error_description="${(error.description ?? "").replace(/["\\]/g, "")}"`;
  if (error?.scope) h += `, scope="${error.scope}"`;
  return h;
}

/** For a tool that needs credentials when the caller is anonymous: 401 with the discovery challenge. */
export function requireMcpCredentials(svc: Services, target: string | McpResourceRef, headers: Record<string, string | number>): never {
  headers["www-authenticate"] = mcpChallenge(svc, target);
  throw fail("unauthorized", "This tool needs an agent key (X-Agent-Api-Key) or an OAuth access token (Authorization: Bearer).");
}

/**
 * A credential of ours sent where it does not go says so, instead of "invalid token" (audit E): an agent key as a
 * bearer token, or a login session JWT (audience acs-api) as an MCP access token. Read from the token's shape and
 * unverified claims only to word the refusal; nothing is accepted on them.
 */
export function misplacedCredential(bearer: string): ActorError | null {
  if (bearer.startsWith("agnt_")) {
    return fail("unauthorized", "Agent keys go in the X-Agent-Api-Key header, not in Authorization: Bearer (which carries OAuth access tokens).", {
      reason: "agent_key_as_bearer",
      header: "X-Agent-Api-Key",
    });
  }
  const [head, payload] = bearer.split(".");
  try {
    const h = JSON.parse(Buffer.from(head ?? "", "base64url").toString("utf8")) as { typ?: unknown };
    const p = JSON.parse(Buffer.from(payload ?? "", "base64url").toString("utf8")) as { aud?: unknown };
    const aud = Array.isArray(p.aud) ? p.aud : [p.aud];
    if (h.typ === "JWT" && aud.includes(SESSION_AUDIENCE)) {
      return fail("unauthorized", "A login session JWT is not an MCP access token: get one from POST /api/v1/oauth/token (resource: this MCP endpoint's URL), or send an agent key in X-Agent-Api-Key.", {
        reason: "session_jwt_as_access_token",
        token_endpoint: "/api/v1/oauth/token",
        header: "X-Agent-Api-Key",
      });
    }
  } catch {
    /* not a JWT of ours: the plain "invalid token" stands */
  }
  return null;
}

/** An OAuth caller's buckets: the per-key layers, held per (client, user) by `oauth/<clientId>:<userId>`. */
export function oauthBuckets(ctx: { surface: Surface; ip: string; toolName?: string; customerId?: string }, clientId: string, sub: string): BucketDescriptor[] {
  const id = `oauth:${clientId}:${sub}`;
  return bucketsFor({ surface: ctx.surface, ip: ctx.ip, keyId: id, tier: null, toolName: ctx.toolName ?? null, customerId: ctx.customerId ?? null }).map((b) =>
    b.owner === `agent/${id}` ? { ...b, owner: `oauth/${clientId}:${sub}` as unknown as BucketOwner } : b,
  );
}

/** What a revoked access token's 401 says (`details.reason` carries the key). */
const REVOKED_WORDS: Record<NonNullable<Awaited<ReturnType<typeof accessTokenRevoked>>>, string> = {
  client_deleted: "The access token's OAuth client was deleted.",
  client_blocked: "The access token's OAuth client was blocked by an operator.",
  secret_rotated: "The access token was minted with a client secret that has since been replaced: get a new token with the new secret.",
  grant_revoked: "The access token's authorization was revoked: the user must authorize the client again.",
  token_revoked: "The access token was revoked.",
};

export async function verifyMcpAccess(svc: Services, input: VerifyMcpAccessInput): Promise<McpAccess> {
  const { request, headers, slug, limits } = input;
  const limitsOn = svc.config.RATE_LIMITS_ENABLED;
  const target = mcpResourceRefOf(slug, request);
  const withChallenge = async <T>(p: Promise<T>): Promise<T> => {
    try {
      return await p;
    } catch (err) {
      if (err instanceof ActorError && (err.code === "unauthorized" || err.code === "token_expired")) {
        headers["www-authenticate"] = mcpChallenge(svc, target, request.headers.has("authorization") && !request.headers.has("x-agent-api-key")
          ? { code: "invalid_token", description: err.code === "token_expired" ? "the access token expired" : "the access token is invalid for this resource" }
          : undefined);
      }
      throw err;
    }
  };

  if (request.headers.has("x-agent-api-key")) {
    if (!limits) {
      // Authentication only: the caller admits. surface "other" with limits off never touches a bucket.
      const agent = await withChallenge(
        authenticateAgent({ ...svc, config: { ...svc.config, RATE_LIMITS_ENABLED: false } }, { request, ip: "unknown", headers: {}, surface: "mcp", checkRoute: false }),
      );
      return { kind: "key", agent, ...agentKeyWatch(svc, agent) };
    }
    const agent = await withChallenge(
      authenticateAgent(svc, { request, ip: limits.ip, headers, surface: limits.surface, checkRoute: false, toolName: limits.toolName, customerId: limits.customerId }),
    );
    return { kind: "key", agent, ...agentKeyWatch(svc, agent) };
  }

  const auth = request.headers.get("authorization");
  const bearer = /^Bearer\s+(\S+)$/i.exec(auth ?? "")?.[1];
  if (bearer) {
    const tokens = await tokenService(svc);
    const audiences = [mcpResource(svc, slug), legacyMcpResource(svc, slug), ...MCP_SUB_ENDPOINTS.map((s) => mcpResource(svc, slug, s))];
    const verified = await withChallenge(
      tokens.verifyToken(bearer, { audience: audiences, typ: ACCESS_TOKEN_TYP }).catch(async (err) => {
        // failed tokens are counted like anonymous traffic, so token guessing is bounded per IP
        if (limits) await admitAnonymous(svc, limits.surface, limits.ip, headers).catch(() => null);
        throw misplacedCredential(bearer) ?? err;
      }),
    );
    const clientId = typeof verified.claims.client_id === "string" ? verified.claims.client_id : "";
    if (!clientId) {
      headers["www-authenticate"] = mcpChallenge(svc, target, { code: "invalid_token", description: "the access token has no client_id" });
      throw fail("unauthorized", "invalid token", { reason: "client_id" });
    }
    // revoked before its end: its client deleted, its secret rotated, its grant or the token itself revoked (audit X-1)
    const revoked = await accessTokenRevoked(svc, clientId, verified.claims);
    if (revoked) {
      if (limits) await admitAnonymous(svc, limits.surface, limits.ip, headers).catch(() => null);
      headers["www-authenticate"] = mcpChallenge(svc, target, { code: "invalid_token", description: "the access token was revoked" });
      throw fail("unauthorized", REVOKED_WORDS[revoked], { reason: revoked });
    }
    if (limits) {
      const list = oauthBuckets(limits, clientId, verified.sub);
      if (limitsOn) setRateHeaders(headers, await admitOthers(svc, list, headers));
      else setStaticRateHeaders(headers, { surface: limits.surface, ip: limits.ip, keyId: "oauth", toolName: limits.toolName ?? null });
    }
    const machineToMachine = verified.claims.gty === CLIENT_CREDENTIALS_GTY && isAgentTrustSignal(verified.claims.agent_trust);
    const aud = verified.claims.aud;
    const audience = typeof aud === "string" ? aud : Array.isArray(aud) && typeof aud[0] === "string" ? aud[0] : "";
    const claims = verified.claims;
    // what a GET event stream watches: the revocation read again (`accessTokenRevoked`, one statement) and the `exp`
    const expiresAt = async () => verified.exp * 1000;
    const lapsed = () => accessTokenRevoked(svc, clientId, claims);
    return { kind: "oauth", sub: verified.sub, clientId, scopes: verified.scope as Scope[], machineToMachine, audience, expiresAt, lapsed };
  }

  if (auth) {
    headers["www-authenticate"] = mcpChallenge(svc, target, { code: "invalid_token", description: "unsupported authorization scheme" });
    if (limits) await admitAnonymous(svc, limits.surface, limits.ip, headers);
    throw fail("unauthorized", "Use X-Agent-Api-Key or Authorization: Bearer <access token>.");
  }
  if (limits) await admitAnonymous(svc, limits.surface, limits.ip, headers);
  if (input.allowAnonymous) return { kind: "anonymous" };
  return requireMcpCredentials(svc, target, headers);
}

/**
 * An agent key's watch: its record as the key's actor holds it (`get`: one message, answered from memory; the actor is
 * the one owner every gateway's `authorize` asks, so a revocation is seen there at once), judged by `assertKeyActive`,
 * the rule `authorize` applies. A key whose record is gone (or is another key's) is `key_deleted`.
 */
function agentKeyWatch(svc: Services, agent: AgentPrincipal): CredentialWatch {
  const record = async () => {
    try {
      const key = await svc.actors.ask(agentActor, agent.prefix, "get", {});
      return key.id === agent.keyId ? key : null;
    } catch (err) {
      if (err instanceof ActorError && err.code === "not_found") return null;
      throw err;
    }
  };
  return {
    expiresAt: async () => {
      const key = await record();
      return key?.expiresAt ? Date.parse(key.expiresAt) : null;
    },
    lapsed: async () => {
      const key = await record();
      if (!key) return "key_deleted";
      try {
        assertKeyActive({ expiresAt: key.expiresAt ? new Date(key.expiresAt) : null, revokedAt: key.revokedAt ? new Date(key.revokedAt) : null }, new Date(svc.clock.now()));
      } catch (err) {
        if (err instanceof ActorError && err.code === "unauthorized") return (err.details as { reason?: string } | undefined)?.reason === "expired" ? "expired" : "key_revoked";
        throw err;
      }
      return null;
    },
  };
}
