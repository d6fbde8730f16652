/**
 * One place where failures become the spec's error envelope: ActorErrors by the code table
 * (actors/runtime/errors.ts), Elysia's validation errors as 400 `validation_error` with the failing field and
 * the rule it broke (validation-message.ts), unknown routes as 404 `route_not_found` and a known path with the
 * wrong method as 405 `method_not_allowed` with `Allow` (route-table.ts), malformed JSON as 400, a database outage (infra/db.ts
 * isDatabaseUnavailable) as 503 `service_unavailable`, and anything unexpected as a 500
 * `internal_error` without a stack trace (the trace goes to the log with the request id). On an ACP or UCP surface
 * the envelope is then converted to that protocol's error shape, same status (gateway/bridge/error-shape.ts); on an
 * MCP endpoint a body over the limit becomes a JSON-RPC error, same status (gateway/mcp/oversize.ts).
 */
import { Elysia } from "elysia";
import { ActorError, ERROR_TABLE, isInputDataError } from "../../actors/runtime/errors.ts";
import { isDatabaseUnavailable } from "../../infra/db.ts";
import { log } from "../../infra/log.ts";
import { AGENT_API_BASE } from "../../actors/agent/access.ts";
import { loggedPath, pathOf } from "../url-path.ts";
import { ECHO_MAX_CHARS, errorBody, type ErrorBody } from "../envelope.ts";
import { bridgeErrorBody, errorShapeOf } from "../bridge/error-shape.ts";
import { dashboardEdgeAnswer } from "../dashboard/edge.ts";
import { isMcpEndpointPath, mcpOversizeAnswer } from "../mcp/oversize.ts";
import { parsedAsJson } from "../rest/optional-body.ts";
import { contentTypeAnswer, isJsonContentType } from "./json-body.ts";
import { type AppLike, decodeFailurePath, RouteTable } from "./route-table.ts";
import { type FailedCheck, fieldOfPath, validationAnswer } from "../../infra/validation-message.ts";

/** The spec's 503 row: "overload or maintenance; retry after 30 seconds". */
const DB_RETRY_AFTER_SECONDS = 30;

/** The parts of Elysia's ValidationError read here: where it failed and its first TypeBox error, computed when it was thrown. */
interface ValidationLike {
  type?: string;
  valueError?: FailedCheck;
}

/** The parts of the request context read on a failure (Elysia passes them to onError when they were reached). */
interface FailureContext {
  request: Request;
  route?: string;
  server?: unknown;
  params?: unknown;
  query?: unknown;
  body?: unknown;
}

const AGENT_PATH_PREFIX = `${AGENT_API_BASE}/`;

/** Each running app's route table, by its Bun server (several apps may share this plugin in one process). */
const routeTables = new WeakMap<object, RouteTable>();

/**
 * The 400 for a schema failure, from the first error only. Elysia's `message` (the whole body pretty-printed) and
 * `all` (re-validates the body and copies up to 64 errors with their values) are never read: for a wide body they
 * cost hundreds of ms and echoed megabytes back to the caller (review H: a 1 MiB login body answered with 2 MB).
 */
function validationDetails(err: ValidationLike, ctx: FailureContext): { message: string; details: Record<string, unknown> } {
  let location = err.type ?? "body";
  let path = err.valueError?.path;
  if (location === "property") {
    // Elysia's t.Integer/t.Numeric check their bounds while decoding and report the bare number without its
    // field or location: decode again against the route's declared schemas to find which one failed.
    const schemas = ctx.server ? routeTables.get(ctx.server as object)?.schemasOf(ctx.request.method, ctx.route) : undefined;
    location = "request";
    for (const where of ["params", "query", "body"] as const) {
      const found = decodeFailurePath(schemas?.[where], ctx[where]);
      if (found !== undefined) {
        location = where;
        path = found + (path ?? "");
        break;
      }
    }
  }
  if (location === "body" && !parsedAsJson.has(ctx.request)) {
    // Elysia reads no body at all for a missing or unknown content type (a form or text body is refused before
    // validation, json-body.ts), and the answer was "Property 'query' is missing" for a body that has it: say what
    // is actually wrong.
    const contentType = ctx.request.headers.get("content-type");
    if (!isJsonContentType(contentType)) return contentTypeAnswer(contentType);
  }
  return validationAnswer(location, fieldOfPath(path), err.valueError);
}

