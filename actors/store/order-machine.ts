/**
 * Order status machine: one table of moves, each move naming who may make it.
 *
 * An order is written `pending` when its store's payment leg starts (so the `order.created` webhook shows
 * `pending`, as the spec's example does) and moves to `paid` in the same write that records the capture.
 * The agent may only cancel, and only while the order is pending (a paid order is refunded on request, with the
 * merchant's approval); the merchant moves fulfilment forward and may cancel
 * until the parcel ships; the system records payment and refunds. A partial refund leaves the order where it is in
 * its fulfilment (the amount is `refunded_minor`); a full one makes it `refunded`. Refunds of a canceled order are
 * recorded in refund records while the order stays canceled.
 */
import { fail, type ActorError } from "../runtime/errors.ts";

export const ORDER_STATUSES = ["pending", "paid", "fulfilled", "shipped", "delivered", "canceled", "partially_refunded", "refunded"] as const;
export type OrderStatus = (typeof ORDER_STATUSES)[number];

export const ORDER_EVENTS = ["mark_paid", "fulfill", "ship", "deliver", "cancel", "refund_partial", "refund_full"] as const;
export type OrderEvent = (typeof ORDER_EVENTS)[number];

export type OrderActor = "agent" | "merchant" | "system";

interface Move {
  readonly to: OrderStatus;
  readonly by: readonly OrderActor[];
}
const m = (to: OrderStatus, ...by: OrderActor[]): Move => ({ to, by });

/**
 * Refund moves from a fulfilment status: a partial refund keeps the status (the order is still to be fulfilled,
 * shipped, delivered or canceled; the money returned is `orders.refunded_minor`, the refund records and the
 * `refund_partial` history event), a full one ends the order (audit A1 M3: `partially_refunded` used to be a status
 * of its own with no way out, so a partly refunded order could never ship).
 */
const refundable = (status: OrderStatus) => ({ refund_partial: m(status, "system"), refund_full: m("refunded", "system") }) as const;

/** status × event → next status and the actors allowed to make that move. */
export const ORDER_TRANSITIONS: Readonly<Record<OrderStatus, Readonly<Partial<Record<OrderEvent, Move>>>>> = {
  pending: { mark_paid: m("paid", "system"), cancel: m("canceled", "agent", "merchant", "system") },
  paid: {
    fulfill: m("fulfilled", "merchant"),
    ship: m("shipped", "merchant"), // fulfil and ship in one step
    // the merchant only: an agent asks for a refund, which the merchant approves (docs/checkout.md)
    cancel: m("canceled", "merchant"),
    ...refundable("paid"),
  },
  fulfilled: { ship: m("shipped", "merchant"), cancel: m("canceled", "merchant"), ...refundable("fulfilled") },
  shipped: { deliver: m("delivered", "merchant", "system"), ...refundable("shipped") },
  delivered: { ...refundable("delivered") },
  // Legacy: no move enters it any more; migration 0035 put the orders left in it back to their fulfilment status.
  partially_refunded: { ...refundable("partially_refunded") },
  canceled: { refund_partial: m("canceled", "system"), refund_full: m("canceled", "system") },
  refunded: {},
};

/** Statuses an agent may still cancel from. */
export const AGENT_CANCELLABLE: ReadonlySet<OrderStatus> = new Set(
  ORDER_STATUSES.filter((s) => ORDER_TRANSITIONS[s].cancel?.by.includes("agent")),
);

export interface OrderEventRecord {
  at: number;
  event: OrderEvent;
  actor: OrderActor;
  from: OrderStatus;
  to: OrderStatus;
  note?: string;
}

export interface OrderHeader {
  status: OrderStatus;
  createdAt: number;
  deliveredAt: number | null;
  history: OrderEventRecord[];
}

export function newOrderHeader(now: number): OrderHeader {
  return { status: "pending", createdAt: now, deliveredAt: null, history: [] };
}

export function nextOrderStatus(status: OrderStatus, event: OrderEvent, actor: OrderActor): OrderStatus | undefined {
  const move = ORDER_TRANSITIONS[status][event];
  return move && move.by.includes(actor) ? move.to : undefined;
}

/**
 * The refusal of a move the table does not allow from `status`: an agent cancel past the point of no return →
 * ORDER_NOT_CANCELLABLE (details.status); any other agent move → forbidden; any other illegal move → conflict
 * (details.status, event, actor). Also for a caller that finds the move already made by someone else.
 */
export function refusedMove(status: OrderStatus, event: OrderEvent, actor: OrderActor): ActorError {
  if (actor === "agent" && event === "cancel") {
    return fail("ORDER_NOT_CANCELLABLE", `An order that is ${status} can no longer be canceled by an agent.`, { status });
  }
  if (actor === "agent") return fail("forbidden", `An agent may not ${event} an order.`, { status, event });
  return fail("conflict", `${event} is not allowed on a ${status} order.`, { status, event, actor });
}

/**
 * Apply one move. Errors: an agent cancel past the point of no return → ORDER_NOT_CANCELLABLE (details.status);
 * any other agent move → forbidden; any other illegal move → conflict (details.status, event).
 */
export function applyOrderEvent<O extends OrderHeader>(order: O, event: OrderEvent, actor: OrderActor, now: number, note?: string): O {
  const to = nextOrderStatus(order.status, event, actor);
  if (to === undefined) throw refusedMove(order.status, event, actor);
  const record: OrderEventRecord = { at: now, event, actor, from: order.status, to, ...(note === undefined ? {} : { note }) };
  return {
    ...order,
    status: to,
    deliveredAt: event === "deliver" ? now : order.deliveredAt,
    history: [...order.history, record],
  };
}
