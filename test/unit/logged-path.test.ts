import { describe, expect, test } from "bun:test";
import { loggedPath } from "../../gateway/url-path.ts";

describe("paths as logs record them", () => {
  test("the sandbox approval link's token is replaced, the intent id and the decision stay", () => {
    expect(loggedPath("/api/v1/sandbox/payments/pi_abc/0123456789abcdef")).toBe("/api/v1/sandbox/payments/pi_abc/[redacted]");
    expect(loggedPath("/api/v1/sandbox/payments/pi_abc/0123456789abcdef/approve")).toBe("/api/v1/sandbox/payments/pi_abc/[redacted]/approve");
  });

  test("a path without a token, and every other path, is logged as it is", () => {
    expect(loggedPath("/api/v1/sandbox/payments/pi_abc")).toBe("/api/v1/sandbox/payments/pi_abc");
    expect(loggedPath("/api/v1/agent/orders/0f0e")).toBe("/api/v1/agent/orders/0f0e");
  });
});

describe("the approval token in other spellings of the link (audit O-1)", () => {
  test("doubled slashes and another letter case, as a 404 line records them, are redacted too", () => {
    expect(loggedPath("//api/v1/sandbox/payments/pi_abc/0123abcd")).toBe("//api/v1/sandbox/payments/pi_abc/[redacted]");
    expect(loggedPath("/api/v1//sandbox/payments/pi_abc/0123abcd/approve")).toBe("/api/v1//sandbox/payments/pi_abc/[redacted]/approve");
    expect(loggedPath("/api/v1/SANDBOX/Payments/pi_abc/0123abcd")).toBe("/api/v1/SANDBOX/Payments/pi_abc/[redacted]");
    expect(loggedPath("/api/v1/sandbox/payments//pi_abc//0123abcd")).toBe("/api/v1/sandbox/payments//pi_abc//[redacted]");
  });
});

describe("encoded and suffixed spellings of the link (review RD-2)", () => {
  const token = "ab".repeat(32);
  test("percent-encoded letters or separators, a suffix on the segment and an empty intent segment do not keep the token", () => {
    for (const path of [
      `/api/v1/sandbox/%70ayments/pi_abc/${token}`,
      `/api/v1/sandbox%2Fpayments/pi_abc/${token}`,
      `/api/v1/sandbox/payments/pi_abc%2F${token}`,
      `/api/v1/sandbox/payments./pi_abc/${token}`,
      `/api/v1/sandbox/payments;x/pi_abc/${token}`,
      `/api/v1/sandbox/payments//${token}`,
    ]) expect(loggedPath(path)).not.toContain(token);
  });

  test("a path without a token and with a malformed escape is logged as it came", () => {
    expect(loggedPath("/api/v1/agent/products/%E0%A4%A")).toBe("/api/v1/agent/products/%E0%A4%A");
    expect(loggedPath("/api/v1/agent/search%20x")).toBe("/api/v1/agent/search%20x");
  });
});
