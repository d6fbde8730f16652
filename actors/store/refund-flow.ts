/**
 * Money going back to the buyer, as the `store/<slug>` actor runs it: the rail refund of an APPROVED refund record
 * (`driveRefund`), the cancel of a paid order with the refund of what is left of its capture (`cancelPaidOrder`,
 * shared by the agent's and the merchant's cancel), and the reminder that drives again a refund left APPROVED.
 *
 * The order of writes is the same everywhere: the refund record is committed APPROVED (with the re-drive reminder,
 * in the same transaction) before the processor is called; the rail is idempotent per refund id, so calling it
 * again after a crash, an error or a lost answer returns its first answer and never refunds twice. Every write takes
 * the order row first, then the refund row (`lockOrderOfRefund`: approve, reject, the drive's settle; audit K-2).
 * FAILED is written only while the record is still APPROVED, and only for the processor attempt the drive asked.
 * REFUNDED is written from APPROVED, so two drives of one refund count its money once; the one exception is money the
 * processor moved for a record that is no longer APPROVED (FAILED or REJECTED meanwhile, audit K-1): the record is
 * corrected to REFUNDED from the status read under the lock, once, the order counts it, and a `refund_recovered` event
 * names the status it was corrected from. A merchant's reject moves the record only from the status it read (else 409
 * conflict with the current status).
 */
import { isDatabaseUnavailable, type Sql } from "../../infra/db.ts";
import { railFor, type RailName } from "../payments/card-rails.ts";
import type { RefundResult } from "../payments/rail.ts";
import type { ActorContext } from "../runtime/define-actor.ts";
import { fail } from "../runtime/errors.ts";
import { nextOrderStatus, type OrderEvent, type OrderStatus } from "./order-machine.ts";
import { loadOrder, loadRefund, moveOrder, orderTotalMinor, refundView, type OrderRow, type RefundRow, type RefundView } from "./order-rows.ts";
import { MAX_STOCK_QUANTITY } from "./schemas.ts";
import { applyRefundEvent, assertApprovable, orderEventAfterRefund, refundableMinor, refundRecordsOf, type RefundStatus } from "./refunds.ts";

type Ctx = ActorContext<unknown>;

/** The store actor's one refund reminder (a reminder name is per actor: it drives every APPROVED refund of the store). */
export const REFUND_REMINDER = "refunds";
/** First re-drive after this long (a turn that is still running has long finished), then doubling up to an hour. */
export const REFUND_REDRIVE_FIRST_MS = 30_000;
const REFUND_REDRIVE_MAX_MS = 60 * 60_000;
/** APPROVED refunds driven per reminder turn; more are left to the next one. */
const REDRIVE_BATCH = 50;

export function redriveDelayMs(attempt: number): number {
  return Math.min(REFUND_REDRIVE_MAX_MS, REFUND_REDRIVE_FIRST_MS * 2 ** Math.min(attempt, 16));
}

/**
 * The rail an order was paid with (`orders.payment_rail`): the stored "MOCK" label is the card sandbox's simulated
 * payment. Null for anything else (an order the merchant recorded, paid outside the service).
 */
export function railOfOrder(stored: string): RailName | null {
  if (stored === "card" || stored === "MOCK") return "card";
  if (stored === "x402") return "x402";
  return null;
}

/**
 * The agent's refund request of an order paid over x402 (REST POST /agent/orders/{id}/refund, MCP onx_create_return),
 * refused before anything is written (helper C, C-4): the money sits in the merchant's wallet and the x402 rail cannot
 * pull it back, so a request could only be approved into FAILED. As the agent's cancel of such an order
 * (ORDER_NOT_CANCELLABLE, `reason: refund_by_merchant`) and the MCP return of an order the merchant recorded
 * (NOT_ELIGIBLE, `recorded_by_merchant`): the merchant pays the buyer back from its wallet.
 */
export function x402RefundRequestRefused(orderId: string) {
  return fail(
    "NOT_ELIGIBLE",
    "This order was paid over x402: the money is in the merchant's wallet and this service cannot pull it back, so no refund request runs here. Ask the merchant to pay the buyer back from its wallet.",
    { order_id: orderId, payment_rail: "x402", reason: "refund_by_merchant" },
  );
}

