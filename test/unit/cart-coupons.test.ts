import { describe, expect, test } from "bun:test";
import { allocateProportionally, divRoundHalfEven, evaluateCoupon, findCoupon, type Coupon } from "../../actors/cart/coupons.ts";

const NOW = Date.UTC(2025, 5, 1);
const pct = (bps: number, over: Partial<Coupon> = {}): Coupon => ({ code: "SAVE", kind: "percent", percentBps: bps, ...over });
const fixed = (amount: number, over: Partial<Coupon> = {}): Coupon => ({ code: "FIVE", kind: "fixed", amountMinor: amount, currency: "USD", ...over });
const ctx = (subtotal: number, currency = "USD") => ({ eligibleSubtotalMinor: subtotal, currency, now: NOW });

describe("coupon evaluation", () => {
  test("a 10 % coupon on 100.00 takes off 10.00", () => {
    expect(evaluateCoupon(pct(1_000), "save", ctx(10_000))).toEqual({ applied: true, code: "SAVE", discountMinor: 1_000 });
  });

  test("a percent discount rounds half to even: 12.5 → 12, 13.5 → 14", () => {
    // 5 % of 250 = 12.5, 5 % of 270 = 13.5
    expect(evaluateCoupon(pct(500), "SAVE", ctx(250))).toMatchObject({ discountMinor: 12 });
    expect(evaluateCoupon(pct(500), "SAVE", ctx(270))).toMatchObject({ discountMinor: 14 });
  });

  test("a percent discount is capped at its maximum", () => {
    expect(evaluateCoupon(pct(5_000, { maxDiscountMinor: 700 }), "SAVE", ctx(10_000))).toMatchObject({ discountMinor: 700 });
  });

  test("a fixed coupon larger than the subtotal never makes the total negative", () => {
    expect(evaluateCoupon(fixed(5_000), "FIVE", ctx(1_200))).toMatchObject({ applied: true, discountMinor: 1_200 });
  });

  test("a 100 % coupon takes the whole subtotal and no more", () => {
    expect(evaluateCoupon(pct(10_000), "SAVE", ctx(999))).toMatchObject({ discountMinor: 999 });
  });

  const rejections: [string, Coupon | undefined, ReturnType<typeof ctx>, string][] = [
    ["an unknown code", undefined, ctx(10_000), "invalid"],
    ["an inactive coupon", pct(1_000, { active: false }), ctx(10_000), "invalid"],
    ["a coupon not yet started", pct(1_000, { startsAt: NOW + 1 }), ctx(10_000), "invalid"],
    ["a percent above 100 %", pct(10_001), ctx(10_000), "invalid"],
    ["a percent of zero", pct(0), ctx(10_000), "invalid"],
    ["a fixed coupon without a currency", fixed(500, { currency: null }), ctx(10_000), "invalid"],
    ["a coupon with nothing eligible", pct(1_000), ctx(0), "invalid"],
    ["a coupon at its expiry instant", pct(1_000, { expiresAt: NOW }), ctx(10_000), "expired"],
    ["a coupon used up", pct(1_000, { maxUses: 3, usedCount: 3 }), ctx(10_000), "exhausted"],
    ["a fixed coupon in another currency", fixed(500, { currency: "EUR" }), ctx(10_000), "currency_mismatch"],
    ["a subtotal one minor unit under the minimum", pct(1_000, { minSpendMinor: 5_000 }), ctx(4_999), "below_minimum"],
  ];
  for (const [what, coupon, c, reason] of rejections) {
    test(`${what} is rejected as ${reason}`, () => {
      const r = evaluateCoupon(coupon, "SAVE", c);
      expect(r.applied).toBe(false);
      if (!r.applied) expect(r.reason).toBe(reason as never);
    });
  }

  test("a coupon one millisecond before expiry still applies", () => {
    expect(evaluateCoupon(pct(1_000, { expiresAt: NOW + 1 }), "SAVE", ctx(10_000)).applied).toBe(true);
  });
  test("a subtotal exactly at the minimum spend qualifies", () => {
    expect(evaluateCoupon(pct(1_000, { minSpendMinor: 5_000 }), "SAVE", ctx(5_000)).applied).toBe(true);
  });
  test("a coupon with one use left still applies", () => {
    expect(evaluateCoupon(pct(1_000, { maxUses: 3, usedCount: 2 }), "SAVE", ctx(10_000)).applied).toBe(true);
  });
  test("an expired coupon is reported expired before it is reported exhausted", () => {
    const r = evaluateCoupon(pct(1_000, { expiresAt: NOW, maxUses: 1, usedCount: 1 }), "SAVE", ctx(10_000));
    expect(r.applied ? null : r.reason).toBe("expired");
  });
  test("codes are matched case-insensitively and trimmed", () => {
    expect(findCoupon([pct(1_000)], "  save ")?.code).toBe("SAVE");
    expect(findCoupon([pct(1_000)], "other")).toBeUndefined();
  });
});

describe("money rounding helpers", () => {
  const cases: [number, number, number][] = [
    [5, 2, 2], // 2.5 → 2
    [7, 2, 4], // 3.5 → 4
    [9, 4, 2], // 2.25 → 2
    [11, 4, 3], // 2.75 → 3
    [0, 7, 0],
    [10, 5, 2],
  ];
  for (const [n, d, q] of cases) {
    test(`${n}/${d} rounds half to even to ${q}`, () => expect(divRoundHalfEven(n, d)).toBe(q));
  }
  test("a negative numerator is refused", () => expect(() => divRoundHalfEven(-1, 2)).toThrow(RangeError));

  test("a proportional split adds up exactly and favours the largest remainders", () => {
    expect(allocateProportionally(100, [1, 1, 1])).toEqual([34, 33, 33]);
    expect(allocateProportionally(1_000, [3_000, 7_000])).toEqual([300, 700]);
    const parts = allocateProportionally(997, [1_234, 5_678, 91]);
    expect(parts.reduce((a, b) => a + b, 0)).toBe(997);
  });
  test("nothing to split gives zeros", () => expect(allocateProportionally(0, [5, 5])).toEqual([0, 0]));
});
