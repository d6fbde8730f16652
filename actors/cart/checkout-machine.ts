/**
 * Checkout-session machine: ONE transition table (`CHECKOUT_TRANSITIONS`), the idempotency rules of
 * `complete_checkout`, and the per-store payment legs of a multi-store cart. Pure: no I/O, time is a parameter.
 *
 * One checkout session per cart; one payment leg (and one order) per store. Each leg is paid independently:
 * a captured leg stays captured, a failed leg rolls back to unpaid, and the session is COMPLETED only when every
 * leg is captured. See docs/checkout.md for the tables in prose.
 */
import { fail, type ActorError, type ErrorCode } from "../runtime/errors.ts";
import { deriveIntentId, type ChargeStatus } from "../payments/rail.ts";
import { isUuidV4 } from "../../infra/uuid.ts";

export const CHECKOUT_STATUSES = [
  "OPEN", // the preview no longer stands (the shipping choice changed after it): preview again before paying
  "READY_FOR_PAYMENT", // previewed, state hash bound, waiting for complete_checkout
  "IN_PROGRESS", // a payment attempt is running (intents recorded before the rail is called)
  "PENDING_EXTERNAL_CONFIRMATION", // a buyer must approve or pay at a link
  "SETTLEMENT_UNKNOWN", // the rail's answer was lost (timeout, crash, x402 settle unknown); reconcile by intent id
  "COMPLETED", // every store's leg captured, orders written
  "FAILED", // merchant state diverged beyond reconfirmation; start over from the cart
  "EXPIRED", // not paid in time
  "CANCELED", // canceled by the owner before any capture
] as const;
export type CheckoutStatus = (typeof CHECKOUT_STATUSES)[number];

export const CHECKOUT_EVENTS = [
  "preview", // (re)compute totals and state hash
  "begin_payment", // complete_checkout accepted: intents recorded, rail about to be called
  "resume_payment", // complete_checkout again with the same key after the buyer was sent to approve
  "payment_captured", // every leg captured
  "payment_failed", // a leg failed, nothing captured on it
  "payment_declined", // a leg's instrument was declined
  "payment_not_approved", // the payer refused
  "buyer_approval_required", // a leg waits for the buyer
  "settlement_unknown", // a leg's outcome is unknown
  "state_blocked", // compareStates said blocked
  "shipping_changed", // the cart's shipping choice changed after the preview: its totals and hash are stale
  "cancel",
  "expire",
] as const;
export type CheckoutEvent = (typeof CHECKOUT_EVENTS)[number];

export const TERMINAL_CHECKOUT_STATUSES: ReadonlySet<CheckoutStatus> = new Set(["COMPLETED", "FAILED", "EXPIRED", "CANCELED"]);

/**
 * A session waiting for complete_checkout expires 30 minutes after it last entered OPEN/READY_FOR_PAYMENT.
 * The preview quoted prices, stock and shipping; after half an hour that quote says little about the merchant,
 * and the state-hash check would likely ask for reconfirmation anyway. Re-preview is cheap.
 */
export const SESSION_TTL_MS = 30 * 60 * 1000;
/**
 * A buyer has one hour to approve at the link (the default of CHECKOUT_APPROVAL_HOLD_MS, which the cart actor applies
 * in place of this constant). The session holds a stock reservation while it waits, so a longer wait would take stock
 * away from other buyers; an hour covers a notification being noticed and acted on. The wait runs from the first time
 * the attempt asked for the buyer: calling complete again before the buyer approved does not restart it (audit X-3).
 */
export const PENDING_CONFIRMATION_TTL_MS = 60 * 60 * 1000;
/**
 * An IN_PROGRESS session older than this had its handler die mid-charge (a mailbox never observes its own running
 * handler). The reconciler moves it to SETTLEMENT_UNKNOWN and asks the rail by intent id; it never charges anew.
 */
export const STALE_IN_PROGRESS_MS = 2 * 60 * 1000;

/** A cell: the next status (with the error code the caller reports alongside, for rollbacks), or a refusal. */
export type CheckoutCell = { readonly to: CheckoutStatus; readonly reports?: ErrorCode } | { readonly error: ErrorCode };

const to = (s: CheckoutStatus, reports?: ErrorCode): CheckoutCell => (reports ? { to: s, reports } : { to: s });
const no = (error: ErrorCode): CheckoutCell => ({ error });

