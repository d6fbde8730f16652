import { describe, expect, test } from "bun:test";
import {
  consistencyChecks,
  disputeRefundHealth,
  disputeScore,
  fulfilmentScore,
  policyFieldsOf,
  refundScore,
  toV2Raw,
  toV41Inputs,
  type OrderFacts,
  type StoreFacts,
} from "../../actors/trust/inputs.ts";
import { computeV41 } from "../../actors/trust/engine-v41.ts";

const NOW = Date.parse("2026-06-01T00:00:00Z");
const DAY = 86_400_000;

const facts = (over: Partial<StoreFacts> = {}): StoreFacts => ({
  slug: "shop",
  verificationLevel: "STANDARD",
  createdAt: NOW - 400 * DAY,
  lastSyncAt: NOW - 60_000,
  policies: { acceptsReturns: true, returnWindowDays: 30, shippingEstimateDays: "3-5" },
  reviewAvg: 4.5,
  reviewCount: 10,
  products: { count: 10, withTitle: 10, withPrice: 10, withImages: 10, withGtin: 8, gtinInvalid: 1, gtinDuplicates: 0, priceCurrencyBad: 0, stockTracked: 10, stockInconsistent: 1 },
  orders: {
    human: 40, agent: 0, gmvMinor: 500_000, uniqueBuyers: 30, orders: 30, decided: 28, onTime: 27, disputes: 0, refunds: 1, humanGood: 25,
    agentAll: 0, agentCompleted: 0, agentDecided: 0, agentOnTime: 0, agentDisputes: 0,
  },
  ...over,
});

describe("normalisations of the input mapping", () => {
  test("fulfilment is 0 at 60 % on time, 1 at 95 %, linear between", () => {
    expect(fulfilmentScore(0.6)).toBe(0);
    expect(fulfilmentScore(0.95)).toBe(1);
    expect(fulfilmentScore(0.775)).toBeCloseTo(0.5, 9);
    expect(fulfilmentScore(0.3)).toBe(0);
  });

  test("disputes score 0 at 5 % and refunds at 25 %", () => {
    expect(disputeScore(0)).toBe(1);
    expect(disputeScore(0.05)).toBe(0);
    expect(refundScore(0.125)).toBe(0.5);
    expect(refundScore(0.4)).toBe(0);
  });

  test("policy coverage counts the six declared policy fields", () => {
    expect(policyFieldsOf({ acceptsReturns: false })).toEqual({ filled: 1, required: 6 });
    expect(policyFieldsOf({ acceptsReturns: true, returnWindowDays: 30, shippingEstimateDays: "" })).toEqual({ filled: 2, required: 6 });
  });

  test("consistency checks count price/currency, stock, GTIN check digit and GTIN uniqueness", () => {
    expect(consistencyChecks(facts().products)).toEqual({ total: 10 + 10 + 16, passed: 36 - 2 });
  });
});

