import { describe, expect, test } from "bun:test";
import {
  AGENT_CANCELLABLE,
  ORDER_EVENTS,
  ORDER_STATUSES,
  applyOrderEvent,
  newOrderHeader,
  type OrderActor,
  type OrderHeader,
  type OrderStatus,
} from "../../actors/store/order-machine.ts";
import { ActorError } from "../../actors/runtime/errors.ts";

const T0 = Date.UTC(2025, 0, 1);
const orderIn = (status: OrderStatus): OrderHeader => ({ ...newOrderHeader(T0), status });

function errorOf(fn: () => unknown): ActorError | undefined {
  try {
    fn();
  } catch (e) {
    if (e instanceof ActorError) return e;
    throw e;
  }
  return undefined;
}

// status/event → [next, actors allowed]
const LEGAL: Record<string, [OrderStatus, OrderActor[]]> = {
  "pending/mark_paid": ["paid", ["system"]],
  "pending/cancel": ["canceled", ["agent", "merchant", "system"]],
  "paid/fulfill": ["fulfilled", ["merchant"]],
  "paid/ship": ["shipped", ["merchant"]],
  "paid/cancel": ["canceled", ["merchant"]],
  "paid/refund_partial": ["paid", ["system"]],
  "paid/refund_full": ["refunded", ["system"]],
  "fulfilled/ship": ["shipped", ["merchant"]],
  "fulfilled/cancel": ["canceled", ["merchant"]],
  "fulfilled/refund_partial": ["fulfilled", ["system"]],
  "fulfilled/refund_full": ["refunded", ["system"]],
  "shipped/deliver": ["delivered", ["merchant", "system"]],
  "shipped/refund_partial": ["shipped", ["system"]],
  "shipped/refund_full": ["refunded", ["system"]],
  "delivered/refund_partial": ["delivered", ["system"]],
  "delivered/refund_full": ["refunded", ["system"]],
  "partially_refunded/refund_partial": ["partially_refunded", ["system"]],
  "partially_refunded/refund_full": ["refunded", ["system"]],
  "canceled/refund_partial": ["canceled", ["system"]],
  "canceled/refund_full": ["canceled", ["system"]],
};

describe("order transition table", () => {
  for (const status of ORDER_STATUSES) {
    for (const event of ORDER_EVENTS) {
      for (const actor of ["agent", "merchant", "system"] as const) {
        const legal = LEGAL[`${status}/${event}`];
        if (legal && legal[1].includes(actor)) {
          test(`the ${actor} may ${event} a ${status} order, making it ${legal[0]}`, () => {
            const o = applyOrderEvent(orderIn(status), event, actor, T0 + 5);
            expect(o.status).toBe(legal[0]);
            expect(o.history.at(-1)).toEqual({ at: T0 + 5, event, actor, from: status, to: legal[0] });
          });
        } else {
          const code = actor === "agent" ? (event === "cancel" ? "ORDER_NOT_CANCELLABLE" : "forbidden") : "conflict";
          test(`the ${actor} may not ${event} a ${status} order (${code})`, () => {
            const err = errorOf(() => applyOrderEvent(orderIn(status), event, actor, T0));
            expect(err?.code).toBe(code as never);
            expect(err?.details?.status).toBe(status);
          });
        }
      }
    }
  }
});

describe("order lifecycle", () => {
  test("a new order is pending with an empty history", () => {
    expect(newOrderHeader(T0)).toEqual({ status: "pending", createdAt: T0, deliveredAt: null, history: [] });
  });

  test("an agent may cancel only before fulfilment", () => {
    expect([...AGENT_CANCELLABLE].sort()).toEqual(["pending"]);
  });

  test("an agent cancel after shipping is ORDER_NOT_CANCELLABLE with a 409 and the status", () => {
    const err = errorOf(() => applyOrderEvent(orderIn("shipped"), "cancel", "agent", T0));
    expect(err?.http).toBe(409);
    expect(err?.details).toEqual({ status: "shipped" });
  });

  test("delivery records the delivery time used by the return window", () => {
    let o = newOrderHeader(T0);
    o = applyOrderEvent(o, "mark_paid", "system", T0 + 1);
    o = applyOrderEvent(o, "fulfill", "merchant", T0 + 2);
    o = applyOrderEvent(o, "ship", "merchant", T0 + 3);
    o = applyOrderEvent(o, "deliver", "system", T0 + 4, "carrier scan");
    expect(o.status).toBe("delivered");
    expect(o.deliveredAt).toBe(T0 + 4);
    expect(o.history.map((h) => h.to)).toEqual(["paid", "fulfilled", "shipped", "delivered"]);
    expect(o.history[3].note).toBe("carrier scan");
  });
});
