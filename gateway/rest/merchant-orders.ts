/**
 * Merchant side of orders and refunds (Bearer JWT of the store's owner, or an operator): order status moves,
 * refund review (approve refunds through the rail, reject), and the per-store allowlist of agent keys.
 * A store that is not the caller's reads as 404 store_not_found.
 */
import { Elysia, t } from "elysia";
import { storeCommerce } from "../../actors/store/commerce.ts";
import { listAllowlistPage, listRefundsPage } from "../../actors/store/merchant-reads.ts";
import { assertStoreWriter } from "../../actors/store/reads.ts";
import { unstorableField } from "../../actors/store/ingest.ts";
import { ActorError, fail } from "../../actors/runtime/errors.ts";
import { errorResponses, ok } from "../envelope.ts";
import { userAuth } from "../plugins/auth.ts";
import type { Services } from "../services.ts";
import { isUuid } from "../../infra/uuid.ts";
import { strictJsonBody } from "./strict-body.ts";
import { noBody } from "./optional-body.ts";
import { storeSlugSchema } from "../../actors/store/slug.ts";

const Slug = storeSlugSchema();
const sec = { security: [{ bearer: [] }] };

/**
 * A refusal as the merchant is shown it: without the buyer's checkout session id (ORDER_NOT_CANCELLABLE of a pending
 * order names it for the buyer's own cancel). It embeds the agent's cart id, the buyer side of the payment that
 * merchants are not shown (review RA-4; docs/checkout.md "Payment method").
 */
function withoutBuyerSide(err: unknown): unknown {
  if (!(err instanceof ActorError) || !err.details || !("checkout_session_id" in err.details)) return err;
  const { checkout_session_id: _buyerSide, ...details } = err.details;
  return new ActorError(err.code, err.message, details);
}

const StatusBody = t.Object({
  status: t.Union([t.Literal("fulfilled"), t.Literal("shipped"), t.Literal("delivered"), t.Literal("canceled")]),
  note: t.Optional(t.String({ maxLength: 500 })),
});
const AllowlistBody = t.Object({ status: t.Union([t.Literal("allowed"), t.Literal("blocked")]) });

