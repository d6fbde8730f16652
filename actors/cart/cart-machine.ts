/**
 * Cart status machine. `CART_TRANSITIONS` is the only way a cart's status changes; every applied event bumps
 * `revision`, so a caller that read revision n and writes with `expectedRevision: n` after someone else wrote
 * gets `CART_NOT_MUTABLE` instead of silently overwriting (optimistic concurrency at the domain level, on top
 * of the fenced durable write).
 *
 * Statuses:
 * - OPEN       items, coupon and shipping choice can change.
 * - CHECKOUT   a checkout session exists; items and coupon are frozen so the preview's state hash keeps meaning what
 *              the agent approved. To change items, cancel the session (or let it expire): the cart returns to OPEN.
 *              The shipping choice may still change while nothing is being paid: the session then needs a new
 *              preview (checkout-machine `shipping_changed`), so no approval ever covers a quote it did not show.
 * - COMPLETED  every store of the cart was paid; terminal.
 *              A session that ends (canceled, expired, failed) after some merchants were paid leaves the cart in
 *              CHECKOUT, so the paid legs carry over into the next preview and are never charged twice; with no live
 *              session the cart is idle again and expires like an OPEN one (isCartExpired, review R5-5), so it never
 *              stays CHECKOUT for ever when the remaining merchants are never paid.
 * - EXPIRED    idle for CART_TTL_MS while OPEN, or while CHECKOUT with its session ended partly paid; terminal (the
 *              spec's CART_NOT_FOUND "or expired").
 * - ABANDONED  discarded by its owner; terminal. (The `checkout.abandoned` webhook is about sessions, not this.)
 * - REPLACED   an edit (MCP update_cart_item / remove_cart_item) made a new cart from this one; terminal. The old id
 *              must not stay payable beside the new one (two open carts for one intent), so every write, preview and
 *              payment is CART_NOT_MUTABLE naming `replacedBy`; reads still answer, with the replacement's id.
 */
import { fail, type ActorError } from "../runtime/errors.ts";
import { MAX_LINE_QUANTITY } from "./messages.ts";

export const CART_STATUSES = ["OPEN", "CHECKOUT", "COMPLETED", "EXPIRED", "ABANDONED", "REPLACED"] as const;
export type CartStatus = (typeof CART_STATUSES)[number];

export const CART_EVENTS = [
  "mutate", // add/remove/change an item, apply or remove a coupon
  "change_shipping", // get_shipping_rates with the cart: destination and chosen shipping option per store
  "start_checkout", // preview_checkout created (or refreshed) the cart's checkout session
  "end_checkout", // the session was canceled, expired or failed without any payment
  "complete", // every store's payment captured
  "expire", // idle past expiresAt
  "discard", // owner threw the cart away
  "replace", // an edit created a new cart in its place (the new id is kept as `replacedBy`)
] as const;
export type CartEvent = (typeof CART_EVENTS)[number];

/**
 * Cart idle lifetime, sliding from the last applied event. 24 h because an agent builds a cart across a
 * conversation and a human confirmation may take hours; a cart holds no stock (stock is reserved only when a
 * payment starts, see inventory.ts), so a long-lived cart costs nothing but a row. It matches the 24 h life of a
 * SANDBOX key, so no cart outlives the shortest-lived key that could make one.
 */
export const CART_TTL_MS = 24 * 60 * 60 * 1000;

export const TERMINAL_CART_STATUSES: ReadonlySet<CartStatus> = new Set(["COMPLETED", "EXPIRED", "ABANDONED", "REPLACED"]);

/** status × event → next status. A missing cell is an illegal move. */
export const CART_TRANSITIONS: Readonly<Record<CartStatus, Readonly<Partial<Record<CartEvent, CartStatus>>>>> = {
  OPEN: { mutate: "OPEN", change_shipping: "OPEN", start_checkout: "CHECKOUT", expire: "EXPIRED", discard: "ABANDONED", replace: "REPLACED" },
  // A live checkout session governs the cart: it never expires under a payment; the session's own expiry
  // sends `end_checkout` first, and the cart may then expire from OPEN. Whether a shipping change is allowed
  // in CHECKOUT is the session's call (only while it is OPEN or READY_FOR_PAYMENT). No `expire` cell: the table cannot
  // tell a live session from an ended one, so the expiry of a CHECKOUT cart whose session ended partly paid is read,
  // like an OPEN cart's, by isCartExpired with the caller saying the session has ended (review R5-5).
  CHECKOUT: { change_shipping: "CHECKOUT", start_checkout: "CHECKOUT", end_checkout: "OPEN", complete: "COMPLETED" },
  COMPLETED: {},
  EXPIRED: {},
  ABANDONED: {},
  REPLACED: {},
};

export interface CartHeader {
  status: CartStatus;
  revision: number;
  updatedAt: number;
  expiresAt: number;
  /** The cart that replaced this one (status REPLACED); absent otherwise. */
  replacedBy?: string;
}

export function newCartHeader(now: number): CartHeader {
  return { status: "OPEN", revision: 1, updatedAt: now, expiresAt: now + CART_TTL_MS };
}

export function nextCartStatus(status: CartStatus, event: CartEvent): CartStatus | undefined {
  return CART_TRANSITIONS[status][event];
}

/**
 * Whether the cart is expired now. `checkoutEnded`: the cart's checkout session has ended (the cart is CHECKOUT only
 * because a merchant was paid in it); such a cart is idle and expires like an OPEN one, while a live session keeps
 * the cart from expiring under a payment.
 */