const ROLLBACKS = {
  payment_failed: to("READY_FOR_PAYMENT", "PAYMENT_FAILED_ROLLED_BACK"),
  payment_declined: to("READY_FOR_PAYMENT", "PAYMENT_DECLINED"),
  payment_not_approved: to("READY_FOR_PAYMENT", "PAYMENT_NOT_APPROVED"),
} as const;

/**
 * The one transition table. A cell missing here is CHECKOUT_STATUS_INVALID for a live session and
 * SESSION_INACTIVE for a finished one (see `checkoutCell`).
 */
export const CHECKOUT_TRANSITIONS: Readonly<Record<CheckoutStatus, Readonly<Partial<Record<CheckoutEvent, CheckoutCell>>>>> = {
  OPEN: {
    preview: to("READY_FOR_PAYMENT"),
    begin_payment: no("PRECONDITION_NOT_MET"),
    shipping_changed: to("OPEN"),
    cancel: to("CANCELED"),
    expire: to("EXPIRED"),
  },
  READY_FOR_PAYMENT: {
    preview: to("READY_FOR_PAYMENT"),
    begin_payment: to("IN_PROGRESS"),
    // The approved preview showed another shipping quote; paying it would charge what nobody approved.
    shipping_changed: to("OPEN"),
    state_blocked: to("FAILED", "STATE_EXECUTION_BLOCKED"),
    cancel: to("CANCELED"),
    expire: to("EXPIRED"),
  },
  IN_PROGRESS: {
    begin_payment: no("CHECKOUT_ALREADY_IN_PROGRESS"),
    payment_captured: to("COMPLETED"),
    ...ROLLBACKS,
    buyer_approval_required: to("PENDING_EXTERNAL_CONFIRMATION"),
    settlement_unknown: to("SETTLEMENT_UNKNOWN"),
  },
  PENDING_EXTERNAL_CONFIRMATION: {
    resume_payment: to("IN_PROGRESS"),
    payment_captured: to("COMPLETED"), // the processor told us (webhook) before the agent called again
    ...ROLLBACKS,
    // Nothing is captured while the buyer has not approved; canceling only abandons the approval link.
    cancel: to("CANCELED"),
    expire: to("EXPIRED"),
  },
  SETTLEMENT_UNKNOWN: {
    begin_payment: no("CHECKOUT_ALREADY_IN_PROGRESS"),
    payment_captured: to("COMPLETED"),
    ...ROLLBACKS,
    buyer_approval_required: to("PENDING_EXTERNAL_CONFIRMATION"),
    settlement_unknown: to("SETTLEMENT_UNKNOWN"),
  },
  COMPLETED: { begin_payment: no("CHECKOUT_ALREADY_IN_PROGRESS") },
  FAILED: {},
  EXPIRED: {},
  CANCELED: {},
};

export function checkoutCell(status: CheckoutStatus, event: CheckoutEvent): CheckoutCell {
  const cell = CHECKOUT_TRANSITIONS[status][event];
  if (cell) return cell;
  return no(TERMINAL_CHECKOUT_STATUSES.has(status) ? "SESSION_INACTIVE" : "CHECKOUT_STATUS_INVALID");
}

export interface CheckoutSessionHeader {
  id: string;
  status: CheckoutStatus;
  /** Bound by the first complete_checkout and never rebound. */
  idempotencyKey: string | null;
  updatedAt: number;
  /** null while money may be moving (IN_PROGRESS, SETTLEMENT_UNKNOWN) and once finished. */
  expiresAt: number | null;
}

export function newCheckoutSession(id: string, now: number, ready: boolean): CheckoutSessionHeader {
  return { id, status: ready ? "READY_FOR_PAYMENT" : "OPEN", idempotencyKey: null, updatedAt: now, expiresAt: now + SESSION_TTL_MS };
}

export function sessionExpiryFor(status: CheckoutStatus, now: number): number | null {
  if (status === "OPEN" || status === "READY_FOR_PAYMENT") return now + SESSION_TTL_MS;
  if (status === "PENDING_EXTERNAL_CONFIRMATION") return now + PENDING_CONFIRMATION_TTL_MS;
  return null;
}