/**
 * A merchant's approve (or retry) of an agent's refund request of an x402 order, one made before such requests were
 * refused (x402RefundRequestRefused): 409 with what to do, nothing written and nothing sent. The approve used to commit
 * APPROVED and end FAILED with the rail's free text every time.
 */
function x402ApproveRefused(refund: RefundRow) {
  return fail(
    "conflict",
    "This order was paid over x402: the service cannot pull the money back, so approving this request would only fail. Pay the buyer back from your wallet, then reject this request; or cancel the order (answered refund_by_merchant, which closes its open requests).",
    { reason: "refund_by_merchant", payment_rail: "x402", refund_id: refund.id, order_id: refund.order_id, status: refund.status },
  );
}

/** The store actor's kind, as its reminder rows are keyed (actors/store/index.ts). */
const STORE_KIND = "store";

/**
 * Arms the re-drive reminder; called in the turn that commits an APPROVED refund, before its checkpoint. An armed
 * reminder keeps its earlier due time and its backoff (audit R1-5): were every approve to push it 30 s out again, a
 * store approving more often than that would never re-drive a refund stuck APPROVED.
 */
async function armRedrive(ctx: Ctx): Promise<void> {
  const due = ctx.now() + redriveDelayMs(0);
  const [armed] = await (await ctx.tx())<{ due_at: Date; payload: unknown }[]>`SELECT due_at, payload FROM actor_reminders
    WHERE kind = ${STORE_KIND} AND id = ${ctx.id} AND name = ${REFUND_REMINDER}`;
  if (armed && armed.due_at.getTime() <= due) return;
  await ctx.schedule(REFUND_REMINDER, due, armed ? armed.payload : { attempt: 0 });
}

/**
 * The same reminder armed from another actor's turn (the cart's reconciliation refund), as a row written in that
 * turn's transaction: the store is not asked (the cart never asks the store: docs/decisions.md), and the reminder
 * poll delivers it to the store wherever it runs. Keeps an earlier due time and the backoff, as `armRedrive`.
 */
export async function armRedriveRows(tx: Sql, slug: string, now: number): Promise<void> {
  await tx`INSERT INTO actor_reminders (kind, id, name, due_at, payload)
    VALUES (${STORE_KIND}, ${slug}, ${REFUND_REMINDER}, ${new Date(now + redriveDelayMs(0))}, ${tx.json({ attempt: 0 } as never)})
    ON CONFLICT (kind, id, name) DO UPDATE SET due_at = LEAST(actor_reminders.due_at, EXCLUDED.due_at)`;
}

/** Cancels the re-drive reminder when no refund of the store is left APPROVED (checked in the turn's transaction). */
async function disarmRedriveIfIdle(ctx: Ctx): Promise<void> {
  const tx = await ctx.tx();
  const [r] = await tx<{ n: number }[]>`SELECT count(*)::int AS n FROM order_refunds WHERE store_slug = ${ctx.id} AND status = 'APPROVED'`;
  if (r.n === 0) await ctx.cancelReminder(REFUND_REMINDER);
}

/**
 * The order's move for a refund now REFUNDED (refund_partial, or refund_full once refunds cover what was captured),
 * where the machine has one: an order still pending under reconciliation has none and keeps its status (the cart
 * cancels it in the turn that resolves it, then records this move). Read in the transaction: the order may have
 * moved since the drive read it. A full refund of an order still `paid` (never fulfilled: the goods never left the
 * merchant) gives its sold units back as the merchant's cancel does (`returnSoldStock`, review R1-L1), in the same
 * transaction; once it is fulfilled, shipped or delivered the goods are out and the stock is the merchant's to
 * correct. Returns the products whose stock changed (to reindex).
 */
