/**
 * What an ACP/UCP session shows and allows, read from its cart on every request instead of from what the bridge
 * wrote down after its last call (audits Y1, Y3, Y5): the cart's live checkout status (a refused or failed complete,
 * a capture escalated for the merchant, a REST cancel all change it without the bridge writing anything), and the
 * orders of the cart that are already paid (a multi-store attempt that captured some stores and rolled back the
 * others, whose paid stores stay paid).
 */
import { cartActor } from "../../actors/cart/index.ts";
import type { CartView } from "../../actors/cart/messages.ts";
import { ActorError, fail } from "../../actors/runtime/errors.ts";
import type { Services } from "../services.ts";
import { toMajor } from "../../actors/store/schemas.ts";
import { getCart, type BridgeSession } from "./common.ts";
import { sessionShipping } from "./shipping.ts";

/**
 * The cart's orders whose payment was captured (paid or further along), oldest first; empty when none. `awaiting`:
 * pending orders whose capture went through but could not be finalized (`reconciliation` set): the money moved and
 * the merchant decides (review RM-F5); not paid yet, but not to be bought again either.
 */
export interface PaidOrders {
  order_ids: string[];
  completed_store_ids: string[];
  awaiting: { order_ids: string[]; store_ids: string[] };
  /**
   * Orders of the cart a merchant canceled while they were pending (its cancel of the order, or its block of the key:
   * both end the cart's checkout session, recorded `canceled_by: merchant`). The merchant ended the sale: the session
   * is canceled (`merchantCanceled`), never READY_FOR_PAYMENT again (audit B-1).
   */
  canceled_by_merchant: { order_ids: string[]; store_ids: string[] };
}

/** Checkout statuses in which money is moving or may have moved: the session accepts no change. */
const PAYING = new Set(["IN_PROGRESS", "PENDING_EXTERNAL_CONFIRMATION", "SETTLEMENT_UNKNOWN"]);
const ENDED = new Set(["COMPLETED", "FAILED", "EXPIRED", "CANCELED"]);

/**
 * A pending order is not paid (it waits for its leg's capture, or for the merchant's decision on an escalated one),
 * a canceled one never was; every other status was reached through a capture. The same statement finds the orders a
 * merchant canceled while pending (`canceled_by_merchant`: the cancel event the cart's session cancel with a store
 * named records, actors/store/commerce.ts `cancelPendingOrderRows`).
 */
export async function paidOrdersOf(svc: Services, keyId: string, cartId: string): Promise<PaidOrders> {
  const rows = await svc.sql<{ id: string; store_slug: string; status: string }[]>`
    SELECT id::text AS id, store_slug, status FROM orders o
    WHERE cart_id = ${cartId} AND agent_key_id = ${keyId} AND (status NOT IN ('pending', 'canceled') OR (status = 'pending' AND reconciliation IS NOT NULL)
      OR (status = 'canceled' AND EXISTS (SELECT 1 FROM order_events e WHERE e.order_id = o.id AND e.type = 'cancel' AND e.data ->> 'canceled_by' = 'merchant')))
    ORDER BY created_at, store_slug`;
  const paid = rows.filter((r) => r.status !== "pending" && r.status !== "canceled");
  const awaiting = rows.filter((r) => r.status === "pending");
  const canceled = rows.filter((r) => r.status === "canceled");
  return {
    order_ids: paid.map((r) => r.id),
    completed_store_ids: paid.map((r) => r.store_slug),
    awaiting: { order_ids: awaiting.map((r) => r.id), store_ids: awaiting.map((r) => r.store_slug) },
    canceled_by_merchant: { order_ids: canceled.map((r) => r.id), store_ids: canceled.map((r) => r.store_slug) },
  };
}

/**
 * Whether a merchant ended the session (audit B-1): it canceled a pending order of the session's cart, itself or by
 * blocking the agent key (docs/checkout.md "Cancels and money"). The cart's checkout session then ended CANCELED,
 * which a session read alone takes for "complete again" (an ended session is previewed anew by the next complete):
 * that complete would start a new payment and capture a new order at the store that just canceled the sale. Such a
 * session reads canceled and refuses complete and update (SESSION_INACTIVE), as the session's own cancel does. A
 * completed cart stays completed (its paid orders are what the session shows). An expiry of the buyer's approval is
 * not a merchant's cancel: it stays retryable.
 */
