/**
 * What an ACP/UCP session shows and allows, read from its cart on every request instead of from what the bridge
 * wrote down after its last call (audits Y1, Y3, Y5): the cart's live checkout status (a refused or failed complete,
 * a capture escalated for the merchant, a REST cancel all change it without the bridge writing anything), and the
 * orders of the cart that are already paid (a multi-store attempt that captured some stores and rolled back the
 * others, whose paid stores stay paid).
 */
import type { CartView } from "../../actors/cart/messages.ts";
import { fail } from "../../actors/runtime/errors.ts";
import type { Services } from "../services.ts";
import type { BridgeSession } from "./common.ts";
import { sessionShipping } from "./shipping.ts";

/** The cart's orders whose payment was captured (paid or further along), oldest first; empty when none. */
export interface PaidOrders {
  order_ids: string[];
  completed_store_ids: string[];
}

/** Checkout statuses in which money is moving or may have moved: the session accepts no change. */
const PAYING = new Set(["IN_PROGRESS", "PENDING_EXTERNAL_CONFIRMATION", "SETTLEMENT_UNKNOWN"]);
const ENDED = new Set(["COMPLETED", "FAILED", "EXPIRED", "CANCELED"]);

/**
 * A pending order is not paid (it waits for its leg's capture, or for the merchant's decision on an escalated one),
 * a canceled one never was; every other status was reached through a capture.
 */
export async function paidOrdersOf(svc: Services, keyId: string, cartId: string): Promise<PaidOrders> {
  const rows = await svc.sql<{ id: string; store_slug: string }[]>`
    SELECT id::text AS id, store_slug FROM orders
    WHERE cart_id = ${cartId} AND agent_key_id = ${keyId} AND status NOT IN ('pending', 'canceled')
    ORDER BY created_at, store_slug`;
  return { order_ids: rows.map((r) => r.id), completed_store_ids: rows.map((r) => r.store_slug) };
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

/**
 * An update is refused while a payment of the session runs or awaits its outcome (`payment_in_progress`), and an
 * items update once a merchant of the cart is paid (`merchant_already_paid`): new items move the session to a new
 * cart, which holds every store again, so its next complete would charge the paid merchant a second time (audit Y1).
 * Completing the session pays the remaining stores only (the paid legs carry over within the cart).
 */
export function assertUpdatable(s: BridgeSession, cart: CartView, paid: PaidOrders, itemsChange: boolean): void {
  const status = cart.checkout_status;
  const details = { checkout_session_id: s.id, status, completed_store_ids: paid.completed_store_ids, order_ids: paid.order_ids };
  if (status && PAYING.has(status)) {
    throw fail(
      "CHECKOUT_STATUS_INVALID",
      `A payment of this checkout session is running or awaiting its outcome (${status}); the session accepts no changes until it has finished.`,
      { ...details, reason: "payment_in_progress" },
    );
  }
  if (itemsChange && paid.order_ids.length > 0) {
    throw fail(
      "CHECKOUT_STATUS_INVALID",
      `${paid.completed_store_ids.join(", ")} ${paid.completed_store_ids.length === 1 ? "is" : "are"} already paid in this checkout session; its items can no longer change. Complete the session to pay the remaining stores only, or cancel it (the paid stores stay paid) and create a new session.`,
      { ...details, reason: "merchant_already_paid" },
    );
  }
}

/** A partly paid session's paid orders, with the sentence its ACP/UCP view adds as an info message. */
export interface PartlyPaid extends PaidOrders {
  note: string;
}

/** The paid part of a cart that is not completed (null when nothing is paid), said for an open or a canceled session. */
export function partlyPaid(paid: PaidOrders, canceled: boolean): PartlyPaid | null {
  if (paid.order_ids.length === 0) return null;
  const one = paid.completed_store_ids.length === 1;
  const rest = canceled ? "the other stores were not charged" : "completing the session pays the remaining stores only";
  const note = `${paid.completed_store_ids.join(", ")} ${one ? "was" : "were"} paid (order ${paid.order_ids.join(", ")}) and stay${one ? "s" : ""} paid; ${rest}.`;
  return { ...paid, note };
}
