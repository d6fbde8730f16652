/**
 * POST /agent/negotiate (BETA), pure. The merchant's rules (stores.negotiation_rules) decide one bid:
 *  - bid >= autoAcceptPercent of the list price → accepted at the bid (never above the list price);
 *  - bid <  floorPercent of the list price      → rejected (the floor is not disclosed, only that it is not met);
 *  - in between                                 → countered at the midpoint of bid and list price, never below the
 *                                                 auto-accept price, so bidding the counter is accepted;
 *  - rules missing or disabled, category excluded, or more than maxRounds bids per key and product → rejected.
 * An accepted offer holds for OFFER_TTL_MS; a cart may use its negotiated price until then.
 */
import type { NegotiationRules } from "./schemas.ts";

export const OFFER_TTL_MS = 15 * 60_000;

export type NegotiationStatus = "accepted" | "countered" | "rejected";
export type RejectReason = "negotiation_not_enabled" | "category_excluded" | "below_floor" | "max_rounds_reached";

export interface NegotiationDecision {
  status: NegotiationStatus;
  /** Set when accepted: the price a cart may use. */
  negotiatedPriceMinor: number | null;
  /** Set when countered. */
  counterPriceMinor: number | null;
  reason: RejectReason | null;
  message: string;
}

/**
 * `percent` % of `minor`, rounded up to a whole minor unit. Binary noise is cut before rounding up: 41000 × 99.9 / 100
 * is 40959.00000000001 in floating point, and a plain ceil would put a bid of exactly 99.9 % one unit short.
 */
function percentOfMinor(minor: number, percent: number): number {
  return Math.ceil(Number(((minor * percent) / 100).toFixed(6)));
}

export function decideBid(input: {
  rules: NegotiationRules | null;
  listPriceMinor: number;
  bidMinor: number;
  category: string | null;
  /** Bids already made by this key on this product (this one not included). */
  priorRounds: number;
}): NegotiationDecision {
  const { rules, listPriceMinor: list, bidMinor: bid } = input;
  const reject = (reason: RejectReason, message: string): NegotiationDecision => ({
    status: "rejected",
    negotiatedPriceMinor: null,
    counterPriceMinor: null,
    reason,
    message,
  });
  if (!rules || !rules.enabled) return reject("negotiation_not_enabled", "This merchant does not negotiate prices.");
  const cat = input.category?.toLowerCase();
  if (cat && rules.excludedCategories.some((c) => c.toLowerCase() === cat)) {
    return reject("category_excluded", `Prices in category ${input.category} are not negotiable.`);
  }
  if (input.priorRounds >= rules.maxRounds) {
    return reject("max_rounds_reached", `At most ${rules.maxRounds} bids per product; the last answer stands.`);
  }
  const autoAccept = percentOfMinor(list, rules.autoAcceptPercent);
  const floor = percentOfMinor(list, rules.floorPercent);
  if (bid >= autoAccept) {
    return { status: "accepted", negotiatedPriceMinor: Math.min(bid, list), counterPriceMinor: null, reason: null, message: "Bid accepted." };
  }
  if (bid < floor) return reject("below_floor", "The bid is below what the merchant accepts.");
  const counter = Math.max(autoAccept, Math.round((bid + list) / 2));
  return {
    status: "countered",
    negotiatedPriceMinor: null,
    counterPriceMinor: Math.min(counter, list),
    reason: null,
    message: "The merchant counters; bid the counter price to have it accepted.",
  };
}
