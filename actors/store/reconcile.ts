/**
 * The order rows of a capture escalated for a human (`orders.reconciliation` set: amount_mismatch,
 * finalization_failed, or settlement_unknown: an x402 settlement nobody can tell any more) and of the merchant's way out of it (audit D6). Each function is statements the caller runs in
 * its own turn's transaction: the cart actor resolves its session and these rows in one turn (actors/cart/index.ts
 * `resolveCapture`), so the resolution can never race the session's own payment. The stock of the order is sold by
 * `settleLegRows` (accept) or released by `cancelPendingOrderRows` (refund, once the refund is REFUNDED), as for
 * any other leg. The refund itself is an ordinary refund record driven by refund-flow.ts `driveRefundRows`, the one
 * refund driver (the store's re-drive reminder armed with it, the order's own rail, the refund bound).
 */
import type { Sql } from "../../infra/db.ts";
import { fail } from "../runtime/errors.ts";
import type { OrderStatus } from "./order-machine.ts";
import { armRedriveRows } from "./refund-flow.ts";
import { applyRefundEvent, refundableMinor, refundRecordsOf, type RefundStatus } from "./refunds.ts";

export type ReconcileAction = "accept" | "refund";

/** The reason a reconciliation refund record carries: a retry of the same resolution finds its record by it. */
export const RECONCILE_REFUND_REASON = "captured payment refunded on reconciliation";

export interface FlaggedOrder {
  id: string;
  status: OrderStatus;
  reconciliation: string;
  /** Null when nothing was captured (a leg of nothing escalated before review R5-1): there is nothing to refund. */
  captureRef: string | null;
  totalMinor: number;
  refundedMinor: number;
  currency: string;
  agentKeyId: string | null;
  checkoutSessionId: string | null;
  cartId: string | null;
  /** `orders.payment_rail`: the rail its refund goes through (refund-flow.ts railOfOrder). */
  paymentRail: string;
}

/**
 * The flagged order, locked for the turn (a concurrent move waits). 404 ORDER_NOT_FOUND when the store has no such
 * order; 409 conflict when nothing is waiting for a human (no flag). An order flagged with no capture reference is
 * returned too (capture_ref null): the caller decides from the processor's answer (review R5-1: it must be resolvable).
 */
export async function lockFlaggedOrder(tx: Sql, slug: string, orderId: string): Promise<FlaggedOrder> {
  const [o] = await tx<
    { id: string; status: OrderStatus; reconciliation: string | null; capture_ref: string | null; total_minor: number; refunded_minor: number; currency: string; agent_key_id: string | null; checkout_session_id: string | null; cart_id: string | null; payment_rail: string }[]
  >`SELECT id, status, reconciliation, capture_ref, total_minor, refunded_minor, currency, agent_key_id, checkout_session_id, cart_id, payment_rail
    FROM orders WHERE id = ${orderId} AND store_slug = ${slug} FOR UPDATE`;
  if (!o) throw fail("ORDER_NOT_FOUND", "No order with that id for this store.", { order_id: orderId });
  if (!o.reconciliation) {
    throw fail("conflict", "This order is not waiting for reconciliation.", { order_id: orderId, status: o.status, reconciliation: o.reconciliation });
  }
  return {
    id: o.id,
    status: o.status,
    reconciliation: o.reconciliation,
    captureRef: o.capture_ref,
    totalMinor: Number(o.total_minor),
    refundedMinor: Number(o.refunded_minor),
    currency: o.currency,
    agentKeyId: o.agent_key_id,
    checkoutSessionId: o.checkout_session_id,
    cartId: o.cart_id,
    paymentRail: o.payment_rail,
  };
}

/**
 * A refund of this order that the merchant already decided (APPROVED, being driven) or that went through
 * (REFUNDED): accepting the capture as the payment then would ship goods whose money is back with the buyer
 * (review R5-4). 409 with `reason` refund_in_progress / refunded; `refund` finishes the decision.
 */
export async function assertNoRefundDecided(tx: Sql, o: FlaggedOrder): Promise<void> {
  const [r] = await tx<{ id: string; status: RefundStatus }[]>`SELECT id, status FROM order_refunds
    WHERE order_id = ${o.id} AND status IN ('APPROVED', 'REFUNDED') ORDER BY status = 'REFUNDED' DESC, created_at LIMIT 1`;
  if (!r) return;
  const done = r.status === "REFUNDED";
  throw fail(
    "conflict",
    done
      ? "The capture of this order was already refunded to the buyer, so it cannot be accepted as the payment. Resolve it with refund (nothing is refunded twice): the order is then canceled and its stock released."
      : "A refund of this capture is in progress, so it cannot be accepted as the payment. Resolve it with refund to finish that refund.",
    { order_id: o.id, status: o.status, reason: done ? "refunded" : "refund_in_progress", refund_id: r.id, refund_status: r.status, next: "refund" },
  );
}