describe("facts to engine inputs", () => {
  test("data the platform does not collect is never invented", () => {
    const v2 = toV2Raw(facts());
    expect(v2.priceChecks).toEqual({ total: 0, passed: 0 });
    expect(v2.stockChecks).toEqual({ total: 0, passed: 0 });
    expect(v2.agentEvents).toEqual({ cartCreated: 0, checkoutStart: 0, checkoutComplete: 0 });
    expect(v2.latencyP95Ms).toBeNull();
    const v41 = toV41Inputs(facts(), NOW);
    expect(v41.agenticReadiness.protocolSecurity?.quality).toBe("not_applicable");
    expect(v41.agenticEvidence.receiptIntegrity?.quality).toBe("not_applicable");
  });

  test("a store without agent orders has no applicable agent evidence and is human_established", () => {
    const v41 = toV41Inputs(facts(), NOW);
    expect(v41.agenticEvidence.agentCheckout?.quality).toBe("not_applicable");
    const r = computeV41(v41, { now: NOW });
    expect(r.tier).toBe("human_established");
    expect(r.value).toBeGreaterThan(0);
  });

  test("agent checkout health is a proxy from orders, and agent fulfilment/dispute takes the weaker of the two", () => {
    const v41 = toV41Inputs(
      facts({ orders: { ...facts().orders, agent: 10, agentAll: 10, agentCompleted: 8, agentDecided: 10, agentOnTime: 10, agentDisputes: 1 } }),
      NOW,
    );
    expect(v41.agenticEvidence.agentCheckout).toEqual({ value: 0.8, quality: "proxy" });
    // on time 100 % → 1, disputes 10 % → 0: the weaker one wins
    expect(v41.agenticEvidence.agentFulfillmentDispute).toEqual({ value: 0, quality: "measured" });
  });

  test("compliance health is the verification level held back by the dispute rate", () => {
    expect(toV41Inputs(facts({ verificationLevel: "QUALIFIED" }), NOW).agenticReadiness.complianceHealth?.value).toBe(1);
    expect(toV41Inputs(facts({ verificationLevel: "UNVERIFIED" }), NOW).agenticReadiness.complianceHealth?.value).toBe(0);
    const disputed = facts({ orders: { ...facts().orders, orders: 20, disputes: 1 } });
    expect(toV41Inputs(disputed, NOW).agenticReadiness.complianceHealth?.value).toBe(0); // 5 % disputes: dispute score 0
  });

  test("an empty catalog scores 0 catalog quality and a never-synced store 0 freshness", () => {
    const empty = facts({ products: { count: 0, withTitle: 0, withPrice: 0, withImages: 0, withGtin: 0, gtinInvalid: 0, gtinDuplicates: 0, priceCurrencyBad: 0, stockTracked: 0, stockInconsistent: 0 }, lastSyncAt: null });
    const v41 = toV41Inputs(empty, NOW);
    expect(v41.merchantReliabilityBase.catalogQuality?.value).toBe(0);
    expect(v41.agenticReadiness.integrationFreshness?.value).toBe(0);
  });
});

describe("dispute and refund health (audit A2 LOW-1)", () => {
  const base: OrderFacts = { ...facts().orders, orders: 20, disputes: 0, refunds: 0, refundsOrDisputes: 0 };
  /** `extra` more orders, all disputed and not refunded (the audit's repro: disputed, late, delivered). */
  const withDisputed = (o: OrderFacts, extra: number): OrderFacts => ({
    ...o,
    orders: o.orders + extra,
    disputes: o.disputes + extra,
    refundsOrDisputes: (o.refundsOrDisputes ?? 0) + extra,
  });

  test("more disputed orders never raise the signal, also once the dispute score is 0", () => {
    let prev = disputeRefundHealth(base)!;
    let o = base;
    // 1, 2, ... disputed orders on 20: the dispute rate passes 5 % at the first one and keeps growing.
    for (let k = 1; k <= 600; k++) {
      o = withDisputed(o, 1);
      const h = disputeRefundHealth(o)!;
      expect(h).toBeLessThanOrEqual(prev + 1e-12);
      prev = h;
    }
    // 600 of 620 orders disputed: nothing healthy is left.
    expect(prev).toBe(0);
  });

  test("the audit's case: +200 then +400 disputed orders on a store with a few refunds keeps falling", () => {
    const store: OrderFacts = { ...base, orders: 20, refunds: 2, refundsOrDisputes: 2 };
    const a = disputeRefundHealth(store)!;
    const b = disputeRefundHealth(withDisputed(store, 200))!;
    const c = disputeRefundHealth(withDisputed(store, 600))!;
    expect(b).toBeLessThan(a);
    expect(c).toBeLessThanOrEqual(b);
  });

  test("more clean orders never lower it", () => {
    const store: OrderFacts = { ...base, disputes: 1, refunds: 2, refundsOrDisputes: 3 };
    const more = { ...store, orders: store.orders + 10 };
    expect(disputeRefundHealth(more)!).toBeGreaterThan(disputeRefundHealth(store)!);
  });

  test("facts stored before the combined count existed fall back to refunds plus disputes, capped at the orders", () => {
    const old: OrderFacts = { ...base, orders: 10, disputes: 6, refunds: 6 };
    delete old.refundsOrDisputes;
    expect(disputeRefundHealth(old)).toBe(0);
    expect(disputeRefundHealth({ ...old, disputes: 0, refunds: 1 })).toBeCloseTo(0.6 + 0.4 * (1 - 0.1 / 0.25), 9);
  });
});
