/**
 * TypeBox string formats without a zod schema built per check.
 *
 * Importing @elysiajs/openapi replaces TypeBox's global "uuid" (and other) format checks with
 * `(value) => z.string().uuid().safeParse(value).success` (its bundled @sinclair/typemap), which constructs a
 * zod schema on every call: ~18 µs per checked value on this machine, paid by every route parameter, body field
 * and actor message declared `format: "uuid"` (the "zod initialiser per request" seen in the checkout profile).
 * We put back a precompiled check with exactly zod's rule (RFC 9562 version 1–8 and variant bits, or the nil and
 * max UUIDs; `UUID_FORMAT_PATTERN` in infra/uuid.ts), so what is accepted does not change, only what it costs. "uuid" is the only one of the replaced
 * formats our schemas use ("date-time" and "uri" are Elysia's and untouched).
 *
 * Also `CodePointString`: a string kind bounded in characters (code points), not UTF-16 units.
 */
import { FormatRegistry, Kind, type TUnsafe, Type, TypeRegistry } from "@sinclair/typebox";
import { UUID_FORMAT_PATTERN } from "../../infra/uuid.ts";

/** Call after @elysiajs/openapi has been imported (gateway/app.ts does). */
export function useCompiledFormats(): void {
  FormatRegistry.Set("uuid", (value) => UUID_FORMAT_PATTERN.test(value));
}

const CODE_POINT_STRING = "CodePointString";

/** Characters as a person counts them (code points), not UTF-16 units. */
export function codePointLength(s: string): number {
  let n = 0;
  for (const _ of s) n++;
  return n;
}

TypeRegistry.Set<{ minLength?: number; maxLength?: number }>(CODE_POINT_STRING, (schema, value) => {
  if (typeof value !== "string") return false;
  // UTF-16 length bounds the code point count from above (and from below at half): count only when it matters
  if (schema.maxLength !== undefined && value.length > schema.maxLength) {
    if (value.length > 2 * schema.maxLength || codePointLength(value) > schema.maxLength) return false;
  }
  if (schema.minLength !== undefined && value.length < 2 * schema.minLength && codePointLength(value) < schema.minLength) return false;
  return true;
});

/**
 * A string bounded in characters (Unicode code points), as JSON Schema's minLength/maxLength mean them and as the
 * spec counts them ("1 to 500 characters"). TypeBox's t.String counts UTF-16 units, which would refuse 300 emoji as
 * "over 500" or need a doubled bound that the OpenAPI document then shows; this kind checks code points and
 * documents the real bound (`type: string` with the same minLength/maxLength).
 */
export function CodePointString(options: { minLength?: number; maxLength?: number; description?: string }): TUnsafe<string> {
  return Type.Unsafe<string>({ ...options, type: "string", [Kind]: CODE_POINT_STRING });
}