export function merchantCanceled(cart: CartView | null, paid: PaidOrders): boolean {
  return cart?.status !== "COMPLETED" && paid.canceled_by_merchant.order_ids.length > 0;
}

/**
 * The cart's refusal of a bridge complete (`checkout` with `refuseAfterMerchantCancel`) because a merchant ended its
 * last checkout session: the merchant's cancel landed after the bridge's own check (`merchantCanceled`) read the
 * orders and before the cart's turn. The bridge answers it as `merchantCanceledRefusal`, with the orders read again.
 */
export function cartRefusedAfterMerchantCancel(err: unknown): boolean {
  return err instanceof ActorError && err.code === "SESSION_INACTIVE" && err.details?.reason === "canceled_by_merchant";
}

/** The refusal of a write (complete, update) on a session its merchant ended (`merchantCanceled`). */
export function merchantCanceledRefusal(s: BridgeSession, paid: PaidOrders): ActorError {
  const c = paid.canceled_by_merchant;
  return fail("SESSION_INACTIVE", `The checkout session was canceled by the merchant (${listed(c.store_ids, c.order_ids)}); nothing more can be charged in it. Create a new checkout session to buy again.`, {
    checkout_session_id: s.id,
    status: "canceled",
    reason: "canceled_by_merchant",
    store_ids: c.store_ids,
    order_ids: c.order_ids,
  });
}

/**
 * Our checkout status the session is in, for the protocol's status mapping: the cart's live checkout session's; with
 * none live (never previewed, or ended without paying everything), what the next complete does, which previews the
 * cart again: READY_FOR_PAYMENT, or OPEN while the shipping still needs an address or a pick.
 */
export function liveCheckoutStatus(s: BridgeSession, cart: CartView): string {
  if (cart.status === "COMPLETED") return "COMPLETED";
  const live = cart.checkout_status;
  if (live && !ENDED.has(live)) return live;
  return sessionShipping(s).missing ? "OPEN" : "READY_FOR_PAYMENT";
}

/** Whether the cart's checkout session is live (not ended): only a live one has unpaid orders a cancel would end. */
export function cartSessionLive(cart: CartView): boolean {
  return cart.checkout_session_id !== null && cart.checkout_status !== null && !ENDED.has(cart.checkout_status);
}

/**
 * An update is refused while a payment of the session runs or awaits its outcome (`payment_in_progress`), and an
 * items or shipping update once a merchant of the cart is paid (`merchant_already_paid`): new items move the session
 * to a new cart, which holds every store again, so its next complete would charge the paid merchant a second time
 * (audit Y1). Completing the session pays the remaining stores only (the paid legs carry over within the cart), on
 * the shipping the paid stores were paid with: the cart refuses a shipping change only while its checkout session
 * is live, so after that session ended (expired, or canceled through REST or MCP) the remaining stores would ship
 * elsewhere (review RM-F7); the bridge refuses it in every state. `buyerDecided`: the session waits for no buyer any
 * more (every approval link decided, index.ts `liveState`), so the refusal says to complete again (review RD-1).
 */
