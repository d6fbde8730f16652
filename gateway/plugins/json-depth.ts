/**
 * Shape bounds for JSON request bodies, checked before any route's schema runs; a body past one is refused with 400
 * `validation_error` naming the bound:
 *  - nesting (MCP/identity audit H1): objects and arrays at most MAX_JSON_DEPTH levels deep (the top-level value is
 *    level 1);
 *  - width (review H, finding 1): no array longer than MAX_JSON_ARRAY_ITEMS, and at most one value (object, array,
 *    string, number, boolean, null) per BYTES_PER_JSON_VALUE bytes of the route's body limit (body-limit.ts):
 *    131,072 values on 1 MiB routes, 1,048,576 on the 8 MiB merchant routes.
 *
 * Why: parsing a big body is cheap, but Elysia's `ValidationError` for it is not. Its constructor serialises the
 * whole body (pretty-printed, plus the value of each of up to 64 errors) into its message: for a 20,000-level body
 * that is quadratic in depth (8.7 s of blocked event loop and 1.8 GB for one unauthenticated 120 KB body; a stack
 * overflow and a 500 at 100,000 levels), for a wide one linear in the number of values (a 5 MiB array of 2.7 M
 * zeros on the catalog PUT, whose schema runs before authentication: 1.5 s blocked and ~100 MB per request). Time
 * per value is ~0.17 µs, so the value budget bounds the worst case to ~20 ms per 1 MiB route and ~165 ms per 8 MiB
 * merchant request (which then has to upload 8 MiB for it).
 * Legitimate bodies stay far inside: the longest array of the API is a 1,000-item catalog batch, no body nests past
 * ~5 levels (x402 payloads, AP2 mandates), and a 1,000-product batch with 20 variants each is ~196,000 values in
 * 3.1 MiB (~16 bytes per value; the budget allows 8).
 *
 * The check is a transform-stage hook (Elysia: parse → transform → validation), registered globally ahead of every
 * module so it runs before any route's validation. Routes that parse their own body (MCP: `parse: "none"`, the
 * dashboard's JSONL upload) call `jsonBoundBreach` / `exceedsJsonDepth` themselves. The walk is iterative (no
 * recursion to overflow), checks an array's length before looking inside it, and stops at the first breach: for an
 * ordinary request a few dozen property reads (~0.13 µs), for a 1,000-product catalog (739 KB) ~0.08 ms warm, an
 * eighth of its JSON.parse (0.67 ms).
 */
import { Elysia } from "elysia";
import { fail } from "../../actors/runtime/errors.ts";
import { parsedAsJson } from "../rest/optional-body.ts";
import { bodyLimitFor } from "./body-limit.ts";
import { assertJsonContract, repeatedQueryParameter, repeatedQueryRefusal, underJsonContract } from "./json-body.ts";

export const MAX_JSON_DEPTH = 64;
/** The longest array a body may hold (the largest legitimate one is a 1,000-item catalog or inventory batch). */
export const MAX_JSON_ARRAY_ITEMS = 10_000;
/** One value allowed per this many bytes of a route's body limit (see the header). */
export const BYTES_PER_JSON_VALUE = 8;

/** The value budget of a body limited to `limitBytes`. */
export function maxJsonValuesFor(limitBytes: number): number {
  return Math.floor(limitBytes / BYTES_PER_JSON_VALUE);
}

export interface JsonBounds {
  maxDepth: number;
  maxArrayItems: number;
  /** Every value counts, the top-level one included. */
  maxValues: number;
}

/** Which bound a value breaks, and the bound. */
export type JsonBoundBreach = { bound: "depth" | "arrayItems" | "values"; max: number };

/**
 * The first bound `value` breaks, or undefined. Never recursive; an array's length is checked (and counted) before
 * its items are looked at, so a too-wide array costs nothing to refuse.
 */
