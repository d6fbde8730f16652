import { describe, expect, test } from "bun:test";
import type { Coupon } from "../../actors/cart/coupons.ts";
import { computeTotals, flatRateTax, shippingFor, unitPriceOf, type PricedLine } from "../../actors/cart/totals.ts";
import { ActorError } from "../../actors/runtime/errors.ts";

const NOW = Date.UTC(2025, 5, 1);
const L = (over: Partial<PricedLine> = {}): PricedLine => ({ storeId: "a", productId: "p1", quantity: 1, listPriceMinor: 1_000, currency: "USD", ...over });

function errorOf(fn: () => unknown): ActorError | undefined {
  try {
    fn();
  } catch (e) {
    if (e instanceof ActorError) return e;
    throw e;
  }
  return undefined;
}

describe("cart totals", () => {
  test("a single-store cart sums quantity × unit price", () => {
    const t = computeTotals({ lines: [L({ quantity: 3 }), L({ productId: "p2", listPriceMinor: 250 })], now: NOW });
    expect(t).toMatchObject({ currency: "USD", subtotalMinor: 3_250, discountMinor: 0, shippingMinor: 0, taxMinor: 0, totalMinor: 3_250 });
    expect(t.stores[0].itemCount).toBe(4);
  });

  test("a multi-store cart has one subtotal per store and a cart total that is their sum", () => {
    const t = computeTotals({ lines: [L(), L({ storeId: "b", listPriceMinor: 2_000 })], now: NOW });
    expect(t.stores.map((s) => [s.storeId, s.subtotalMinor])).toEqual([["a", 1_000], ["b", 2_000]]);
    expect(t.totalMinor).toBe(3_000);
  });

  test("lines in two currencies are refused with CURRENCY_MISMATCH", () => {
    const err = errorOf(() => computeTotals({ lines: [L(), L({ currency: "EUR" })], now: NOW }));
    expect(err?.code).toBe("CURRENCY_MISMATCH");
    expect(err?.details?.currencies).toEqual(["USD", "EUR"]);
  });

  test("an empty cart is INSUFFICIENT_INPUT", () => {
    expect(errorOf(() => computeTotals({ lines: [], now: NOW }))?.code).toBe("INSUFFICIENT_INPUT");
  });

  for (const q of [0, -1, 1.5]) {
    test(`a quantity of ${q} is INVALID_ARGUMENT`, () => {
      expect(errorOf(() => computeTotals({ lines: [L({ quantity: q })], now: NOW }))?.code).toBe("INVALID_ARGUMENT");
    });
  }

  test("a fractional price is INVALID_ARGUMENT: money is integer minor units", () => {
    expect(errorOf(() => computeTotals({ lines: [L({ listPriceMinor: 9.99 })], now: NOW }))?.code).toBe("INVALID_ARGUMENT");
  });
});

describe("negotiated prices", () => {
  test("an unexpired negotiated price overrides the list price", () => {
    expect(unitPriceOf(L({ negotiated: { unitPriceMinor: 800, expiresAt: NOW + 1 } }), NOW)).toEqual({ unitPriceMinor: 800, priceSource: "negotiated" });
  });
  test("a negotiated price at its expiry instant no longer applies", () => {
    expect(unitPriceOf(L({ negotiated: { unitPriceMinor: 800, expiresAt: NOW } }), NOW).priceSource).toBe("list");
  });
  test("a negotiated price above the list price is ignored", () => {
    expect(unitPriceOf(L({ negotiated: { unitPriceMinor: 1_200, expiresAt: NOW + 1 } }), NOW).unitPriceMinor).toBe(1_000);
  });
  test("a negotiated price in another currency is ignored", () => {
    expect(unitPriceOf(L({ negotiated: { unitPriceMinor: 800, currency: "EUR", expiresAt: NOW + 1 } }), NOW).priceSource).toBe("list");
  });
  test("the totals use the negotiated price", () => {
    expect(computeTotals({ lines: [L({ quantity: 2, negotiated: { unitPriceMinor: 800, expiresAt: NOW + 1 } })], now: NOW }).totalMinor).toBe(1_600);
  });
});

