/**
 * Review R6 LOW-2: the bridges' Idempotency-Key records compare requestHash. A bodyless POST used to hash its body as
 * null (Elysia's parser gave undefined); optionalObjectBody reads it as {} since 39413ae, so a same-key retry across
 * that deploy got 409 IDEMPOTENCY_KEY_CONFLICT instead of its replay. An empty object hashes as null again.
 */
import { describe, expect, test } from "bun:test";
import { createHash } from "node:crypto";
import { requestHash } from "../../gateway/bridge/common.ts";

const PATH = "/api/v1/agent/acp/checkout_sessions/cs_1/cancel";
/** The hash records written before 39413ae hold for a bodyless request. */
const stored = createHash("sha256").update(JSON.stringify(["POST", PATH, null])).digest("hex");

describe("requestHash", () => {
  test("an empty object body hashes as no body, as records stored before the optional-body parser did", () => {
    expect(requestHash("POST", PATH, {})).toBe(stored);
    expect(requestHash("POST", PATH, undefined)).toBe(stored);
    expect(requestHash("POST", PATH, null)).toBe(stored);
  });

  test("a body with members, an empty array and another path or method are other requests", () => {
    expect(requestHash("POST", PATH, { reason: "x" })).not.toBe(stored);
    expect(requestHash("POST", PATH, [])).not.toBe(stored);
    expect(requestHash("POST", `${PATH}x`, {})).not.toBe(stored);
    expect(requestHash("PUT", PATH, {})).not.toBe(stored);
  });
});