export async function moveOrderAfterRefund(tx: Sql, slug: string, orderId: string, refundId: string, amountMinor: number, now: number): Promise<string[]> {
  const all = await tx<{ status: RefundStatus; amount_minor: number }[]>`SELECT status, amount_minor FROM order_refunds WHERE order_id = ${orderId}`;
  const current = await loadOrder(tx, slug, orderId);
  const event = orderEventAfterRefund(orderTotalMinor(current), refundRecordsOf(all));
  if (!nextOrderStatus(current.status, event, "system")) return [];
  // moveOrder is conditional on the status read here, so of two drives only one moves (and restocks); a replay of
  // returnSoldStock finds no committed reservation left.
  await moveOrder(tx, current, event, "system", now, { refund_id: refundId, amount_minor: amountMinor });
  return event === "refund_full" && current.status === "paid" ? returnSoldStock(tx, slug, orderId) : [];
}

/**
 * The processor's idempotency key for a refund's attempt: the refund id, then `<id>/<n>` for the n-th retry of a
 * FAILED refund (migration 0071). The rail answers its first result per key, a refusal included, so a retry under
 * the same key could never succeed; a retry follows only a `failed` answer, so a new key never refunds twice.
 */
export function railRefundKey(refundId: string, attempt: number): string {
  return attempt === 0 ? refundId : `${refundId}/${attempt}`;
}

/** What a refund's drive needs of the turn running it: the store's own, or the cart's resolving a capture. */
export type RefundTurn = Pick<ActorContext<unknown>, "sql" | "tx" | "now" | "log" | "publish">;

/**
 * Calls the order's rail (`orders.payment_rail`) for an APPROVED refund of store `slug` and records its answer in
 * the turn's transaction: REFUNDED (the order's refunded_minor, bounded by what was captured, and its
 * refund_partial/refund_full move) or FAILED with the rail's reason. The one refund driver: the store's approve,
 * cancel and reminder, and the cart's reconciliation refund. The refund and the order are read through the pool,
 * so no transaction is held while the processor runs. Anything but APPROVED is returned as it is.
 * `tolerateRailError`: a rail that throws leaves the refund APPROVED (the reminder's drive); otherwise the error
 * fails the turn and the reminder drives it later.
 */
export async function driveRefundRows(turn: RefundTurn, slug: string, refundId: string, tolerateRailError = false): Promise<RefundRow> {
  const refund = await loadRefund(turn.sql, slug, refundId);
  if (refund.status !== "APPROVED") return refund;
  const order = await loadOrder(turn.sql, slug, refund.order_id);
  const amountMinor = Number(refund.amount_minor);
  const record = { status: refund.status, amountMinor };
  const railName = railOfOrder(order.payment_rail);
  const rail = railName ? railFor(turn.sql, railName) : undefined;
  let result: RefundResult;
  try {
    result =
      order.capture_ref && rail
        ? await rail.refund({ refundId: railRefundKey(refundId, refund.rail_attempt ?? 0), captureRef: order.capture_ref, amountMinor })
        : { status: "failed", refundId, reason: order.capture_ref ? "no_rail" : "no_capture" };
  } catch (err) {
    if (!tolerateRailError || isDatabaseUnavailable(err)) throw err;
    turn.log.warn("refund rail call failed; the refund stays APPROVED for the next drive", { refund_id: refundId, error: err as Error });
    return refund;
  }
  const tx = await turn.tx();
  // The order row first, then the refund row (lockOrderOfRefund).
  await tx`SELECT id FROM orders WHERE id = ${order.id} FOR UPDATE`;
  if (result.status === "refunded") {
    let settled = await tx`UPDATE order_refunds SET status = ${applyRefundEvent(record, "settle", "system").status}, refund_ref = ${result.refundRef}, updated_at = now()
      WHERE id = ${refundId} AND status = 'APPROVED'`;
    if (settled.count === 0) {
      // The processor paid this refund back, yet the record is no longer APPROVED. REFUNDED by another drive: counted
      // once, nothing to do. Anything else (audit K-1: a stale drive's refusal under an older processor key, or a
      // move that should never have happened) is not left as it is: money moved, so the record says REFUNDED and the
      // order counts it, with an event naming the status it was corrected from.
      const [now] = await tx<{ status: RefundStatus }[]>`SELECT status FROM order_refunds WHERE id = ${refundId} FOR UPDATE`;
      if (now && now.status !== "REFUNDED") {
        turn.log.error("the processor refunded a refund whose record was no longer APPROVED; recorded as REFUNDED", { refund_id: refundId, status: now.status });
        settled = await tx`UPDATE order_refunds SET status = 'REFUNDED', refund_ref = ${result.refundRef}, failure = NULL, updated_at = now()
          WHERE id = ${refundId} AND status = ${now.status}`;
        await tx`INSERT INTO order_events (order_id, type, data) VALUES (${order.id}, 'refund_recovered',
          ${tx.json({ actor: "system", refund_id: refundId, amount_minor: amountMinor, was: now.status } as never)})`;
      }
    }
    if (settled.count === 1) {
      await tx`UPDATE orders SET refunded_minor = LEAST(COALESCE(captured_minor, total_minor), refunded_minor + ${amountMinor}) WHERE id = ${order.id}`;
      const restocked = await moveOrderAfterRefund(tx, slug, order.id, refundId, amountMinor, turn.now());
      if (restocked.length) turn.publish("catalog.changed", { storeSlug: slug, upserted: restocked, removed: [] });
    }
  } else {
    // Only the attempt this drive asked about: a refusal under an older processor key says nothing of a retry's.
    await tx`UPDATE order_refunds SET status = ${applyRefundEvent(record, "fail", "system").status}, failure = ${result.reason}, updated_at = now()
      WHERE id = ${refundId} AND status = 'APPROVED' AND rail_attempt = ${refund.rail_attempt ?? 0}`;
  }
  return loadRefund(tx, slug, refundId);
}

