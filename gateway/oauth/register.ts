/**
 * POST /api/v1/oauth/register: dynamic client registration (RFC 7591). Anyone may register a public client
 * (authorization code + PKCE; the user still logs in and consents). A confidential client that wants
 * client_credentials (machine to machine) must be registered with a user session (`Authorization: Bearer <JWT>`):
 * its tokens act for that user.
 */
import { Elysia, t } from "elysia";
import { SCOPES } from "../../actors/agent/access.ts";
import { userFromRequest } from "../plugins/auth.ts";
import { isJsonContentType } from "../plugins/json-body.ts";
import type { Services } from "../services.ts";
import { isAcceptableRedirectUri, type AuthMethod, type GrantType } from "./clients.ts";
import { answerOAuthErrors, noStore, OAUTH_BASE, OAuthError, randomSecret, sha256hex } from "./common.ts";

const GRANTS: readonly GrantType[] = ["authorization_code", "refresh_token", "client_credentials"];
const METHODS: readonly AuthMethod[] = ["none", "client_secret_basic", "client_secret_post"];

/**
 * Registration is unauthenticated, and every accepted value is stored: lists and strings are bounded so one
 * request cannot store ~0.3 MB of redirect URIs (audit N6). Generous for any real client.
 */
export const DCR_LIMITS = { redirectUris: 10, uriChars: 2000, listItems: 10, scopeChars: 500, nameChars: 200 } as const;

function strings(v: unknown, field: string, maxItems: number = DCR_LIMITS.listItems, maxChars: number = DCR_LIMITS.uriChars): string[] | undefined {
  if (v === undefined) return undefined;
  if (!Array.isArray(v) || !v.every((x) => typeof x === "string")) throw new OAuthError("invalid_client_metadata", `${field} must be an array of strings`);
  if (v.length > maxItems) throw new OAuthError("invalid_client_metadata", `${field} may hold at most ${maxItems} entries`);
  if (v.some((x: string) => x.length > maxChars)) throw new OAuthError("invalid_client_metadata", `each ${field} entry may be at most ${maxChars} characters`);
  // duplicates add nothing but stored bytes
  return [...new Set(v as string[])];
}

export function registrationRoutes(svc: Services) {
  return new Elysia({ name: "oauth-register" }).post(
    `${OAUTH_BASE}/register`,
    async ({ body, request, set }) => {
      const headers = set.headers as Record<string, string>;
      noStore(headers);
      return answerOAuthErrors(set, async () => {
        // RFC 7591 §3.1: the metadata is JSON; a form body would otherwise be parsed into strings and registered
        if (!isJsonContentType(request.headers.get("content-type"))) throw new OAuthError("invalid_client_metadata", "the body must be JSON sent with Content-Type: application/json");
        if (!body || typeof body !== "object" || Array.isArray(body)) throw new OAuthError("invalid_client_metadata", "body must be a JSON object");
        const m = body as Record<string, unknown>;
        const grantTypes = (strings(m.grant_types, "grant_types") ?? ["authorization_code", "refresh_token"]) as GrantType[];
        for (const g of grantTypes) if (!GRANTS.includes(g)) throw new OAuthError("invalid_client_metadata", `unsupported grant type "${g}"`);
        const responseTypes = strings(m.response_types, "response_types") ?? (grantTypes.includes("authorization_code") ? ["code"] : []);
        if (responseTypes.some((r) => r !== "code")) throw new OAuthError("invalid_client_metadata", 'only response type "code" is supported');
        const method = (m.token_endpoint_auth_method ?? "client_secret_basic") as AuthMethod;
        if (!METHODS.includes(method)) throw new OAuthError("invalid_client_metadata", `unsupported token_endpoint_auth_method "${String(method)}"`);
        const redirectUris = strings(m.redirect_uris, "redirect_uris", DCR_LIMITS.redirectUris) ?? [];
        if (grantTypes.includes("authorization_code") && redirectUris.length === 0) {
          throw new OAuthError("invalid_redirect_uri", "redirect_uris is required for the authorization_code grant");
        }
        for (const u of redirectUris) {
          if (!isAcceptableRedirectUri(u)) throw new OAuthError("invalid_redirect_uri", `redirect URI not allowed: ${u} (https, http on loopback, or a private-use scheme; no fragment)`);
        }
        if (m.scope !== undefined && typeof m.scope !== "string") throw new OAuthError("invalid_client_metadata", "scope must be a space-separated string");
        if (typeof m.scope === "string" && m.scope.length > DCR_LIMITS.scopeChars) throw new OAuthError("invalid_client_metadata", `scope may be at most ${DCR_LIMITS.scopeChars} characters`);
        const scopes = typeof m.scope === "string" ? m.scope.split(" ").filter(Boolean) : [...SCOPES];
        for (const s of scopes) if (!(SCOPES as readonly string[]).includes(s)) throw new OAuthError("invalid_client_metadata", `unknown scope "${s}"`);
        const name = typeof m.client_name === "string" ? m.client_name.slice(0, DCR_LIMITS.nameChars) : "";
        let owner: string | null = null;
        if (request.headers.has("authorization")) {
          const user = await userFromRequest(svc, request).catch(() => null);
          if (!user) throw new OAuthError("invalid_client", "the bearer token is not a valid user session", 401);
          owner = user.id;
        }
        if (grantTypes.includes("client_credentials")) {
          if (method === "none") throw new OAuthError("invalid_client_metadata", "client_credentials needs a confidential client (client_secret_basic or client_secret_post)");
          if (!owner) throw new OAuthError("invalid_client_metadata", "client_credentials clients must be registered with a user session (Authorization: Bearer <JWT>); their tokens act for that user");
        }
        const clientId = randomSecret("mcpc_");
        const secret = method === "none" ? null : randomSecret("mcps_");
        const ordered = SCOPES.filter((s) => scopes.includes(s));
        await svc.sql`INSERT INTO oauth_clients (client_id, secret_hash, client_name, redirect_uris, grant_types, token_endpoint_auth_method, scope, owner_user_id)
                      VALUES (${clientId}, ${secret ? sha256hex(secret) : null}, ${name}, ${redirectUris}, ${grantTypes}, ${method}, ${ordered.join(" ")}, ${owner})`;
        set.status = 201;
        return {
          client_id: clientId,
          ...(secret ? { client_secret: secret, client_secret_expires_at: 0 } : {}),
          client_id_issued_at: Math.floor(svc.clock.now() / 1000),
          client_name: name,
          redirect_uris: redirectUris,
          grant_types: grantTypes,
          response_types: responseTypes,
          token_endpoint_auth_method: method,
          scope: ordered.join(" "),
        };
      });
    },
    {
      body: t.Unknown(),
      detail: {
        tags: ["oauth"],
        summary: "Dynamic client registration (RFC 7591)",
        description:
          "JSON client metadata: redirect_uris, client_name, grant_types (authorization_code, refresh_token, client_credentials), token_endpoint_auth_method (none, client_secret_basic, client_secret_post), scope. 201 with client_id (and client_secret for confidential clients). Errors: 400 invalid_redirect_uri / invalid_client_metadata, 401 invalid_client.",
        responses: {
          201: { description: "Registered client" },
          400: { description: "invalid_redirect_uri or invalid_client_metadata (RFC 7591 §3.2.2; `code` repeats `error`)" },
          401: { description: "invalid_client: the Authorization bearer is not a valid session" },
          429: { description: "rate_limit_exceeded" },
        },
      },
    },
  );
}
