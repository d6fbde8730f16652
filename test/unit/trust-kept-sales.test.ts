/**
 * Review R5, the pure part: a refund of all but a cent kept an order a sale toward the trust tier (R4-5 only took out
 * orders refunded in full), so a merchant buying from itself could still buy a tier back for a cent an order. An order
 * now counts toward the tier's order counts, unique buyers and GMV only when the merchant kept at least half of what
 * was captured (`INPUT_RULES.saleMaxRefundedShare`, docs/trust.md). The tier from such facts:
 * test/unit/trust-refunded-sales.test.ts; through HTTP and the real query: test/http/trust-refunded-sales.test.ts.
 */
import { describe, expect, test } from "bun:test";
import { INPUT_RULES, keptSale, saleOf } from "../../actors/trust/inputs.ts";

describe("keptSale: the merchant kept at least half of what was captured", () => {
  test("the bound is half the capture", () => {
    expect(INPUT_RULES.saleMaxRefundedShare).toBe(0.5);
  });

  test("a refund of all but a cent is no kept sale", () => {
    expect(keptSale(5000, 4999)).toBe(false);
    expect(keptSale(1, 0)).toBe(true);
  });

  test("exactly half refunded is kept; one cent more is not", () => {
    expect(keptSale(5000, 2500)).toBe(true);
    expect(keptSale(5000, 2501)).toBe(false);
    // An odd capture: half is 2500.5, so 2500 back is kept and 2501 is not.
    expect(keptSale(5001, 2500)).toBe(true);
    expect(keptSale(5001, 2501)).toBe(false);
  });

  test("a free order with nothing refunded is kept; any refund of a zero capture is not", () => {
    expect(keptSale(0, 0)).toBe(true);
    expect(keptSale(0, 1)).toBe(false);
  });

  test("the largest amounts stay exact (integer minor units far above any real order)", () => {
    const big = 2 ** 52;
    expect(keptSale(big, big / 2)).toBe(true);
    expect(keptSale(big, big / 2 + 1)).toBe(false);
  });
});

describe("saleOf counts what the merchant kept", () => {
  test("refunded all but a cent: a refund, no sale, no GMV", () => {
    expect(saleOf({ status: "paid", totalMinor: 5000, capturedMinor: null, refundedMinor: 4999 })).toEqual({ refunded: true, sale: false, netMinor: 0 });
  });

  test("a quarter refunded: a refund and a sale worth the rest", () => {
    expect(saleOf({ status: "partially_refunded", totalMinor: 5000, capturedMinor: null, refundedMinor: 1250 })).toEqual({ refunded: true, sale: true, netMinor: 3750 });
  });

  test("the share is of the capture, not of the order total", () => {
    // Captured 4000 of a 5000 order: 2500 back is more than half of what the merchant got.
    expect(saleOf({ status: "paid", totalMinor: 5000, capturedMinor: 4000, refundedMinor: 2500 })).toEqual({ refunded: true, sale: false, netMinor: 0 });
    // Captured 6000 of a 5000 order: the total back leaves 1000 of 6000 kept.
    expect(saleOf({ status: "paid", totalMinor: 5000, capturedMinor: 6000, refundedMinor: 5000 })).toEqual({ refunded: true, sale: false, netMinor: 0 });
  });
});