export function assertUpdatable(
  s: BridgeSession,
  cart: CartView,
  paid: PaidOrders,
  change: { items: boolean; shipping: boolean },
  buyerDecided = false,
  foreign = false,
): void {
  const status = cart.checkout_status;
  const details = { checkout_session_id: s.id, status, completed_store_ids: paid.completed_store_ids, order_ids: paid.order_ids };
  if (status === "PENDING_EXTERNAL_CONFIRMATION" && buyerDecided && foreign) {
    // the decided payment is another route's: this session's complete is the cart's key conflict (session 12)
    throw fail("CHECKOUT_ALREADY_IN_PROGRESS", `${foreignDecidedNote(s.protocol === "ucp" ? "ucp" : "acp").content} The session accepts no changes until then.`, {
      ...details,
      reason: "payment_in_progress",
      buyer_decided: true,
    });
  }
  if (status === "PENDING_EXTERNAL_CONFIRMATION" && buyerDecided) {
    // Nothing waits for the buyer any more (review RD-1): the agent's move is the complete, which ends the attempt.
    throw fail(
      "CHECKOUT_ALREADY_IN_PROGRESS",
      "The buyer has decided at the approval link; complete the session again under a new Idempotency-Key (it finishes the payment or answers its refusal) before changing it.",
      { ...details, reason: "payment_in_progress", buyer_decided: true },
    );
  }
  if (status && PAYING.has(status)) {
    // Retryable, so an Idempotency-Key stores nothing for it: the same update is answered anew once the payment has
    // ended (a stored refusal replayed "no changes until it has finished" for good: review RM-F2).
    throw fail(
      "CHECKOUT_ALREADY_IN_PROGRESS",
      `A payment of this checkout session is running or awaiting its outcome (${status}); the session accepts no changes until it has finished.`,
      { ...details, reason: "payment_in_progress" },
    );
  }
  if ((change.items || change.shipping) && paid.order_ids.length > 0) {
    throw fail(
      "CHECKOUT_STATUS_INVALID",
      `${paid.completed_store_ids.join(", ")} ${paid.completed_store_ids.length === 1 ? "is" : "are"} already paid in this checkout session; its ${change.items ? "items" : "shipping"} can no longer change. Complete the session to pay the remaining stores only, or cancel it (the paid stores stay paid) and create a new session.`,
      { ...details, reason: "merchant_already_paid" },
    );
  }
}

/** An info message of a session's view: ACP shows `content`; UCP also `code` and `details`. */
export interface SessionNote {
  code: string;
  content: string;
  details?: Record<string, unknown>;
}

/** How the session stands for its notes: open (completing it pays the rest), canceled, or its cart expired. */
export type SessionEnd = "open" | "canceled" | "expired";

const listed = (stores: string[], orders: string[]) => stores.map((st, i) => `${st} (order ${orders[i]})`).join(", ");

/**
 * The info messages a session's read adds, from its cart's orders: the paid stores of a cart that is not completed
 * (audit Y5), every order of a completed multi-store cart (ACP's `order` has one id: review RM-F4), a capture awaiting
 * the merchant's decision (RM-F5), a cart that expired unpaid (RM-F1), and a merchant's cancel that ended it (B-1).
 */
export function sessionNotes(paid: PaidOrders, cartCompleted: boolean, end: SessionEnd): SessionNote[] {
  const notes: SessionNote[] = [];
  const n = paid.order_ids.length;
  if (cartCompleted && n > 1) {
    notes.push({ code: "order_per_store", content: `Paid as one order per store: ${listed(paid.completed_store_ids, paid.order_ids)}.`, details: { completed_store_ids: paid.completed_store_ids, order_ids: paid.order_ids } });
  } else if (!cartCompleted && n > 0) {
    const one = paid.completed_store_ids.length === 1;
    const rest =
      end === "open"
        ? "completing the session pays the remaining stores only"
        : end === "canceled"
          ? "the other stores were not charged"
          : "the session's cart expired after a day without changes and the other stores were not charged";
    const content = `${paid.completed_store_ids.join(", ")} ${one ? "was" : "were"} paid (order ${paid.order_ids.join(", ")}) and stay${one ? "s" : ""} paid; ${rest}.`;
    notes.push({ code: "merchant_already_paid", content, details: { completed_store_ids: paid.completed_store_ids, order_ids: paid.order_ids } });
  } else if (end === "expired" && paid.awaiting.order_ids.length === 0) {
    notes.push({ code: "session_expired", content: "The session's cart expired after a day without changes; nothing was charged. Create a new session to buy these items." });
  }
  const c = paid.canceled_by_merchant;
  if (!cartCompleted && c.order_ids.length > 0) {
    // the merchant ended the session (`merchantCanceled`): why it reads canceled when the agent canceled nothing
    notes.push({
      code: "canceled_by_merchant",
      content: `The merchant canceled ${listed(c.store_ids, c.order_ids)} before it was paid, which ended this checkout session; nothing was charged for it. Create a new checkout session to buy again.`,
      details: { store_ids: c.store_ids, order_ids: c.order_ids },
    });
  }
  if (paid.awaiting.order_ids.length > 0) {
    const a = paid.awaiting;
    notes.push({
      code: "payment_awaiting_merchant",
      content: `The payment was captured for ${listed(a.store_ids, a.order_ids)} but the order could not be confirmed; the merchant decides (accepts or refunds). Do not pay again.`,
      details: { store_ids: a.store_ids, order_ids: a.order_ids },
    });
  }
  return notes;
}

