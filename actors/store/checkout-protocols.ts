/**
 * Which of a store's payment methods a checkout of ours accepts. A hosted-storefront merchant sells through its own
 * checkout: our x402 rail is refused there (403 NATIVE_CHECKOUT_REQUIRED, actors/cart/index.ts), its native rails are
 * not. The merchant profile lists only these (audit A-9), and the refusal names them as `native_rails`, so an agent is
 * never shown a rail the checkout then refuses for who the merchant is. Whether x402 can settle at all (wallet,
 * facilitator) is configuration, shown as `configured` on the protocols page.
 */
export function checkoutProtocols(store: { hostedStorefront: boolean; paymentMethods: readonly string[] }): string[] {
  return store.hostedStorefront ? store.paymentMethods.filter((m) => m !== "x402") : [...store.paymentMethods];
}
