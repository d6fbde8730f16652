/**
 * POST /api/v1/oauth/register: dynamic client registration (RFC 7591). Anyone may register a public client
 * (authorization code + PKCE; the user still logs in and consents). A confidential client that wants
 * client_credentials (machine to machine) must be registered with a user session (`Authorization: Bearer <JWT>`):
 * its tokens act for that user.
 * Every registration stores a row, so what one address can store is bounded (audit W-1): 20 registrations an hour
 * per address (actors/agent/limits.ts OAUTH_REGISTER_PER_IP, counted once the metadata is found valid), a row of
 * at most about 5 KB (DCR_LIMITS), and ownerless clients nobody uses are deleted (clients.ts `deleteUnusedClients`,
 * a rule of the retention job). Clients registered with a session are never swept: an account holds at most
 * OWNED_CLIENTS_MAX live ones (audit A-5), as it holds at most 25 live agent keys.
 */
import { Elysia, t } from "elysia";
import { SCOPES } from "../../actors/agent/access.ts";
import { oauthRegisterBucket } from "../../actors/agent/limits.ts";
import { ipActor } from "../../actors/ip/index.ts";
import { clientIp, setRateHeaders, userFromRequest } from "../plugins/auth.ts";
import { isJsonContentType } from "../plugins/json-body.ts";
import type { Services } from "../services.ts";
import { isAcceptableRedirectUri, type AuthMethod, type GrantType } from "./clients.ts";
import { answerOAuthErrors, noStore, OAUTH_BASE, OAuthError, randomSecret, sha256hex } from "./common.ts";

const GRANTS: readonly GrantType[] = ["authorization_code", "refresh_token", "client_credentials"];
const METHODS: readonly AuthMethod[] = ["none", "client_secret_basic", "client_secret_post"];

/**
 * Registration is unauthenticated, and every accepted value is stored: lists and strings are bounded so one
 * request cannot store ~0.3 MB of redirect URIs (audit N6), nor the 22 KB that 10 URIs of 2,000 characters still
 * made (audit W-1): the redirect URIs together are at most 4 KiB (UTF-8), the name at most 200 characters, and a
 * longer one is refused, not cut. Generous for any real client: MCP clients register one or two redirect URIs of
 * well under 100 bytes (a loopback callback, their web app's).
 */
/**
 * The most live (not deleted) clients one account may have registered with its session: 409 too_many_clients for
 * one more, until it deletes one (DELETE /api/v1/oauth/clients/{client_id}, or Connected apps). They are standing
 * credentials like agent keys (a client_credentials client acts for the account), never swept, and listed whole by
 * GET /api/v1/oauth/clients and the Connected apps page: the same bound as agent keys' default (AGENT_KEYS_MAX_LIVE)
 * keeps both small. Ownerless (anonymous) registrations are bounded by the per-address rate and the sweep instead.
 */
export const OWNED_CLIENTS_MAX = 25;

export const DCR_LIMITS = { redirectUris: 10, uriChars: 2000, redirectUrisBytes: 4096, listItems: 10, scopeChars: 500, nameChars: 200 } as const;

function strings(v: unknown, field: string, maxItems: number = DCR_LIMITS.listItems, maxChars: number = DCR_LIMITS.uriChars): string[] | undefined {
  if (v === undefined) return undefined;
  if (!Array.isArray(v) || !v.every((x) => typeof x === "string")) throw new OAuthError("invalid_client_metadata", `${field} must be an array of strings`);
  if (v.length > maxItems) throw new OAuthError("invalid_client_metadata", `${field} may hold at most ${maxItems} entries`);
  if (v.some((x: string) => x.length > maxChars)) throw new OAuthError("invalid_client_metadata", `each ${field} entry may be at most ${maxChars} characters`);
  // duplicates add nothing but stored bytes
  return [...new Set(v as string[])];
}

type Headers = Record<string, string | number>;

/**
 * Takes one unit of the address's registration bucket, or throws 429 rate_limit_exceeded with the headers set. The
 * bucket is durable (the ip actor writes its count before answering: a registration writes a row anyway), so an
 * address that waits for its actor to go idle, or a restart, does not get a fresh one. Returns the give-back.
 * The refusal is an OAuth error body like the route's 400 and 401 (review RZ-2): in the service envelope, `error`
 * held the sentence and no `error_description`, so an OAuth client (the MCP SDK's registerClient) showed an empty
 * message and lost the wait.
 */
