/**
 * Shared pieces of the OAuth 2.1 authorization server that protects the per-store MCP endpoints: lifetimes,
 * resource identifiers (RFC 8707), opaque secrets and their digests, and the RFC 6749 error response.
 */
import { createHash, randomBytes } from "node:crypto";
import { toBase62 } from "../../actors/agent/keys.ts";
import { isInputDataError } from "../../actors/runtime/errors.ts";
import { isEligibleStore } from "../../actors/store/reads.ts";
import type { OperationalStatus, VerificationLevel } from "../../actors/store/schemas.ts";
import type { Services } from "../services.ts";
import { isStoreSlug } from "../../actors/store/slug.ts";

export const ACCESS_TOKEN_TTL_SECONDS = 15 * 60;
export const REFRESH_TOKEN_TTL_SECONDS = 30 * 24 * 60 * 60;
/**
 * A refresh-token family's absolute life (audit X-1): every rotation gives a token of REFRESH_TOKEN_TTL_SECONDS, but
 * never past this long after the code was redeemed; the user then consents again. Kept in oauth_refresh_tokens
 * `family_expires_at` (migration 0090).
 */
export const REFRESH_FAMILY_MAX_SECONDS = 90 * 24 * 60 * 60;
export const CODE_TTL_SECONDS = 60;
export const ACCESS_TOKEN_TYP = "at+jwt";

export const OAUTH_BASE = "/api/v1/oauth";
/** The dedicated MCP endpoints of a store are the same protected resource family as its main endpoint. */
export const MCP_SUB_ENDPOINTS = ["discovery", "customer", "checkout"] as const;


export function issuer(svc: Services): string {
  return svc.siteUrl.replace(/\/+$/, "");
}

/** The MCP resource of a store: the audience of its access tokens. */
export function mcpResource(svc: Services, slug: string, sub?: string): string {
  return `${issuer(svc)}/${slug}/mcp${sub ? `/${sub}` : ""}`;
}

export function resourceMetadataUrl(svc: Services, slug: string, sub?: string): string {
  return `${issuer(svc)}/.well-known/oauth-protected-resource/${slug}/mcp${sub ? `/${sub}` : ""}`;
}

export type McpSubEndpoint = (typeof MCP_SUB_ENDPOINTS)[number];

/**
 * The MCP resource a request addressed (RFC 9728 §3.3: the metadata a 401 names must describe the URL requested):
 * the store's main endpoint, a dedicated one, or the older path `/mcp/{slug}`, its own resource `{site_url}/mcp/{slug}`
 * with its own metadata (docs/access.md), which the SDK's discovery derives from that path.
 */
export interface McpResourceRef {
  slug: string;
  sub?: McpSubEndpoint;
  legacy?: boolean;
}

/** From the request's path: `/mcp/{slug}` → legacy, `/{slug}/mcp/{sub}` → sub, else the main endpoint. */
export function mcpResourceRefOf(slug: string, request: Request): McpResourceRef {
  const path = new URL(request.url).pathname.replace(/\/+$/, "");
  if (path === `/mcp/${slug}`) return { slug, legacy: true };
  const sub = path.split("/")[3];
  return sub !== undefined && (MCP_SUB_ENDPOINTS as readonly string[]).includes(sub) ? { slug, sub: sub as McpSubEndpoint } : { slug };
}

/** The older path's resource, an alias of the store's main one: its tokens are good wherever the main one's are. */
export function legacyMcpResource(svc: Services, slug: string): string {
  return `${issuer(svc)}/mcp/${slug}`;
}

export function resourceOfRef(svc: Services, ref: McpResourceRef): string {
  return ref.legacy ? legacyMcpResource(svc, ref.slug) : mcpResource(svc, ref.slug, ref.sub);
}

export function metadataUrlOfRef(svc: Services, ref: McpResourceRef): string {
  return ref.legacy ? `${issuer(svc)}/.well-known/oauth-protected-resource/mcp/${ref.slug}` : resourceMetadataUrl(svc, ref.slug, ref.sub);
}

/** `{site_url}/{slug}/mcp[/discovery|customer|checkout]` or the older `{site_url}/mcp/{slug}` → slug; anything else → null. */
export function slugFromResource(svc: Services, resource: string): string | null {
  const base = issuer(svc) + "/";
  if (!resource.startsWith(base)) return null;
  const parts = resource.slice(base.length).split("/");
  if (parts.length === 2 && parts[0] === "mcp" && parts[1] !== "mcp" && isStoreSlug(parts[1]!)) return parts[1]!;
  if (parts.length < 2 || parts.length > 3 || parts[1] !== "mcp" || !isStoreSlug(parts[0]!)) return null;
  if (parts.length === 3 && !(MCP_SUB_ENDPOINTS as readonly string[]).includes(parts[2]!)) return null;
  return parts[0]!;
}

/**
 * Whether `slug`'s MCP endpoints serve: the store exists and is eligible (`isEligibleStore`: BASIC or higher, trust
 * >= 0.3, not suspended or hidden), the rule of the MCP gateway's `store` and of the protected-resource metadata. The
 * authorization server grants nothing for a store whose endpoint is 404 (audit Q follow-up, session 15): a suspended,
 * hidden or UNVERIFIED store is an unknown resource here as it is there, so neither tells it from an unknown slug.
 * Only the three columns the rule reads (the token endpoint asks on every grant; `findEligibleStore` also builds the
 * store's shipping summary).
 */
