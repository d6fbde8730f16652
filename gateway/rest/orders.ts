/**
 * Orders of the calling key: GET /agent/orders/{id} (status, items, append-only event history, refunds) and
 * POST /agent/orders/{orderId}/refund. Another key's order is 404, like a missing one. Reads are row reads
 * (orders are rows the store actor writes); the refund proposal is a `store/<slug>` message.
 */
import { strictJsonBody } from "./strict-body.ts";
import { Elysia, t } from "elysia";
import { cartActor } from "../../actors/cart/index.ts";
import { cancelPendingViaSession, type PendingOrderRef } from "../../actors/cart/cancel-pending.ts";
import { storeCommerce, refundView } from "../../actors/store/commerce.ts";
import type { OrderStatus } from "../../actors/store/order-machine.ts";
import { orderTotalMinor } from "../../actors/store/order-rows.ts";
import { unstorableField } from "../../actors/store/ingest.ts";
import { ActorError, fail } from "../../actors/runtime/errors.ts";
import { toMajor } from "../../search/money.ts";
import { errorResponses, ok } from "../envelope.ts";
import { agentAuth } from "../plugins/auth.ts";
import type { Services } from "../services.ts";
import { optionalObjectBody } from "./optional-body.ts";
import { requestIdempotencyKey } from "./idempotency-key.ts";
import { isUuid } from "../../infra/uuid.ts";

interface OrderRow {
  id: string;
  store_slug: string;
  status: string;
  total_minor: number;
  subtotal_minor: number | null;
  discount_minor: number;
  shipping_minor: number;
  tax_minor: number;
  currency: string;
  payment_rail: string;
  payment_method: string | null;
  coupon_code: string | null;
  capture_ref: string | null;
  simulated: boolean;
  refunded_minor: number;
  captured_minor: number | null;
  checkout_session_id: string | null;
  cart_id: string | null;
  created_at: Date;
  updated_at: Date;
  paid_at: Date | null;
  delivered_at: Date | null;
}

/** The cancel's optional body, also its `strictJsonBody` (a key it does not have is 400 naming it: audit W-7). */
const CancelBody = t.Optional(t.Object({ reason: t.Optional(t.String({ maxLength: 255 })) }));

const RefundBody = t.Optional(
  t.Object({
    amount: t.Optional(t.Integer({ minimum: 1, description: "Integer cents > 0; omit for the full remaining amount." })),
    // Counted in Unicode code points by the store actor (255 max), so no UTF-16 maxLength here.
    reason: t.Optional(t.String({ description: "At most 255 characters." })),
    idempotency_key: t.Optional(t.String({ description: "UUID v4; or the Idempotency-Key header. A retry with the same key and body answers the first refund request." })),
    idempotencyKey: t.Optional(t.String({ description: "The same as idempotency_key (either spelling; both must then be equal)." })),
  }),
);

/** The rail as the checkout reply names it: the stored "MOCK" label is the card rail's simulated payment. */
export function agentRailLabel(stored: string): string {
  return stored === "MOCK" ? "card" : stored;
}

/**
 * An order's `total`/`total_minor` (the order's total from its capture on, `orderTotalMinor`) and `priced_total_minor`
 * (what the checkout priced), for every view an agent or a customer reads (REST and MCP).
 */
export function orderTotals(o: { total_minor: number; captured_minor: number | null; currency: string }) {
  const total = orderTotalMinor(o);
  return { total: toMajor(total, o.currency), total_minor: total, priced_total_minor: Number(o.total_minor) };
}

