/**
 * "Cancel a pending order through its checkout session": one function for the agent's cancel (REST
 * POST /agent/orders/{id}/cancel, MCP cancel_order) and the merchant's (the store actor's `setOrderStatus`), so the
 * three answer alike (audit R1-6).
 *
 * A pending agent order belongs to a checkout session, and only the cart may end it: its turn refuses while money
 * may move (the session IN_PROGRESS or SETTLEMENT_UNKNOWN) and otherwise cancels the session's unpaid orders and
 * releases their stock, so no later attempt of the session can charge for a canceled order. The merchant's cancel
 * names its store (`storeSlug`): the cart refuses it while another store's leg is unpaid (reason shared_checkout),
 * since ending the session would cancel that other merchant's order.
 *
 * The caller passes the ask (the store's `ctx.ask`, the gateway's `svc.actors.ask`), so this module imports no actor:
 * the store imports it, and the cart module imports the store's rows.
 */
import { ActorError, fail } from "../runtime/errors.ts";

export interface PendingOrderRef {
  id: string;
  cartId: string | null;
  checkoutSessionId: string | null;
  agentKeyId: string | null;
  /** `orders.reconciliation`: a capture escalated for a human. */
  reconciliation: string | null;
}

/** The cart's `cancel` message, sent to cart `cartId`. */
export type CancelSession = (cartId: string, body: { keyId: string; sessionId: string; storeSlug?: string }) => Promise<unknown>;

export type PendingCancelBy = { actor: "agent" } | { actor: "merchant"; storeSlug: string };

/** `cancel` answers meaning the order's session is no longer live in its cart: the caller cancels the order at the store. */
const SESSION_GONE: ReadonlySet<string> = new Set(["SESSION_INACTIVE", "CHECKOUT_SESSION_NOT_FOUND", "CART_NOT_FOUND"]);

/**
 * Cancels the pending order through its session. True: the cart canceled it. False: the order has no session live
 * in its cart (or none at all), and the caller cancels it at the store (releasing its hold).
 * 409 ORDER_NOT_CANCELLABLE (`details.status: pending`):
 * - a capture waiting for reconciliation: the merchant gets `reason: reconciliation_required` (its way out is the
 *   reconcile route), the agent `payment_in_progress` with `awaiting: merchant_reconciliation` (money moved and
 *   waits for the merchant);
 * - a payment running or awaiting its outcome: `payment_in_progress`;
 * - the merchant's cancel of one store's order in a multi-store checkout still open: `shared_checkout` (the cart's).
 */
export async function cancelPendingViaSession(cancelSession: CancelSession, o: PendingOrderRef, by: PendingCancelBy): Promise<boolean> {
  if (o.reconciliation) {
    throw by.actor === "merchant"
      ? fail("ORDER_NOT_CANCELLABLE", "Money was captured for this order and waits for reconciliation; resolve it instead of canceling.", {
          status: "pending",
          reason: "reconciliation_required",
          reconciliation: o.reconciliation,
        })
      : // Not "ask again when it has finished": only the merchant's decision ends it (review R5 note). The reason
        // stays payment_in_progress (the documented contract); `awaiting` says whose move it is.
        fail("ORDER_NOT_CANCELLABLE", "Money was captured for this order and waits for the merchant's decision (accept or refund); it cannot be canceled until the merchant has decided.", {
          status: "pending",
          reason: "payment_in_progress",
          awaiting: "merchant_reconciliation",
          order_id: o.id,
          checkout_session_id: o.checkoutSessionId,
        });
  }
  if (!o.cartId || !o.checkoutSessionId || !o.agentKeyId) return false;
  try {
    await cancelSession(o.cartId, { keyId: o.agentKeyId, sessionId: o.checkoutSessionId, ...(by.actor === "merchant" ? { storeSlug: by.storeSlug } : {}) });
    return true;
  } catch (err) {
    if (!(err instanceof ActorError)) throw err;
    if (err.code === "CHECKOUT_STATUS_INVALID") throw paymentInProgress(o);
    if (SESSION_GONE.has(err.code)) return false;
    throw err;
  }
}

function paymentInProgress(o: PendingOrderRef): ActorError {
  return fail("ORDER_NOT_CANCELLABLE", "A payment for this order is running or awaiting its outcome; ask again when it has finished.", {
    status: "pending",
    reason: "payment_in_progress",
    order_id: o.id,
    checkout_session_id: o.checkoutSessionId,
  });
}
