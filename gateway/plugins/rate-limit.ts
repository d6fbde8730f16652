/**
 * The global layer (spec Limits §3: 500 requests per 15 minutes per IP, or per user for a JWT caller) on every
 * route that has no layer of its own, so every response carries X-RateLimit-* headers.
 *
 * Routes with their own layers are skipped here, so nothing is counted twice:
 * - keyed agentic REST (`/api/v1/agent/*` routes in ROUTE_RULES): the agent actor admits the key's tier bucket,
 *   and a request without a valid key is counted per IP by `authenticateAgent`;
 * - the store MCP endpoints (`/{slug}/mcp`, `/{slug}/mcp/discovery|customer|checkout`): `verifyMcpAccess` /
 *   `authenticateAgent(surface "mcp…")` / `admitAnonymous` apply the MCP layers (which include the global one
 *   where the spec wants it);
 * - the health probes `/health`, `/api/v1/health` (operators' endpoints, not an API surface), and `/metrics`: a
 *   scrape it admits (METRICS_TOKEN's bearer, or open outside production without one) takes no bucket, a refused one
 *   (401 without the token, 404 where it is off) is counted per IP in the public bucket like any failed credential,
 *   so guessing the token is bounded (metrics.ts `checkMetricsScrape`; audit X-5);
 * - paths registered with `registerOwnLayer` (benchmarks, probes).
 * Public REST routes (trust score, directory) call `admitAnonymous(svc, "public-rest", …)` themselves: the global
 * bucket admitted here is not admitted again there (auth.ts `markGlobalAdmitted`), only their 30/min bucket.
 *
 * Admission runs in onRequest, before routing, so unknown paths (404) and refused requests carry headers too. The
 * keyed agentic REST routes are admitted here as well, by their key (auth.ts `admitAgentEarly`): before the body
 * is parsed or validated, so a caller without a valid key never learns anything about a route's body schema.
 *
 * A refusal is our error envelope, except on the OAuth endpoints whose errors are RFC 6749 §5.2 bodies (register,
 * token, revoke): there it is the same OAuth body as their own refusals (`oauthRefusal`).
 */
import { Elysia } from "elysia";
import { findRouteRule, AGENT_API_BASE } from "../../actors/agent/access.ts";
import { bucketsFor, GLOBAL_LIMIT } from "../../actors/agent/limits.ts";
import { ActorError } from "../../actors/runtime/errors.ts";
import { admitAgentEarly, admitAnonymous, admitOthers, clientIp, markGlobalAdmitted, setRateHeaders, userFromRequest } from "./auth.ts";
import { checkMetricsScrape, isMetricsPath } from "./metrics.ts";
import { noStore, OAUTH_BASE, OAuthError, oauthErrorBody } from "../oauth/common.ts";
import type { Services } from "../services.ts";
import { pathOf } from "../url-path.ts";
import { STORE_SLUG_PART } from "../../actors/store/slug.ts";

type Headers = Record<string, string | number>;

const MCP_PATH = new RegExp(`^/${STORE_SLUG_PART}/mcp(?:/(?:discovery|customer|checkout))?/?$`);
const extraOwnLayers: RegExp[] = [];

/** Declares paths whose routes apply their own rate-limit layer (so the global plugin leaves them alone). */
export function registerOwnLayer(pattern: RegExp): void {
  extraOwnLayers.push(pattern);
}


const AGENT_PREFIX = AGENT_API_BASE + "/";

/** A keyed agentic REST route (the access table lists it): admitted by the agent key, in this hook. */
function isAgentRoute(method: string, path: string): boolean {
  return path.startsWith(AGENT_PREFIX) && findRouteRule(method, path) !== undefined;
}

/** True when a route other than this plugin does the rate admission for the request (or none applies). */
export function hasOwnLayer(method: string, path: string): boolean {
  // Operators' endpoints are not an API surface: a load balancer probing health every second would use up the
  // global 500 / 15 min in eight minutes and take the service out of rotation.
  if (isMetricsPath(path) || path === "/health" || path === "/api/v1/health") return true;
  if (isAgentRoute(method, path)) return true;
  if (MCP_PATH.test(path)) return true;
  for (const re of extraOwnLayers) if (re.test(path)) return true;
  return false;
}

/**
 * The OAuth endpoints whose every error is an RFC 6749 §5.2 body (`error` the code, `error_description` the message;
 * openapi/operations.ts gives them M.OAuthErrorBody). The discovery documents and the JWKS define no error body and
 * keep the envelope; /oauth/authorize answers a person with HTML pages of its own.
 */
const OAUTH_ERROR_PATHS = new Set([`${OAUTH_BASE}/register`, `${OAUTH_BASE}/token`, `${OAUTH_BASE}/revoke`]);

