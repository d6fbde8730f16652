/** Accept-Encoding read as RFC 9110 §12.5.3 says, Vary appended to, and the hook kept synchronous (gateway/plugins/compression.ts). */
import { describe, expect, test } from "bun:test";
import { isAsync } from "elysia/compose";
import { chooseCoding, compressAnswer, withVary } from "../../gateway/plugins/compression.ts";

describe("the coding chosen for an Accept-Encoding value", () => {
  test.each([
    ["gzip", "gzip"],
    ["zstd", "zstd"],
    ["gzip, deflate, br, zstd", "zstd"],
    ["zstd, gzip", "zstd"],
    ["gzip;q=1, zstd;q=0.9", "gzip"],
    ["zstd;q=0.5, gzip", "gzip"],
    ["gzip;q=0.5, zstd;q=0.5", "zstd"],
    ["x-gzip", "gzip"],
    ["GZip ; Q=0.7", "gzip"],
    ["*", "zstd"],
    ["*;q=0.5, zstd;q=0", "gzip"],
    ["*;q=0.5, gzip;q=0.9, zstd;q=0.1", "gzip"],
    ["deflate, *;q=0.1", "zstd"],
    ["gzip, identity;q=0.5", "gzip"],
    ["identity;q=0, gzip;q=0.001", "gzip"],
    ["gzip;q=0.5, gzip;q=0", "gzip"],
  ] as const)("%p gives %p", (header, coding) => {
    expect(chooseCoding(header)).toBe(coding);
  });

  test.each([
    [""],
    ["identity"],
    ["br, deflate"],
    ["gzip;q=0"],
    ["gzip;q=0.000"],
    ["gzip;q=0, zstd;q=0"],
    ["*;q=0"],
    ["*;q=0, identity"],
    ["gzip;q=0.5, identity"],
    ["gzip;q=0.5, zstd;q=0.4, *;q=0.9"],
    // a malformed q is not a q of 1: the element is ignored
    ["gzip;q=2"],
    ["gzip;q=abc"],
    ["gzip;q=0.1234"],
    [" , ;q=1"],
  ] as const)("%p gives the identity answer", (header) => {
    expect(chooseCoding(header)).toBeUndefined();
  });
});

describe("Vary", () => {
  test("Accept-Encoding is added to what is there, once, and `*` is left alone", () => {
    expect(withVary(undefined)).toBe("Accept-Encoding");
    expect(withVary("")).toBe("Accept-Encoding");
    expect(withVary("Origin")).toBe("Origin, Accept-Encoding");
    expect(withVary("origin, accept-encoding")).toBe("origin, accept-encoding");
    expect(withVary("Accept-Encoding-Extra")).toBe("Accept-Encoding-Extra, Accept-Encoding");
    expect(withVary("*")).toBe("*");
  });
});

describe("the hook", () => {
  test("Elysia does not take it for an asynchronous one (which would make every route's handler asynchronous)", () => {
    expect(isAsync(compressAnswer)).toBe(false);
    // the check can fail: a hook that returns a call is taken for one
    expect(isAsync(function hook(x: { v: unknown }) {
      return String(x.v);
    })).toBe(true);
  });
});