/** Apply one event through the table; throws the cell's error with `details.status`. */
export function applyCheckoutEvent<S extends CheckoutSessionHeader>(session: S, event: CheckoutEvent, now: number): S {
  const cell = checkoutCell(session.status, event);
  if ("error" in cell) {
    throw fail(cell.error, `${event} is not allowed while the checkout session is ${session.status}.`, {
      status: session.status,
      event,
      ...(cell.error === "PRECONDITION_NOT_MET" ? { required_step: "preview_checkout" } : {}),
    });
  }
  if (event === "expire" && session.expiresAt !== null && now < session.expiresAt) {
    throw fail("conflict", "The checkout session is not due to expire yet.", { status: session.status, expires_at: session.expiresAt });
  }
  return { ...session, status: cell.to, updatedAt: now, expiresAt: sessionExpiryFor(cell.to, now) };
}

export function isSessionExpired(session: Pick<CheckoutSessionHeader, "expiresAt">, now: number): boolean {
  return session.expiresAt !== null && now >= session.expiresAt;
}

export function isStaleInProgress(session: Pick<CheckoutSessionHeader, "status" | "updatedAt">, now: number): boolean {
  return session.status === "IN_PROGRESS" && now - session.updatedAt >= STALE_IN_PROGRESS_MS;
}

// ---------------------------------------------------------------------------------------------------------------
// Idempotency of complete_checkout

export function assertIdempotencyKey(key: unknown): asserts key is string {
  if (key === undefined || key === null || key === "") {
    throw fail("MISSING_REQUIRED_ARGUMENT", "idempotency_key is required.", { field: "idempotency_key" });
  }
  if (typeof key !== "string" || !isUuidV4(key)) {
    throw fail("INVALID_ARGUMENT", "idempotency_key must be a UUID v4.", { field: "idempotency_key" });
  }
}

export type CompleteDecision =
  /** Bind the key (if `bindKey`), run the state check and the risk gate, then `begin_payment`. */
  | { action: "start"; bindKey: boolean }
  /** PENDING_EXTERNAL_CONFIRMATION: `resume_payment` and call the rail again with the SAME intent ids. */
  | { action: "resume" }
  /** SETTLEMENT_UNKNOWN: ask the rail by the same intent ids (lookup or idempotent charge); never a new intent. */
  | { action: "reconcile" };

/** The calls an IDEMPOTENCY_KEY_CONFLICT names as the way on (`details.next`). */
export type KeyConflictWay = "retry_with_first_key" | "cancel_checkout_then_preview" | "preview_checkout";

/**
 * The ways on after another key, by the session's status. Cancel is offered only where CHECKOUT_TRANSITIONS accepts
 * it (a COMPLETED, running or ended session refuses it: review S-2); the first key only where it still does something
 * (returns the receipt, the outcome, or pays): an ended session refuses every key, and its cart takes a new preview.
 */
export function keyConflictWays(status: CheckoutStatus): KeyConflictWay[] {
  if (!("error" in checkoutCell(status, "cancel"))) return ["retry_with_first_key", "cancel_checkout_then_preview"];
  if (status === "COMPLETED" || !TERMINAL_CHECKOUT_STATUSES.has(status)) return ["retry_with_first_key"];
  return ["preview_checkout"];
}

function keyConflictWayOn(status: CheckoutStatus): string {
  const ways = keyConflictWays(status);
  if (ways.includes("cancel_checkout_then_preview")) {
    const first = status === "OPEN" ? "preview the cart again and retry with the key of its first attempt (the session keeps it)" : "retry with the key of its first attempt";
    return `To go on, ${first}, or cancel the session and preview the cart again to start a new purchase attempt with a new key.`;
  }
  if (status === "COMPLETED") {
    return "The session is COMPLETED: a call with the key of its first attempt returns the existing orders (nothing is charged again). It cannot be canceled, and its cart takes no new checkout: a new purchase needs a new cart.";
  }
  if (ways.includes("retry_with_first_key")) {
    return `Its payment is running (${status}): call again with the key of its first attempt to learn the outcome. It cannot be canceled while the payment runs.`;
  }
  return `The session has ended (${status}) and takes no call with either key: preview the cart again to start a new checkout session, which takes a new key.`;
}

/**
 * Another key on a session already bound to one: say what to do next (the bound key itself is never echoed: it is
 * the agent's, and a caller that lost it should not get it back from another request). The spec's remedy is `stop`
 * (do not retry): the text says that of THIS call, then the calls that go on from the session's status (review AD-3;
 * R3-5 asked for the way on; S-2: only ways the session accepts). The session's id is named: a one-call checkout
 * (cart id only) is told which session holds the key.
 */