export async function orderView(svc: Services, id: string, keyId: string) {
  if (!isUuid(id)) throw fail("ORDER_NOT_FOUND", "No such order.");
  const rows = await svc.sql<OrderRow[]>`SELECT id, store_slug, status, total_minor, subtotal_minor, discount_minor, shipping_minor, tax_minor, currency,
      payment_rail, payment_method, coupon_code, capture_ref, simulated, refunded_minor, captured_minor, checkout_session_id, cart_id, created_at, updated_at, paid_at, delivered_at
    FROM orders WHERE id = ${id} AND agent_key_id = ${keyId}`;
  const o = rows[0];
  if (!o) throw fail("ORDER_NOT_FOUND", "No such order.");
  const [items, events, refunds] = await Promise.all([
    svc.sql<{ product_id: string | null; variant_id: string | null; title: string; quantity: number; unit_price_minor: number }[]>`
      SELECT product_id, variant_id, title, quantity, unit_price_minor FROM order_items WHERE order_id = ${id} ORDER BY id`,
    svc.sql<{ id: number; at: Date; type: string; from_status: string | null; to_status: string | null }[]>`
      SELECT id, at, type, from_status, to_status FROM order_events WHERE order_id = ${id} ORDER BY id`,
    svc.sql`SELECT id, order_id, store_slug, status, amount_minor, currency, reason, refund_ref, created_at, updated_at
      FROM order_refunds WHERE order_id = ${id} ORDER BY created_at`,
  ]);
  const c = o.currency;
  return {
    id: o.id,
    order_id: o.id,
    status: o.status,
    merchant_slug: o.store_slug,
    currency: c,
    // What was captured once the merchant accepted another amount (audit A8), as the order's events say it; the
    // breakdown below adds up to the priced total.
    ...orderTotals(o),
    subtotal_minor: o.subtotal_minor === null ? null : Number(o.subtotal_minor),
    discount_minor: Number(o.discount_minor),
    shipping_minor: Number(o.shipping_minor),
    tax_minor: Number(o.tax_minor),
    refunded_minor: Number(o.refunded_minor),
    coupon_code: o.coupon_code,
    // The order row labels the demo store's simulated payments "MOCK" (trust and merchant views count them apart);
    // to the agent the rail is what its checkout said ("card"), and payment_method/simulated say it was MOCK.
    payment_rail: agentRailLabel(o.payment_rail),
    payment_method: o.payment_method,
    capture_reference: o.capture_ref,
    simulated: o.simulated,
    checkout_session_id: o.checkout_session_id,
    cart_id: o.cart_id,
    items: items.map((i) => ({
      product_id: i.product_id,
      variant_id: i.variant_id,
      title: i.title,
      quantity: i.quantity,
      unit_price: toMajor(Number(i.unit_price_minor), c),
      unit_price_minor: Number(i.unit_price_minor),
    })),
    events: events.map((e) => ({ type: e.type, from_status: e.from_status, to_status: e.to_status, at: e.at.toISOString() })),
    refunds: refunds.map((r) => refundView(r as never)),
    created_at: o.created_at.toISOString(),
    updated_at: o.updated_at.toISOString(),
    paid_at: o.paid_at?.toISOString() ?? null,
    delivered_at: o.delivered_at?.toISOString() ?? null,
  };
}

/**
 * Why an agent cannot cancel an order past `pending`, and what it can do instead (REST and MCP answer alike; the way to
 * ask for the money back is named in the caller's protocol: the refund route, or MCP's onx_create_return).
 */
export function notCancellable(orderId: string, status: OrderStatus, rail: string, via: "rest" | "mcp" = "rest"): ActorError {
  if (status === "canceled" || status === "refunded") return fail("ORDER_NOT_CANCELLABLE", `The order is already ${status}.`, { status, order_id: orderId });
  if (rail === "x402") {
    return fail("ORDER_NOT_CANCELLABLE", `The order is ${status}; an agent may cancel only pending orders. An x402 payment is refunded by the merchant from its wallet: ask the merchant.`, {
      status,
      order_id: orderId,
      reason: "refund_by_merchant",
    });
  }
  const route = `POST /api/v1/agent/orders/${orderId}/refund`;
  return fail(
    "ORDER_NOT_CANCELLABLE",
    `The order is ${status}; an agent may cancel only pending orders. To get the money back, request a refund with ${via === "mcp" ? "onx_create_return" : route} (the merchant approves it).`,
    { status, order_id: orderId, ...(via === "mcp" ? { refund_tool: "onx_create_return" } : { refund_route: route }) },
  );
}

/**
 * Whether the order's agent canceled it and nothing was ever charged for it: the order is `canceled`, was never paid
 * (no `paid_at`, no capture, nothing refunded), and its cancel event records `canceled_by: agent` (the store's
 * `cancelOrder`, or the cart's cancel of the session without a store named, i.e. the agent's cancel of its checkout
 * or of this order). An order canceled by the merchant, by expiry, by a reconciliation, or after a capture is not.
 * The agent's cancel answers such an order 200 `canceled` again: a repeated cancel (a client retry, in flight or
 * after the first finished) is idempotent (review RC-3; MCP cancel_order declares idempotentHint).
 */
