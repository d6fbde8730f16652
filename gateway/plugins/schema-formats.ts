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
 * Also `CodePointString`: a string kind bounded in characters (code points), not UTF-16 units (infra/code-point-string.ts,
 * where the actors, whose catalog item schemas use it, load it too).
 */
import { FormatRegistry } from "@sinclair/typebox";
import { UUID_FORMAT_PATTERN } from "../../infra/uuid.ts";

/** Call after @elysiajs/openapi has been imported (gateway/app.ts does). */
export function useCompiledFormats(): void {
  FormatRegistry.Set("uuid", (value) => UUID_FORMAT_PATTERN.test(value));
}

export { CodePointString, codePointLength } from "../../infra/code-point-string.ts";
