/**
 * The request contract of the JSON API under /api/v1 (docs/conventions.md, "Request bodies and query strings"):
 *  - a request body is JSON, sent as `application/json` (or `application/*+json`): Elysia would otherwise parse a
 *    form-encoded or multipart body into an object of strings and serve it (REST audit A-4);
 *  - the JSON body is an object: `[]`, `null`, `42` or `"x"` are refused as such, not as "not valid JSON" (A-9);
 *  - a query parameter is given at most once: Elysia keeps the last of repeated values, so `?days=45&days=30` was
 *    served as 30 without a word (A-9). No route declares a list-valued query parameter.
 * The OAuth endpoints (`/api/v1/oauth/*`) are outside this contract: token, revoke and the consent form are
 * form-encoded by RFC 6749, and register answers its own RFC 7591 errors.
 *
 * Every refusal is the 400 `validation_error` a non-JSON body already got from the error plugin. The checks run in
 * the global transform hook (json-depth.ts), after parsing and before any route's validation; they cost nothing for
 * a request without a body or a query string, and one header read for one with a body.
 */
import { ActorError, fail } from "../../actors/runtime/errors.ts";
import { cutEcho, ECHO_MAX_CHARS, preview } from "../../infra/echo.ts";

const API_PREFIX = "/api/v1/";
const OAUTH_PREFIX = "/api/v1/oauth/";

/** `application/json`, `application/<anything>+json`, with or without parameters (charset). */
export const JSON_CONTENT_TYPE = /^application\/(?:[\w.+-]*\+)?json(?:\s*;|\s*$)/i;

/** True for the paths whose requests this contract covers. */
export function underJsonContract(path: string): boolean {
  return path.startsWith(API_PREFIX) && !path.startsWith(OAUTH_PREFIX);
}

export function isJsonContentType(contentType: string | null): boolean {
  return contentType !== null && JSON_CONTENT_TYPE.test(contentType);
}

/**
 * Makes every JSON media type reach Elysia's JSON parser (review R3-5). Elysia picks its default parser by the 13th
 * character of Content-Type (`application/j…`; an exact `application/json` on a route with a parse hook), so
 * `Application/JSON`, `application/JSON`, `application/vnd.api+json` or `application/merge-patch+json` were read
 * as no body at all: the route's schema then said "must be an object (got undefined)" and an optional body (the
 * bridges) was silently empty. Media types are case-insensitive (RFC 9110 §8.3.1) and `+json` is JSON (RFC 6839),
 * so such a request's Content-Type is rewritten to `application/json` before parsing; the body is then read, or
 * refused as not valid JSON. Called by the edge hook for requests other than GET/HEAD: one header read and one
 * prefix compare when the type is `application/json` as clients send it.
 */
export function normalizeJsonContentType(request: Request): void {
  const type = request.headers.get("content-type");
  if (type === null || type.startsWith("application/json")) return;
  if (JSON_CONTENT_TYPE.test(type)) request.headers.set("content-type", "application/json");
}

/** The text and details of the wrong-content-type 400 (the same answer for every route, with or without a schema). */
export function contentTypeAnswer(contentType: string | null): { message: string; details: Record<string, unknown> } {
  const type = contentType ? contentType.slice(0, ECHO_MAX_CHARS) : null;
  const what = `the request body must be JSON sent with Content-Type: application/json (Content-Type was ${type ? `'${type}'` : "none"})`;
  return {
    message: `Invalid body: ${what}`,
    details: { location: "body", contentType: type, expectedContentType: "application/json", errors: [{ message: what }] },
  };
}

export function contentTypeRefusal(contentType: string | null): ActorError {
  const { message, details } = contentTypeAnswer(contentType);
  return fail("validation_error", message, details);
}

/** A JSON body that is not an object: every body of this API is one. */
export function notAnObjectRefusal(value: unknown): ActorError {
  const what = `must be a JSON object (got ${preview(value)})`;
  return fail("validation_error", `Invalid body: ${what}`, { location: "body", type: "object", errors: [{ message: what }] });
}

/** Any non-null object but an array, whatever its prototype (what JSON.parse gives for `{…}`, and more). */
export function isObjectRecord(v: unknown): v is Record<string, unknown> {
  return v !== null && typeof v === "object" && !Array.isArray(v);
}

/** An object record whose prototype is Object.prototype or null: a `{…}` of a JSON body, not a class instance. */
export function isPlainObject(v: unknown): v is Record<string, unknown> {
  if (!isObjectRecord(v)) return false;
  const proto: unknown = Object.getPrototypeOf(v);
  return proto === Object.prototype || proto === null;
}

/** Query keys are compared decoded (`a%62c` and `abc` are one parameter), as Elysia reads them. */
function decodedKey(raw: string): string {
  const plus = raw.includes("+") ? raw.replace(/\+/g, " ") : raw;
  if (!plus.includes("%")) return plus;
  try {
    return decodeURIComponent(plus);
  } catch {
    return plus;
  }
}

/**
 * The first query parameter named more than once in `url` (its query starts after index `qi`), or undefined.
 * Cost is one pass over the query string; a single parameter is answered without allocating a set.
 */
export function repeatedQueryParameter(url: string, qi: number): string | undefined {
  let end = url.indexOf("#", qi);
  if (end < 0) end = url.length;
  const query = url.slice(qi + 1, end);
  if (!query.includes("&")) return undefined;
  const seen = new Set<string>();
  for (const pair of query.split("&")) {
    if (pair.length === 0) continue;
    const eq = pair.indexOf("=");
    const key = decodedKey(eq < 0 ? pair : pair.slice(0, eq));
    if (seen.has(key)) return key;
    seen.add(key);
  }
  return undefined;
}

export function repeatedQueryRefusal(key: string): ActorError {
  const field = cutEcho(key);
  const what = "given more than once; send each query parameter once";
  return fail("validation_error", `Invalid query field '${field}': ${what}`, { location: "query", field, errors: [{ field, message: what }] });
}

/**
 * The transform-stage check of one request (see the header). `readByOwnParser`: the route's own parser read the
 * body and checked it already (optional-body.ts), so an empty body sent with any content type stays "no body".
 */
export function assertJsonContract(path: string, body: unknown, contentType: () => string | null, readByOwnParser: () => boolean): void {
  if (body === undefined || !underJsonContract(path)) return;
  const type = contentType();
  if (!isJsonContentType(type)) {
    if (!readByOwnParser()) throw contentTypeRefusal(type);
    return;
  }
  if (!isPlainObject(body)) throw notAnObjectRefusal(body);
}