describe("shipping", () => {
  const rule = { baseMinor: 500, perItemMinor: 100, freeOverMinor: 5_000 };
  test("shipping is base plus per item", () => expect(shippingFor(rule, 3, 4_999)).toBe(800));
  test("shipping is free exactly at the threshold", () => expect(shippingFor(rule, 3, 5_000)).toBe(0));
  test("a rule without a threshold never ships free", () => expect(shippingFor({ baseMinor: 500, perItemMinor: 0 }, 1, 10 ** 9)).toBe(500));

  test("the free-shipping threshold compares the subtotal after the discount", () => {
    const coupon: Coupon = { code: "TEN", kind: "fixed", amountMinor: 100, currency: "USD" };
    const t = computeTotals({ lines: [L({ listPriceMinor: 5_000 })], shipping: { a: rule }, coupon: { code: "TEN", coupon }, now: NOW });
    expect(t.stores[0]).toMatchObject({ subtotalMinor: 5_000, discountMinor: 100, shippingMinor: 600, totalMinor: 5_500 });
  });

  test("a store without a shipping rule has no quote yet", () => {
    const t = computeTotals({ lines: [L(), L({ storeId: "b" })], shipping: { a: rule }, now: NOW });
    expect(t.stores.map((s) => s.shippingQuoted)).toEqual([true, false]);
  });
});

describe("discounts in totals", () => {
  test("a store coupon discounts only that store", () => {
    const coupon: Coupon = { code: "B10", kind: "percent", percentBps: 1_000, storeId: "b" };
    const t = computeTotals({ lines: [L(), L({ storeId: "b", listPriceMinor: 2_000 })], coupon: { code: "b10", coupon }, now: NOW });
    expect(t.stores.map((s) => s.discountMinor)).toEqual([0, 200]);
    expect(t.totalMinor).toBe(2_800);
  });

  test("a store coupon for a store not in the cart is rejected as invalid", () => {
    const coupon: Coupon = { code: "Z", kind: "percent", percentBps: 1_000, storeId: "z" };
    const t = computeTotals({ lines: [L()], coupon: { code: "Z", coupon }, now: NOW });
    expect(t.coupon).toMatchObject({ applied: false, reason: "invalid" });
    expect(t.discountMinor).toBe(0);
  });

  test("a cart-wide coupon is split across stores in proportion and the parts add up", () => {
    const coupon: Coupon = { code: "ALL", kind: "fixed", amountMinor: 1_000, currency: "USD" };
    const t = computeTotals({ lines: [L({ listPriceMinor: 1_000 }), L({ storeId: "b", listPriceMinor: 2_000 })], coupon: { code: "ALL", coupon }, now: NOW });
    expect(t.stores.map((s) => s.discountMinor)).toEqual([333, 667]);
    expect(t.discountMinor).toBe(1_000);
  });

  test("a coupon bigger than the cart leaves a zero total, not a negative one", () => {
    const coupon: Coupon = { code: "BIG", kind: "fixed", amountMinor: 99_999, currency: "USD" };
    const t = computeTotals({ lines: [L(), L({ storeId: "b" })], coupon: { code: "BIG", coupon }, now: NOW });
    expect(t.totalMinor).toBe(0);
    expect(t.stores.every((s) => s.totalMinor === 0)).toBe(true);
  });

  test("a rejected coupon is reported and changes nothing", () => {
    const coupon: Coupon = { code: "EUR5", kind: "fixed", amountMinor: 500, currency: "EUR" };
    const t = computeTotals({ lines: [L()], coupon: { code: "EUR5", coupon }, now: NOW });
    expect(t.coupon).toMatchObject({ applied: false, reason: "currency_mismatch" });
    expect(t.totalMinor).toBe(1_000);
  });
});

describe("tax", () => {
  test("there is no tax by default", () => expect(computeTotals({ lines: [L()], now: NOW }).taxMinor).toBe(0));

  test("a flat rate taxes items after discount and rounds half to even", () => {
    // 8.25 % of 1,010 = 83.325 → 83 ; of 1,030 = 84.975 → 85
    expect(computeTotals({ lines: [L({ listPriceMinor: 1_010 })], tax: flatRateTax(825), now: NOW }).taxMinor).toBe(83);
    expect(computeTotals({ lines: [L({ listPriceMinor: 1_030 })], tax: flatRateTax(825), now: NOW }).taxMinor).toBe(85);
    // 10 % of 1,005 = 100.5 → 100 (even) ; of 1,015 = 101.5 → 102 (even)
    expect(computeTotals({ lines: [L({ listPriceMinor: 1_005 })], tax: flatRateTax(1_000), now: NOW }).taxMinor).toBe(100);
    expect(computeTotals({ lines: [L({ listPriceMinor: 1_015 })], tax: flatRateTax(1_000), now: NOW }).taxMinor).toBe(102);
  });

  test("a flat rate can include shipping in its base", () => {
    const t = computeTotals({
      lines: [L()],
      shipping: { a: { baseMinor: 1_000, perItemMinor: 0 } },
      tax: flatRateTax(1_000, { includeShipping: true }),
      now: NOW,
    });
    expect(t.taxMinor).toBe(200);
    expect(t.totalMinor).toBe(2_200);
  });

  test("a tax hook returning a fraction is refused", () => {
    expect(errorOf(() => computeTotals({ lines: [L()], tax: () => 0.5, now: NOW }))?.code).toBe("internal_error");
  });
});
