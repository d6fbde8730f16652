/**
 * The payment rail contract. Crash safety comes from one rule: the caller records a capture INTENT with a
 * deterministic id before calling the rail, and `charge` is idempotent per intent id (a second call with the same
 * id returns the first result, or completes a pending approval; it never captures twice). If the process dies
 * between the capture and the order write, the reconciler calls `lookup(intentId)` (or `charge` again) and finds
 * the capture instead of making a new one.
 */
import { createHash } from "node:crypto";
import { fail } from "../runtime/errors.ts";

export interface ChargeIntent {
  /** From `deriveIntentId`; the rail's idempotency key. */
  intentId: string;
  /** The store the money goes to (a multi-store cart has one intent per store). */
  storeId: string;
  amountMinor: number;
  currency: string;
  /** A processor token, a test token of the sandbox, or `MOCK` on the demo store. */
  paymentToken: string;
  metadata?: Record<string, string>;
}

export type ChargeResult =
  | { status: "captured"; intentId: string; captureRef: string; amountMinor: number; currency: string; simulated: boolean }
  | { status: "declined"; intentId: string; code: "PAYMENT_DECLINED"; reason: string }
  | { status: "failed"; intentId: string; code: "PAYMENT_FAILED_ROLLED_BACK"; reason: string }
  | { status: "needs_buyer_approval"; intentId: string; approvalUrl: string }
  | { status: "not_approved"; intentId: string; code: "PAYMENT_NOT_APPROVED" };

export type ChargeStatus = ChargeResult["status"];

export interface RefundRequest {
  /** Idempotency key of the refund (the refund record's id): a repeated call returns the first result. */
  refundId: string;
  captureRef: string;
  amountMinor: number;
}

export type RefundResult =
  | { status: "refunded"; refundId: string; refundRef: string; amountMinor: number }
  | { status: "failed"; refundId: string; reason: string };

/**
 * `unknown`: the rail has never seen this intent id (so nothing was captured for it), or has not learnt its outcome
 * yet (asking again, or charging the same intent, may tell).
 * `unresolved`: the rail cannot tell whether this intent moved money, and nothing it can ask will (x402: no chain to
 * read and the authorization expired; a nonce spent, as the chain or, without one, the facilitator says, while no
 * `AuthorizationUsed` event proves it was by this transfer rather than the payer's cancelAuthorization). `lookup` may
 * still decide it later if the chain becomes readable. A person decides: the cart escalates the order for its merchant.
 * `reference` names the payment in the merchant's own records (an x402 authorization's nonce); `evidence`, what to look
 * for there (payer, amount, …).
 */
export type LookupResult =
  | ChargeResult
  | { status: "unknown"; intentId: string }
  | { status: "unresolved"; intentId: string; reason: string; reference: string; evidence?: Record<string, string> };

export interface PaymentRail {
  readonly name: string;
  /** Idempotent per `intent.intentId`. Throws only when the answer is unknown (timeout, rail unreachable). */
  charge(intent: ChargeIntent): Promise<ChargeResult>;
  /** Idempotent per `refundId`. */
  refund(request: RefundRequest): Promise<RefundResult>;
  /** Last known state of an intent, for reconciliation. Never moves money. */
  lookup(intentId: string): Promise<LookupResult>;
  /**
   * A person's decision on an intent `lookup` reported `unresolved` (the merchant found the money, or released the
   * order), recorded as the rail's own outcome so that its record agrees with the order. Only rails that can answer
   * `unresolved` have it.
   */
  recordResolution?(intentId: string, outcome: "captured" | "released"): Promise<void>;
  /**
   * The checkout session of an intent that waits for the buyer (`needs_buyer_approval`) ended unpaid (canceled,
   * expired, failed): the rail withdraws the intent, so its buyer link refuses from then on (no buyer is told
   * "approved" of a payment nothing will capture) and a later charge of it answers `not_approved`. Never moves money;
   * an intent in any other state (captured, refused, unknown) is left as it is. Idempotent. Rails without a buyer step
   * need not have it (helper B, B-4).
   */
  voidIntent?(intentId: string): Promise<void>;
}

/**
 * The intent id of one store's payment attempt: sha256 over (session, idempotency key, store, attempt).
 * Same inputs → same id, so a retried or reconciled attempt hits the rail's idempotency; a rolled-back leg's next
 * attempt has a new number and so a new id (otherwise the rail would replay the failure).
 */
export function deriveIntentId(checkoutSessionId: string, idempotencyKey: string, storeId: string, attempt: number): string {
  if (!Number.isInteger(attempt) || attempt < 1) throw fail("INVALID_ARGUMENT", "attempt must be an integer >= 1", { field: "attempt" });
  const digest = createHash("sha256")
    .update(JSON.stringify(["intent.v1", checkoutSessionId, idempotencyKey, storeId, attempt]))
    .digest("hex");
  return `pi_${digest.slice(0, 40)}`;
}

/**
 * After a capture, check the captured amount is what was authorised. A mismatch means money moved in a wrong
 * amount: stop and reconcile by hand (PAYMENT_AMOUNT_MISMATCH, funds may be captured).
 */
export function assertCapturedAmount(result: ChargeResult, expected: { amountMinor: number; currency: string }): void {
  if (result.status !== "captured") return;
  if (result.amountMinor !== expected.amountMinor || result.currency !== expected.currency) {
    throw fail("PAYMENT_AMOUNT_MISMATCH", "The captured amount differs from the authorised amount.", {
      capture_reference: result.captureRef,
      captured_minor: result.amountMinor,
      captured_currency: result.currency,
      expected_minor: expected.amountMinor,
      expected_currency: expected.currency,
    });
  }
}

/** The error a non-captured result is reported with; undefined for captured and pending approval. */
export function chargeErrorCode(result: ChargeResult): "PAYMENT_DECLINED" | "PAYMENT_FAILED_ROLLED_BACK" | "PAYMENT_NOT_APPROVED" | undefined {
  return "code" in result ? result.code : undefined;
}
