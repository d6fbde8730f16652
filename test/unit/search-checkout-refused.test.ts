/**
 * The search result's agent-checkout signal (review RN LOW-3; docs/search.md): the threshold rule is bands.ts's
 * `agentCheckoutAllowed`, the one the cart's checkout applies, and why_ranked shows a refused store's trust so that the
 * number shown is below the threshold shown: two decimals as elsewhere, more where two would round up to 0.70
 * (toFixed(2) wrote 0.6996 as "trust 0.70 below 0.70").
 */
import { describe, expect, test } from "bun:test";
import { agentCheckoutAllowed } from "../../actors/trust/bands.ts";
import { agentCheckoutOf, rankProducts, type RankableProduct, type StoreSnapshot } from "../../search/ranking.ts";
import { resolveSearchSettings } from "../../search/settings.ts";

const NOW = new Date("2025-06-01T12:00:00.000Z");

function whyOf(trustScore: number): { why: string; agentCheckout: boolean | undefined } {
  const store: StoreSnapshot = {
    slug: "shop",
    name: "SHOP",
    trustScore,
    verificationLevel: "STANDARD",
    storeStatus: "active",
    lastSyncAt: new Date(NOW.getTime() - 2 * 3_600_000).toISOString(),
    euQualified: false,
    priceAccuracy: 0.99,
    availabilityAccuracy: 0.99,
  };
  const p: RankableProduct = {
    id: "00000000-0000-4000-8000-000000000001",
    storeSlug: "shop",
    title: "Kettle",
    description: "",
    priceMinor: 1000,
    compareAtPriceMinor: null,
    currency: "EUR",
    inStock: true,
    imageUrl: null,
    category: null,
    createdAt: "2025-01-01T00:00:00.000Z",
  };
  const [item] = rankProducts({
    candidates: [{ id: p.id, textScore: 0.5 }],
    products: new Map([[p.id, p]]),
    stores: new Map([[store.slug, store]]),
    request: {},
    now: NOW,
    settings: resolveSearchSettings(),
  }).items;
  return { why: item!.why_ranked, agentCheckout: item!.merchant.agentCheckout };
}

describe("why_ranked's agent checkout refusal", () => {
  test("a store scored just below the threshold reads as below it, never as 0.70 below 0.70", () => {
    for (const [score, shown] of [
      [0.6996, "0.6996"],
      [0.6999, "0.6999"],
      [0.6951, "0.695"],
      [0.6949, "0.69"],
      [0.5779, "0.58"],
      [0.58, "0.58"],
      [0.3, "0.30"],
    ] as const) {
      const { why, agentCheckout } = whyOf(score);
      expect(agentCheckout).toBe(false);
      expect(why).toEndWith(`; agent checkout refused: trust ${shown} below 0.70`);
    }
  });

  test("a store at the threshold or above has no refusal", () => {
    for (const score of [0.7, 0.7001, 0.95]) {
      const { why, agentCheckout } = whyOf(score);
      expect(agentCheckout).toBe(true);
      expect(why).not.toContain("agent checkout refused");
    }
  });

  test("the search flag follows the checkout's own threshold rule for every score, and a store without a score is refused", () => {
    for (let i = 0; i <= 10_000; i++) {
      const score = i / 10_000;
      expect(agentCheckoutOf(score).agentCheckout).toBe(agentCheckoutAllowed(score));
    }
    expect(agentCheckoutOf(null)).toEqual({ agentCheckout: false, agentCheckoutReason: "trust_below_agent_threshold" });
    expect(agentCheckoutOf(Number.NaN)).toEqual({ agentCheckout: false, agentCheckoutReason: "trust_below_agent_threshold" });
  });
});