/** Whether a cart read failed only because the cart expired (its state, and its paid orders, are still there). */
export function cartExpired(err: unknown): boolean {
  return err instanceof ActorError && err.code === "CART_NOT_FOUND" && err.details?.reason === "expired";
}

/**
 * What a session whose cart expired shows, since the cart no longer answers (review RM-F1): the lines and totals of
 * the orders it paid, in the currency recorded on the session when nothing was paid. Null when neither is known (a
 * session written before the currency was recorded, never paid): its read stays the cart's 404.
 */
export async function expiredCartView(svc: Services, s: BridgeSession, paid: PaidOrders): Promise<CartView | null> {
  const ids = [...paid.order_ids, ...paid.awaiting.order_ids];
  const orders = await svc.sql<{ id: string; store_slug: string; currency: string; subtotal_minor: string | null; discount_minor: string; shipping_minor: string; tax_minor: string; total_minor: string }[]>`
    SELECT id::text AS id, store_slug, currency, subtotal_minor::text, discount_minor::text, shipping_minor::text, tax_minor::text, total_minor::text
    FROM orders WHERE id = ANY(${ids}::uuid[]) AND agent_key_id = ${s.agentKeyId} ORDER BY created_at, store_slug`;
  const currency = orders[0]?.currency ?? (typeof s.meta.currency === "string" ? s.meta.currency : null);
  if (!currency) return null;
  const lines = await svc.sql<{ order_id: string; product_id: string | null; variant_id: string | null; title: string; quantity: number; unit_price_minor: string }[]>`
    SELECT order_id::text AS order_id, product_id::text AS product_id, variant_id::text AS variant_id, title, quantity, unit_price_minor::text
    FROM order_items WHERE order_id = ANY(${ids}::uuid[]) ORDER BY id`;
  const store = new Map(orders.map((o) => [o.id, o.store_slug]));
  const sum = (k: "discount_minor" | "shipping_minor" | "tax_minor" | "total_minor") => orders.reduce((a, o) => a + Number(o[k]), 0);
  const money = (minor: number) => toMajor(minor, currency);
  const items = lines.map((l) => {
    const unit = Number(l.unit_price_minor);
    return {
      product_id: l.product_id ?? "",
      variant_id: l.variant_id,
      merchant_slug: store.get(l.order_id) ?? "",
      title: l.title,
      quantity: l.quantity,
      unit_price: money(unit),
      unit_price_minor: unit,
      list_price_minor: unit,
      price_source: "list" as const,
      line_total: money(unit * l.quantity),
      line_total_minor: unit * l.quantity,
    };
  });
  const subtotal = items.reduce((a, l) => a + l.line_total_minor, 0);
  const [discount, shipping, tax, total] = [sum("discount_minor"), sum("shipping_minor"), sum("tax_minor"), sum("total_minor")];
  const at = new Date(0).toISOString();
  return {
    id: s.cartId,
    cart_id: s.cartId,
    status: "EXPIRED",
    revision: 0,
    currency,
    items,
    coupon: null,
    totals: { subtotal: money(subtotal), discount: money(discount), shipping: money(shipping), tax: money(tax), total: money(total), subtotal_minor: subtotal, discount_minor: discount, shipping_minor: shipping, tax_minor: tax, total_minor: total },
    merchants: [...new Set(orders.map((o) => o.store_slug))],
    shipping: null,
    checkout_session_id: null,
    checkout_status: "EXPIRED",
    created_at: at,
    updated_at: at,
    expires_at: at,
  };
}