/** The flag cleared, with a `reconciliation_resolved` history event naming who decided what. */
export async function clearReconciliation(tx: Sql, slug: string, o: FlaggedOrder, action: ReconcileAction, userId: string, data: Record<string, unknown> = {}): Promise<void> {
  await tx`WITH c AS (UPDATE orders SET reconciliation = NULL, updated_at = now() WHERE id = ${o.id} AND store_slug = ${slug} AND reconciliation IS NOT NULL RETURNING id)
    INSERT INTO order_events (order_id, type, data)
    SELECT id, 'reconciliation_resolved', ${tx.json({ actor: "merchant", user_id: userId, action, reason: o.reconciliation, capture_ref: o.captureRef, ...data } as never)}::jsonb FROM c`;
}

/**
 * An x402 order escalated as `settlement_unknown` whose leg the chain decided after all (the reminder's or the agent's
 * later look: captured when deep, failed when expired unused): the flag is cleared in the turn's transaction that pays
 * or releases the order, with a `reconciliation_resolved` event by the system (review RG MED-3). Without it a paid order
 * stayed flagged for good, and the merchant's reconcile answered 409 for both actions. No-op on an unflagged order.
 */
export async function clearChainDecided(tx: Sql, slug: string, orderId: string, outcome: "captured" | "released"): Promise<void> {
  await tx`WITH c AS (UPDATE orders SET reconciliation = NULL, updated_at = now()
      WHERE id = ${orderId} AND store_slug = ${slug} AND reconciliation = 'settlement_unknown' RETURNING id)
    INSERT INTO order_events (order_id, type, data)
    SELECT id, 'reconciliation_resolved', ${tx.json({ actor: "system", action: "chain_decided", reason: "settlement_unknown", outcome } as never)}::jsonb FROM c`;
}

export interface ReconcileRefund {
  id: string;
  status: "APPROVED" | "REFUNDED";
  amountMinor: number;
}

/**
 * The refund of the capture, APPROVED (decided by the merchant) in the caller's transaction, with the store's
 * re-drive reminder armed in the same transaction: committed before the processor is called. One record per
 * order: a retried resolution finds it (APPROVED: driven again; REFUNDED: done) and a FAILED one is retried (back to
 * APPROVED), never duplicated. Its amount is what the processor captured, bounded like any refund by what is left
 * of it (refundableMinor).
 */
export async function openReconcileRefund(tx: Sql, slug: string, o: FlaggedOrder, capturedMinor: number, userId: string, now: number): Promise<ReconcileRefund> {
  // The caller holds the order row (lockFlaggedOrder): the order row, then the refund row (refund-flow.ts
  // lockOrderOfRefund; audit K-2). Locked, so the store's reject or approve of this record waits for this turn.
  const [prev] = await tx<{ id: string; status: RefundStatus; amount_minor: number }[]>`SELECT id, status, amount_minor FROM order_refunds
    WHERE order_id = ${o.id} AND reason = ${RECONCILE_REFUND_REASON} AND status IN ('APPROVED', 'REFUNDED', 'FAILED')
    ORDER BY status = 'FAILED', created_at LIMIT 1 FOR UPDATE`;
  if (prev?.status === "REFUNDED") return { id: prev.id, status: "REFUNDED", amountMinor: Number(prev.amount_minor) };
  if (prev?.status === "FAILED") {
    applyRefundEvent({ status: prev.status, amountMinor: Number(prev.amount_minor) }, "retry", "merchant");
    // The next processor key (refund-flow.ts railRefundKey): the rail would answer its refusal again under the last.
    const retried = await tx`UPDATE order_refunds SET status = 'APPROVED', failure = NULL, decided_by = ${userId}, updated_at = now(), rail_attempt = rail_attempt + 1
      WHERE id = ${prev.id} AND status = 'FAILED'`;
    // Checked (audit K-1): never report APPROVED (and drive) a record this statement did not move.
    if (retried.count === 0) {
      const [now] = await tx<{ status: RefundStatus }[]>`SELECT status FROM order_refunds WHERE id = ${prev.id}`;
      throw fail("conflict", "The refund of this capture changed meanwhile; read the order and decide again.", { order_id: o.id, refund_id: prev.id, refund_status: now?.status ?? null });
    }
    await tx`INSERT INTO order_events (order_id, type, data) VALUES (${o.id}, 'refund_approved', ${tx.json({ actor: "merchant", user_id: userId, refund_id: prev.id, amount_minor: Number(prev.amount_minor), reconciliation: o.reconciliation, retry: true } as never)})`;
  }
  if (prev) {
    await armRedriveRows(tx, slug, now);
    return { id: prev.id, status: "APPROVED", amountMinor: Number(prev.amount_minor) };
  }
  const refunds = await tx<{ status: RefundStatus; amount_minor: number }[]>`SELECT status, amount_minor FROM order_refunds WHERE order_id = ${o.id}`;
  const amountMinor = refundableMinor(capturedMinor, refundRecordsOf(refunds));
  if (amountMinor <= 0) throw fail("conflict", "Nothing of this capture is left to refund.", { order_id: o.id, captured_minor: capturedMinor });
  const [r] = await tx<{ id: string }[]>`INSERT INTO order_refunds (order_id, store_slug, agent_key_id, amount_minor, currency, reason, status, decided_by)
    VALUES (${o.id}, ${slug}, ${o.agentKeyId}, ${amountMinor}, ${o.currency}, ${RECONCILE_REFUND_REASON}, 'APPROVED', ${userId}) RETURNING id`;
  await tx`INSERT INTO order_events (order_id, type, data) VALUES (${o.id}, 'refund_approved', ${tx.json({ actor: "merchant", user_id: userId, refund_id: r!.id, amount_minor: amountMinor, reconciliation: o.reconciliation } as never)})`;
  await armRedriveRows(tx, slug, now);
  return { id: r!.id, status: "APPROVED", amountMinor };
}

