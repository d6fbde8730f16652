/**
 * Order and refund rows as the store actor reads and moves them: the order machine applied to a row (conditional on
 * the status read, with its history event and `order.status_changed` outbox row in the same transaction), and the
 * refund record's view. Shared by commerce.ts (checkout legs, merchant moves) and refund-flow.ts (refunds).
 */
import type { Sql } from "../../infra/db.ts";
import { toMajor } from "../../search/money.ts";
import { fail } from "../runtime/errors.ts";
import { enqueueWebhookEvent } from "../webhook/outbox.ts";
import { applyOrderEvent, type OrderEvent, type OrderHeader, type OrderStatus } from "./order-machine.ts";
import type { RefundStatus } from "./refunds.ts";

export const iso = (ms: number): string => new Date(ms).toISOString();

export interface OrderRowLite {
  id: string;
  store_slug: string;
  status: OrderStatus;
  total_minor: number;
  currency: string;
}

/** The `order.created` webhook body (docs/webhooks.md; the spec's payload, exactly). */
export type CreatedPayload = {
  event: "order.created";
  timestamp: string;
  orderId: string;
  merchantSlug: string;
  totalAmount: number;
  currency: string;
  status: "pending";
};

/**
 * The one builder of the `order.created` payload. An order is created `pending` by its store's payment leg
 * (commerce.ts, whose statement inserts this outbox row in SQL beside the order).
 */
export function createdPayload(o: { orderId: string; merchantSlug: string; totalMinor: number; currency: string }, now: number): CreatedPayload {
  return {
    event: "order.created",
    timestamp: iso(now),
    orderId: o.orderId,
    merchantSlug: o.merchantSlug,
    totalAmount: toMajor(o.totalMinor, o.currency),
    currency: o.currency,
    status: "pending",
  };
}

/** The `order.status_changed` webhook body (docs/webhooks.md). */
export type StatusChangedPayload = {
  event: "order.status_changed";
  timestamp: string;
  orderId: string;
  merchantSlug: string;
  fromStatus: OrderStatus;
  toStatus: OrderStatus;
  totalAmount: number;
  currency: string;
};

/**
 * The one builder of the `order.status_changed` payload, for every move that writes it: a merchant's or refund's move
 * (outboxStatusChanged), a captured leg's pending → paid and an ended session's pending → canceled (commerce.ts, whose
 * statements insert it in SQL), so receivers get one shape whichever path moved the order.
 */
export function statusChangedPayload(
  o: { orderId: string; merchantSlug: string; totalMinor: number; currency: string },
  from: OrderStatus,
  to: OrderStatus,
  now: number,
): StatusChangedPayload {
  return {
    event: "order.status_changed",
    timestamp: iso(now),
    orderId: o.orderId,
    merchantSlug: o.merchantSlug,
    fromStatus: from,
    toStatus: to,
    totalAmount: toMajor(o.totalMinor, o.currency),
    currency: o.currency,
  };
}

/** The total is what was captured (`orderTotalMinor`: an accepted amount mismatch's capture), as docs/webhooks.md says. */
export async function outboxStatusChanged(tx: Sql, o: OrderRowLite & { captured_minor?: number | null }, from: OrderStatus, to: OrderStatus, now: number): Promise<void> {
  await enqueueWebhookEvent(tx, {
    storeSlug: o.store_slug,
    kind: "order.status_changed",
    payload: statusChangedPayload({ orderId: o.id, merchantSlug: o.store_slug, totalMinor: orderTotalMinor(o), currency: o.currency }, from, to, now),
  });
}

export interface OrderRow extends OrderRowLite {
  agent_key_id: string | null;
  created_at: Date;
  delivered_at: Date | null;
  capture_ref: string | null;
  refunded_minor: number;
  payment_rail: string;
  /** The checkout session and cart of an agent order (null for a merchant-recorded one). */
  checkout_session_id: string | null;
  cart_id: string | null;
  /** What the processor captured when it is not the total (an accepted amount mismatch); null: the total. */
  captured_minor: number | null;
}

