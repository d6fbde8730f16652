/**
 * Refund requests. An agent proposes (PENDING_APPROVAL); a human merchant approves or rejects; the system runs
 * the rail refund (REFUNDED or FAILED); a FAILED refund may be retried by the merchant (back to APPROVED). An
 * APPROVED refund whose rail call did not finish is driven again (refund-flow.ts), never moved by a person. A cancel
 * that refunds the whole remainder supersedes the requests still open (REJECTED by the system).
 *
 * Bounds: refundable = order total − refunded − in flight (PENDING_APPROVAL and APPROVED), so two proposals can
 * never together exceed what was paid. An omitted amount means the full remaining refundable amount. Amount:
 * integer minor units > 0 and <= refundable. Reason: at most 255 characters (Unicode code points).
 * At most MAX_OPEN_REFUNDS_PER_ORDER requests of one order wait for the merchant (PENDING_APPROVAL) at a time (audit
 * A1 M2: one agent could otherwise bury the merchant's queue under 1-cent requests).
 * Return window: `returnWindowDays` days from delivery (or from creation when never delivered), inclusive of the
 * last instant; a store that declares no window gets DEFAULT_RETURN_WINDOW_DAYS, and one that does not accept returns
 * has 0 days, as every view of its policies says (`refundWindowDays`, audit M-4).
 */
import { fail } from "../runtime/errors.ts";
import type { OrderStatus } from "./order-machine.ts";
import { unstorableField } from "./ingest.ts";

export const REFUND_STATUSES = ["PENDING_APPROVAL", "APPROVED", "REJECTED", "REFUNDED", "FAILED"] as const;
export type RefundStatus = (typeof REFUND_STATUSES)[number];

export const REFUND_EVENTS = ["approve", "reject", "settle", "fail", "retry", "supersede"] as const;
export type RefundEvent = (typeof REFUND_EVENTS)[number];
export type RefundActor = "merchant" | "system";

export const REFUND_TRANSITIONS: Readonly<Record<RefundStatus, Readonly<Partial<Record<RefundEvent, { to: RefundStatus; by: RefundActor }>>>>> = {
  // supersede: the order was canceled and the cancel refunds everything left, so a request still open is closed
  // (it could only have paid money beyond the capture).
  PENDING_APPROVAL: { approve: { to: "APPROVED", by: "merchant" }, reject: { to: "REJECTED", by: "merchant" }, supersede: { to: "REJECTED", by: "system" } },
  APPROVED: { settle: { to: "REFUNDED", by: "system" }, fail: { to: "FAILED", by: "system" } },
  FAILED: { retry: { to: "APPROVED", by: "merchant" }, reject: { to: "REJECTED", by: "merchant" }, supersede: { to: "REJECTED", by: "system" } },
  REJECTED: {},
  REFUNDED: {},
};

export const REFUND_REASON_MAX_CHARS = 255;
/** Requests of one order that may wait for the merchant's decision at once; the next is 409 until one is decided. */
export const MAX_OPEN_REFUNDS_PER_ORDER = 5;
export const DEFAULT_RETURN_WINDOW_DAYS = 30;
const DAY_MS = 24 * 60 * 60 * 1000;

/** Order statuses a refund may be requested from: money was captured and not all of it returned. */
export const REFUNDABLE_ORDER_STATUSES: ReadonlySet<OrderStatus> = new Set(["paid", "fulfilled", "shipped", "delivered", "partially_refunded"]);

export interface RefundRecordLike {
  status: RefundStatus;
  amountMinor: number;
}

/** Refund rows as the rules here read them (`amount_minor` is a bigint column: a string or number from the driver). */
export function refundRecordsOf(rows: readonly { status: RefundStatus; amount_minor: unknown }[]): RefundRecordLike[] {
  return rows.map((r) => ({ status: r.status, amountMinor: Number(r.amount_minor) }));
}

export function applyRefundEvent<R extends RefundRecordLike>(refund: R, event: RefundEvent, actor: RefundActor): R {
  const move = REFUND_TRANSITIONS[refund.status][event];
  if (!move || move.by !== actor) {
    throw fail("conflict", `${event} is not allowed on a ${refund.status} refund by ${actor}.`, { status: refund.status, event });
  }
  return { ...refund, status: move.to };
}

export function refundedMinor(refunds: readonly RefundRecordLike[]): number {
  return refunds.filter((r) => r.status === "REFUNDED").reduce((a, r) => a + r.amountMinor, 0);
}

export function inFlightMinor(refunds: readonly RefundRecordLike[]): number {
  return refunds.filter((r) => r.status === "PENDING_APPROVAL" || r.status === "APPROVED").reduce((a, r) => a + r.amountMinor, 0);
}

/**
 * What may still be asked or paid back: `boundMinor` (what was captured: order-rows.ts `orderTotalMinor`) − REFUNDED
 * − in flight. The one computation behind a request's bound, the amount of a request without one (store and the MCP
 * summary the human approves), a cancel's refund and the re-check of a merchant's retry.
 */
export function refundableMinor(boundMinor: number, refunds: readonly RefundRecordLike[]): number {
  return Math.max(0, boundMinor - refundedMinor(refunds) - inFlightMinor(refunds));
}

export function openRefundCount(refunds: readonly RefundRecordLike[]): number {
  return refunds.filter((r) => r.status === "PENDING_APPROVAL").length;
}

/**
 * The store's stored policies as the refund rule reads them (`stores.policies`: acceptsReturns is always stored,
 * schemas.ts `Policies`). `acceptsReturns` omitted: read as accepting (a caller that did not read it).
 */
