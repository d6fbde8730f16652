/** Pure pieces of the REST audit's fixes (money bounds, NUL detection, messages, directory paging, DB outage codes). */
import { describe, expect, test } from "bun:test";
import { rollbackMessageFor } from "../../actors/cart/rollback-text.ts";
import { rollbackMessage } from "../../actors/cart/index.ts";
import { computeTotals } from "../../actors/cart/totals.ts";
import { amountProblem, nulField } from "../../actors/store/ingest.ts";
import { isIsoCountryCode, MAX_AMOUNT_MINOR, type StoreRecord } from "../../actors/store/schemas.ts";
import { directoryPage } from "../../gateway/rest/merchants.ts";
import { codePointLength } from "../../gateway/rest/search.ts";
import { isDatabaseUnavailable } from "../../infra/db.ts";

describe("amountProblem: one check for every money value", () => {
  test("the business maximum is 10^12 minor units, far below 2^53", () => {
    expect(MAX_AMOUNT_MINOR).toBe(1e12);
    expect(amountProblem(10_000_000_000, "USD")).toBeNull();
    expect(amountProblem(10_000_000_000.01, "USD")).toContain("maximum");
    expect(amountProblem(1e12, "JPY")).toBeNull();
    expect(amountProblem(1e12 + 1, "JPY")).toContain("maximum");
    expect(amountProblem(1e15, "USD")).toContain("maximum");
  });
  test("sub-minor-unit amounts are refused on decimals", () => {
    expect(amountProblem(1e-9, "USD")).toContain("more decimals");
    expect(amountProblem(0.001, "USD")).toContain("more decimals");
    expect(amountProblem(0.01, "USD")).toBeNull();
    expect(amountProblem(0, "USD")).toBeNull();
  });
  test("large amounts with a sub-cent part are refused too, not rounded", () => {
    expect(amountProblem(4_999_999_999.999, "USD")).toContain("more decimals");
    expect(amountProblem(9_999_999_999.995, "USD")).toContain("more decimals");
  });
  test("every exact two-decimal amount is accepted despite binary noise", () => {
    for (const major of [0.29, 19.99, 1234.57, 99_999_999.99, 4_999_999_999.99, 9_999_999_999.99]) expect(amountProblem(major, "USD")).toBeNull();
    for (let cents = 0; cents < 200_000; cents += 7) expect(amountProblem(cents / 100, "USD")).toBeNull();
  });
});

describe("nulField", () => {
  test("finds a NUL byte in a value or a key, anywhere, and names its path", () => {
    expect(nulField({ title: "a\u0000b" })).toBe("title");
    expect(nulField({ tags: ["ok", "b\u0000"] })).toBe("tags.1");
    expect(nulField({ attributes: { "k\u0000": 1 } })).toBe("attributes.k\u0000");
    expect(nulField({ variants: [{ options: { size: "L\u0000" } }] })).toBe("variants.0.options.size");
    expect(nulField({ title: "clean", n: 1, b: null })).toBeNull();
  });
});