export function isCartExpired(cart: Pick<CartHeader, "status" | "expiresAt">, now: number, checkoutEnded = false): boolean {
  if (cart.status === "EXPIRED") return true;
  const idle = cart.status === "OPEN" || (cart.status === "CHECKOUT" && checkoutEnded);
  return idle && now >= cart.expiresAt;
}

/**
 * Guard for a cart write. Throws CART_NOT_MUTABLE when the caller's revision is stale, or the cart is
 * completed/expired/abandoned/frozen by a checkout, or idle past its expiry.
 */
export function assertCartMutable(cart: CartHeader, now: number, expectedRevision?: number): void {
  const details = (reason: string): Record<string, unknown> => ({
    reason,
    status: cart.status,
    revision: cart.revision,
    ...(expectedRevision === undefined ? {} : { expected_revision: expectedRevision }),
  });
  // replaced first: a stale revision of a replaced cart is best answered with the cart to use instead
  assertNotReplaced(cart);
  if (expectedRevision !== undefined && expectedRevision !== cart.revision) {
    throw fail("CART_NOT_MUTABLE", "The cart was modified since it was read.", details("stale_revision"));
  }
  if (isCartExpired(cart, now)) {
    throw fail("CART_NOT_MUTABLE", "The cart has expired.", details("expired"));
  }
  if (cart.status !== "OPEN") {
    const reason = cart.status === "CHECKOUT" ? "checkout_in_progress" : cart.status.toLowerCase();
    throw fail("CART_NOT_MUTABLE", `The cart is ${cart.status} and accepts no changes.`, details(reason));
  }
}

/**
 * A replaced cart refuses everything but reads, and says which cart to use instead: an agent that kept the old id
 * learns the new one rather than forking a third cart or paying the stale one.
 */
export function assertNotReplaced(cart: CartHeader): void {
  if (cart.status !== "REPLACED") return;
  throw fail("CART_NOT_MUTABLE", `The cart was replaced by cart ${cart.replacedBy ?? "(unknown)"}; use that cart_id.`, {
    reason: "replaced",
    status: cart.status,
    revision: cart.revision,
    replaced_by_cart_id: cart.replacedBy ?? null,
  });
}

/**
 * Apply one event. `mutate` is guarded by `assertCartMutable`; other illegal moves are CART_NOT_MUTABLE too
 * (409, refresh state) because for a caller they mean the same thing: the cart is not where you thought.
 */
export function applyCartEvent<C extends CartHeader>(cart: C, event: CartEvent, now: number, expectedRevision?: number): C {
  assertNotReplaced(cart);
  if (event === "mutate") assertCartMutable(cart, now, expectedRevision);
  else if (expectedRevision !== undefined && expectedRevision !== cart.revision) {
    throw fail("CART_NOT_MUTABLE", "The cart was modified since it was read.", {
      reason: "stale_revision",
      status: cart.status,
      revision: cart.revision,
      expected_revision: expectedRevision,
    });
  }
  if ((event === "start_checkout" || event === "change_shipping") && isCartExpired(cart, now)) {
    throw fail("CART_NOT_MUTABLE", "The cart has expired.", { reason: "expired", status: cart.status, revision: cart.revision });
  }
  if (event === "expire" && cart.status === "OPEN" && now < cart.expiresAt) {
    // A reminder armed for an older expiresAt must not expire a cart that was touched since.
    throw fail("conflict", "The cart is not due to expire yet.", { reason: "not_due", status: cart.status, expires_at: cart.expiresAt });
  }
  const to = nextCartStatus(cart.status, event);
  if (to === undefined) {
    throw fail("CART_NOT_MUTABLE", `Event ${event} is not allowed on a ${cart.status} cart.`, {
      reason: "illegal_transition",
      status: cart.status,
      event,
      revision: cart.revision,
    });
  }
  return { ...cart, status: to, revision: cart.revision + 1, updatedAt: now, expiresAt: now + CART_TTL_MS };
}

/**
 * The refusal of a cart line asking for more than is available (`available` 0: out of stock). One place for the
 * cart actor's check and the MCP tools' check before the human is asked, so both answer alike.
 */
export function stockShortfall(index: number, productId: string, requested: number, available: number): ActorError {
  return fail("INVALID_ARGUMENT", available === 0 ? "The product is out of stock." : "Not enough stock for this quantity.", {
    field: `items[${index}].quantity`,
    reason: available === 0 ? "out_of_stock" : "stock_insufficient",
    product_id: productId,
    requested,
    available,
  });
}

/**
 * The refusal of a cart line whose repeated items add up past MAX_LINE_QUANTITY (audit R5 MED-2: each item was
 * bounded, their sum was not), or null. `index` is the request index of the line's first item. The message names no
 * request field: the bridges keep it and rewrite only details.field into their own terms. One place for the cart
 * actor's check and the MCP tools' check before the human is asked.
 */
export function mergedLineTooLarge(index: number, productId: string, variantId: string | null, quantity: number): ActorError | null {
  if (quantity <= MAX_LINE_QUANTITY) return null;
  return fail("INVALID_ARGUMENT", `Repeated items of one product and variant add up to one line, whose quantity must be at most ${MAX_LINE_QUANTITY} (these add up to ${quantity}).`, {
    field: `items[${index}].quantity`,
    product_id: productId,
    ...(variantId ? { variant_id: variantId } : {}),
    quantity,
    max_quantity: MAX_LINE_QUANTITY,
  });
}