/**
 * Lock order for refunds (audit K-2): the order row first, then its refund rows. The cart's reconcile refund locks the
 * flagged order (reconcile.ts lockFlaggedOrder) and then its refund record; a store turn that wrote the refund row
 * first and the order (or an `order_events` row, which key-share locks the order) after it deadlocked with it (40P01,
 * answered 503). Every statement sequence that writes a refund row takes the order row with this first.
 */
export async function lockOrderOfRefund(tx: Sql, slug: string, refundId: string): Promise<void> {
  await tx`SELECT o.id FROM orders o WHERE o.id = (SELECT order_id FROM order_refunds WHERE id = ${refundId} AND store_slug = ${slug}) FOR UPDATE`;
}

/** `driveRefundRows` for a refund of this store, in the store's own turn. */
export function driveRefund(ctx: Ctx, refundId: string, tolerateRailError = false): Promise<RefundRow> {
  return driveRefundRows(ctx, ctx.id, refundId, tolerateRailError);
}

/**
 * A merchant's approve (or retry of a FAILED one): bounded again by what is still refundable (refunds.ts
 * `assertApprovable`), APPROVED committed with the reminder, then the rail.
 */
export async function approveRefund(ctx: Ctx, refundId: string, userId: string): Promise<RefundView> {
  const current = await loadRefund(ctx.sql, ctx.id, refundId);
  // A repeated approve (a retry after a lost answer, a double click: the second turn runs after the first) of a
  // refund already paid back answers the refund as it is, 200, not 409 (audit D-1; as the agent's repeated cancel,
  // review RC-3). Every REFUNDED record is money a merchant decided to pay back (an approve, a cancel, a
  // reconciliation), so an approve is never told "not allowed" about what it asked for. Nothing is written.
  if (current.status === "REFUNDED") return refundView(current);
  if (railOfOrder((await loadOrder(ctx.sql, ctx.id, current.order_id)).payment_rail) === "x402") throw x402ApproveRefused(current);
  if (current.status !== "APPROVED") {
    const tx = await ctx.tx();
    await lockOrderOfRefund(tx, ctx.id, refundId);
    const refund = await loadRefund(tx, ctx.id, refundId);
    const record = { status: refund.status, amountMinor: Number(refund.amount_minor) };
    const approved = applyRefundEvent(record, refund.status === "FAILED" ? "retry" : "approve", "merchant");
    // Re-bounded here, in the store's turn: a FAILED refund is not in flight, so what it asks may have been asked since.
    const order = await loadOrder(tx, ctx.id, refund.order_id);
    const all = await tx<{ status: RefundStatus; amount_minor: number }[]>`SELECT status, amount_minor FROM order_refunds WHERE order_id = ${refund.order_id} AND id <> ${refund.id}`;
    assertApprovable(orderTotalMinor(order), record, [record, ...refundRecordsOf(all)]);
    // A retry asks the processor under the next key (railRefundKey): its first answer for the last one was a refusal.
    await tx`UPDATE order_refunds SET status = ${approved.status}, decided_by = ${userId}, updated_at = now(),
        rail_attempt = rail_attempt + ${refund.status === "FAILED" ? 1 : 0}
      WHERE id = ${refund.id} AND status = ${refund.status}`;
    await armRedrive(ctx);
    // APPROVED and the reminder are durable before the processor is called.
    await ctx.checkpoint();
  }
  // An approve of a refund already APPROVED (its rail call failed or its turn died) drives it again: the rail
  // answers its first result for this refund id, so this never refunds twice.
  const after = await driveRefund(ctx, refundId);
  await disarmRedriveIfIdle(ctx);
  return refundView(after);
}