export async function agentCanceledUnpaid(sql: Services["sql"], orderId: string): Promise<boolean> {
  const [r] = await sql<{ yes: boolean }[]>`
    SELECT o.status = 'canceled' AND o.paid_at IS NULL AND o.capture_ref IS NULL AND o.refunded_minor = 0
      AND EXISTS (SELECT 1 FROM order_events e WHERE e.order_id = o.id AND e.type = 'cancel' AND e.data ->> 'canceled_by' = 'agent') AS yes
    FROM orders o WHERE o.id = ${orderId}`;
  return r?.yes === true;
}

/**
 * An agent's cancel of an order it read `pending` (REST POST /agent/orders/{id}/cancel and MCP cancel_order, one
 * place): through its checkout session in the cart's turn, else at the store; then the order is read again. The
 * payment can win the race (the session completed between the caller's read and the cart's turn): nothing was
 * canceled, and the answer is the refusal of an order read paid first, never success with `status: paid` (audit A1 M1).
 * Success only when the agent's cancel canceled the order and nothing was charged (agentCanceledUnpaid): an order
 * the payment won and the merchant then canceled and refunded reads `canceled` too, and answering that
 * `{status: canceled, refund: null}` told the agent nothing was charged (audit K-3). The cart's cancel of a
 * two-store session succeeds without touching a store's captured leg, so its success says nothing about this order
 * (review RC-1): the decision is read from the order. Otherwise 409 with the current status.
 */
export async function cancelPendingAsAgent(
  svc: Services,
  o: PendingOrderRef & { storeSlug: string; paymentRail: string },
  reason: string,
  via: "rest" | "mcp",
): Promise<{ order_id: string; status: "canceled" }> {
  const viaSession = await cancelPendingViaSession((cartId, b) => svc.actors.ask(cartActor, cartId, "cancel", b), o, { actor: "agent" });
  if (!viaSession) await svc.actors.ask(storeCommerce, o.storeSlug, "cancelOrder", { orderId: o.id, reason });
  if (await agentCanceledUnpaid(svc.sql, o.id)) return { order_id: o.id, status: "canceled" };
  const [now] = await svc.sql<{ status: OrderStatus }[]>`SELECT status FROM orders WHERE id = ${o.id}`;
  throw notCancellable(o.id, now.status, o.paymentRail, via);
}

