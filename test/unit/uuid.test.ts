import { describe, expect, test } from "bun:test";
import { createHash } from "node:crypto";
import { derivedUuidV4 } from "../../gateway/bridge/common.ts";
import { isUuid, isUuidV4, UUID_FORMAT_PATTERN, UUID_V4_PATTERN, uuidV4FromHex } from "../../infra/uuid.ts";

/** Value → [isUuid, isUuidV4, format "uuid"]: the three rules the call sites had before they shared infra/uuid.ts. */
const TABLE: [string, boolean, boolean, boolean][] = [
  ["6f1c0a3e-2b4d-4e5f-8a6b-7c8d9e0f1a2b", true, true, true], // v4
  ["6F1C0A3E-2B4D-4E5F-BA6B-7C8D9E0F1A2B", true, true, true], // v4, upper case
  ["6ba7b810-9dad-11d1-80b4-00c04fd430c8", true, false, true], // version 1
  ["0190b6c8-7d3c-7c4e-9a1f-2b3c4d5e6f70", true, false, true], // version 7
  ["11111111-1111-1111-1111-111111111111", true, false, false], // variant nibble 1
  ["11111111-1111-4111-c111-111111111111", true, false, false], // v4 digit, variant c
  ["00000000-0000-0000-0000-000000000000", true, false, true], // nil
  ["ffffffff-ffff-ffff-ffff-ffffffffffff", true, false, true], // max
  ["6f1c0a3e-2b4d-4e5f-8a6b-7c8d9e0f1a2", false, false, false], // one digit short
  ["6f1c0a3e-2b4d-4e5f-8a6b-7c8d9e0f1a2b ", false, false, false],
  ["6f1c0a3e2b4d4e5f8a6b7c8d9e0f1a2b", false, false, false],
  ["cart_6f1c0a3e-2b4d-4e5f-8a6b-7c8d9e0f1a2b", false, false, false],
  ["6g1c0a3e-2b4d-4e5f-8a6b-7c8d9e0f1a2b", false, false, false],
  ["", false, false, false],
];

describe("the uuid rules", () => {
  test("isUuid takes any 8-4-4-4-12 hex string in either case, isUuidV4 only version 4 with the RFC variant", () => {
    for (const [v, any, v4] of TABLE) expect({ v, any: isUuid(v), v4: isUuidV4(v) }).toEqual({ v, any, v4 });
  });

  test("the format pattern is zod's: versions 1 to 8 with the RFC variant, or nil or max", () => {
    for (const [v, , , format] of TABLE) expect({ v, format: UUID_FORMAT_PATTERN.test(v) }).toEqual({ v, format });
  });

  test("the v4 pattern string (a TypeBox pattern) is the rule isUuidV4 applies", () => {
    const re = new RegExp(UUID_V4_PATTERN);
    for (const [v, , v4] of TABLE) expect({ v, v4: re.test(v) }).toEqual({ v, v4 });
  });

  test("a crypto.randomUUID passes all three", () => {
    const u = crypto.randomUUID();
    expect([isUuid(u), isUuidV4(u), UUID_FORMAT_PATTERN.test(u)]).toEqual([true, true, true]);
  });
});

describe("ids derived from a digest (stored: the outputs must never change)", () => {
  const sha = (s: string) => createHash("sha256").update(s).digest("hex");

  test("uuidV4FromHex keeps the digest's digits, sets version 4 and takes the variant from digit 16", () => {
    expect(uuidV4FromHex("0123456789abcdef0123456789abcdef")).toBe("01234567-89ab-4def-8123-456789abcdef");
    expect(uuidV4FromHex("ffffffffffffffffffffffffffffffff")).toBe("ffffffff-ffff-4fff-bfff-ffffffffffff");
    expect(isUuidV4(uuidV4FromHex(sha("x")))).toBe(true);
  });

  test("the bridges' derived idempotency keys and the cart's order and idempotency ids are as stored", () => {
    expect(derivedUuidV4("acp:cs_1")).toBe("24443324-f2ad-4ef4-a001-e2a35769e50e");
    expect(derivedUuidV4("ucp:x")).toBe("4b1bc852-a360-4fd1-96ea-9c31efed107f");
    expect(derivedUuidV4("ap2:k:m")).toBe("580c6292-8c73-44a2-bc2a-3204ed535149");
    // actors/cart/index.ts derivedUuid(...parts): the digest of JSON.stringify(parts)
    expect(uuidV4FromHex(sha(JSON.stringify(["order.v1", "cs_abc_1", "demo-store"])))).toBe("c98efd8e-78d4-4504-8d0c-f8e5c4956a83");
    expect(uuidV4FromHex(sha(JSON.stringify(["idempotency.v1", "cs_abc_1"])))).toBe("0a543612-4e37-44da-9389-75e58fbb874a");
  });
});