/** A caller's value cut to ECHO_MAX_CHARS, the bound every 400 already keeps. */
const cut = (s: string) => `${s.slice(0, ECHO_MAX_CHARS)}…`;

/** Bun and Elysia answer HEAD wherever GET is routed, so an `Allow` naming GET names HEAD too (RFC 9110 §9.3.2; audit A2-F10). */
function withHead(allowed: string[]): string[] {
  return allowed.includes("GET") && !allowed.includes("HEAD") ? [...allowed, "HEAD"].sort() : allowed;
}

/** Path segments and query values of the URL longer than the echo bound, as the handlers saw them (decoded). */
function longUrlParts(request: Request): string[] {
  const url = new URL(request.url);
  const parts = new Set<string>();
  const add = (v: string) => {
    if (v.length > ECHO_MAX_CHARS) parts.add(v);
  };
  for (const seg of url.pathname.split("/")) {
    add(seg);
    try {
      add(decodeURIComponent(seg));
    } catch {
      /* malformed escape: the raw segment is enough */
    }
  }
  for (const v of url.searchParams.values()) add(v);
  return [...parts].sort((a, b) => b.length - a.length);
}

function boundEchoes(v: unknown, long: string[], depth = 0): unknown {
  if (typeof v === "string") {
    let out = v;
    for (const part of long) if (out.includes(part)) out = out.split(part).join(cut(part));
    return out;
  }
  if (depth > 4 || !v || typeof v !== "object") return v;
  if (Array.isArray(v)) return v.map((x) => boundEchoes(x, long, depth + 1));
  return Object.fromEntries(Object.entries(v).map(([k, x]) => [k, boundEchoes(x, long, depth + 1)]));
}

/**
 * An ActorError's text and details with ids from the URL cut to ECHO_MAX_CHARS: a 404 for a 16,000-character path
 * id echoed it whole in `details` (audit E), like the 400s did before review H. Only values that came from the URL
 * are cut, so a long value of our own (an approval URL) is left as it is.
 */
function boundedActorError(error: ActorError, request: Request): { message: string; details?: Record<string, unknown> } {
  const long = longUrlParts(request);
  if (long.length === 0) return { message: error.message, details: error.details };
  return {
    message: boundEchoes(error.message, long) as string,
    details: error.details === undefined ? undefined : (boundEchoes(error.details, long) as Record<string, unknown>),
  };
}

/**
 * RFC 9110 §15.5.2: a 401 carries a challenge, for the credential that failed. Agent routes take `X-Agent-Api-Key`
 * (a scheme of our own, named after the header: docs/access.md); every other /api/v1 route takes the session JWT
 * (RFC 6750: no `error` when no token was sent, `invalid_token` for a bad or expired one). An AP2 mandate whose
 * user signature fails (`AGENT_TOKEN_INVALID`, gateway/bridge/ap2-auth.ts) was sent with a key that was accepted:
 * its challenge names the mandate's credential instead (review R3-6), so a client does not retry with another key.
 * Only REST answers here: MCP and the OAuth token endpoint set their own challenge first, which is left as it is.
 */
function challenge(headers: Record<string, string>, error: ActorError, request: Request): void {
  const path = pathOf(request.url);
  if (!path.startsWith("/api/v1/")) return;
  if (error.code === "AGENT_TOKEN_INVALID") {
    headers["www-authenticate"] = userAuthorizationChallenge(error);
    return;
  }
  if (path.startsWith(AGENT_PATH_PREFIX)) {
    headers["www-authenticate"] = `ApiKey realm="api", header="X-Agent-Api-Key"`;
    return;
  }
  if (!request.headers.has("authorization")) {
    headers["www-authenticate"] = `Bearer realm="api"`;
    return;
  }
  headers["www-authenticate"] =
    error.code === "token_expired"
      ? `Bearer realm="api", error="invalid_token", error_description="The token has expired"`
      : `Bearer realm="api", error="invalid_token"`;
}

