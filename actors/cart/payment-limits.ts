/**
 * What binds the cart's paying turn besides its own state check: the state the human approved (assertApprovedState)
 * and a mandate's limits.
 *
 * A mandate's limits checked in the cart's paying turn, on the amounts that turn is about to charge (review R4-5).
 * The gateway checks the same limits first, on a cart read in an earlier turn, to answer early and with the cart's
 * view; only this check binds the charge, because the cart actor is the one writer of its pricing: a shipping pick or
 * a merchant's price change between the gateway's read and the payment turn reprices the session, and without this
 * the new total was charged under a mandate signed for less (13 of 30 raced tries in the review).
 */
import { fail } from "../runtime/errors.ts";
import type { PaymentLimitsInput } from "./messages.ts";
import { totalsOf, type PricedSession } from "./stored-pricing.ts";

interface LegAmount {
  storeId: string;
  amountMinor: number;
}

/**
 * Throws 403 MANDATE_LIMIT_EXCEEDED when the session about to be charged (every leg, captured or not: the whole
 * order the mandate pays) is outside `limits`. Same order and `violated` names as the gateway's checkMandate:
 * currency, payee, amount, cart_contents.
 */
export function assertWithinLimits(limits: PaymentLimitsInput, session: { id: string; currency: string; legs: readonly LegAmount[] }): void {
  const totalMinor = session.legs.reduce((a, l) => a + l.amountMinor, 0);
  const merchants = session.legs.map((l) => l.storeId);
  const details = {
    ...(limits.mandate ? { mandate: limits.mandate } : {}),
    cart_total_minor: totalMinor,
    cart_currency: session.currency,
    cart_merchants: merchants,
    checkout_session_id: session.id,
    // the gateway's read passed: this is the total the payment itself would have charged
    checked_at: "payment",
  };
  if (limits.currency !== session.currency) throw fail("MANDATE_LIMIT_EXCEEDED", "The mandate is in another currency than the checkout.", { ...details, violated: "currency" });
  if (limits.payees && merchants.some((m) => !limits.payees!.includes(m))) {
    throw fail("MANDATE_LIMIT_EXCEEDED", "The checkout pays a merchant the mandate does not name.", { ...details, violated: "payee" });
  }
  if (limits.maxTotalMinor !== undefined && totalMinor > limits.maxTotalMinor) {
    throw fail("MANDATE_LIMIT_EXCEEDED", "The total about to be charged exceeds the mandate's amount (the cart was repriced after the mandate was checked, e.g. another shipping option was picked); nothing was charged.", {
      ...details,
      violated: "amount",
    });
  }
  if (limits.exactTotalMinor !== undefined && totalMinor !== limits.exactTotalMinor) {
    throw fail("MANDATE_LIMIT_EXCEEDED", "The total about to be charged is not the total of the signed cart mandate (the cart was repriced after the user approved it); nothing was charged.", {
      ...details,
      violated: "cart_contents",
      ...(limits.cartMandate ? { cart_mandate: limits.cartMandate } : {}),
    });
  }
}

/**
 * Throws 409 STATE_RECONFIRMATION_REQUIRED when the session about to be charged is not the state the human approved
 * (MCP complete_checkout sends `approvedStateHash`, the precheck's hash its question was built from; audit V2). A
 * re-preview of the same session while the human was answering (another shipping option, over REST or another MCP
 * session) keeps the session id and moves its hash: without this, the new total was charged under an approval of
 * the old one. No tolerance here: the human approved that state, not a range. Nothing is held or charged; calling
 * again asks the human about the current state.
 */
export function assertApprovedState(approvedStateHash: string | undefined, session: PricedSession & { id: string; stateHash: string }): void {
  if (approvedStateHash === undefined || approvedStateHash === session.stateHash) return;
  const { currency, totalMinor } = totalsOf(session);
  throw fail(
    "STATE_RECONFIRMATION_REQUIRED",
    "The checkout session was previewed again (e.g. another shipping option) after the human was asked to approve it; nothing was charged. Call again with the same checkout_session_id and idempotency_key: the human is asked about the current total.",
    {
      checkout_session_id: session.id,
      reconfirm_state_hash: session.stateHash,
      reasons: [{ code: "state_changed_since_approval", approved_state_hash: approvedStateHash, current_total_minor: totalMinor, currency }],
      stale_hash_sent: false,
    },
  );
}
