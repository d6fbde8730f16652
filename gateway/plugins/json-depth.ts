/**
 * Nesting bound for JSON request bodies (MCP/identity audit H1). A body may nest objects and arrays at most
 * MAX_JSON_DEPTH levels deep (the top-level value is level 1); deeper is refused with 400 `validation_error` before
 * the route's schema runs.
 *
 * Why: parsing a 20,000-level body is cheap, but Elysia's `ValidationError` for it is not (its message and `all`
 * walk the value recursively, quadratic in depth: 8.7 s of blocked event loop and 1.8 GB for one unauthenticated
 * 120 KB body; a stack overflow and a 500 at 100,000 levels), and any `JSON.stringify` of such a value overflows too.
 * No body of this API needs more than a handful of levels (x402 payloads and AP2 mandates, the deepest, are ~5), so
 * 64 leaves plenty of room.
 *
 * The check is a transform-stage hook (Elysia: parse → transform → validation), registered globally ahead of every
 * module so it runs before any route's validation. Routes that parse their own body (MCP: `parse: "none"`) call
 * `exceedsJsonDepth` themselves. The walk is iterative (no recursion to overflow), stops at the first value past the
 * bound, and only descends into objects and arrays: for an ordinary request a few dozen property reads.
 */
import { Elysia } from "elysia";
import { fail } from "../../actors/runtime/errors.ts";

export const MAX_JSON_DEPTH = 64;

/**
 * True when `value` nests objects/arrays more than `max` levels deep (a scalar is depth 0, `{}` and `[]` depth 1).
 * Never recursive; cost is bounded by the number of containers visited before the answer is known.
 */
export function exceedsJsonDepth(value: unknown, max: number = MAX_JSON_DEPTH): boolean {
  if (value === null || typeof value !== "object") return false;
  const stack: unknown[] = [value];
  const depths: number[] = [1];
  while (stack.length > 0) {
    const v = stack.pop() as object;
    const d = depths.pop()!;
    if (d > max) return true;
    if (Array.isArray(v)) {
      for (let i = 0; i < v.length; i++) {
        const c: unknown = v[i];
        if (c !== null && typeof c === "object") {
          stack.push(c);
          depths.push(d + 1);
        }
      }
    } else {
      for (const k in v) {
        const c: unknown = (v as Record<string, unknown>)[k];
        if (c !== null && typeof c === "object") {
          stack.push(c);
          depths.push(d + 1);
        }
      }
    }
  }
  return false;
}

export function tooDeepMessage(max: number = MAX_JSON_DEPTH): string {
  return `The JSON body nests objects/arrays more than ${max} levels deep.`;
}

/**
 * The global hook. Only plain objects and arrays are walked: a body Elysia parsed as text, form data or a file is
 * left alone (it cannot nest).
 */
export const jsonDepth = new Elysia({ name: "json-depth" }).onTransform({ as: "global" }, ({ body }) => {
  if (body !== null && typeof body === "object" && (Array.isArray(body) || Object.getPrototypeOf(body) === Object.prototype)) {
    if (exceedsJsonDepth(body)) throw fail("validation_error", tooDeepMessage(), { location: "body", maxDepth: MAX_JSON_DEPTH });
  }
});