/**
 * The challenge of an AP2 user-signature failure: a scheme of our own named after AP2's credential (there is no
 * registered one), the body field that carries it and the reason (`details.reason`: malformed, unknown_key,
 * signature, expired, …; one of our own tokens, so it needs no escaping).
 */
function userAuthorizationChallenge(error: ActorError): string {
  const field = typeof error.details?.field === "string" ? error.details.field : "payment_mandate.user_authorization";
  const reason = typeof error.details?.reason === "string" && /^[a-z_]{1,40}$/.test(error.details.reason) ? `, error="${error.details.reason}"` : "";
  return `AP2-User-Authorization realm="api", field="${field}"${reason}`;
}

/** The outage warning's rate limit (per process): the first request's line, then one line per window with a count. */
const DB_LOG_EVERY_MS = 10_000;
const dbLog = { lastAt: -Infinity, suppressed: 0 };

export const errors = new Elysia({ name: "errors" })
  .onStart((app) => {
    const server = (app as { server?: unknown }).server;
    if (server && typeof server === "object") routeTables.set(server, new RouteTable(app as unknown as AppLike));
  })
  // The context is destructured, never passed on whole: Elysia infers from this hook's source which parts every
  // route must prepare (sucrose), and a context handed to a function counts as "all of it" — every request then
  // materialised its headers and cookies (+5 µs per request on the wire, found by bench/admission.ts in session 5).
  .onError({ as: "global" }, ({ code, error, set, request, server, route, params, query, body }) => {
    const failure: FailureContext = { request, server, route, params, query, body };
    const path = pathOf(request.url);
    // under /dashboard, a body over the limit, an unknown path or method: the dashboard's HTML page, not the envelope
    const allowedAt = (p: string) => withHead(server ? (routeTables.get(server as object)?.allowedMethods(p) ?? []) : []);
    const page = dashboardEdgeAnswer(path, request.method, code, error, set as FailureSet, allowedAt);
    if (page !== undefined) return page;
    const answer = envelopeOf(code, error, set as FailureSet, failure);
    // an MCP message over the body limit: a JSON-RPC error, same status and headers (gateway/mcp/oversize.ts)
    if (answer.code === "payload_too_large" && isMcpEndpointPath(path)) return mcpOversizeAnswer(answer.error, answer.details);
    // an ACP or UCP surface answers in its protocol's error shape, with the same status (review R3-4)
    const protocol = errorShapeOf(path, request, body);
    return protocol ? bridgeErrorBody(protocol, answer) : answer;
  });

/**
 * The Retry-After of a refusal that says when to come back, or undefined: a 429 that is not a rate bucket's (a
 * cart's hold bound, actors/cart/hold-guard.ts, with `details.retry_after_seconds`), whose bucket's X-RateLimit-Reset
 * already sent would say the wrong thing (audit X-3). One rule for our envelope (here) and the bridges' own error
 * shapes (gateway/bridge/index.ts `respond`, audit B-2: ACP 2026-04-17's Error has no details to carry it).
 */
export function retryAfterOf(error: ActorError): string | undefined {
  const seconds = error.details?.retry_after_seconds;
  return error.code === "rate_limit_exceeded" && typeof seconds === "number" ? String(seconds) : undefined;
}

/** The parts of Elysia's `set` written on a failure. */
interface FailureSet {
  status?: number | string;
  headers: Record<string, string | number>;
}