export type MerchantMoveAnswer = { order_id: string; status: OrderStatus; refund?: RefundView | null; refund_by_merchant?: true };

/**
 * A merchant's move of an order to the status it already has, when the merchant's own move put it there (audit D-1,
 * as the agent's repeated cancel, review RC-3): answered 200 as the first call was, without a second history row or
 * webhook event. The merchant API has no idempotency key, so a retry after a lost answer (a gateway or actor host
 * killed after the turn committed, a timeout) or a double click sends the same request again. Null when this is not
 * such a repeat (the status was reached by the agent, the system or a reconciliation, or the order moved on): the
 * caller applies the move, which keeps its 409.
 *
 * `canceled` answers the cancel's result in its shape: from `pending`, `{order_id, status}`; from `paid` or
 * `fulfilled`, with `refund`: the refund the cancel created (written in the cancel's transaction, so its
 * `created_at` is the cancel event's `at`: transaction time), or null when nothing was left to refund or the order
 * was not captured; an x402 order `refund: null, refund_by_merchant: true`. A cancel's refund still APPROVED (the
 * first call died between its commit and the processor, or the processor threw) is driven now, as a repeated
 * approve does, instead of waiting for the reminder.
 */
export async function merchantRepeatOfMove(ctx: Ctx, order: OrderRow, asked: string, event: OrderEvent): Promise<MerchantMoveAnswer | null> {
  if (order.status !== asked) return null;
  const status = order.status;
  // The refund is matched in SQL: `at` and `created_at` are microseconds, a JS Date only milliseconds.
  const [last] = await ctx.sql<{ from_status: OrderStatus | null; actor: string | null; refund_id: string | null }[]>`
    SELECT e.from_status, CASE WHEN e.data ->> 'canceled_by' = 'merchant' THEN 'merchant' ELSE e.data ->> 'actor' END AS actor,
      (SELECT r.id FROM order_refunds r WHERE r.order_id = e.order_id AND r.store_slug = ${ctx.id} AND r.created_at = e.at
        AND r.idempotency_key IS NULL ORDER BY r.id LIMIT 1) AS refund_id
    FROM order_events e WHERE e.order_id = ${order.id} AND e.type = ${event} AND e.to_status = ${status} ORDER BY e.id DESC LIMIT 1`;
  if (!last || last.actor !== "merchant") return null;
  if (event !== "cancel") return { order_id: order.id, status };
  if (last.from_status === "pending") return { order_id: order.id, status };
  const canceled = { order_id: order.id, status, refund: null };
  const rail = railOfOrder(order.payment_rail);
  if (order.capture_ref === null || rail === null) return canceled;
  if (rail === "x402") return { ...canceled, refund_by_merchant: true };
  if (last.refund_id === null) return canceled;
  const after = await driveRefund(ctx, last.refund_id);
  await disarmRedriveIfIdle(ctx);
  return { ...canceled, refund: refundView(after) };
}