export interface RefundPolicy {
  acceptsReturns?: boolean | null;
  returnWindowDays?: number | null;
}

/**
 * The return window a refund request is held to, in days. The one answer every view gives (ingest.ts `policiesView`,
 * rest/merchants.ts `returnPolicy`, MCP get_return_policy): a store that does not accept returns has a 0-day window
 * (audit M-4: the rule read the stored window, absent for such a store, and applied 30 days while agents were shown
 * 0); one that accepts returns without declaring a window gets DEFAULT_RETURN_WINDOW_DAYS.
 */
export function refundWindowDays(policy: RefundPolicy): number {
  if (policy.acceptsReturns === false) return 0;
  return policy.returnWindowDays ?? DEFAULT_RETURN_WINDOW_DAYS;
}

/** The instant after which a return is refused; `returnWindowDays` as `refundWindowDays` answers (null: the default). */
export function returnWindowEndsAt(order: { createdAt: number; deliveredAt: number | null }, returnWindowDays: number | null | undefined): number {
  const days = returnWindowDays ?? DEFAULT_RETURN_WINDOW_DAYS;
  return (order.deliveredAt ?? order.createdAt) + days * DAY_MS;
}

export interface RefundRequestInput {
  order: { status: OrderStatus; totalMinor: number; createdAt: number; deliveredAt: number | null };
  refunds: readonly RefundRecordLike[];
  policy: RefundPolicy;
  amount?: unknown;
  reason?: unknown;
  now: number;
}

/** Validate a refund proposal; returns the amount to request (the remainder when omitted) and the reason. */
export function validateRefundRequest(input: RefundRequestInput): { amountMinor: number; reason: string | null } {
  const { order, amount, reason } = input;
  let reasonOut: string | null = null;
  if (reason !== undefined && reason !== null) {
    if (typeof reason !== "string") throw fail("INVALID_ARGUMENT", "reason must be a string.", { field: "reason" });
    // Text Postgres cannot store as sent (a NUL byte; a lone surrogate, which text would store altered as U+FFFD and
    // the idempotency record's jsonb refuses): refused naming the field, keyed or not (audit A-4).
    const unstorable = unstorableField(reason, "reason");
    if (unstorable) throw fail("INVALID_ARGUMENT", `reason ${unstorable.message}.`, { field: "reason" });
    const chars = [...reason].length;
    if (chars > REFUND_REASON_MAX_CHARS) {
      throw fail("INVALID_ARGUMENT", `reason is at most ${REFUND_REASON_MAX_CHARS} characters.`, { field: "reason", length: chars });
    }
    reasonOut = reason;
  }
  if (amount !== undefined && amount !== null && (typeof amount !== "number" || !Number.isInteger(amount) || amount <= 0)) {
    throw fail("INVALID_ARGUMENT", "amount must be an integer number of cents > 0.", { field: "amount" });
  }
  if (!REFUNDABLE_ORDER_STATUSES.has(order.status)) {
    throw fail("conflict", `A ${order.status} order cannot be refunded.`, { status: order.status });
  }
  const windowDays = refundWindowDays(input.policy);
  const endsAt = returnWindowEndsAt(order, windowDays);
  if (input.now > endsAt) {
    throw fail("RETURN_WINDOW_EXPIRED", "The return window has closed; only the merchant can override.", {
      return_window_days: windowDays,
      window_ended_at: new Date(endsAt).toISOString(),
    });
  }
  const refundable = refundableMinor(order.totalMinor, input.refunds);
  if (refundable <= 0) throw fail("conflict", "Nothing is left to refund on this order.", { refundable_minor: 0 });
  const open = openRefundCount(input.refunds);
  if (open >= MAX_OPEN_REFUNDS_PER_ORDER) {
    throw fail("conflict", `This order already has ${open} refund requests waiting for the merchant; wait for a decision before asking again.`, {
      reason: "too_many_open_refunds",
      open_refunds: open,
      max_open_refunds: MAX_OPEN_REFUNDS_PER_ORDER,
    });
  }
  const requested = typeof amount === "number" ? amount : refundable;
  if (requested > refundable) {
    throw fail("INVALID_ARGUMENT", "amount exceeds the refundable amount.", { field: "amount", refundable_minor: refundable });
  }
  return { amountMinor: requested, reason: reasonOut };
}

/**
 * A merchant's approve, or retry of a FAILED refund, sends `refund.amountMinor` to the processor only while that much
 * is still refundable besides it (audit A1 L4): a FAILED record is not in flight, so requests made after it failed
 * may have taken its share, and a retry must not pay back more than was captured. `refunds` are all the order's
 * records, this one included.
 */
export function assertApprovable(boundMinor: number, refund: RefundRecordLike, refunds: readonly RefundRecordLike[]): void {
  const own = refund.status === "PENDING_APPROVAL" || refund.status === "APPROVED" ? refund.amountMinor : 0;
  const left = refundableMinor(boundMinor, refunds) + own;
  if (refund.amountMinor > left) {
    throw fail("conflict", "The refund exceeds what is still refundable on this order; reject it (the buyer may ask again).", {
      reason: "exceeds_refundable",
      status: refund.status,
      amount_minor: refund.amountMinor,
      refundable_minor: left,
    });
  }
}

/**
 * The order event a settled refund implies: full when refunds now cover the total, else partial.
 * (The order machine keeps a canceled order canceled either way.)
 */
export function orderEventAfterRefund(orderTotalMinor: number, refunds: readonly RefundRecordLike[]): "refund_full" | "refund_partial" {
  return refundedMinor(refunds) >= orderTotalMinor ? "refund_full" : "refund_partial";
}