/** Our error envelope for a failure, with its status and headers set (see the header). */
function envelopeOf(code: unknown, error: unknown, set: FailureSet, failure: FailureContext): ErrorBody {
  const { request, server } = failure;
  const headers = set.headers as Record<string, string>;
  headers["content-type"] = "application/json";
  if (error instanceof ActorError) {
    set.status = ERROR_TABLE[error.code].http;
    // a body refused before it was read (body-limit.ts): the rest of it is not read either, so the connection ends
    if (error.code === "payload_too_large") headers.connection = "close";
    if (set.status === 401 && headers["www-authenticate"] === undefined) challenge(headers, error, request);
    const retryAfter = retryAfterOf(error);
    if (retryAfter !== undefined) headers["retry-after"] = retryAfter;
    const bounded = boundedActorError(error, request);
    return errorBody(error.code, bounded.message, bounded.details);
  }
  if (isDatabaseUnavailable(error)) {
    // An outage, not a bug: the spec's 503 service_unavailable (retryable, "retry after 30 seconds"), no stack.
    // once per DB_LOG_EVERY_MS with a count: under load an outage fails thousands of requests a second
    const now = Date.now();
    if (now - dbLog.lastAt >= DB_LOG_EVERY_MS) {
      log.warn("database unavailable", { requestId: headers["x-request-id"], path: loggedPath(new URL(request.url).pathname), error: (error as Error).message, alsoRefusedSinceLastLine: dbLog.suppressed });
      dbLog.lastAt = now;
      dbLog.suppressed = 0;
    } else dbLog.suppressed++;
    set.status = 503;
    headers["retry-after"] = String(DB_RETRY_AFTER_SECONDS);
    return errorBody("service_unavailable", `The database is not answering; retry after ${DB_RETRY_AFTER_SECONDS} seconds.`, {
      retryAfterSeconds: DB_RETRY_AFTER_SECONDS,
      requestId: headers["x-request-id"],
    });
  }
  if (isInputDataError(error)) {
    set.status = 400;
    return errorBody("validation_error", "A value in the request is not acceptable (for example a NUL byte or an out-of-range number).");
  }
  switch (code) {
    case "VALIDATION": {
      const { message, details } = validationDetails(error as unknown as ValidationLike, failure);
      set.status = 400;
      return errorBody("validation_error", message, details);
    }
    case "PARSE": {
      // a route's own parser refused the body with an answer of ours (optional-body.ts: not JSON, not an object)
      const cause = (error as { cause?: unknown }).cause;
      if (cause instanceof ActorError) {
        set.status = ERROR_TABLE[cause.code].http;
        if (cause.code === "payload_too_large") headers.connection = "close"; // a chunked body cut at its limit
        return errorBody(cause.code, cause.message, cause.details);
      }
      set.status = 400;
      return errorBody("validation_error", "Request body is not valid JSON.", { location: "body" });
    }
    case "NOT_FOUND": {
      const pathname = new URL(request.url).pathname;
      const allowed = withHead(server ? (routeTables.get(server as object)?.allowedMethods(pathname) ?? []) : []);
      const shownPath = pathname.length > ECHO_MAX_CHARS ? cut(pathname) : pathname;
      if (allowed.length > 0) {
        // the path exists under other methods: say which (RFC 9110 405 + Allow), so the agent fixes the method
        set.status = 405;
        headers.allow = allowed.join(", ");
        return errorBody("method_not_allowed", `${request.method} is not allowed on ${shownPath}; use ${allowed.join(" or ")}.`, { method: request.method, allowed });
      }
      set.status = 404;
      return errorBody("route_not_found", `No route for ${request.method} ${shownPath}.`);
    }
    case "INVALID_COOKIE_SIGNATURE":
      set.status = 401;
      return errorBody("unauthorized", "Invalid session cookie.");
    default: {
      const status = (error as { status?: number })?.status;
      if (typeof status === "number" && status >= 400 && status < 500) {
        set.status = status;
        return errorBody(status === 413 ? "payload_too_large" : "validation_error", (error as Error).message || "Bad request.");
      }
      log.error("unhandled error", { requestId: headers["x-request-id"], path: loggedPath(new URL(request.url).pathname), error: error as Error, stack: (error as Error)?.stack });
      set.status = 500;
      return errorBody("internal_error", "Internal server error.", { requestId: headers["x-request-id"] });
    }
  }
}