export function merchantOrderRoutes(svc: Services) {
  return new Elysia({ name: "merchant-order-routes" })
    .use(userAuth(svc))
    .post(
      "/api/v1/merchant/stores/:slug/orders/:id/status",
      async ({ params, body, user }) => {
        await assertStoreWriter(svc.sql, params.slug, user);
        // Text Postgres cannot store as sent (a NUL, a lone surrogate) is refused naming the field, not a bare 400
        // from the write (review R-8: the merchant's twin of audit A-4)
        const unstorable = body.note === undefined ? null : unstorableField(body.note, "note");
        if (unstorable) throw fail("validation_error", `note ${unstorable.message}.`, { location: "body", field: "note" });
        return ok(
          await svc.actors
            .ask(storeCommerce, params.slug, "setOrderStatus", {
              orderId: params.id.toLowerCase(),
              status: body.status,
              userId: user.id,
              ...(body.note ? { note: body.note } : {}),
            })
            .catch((err: unknown) => {
              throw withoutBuyerSide(err);
            }),
        );
      },
      {
        params: t.Object({ slug: Slug, id: t.String({ format: "uuid" }) }),
        // a misspelt `nota` was dropped (audit W-7's class): 400 naming it
        ...strictJsonBody(StatusBody),
        response: errorResponses(400, 401, 404, 409),
        detail: {
          tags: ["merchant"],
          summary: "Move an order (fulfilled, shipped, delivered, canceled)",
          description:
            "canceled on a pending agent order cancels its checkout session (its unpaid orders canceled, stock released); " +
            "while the payment runs or its outcome is unknown it is 409 ORDER_NOT_CANCELLABLE with details.reason payment_in_progress, " +
            "and a captured order waiting for reconciliation is 409 with details.reason reconciliation_required. " +
            "canceled on a paid or fulfilled order refunds what is left of the capture through the rail it was paid with: the answer " +
            "carries refund (REFUNDED, or FAILED with the rail's reason; an interrupted refund stays APPROVED and is driven again); " +
            "an x402 order is canceled with refund null and refund_by_merchant true (the merchant pays it back from its wallet).",
          ...sec,
        },
      },
    )
    .get(
      "/api/v1/merchant/stores/:slug/refunds",
      async ({ params, query, user }) => {
        await assertStoreWriter(svc.sql, params.slug, user);
        const limit = query.limit ?? 50;
        const offset = query.offset ?? 0;
        const page = await listRefundsPage(svc.sql, params.slug, { status: query.status, orderId: query.order_id?.toLowerCase(), limit, offset });
        return ok(page.items, { total: page.total, limit, offset });
      },
      {
        params: t.Object({ slug: Slug }),
        query: t.Object({
          status: t.Optional(t.Union(["PENDING_APPROVAL", "APPROVED", "REJECTED", "REFUNDED", "FAILED"].map((s) => t.Literal(s)))),
          order_id: t.Optional(t.String({ format: "uuid" })),
          limit: t.Optional(t.Integer({ minimum: 1, maximum: 200 })),
          offset: t.Optional(t.Integer({ minimum: 0, maximum: 1_000_000 })),
        }),
        response: errorResponses(400, 401, 404),
        detail: {
          tags: ["merchant"],
          summary: "Refund requests of the store (newest first, paged)",
          description: "Filters: status, order_id. Paged with limit (1-200, default 50) and offset; meta carries total, limit and offset.",
          ...sec,
        },
      },
    )
    .post(
      "/api/v1/merchant/stores/:slug/refunds/:id/:decision",
      async ({ params, user }) => {
        await assertStoreWriter(svc.sql, params.slug, user);
        return ok(await svc.actors.ask(storeCommerce, params.slug, "decideRefund", { refundId: params.id.toLowerCase(), decision: params.decision, userId: user.id }));
      },
      {
        params: t.Object({ slug: Slug, id: t.String({ format: "uuid" }), decision: t.Union([t.Literal("approve"), t.Literal("reject")]) }),
        ...noBody(),
        response: errorResponses(400, 401, 404, 409),
        detail: { tags: ["merchant"], summary: "Approve (refund through the rail) or reject a refund request", ...sec },
      },
    )
    .get(
      "/api/v1/merchant/stores/:slug/allowlist",
      async ({ params, query, user }) => {
        await assertStoreWriter(svc.sql, params.slug, user);
        // Paged like /refunds (audit M-1): every key that ever started a payment here has a binding, none is deleted,
        // and the whole list was the answer (20,000 keys: 3 MB).
        const limit = query.limit ?? 50;
        const offset = query.offset ?? 0;
        const page = await listAllowlistPage(svc.sql, params.slug, { ...(query.status ? { status: query.status } : {}), limit, offset });
        return ok(page.items, { total: page.total, limit, offset });
      },
      {
        params: t.Object({ slug: Slug }),
        query: t.Object({
          status: t.Optional(t.Union([t.Literal("allowed"), t.Literal("blocked")])),
          limit: t.Optional(t.Integer({ minimum: 1, maximum: 200 })),
          offset: t.Optional(t.Integer({ minimum: 0, maximum: 1_000_000 })),
        }),
        response: errorResponses(400, 401, 404),
        detail: {
          tags: ["merchant"],
          summary: "Agent keys bound to the store (newest first, paged)",
          description:
            "A key is bound by its first order at the store. Filter: status (allowed, blocked). " +
            "Paged with limit (1-200, default 50) and offset; meta carries total, limit and offset.",
          ...sec,
        },
      },
    )
    .post(
      "/api/v1/merchant/stores/:slug/allowlist/:keyId",
      async ({ params, body, user }) => {
        await assertStoreWriter(svc.sql, params.slug, user);
        if (!isUuid(params.keyId)) throw fail("INVALID_ARGUMENT", "keyId must be a uuid.", { field: "keyId" });
        return ok(await svc.actors.ask(storeCommerce, params.slug, "setAllowlist", { agentKeyId: params.keyId.toLowerCase(), status: body.status }));
      },
      {
        params: t.Object({ slug: Slug, keyId: t.String() }),
        ...strictJsonBody(AllowlistBody),
        response: errorResponses(400, 401, 404),
        detail: { tags: ["merchant"], summary: "Allow or block an agent key at this store: a blocked key is refused checkout (403 NOT_ELIGIBLE agent_blocked_by_merchant) and refund requests; its unpaid checkouts at this store are canceled, and a payment waiting for the buyer is refused when it resumes", ...sec },
      },
    );
}
