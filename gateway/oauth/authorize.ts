/**
 * The authorization endpoint: GET shows a server-rendered login-and-consent page, POST checks the CSRF token and
 * the credentials and redirects back to the client with a single-use code (60 s) bound to the PKCE challenge
 * (S256 only), the redirect URI and the resource (the store's MCP endpoint).
 *
 * Errors about the client or the redirect URI are shown on the page (never redirected to an unverified URI).
 * Errors of the request itself (response_type, PKCE, scope, resource) are shown on the page too when they come
 * from the GET, before the user has seen the consent form: every client is self-registered (RFC 7591) or a Client
 * ID Metadata Document, so anyone could otherwise turn this endpoint into an open redirector to a URI they
 * registered (RFC 9700 §4.11.2). Once the user has acted on the form (a CSRF-bound POST), errors go back to the
 * client's redirect URI as RFC 6749 §4.1.2.1 wants (access_denied on "deny").
 *
 * The form's password check is gateway/login.ts: the log-in buckets shared with the REST log-in and the dashboard.
 *
 * CSRF: a random nonce in an HttpOnly SameSite=Strict cookie, and in the form an HMAC over that nonce and the
 * authorization request, so a form cannot be submitted from elsewhere or with altered parameters.
 */
import { createHmac, randomBytes } from "node:crypto";
import { Elysia, t } from "elysia";
import { ActorError } from "../../actors/runtime/errors.ts";
import { timingSafeEqualStr } from "../../infra/crypto.ts";
import { deriveKey } from "../../infra/secrets.ts";
import { cookieOf, secureCookies, setCookie } from "../cookies.ts";
import { secretKey } from "../identity.ts";
import { passwordLogin } from "../login.ts";
import { clientIp } from "../plugins/auth.ts";
import type { Services } from "../services.ts";
import { getClient, touchClient, type OAuthClient } from "./clients.ts";
import { issuer, OAUTH_BASE, OAuthError, slugFromResource, storeServes, stringFields } from "./common.ts";
import { createCode } from "./grants.ts";
import { authorizationScopes } from "./scopes.ts";

const CSRF_COOKIE = "acs_oauth_csrf";
const PARAMS = ["response_type", "client_id", "redirect_uri", "code_challenge", "code_challenge_method", "scope", "state", "resource"] as const;
type Params = Partial<Record<(typeof PARAMS)[number], string>>;

const SCOPE_TEXT: Record<string, string> = {
  search: "search the catalog and read products",
  compare: "compare products",
  cart: "create and read carts, apply coupons",
  checkout: "check out and pay, request refunds, use the wallet",
  "checkout:delegate": "check out through a payment protocol bridge",
  "orders:read": "read order history",
  "merchants:read": "read merchant profiles and policies",
  "protocols:discover": "see which payment protocols a merchant supports",
};