export function orderRoutes(svc: Services) {
  return new Elysia({ name: "order-routes" })
    .use(agentAuth(svc))
    .get("/api/v1/agent/orders/:id", async ({ params, agent }) => ok(await orderView(svc, params.id, agent.keyId)), {
      params: t.Object({ id: t.String({ format: "uuid" }) }),
      response: errorResponses(400, 401, 403, 404),
      detail: { tags: ["orders"], summary: "Your order: status and append-only event history", security: [{ agentApiKey: [] }] },
    })
    .post(
      "/api/v1/agent/orders/:orderId/cancel",
      async ({ params, body, agent }) => {
        const id = params.orderId.toLowerCase();
        const [o] = await svc.sql<{ store_slug: string; status: OrderStatus; checkout_session_id: string | null; cart_id: string | null; payment_rail: string; reconciliation: string | null }[]>`
          SELECT store_slug, status, checkout_session_id, cart_id, payment_rail, reconciliation FROM orders WHERE id = ${id} AND agent_key_id = ${agent.keyId}`;
        if (!o) throw fail("ORDER_NOT_FOUND", "No such order.");
        const reason = body?.reason ?? "canceled by the agent";
        // Text Postgres cannot store as sent is refused naming the field, not a bare 400 from the write (audit A-4).
        const unstorable = unstorableField(reason, "reason");
        if (unstorable) throw fail("INVALID_ARGUMENT", `reason ${unstorable.message}.`, { field: "reason" });
        // As MCP cancel_order: an agent cancels only a pending order. Money already captured goes back only through
        // the merchant (a refund request it approves, or its own cancel), never on the agent's word alone; a cancel
        // that refunded at once bypassed the merchant's approval and its allowlist block (audit E).
        if (o.status !== "pending") {
          // A repeated cancel of an order this agent's cancel canceled, nothing charged: the same success (RC-3).
          if (o.status === "canceled" && (await agentCanceledUnpaid(svc.sql, id))) return ok({ order_id: id, status: "canceled" as const, refund: null });
          throw notCancellable(id, o.status, o.payment_rail);
        }
        // Through its checkout session, in the cart's turn (actors/cart/cancel-pending.ts, shared with MCP and the merchant).
        const done = await cancelPendingAsAgent(
          svc,
          { id, storeSlug: o.store_slug, cartId: o.cart_id, checkoutSessionId: o.checkout_session_id, agentKeyId: agent.keyId, reconciliation: o.reconciliation, paymentRail: o.payment_rail },
          reason,
          "rest",
        );
        return ok({ ...done, refund: null });
      },
      {
        params: t.Object({ orderId: t.String({ format: "uuid" }) }),
        parse: optionalObjectBody,
        ...strictJsonBody(CancelBody),
        response: errorResponses(400, 401, 403, 404, 409),
        detail: {
          tags: ["orders"],
          summary: "Cancel your pending order (canceled with its checkout session, stock released); a repeat of an agent's cancel of it (nothing charged) answers 200 canceled again; any other status is 409 ORDER_NOT_CANCELLABLE (details.status)",
          description:
            "An agent may cancel only a `pending` order. A paid, fulfilled, shipped or delivered order is 409 ORDER_NOT_CANCELLABLE " +
            "(`details.status`, `details.refund_route`): ask for the money back with POST /api/v1/agent/orders/{orderId}/refund, which " +
            "the merchant approves (an x402 order: `details.reason` refund_by_merchant, the merchant refunds from its wallet). While " +
            "the order's payment runs or its outcome is unknown the answer is 409 with `details.reason` payment_in_progress. A repeated " +
            "cancel of an order your own cancel canceled (nothing charged) answers 200 `canceled` again (idempotent); an order canceled " +
            "by the merchant, by expiry or after a payment is 409 with `details.status` canceled.",
          security: [{ agentApiKey: [] }],
        },
      },
    )
    .post(
      "/api/v1/agent/orders/:orderId/refund",
      async ({ params, body, agent, set, request }) => {
        const id = params.orderId;
        const key = requestIdempotencyKey(request.headers.get("idempotency-key") ?? undefined, body?.idempotency_key, body?.idempotencyKey);
        const rows = isUuid(id) ? await svc.sql<{ store_slug: string }[]>`SELECT store_slug FROM orders WHERE id = ${id} AND agent_key_id = ${agent.keyId}` : [];
        if (!rows[0]) throw fail("ORDER_NOT_FOUND", "No such order.");
        const refund = await svc.actors.ask(storeCommerce, rows[0].store_slug, "proposeRefund", {
          orderId: id.toLowerCase(),
          agentKeyId: agent.keyId,
          ...(body?.amount === undefined ? {} : { amount: body.amount }),
          ...(body?.reason === undefined ? {} : { reason: body.reason }),
          ...(key ? { idempotencyKey: key } : {}),
        });
        set.status = 201;
        return ok(refund);
      },
      {
        params: t.Object({ orderId: t.String({ minLength: 1 }) }),
        parse: optionalObjectBody,
        // an unknown key is 400 naming it: `amount_cents: 500` was dropped and the FULL remaining amount requested
        // (the merchant-side twin is audit W-7; "omitted = full remaining" must mean omitted, not misspelt)
        ...strictJsonBody(RefundBody),
        response: errorResponses(400, 401, 403, 404, 409),
        detail: {
          tags: ["orders"],
          summary: "Request a refund (201 PENDING_APPROVAL; a human merchant decides)",
          description:
            "An order paid over x402 is 403 NOT_ELIGIBLE (`details.reason` refund_by_merchant, nothing written): the money is in the merchant's wallet and " +
            "the service cannot pull it back; the merchant pays the buyer back from its wallet. " +
            "Send an idempotency key (the `Idempotency-Key` header or `idempotency_key`, a UUID v4, scoped to the order) to retry safely: " +
            "the same key with the same amount and reason answers 201 with the first refund request (no second request is created); " +
            "the same key with another amount or reason is 409 IDEMPOTENCY_KEY_CONFLICT (`details.refund_id`). Without a key every call is a new request.",
          security: [{ agentApiKey: [] }],
        },
      },
    );
}
