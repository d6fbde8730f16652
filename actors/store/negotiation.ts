/**
 * POST /agent/negotiate (BETA). Pure but for `priorBidRounds`, the one read the rule needs. The merchant's rules (stores.negotiation_rules) decide one bid:
 *  - bid >= autoAcceptPercent of the list price → accepted at the bid (never above the list price);
 *  - bid <  floorPercent of the list price      → rejected (the floor is not disclosed, only that it is not met);
 *  - in between                                 → countered at the midpoint of bid and list price, never below the
 *                                                 auto-accept price, so bidding the counter is accepted;
 *  - rules missing or disabled, category excluded, or more than maxRounds bids per key and product → rejected.
 * An accepted offer holds for OFFER_TTL_MS; a cart may use its negotiated price until then.
 */
import type { Sql } from "../../infra/db.ts";
import { fail } from "../runtime/errors.ts";
import type { NegotiationRules } from "./schemas.ts";

export const OFFER_TTL_MS = 15 * 60_000;

export type NegotiationStatus = "accepted" | "countered" | "rejected";
export type RejectReason = "negotiation_not_enabled" | "category_excluded" | "variants_priced_separately" | "below_floor" | "max_rounds_reached";

/**
 * True when no cart line of the product sells at its list price: it has variants and each has a price of its own. A
 * bid is on the list price and an offer prices only lines sold at it (docs/catalog.md "negotiate"), so an offer
 * here could never be used: the bid is refused instead of answered `accepted` (review R3 MED-1's leftover).
 */
export function noLineAtListPrice(listPriceMinor: number, variants: readonly { priceMinor: number | null }[]): boolean {
  return variants.length > 0 && variants.every((v) => v.priceMinor !== null && v.priceMinor !== listPriceMinor);
}

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

/** A bid is made in the product's own currency: anything else is refused before any rule is looked at (the store's 400). */
export function assertBidCurrency(productCurrency: string, bidCurrency: string): void {
  if (productCurrency !== bidCurrency) {
    throw fail("validation_error", `currency must be the product's currency (${productCurrency})`, { field: "currency", expected: productCurrency });
  }
}

/** Bids this key already made on this product: the rounds `maxRounds` counts. */
export async function priorBidRounds(sql: Sql, agentKeyId: string, productId: string): Promise<number> {
  const [row] = await sql<{ n: number }[]>`SELECT count(*)::int AS n FROM negotiation_offers WHERE agent_key_id = ${agentKeyId} AND product_id = ${productId}`;
  return row?.n ?? 0;
}

const reject = (reason: RejectReason, message: string): NegotiationDecision & { status: "rejected"; reason: RejectReason } => ({
  status: "rejected",
  negotiatedPriceMinor: null,
  counterPriceMinor: null,
  reason,
  message,
});

/**
 * The rejections that do not depend on the amount bid (negotiation off, category excluded — compared without letter
 * case —, rounds used up), in decideBid's order; null when the amount decides. MCP negotiate_price makes these before
 * the human is asked to approve a bid, so the two can never disagree.
 */
export function refuseBid(input: { rules: NegotiationRules | null; category: string | null; priorRounds: number; noLineAtListPrice?: boolean }): (NegotiationDecision & { status: "rejected"; reason: RejectReason }) | null {
  const { rules } = input;
  if (!rules || !rules.enabled) return reject("negotiation_not_enabled", "This merchant does not negotiate prices.");
  const cat = input.category?.toLowerCase();
  if (cat && rules.excludedCategories.some((c) => c.toLowerCase() === cat)) {
    return reject("category_excluded", `Prices in category ${input.category} are not negotiable.`);
  }
  if (input.noLineAtListPrice) {
    return reject("variants_priced_separately", "Every variant of this product has its own price; a negotiated list price could not be used in a cart.");
  }
  if (input.priorRounds >= rules.maxRounds) {
    return reject("max_rounds_reached", `At most ${rules.maxRounds} bids per product; the last answer stands.`);
  }
  return null;
}

export function decideBid(input: {
  rules: NegotiationRules | null;
  listPriceMinor: number;
  bidMinor: number;
  category: string | null;
  /** Bids already made by this key on this product (this one not included). */
  priorRounds: number;
  /** `noLineAtListPrice` of the product's variants. */
  noLineAtListPrice?: boolean;
}): NegotiationDecision {
  const refused = refuseBid(input);
  if (refused) return refused;
  const rules = input.rules as NegotiationRules; // refuseBid passed: the rules exist and are enabled
  const { listPriceMinor: list, bidMinor: bid } = input;
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
