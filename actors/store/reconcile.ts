/**
 * The order rows of a capture escalated for a human (`orders.reconciliation` set: amount_mismatch,
 * finalization_failed) and of the merchant's way out of it (audit D6). Each function is statements the caller runs in
 * its own turn's transaction: the cart actor resolves its session and these rows in one turn (actors/cart/index.ts
 * `resolveCapture`), so the resolution can never race the session's own payment. The stock of the order is sold by
 * `settleLegRows` (accept) or released by `cancelPendingOrderRows` (refund), as for any other leg.
 */
import type { Sql } from "../../infra/db.ts";
import { fail } from "../runtime/errors.ts";
import type { OrderStatus } from "./order-machine.ts";

export type ReconcileAction = "accept" | "refund";

/** The reason a reconciliation refund record carries: a retry of the same resolution finds its record by it. */
export const RECONCILE_REFUND_REASON = "captured payment refunded on reconciliation";

export interface FlaggedOrder {
  id: string;
  status: OrderStatus;
  reconciliation: string;
  captureRef: string;
  totalMinor: number;
  refundedMinor: number;
  currency: string;
  agentKeyId: string | null;
  checkoutSessionId: string | null;
  cartId: string | null;
}

/**
 * The flagged order, locked for the turn (a concurrent move waits). 404 ORDER_NOT_FOUND when the store has no such
 * order; 409 conflict when nothing is waiting for a human (no flag, or no capture to resolve).
 */
export async function lockFlaggedOrder(tx: Sql, slug: string, orderId: string): Promise<FlaggedOrder> {
  const [o] = await tx<
    { id: string; status: OrderStatus; reconciliation: string | null; capture_ref: string | null; total_minor: number; refunded_minor: number; currency: string; agent_key_id: string | null; checkout_session_id: string | null; cart_id: string | null }[]
  >`SELECT id, status, reconciliation, capture_ref, total_minor, refunded_minor, currency, agent_key_id, checkout_session_id, cart_id
    FROM orders WHERE id = ${orderId} AND store_slug = ${slug} FOR UPDATE`;
  if (!o) throw fail("ORDER_NOT_FOUND", "No order with that id for this store.", { order_id: orderId });
  if (!o.reconciliation || !o.capture_ref) {
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
  };
}

/** The flag cleared, with a `reconciliation_resolved` history event naming who decided what. */
export async function clearReconciliation(tx: Sql, slug: string, o: FlaggedOrder, action: ReconcileAction, userId: string, data: Record<string, unknown> = {}): Promise<void> {
  await tx`WITH c AS (UPDATE orders SET reconciliation = NULL, updated_at = now() WHERE id = ${o.id} AND store_slug = ${slug} AND reconciliation IS NOT NULL RETURNING id)
    INSERT INTO order_events (order_id, type, data)
    SELECT id, 'reconciliation_resolved', ${tx.json({ actor: "merchant", user_id: userId, action, reason: o.reconciliation, capture_ref: o.captureRef, ...data } as never)}::jsonb FROM c`;
}

export interface ReconcileRefund {
  id: string;
  status: "APPROVED" | "REFUNDED";
  amountMinor: number;
}

/** The reconciliation refund of this order already on record (a retried resolution, or one a re-drive finished). */
export async function findReconcileRefund(tx: Sql, o: FlaggedOrder): Promise<ReconcileRefund | null> {
  const [r] = await tx<{ id: string; status: "APPROVED" | "REFUNDED"; amount_minor: number }[]>`SELECT id, status, amount_minor FROM order_refunds
    WHERE order_id = ${o.id} AND reason = ${RECONCILE_REFUND_REASON} AND status IN ('APPROVED', 'REFUNDED') ORDER BY created_at LIMIT 1`;
  return r ? { id: r.id, status: r.status, amountMinor: Number(r.amount_minor) } : null;
}

/** The refund of the whole capture, committed APPROVED (decided by the merchant) before the processor is called. */
export async function approveReconcileRefund(tx: Sql, slug: string, o: FlaggedOrder, amountMinor: number, userId: string): Promise<ReconcileRefund> {
  const [r] = await tx<{ id: string }[]>`INSERT INTO order_refunds (order_id, store_slug, agent_key_id, amount_minor, currency, reason, status, decided_by)
    VALUES (${o.id}, ${slug}, ${o.agentKeyId}, ${amountMinor}, ${o.currency}, ${RECONCILE_REFUND_REASON}, 'APPROVED', ${userId}) RETURNING id`;
  await tx`INSERT INTO order_events (order_id, type, data) VALUES (${o.id}, 'refund_approved', ${tx.json({ actor: "merchant", user_id: userId, refund_id: r!.id, amount_minor: amountMinor, reconciliation: o.reconciliation } as never)})`;
  return { id: r!.id, status: "APPROVED", amountMinor };
}

/**
 * The rail's answer on the record: REFUNDED (and the order's refunded_minor, capped at its total: an amount
 * mismatch captured more than the order) or FAILED. Written only while the record is APPROVED, so a refund another
 * drive finished is counted once.
 */
export async function recordReconcileRefund(tx: Sql, o: FlaggedOrder, r: ReconcileRefund, answer: { status: "refunded"; refundRef: string } | { status: "failed"; reason: string }): Promise<void> {
  if (answer.status === "refunded") {
    await tx`WITH u AS (UPDATE order_refunds SET status = 'REFUNDED', refund_ref = ${answer.refundRef}, updated_at = now() WHERE id = ${r.id} AND status = 'APPROVED' RETURNING id),
      o AS (UPDATE orders SET refunded_minor = LEAST(total_minor, refunded_minor + ${r.amountMinor}), updated_at = now() WHERE id = ${o.id} AND EXISTS (SELECT 1 FROM u) RETURNING id)
      INSERT INTO order_events (order_id, type, data) SELECT id, 'refund_full', ${tx.json({ actor: "system", refund_id: r.id, amount_minor: r.amountMinor } as never)}::jsonb FROM o`;
    return;
  }
  await tx`UPDATE order_refunds SET status = 'FAILED', failure = ${answer.reason}, updated_at = now() WHERE id = ${r.id} AND status = 'APPROVED'`;
}
