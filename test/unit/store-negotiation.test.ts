import { describe, expect, test } from "bun:test";
import { decideBid, noLineAtListPrice, type NegotiationDecision } from "../../actors/store/negotiation.ts";
import type { NegotiationRules } from "../../actors/store/schemas.ts";

// List 100.00, floor 70 % (7000), auto-accept 90 % (9000), three bids per key and product.
const RULES: NegotiationRules = { enabled: true, floorPercent: 70, autoAcceptPercent: 90, maxRounds: 3, excludedCategories: ["Gift Cards"] };
const LIST = 10_000;

const decide = (over: Partial<Parameters<typeof decideBid>[0]> = {}): NegotiationDecision =>
  decideBid({ rules: RULES, listPriceMinor: LIST, bidMinor: LIST, category: "Kitchen", priorRounds: 0, ...over });

describe("a bid against the merchant's price band", () => {
  const cases: { name: string; bid: number; status: NegotiationDecision["status"]; price: number | null; counter: number | null; reason: NegotiationDecision["reason"] }[] = [
    { name: "a bid exactly at the auto-accept price is accepted at the bid", bid: 9000, status: "accepted", price: 9000, counter: null, reason: null },
    { name: "a bid one minor unit below the auto-accept price is countered", bid: 8999, status: "countered", price: null, counter: 9500, reason: null },
    { name: "a bid at the list price is accepted at the list price", bid: 10_000, status: "accepted", price: 10_000, counter: null, reason: null },
    { name: "a bid above the list price is accepted at the list price, never above it", bid: 12_000, status: "accepted", price: 10_000, counter: null, reason: null },
    { name: "a bid exactly at the floor is countered, not rejected", bid: 7000, status: "countered", price: null, counter: 9000, reason: null },
    { name: "a bid one minor unit below the floor is rejected as below_floor", bid: 6999, status: "rejected", price: null, counter: null, reason: "below_floor" },
    { name: "a bid of zero is rejected as below_floor", bid: 0, status: "rejected", price: null, counter: null, reason: "below_floor" },
  ];
  for (const c of cases) {
    test(c.name, () => {
      const d = decide({ bidMinor: c.bid });
      expect({ status: d.status, price: d.negotiatedPriceMinor, counter: d.counterPriceMinor, reason: d.reason }).toEqual({
        status: c.status,
        price: c.price,
        counter: c.counter,
        reason: c.reason,
      });
    });
  }

  test("a rejection below the floor does not disclose the floor price", () => {
    const d = decide({ bidMinor: 6999 });
    expect(d.message).not.toMatch(/70|7000|floor/i);
  });
});

describe("the counter price", () => {
  const wide: NegotiationRules = { ...RULES, floorPercent: 10, autoAcceptPercent: 60 };
  const cases: { name: string; rules: NegotiationRules; bid: number; counter: number }[] = [
    { name: "is the midpoint of bid and list when that is above the auto-accept price", rules: wide, bid: 5000, counter: 7500 },
    { name: "rounds a half-unit midpoint up", rules: wide, bid: 5001, counter: 7501 },
    { name: "is raised to the auto-accept price when the midpoint is below it", rules: { ...RULES, floorPercent: 50, autoAcceptPercent: 99 }, bid: 6000, counter: 9900 },
  ];
  for (const c of cases) {
    test(c.name, () => {
      expect(decideBid({ rules: c.rules, listPriceMinor: LIST, bidMinor: c.bid, category: null, priorRounds: 0 }).counterPriceMinor).toBe(c.counter);
    });
  }

  test("bidding the counter price is accepted", () => {
    for (const bid of [7000, 7500, 8000, 8999]) {
      const counter = decide({ bidMinor: bid }).counterPriceMinor!;
      expect(decide({ bidMinor: counter, priorRounds: 1 })).toMatchObject({ status: "accepted", negotiatedPriceMinor: counter });
    }
  });
});