/** An accepted capture whose amount is not the order's total is recorded (migration 0071): refunds are bounded by it. */
export async function recordCapturedAmount(tx: Sql, slug: string, o: FlaggedOrder, capturedMinor: number): Promise<void> {
  if (capturedMinor === o.totalMinor) return;
  await tx`UPDATE orders SET captured_minor = ${capturedMinor} WHERE id = ${o.id} AND store_slug = ${slug}`;
}

/** The answer of a reconcile decision (`resolveCapture`'s, without the buyer-side session id). */
export interface ResolutionAnswer {
  order_id: string;
  merchant_slug: string;
  action: ReconcileAction;
  order_status: string;
  reconciliation: null;
  capture_reference: string | null;
  refund: { refund_id: string; status: string; amount_minor: number; currency: string } | null;
  refund_by_merchant?: true;
  checkout_status: string;
  cart_status: string;
}

/**
 * A merchant's repeat of a reconcile decision it already made (a retry after a lost answer, a double click: helper B,
 * B-6), as its other decisions are (audit D-1): an order whose flag was cleared by the merchant's `action` answers that
 * decision again, 200, writing nothing: the order's status as it stands now, the capture reference and the refund the
 * decision made (as it stands now), and the checkout and cart statuses the decision left (kept in its
 * `reconciliation_resolved` event by the cart's `resolveCapture`; "unknown" for a decision recorded before). Another decision than the one made is 409 `conflict` naming it
 * (`details.resolved_action`). Undefined when the order is still flagged, or was never resolved by a merchant (a
 * plain order, one the chain decided): the caller's own refusal stands.
 */
export async function repeatedResolution(sql: Sql, slug: string, orderId: string, action: ReconcileAction): Promise<ResolutionAnswer | undefined> {
  const [o] = await sql<{ status: string; reconciliation: string | null }[]>`SELECT status, reconciliation FROM orders WHERE id = ${orderId} AND store_slug = ${slug}`;
  if (!o || o.reconciliation !== null) return undefined;
  const [e] = await sql<{ data: Record<string, unknown> }[]>`SELECT data FROM order_events
    WHERE order_id = ${orderId} AND type = 'reconciliation_resolved' ORDER BY id DESC LIMIT 1`;
  const data = e?.data;
  if (!data || data.actor !== "merchant" || (data.action !== "accept" && data.action !== "refund")) return undefined;
  if (data.action !== action) {
    throw fail(
      "conflict",
      data.action === "accept"
        ? "This order's capture was already accepted as its payment; it cannot be refunded as a reconciliation. Cancel the order to refund it."
        : "This order's capture was already refunded on reconciliation (the order canceled); there is nothing left to accept.",
      { order_id: orderId, status: o.status, reconciliation: null, resolved_action: data.action },
    );
  }
  const str = (v: unknown): string | null => (typeof v === "string" ? v : null);
  const refundId = str(data.refund_id);
  const [r] = refundId
    ? await sql<{ id: string; status: string; amount_minor: number; currency: string }[]>`SELECT id, status, amount_minor, currency FROM order_refunds WHERE id = ${refundId}`
    : [];
  return {
    order_id: orderId,
    merchant_slug: slug,
    action,
    order_status: o.status,
    reconciliation: null,
    capture_reference: str(data.capture_ref) ?? str(data.payment_reference),
    refund: r ? { refund_id: r.id, status: r.status, amount_minor: Number(r.amount_minor), currency: r.currency } : null,
    ...(data.refund_by_merchant === true ? { refund_by_merchant: true as const } : {}),
    checkout_status: str(data.checkout_status) ?? "unknown",
    cart_status: str(data.cart_status) ?? "unknown",
  };
}
