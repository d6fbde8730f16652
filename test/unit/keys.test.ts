import { afterEach, describe, expect, mock, spyOn, test } from "bun:test";
import * as nodeCrypto from "node:crypto";
import {
  AGENT_KEY_BODY_LENGTH,
  displayAgentKey,
  generateAgentKey,
  hashAgentKey,
  isAgentKeyFormat,
  parseAgentKey,
  redact,
  toBase62,
  verifyAgentKey,
} from "../../actors/agent/keys.ts";

const PEPPER = "test-pepper-0123456789";

afterEach(() => mock.restore());

describe("agent key generation", () => {
  test("a key is agnt_ followed by 43 base62 characters", () => {
    const { plaintext } = generateAgentKey(PEPPER);
    expect(plaintext).toMatch(/^agnt_[0-9A-Za-z]{43}$/);
    expect(isAgentKeyFormat(plaintext)).toBe(true);
  });

  test("43 base62 characters carry at least 256 bits, so 32 random bytes always fit", () => {
    expect(AGENT_KEY_BODY_LENGTH * Math.log2(62)).toBeGreaterThanOrEqual(256);
    expect(toBase62(new Uint8Array(32).fill(0xff), 43)).toHaveLength(43);
    expect(toBase62(new Uint8Array(32), 43)).toBe("0".repeat(43));
  });

  test("each key draws 32 random bytes from the CSPRNG", () => {
    const spy = spyOn(nodeCrypto, "randomBytes");
    generateAgentKey(PEPPER);
    expect(spy).toHaveBeenCalledWith(32);
  });

  test("a thousand keys are all different and use the whole alphabet", () => {
    const keys = new Set<string>();
    const chars = new Set<string>();
    for (let i = 0; i < 1000; i++) {
      const k = generateAgentKey(PEPPER).plaintext;
      keys.add(k);
      for (const c of k.slice(5)) chars.add(c);
    }
    expect(keys.size).toBe(1000);
    expect(chars.size).toBe(62);
  });

  test("the prefix is the first 12 characters after agnt_ and the hash is the peppered HMAC", () => {
    const k = generateAgentKey(PEPPER);
    expect(k.prefix).toBe(k.plaintext.slice(5, 17));
    expect(k.hash).toBe(nodeCrypto.createHmac("sha256", PEPPER).update(k.plaintext).digest("hex"));
    expect(k.hash).not.toContain(k.plaintext.slice(5));
  });

  test("the same key hashed with another pepper gives another hash", () => {
    const k = generateAgentKey(PEPPER);
    expect(hashAgentKey(k.plaintext, "other-pepper")).not.toBe(k.hash);
  });

  test("an empty pepper is refused", () => {
    expect(() => generateAgentKey("")).toThrow();
  });
});

describe("parsing the X-Agent-Api-Key header", () => {
  test("a well-formed key yields its lookup prefix", () => {
    const k = generateAgentKey(PEPPER);
    expect(parseAgentKey(k.plaintext)).toBe(k.prefix);
    expect(parseAgentKey(`  ${k.plaintext} `)).toBe(k.prefix);
  });

  test.each([
    ["missing", undefined],
    ["null", null],
    ["empty", ""],
    ["wrong prefix", "agent_" + "a".repeat(43)],
    ["too short", "agnt_" + "a".repeat(42)],
    ["too long", "agnt_" + "a".repeat(44)],
    ["non-base62 characters", "agnt_" + "a".repeat(42) + "-"],
    ["a bearer token", "Bearer agnt_" + "a".repeat(43)],
  ])("a %s value is not a key", (_label, value) => {
    expect(parseAgentKey(value as string | null | undefined)).toBeNull();
  });
});

describe("verifying a presented key", () => {
  test("the right key verifies", () => {
    const k = generateAgentKey(PEPPER);
    expect(verifyAgentKey(k.plaintext, k.hash, PEPPER)).toBe(true);
  });

  test("a wrong key with the same prefix is refused", () => {
    const k = generateAgentKey(PEPPER);
    const last = k.plaintext.at(-1) === "a" ? "b" : "a";
    const forged = k.plaintext.slice(0, -1) + last;
    expect(parseAgentKey(forged)).toBe(k.prefix);
    expect(verifyAgentKey(forged, k.hash, PEPPER)).toBe(false);
  });

  test("the right key with the wrong pepper is refused", () => {
    const k = generateAgentKey(PEPPER);
    expect(verifyAgentKey(k.plaintext, k.hash, "not-the-pepper")).toBe(false);
  });

  test("a malformed stored hash is refused, not thrown", () => {
    const k = generateAgentKey(PEPPER);
    expect(verifyAgentKey(k.plaintext, "", PEPPER)).toBe(false);
    expect(verifyAgentKey(k.plaintext, k.hash.slice(0, 10), PEPPER)).toBe(false);
    expect(verifyAgentKey(k.plaintext, k.hash.toUpperCase(), PEPPER)).toBe(false);
  });

  test("verification compares with timingSafeEqual, also for a malformed stored hash", () => {
    const spy = spyOn(nodeCrypto, "timingSafeEqual");
    const k = generateAgentKey(PEPPER);
    verifyAgentKey(k.plaintext, k.hash, PEPPER);
    verifyAgentKey(k.plaintext, "garbage", PEPPER);
    expect(spy).toHaveBeenCalledTimes(2);
  });
});

describe("keeping keys out of logs", () => {
  test("redact keeps only the public prefix of an agent key", () => {
    const k = generateAgentKey(PEPPER);
    const line = redact(`GET /api/v1/agent/search X-Agent-Api-Key: ${k.plaintext} ok`);
    expect(line).not.toContain(k.plaintext);
    expect(line).not.toContain(k.plaintext.slice(17));
    expect(line).toContain(`agnt_${k.prefix}…[redacted]`);
  });

  test("redact removes webhook secrets and bearer tokens", () => {
    const line = redact("secret=whsec_abcDEF123 auth=Bearer eyJhbGciOiJFZERTQSJ9.eyJzdWIiOiJ4In0.sig_-x");
    expect(line).toBe("secret=whsec_[redacted] auth=Bearer [redacted]");
  });

  test("the display form of a key is its prefix", () => {
    expect(displayAgentKey("AbC123xyz789")).toBe("agnt_AbC123xyz789…");
  });
});
