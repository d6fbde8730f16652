/**
 * The `order.status_changed` webhook body (docs/webhooks.md) has one builder, `statusChangedPayload`, used by every
 * move that writes it: a merchant's or refund's move (outboxStatusChanged), a captured leg's pending → paid and an
 * ended session's pending → canceled (actors/store/commerce.ts). Its shape is what receivers parse.
 */
import { describe, expect, test } from "bun:test";
import { statusChangedPayload } from "../../actors/store/order-rows.ts";

const T0 = Date.UTC(2026, 10, 22, 15, 4, 5, 678);
const ORDER = "0b7f3c1e-8a2d-4c55-9e61-3f2a1b0c9d8e";

describe("the order.status_changed payload", () => {
  test("carries exactly the fields docs/webhooks.md lists, with the amount in major units and the time in ISO 8601 UTC", () => {
    const p = statusChangedPayload({ orderId: ORDER, merchantSlug: "demo-store", totalMinor: 3394, currency: "USD" }, "pending", "paid", T0);
    expect(p).toEqual({
      event: "order.status_changed",
      timestamp: "2026-11-22T15:04:05.678Z",
      orderId: ORDER,
      merchantSlug: "demo-store",
      fromStatus: "pending",
      toStatus: "paid",
      totalAmount: 33.94,
      currency: "USD",
    });
    expect(Object.keys(p).sort()).toEqual(["currency", "event", "fromStatus", "merchantSlug", "orderId", "timestamp", "toStatus", "totalAmount"]);
  });

  test("converts the total by the currency's own minor unit (JPY has none, BHD has three)", () => {
    const base = { orderId: ORDER, merchantSlug: "tokyo-shop" };
    expect(statusChangedPayload({ ...base, totalMinor: 1500, currency: "JPY" }, "pending", "canceled", T0).totalAmount).toBe(1500);
    expect(statusChangedPayload({ ...base, totalMinor: 12345, currency: "BHD" }, "paid", "refunded", T0).totalAmount).toBe(12.345);
  });

  test("survives the JSON round trip the outbox makes (jsonb) unchanged", () => {
    const p = statusChangedPayload({ orderId: ORDER, merchantSlug: "demo-store", totalMinor: 1, currency: "EUR" }, "paid", "shipped", T0);
    expect(JSON.parse(JSON.stringify(p))).toEqual(p);
    expect(p.totalAmount).toBe(0.01);
  });
});