function keyConflict(session: Pick<CheckoutSessionHeader, "status"> & { id?: string }): ActorError {
  const { status } = session;
  return fail(
    "IDEMPOTENCY_KEY_CONFLICT",
    `This checkout session is bound to a different idempotency_key; nothing was done. Do not repeat this call with this key: a checkout session keeps the key of its first complete_checkout for every attempt, including retries with another payment method. ${keyConflictWayOn(status)}`,
    { status, next: keyConflictWays(status), ...(session.id !== undefined ? { checkout_session_id: session.id } : {}) },
  );
}

/**
 * What a complete_checkout call may do, from the session and the key it carries.
 * - the first call binds the key; the binding is permanent for the session;
 * - a different key → IDEMPOTENCY_KEY_CONFLICT (stop: another purchase attempt is bound here);
 * - the same key while running (IN_PROGRESS) or done (COMPLETED) → CHECKOUT_ALREADY_IN_PROGRESS; when done,
 *   `details` carry `order_ids` and the completion's receipt (`receipt`: orders with status, totals, capture
 *   references) so a retry after a lost answer gets the existing orders (spec: "the existing order is returned");
 * - the same key after a rollback (READY_FOR_PAYMENT) starts a new attempt: the spec's "retry the same call";
 * - the same key while PENDING_EXTERNAL_CONFIRMATION resumes; while SETTLEMENT_UNKNOWN reconciles;
 * - an EXPIRED session → CHECKOUT_SESSION_NOT_FOUND (404, `details.status: EXPIRED`) whatever the key: the spec's code
 *   for "no such checkout session or expired". The cart answers a session past its expiry whose timer has not run yet
 *   as this too (it decides it as EXPIRED), so the answer never depends on whether the timer fired (helper B, B-5);
 * - another finished session (FAILED, CANCELED) → SESSION_INACTIVE; OPEN → PRECONDITION_NOT_MET.
 */
export function decideComplete(
  session: Pick<CheckoutSessionHeader, "status" | "idempotencyKey"> & { id?: string },
  idempotencyKey: unknown,
  orderIds: readonly string[] = [],
  receipt: Readonly<Record<string, unknown>> = {},
): CompleteDecision {
  assertIdempotencyKey(idempotencyKey);
  const { status } = session;
  // Before the key: an expired session takes no key at all (a preview opens a new session, which does).
  if (status === "EXPIRED") throw expiredSessionError(session);
  if (session.idempotencyKey !== null && session.idempotencyKey !== idempotencyKey) {
    throw keyConflict(session);
  }
  const bound = session.idempotencyKey !== null;
  switch (status) {
    case "READY_FOR_PAYMENT":
      return { action: "start", bindKey: !bound };
    case "PENDING_EXTERNAL_CONFIRMATION":
      return { action: "resume" };
    case "SETTLEMENT_UNKNOWN":
      return { action: "reconcile" };
    case "IN_PROGRESS":
      throw fail("CHECKOUT_ALREADY_IN_PROGRESS", "A payment for this checkout session is running.", { status });
    case "COMPLETED":
      throw fail("CHECKOUT_ALREADY_IN_PROGRESS", "This checkout session is completed; the existing orders are returned in details (nothing was charged again).", {
        ...receipt,
        status,
        order_ids: [...orderIds],
      });
    case "OPEN":
      throw fail("PRECONDITION_NOT_MET", "Preview the checkout before completing it.", { status, required_step: "preview_checkout" });
    case "FAILED":
    case "CANCELED":
      throw fail("SESSION_INACTIVE", `The checkout session is ${status} and accepts no more changes.`, { status });
  }
}

/**
 * The answer to completing an expired session (EXPIRED, or past its expiry before its timer ran): 404
 * CHECKOUT_SESSION_NOT_FOUND, the spec's code for "no such checkout session or expired", with `details.status: EXPIRED`.
 */
export function expiredSessionError(session: { id?: string }): ActorError {
  return fail("CHECKOUT_SESSION_NOT_FOUND", "The checkout session has expired; preview the cart again.", {
    ...(session.id ? { checkout_session_id: session.id } : {}),
    status: "EXPIRED",
  });
}

/** Returns the session with the key bound (no-op when already bound to the same key). */
export function bindIdempotencyKey<S extends CheckoutSessionHeader>(session: S, key: string): S {
  if (session.idempotencyKey === key) return session;
  if (session.idempotencyKey !== null) {
    throw keyConflict(session);
  }
  return { ...session, idempotencyKey: key };
}

// ---------------------------------------------------------------------------------------------------------------
// Multi-store payment legs

