/** One code naming a coupon at several stores of a cart (actors/cart/totals.ts discountsOf; audit A3-2). */
import { describe, expect, test } from "bun:test";
import type { Coupon } from "../../actors/cart/coupons.ts";
import { computeTotals, type PricedLine } from "../../actors/cart/totals.ts";

const NOW = Date.UTC(2025, 5, 1);
const L = (over: Partial<PricedLine> = {}): PricedLine => ({ storeId: "a", productId: "p1", quantity: 1, listPriceMinor: 1_000, currency: "USD", ...over });
const lines = [L(), L({ storeId: "b", productId: "p2", listPriceMinor: 2_000 })];
const pct = (storeId: string, over: Partial<Coupon> = {}): Coupon => ({ code: "X", kind: "percent", percentBps: 1_000, storeId, ...over });

describe("one code at several stores", () => {
  test("an inactive row of the first store does not hide the second store's applicable row", () => {
    const t = computeTotals({ lines, coupon: { code: "x", coupon: [pct("a", { active: false }), pct("b")] }, now: NOW });
    expect(t.stores.map((s) => s.discountMinor)).toEqual([0, 200]);
    expect(t.coupon).toEqual({ applied: true, code: "X", discountMinor: 200 });
  });

  test("two applicable rows each discount their own store and the answer sums them", () => {
    const t = computeTotals({ lines, coupon: { code: "X", coupon: [pct("a"), { code: "X", kind: "fixed", amountMinor: 300, currency: "USD", storeId: "b" }] }, now: NOW });
    expect(t.stores.map((s) => s.discountMinor)).toEqual([100, 300]);
    expect(t.coupon).toEqual({ applied: true, code: "X", discountMinor: 400 });
    expect(t.totalMinor).toBe(2_600);
  });

  test("with none applicable, the rejection that got furthest is the answer (expired < exhausted < below_minimum)", () => {
    const t = computeTotals({
      lines,
      coupon: { code: "X", coupon: [pct("a", { expiresAt: NOW }), pct("b", { minSpendMinor: 5_000 })] },
      now: NOW,
    });
    expect(t.coupon).toEqual({ applied: false, code: "X", reason: "below_minimum", details: { min_spend_minor: 5_000, eligible_subtotal_minor: 2_000 } });
    expect(t.discountMinor).toBe(0);
    const u = computeTotals({ lines, coupon: { code: "X", coupon: [pct("a", { maxUses: 1, usedCount: 1 }), pct("b", { active: false })] }, now: NOW });
    expect(u.coupon).toEqual({ applied: false, code: "X", reason: "exhausted" });
  });

  test("an empty list is the unknown code: invalid", () => {
    const t = computeTotals({ lines, coupon: { code: "nope", coupon: [] }, now: NOW });
    expect(t.coupon).toEqual({ applied: false, code: "NOPE", reason: "invalid" });
  });
});