/** Live checkout statuses the owner may still cancel: nothing is being paid. */
const CANCELABLE = new Set(["OPEN", "READY_FOR_PAYMENT"]);
/** Cart statuses that take no preview and no payment any more. */
const RETIRED = new Set(["ABANDONED", "REPLACED", "EXPIRED"]);

/**
 * Takes a cart out of use: cancels its checkout session while nothing is being paid, then discards it (ABANDONED),
 * so neither the bridge nor REST, MCP or AP2 can preview or pay it afterwards (review RM-F3). A cart already out of
 * use (discarded, replaced, expired) is left as it is. Each step is a cart message, so it runs in the cart's own turn
 * order: a payment that began first makes it refuse (thrown), one that comes after finds the cart closed.
 */
export async function retireCart(svc: Services, keyId: string, cartId: string): Promise<void> {
  let cart: CartView;
  try {
    cart = await getCart(svc, keyId, cartId);
  } catch (err) {
    if (cartExpired(err)) return;
    throw err;
  }
  if (RETIRED.has(cart.status)) return;
  if (cart.status === "CHECKOUT" && cart.checkout_session_id && cart.checkout_status && CANCELABLE.has(cart.checkout_status)) {
    await cancelLiveCartSession(svc, cartId, keyId, cart.checkout_session_id);
  }
  await svc.actors.ask(cartActor, cartId, "discard", { keyId });
}

/**
 * The cart's cancel of a session the cart's view showed live. One that ended since (its expiry passed: the cart ends a
 * due session as EXPIRED first and refuses its cancel SESSION_INACTIVE, as once its timer ran) has nothing left to end,
 * as when the view had shown it ended.
 */
export async function cancelLiveCartSession(svc: Services, cartId: string, keyId: string, sessionId: string): Promise<void> {
  try {
    await svc.actors.ask(cartActor, cartId, "cancel", { keyId, sessionId });
  } catch (err) {
    if (!(err instanceof ActorError && err.code === "SESSION_INACTIVE")) throw err;
  }
}

/**
 * The way on for a session whose cart waits on a payment started through another route of this service (REST, MCP
 * or an AP2 mandate) under that route's own key (index.ts `liveState` tells it from the payment's intent): completing
 * the session is the cart's key conflict while that payment is open, so the session's read must not say to complete
 * again (docs/review.md session 11, "known and left"). The same ways as the conflict's own text
 * (actors/cart/rollback-text.ts `bridgeKeyConflict`), in the protocol's operations.
 */
export function foreignPaymentWayOn(protocol: "acp" | "ucp"): string {
  const route = protocol === "acp" ? "/checkout_sessions" : "/checkout-sessions";
  return (
    "That payment was started through another route of this service (REST, MCP or an AP2 mandate) under that route's own key, so completing this session is refused while it is open. " +
    `Once the buyer has decided, finish it through the route that started it; or cancel this checkout session (POST ${route}/{id}/cancel; a store already paid stays paid) and create a new checkout session (POST ${route}).`
  );
}

/** The note of a session whose cart's buyer decided at every approval link of a payment started through another route. */
export function foreignDecidedNote(protocol: "acp" | "ucp"): SessionNote {
  return {
    code: "payment_started_elsewhere",
    content: `The buyer has decided at the approval link of a payment of this session's cart. ${foreignPaymentWayOn(protocol).replace("Once the buyer has decided, finish", "Finish")}`,
  };
}

/** The note of a session whose cart waits for the buyer's approval of a payment started through another route (UCP: beside continue_url). */
export function foreignWaitingNote(protocol: "acp" | "ucp"): SessionNote {
  return { code: "payment_started_elsewhere", content: `The buyer must approve a payment of this session's cart at the continue_url. ${foreignPaymentWayOn(protocol)}` };
}
