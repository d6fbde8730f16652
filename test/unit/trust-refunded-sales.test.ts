/**
 * R4-5, the pure part: a fully refunded order is no sale (review R5: nor one refunded more than half). It adds no order, buyer or GMV toward the tier, GMV is
 * captured minus refunded, and every refund stays evidence for refund health. Through HTTP and the real query:
 * test/http/trust-refunded-sales.test.ts.
 */
import { describe, expect, test } from "bun:test";
import { computeV41 } from "../../actors/trust/engine-v41.ts";
import { saleOf, toV41Inputs, type StoreFacts } from "../../actors/trust/inputs.ts";
import { methodologyDocument } from "../../actors/trust/methodology.ts";

// saleOf's cases (and the query's agreement with it) are one table in test/http/trust-refunded-sales.test.ts; the
// kept-sale bound (review R5) is tested in test/unit/trust-kept-sales.test.ts.

describe("the tier counts sales; refund health counts refunds", () => {
  const NOW = Date.parse("2026-06-01T00:00:00Z");
  const facts = (orders: Partial<StoreFacts["orders"]>): StoreFacts => ({
    slug: "s",
    verificationLevel: "STANDARD",
    createdAt: NOW - 400 * 86_400_000,
    lastSyncAt: NOW,
    policies: {},
    reviewAvg: null,
    reviewCount: 0,
    products: { count: 10, withTitle: 10, withPrice: 10, withImages: 10, withGtin: 0, gtinInvalid: 0, gtinDuplicates: 0, priceCurrencyBad: 0, stockTracked: 0, stockInconsistent: 0 },
    orders: {
      human: 0, agent: 0, gmvMinor: 0, uniqueBuyers: 0, orders: 0, decided: 0, onTime: 0, disputes: 0, refunds: 0, refundsOrDisputes: 0, humanGood: 0,
      agentAll: 0, agentCompleted: 0, agentDecided: 0, agentOnTime: 0, agentDisputes: 0, agentCheckoutRate: null,
      ...orders,
    },
  });

  test("20 orders by 20 buyers, 1,000,000 net: agent_verified; the same 20 fully refunded: no sale, cold_start, refund score 0", () => {
    // What loadStoreFacts returns for 20 paid agent orders of 50,000 each by 20 buyers, kept or fully refunded.
    const kept = facts({ agent: 20, gmvMinor: 1_000_000, uniqueBuyers: 20, orders: 20, agentAll: 20, agentCompleted: 20, agentCheckoutRate: 1 });
    const refunded = facts({ agent: 0, gmvMinor: 0, uniqueBuyers: 0, orders: 20, refunds: 20, refundsOrDisputes: 20, agentAll: 20, agentCompleted: 0, agentCheckoutRate: 0 });
    expect(computeV41(toV41Inputs(kept, NOW), { now: NOW }).tier).toBe("agent_verified");
    const inputs = toV41Inputs(refunded, NOW);
    expect({ agentOrders: inputs.agentOrders, gmv90dMinor: inputs.gmv90dMinor, uniqueBuyers90d: inputs.uniqueBuyers90d }).toEqual({ agentOrders: 0, gmv90dMinor: 0, uniqueBuyers90d: 0 });
    expect(inputs.merchantReliabilityBase.disputeRefundHealth).toEqual({ value: 0.6, quality: "measured" });
    expect(computeV41(inputs, { now: NOW }).tier).toBe("cold_start");
  });

  test("the same 20 orders each refunded all but a cent: no sale either (review R5), cold_start", () => {
    // What the orders query adds up, order by order, with saleOf.
    const each = saleOf({ status: "paid", totalMinor: 50_000, capturedMinor: null, refundedMinor: 49_999 });
    const sales = each.sale ? 20 : 0;
    const inputs = toV41Inputs(facts({ agent: sales, gmvMinor: 20 * each.netMinor, uniqueBuyers: sales, orders: 20, refunds: 20, refundsOrDisputes: 20, agentAll: 20, agentCheckoutRate: 0 }), NOW);
    expect({ agentOrders: inputs.agentOrders, gmv90dMinor: inputs.gmv90dMinor, uniqueBuyers90d: inputs.uniqueBuyers90d }).toEqual({ agentOrders: 0, gmv90dMinor: 0, uniqueBuyers90d: 0 });
    expect(computeV41(inputs, { now: NOW }).tier).toBe("cold_start");
  });
});

test("the methodology document says what the tier counts", () => {
  expect(methodologyDocument().tier_counts).toBe(
    "humanOrders, agentOrders, GMV and unique buyers count kept sales only: paid, not canceled orders of which at most half of the capture was refunded; GMV is captured minus refunded, in the store's currency. Refunded orders count toward refund health",
  );
});