export type LegStatus = "unpaid" | "processing" | "needs_buyer_approval" | "unknown" | "captured";
export type LegOutcome = ChargeStatus | "unknown";

export interface PaymentLeg {
  storeId: string;
  amountMinor: number;
  currency: string;
  status: LegStatus;
  /** Counts attempts of this leg; a rolled-back leg gets a fresh intent id on its next attempt. */
  attempt: number;
  intentId: string | null;
  captureRef?: string;
  approvalUrl?: string;
  lastOutcome?: LegOutcome;
  /** The rail's reason when `lastOutcome` is `failed` (x402: `nonce_reused`, `no_x402_authorization`, …). */
  lastReason?: string;
}

export function newLeg(storeId: string, amountMinor: number, currency: string): PaymentLeg {
  return { storeId, amountMinor, currency, status: "unpaid", attempt: 0, intentId: null };
}

/**
 * Legs to send to the rail now. An unpaid leg starts a new attempt with a new deterministic intent id; a leg that
 * is processing, waiting for approval or unknown keeps its intent id, so asking again can never capture twice.
 * Captured legs are left alone: a store that was paid stays paid.
 */
export function prepareLegsForCharge(sessionId: string, idempotencyKey: string, legs: readonly PaymentLeg[]): PaymentLeg[] {
  return legs.map((leg) => {
    if (leg.status === "captured") return leg;
    if (leg.status === "unpaid") {
      const attempt = leg.attempt + 1;
      return { ...leg, attempt, status: "processing", intentId: deriveIntentId(sessionId, idempotencyKey, leg.storeId, attempt) };
    }
    return { ...leg, status: "processing" };
  });
}

/** One store's leg as answers show it (`details.stores` of a 202 approval and of a 402/409 rollback). */
export interface LegOutcomeView {
  store_id: string;
  status: LegStatus;
  /** What the rail last answered for this leg (null before its first attempt). */
  outcome: LegOutcome | null;
  /**
   * The rail's reason for a leg whose last outcome is `failed` (PAYMENT_FAILED_ROLLED_BACK), when it gave one: the card
   * sandbox's `processor_error`, x402's `nonce_reused`, `no_x402_authorization`, `amount_changed_since_authorization`, …
   * Absent otherwise (helper C, C-3: a failure without an x402 intent row read `settle_failed`).
   */
  reason?: string;
}

export function legOutcomes(legs: readonly PaymentLeg[]): LegOutcomeView[] {
  return legs.map((l) => ({
    store_id: l.storeId,
    status: l.status,
    outcome: l.lastOutcome ?? null,
    ...(l.lastOutcome === "failed" && l.lastReason ? { reason: l.lastReason } : {}),
  }));
}

export interface LegSettlement {
  legs: PaymentLeg[];
  /** Every leg's status and last outcome after this settlement. */
  stores: LegOutcomeView[];
  /** The session event to apply. */
  event: Extract<
    CheckoutEvent,
    "payment_captured" | "payment_failed" | "payment_declined" | "payment_not_approved" | "buyer_approval_required" | "settlement_unknown"
  >;
  /** Error to report to the caller for a rollback (the session event's `reports` code). */
  error?: { code: ErrorCode; details: Record<string, unknown> };
  completedStoreIds: string[];
  approvalUrls: { storeId: string; url: string }[];
}

export interface LegResult {
  outcome: LegOutcome;
  captureRef?: string;
  approvalUrl?: string;
  /** The rail's reason for a `failed` outcome (ChargeResult.reason), shown as the leg's `reason` (legOutcomes). */
  reason?: string;
}

/**
 * Fold the per-store rail results into legs and ONE session event. Precedence: any unknown → SETTLEMENT_UNKNOWN
 * (money may have moved; nothing else is decided until it is reconciled); else any approval pending →
 * PENDING_EXTERNAL_CONFIRMATION; else all captured → COMPLETED; else roll back, reporting the most actionable
 * code: declined (change instrument) before not approved (ask the payer again) before failed (retry).
 * Rolled-back legs become unpaid; captured legs stay captured in every case.
 */
