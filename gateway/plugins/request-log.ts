/**
 * What the metrics plugin's after-response hook writes to the log and which route label it counts a request under
 * (audit U MED-1, MED-3). Both run for every request, so the common case — a successful request at LOG_LEVEL info —
 * costs one comparison and one level check, no line and no allocation.
 *
 * - Every 5xx answer gets one warn line with the request id, method, route template, path (no query string: it may
 *   carry tokens), status and error code, so an operator handed an X-Request-Id from a 503 finds the request. Lines
 *   are capped per second; the next line written says how many were left out (an outage fails thousands of requests
 *   a second, and the log must not become the next outage).
 * - An access line per request only at LOG_LEVEL=debug (docs/operations.md "Logs"): at info a successful request
 *   writes nothing, so the admission bench's µs are not spent on the log.
 * - A request answered before routing (the rate limit's 429, a missing or wrong agent key's 401, the scope check's
 *   403, the body limit's 413) has no route from Elysia: an agent route is labelled with its template (the access
 *   table finds its rule, the app's route list gives the rule's template), anything else `refused_before_routing`.
 *   `unmatched` stays for the real 404/405s, so a scanner's noise and a rate-limited route are told apart.
 */
import { AGENT_API_BASE, findRouteRule, type RouteRule } from "../../actors/agent/access.ts";
import { ActorError } from "../../actors/runtime/errors.ts";
import { isDatabaseUnavailable } from "../../infra/db.ts";
import { log, logEnabled } from "../../infra/log.ts";
import { loggedPath, pathOf } from "../url-path.ts";

/** Failed-request lines written per second and process before the rest are only counted. */
export const FAILURE_LINES_PER_SECOND = 50;
const failures = { second: 0, lines: 0, suppressed: 0 };

/** Labels for responses that no route answered. */
export const UNMATCHED_ROUTE = "unmatched";
export const REFUSED_BEFORE_ROUTING = "refused_before_routing";

const AGENT_PREFIX = `${AGENT_API_BASE}/`;
/** An access-table rule -> the app's own route template for it (its parameter names may differ from the table's). */
const templateOfRule = new Map<RouteRule, string>();

/** Reads the app's agent routes once at start (several apps in one process share the same templates). */
export function learnAgentRoutes(routes: ReadonlyArray<{ method: string; path: string }>): void {
  for (const r of routes) {
    if (!r.path.startsWith(AGENT_PREFIX)) continue;
    const rule = findRouteRule(r.method, r.path.replace(/:[^/]+/g, "x"));
    if (rule && !templateOfRule.has(rule)) templateOfRule.set(rule, r.path);
  }
}

/** The route label of a request Elysia did not route (only called when `route` is empty). */
export function unroutedLabel(method: string, url: string, status: number): string {
  if (status === 404 || status === 405) return UNMATCHED_ROUTE;
  const path = pathOf(url);
  if (path.startsWith(AGENT_PREFIX)) {
    const rule = findRouteRule(method, path);
    if (rule) return templateOfRule.get(rule) ?? AGENT_API_BASE + rule.path;
  }
  return REFUSED_BEFORE_ROUTING;
}

/**
 * The error code of a failed answer: the thrown error's (an ActorError names its code; the error plugin answers a
 * database outage with service_unavailable and anything else unexpected with internal_error), else a returned
 * envelope's `code`. Elysia hands this hook the thrown error, not the envelope the error plugin made of it.
 */
function codeOf(body: unknown, error: unknown, status: number): string | undefined {
  if (error instanceof ActorError) return error.code;
  if (error !== undefined && status >= 500) return isDatabaseUnavailable(error) ? "service_unavailable" : "internal_error";
  if (body && typeof body === "object" && !(body instanceof Response)) {
    const code = (body as { code?: unknown }).code;
    if (typeof code === "string") return code;
  }
  return undefined;
}

export interface AnsweredRequest {
  request: Request;
  route: string;
  status: number;
  requestId: string | undefined;
  body: unknown;
  /** The error thrown for this request, if any (Elysia passes it to the after-response hook). */
  error?: unknown;
  seconds: number | undefined;
}

/** After a response: the failure line of a 5xx, the access line at debug. */
export function logAnswered(a: AnsweredRequest): void {
  if (a.status >= 500) logFailure(a);
  else if (logEnabled("debug")) log.debug("request", fieldsOf(a));
}

function fieldsOf(a: AnsweredRequest): Record<string, unknown> {
  const fields: Record<string, unknown> = { requestId: a.requestId, method: a.request.method, route: a.route, path: loggedPath(pathOf(a.request.url)), status: a.status };
  const code = codeOf(a.body, a.error, a.status);
  if (code !== undefined) fields.code = code;
  if (a.seconds !== undefined) fields.ms = Math.round(a.seconds * 1e4) / 10;
  return fields;
}

function logFailure(a: AnsweredRequest): void {
  const second = Math.floor(Date.now() / 1000);
  if (second !== failures.second) {
    failures.second = second;
    failures.lines = 0;
  }
  if (failures.lines >= FAILURE_LINES_PER_SECOND) {
    failures.suppressed++;
    return;
  }
  failures.lines++;
  const fields = fieldsOf(a);
  if (failures.suppressed > 0) {
    fields.failedLinesLeftOut = failures.suppressed;
    failures.suppressed = 0;
  }
  log.warn("request failed", fields);
}