describe("percent prices that are not whole minor units", () => {
  const cases: { name: string; list: number; autoAcceptPercent: number; floorPercent: number; bid: number; status: NegotiationDecision["status"] }[] = [
    // 90 % of 9.99 is 8.991: the auto-accept price rounds up to 9.00.
    { name: "a bid just under a fractional auto-accept price is countered", list: 999, autoAcceptPercent: 90, floorPercent: 50, bid: 899, status: "countered" },
    { name: "a bid at the auto-accept price rounded up to a whole minor unit is accepted", list: 999, autoAcceptPercent: 90, floorPercent: 50, bid: 900, status: "accepted" },
    // 70 % of 9.99 is 6.993: the floor rounds up to 7.00.
    { name: "a bid just under a fractional floor is rejected", list: 999, autoAcceptPercent: 90, floorPercent: 70, bid: 699, status: "rejected" },
    { name: "a bid at the floor rounded up to a whole minor unit is countered", list: 999, autoAcceptPercent: 90, floorPercent: 70, bid: 700, status: "countered" },
    // 99.9 % of 410.00 is exactly 409.59, but 41000 * 99.9 / 100 is 40959.00000000001 in binary floating point.
    { name: "a bid exactly at a decimal auto-accept percent is accepted despite float noise", list: 41_000, autoAcceptPercent: 99.9, floorPercent: 50, bid: 40_959, status: "accepted" },
    // 2.2 % of 15.00 is exactly 0.33.
    { name: "a bid exactly at a decimal floor percent is not rejected despite float noise", list: 1500, autoAcceptPercent: 90, floorPercent: 2.2, bid: 33, status: "countered" },
  ];
  for (const c of cases) {
    test(c.name, () => {
      const rules = { ...RULES, autoAcceptPercent: c.autoAcceptPercent, floorPercent: c.floorPercent };
      expect(decideBid({ rules, listPriceMinor: c.list, bidMinor: c.bid, category: null, priorRounds: 0 }).status).toBe(c.status);
    });
  }
});

describe("bids the merchant does not take at all", () => {
  const cases: { name: string; over: Partial<Parameters<typeof decideBid>[0]>; reason: NegotiationDecision["reason"] }[] = [
    { name: "no rules means negotiation is not enabled", over: { rules: null }, reason: "negotiation_not_enabled" },
    { name: "disabled rules mean negotiation is not enabled", over: { rules: { ...RULES, enabled: false } }, reason: "negotiation_not_enabled" },
    { name: "an excluded category is rejected even for a full-price bid", over: { category: "Gift Cards" }, reason: "category_excluded" },
    { name: "an excluded category matches whatever its case", over: { category: "gift cards" }, reason: "category_excluded" },
    { name: "a product without a category is not excluded", over: { category: null }, reason: null },
    { name: "the last allowed round (prior rounds one less than maxRounds) is still decided", over: { priorRounds: 2 }, reason: null },
    { name: "a bid after maxRounds bids is rejected as max_rounds_reached", over: { priorRounds: 3 }, reason: "max_rounds_reached" },
    { name: "the round limit is checked before the price, so a good bid past it is still rejected", over: { priorRounds: 4, bidMinor: 9500 }, reason: "max_rounds_reached" },
  ];
  for (const c of cases) {
    test(c.name, () => {
      const d = decide(c.over);
      expect(d.reason).toBe(c.reason);
      expect(d.status).toBe(c.reason === null ? "accepted" : "rejected");
      if (c.reason !== null) expect({ price: d.negotiatedPriceMinor, counter: d.counterPriceMinor }).toEqual({ price: null, counter: null });
    });
  }
});

describe("a product whose lines cannot sell at its list price", () => {
  test("no line sells at the list price only when there are variants and each has a price of its own, other than the list price", () => {
    expect(noLineAtListPrice(LIST, [])).toBe(false);
    expect(noLineAtListPrice(LIST, [{ priceMinor: null }, { priceMinor: 12_000 }])).toBe(false);
    expect(noLineAtListPrice(LIST, [{ priceMinor: LIST }, { priceMinor: 12_000 }])).toBe(false);
    expect(noLineAtListPrice(LIST, [{ priceMinor: 11_000 }, { priceMinor: 12_000 }])).toBe(true);
  });

  test("a bid on it is rejected as variants_priced_separately whatever its amount, after the category check", () => {
    expect(decide({ bidMinor: LIST, noLineAtListPrice: true })).toMatchObject({ status: "rejected", reason: "variants_priced_separately", negotiatedPriceMinor: null });
    expect(decide({ noLineAtListPrice: true, category: "Gift Cards" }).reason).toBe("category_excluded");
  });
});
