import { describe, expect, test } from "bun:test";
import { isUuid, isUuidV4, UUID_FORMAT_PATTERN, UUID_V4_PATTERN } from "../../infra/uuid.ts";

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