describe("rollbackMessage", () => {
  test("nothing captured: the spec's text, then the way on with the same key (review AD-3)", () => {
    expect(rollbackMessage("PAYMENT_DECLINED")).toStartWith("The processor declined the payment instrument; nothing was captured. ");
    for (const code of ["PAYMENT_DECLINED", "PAYMENT_FAILED_ROLLED_BACK"]) {
      expect(rollbackMessage(code)).toContain("call again with the SAME idempotency_key and another payment_method");
    }
  });
  test("after the buyer refused at an approval link, the way on is to ask the buyer again with the same key, not another method (review U-1)", () => {
    const m = rollbackMessage("PAYMENT_NOT_APPROVED", [], true);
    expect(m).toContain("call again with the SAME idempotency_key to ask the buyer again (a new approval link)");
    expect(m).not.toContain("another payment_method (or a fresh payment token)");
  });
  test("a processor's refusal without a link (tok_not_approved) would refuse again: its way on is another method (review V-1)", () => {
    const m = rollbackMessage("PAYMENT_NOT_APPROVED");
    expect(m).toContain("call again with the SAME idempotency_key and another payment_method");
    expect(m).not.toContain("ask the buyer again");
  });
  test("a bridge's answer names its own way on, never REST's idempotency_key field (review U-2, V-2)", () => {
    const rest = rollbackMessage("PAYMENT_DECLINED", ["greenleaf-living"]);
    const acp = rollbackMessageFor(rest, false, "acp");
    expect(acp).toContain("greenleaf-living was paid and stays paid");
    expect(acp).toContain("complete it again with another payment token, under a new Idempotency-Key.");
    expect(acp).not.toContain("idempotency_key");
    expect(rollbackMessageFor(rollbackMessage("PAYMENT_NOT_APPROVED", [], true), true, "ucp")).toContain("to ask the buyer again");
    const ap2 = rollbackMessageFor(rest, false, "ap2");
    expect(ap2).toContain("present this mandate again");
    expect(ap2).toContain("cancel the checkout session (details.checkout_session_id) and present a new mandate for this cart");
    expect(ap2).not.toContain("idempotency_key");
  });
  test("a merchant already paid: named, never 'nothing was captured.'", () => {
    const m = rollbackMessage("PAYMENT_DECLINED", ["greenleaf-living"]);
    expect(m).toContain("greenleaf-living was paid and stays paid");
    expect(m).not.toMatch(/; nothing was captured\./);
    expect(rollbackMessage("PAYMENT_FAILED_ROLLED_BACK", ["a", "b"])).toContain("a, b were paid and stay paid");
  });
});

describe("cart totals", () => {
  test("a total beyond 2^53 minor units is refused instead of rounded", () => {
    const line = { storeId: "s", productId: "p", quantity: 10_000, listPriceMinor: 1e12, currency: "USD" };
    expect(() => computeTotals({ lines: [line], now: 0 } as never)).toThrow("too large");
    expect(computeTotals({ lines: [{ ...line, quantity: 1 }], now: 0 } as never).totalMinor).toBe(1e12);
  });
});

describe("small validators", () => {
  test("ISO 3166-1 alpha-2: assigned codes only, any case", () => {
    expect(isIsoCountryCode("US")).toBe(true);
    expect(isIsoCountryCode("de")).toBe(true);
    expect(isIsoCountryCode("ZZ")).toBe(false);
    expect(isIsoCountryCode("UK")).toBe(false); // GB is the code
  });
  test("code points, not UTF-16 units", () => {
    expect(codePointLength("😀".repeat(500))).toBe(500);
    expect("😀".repeat(500).length).toBe(1000);
  });
  test("database outage codes", () => {
    for (const code of ["CONNECT_TIMEOUT", "CONNECTION_CLOSED", "ECONNREFUSED", "QUERY_DEADLINE", "57P01", "08006", "3D000"]) {
      expect(isDatabaseUnavailable(Object.assign(new Error("x"), { code }))).toBe(true);
    }
    for (const code of ["23505", "22P02", "42601", undefined]) expect(isDatabaseUnavailable(Object.assign(new Error("x"), { code }))).toBe(false);
  });
});

describe("directoryPage", () => {
  const store = (slug: string, over: Partial<StoreRecord> = {}) =>
    ({ slug, name: slug, trustScore: 0.8, verificationLevel: "BASIC", operationalStatus: "active", lastSyncAt: null, ...over }) as StoreRecord;
  test("eligible stores only, by slug, paginated with the limit capped at 100", () => {
    const stores = [store("c"), store("a"), store("hidden", { operationalStatus: "hidden" }), store("low", { trustScore: 0.1 }), store("unv", { verificationLevel: "UNVERIFIED" }), store("b")];
    const p1 = directoryPage(stores, 1, 2);
    expect(p1.merchants.map((m) => m.slug)).toEqual(["a", "b"]);
    expect(p1.meta).toEqual({ total: 3, page: 1, limit: 2, totalPages: 2 });
    expect(directoryPage(stores, 2, 2).merchants.map((m) => m.slug)).toEqual(["c"]);
    expect(directoryPage(stores, 1, 500).meta.limit).toBe(100);
  });
});
