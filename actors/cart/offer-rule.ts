/**
 * How a cart line is priced before `unitPriceOf` (totals.ts) decides: its list price, and whether the key's accepted
 * negotiated offer prices it. The one rule for the cart actor (index.ts `price`) and for what MCP asks the human
 * about (gateway/mcp/tools/commerce.ts `pricedLine`), so the question and the charge never disagree.
 */

/**
 * The line's list price and the offer that prices it. The list price is the variant's own price when it has one, else
 * the product's. The offer was bid on the product's list price (docs/checkout.md "Negotiated prices"): it prices a
 * line without a variant, or a variant line sold at that price; a variant with its own price, or a variant the
 * product does not have, is not what was negotiated (audit R3 MED-1). Validity (expiry, currency, never above the
 * list price) is `unitPriceOf`'s.
 */
export function linePricing<Offer>(
  productPriceMinor: number,
  variantId: string | null | undefined,
  variant: { priceMinor?: number | null } | undefined,
  offer: Offer | null | undefined,
): { listPriceMinor: number; negotiated: Offer | null } {
  const listPriceMinor = variant && variant.priceMinor !== null && variant.priceMinor !== undefined ? variant.priceMinor : productPriceMinor;
  const applies = !variantId || (variant !== undefined && listPriceMinor === productPriceMinor);
  return { listPriceMinor, negotiated: offer && applies ? offer : null };
}
