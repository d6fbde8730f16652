/**
 * The idempotency key of a REST money write (checkout, refund request), one rule for every route that takes one:
 * the Idempotency-Key header or the body's idempotency_key (equal if both), a UUID v4. A UUID's hex digits are
 * case-insensitive (RFC 9562) and the key is stored lowercased, so the header and the body are compared lowercased:
 * the same key in two cases is one key, not a conflict (reviews R1-8, R3-8).
 */
import { fail } from "../../actors/runtime/errors.ts";
import { isUuidV4 } from "../../infra/uuid.ts";

/**
 * The key lowercased, or undefined when none is sent. Throws INVALID_ARGUMENT (field idempotency_key). `alias` is the
 * body's `idempotencyKey`: the API mixes `cartId` with `idempotency_key`, and a camelCase key was ignored, so a retry
 * made a second refund request the agent thought it had protected (audit A, session 16); it is the same field.
 */
export function requestIdempotencyKey(header: string | undefined, field: string | undefined, alias?: string): string | undefined {
  if (field !== undefined && alias !== undefined && field.toLowerCase() !== alias.toLowerCase()) {
    throw fail("INVALID_ARGUMENT", "idempotency_key and idempotencyKey differ; send one.", { field: "idempotency_key" });
  }
  field ??= alias;
  if (header && field && header.toLowerCase() !== field.toLowerCase()) throw fail("INVALID_ARGUMENT", "The Idempotency-Key header and idempotency_key differ.", { field: "idempotency_key" });
  const key = field ?? header;
  if (key !== undefined && !isUuidV4(key)) throw fail("INVALID_ARGUMENT", "idempotency_key must be a UUID v4.", { field: "idempotency_key" });
  return key?.toLowerCase();
}
