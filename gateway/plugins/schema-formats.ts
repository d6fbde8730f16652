/**
 * TypeBox string formats without a zod schema built per check.
 *
 * Importing @elysiajs/openapi replaces TypeBox's global "uuid" (and other) format checks with
 * `(value) => z.string().uuid().safeParse(value).success` (its bundled @sinclair/typemap), which constructs a
 * zod schema on every call: ~18 µs per checked value on this machine, paid by every route parameter, body field
 * and actor message declared `format: "uuid"` (the "zod initialiser per request" seen in the checkout profile).
 * We put back a precompiled check with exactly zod's rule (RFC 9562 version 1–8 and variant bits, or the nil and
 * max UUIDs), so what is accepted does not change, only what it costs. "uuid" is the only one of the replaced
 * formats our schemas use ("date-time" and "uri" are Elysia's and untouched).
 */
import { FormatRegistry } from "@sinclair/typebox";

/** zod 4's `z.string().uuid()` pattern, as bundled in @elysiajs/openapi. */
export const UUID_PATTERN =
  /^([0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[1-8][0-9a-fA-F]{3}-[89abAB][0-9a-fA-F]{3}-[0-9a-fA-F]{12}|00000000-0000-0000-0000-000000000000|ffffffff-ffff-ffff-ffff-ffffffffffff)$/;

/** Call after @elysiajs/openapi has been imported (gateway/app.ts does). */
export function useCompiledFormats(): void {
  FormatRegistry.Set("uuid", (value) => UUID_PATTERN.test(value));
}
