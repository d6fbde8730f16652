/**
 * What a rolled-back payment's answer (PAYMENT_DECLINED, PAYMENT_FAILED_ROLLED_BACK, PAYMENT_NOT_APPROVED) tells the
 * caller to do next, per surface: the session stays bound to the key of its first attempt, and each surface carries
 * that key differently. REST and MCP name `idempotency_key` (review AD-3); ACP and UCP carry no such field (their
 * Idempotency-Key header is per request, and a new body under an old one is refused), and AP2's key comes from the
 * mandate (review U-2). After a refusal at the approval link the way on is to ask the buyer again, not another
 * method the buyer never chose (review U-1; audit DZ-1); a processor's refusal without a link (`tok_not_approved`)
 * would only refuse again, so its way on is another method, as after a decline (review V-1). An AP2 mandate stays
 * bound to its cart's checkout session: another mandate needs that session canceled first (review V-2).
 */
export const ROLLBACK_CODES: ReadonlySet<string> = new Set(["PAYMENT_DECLINED", "PAYMENT_FAILED_ROLLED_BACK", "PAYMENT_NOT_APPROVED"]);

export type RollbackSurface = "rest" | "acp" | "ucp" | "ap2";

/** Where the way on starts in a rollback message (rollbackWayOn's first words), so a bridge can replace it. */
const WAY_ON_MARK = " The checkout session is ready for a new attempt";

/** `refusedAtLink`: the buyer refused at an approval link (details.refused_at_approval_link), so asking again may pass. */
export function rollbackWayOn(refusedAtLink: boolean, surface: RollbackSurface): string {
  const refused = refusedAtLink;
  switch (surface) {
    case "rest":
      return refused
        ? `${WAY_ON_MARK}: call again with the SAME idempotency_key to ask the buyer again (a new approval link); name another payment_method only if the buyer chose one. A new key is refused (IDEMPOTENCY_KEY_CONFLICT).`
        : `${WAY_ON_MARK}: call again with the SAME idempotency_key and another payment_method (or a fresh payment token); a new key is refused (IDEMPOTENCY_KEY_CONFLICT).`;
    case "acp":
    case "ucp":
      return refused
        ? `${WAY_ON_MARK}: complete it again, under a new Idempotency-Key, to ask the buyer again (a new approval link); send another payment token only if the buyer chose one.`
        : `${WAY_ON_MARK}: complete it again with another payment token, under a new Idempotency-Key.`;
    case "ap2":
      return `${WAY_ON_MARK}: present this mandate again (under a new Idempotency-Key, if you send one)${refused ? " and the buyer is asked again" : ""}; to pay another way, cancel the checkout session (details.checkout_session_id) and present a new mandate for this cart.`;
  }
}

/** A rollback message (rollbackMessage's, written for REST and MCP) with its way on for `surface`. */
export function rollbackMessageFor(message: string, refusedAtLink: boolean, surface: RollbackSurface): string {
  const at = message.indexOf(WAY_ON_MARK);
  return (at >= 0 ? message.slice(0, at) : message) + rollbackWayOn(refusedAtLink, surface);
}

/**
 * AP2's answer to a second mandate for a cart whose checkout session is bound to an earlier one (the session's key
 * comes from the mandate): the REST/MCP text names fields AP2 has not (review V-2). Its way on follows the session's
 * status as the REST text's does (checkout-machine.ts `keyConflictWays`, `details.next`): cancel only where the
 * session accepts it; a paid cart's earlier mandate returns its receipt (review S-2).
 */
export function ap2KeyConflict(next: readonly string[], status: string): string {
  const head = "This cart's checkout session is bound to the payment of an earlier mandate; nothing was charged.";
  if (next.includes("cancel_checkout_then_preview")) {
    return `${head} Present that mandate again, or cancel the checkout session (details.checkout_session_id, POST /api/v1/agent/checkout/{id}/cancel) and present this mandate again.`;
  }
  if (status === "COMPLETED") return `${head} The cart is paid: present that mandate again to get its receipt; a new purchase needs a new cart.`;
  if (next.includes("retry_with_first_key")) {
    return `${head} Its payment is running (details.status): present that mandate again to learn the outcome; the checkout session cannot be canceled meanwhile.`;
  }
  return `${head} That session has ended (details.status): present this mandate again to start a new checkout session for the cart.`;
}

/** A bridge whose sessions complete under a key of their own (derived from the session; gateway/bridge/index.ts). */
export type SessionBridge = Extract<RollbackSurface, "acp" | "ucp">;

/** The session's own route in the protocol's terms (relative to the protocol's base, as its spec writes it). */
const SESSION_ROUTE: Record<SessionBridge, string> = { acp: "/checkout_sessions", ucp: "/checkout-sessions" };

/**
 * ACP's and UCP's answer to the cart's IDEMPOTENCY_KEY_CONFLICT. A session's complete always pays under the key the
 * bridge derives from the session, so this conflict means the session's cart was put into payment through another
 * route (REST, MCP, an AP2 mandate) under that route's key; the REST/MCP text ("retry with the key of its first
 * attempt", "cancel the session and preview the cart") names a key and calls these clients do not have. The ways on
 * are the same as `keyConflictWays` (`details.next`), each in the protocol's own operations: the cancel only where the
 * cart's session accepts one, and then a new checkout session; a paid cart's order is read from the session; a
 * running payment is read until it settles (the cart's reconciler settles it without a call).
 */
export function bridgeKeyConflict(next: readonly string[], status: string, protocol: SessionBridge): string {
  const route = SESSION_ROUTE[protocol];
  const head = "This checkout session's cart is in a payment started through another route of this service (REST, MCP or an AP2 mandate), bound to that route's own key; nothing was done.";
  if (next.includes("cancel_checkout_then_preview")) {
    return `${head} Completing this session again is refused the same way, under any Idempotency-Key, while that payment is open. To go on, finish that payment through the route that started it, or cancel this checkout session (POST ${route}/{id}/cancel; a store already paid stays paid) and create a new checkout session (POST ${route}) for what is still to buy.`;
  }
  if (status === "COMPLETED") {
    return `${head} The cart is paid: read this checkout session (GET ${route}/{id}) for its order; nothing is charged again. It cannot be canceled, and a new purchase needs a new checkout session (POST ${route}).`;
  }
  if (next.includes("retry_with_first_key")) {
    return `${head} That payment is running (details.status): read this checkout session (GET ${route}/{id}) until it has settled; it cannot be canceled meanwhile. Then complete it again: a paid cart answers with its order.`;
  }
  return `${head} That payment has ended (details.status): complete this checkout session again to start a new payment.`;
}