export function settleLegs(legs: readonly PaymentLeg[], results: Readonly<Record<string, LegResult>>): LegSettlement {
  const next = legs.map((leg): PaymentLeg => {
    if (leg.status === "captured") return leg;
    const r = results[leg.storeId];
    if (!r) return leg.status === "processing" ? { ...leg, status: "unknown", lastOutcome: "unknown" } : leg;
    // the reason goes with the outcome it explains: a later outcome drops an earlier failure's
    const { lastReason: _earlier, ...rest } = leg;
    switch (r.outcome) {
      case "captured":
        return { ...rest, status: "captured", captureRef: r.captureRef, approvalUrl: undefined, lastOutcome: r.outcome };
      case "needs_buyer_approval":
        return { ...rest, status: "needs_buyer_approval", approvalUrl: r.approvalUrl, lastOutcome: r.outcome };
      case "unknown":
        return { ...rest, status: "unknown", lastOutcome: r.outcome };
      case "declined":
      case "not_approved":
        return { ...rest, status: "unpaid", approvalUrl: undefined, lastOutcome: r.outcome };
      case "failed":
        return { ...rest, status: "unpaid", approvalUrl: undefined, lastOutcome: r.outcome, ...(r.reason ? { lastReason: r.reason } : {}) };
    }
  });
  const completedStoreIds = next.filter((l) => l.status === "captured").map((l) => l.storeId);
  const approvalUrls = next
    .filter((l) => l.status === "needs_buyer_approval" && l.approvalUrl)
    .map((l) => ({ storeId: l.storeId, url: l.approvalUrl as string }));
  const base = { legs: next, stores: legOutcomes(next), completedStoreIds, approvalUrls };
  if (next.some((l) => l.status === "unknown" || l.status === "processing")) return { ...base, event: "settlement_unknown" };
  if (next.some((l) => l.status === "needs_buyer_approval")) return { ...base, event: "buyer_approval_required" };
  if (next.every((l) => l.status === "captured")) return { ...base, event: "payment_captured" };
  const outcomes = next.filter((l) => l.status === "unpaid").map((l) => l.lastOutcome);
  const event = outcomes.includes("declined")
    ? "payment_declined"
    : outcomes.includes("not_approved")
      ? "payment_not_approved"
      : "payment_failed";
  const cell = CHECKOUT_TRANSITIONS.IN_PROGRESS[event] as { to: CheckoutStatus; reports: ErrorCode };
  return {
    ...base,
    event,
    error: {
      code: cell.reports,
      details: {
        status: cell.to,
        completed_store_ids: completedStoreIds,
        stores: base.stores,
      },
    },
  };
}

/**
 * Whether a resume (same key after the buyer was sent to approve) goes on, in the same call, to a new attempt for
 * the legs that had rolled back before it (`rolledBack`: declined, failed or not approved, nothing captured). Only
 * when the resume left nothing else open: every leg it resumed is captured, so the session is READY_FOR_PAYMENT
 * just because of those earlier rollbacks. A resumed leg still waiting, refused by the payer, failed or unknown is
 * answered as it stands: the caller must learn that first (audit B2 F4).
 */
export function resumeRetriesRolledBack(rolledBack: readonly string[], after: { status: CheckoutStatus; legs: readonly PaymentLeg[] }): boolean {
  if (rolledBack.length === 0 || after.status !== "READY_FOR_PAYMENT") return false;
  return after.legs.every((l) => l.status === "captured" || (l.status === "unpaid" && rolledBack.includes(l.storeId)));
}

const ROLLED_BACK_WORDS: Readonly<Record<string, string>> = {
  declined: "declined",
  not_approved: "not approved by the payer",
  failed: "not charged (the payment failed)",
};

/**
 * The text of a 202 "the buyer must approve": the way on, and any store whose leg rolled back in the same attempt
 * (nothing captured there, its hold released) with what the resume does for it. `methodField` is the caller's name
 * for the payment method (REST `payment_methods`, MCP `payment_method`).
 */
export function approvalMessage(stores: readonly LegOutcomeView[], methodField: string): string {
  const base = "The buyer must approve the payment at the link; then call again with the same checkout_session_id and idempotency_key.";
  const rolled = stores.filter((x) => x.status === "unpaid");
  if (rolled.length === 0) return base;
  const what = rolled.map((x) => `${x.store_id} was ${ROLLED_BACK_WORDS[x.outcome ?? ""] ?? "not charged"}`).join("; ");
  const one = rolled.length === 1;
  return `${base} Meanwhile ${what}: nothing was captured there and ${one ? "its" : "their"} stock hold was released (details.stores). ` +
    `Put a new payment method for ${one ? "it" : "them"} in ${methodField} on that call: once the approved payment is captured, the same call charges ${one ? "it" : "them"} (a new attempt).`;
}