async function admitRegistration(svc: Services, ip: string, headers: Headers): Promise<() => Promise<void>> {
  if (!svc.config.RATE_LIMITS_ENABLED) return async () => {};
  const { owner, id, limit, windowMs } = oauthRegisterBucket(ip);
  const buckets = [{ id, limit, windowMs }];
  const res = await svc.actors.ask(ipActor, owner, "admitDurable", { buckets });
  // the headers show the tightest bucket: this one once it has fewer left than the global one shown already
  const shown = Number(headers["x-ratelimit-remaining"]);
  if (!res.allowed || !Number.isFinite(shown) || res.rate.remaining <= shown) setRateHeaders(headers, res.rate);
  if (!res.allowed) {
    const wait = res.rate.retryAfter ?? Math.max(1, res.rate.reset - Math.floor(svc.clock.now() / 1000));
    throw new OAuthError("rate_limit_exceeded", `Too many client registrations from this address; retry after ${wait} seconds.`, 429, wait);
  }
  return () => svc.actors.ask(ipActor, owner, "releaseDurable", { buckets, consumedAt: res.consumedAt }).then(() => {}, () => {});
}

export function registrationRoutes(svc: Services) {
  return new Elysia({ name: "oauth-register" }).post(
    `${OAUTH_BASE}/register`,
    async ({ body, request, server, set }) => {
      const headers = set.headers as Headers;
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
        if (redirectUris.reduce((n, u) => n + Buffer.byteLength(u, "utf8"), 0) > DCR_LIMITS.redirectUrisBytes) {
          throw new OAuthError("invalid_client_metadata", `redirect_uris may be at most ${DCR_LIMITS.redirectUrisBytes} bytes together`);
        }
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
        if (m.client_name !== undefined && typeof m.client_name !== "string") throw new OAuthError("invalid_client_metadata", "client_name must be a string");
        const name = m.client_name ?? "";
        if ([...name].length > DCR_LIMITS.nameChars) throw new OAuthError("invalid_client_metadata", `client_name may be at most ${DCR_LIMITS.nameChars} characters`);
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
        // counted only now: a refused body stores nothing (its cost is the global bucket's)
        const giveBack = await admitRegistration(svc, clientIp(request, server), headers);
        try {
          await svc.sql.begin(async (tx) => {
            if (owner) {
              // counted under the account's row lock, as agent keys are: two registrations racing cannot both take the last place
              await tx`SELECT 1 FROM users WHERE id = ${owner} FOR UPDATE`;
              const [{ live }] = await tx<{ live: number }[]>`
                SELECT count(*)::int AS live FROM oauth_clients WHERE owner_user_id = ${owner} AND deleted_at IS NULL`;
              if (live >= OWNED_CLIENTS_MAX) {
                throw new OAuthError(
                  "too_many_clients",
                  `Your account already holds ${live} registered OAuth clients, the most allowed (${OWNED_CLIENTS_MAX}); delete one (DELETE /api/v1/oauth/clients/{client_id}, or Connected apps in the dashboard) first.`,
                );
              }
            }
            await tx`INSERT INTO oauth_clients (client_id, secret_hash, client_name, redirect_uris, grant_types, token_endpoint_auth_method, scope, owner_user_id)
                     VALUES (${clientId}, ${secret ? sha256hex(secret) : null}, ${name}, ${redirectUris}, ${grantTypes}, ${method}, ${ordered.join(" ")}, ${owner})`;
          });
        } catch (err) {
          await giveBack();
          throw err;
        }
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
      }, undefined, "invalid_client_metadata"); // a value the database refuses (a NUL byte) is RFC 7591's metadata error
    },
    {
      body: t.Unknown(),
      detail: {
        tags: ["oauth"],
        summary: "Dynamic client registration (RFC 7591)",
        description:
          "JSON client metadata: redirect_uris, client_name, grant_types (authorization_code, refresh_token, client_credentials), token_endpoint_auth_method (none, client_secret_basic, client_secret_post), scope. 201 with client_id (and client_secret for confidential clients). Bounds: redirect URIs 4 KiB together, client_name 200 characters; 20 registrations per hour per client address; an account holds at most 25 live clients registered with its session (409 too_many_clients: delete one first); a client registered without a user session that no user authorizes within 24 h, or unused for 31 days, is deleted. Errors: 400 invalid_redirect_uri / invalid_client_metadata, 401 invalid_client, 429 rate_limit_exceeded.",
        responses: {
          201: { description: "Registered client" },
          400: { description: "invalid_redirect_uri or invalid_client_metadata (RFC 7591 §3.2.2; `code` repeats `error`)" },
          401: { description: "invalid_client: the Authorization bearer is not a valid session" },
          409: { description: "too_many_clients: the session's account already holds 25 live registered clients (delete one first)" },
          429: { description: "rate_limit_exceeded: the global bucket, or 20 registrations per hour from this address (Retry-After)" },
        },
      },
    },
  );
}
