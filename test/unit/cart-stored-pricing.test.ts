import { describe, expect, test } from "bun:test";
import type { Coupon } from "../../actors/cart/coupons.ts";
import { checkoutStateFromTotals, stateHash, type CheckoutState } from "../../actors/cart/state-hash.ts";
import { previewedOf, storePricing, totalsOf } from "../../actors/cart/stored-pricing.ts";
import { computeTotals, flatRateTax, type CartTotals, type PricedLine, type TotalsInput } from "../../actors/cart/totals.ts";

const NOW = Date.UTC(2026, 10, 1);
const P1 = "5befd987-79cd-540c-8a5d-2ba5a30aed41";
const P2 = "0a1b2c3d-79cd-540c-8a5d-2ba5a30aed42";
const P3 = "9f8e7d6c-79cd-540c-8a5d-2ba5a30aed43";
const V1 = "11111111-2222-4333-8444-555555555555";
const L = (over: Partial<PricedLine> = {}): PricedLine => ({ storeId: "demo-store", productId: P1, quantity: 1, listPriceMinor: 2_695, currency: "USD", ...over });

/** Totals and the approved state exactly as the cart actor's price() builds them. */
function priced(input: Omit<TotalsInput, "now">, available: Record<string, number | null> = {}, policy: Record<string, string> = {}) {
  const totals = computeTotals({ ...input, now: NOW });
  const state = checkoutStateFromTotals(totals, {
    policyVersion: (slug) => policy[slug] ?? "1",
    available: (_slug, productId, variantId) => available[`${productId}:${variantId ?? ""}`] ?? null,
  });
  return { totals, state };
}

const percent10: Coupon = { code: "TEN", kind: "percent", percentBps: 1_000, active: true };

const cases: [string, { totals: CartTotals; state: CheckoutState }][] = [
  ["one untracked line, one shipping rule (the bench's cart)", priced({ lines: [L()], shipping: { "demo-store": { baseMinor: 699, perItemMinor: 0 } } })],
  [
    "two stores, a cart-wide percent coupon split between them, a negotiated price, tracked stock and a variant",
    priced(
      {
        lines: [
          L({ quantity: 3, negotiated: { unitPriceMinor: 2_000, expiresAt: NOW + 60_000 } }),
          L({ productId: P2, variantId: V1, listPriceMinor: 1_250 }),
          L({ storeId: "summit-sports-co", productId: P3, quantity: 2, listPriceMinor: 9_999 }),
        ],
        shipping: { "demo-store": { baseMinor: 500, perItemMinor: 100, freeOverMinor: 100_000 }, "summit-sports-co": { baseMinor: 0, perItemMinor: 250 } },
        coupon: { code: "TEN", coupon: percent10 },
        tax: flatRateTax(825, { includeShipping: true }),
      },
      { [`${P1}:`]: 7, [`${P2}:${V1}`]: 0 },
      { "summit-sports-co": "4" },
    ),
  ],
  ["a store without a shipping quote and a rejected coupon", priced({ lines: [L()], coupon: { code: "NOPE", coupon: undefined } })],
];

describe("a checkout session's stored pricing", () => {
  for (const [name, { totals, state }] of cases) {
    test(`rebuilds the totals and the approved state exactly: ${name}`, () => {
      // what the state row holds is JSON: the round trip is part of what must be exact
      const stored = JSON.parse(JSON.stringify(storePricing(totals, state)));
      expect(totalsOf({ pricing: stored })).toEqual(totals);
      expect(previewedOf({ pricing: stored })).toEqual(state);
      expect(stateHash(previewedOf({ pricing: stored }))).toBe(stateHash(state));
    });
  }

  test("holds a one-item cart's preview in well under half the bytes of totals plus previewed state", () => {
    const { totals, state } = cases[0][1];
    const before = JSON.stringify({ totals, previewed: state }).length;
    const after = JSON.stringify({ pricing: storePricing(totals, state) }).length;
    expect(after).toBeLessThan(before * 0.45);
  });

  test("a session stored before the compact form is read from its own totals and previewed state", () => {
    const { totals, state } = cases[1][1];
    const legacy = JSON.parse(JSON.stringify({ totals, previewed: state }));
    expect(totalsOf(legacy)).toEqual(totals);
    expect(previewedOf(legacy)).toEqual(state);
  });

  test("refuses a state that does not belong to the totals instead of storing a mix", () => {
    const { totals } = cases[0][1];
    const other = cases[1][1].state;
    expect(() => storePricing(totals, other)).toThrow();
    const moved = { ...cases[0][1].state, stores: cases[0][1].state.stores.map((s) => ({ ...s, lines: s.lines.map((l) => ({ ...l, unitPriceMinor: l.unitPriceMinor + 1 })) })) };
    expect(() => storePricing(totals, moved)).toThrow();
  });
});