function answersOAuthErrors(path: string): boolean {
  return OAUTH_ERROR_PATHS.has(path.length > 1 && path.endsWith("/") ? path.slice(0, -1) : path);
}

/**
 * A refusal answered with a body of its own. Elysia answers an error that has `toResponse` with what it returns
 * (status and headers from `set`) and skips the onError hooks, so the error plugin does not turn it into our envelope;
 * the after-response hooks still run, so metrics and the access log count it like any refusal (returning the body
 * from onRequest instead would skip them).
 */
class AnsweredRefusal extends Error {
  constructor(private readonly body: unknown) {
    super("refused before routing");
  }

  toResponse(): unknown {
    return this.body;
  }
}

/**
 * The global layer's 429 on an OAuth endpoint (OAUTH_ERROR_PATHS): the OAuth body the registration bucket's 429 has
 * (register.ts, review RZ-2), with the Retry-After and X-RateLimit-* headers admitOthers set. In our envelope an OAuth
 * client (the MCP SDK) read the sentence in `error` as the error code and had no message. Anything else is rethrown.
 */
function oauthRefusal(err: unknown, set: { status?: number | string; headers: Headers }): unknown {
  if (!(err instanceof ActorError) || err.code !== "rate_limit_exceeded") return err;
  const wait = Number(set.headers["retry-after"] ?? err.details?.retryAfter ?? 1);
  // the bucket is the address's, or the account's for a caller with a session token: the words name neither
  const refusal = new OAuthError("rate_limit_exceeded", `Rate limit exceeded; retry after ${wait} seconds.`, 429, wait);
  set.status = refusal.status;
  set.headers["retry-after"] = String(wait);
  set.headers["content-type"] = "application/json";
  noStore(set.headers);
  return new AnsweredRefusal(oauthErrorBody(refusal));
}

const GLOBAL_LIMIT_TEXT = String(GLOBAL_LIMIT.limit);
let staticReset = { sec: 0, text: "" };

/** Limits off: the global bucket's shape, full, ending one window from now (no actor call, no allocation). */
function staticGlobalHeaders(headers: Headers): void {
  const sec = Math.floor(Date.now() / 1000);
  if (sec !== staticReset.sec) staticReset = { sec, text: String(sec + Math.ceil(GLOBAL_LIMIT.windowMs / 1000)) };
  headers["x-ratelimit-limit"] = GLOBAL_LIMIT_TEXT;
  headers["x-ratelimit-remaining"] = GLOBAL_LIMIT_TEXT;
  headers["x-ratelimit-reset"] = staticReset.text;
}

export function rateLimit(svc: Services) {
  if (!svc.config.RATE_LIMITS_ENABLED) {
    // limits off (benchmarks): a synchronous hook, so no promise per request. An agent route's admission is
    // started here and awaited by the route's derive (auth.ts), which still comes before body validation.
    return new Elysia({ name: "rate-limit" }).onRequest(({ request, set, server }) => {
      const path = pathOf(request.url);
      if (isAgentRoute(request.method, path)) admitAgentEarly(svc, request, set.headers as Headers, server);
      else if (isMetricsPath(path)) checkMetricsScrape(svc.config, request, set.headers as Headers);
      else if (!hasOwnLayer(request.method, path)) staticGlobalHeaders(set.headers as Headers);
    });
  }
  return new Elysia({ name: "rate-limit" }).onRequest(async ({ request, set, server }) => {
    const path = pathOf(request.url);
    if (isMetricsPath(path)) {
      try {
        checkMetricsScrape(svc.config, request, set.headers as Headers);
      } catch (err) {
        // a refused scrape is counted per address (a 429 once the public bucket is spent), then refused
        await admitAnonymous(svc, "public-rest", clientIp(request, server), set.headers as Headers);
        throw err;
      }
      return;
    }
    // Agent routes are admitted by their key before anything else happens to the request (the body is not even
    // parsed yet): a request without a valid key is 401/403/429 with rate headers, whatever its body.
    if (isAgentRoute(request.method, path)) {
      await admitAgentEarly(svc, request, set.headers as Headers, server);
      return;
    }
    if (hasOwnLayer(request.method, path)) return;
    const headers = set.headers as Headers;
    const ip = clientIp(request, server);
    let userId: string | null = null;
    if (request.headers.has("authorization")) userId = (await userFromRequest(svc, request).catch(() => null))?.id ?? null;
    const rate = await admitOthers(svc, bucketsFor({ surface: "other", ip, userId }), headers).catch((err: unknown) => {
      throw answersOAuthErrors(path) ? oauthRefusal(err, set) : err;
    });
    setRateHeaders(headers, rate);
    markGlobalAdmitted(headers, rate);
  });
}
