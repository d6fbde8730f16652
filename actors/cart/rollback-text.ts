/**
 * What a rolled-back payment's answer (PAYMENT_DECLINED, PAYMENT_FAILED_ROLLED_BACK, PAYMENT_NOT_APPROVED) tells the
 * caller to do next, per surface: the session stays bound to the key of its first attempt, and each surface carries
 * that key differently. REST and MCP name `idempotency_key` (review AD-3); ACP and UCP carry no such field (their
 * Idempotency-Key header is per request, and a new body under an old one is refused), and AP2's key comes from the
 * mandate (review U-2). After a refusal at the approval link the way on is to ask the buyer again, not another
 * method the buyer never chose (review U-1; audit DZ-1).
 */
export const ROLLBACK_CODES: ReadonlySet<string> = new Set(["PAYMENT_DECLINED", "PAYMENT_FAILED_ROLLED_BACK", "PAYMENT_NOT_APPROVED"]);

export type RollbackSurface = "rest" | "acp" | "ucp" | "ap2";

/** Where the way on starts in a rollback message (rollbackWayOn's first words), so a bridge can replace it. */
const WAY_ON_MARK = " The checkout session is ready for a new attempt";

export function rollbackWayOn(code: string, surface: RollbackSurface): string {
  const refused = code === "PAYMENT_NOT_APPROVED";
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
      return `${WAY_ON_MARK}: the mandate stays bound to this cart and may be presented again for it${refused ? " (the buyer is asked again)" : ""}; another mandate for this cart is refused (IDEMPOTENCY_KEY_CONFLICT), so paying another way means a new cart.`;
  }
}

/** A rollback message (rollbackMessage's, written for REST and MCP) with its way on for `surface`. */
export function rollbackMessageFor(message: string, code: string, surface: RollbackSurface): string {
  const at = message.indexOf(WAY_ON_MARK);
  return (at >= 0 ? message.slice(0, at) : message) + rollbackWayOn(code, surface);
}