function esc(s: string): string {
  return s.replace(/[&<>"']/g, (c) => ({ "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&#39;" })[c]!);
}

interface Validated {
  client: OAuthClient;
  redirectUri: string;
  scopes: string[];
  resource: string;
  slug: string;
  codeChallenge: string;
  state?: string;
}

/** Errors that must not be redirected (the client or redirect URI cannot be trusted). */
class PageError extends Error {}

async function validate(svc: Services, p: Params, from: string): Promise<Validated> {
  if (!p.client_id) throw new PageError("The request has no client_id.");
  const client = await getClient(svc, p.client_id, from);
  if (!client) throw new PageError("Unknown client.");
  let redirectUri = p.redirect_uri;
  if (!redirectUri && client.redirectUris.length === 1) redirectUri = client.redirectUris[0];
  if (!redirectUri || !client.redirectUris.includes(redirectUri)) throw new PageError("The redirect URI is not registered for this client.");
  const v = { client, redirectUri, state: p.state } as Validated;
  // From here on, errors go back to the client.
  try {
    if (p.response_type !== "code") throw new OAuthError("unsupported_response_type", 'response_type must be "code"');
    if (!client.grantTypes.includes("authorization_code")) throw new OAuthError("unauthorized_client", "the client is not registered for the authorization_code grant");
    if (!p.code_challenge) throw new OAuthError("invalid_request", "code_challenge is required (PKCE)");
    if (p.code_challenge_method !== "S256") throw new OAuthError("invalid_request", "code_challenge_method must be S256 (plain is not accepted)");
    if (!/^[A-Za-z0-9_-]{43}$/.test(p.code_challenge)) throw new OAuthError("invalid_request", "code_challenge must be a base64url SHA-256 digest (43 characters)");
    if (!p.resource) throw new OAuthError("invalid_target", "resource is required: the store's MCP endpoint {site_url}/{slug}/mcp (RFC 8707)");
    const slug = slugFromResource(svc, p.resource);
    // an ineligible store (suspended, hidden, UNVERIFIED, trust under 0.3) is unknown here, as at its MCP endpoint
    // and metadata (404): the same words, on the page (GET) or back to the client (POST: it may have become
    // ineligible while the page was open)
    if (!slug || !(await storeServes(svc, slug))) throw new OAuthError("invalid_target", "unknown resource");
    v.scopes = authorizationScopes(p.scope, client);
    v.resource = p.resource;
    v.slug = slug;
    v.codeChallenge = p.code_challenge;
  } catch (err) {
    if (err instanceof OAuthError) throw Object.assign(err, { redirect: v });
    throw err;
  }
  return v;
}

function redirectWith(svc: Services, v: Pick<Validated, "redirectUri" | "state">, params: Record<string, string>): string {
  const u = new URL(v.redirectUri);
  for (const [k, val] of Object.entries(params)) u.searchParams.set(k, val);
  if (v.state !== undefined) u.searchParams.set("state", v.state);
  u.searchParams.set("iss", issuer(svc));
  return u.toString();
}

function csrfKey(svc: Services): Buffer {
  let k = svc.extras.get("oauthCsrfKey") as Buffer | undefined;
  if (!k) svc.extras.set("oauthCsrfKey", (k = deriveKey(secretKey(svc), "oauth-csrf-v1")));
  return k;
}

function csrfToken(svc: Services, nonce: string, p: Params): string {
  const canonical = PARAMS.map((k) => `${k}=${p[k] ?? ""}`).join("&");
  return createHmac("sha256", csrfKey(svc)).update(`${nonce}\n${canonical}`).digest("base64url");
}

function pageHeaders(headers: Record<string, string>): void {
  headers["content-type"] = "text/html; charset=utf-8";
  headers["cache-control"] = "no-store";
  headers["x-frame-options"] = "DENY";
  headers["content-security-policy"] = "default-src 'none'; style-src 'unsafe-inline'; frame-ancestors 'none'; base-uri 'none'";
  headers["referrer-policy"] = "no-referrer";
}

function errorPage(message: string): string {
  return `<!doctype html><html lang="en"><head><meta charset="utf-8"><title>Authorization error</title></head><body><h1>Authorization error</h1><p>${esc(message)}</p></body></html>`;
}

function consentPage(v: Validated, p: Params, csrf: string, message?: string): string {
  const hidden = PARAMS.filter((k) => p[k] !== undefined)
    .map((k) => `<input type="hidden" name="${k}" value="${esc(p[k]!)}">`)
    .join("");
  const scopes = v.scopes.map((s) => `<li><code>${esc(s)}</code>: ${esc(SCOPE_TEXT[s] ?? s)}</li>`).join("");
  const name = v.client.name || v.client.clientId;
  return `<!doctype html><html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width">
<title>Authorize ${esc(name)}</title><style>body{font-family:system-ui,sans-serif;max-width:32rem;margin:3rem auto;padding:0 1rem}
label{display:block;margin:.6rem 0}input[type=email],input[type=password]{width:100%;padding:.4rem}.err{color:#b00020}button{margin-right:.5rem;padding:.4rem 1rem}</style></head>
<body><h1>Authorize ${esc(name)}</h1>
<p><strong>${esc(name)}</strong> wants to act for you on the MCP endpoint of store <strong>${esc(v.slug)}</strong>
(<code>${esc(v.resource)}</code>) with these permissions:</p><ul>${scopes}</ul>
${message ? `<p class="err" role="alert">${esc(message)}</p>` : ""}
<form method="post" action="${OAUTH_BASE}/authorize">${hidden}<input type="hidden" name="csrf_token" value="${esc(csrf)}">
<label>E-mail <input type="email" name="email" autocomplete="username" required></label>
<label>Password <input type="password" name="password" autocomplete="current-password" required></label>
<button type="submit" name="decision" value="allow">Allow</button><button type="submit" name="decision" value="deny" formnovalidate>Deny</button>
</form><p><small>You will be sent back to <code>${esc(v.redirectUri)}</code>.</small></p></body></html>`;
}

/** The log-in's refusals that the consent form shows on the page, as the dashboard does (not as a JSON body). */
const LOGIN_REFUSALS: Record<string, { status: number; message: (retryAfter: string | undefined) => string }> = {
  rate_limit_exceeded: {
    status: 429,
    message: (s) => `Too many log-in attempts from this address or for this account. Try again in ${wait(s)}.`,
  },
  service_unavailable: { status: 503, message: (s) => `Too many log-ins are being checked right now. Try again in ${wait(s)}.` },
};

function wait(retryAfter: string | undefined): string {
  const s = Number(retryAfter);
  if (!Number.isFinite(s) || s <= 0) return "a moment";
  return s < 90 ? `${Math.ceil(s)} seconds` : `${Math.ceil(s / 60)} minutes`;
}

function pick(src: Record<string, string>): Params {
  const p: Params = {};
  for (const k of PARAMS) if (src[k] !== undefined) p[k] = src[k];
  return p;
}

export function authorizeRoutes(svc: Services) {
  /** `redirect`: whether an error of the request may go back to the client (only once the user acted on the form). */
  const handleError = (err: unknown, set: { status?: number | string; headers: Record<string, string | number> }, redirect: boolean) => {
    const headers = set.headers as Record<string, string>;
    if (err instanceof OAuthError && err.retryAfterSeconds !== undefined) {
      // a refusal that passes (503 temporarily_unavailable: the client's metadata document cannot be fetched now)
      pageHeaders(headers);
      set.status = err.status;
      headers["retry-after"] = String(err.retryAfterSeconds);
      return errorPage(err.description);
    }
    if (err instanceof PageError) {
      pageHeaders(headers);
      set.status = 400;
      return errorPage(err.message);
    }
    if (err instanceof OAuthError && !redirect) {
      pageHeaders(headers);
      set.status = 400;
      return errorPage(`${err.error}: ${err.description}`);
    }
    const target = (err as { redirect?: Validated }).redirect;
    if (err instanceof OAuthError && target) {
      set.status = 302;
      headers.location = redirectWith(svc, target, { error: err.error, error_description: err.description });
      return "";
    }
    throw err;
  };

  return new Elysia({ name: "oauth-authorize" })
    .get(
      `${OAUTH_BASE}/authorize`,
      async ({ query, request, server, set }) => {
        const p = pick(stringFields(query));
        try {
          const v = await validate(svc, p, clientIp(request, server));
          const nonce = randomBytes(32).toString("base64url");
          const headers = set.headers as Record<string, string>;
          pageHeaders(headers);
          headers["set-cookie"] = setCookie(CSRF_COOKIE, nonce, { path: OAUTH_BASE, maxAgeSeconds: 600, secure: secureCookies(svc) });
          return consentPage(v, p, csrfToken(svc, nonce, p));
        } catch (err) {
          return handleError(err, set as never, false);
        }
      },
      {
        detail: {
          tags: ["oauth"],
          summary: "Authorization endpoint (login and consent page)",
          description:
            "response_type=code, client_id, redirect_uri, code_challenge, code_challenge_method=S256 (plain is refused), scope (agent scopes), state, resource ({site_url}/{slug}/mcp; an ineligible store, below BASIC, trust under 0.3, suspended or hidden, is an unknown resource, as an unknown slug). 200 HTML page; 400 HTML page for an unknown client or redirect URI and for an invalid request (the error code and description on the page, never redirected: clients are self-registered, RFC 9700 §4.11.2).",
          responses: { 200: { description: "Login and consent page" }, 400: { description: "Unknown client or redirect URI, or an invalid request (HTML)" }, 429: { description: "rate_limit_exceeded" } },
        },
      },
    )
    .post(
      `${OAUTH_BASE}/authorize`,
      async ({ body, request, server, set }) => {
        const form = stringFields(body);
        const p = pick(form);
        const headers = set.headers as Record<string, string>;
        try {
          const nonce = cookieOf(request, CSRF_COOKIE);
          if (!nonce || !form.csrf_token || !timingSafeEqualStr(form.csrf_token, csrfToken(svc, nonce, p))) {
            pageHeaders(headers);
            set.status = 403;
            return errorPage("The form has expired or did not come from this site. Start the authorization again.");
          }
          const v = await validate(svc, p, clientIp(request, server));
          if (form.decision !== "allow") {
            set.status = 302;
            headers.location = redirectWith(svc, v, { error: "access_denied", error_description: "the user denied the request" });
            return "";
          }
          let user;
          try {
            user = await passwordLogin(svc, {
              ip: clientIp(request, server),
              email: form.email ?? "",
              password: form.password ?? "",
              headers,
              cookie: request.headers.get("cookie"),
              browser: true,
            });
          } catch (err) {
            // a browser is at the other end: the form again with the reason (Retry-After and X-RateLimit-* are set)
            const busy = LOGIN_REFUSALS[err instanceof ActorError ? err.code : ""];
            if (!busy) throw err;
            pageHeaders(headers);
            set.status = busy.status;
            return consentPage(v, p, form.csrf_token, busy.message(headers["retry-after"]));
          }
          if (!user) {
            pageHeaders(headers);
            set.status = 401;
            return consentPage(v, p, form.csrf_token, "Invalid e-mail or password.");
          }
          const code = await createCode(svc, {
            clientId: v.client.clientId,
            userId: user.id,
            scopes: v.scopes,
            resource: v.resource,
            redirectUri: v.redirectUri,
            codeChallenge: v.codeChallenge,
          });
          // a user authorized the client: a use (the sweep deletes ownerless clients nobody authorized)
          await touchClient(svc, v.client);
          set.status = 302;
          headers["cache-control"] = "no-store";
          headers.location = redirectWith(svc, v, { code });
          return "";
        } catch (err) {
          return handleError(err, set as never, true);
        }
      },
      {
        body: t.Unknown(),
        detail: {
          tags: ["oauth"],
          summary: "Authorization endpoint (form submission)",
          description: "The page's form: the authorization request, csrf_token, email, password, decision=allow|deny. 302 to the redirect URI with code (or error=access_denied); 401 page for wrong credentials; 403 page for a bad CSRF token. \"allow\" passes the log-in buckets shared with POST /api/v1/auth/login and the dashboard (429 with Retry-After and X-RateLimit-*; 503 with Retry-After when too many passwords are being checked): both answer the consent page again with the reason (HTML). A success sets the known-device cookie.",
          responses: {
            302: { description: "Back to the client" },
            401: { description: "Wrong credentials (HTML)" },
            403: { description: "CSRF check failed (HTML)" },
            429: { description: "Too many log-in attempts: the consent page with the reason (HTML)" },
            503: { description: "Too many passwords being checked: the consent page with the reason (HTML)" },
          },
        },
      },
    );
}