export async function storeServes(svc: Services, slug: string): Promise<boolean> {
  if (!isStoreSlug(slug)) return false;
  const rows = await svc.sql<{ trust_score: string | number | null; verification_level: VerificationLevel; operational_status: OperationalStatus }[]>`
    SELECT trust_score, verification_level, operational_status FROM stores WHERE slug = ${slug}`;
  const r = rows[0];
  if (!r) return false;
  return isEligibleStore({
    trustScore: r.trust_score === null ? null : Number(r.trust_score),
    verificationLevel: r.verification_level,
    operationalStatus: r.operational_status,
  });
}

/** Whether `resource` is one of ours (slugFromResource) whose store's MCP endpoints serve (`storeServes`). */
export async function resourceServes(svc: Services, resource: string): Promise<boolean> {
  const slug = slugFromResource(svc, resource);
  return slug !== null && (await storeServes(svc, slug));
}

/** 256 random bits as a prefixed base62 string (`mcpc_…` client ids, `rt_…` refresh tokens). */
export function randomSecret(prefix: string): string {
  return prefix + toBase62(randomBytes(32), 43);
}

export function sha256hex(value: string): string {
  return createHash("sha256").update(value, "utf8").digest("hex");
}

export function sha256b64url(value: string): string {
  return createHash("sha256").update(value, "ascii").digest("base64url");
}

export type OAuthErrorCode =
  | "invalid_request"
  | "invalid_client"
  | "invalid_grant"
  | "unauthorized_client"
  | "unsupported_grant_type"
  | "invalid_scope"
  | "invalid_target"
  | "invalid_redirect_uri"
  | "invalid_client_metadata"
  | "unsupported_token_type"
  | "access_denied"
  | "unsupported_response_type"
  | "temporarily_unavailable"
  | "rate_limit_exceeded"
  | "too_many_clients";

/**
 * Thrown inside the OAuth endpoints; turned into an RFC 6749 §5.2 body by `oauthErrorBody`. `retryAfterSeconds`
 * marks a refusal that passes (503 temporarily_unavailable, 429 rate_limit_exceeded): it is sent as Retry-After.
 * `rate_limit_exceeded` is not one of RFC 6749's codes (its extension point, §8.5): it is the service's own code
 * for a rate limit, which an OAuth client reads as a server error with the description as its message. So is
 * `too_many_clients` (409, registration: the account holds as many live clients as allowed, like too_many_keys).
 */
export class OAuthError extends Error {
  constructor(
    readonly error: OAuthErrorCode,
    readonly description: string,
    readonly status = error === "invalid_client" ? 401 : error === "temporarily_unavailable" ? 503 : error === "too_many_clients" ? 409 : 400,
    readonly retryAfterSeconds?: number,
  ) {
    super(description);
  }
}

/**
 * RFC 6749 error body. `error` carries the OAuth code (what OAuth client libraries read); `code` repeats it so the
 * service-wide rule "every error has a code" still holds; `success: false` keeps it an error envelope.
 */
export function oauthErrorBody(err: OAuthError): { success: false; error: string; error_description: string; code: string } {
  return { success: false, error: err.error, error_description: err.description, code: err.error };
}

/** What an OAuth endpoint answers for a value its database refused (`isInputDataError`: a NUL byte, say). */
export const UNACCEPTABLE_VALUE = "A value in the request is not acceptable (for example a NUL byte, broken Unicode text or an out-of-range number).";

/**
 * The error half every OAuth endpoint shares: an OAuthError thrown by `run` is answered as its RFC 6749 §5.2 body
 * with its status and Retry-After if it has one (`onOAuthError` may add a header first); anything else goes on to
 * the global error handler. A value the database refuses (a NUL byte in a client id, a client name or a token:
 * Postgres class 22) is the caller's bad request, answered as the OAuth error `inputError` (RFC 6749's
 * `invalid_request`; the registration endpoint's is RFC 7591's `invalid_client_metadata`), not the global handler's
 * generic body, whose `error` is a sentence no OAuth client can branch on (audit F-7).
 */
export async function answerOAuthErrors<T>(
  set: { status?: number | string; headers: Record<string, string | number> },
  run: () => Promise<T>,
  onOAuthError?: (err: OAuthError) => void,
  inputError: Extract<OAuthErrorCode, "invalid_request" | "invalid_client_metadata"> = "invalid_request",
): Promise<T | ReturnType<typeof oauthErrorBody>> {
  try {
    return await run();
  } catch (thrown) {
    const err = isInputDataError(thrown) ? new OAuthError(inputError, UNACCEPTABLE_VALUE) : thrown;
    if (!(err instanceof OAuthError)) throw err;
    set.status = err.status;
    if (err.retryAfterSeconds !== undefined) set.headers["retry-after"] = String(err.retryAfterSeconds);
    onOAuthError?.(err);
    return oauthErrorBody(err);
  }
}

export function noStore(headers: Record<string, string | number>): void {
  headers["cache-control"] = "no-store";
  headers["pragma"] = "no-cache";
}

/** Form or JSON body as a flat string record (repeated or non-string values are dropped). */
export function stringFields(body: unknown): Record<string, string> {
  const out: Record<string, string> = {};
  if (body && typeof body === "object") {
    for (const [k, v] of Object.entries(body as Record<string, unknown>)) if (typeof v === "string") out[k] = v;
  }
  return out;
}
