/**
 * The merchant's view of its orders and its way out of a capture escalated for a human (audit D6), under
 * /api/v1/merchant/stores/{slug} (Bearer JWT of the store's owner, or an operator; anyone else 404 store_not_found):
 *
 * GET  /orders                      newest first; `status` (or `partly_refunded`: part of the capture refunded),
 *                                   `channel`, `reconciliation=required` (flagged only); integer `limit`, `offset`
 * GET  /orders/{id}                 one order with items, history and refunds; `reconciliation` shows the flag
 * POST /orders/{id}/reconcile       {action: "accept" | "refund"}: accept the capture as the payment (order paid,
 *                                   stock sold, session COMPLETED; a capture other than the total bounds its
 *                                   refunds), or refund it through the rail (one refund record, driven like any
 *                                   refund; once REFUNDED the order canceled, hold released, the session ended:
 *                                   FAILED when another store's leg is unpaid). A processor refusal is 502 and
 *                                   changes nothing else: retry (the same record) or accept. x402:
 *                                   refund_by_merchant. accept is 409 once a refund is APPROVED or REFUNDED.
 *                                   An order with no capture (a leg of nothing): refund cancels it, nothing refunded.
 *                                   x402 `settlement_unknown` (no rpc_url, expired: nobody can tell whether it paid):
 *                                   accept pays it under `x402:<nonce>`, refund releases it (canceled, hold back).
 *                                   Safe to repeat: the decision made answers 200 again, writing nothing; the
 *                                   other decision is 409 conflict (details.resolved_action).
 *
 * The decision is the cart's message (`resolveCapture`): the session and the order move in one cart turn.
 */
import { Elysia, t } from "elysia";
import { cartActor } from "../../actors/cart/index.ts";
import type { ResolveCaptureView } from "../../actors/cart/messages.ts";
import { ActorError, fail } from "../../actors/runtime/errors.ts";
import { listStoreOrders, PARTLY_REFUNDED, storeOrderDetail } from "../../actors/store/merchant-reads.ts";
import { assertStoreWriter } from "../../actors/store/reads.ts";
import { repeatedResolution } from "../../actors/store/reconcile.ts";
import { errorResponses, ok } from "../envelope.ts";
import { userAuth } from "../plugins/auth.ts";
import type { Services } from "../services.ts";
import { strictJsonBody } from "./strict-body.ts";
import { storeSlugSchema } from "../../actors/store/slug.ts";

/** A key it does not have is 400 naming it, as on every merchant write (audit W-7). */
const ReconcileBody = t.Object({ action: t.Union([t.Literal("accept"), t.Literal("refund")]) });

const Slug = storeSlugSchema();
const sec = { security: [{ bearer: [] }] };
/** Statuses, and the one filter that is not (`partly_refunded`; `partially_refunded` is its old name: merchant-reads.ts). */
const ORDER_FILTERS = ["pending", "paid", "fulfilled", "shipped", "delivered", "canceled", "refunded", PARTLY_REFUNDED, "partially_refunded"];

export function merchantReconcileRoutes(svc: Services) {
  return new Elysia({ name: "merchant-reconcile-routes" })
    .use(userAuth(svc))
    .get(
      "/api/v1/merchant/stores/:slug/orders",
      async ({ params, query, user }) => {
        await assertStoreWriter(svc.sql, params.slug, user);
        const limit = query.limit ?? 50;
        const offset = query.offset ?? 0;
        const r = await listStoreOrders(svc.sql, params.slug, { limit, offset, status: query.status, channel: query.channel, reconciliation: query.reconciliation === "required" });
        return ok({ ...r, limit, offset });
      },
      {
        params: t.Object({ slug: Slug }),
        query: t.Object({
          status: t.Optional(t.Union(ORDER_FILTERS.map((s) => t.Literal(s)))),
          channel: t.Optional(t.Union([t.Literal("agent"), t.Literal("human")])),
          reconciliation: t.Optional(t.Literal("required")),
          limit: t.Optional(t.Integer({ minimum: 1, maximum: 200 })),
          offset: t.Optional(t.Integer({ minimum: 0, maximum: 1_000_000 })),
        }),
        response: errorResponses(400, 401, 404),
        detail: {
          tags: ["merchant"],
          summary: "Orders of the store, newest first (reconciliation=required: captures waiting for a decision)",
          description:
            "status filters by status, or partly_refunded: orders with part of their capture refunded (a partial refund keeps the " +
            "fulfilment status; partially_refunded is the old name of this filter). Paged with limit (1-200, default 50) and offset.",
          ...sec,
        },
      },
    )
    .get(
      "/api/v1/merchant/stores/:slug/orders/:id",
      async ({ params, user }) => {
        await assertStoreWriter(svc.sql, params.slug, user);
        const o = await storeOrderDetail(svc.sql, params.slug, params.id.toLowerCase());
        if (!o) throw fail("ORDER_NOT_FOUND", "No order with that id for this store.", { order_id: params.id });
        return ok(o);
      },
      {
        params: t.Object({ slug: Slug, id: t.String({ format: "uuid" }) }),
        response: errorResponses(400, 401, 404),
        detail: { tags: ["merchant"], summary: "One order with items, history, refunds and its reconciliation flag", ...sec },
      },
    )
    .post(
      "/api/v1/merchant/stores/:slug/orders/:id/reconcile",
      async ({ params, body, user }) => {
        await assertStoreWriter(svc.sql, params.slug, user);
        const id = params.id.toLowerCase();
        const [o] = await svc.sql<{ reconciliation: string | null; cart_id: string | null; checkout_session_id: string | null }[]>`
          SELECT reconciliation, cart_id, checkout_session_id FROM orders WHERE id = ${id} AND store_slug = ${params.slug}`;
        if (!o) throw fail("ORDER_NOT_FOUND", "No order with that id for this store.", { order_id: id });
        if (!o.reconciliation || !o.cart_id || !o.checkout_session_id) {
          // A repeat of the decision the merchant made answers it again (helper B, B-6); another decision is 409.
          const again = await repeatedResolution(svc.sql, params.slug, id, body.action);
          if (again) return ok(again);
          throw fail("conflict", "This order is not waiting for reconciliation.", { order_id: id, reconciliation: o.reconciliation });
        }
        let answer: ResolveCaptureView;
        try {
          answer = await svc.actors.ask(cartActor, o.cart_id, "resolveCapture", {
            sessionId: o.checkout_session_id,
            storeSlug: params.slug,
            orderId: id,
            action: body.action,
            userId: user.id,
          });
        } catch (err) {
          // Two requests of one decision at once (a double click, a retry racing a slow answer): the second turn finds
          // the decision made and is answered as a repeat; a refusal of an order still flagged stands.
          if (err instanceof ActorError && (err.code === "conflict" || err.code === "CHECKOUT_SESSION_NOT_FOUND")) {
            const again = await repeatedResolution(svc.sql, params.slug, id, body.action);
            if (again) return ok(again);
          }
          throw err;
        }
        // The buyer's checkout session id is the buyer side of the payment (it embeds the agent's cart id): merchants
        // are not shown it (review RA-4; docs/checkout.md "Payment method"). checkout_status says what the merchant needs.
        const { checkout_session_id: _buyerSide, ...merchantAnswer } = answer;
        return ok(merchantAnswer);
      },
      {
        params: t.Object({ slug: Slug, id: t.String({ format: "uuid" }) }),
        ...strictJsonBody(ReconcileBody),
        response: errorResponses(400, 401, 404, 409, 502),
        detail: { tags: ["merchant"], summary: "Resolve a flagged capture: accept it as paid, or refund it through the rail", ...sec },
      },
    );
}
