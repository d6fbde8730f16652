import { describe, expect, test } from "bun:test";
import { SealError, generateKek, open, openString, seal, timingSafeEqualStr } from "../../infra/crypto.ts";

/** Flips one base64url character of the given dot-separated part. */
function tamper(sealed: string, part: number): string {
  const parts = sealed.split(".");
  const p = parts[part];
  const i = Math.floor(p.length / 2);
  parts[part] = p.slice(0, i) + (p[i] === "A" ? "B" : "A") + p.slice(i + 1);
  return parts.join(".");
}

describe("seal and open", () => {
  test("a sealed string opens to the same plaintext", () => {
    const kek = generateKek();
    expect(openString(kek, seal(kek, "wallet private key ✓"))).toBe("wallet private key ✓");
  });

  test("sealed bytes open to the same bytes", () => {
    const kek = generateKek();
    const bytes = new Uint8Array([0, 1, 2, 255]);
    expect(open(kek, seal(kek, bytes))).toEqual(bytes);
  });

  test("a sealed value is versioned base64url and does not contain the plaintext", () => {
    const kek = generateKek();
    const sealed = seal(kek, "secret-plaintext");
    expect(sealed).toMatch(/^v1\.[A-Za-z0-9_-]{16}\.[A-Za-z0-9_-]+$/);
    expect(sealed).not.toContain("secret");
  });

  test("sealing twice gives different values (fresh IV)", () => {
    const kek = generateKek();
    expect(seal(kek, "x")).not.toBe(seal(kek, "x"));
  });

  test("the wrong key is refused", () => {
    const sealed = seal(generateKek(), "x");
    expect(() => open(generateKek(), sealed)).toThrow(SealError);
  });

  test("a tampered ciphertext is refused", () => {
    const kek = generateKek();
    const sealed = seal(kek, "a long enough plaintext to tamper with");
    expect(() => open(kek, tamper(sealed, 2))).toThrow(SealError);
  });

  test("a tampered IV is refused", () => {
    const kek = generateKek();
    expect(() => open(kek, tamper(seal(kek, "x"), 1))).toThrow(SealError);
  });

  test("a different AAD is refused, the same AAD opens", () => {
    const kek = generateKek();
    const sealed = seal(kek, "x", "purpose-a");
    expect(openString(kek, sealed, "purpose-a")).toBe("x");
    expect(() => open(kek, sealed, "purpose-b")).toThrow(SealError);
    expect(() => open(kek, sealed)).toThrow(SealError);
  });

  test("an unknown version or malformed value is refused", () => {
    const kek = generateKek();
    const sealed = seal(kek, "x");
    expect(() => open(kek, sealed.replace(/^v1/, "v9"))).toThrow(SealError);
    expect(() => open(kek, "v1.abc")).toThrow(SealError);
    expect(() => open(kek, "v1.!!!!.abc")).toThrow(SealError);
  });

  test("a key-encryption key that is not 32 bytes is refused", () => {
    expect(() => seal(new Uint8Array(16), "x")).toThrow(SealError);
  });
});

describe("constant-time string comparison", () => {
  test("equal strings compare equal", () => expect(timingSafeEqualStr("agnt_abc", "agnt_abc")).toBe(true));
  test("different strings of the same length differ", () => expect(timingSafeEqualStr("agnt_abc", "agnt_abd")).toBe(false));
  test("strings of different lengths differ", () => expect(timingSafeEqualStr("agnt_abc", "agnt_abcd")).toBe(false));
  test("empty strings compare equal", () => expect(timingSafeEqualStr("", "")).toBe(true));
});