export function jsonBoundBreach(value: unknown, bounds: JsonBounds): JsonBoundBreach | undefined {
  if (value === null || typeof value !== "object") return undefined;
  const { maxDepth, maxArrayItems, maxValues } = bounds;
  let values = 1;
  const stack: unknown[] = [value];
  const depths: number[] = [1];
  while (stack.length > 0) {
    const v = stack.pop() as object;
    const d = depths.pop()!;
    if (d > maxDepth) return { bound: "depth", max: maxDepth };
    if (Array.isArray(v)) {
      if (v.length > maxArrayItems) return { bound: "arrayItems", max: maxArrayItems };
      values += v.length;
      if (values > maxValues) return { bound: "values", max: maxValues };
      for (let i = 0; i < v.length; i++) {
        const c: unknown = v[i];
        if (c !== null && typeof c === "object") {
          stack.push(c);
          depths.push(d + 1);
        }
      }
    } else {
      for (const k in v) {
        if (++values > maxValues) return { bound: "values", max: maxValues };
        const c: unknown = (v as Record<string, unknown>)[k];
        if (c !== null && typeof c === "object") {
          stack.push(c);
          depths.push(d + 1);
        }
      }
    }
  }
  return undefined;
}

/** The body bounds of a route by its path (its body limit sets the value budget). */
export function jsonBoundsFor(pathname: string): JsonBounds {
  return { maxDepth: MAX_JSON_DEPTH, maxArrayItems: MAX_JSON_ARRAY_ITEMS, maxValues: maxJsonValuesFor(bodyLimitFor(pathname)) };
}

/** The refusal's text and details for a breach; never repeats any of the value. */
export function breachMessage(b: JsonBoundBreach, what: string = "The JSON body"): { message: string; details: Record<string, number> } {
  switch (b.bound) {
    case "depth":
      return { message: `${what} nests objects/arrays more than ${b.max} levels deep.`, details: { maxDepth: b.max } };
    case "arrayItems":
      return { message: `${what} has an array of more than ${b.max} items.`, details: { maxArrayItems: b.max } };
    case "values":
      return { message: `${what} holds more than ${b.max} values (objects, arrays, strings, numbers…); split it into smaller requests.`, details: { maxValues: b.max } };
  }
}

/**
 * True when `value` nests objects/arrays more than `max` levels deep (a scalar is depth 0, `{}` and `[]` depth 1).
 * Never recursive; cost is bounded by the number of containers visited before the answer is known.
 */
export function exceedsJsonDepth(value: unknown, max: number = MAX_JSON_DEPTH): boolean {
  return jsonBoundBreach(value, { maxDepth: max, maxArrayItems: Infinity, maxValues: Infinity }) !== undefined;
}

export function tooDeepMessage(max: number = MAX_JSON_DEPTH): string {
  return `The JSON body nests objects/arrays more than ${max} levels deep.`;
}

/** The parts of the request context the global hook reads (`qi`: where Elysia found the query string, -1 for none). */
interface TransformContext {
  body: unknown;
  path: string;
  request: Request;
  url?: string;
  qi?: number;
}

/**
 * The global hook: the request contract of /api/v1 (json-body.ts: a repeated query parameter, a body that is not
 * JSON or not a JSON object), then the shape bounds. Only plain objects and arrays are walked: a body Elysia parsed
 * as text, form data or a file is left alone (it cannot nest). The context is destructured (see errors.ts): `url`
 * and `qi` are already on it, computed for the request hooks, so a request without a query string pays one compare.
 */
export const jsonDepth = new Elysia({ name: "json-depth" }).onTransform({ as: "global" }, ({ body, path, request, url, qi }: TransformContext) => {
  if (qi !== undefined && qi !== -1 && url !== undefined && underJsonContract(path)) {
    const repeated = repeatedQueryParameter(url, qi);
    if (repeated !== undefined) throw repeatedQueryRefusal(repeated);
  }
  if (body === undefined) return;
  assertJsonContract(path, body, () => request.headers.get("content-type"), () => parsedAsJson.has(request));
  if (body !== null && typeof body === "object" && (Array.isArray(body) || Object.getPrototypeOf(body) === Object.prototype)) {
    const breach = jsonBoundBreach(body, jsonBoundsFor(path));
    if (breach) {
      const { message, details } = breachMessage(breach);
      throw fail("validation_error", message, { location: "body", ...details });
    }
  }
});
