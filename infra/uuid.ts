/**
 * The UUID shapes we check, in one place (gateway and actors both import this; infra imports neither).
 *
 * Three rules, each kept where it was chosen:
 * - `isUuid`: any 8-4-4-4-12 hex string, either case (our own ids in paths and messages: a malformed one is a
 *   404 or a field's 400 before it reaches Postgres's `uuid` cast).
 * - `isUuidV4`: version 4 with the RFC variant, either case (idempotency keys, where the spec asks for a v4).
 * - `UUID_FORMAT_PATTERN`: TypeBox's `format: "uuid"` (gateway/plugins/schema-formats.ts), zod 4's rule.
 * And `uuidV4FromHex`, the one shape of ids derived from a digest.
 */

/** Version 4 with the RFC variant, either case, as a `pattern` string for a TypeBox schema. */
export const UUID_V4_PATTERN = "^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-4[0-9a-fA-F]{3}-[89abAB][0-9a-fA-F]{3}-[0-9a-fA-F]{12}$";

/** 8-4-4-4-12 hex digits, unanchored, for a RegExp with the `i` flag that embeds it (gateway/bridge/common.ts item ids). */
export const UUID_HEX = "[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}";
const ANY_UUID = new RegExp(`^${UUID_HEX}$`, "i");
const UUID_V4 = new RegExp(UUID_V4_PATTERN);

/** zod 4's `z.string().uuid()` pattern, as bundled in @elysiajs/openapi: versions 1–8 with the RFC variant, or nil/max. */
export const UUID_FORMAT_PATTERN =
  /^([0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[1-8][0-9a-fA-F]{3}-[89abAB][0-9a-fA-F]{3}-[0-9a-fA-F]{12}|00000000-0000-0000-0000-000000000000|ffffffff-ffff-ffff-ffff-ffffffffffff)$/;

/** 8-4-4-4-12 hex digits in either case, any version and variant. */
export function isUuid(s: string): boolean {
  return ANY_UUID.test(s);
}

/** A UUID version 4 (RFC variant), either case. */
export function isUuidV4(s: string): boolean {
  return UUID_V4.test(s);
}

/**
 * A UUID v4-shaped id from the first 32 hex digits of a digest: version digit 4, variant 8–b taken from digit 16.
 * Stored ids are made with it (order ids, derived idempotency keys): its output must never change.
 */
export function uuidV4FromHex(hex: string): string {
  const variant = ((parseInt(hex[16]!, 16) & 0x3) | 0x8).toString(16);
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-4${hex.slice(13, 16)}-${variant}${hex.slice(17, 20)}-${hex.slice(20, 32)}`;
}