/**
 * Gives the units a canceled order sold back to the stock (audit A1 L2), in the cancel's transaction: its committed
 * reservations (what the capture took off: tracked products' units and tracked variants' units, untracked ones were
 * never held) are marked `returned` (migration 0035), so a replay adds nothing, and their units are added to the
 * product rows, saturating at MAX_STOCK_QUANTITY (the merchant may have set the stock near it since the sale; migration
 * 0103 does the same for variants). A product sold to 0 is in stock again; untracked stock stays untracked. Returns the products whose
 * stock changed (to reindex).
 */
export async function returnSoldStock(tx: Sql, slug: string, orderId: string): Promise<string[]> {
  const rows = await tx<{ lines: { productId: string; quantity: number; variants?: Record<string, number> }[] }[]>`
    UPDATE stock_reservations SET status = 'returned', updated_at = now()
    WHERE order_id = ${orderId} AND store_slug = ${slug} AND status = 'committed' RETURNING lines`;
  const back = new Map<string, { q: number; v: Record<string, number> }>();
  for (const l of rows.flatMap((r) => r.lines ?? [])) {
    const w = back.get(l.productId) ?? { q: 0, v: {} };
    w.q += l.quantity;
    for (const [id, n] of Object.entries(l.variants ?? {})) w.v[id] = (w.v[id] ?? 0) + n;
    back.set(l.productId, w);
  }
  if (back.size === 0) return [];
  const ids = [...back.keys()];
  const qs = [...back.values()].map((w) => w.q);
  const vqs = [...back.values()].map((w) => JSON.stringify(w.v));
  // Lock order: the product rows first, by id (docs/checkout.md "Lock order"; audit K-4).
  const changed = await tx<{ id: string }[]>`WITH lk AS (SELECT id FROM products WHERE id = ANY(${ids}::uuid[]) ORDER BY id FOR NO KEY UPDATE)
    UPDATE products p SET
      stock_quantity = CASE WHEN p.stock_quantity IS NULL THEN NULL ELSE LEAST(p.stock_quantity::bigint + w.q, ${MAX_STOCK_QUANTITY})::int END,
      in_stock = CASE WHEN p.stock_quantity IS NOT NULL AND p.stock_quantity <= 0 AND w.q > 0 THEN true ELSE p.in_stock END,
      variants = CASE WHEN w.vt::jsonb = '{}'::jsonb THEN p.variants ELSE variant_stock_return(p.variants, w.vt::jsonb) END,
      updated_at = now()
    FROM (SELECT unnest(${ids}::uuid[]) AS id, unnest(${qs}::int[]) AS q, unnest(${vqs}::text[]) AS vt) w
    WHERE (SELECT count(*) FROM lk) >= 0 AND p.id = w.id AND p.store_slug = ${slug} AND (w.q > 0 OR w.vt::jsonb <> '{}'::jsonb)
    RETURNING p.id`;
  return changed.map((r) => r.id);
}

export interface CancelPaidBy {
  actor: "agent" | "merchant";
  agentKeyId: string | null;
  userId: string | null;
  reason: string | null;
  note?: string | null;
}

/**
 * Cancels a captured order (the agent: `paid`; the merchant: `paid` or `fulfilled`) and refunds what is left of its
 * capture, all in the store's turn: the order canceled with its sold units back in stock (`returnSoldStock`), the
 * requests still open (PENDING_APPROVAL, FAILED)
 * superseded, and one APPROVED refund of the refundable remainder (total − REFUNDED − APPROVED in flight, which its
 * own drive settles) committed with the reminder; then the rail the order was paid with, then REFUNDED.
 * x402: the money sits in the merchant's wallet and the service cannot pull it back, so the agent's cancel is
 * refused (409 ORDER_NOT_CANCELLABLE, `details.reason: refund_by_merchant`) before anything is written, and the
 * merchant's cancel is answered with `refund: null, refund_by_merchant: true` (the merchant pays it back itself).
 */
