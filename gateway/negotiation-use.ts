/**
 * How an accepted negotiated price is used, in the words REST `POST /agent/negotiate` and MCP `negotiate_price` both
 * answer and describe (review AD-8: "Bid accepted." and `usableInCart: true` said nothing of how). The rule itself
 * is the cart's and the store's (actors/store/commerce.ts `catalogRows`, `offerClaim`; actors/cart/offer-rule.ts
 * `linePricing`; docs/catalog.md "negotiate"): no offer id is passed anywhere, the key's latest accepted, unused offer
 * for the product prices its cart lines while `now < expiresAt`, and one order uses it up.
 */
export const ACCEPTED_OFFER_USE =
  "Until expiresAt, this key's cart containing the product is priced at negotiatedPrice for every unit of its line " +
  "(a line without a variant, or a variant sold at the product's list price; a variant with its own price pays that): " +
  "nothing to pass, create or update the cart and preview (the line shows price_source negotiated). The price pays for " +
  "one order; a second order pays the list price or bids again.";

/** The answer's message: the merchant's words, then, for an accepted bid, how to use it. */
export function negotiationMessage(status: string, message: string | null): string | null {
  if (status !== "accepted") return message;
  return message ? `${message} ${ACCEPTED_OFFER_USE}` : ACCEPTED_OFFER_USE;
}