/**
 * The order's total from its capture on, as its views (REST and MCP order reads), its `order.status_changed` events
 * and its refund bound say it: what the processor captured when the merchant accepted another amount than was
 * priced (`captured_minor`, migration 0071; audit A8), else the priced `total_minor`. A view shows the priced total
 * beside it (`priced_total_minor`), the one its subtotal, discount, shipping and tax add up to.
 */
export function orderTotalMinor(o: { total_minor: number; captured_minor?: number | null }): number {
  return Number(o.captured_minor ?? o.total_minor);
}

export async function loadOrder(db: Sql, slug: string, orderId: string): Promise<OrderRow> {
  const rows = await db<OrderRow[]>`SELECT id, store_slug, status, total_minor, currency, agent_key_id, created_at, delivered_at, capture_ref,
      refunded_minor, payment_rail, checkout_session_id, cart_id, captured_minor FROM orders WHERE id = ${orderId} AND store_slug = ${slug}`;
  if (!rows[0]) throw fail("ORDER_NOT_FOUND", "No order with that id for this store.", { order_id: orderId });
  return rows[0];
}

/** Moves an order through the machine and writes the row, its history event and its outbox row together. */
export async function moveOrder(tx: Sql, o: OrderRow, event: OrderEvent, actor: "agent" | "merchant" | "system", now: number, data: Record<string, unknown> = {}): Promise<OrderStatus> {
  const header: OrderHeader = { status: o.status, createdAt: o.created_at.getTime(), deliveredAt: o.delivered_at?.getTime() ?? null, history: [] };
  const next = applyOrderEvent(header, event, actor, now);
  const from = o.status;
  const to = next.status;
  // Conditional on the status read: a checkout's cart writes its own orders (pending → paid) concurrently.
  const moved = await tx`UPDATE orders SET status = ${to}, updated_at = now(), version = version + 1,
      delivered_at = CASE WHEN ${event === "deliver"} THEN now() ELSE delivered_at END,
      paid_at = CASE WHEN ${event === "mark_paid"} THEN now() ELSE paid_at END
    WHERE id = ${o.id} AND status = ${from}`;
  if (moved.count !== 1) throw fail("conflict", "The order changed meanwhile; read it again.", { order_id: o.id });
  await tx`INSERT INTO order_events (order_id, type, from_status, to_status, data) VALUES (${o.id}, ${event}, ${from}, ${to}, ${tx.json({ actor, ...data } as never)})`;
  if (from !== to) await outboxStatusChanged(tx, o, from, to, now);
  return to;
}

export interface RefundView {
  refund_id: string;
  order_id: string;
  merchant_slug: string;
  status: RefundStatus;
  amount: number;
  amount_minor: number;
  currency: string;
  reason: string | null;
  refund_reference: string | null;
  created_at: string;
  updated_at: string;
}

export interface RefundRow {
  id: string;
  order_id: string;
  store_slug: string;
  status: RefundStatus;
  amount_minor: number;
  currency: string;
  reason: string | null;
  refund_ref: string | null;
  created_at: Date;
  updated_at: Date;
  /** Retries of a FAILED refund so far (migration 0071); read by the drive only (loadRefund). */
  rail_attempt?: number;
}

export function refundView(r: RefundRow): RefundView {
  return {
    refund_id: r.id,
    order_id: r.order_id,
    merchant_slug: r.store_slug,
    status: r.status,
    amount: toMajor(Number(r.amount_minor), r.currency),
    amount_minor: Number(r.amount_minor),
    currency: r.currency,
    reason: r.reason,
    refund_reference: r.refund_ref,
    created_at: r.created_at.toISOString(),
    updated_at: r.updated_at.toISOString(),
  };
}

export async function loadRefund(db: Sql, slug: string, id: string): Promise<RefundRow> {
  const rows = await db<RefundRow[]>`SELECT id, order_id, store_slug, status, amount_minor, currency, reason, refund_ref, created_at, updated_at, rail_attempt
    FROM order_refunds WHERE id = ${id} AND store_slug = ${slug}`;
  if (!rows[0]) throw fail("not_found", "No such refund request for this store.", { refund_id: id });
  return rows[0];
}