export async function cancelPaidOrder(
  ctx: Ctx,
  order: OrderRow,
  by: CancelPaidBy,
): Promise<{ order_id: string; status: "canceled"; refund: RefundView | null; refund_by_merchant?: true }> {
  const rail = railOfOrder(order.payment_rail);
  const captured = order.capture_ref !== null && rail !== null;
  if (captured && rail === "x402" && by.actor === "agent") {
    throw fail("ORDER_NOT_CANCELLABLE", "An x402 payment is refunded by the merchant from its wallet; ask the merchant to cancel and refund.", {
      status: order.status,
      reason: "refund_by_merchant",
    });
  }
  const tx = await ctx.tx();
  const now = ctx.now();
  const data = by.actor === "merchant" ? { user_id: by.userId, note: by.note ?? null } : { reason: by.reason };
  await moveOrder(tx, order, "cancel", by.actor, now, data);
  const restocked = await returnSoldStock(tx, ctx.id, order.id);
  if (restocked.length) ctx.publish("catalog.changed", { storeSlug: ctx.id, upserted: restocked, removed: [] });
  const open = await tx<{ id: string; status: RefundStatus; amount_minor: number }[]>`
    SELECT id, status, amount_minor FROM order_refunds WHERE order_id = ${order.id} AND status IN ('PENDING_APPROVAL', 'FAILED')`;
  for (const r of open) {
    const to = applyRefundEvent({ status: r.status, amountMinor: Number(r.amount_minor) }, "supersede", "system").status;
    await tx`UPDATE order_refunds SET status = ${to}, updated_at = now() WHERE id = ${r.id} AND status = ${r.status}`;
    await tx`INSERT INTO order_events (order_id, type, data) VALUES (${order.id}, 'refund_rejected', ${tx.json({ actor: "system", refund_id: r.id, reason: "superseded_by_cancel" } as never)})`;
  }
  const canceled = { order_id: order.id, status: "canceled" as const, refund: null };
  if (!captured) return canceled;
  if (rail === "x402") return { ...canceled, refund_by_merchant: true };
  const refunds = await tx<{ status: RefundStatus; amount_minor: number }[]>`SELECT status, amount_minor FROM order_refunds WHERE order_id = ${order.id}`;
  const amount = refundableMinor(orderTotalMinor(order), refundRecordsOf(refunds));
  if (amount <= 0) return canceled;
  const reason = by.reason ?? (by.actor === "agent" ? "order canceled by the agent" : "order canceled by the merchant");
  const [r] = await tx<{ id: string }[]>`INSERT INTO order_refunds (order_id, store_slug, agent_key_id, amount_minor, currency, reason, status, decided_by)
    VALUES (${order.id}, ${ctx.id}, ${order.agent_key_id}, ${amount}, ${order.currency}, ${reason.slice(0, 255)}, 'APPROVED', ${by.actor === "merchant" ? by.userId : null})
    RETURNING id`;
  await armRedrive(ctx);
  // Canceled, APPROVED and the reminder are durable before the processor is called.
  await ctx.checkpoint();
  const after = await driveRefund(ctx, r.id);
  await disarmRedriveIfIdle(ctx);
  return { ...canceled, refund: refundView(after) };
}

/**
 * The reminder: drives every refund of the store still APPROVED (oldest first), each committed on its own, and
 * comes back later (doubling, up to an hour) while some are left.
 */
export const refundReminders = {
  async [REFUND_REMINDER](ctx: Ctx, payload: unknown): Promise<void> {
    const attempt = (payload as { attempt?: number } | null)?.attempt ?? 0;
    const stuck = await ctx.sql<{ id: string }[]>`SELECT id FROM order_refunds WHERE store_slug = ${ctx.id} AND status = 'APPROVED'
      ORDER BY updated_at LIMIT ${REDRIVE_BATCH}`;
    let left = 0;
    for (const r of stuck) {
      if ((await driveRefund(ctx, r.id, true)).status === "APPROVED") left += 1;
      await ctx.checkpoint();
    }
    if (left > 0 || stuck.length === REDRIVE_BATCH) {
      const next = left > 0 ? attempt + 1 : 0;
      await ctx.schedule(REFUND_REMINDER, ctx.now() + redriveDelayMs(next), { attempt: next });
    }
  },
};
