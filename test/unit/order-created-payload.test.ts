/**
 * The `order.created` webhook body (docs/webhooks.md, the spec's payload exactly) has one builder, `createdPayload`,
 * used by the payment leg's statement that creates the order (actors/store/commerce.ts). Its shape is what receivers parse.
 */
import { describe, expect, test } from "bun:test";
import { createdPayload } from "../../actors/store/order-rows.ts";

const T0 = Date.UTC(2026, 10, 22, 15, 4, 5, 678);
const ORDER = "0b7f3c1e-8a2d-4c55-9e61-3f2a1b0c9d8e";

describe("the order.created payload", () => {
  test("carries exactly the fields docs/webhooks.md lists, status pending, the amount in major units and the time in ISO 8601 UTC", () => {
    const p = createdPayload({ orderId: ORDER, merchantSlug: "demo-store", totalMinor: 3394, currency: "USD" }, T0);
    expect(p).toEqual({
      event: "order.created",
      timestamp: "2026-11-22T15:04:05.678Z",
      orderId: ORDER,
      merchantSlug: "demo-store",
      totalAmount: 33.94,
      currency: "USD",
      status: "pending",
    });
    expect(Object.keys(p).sort()).toEqual(["currency", "event", "merchantSlug", "orderId", "status", "timestamp", "totalAmount"]);
  });

  test("converts the total by the currency's own minor unit (JPY has none, BHD has three)", () => {
    const base = { orderId: ORDER, merchantSlug: "tokyo-shop" };
    expect(createdPayload({ ...base, totalMinor: 1500, currency: "JPY" }, T0).totalAmount).toBe(1500);
    expect(createdPayload({ ...base, totalMinor: 12345, currency: "BHD" }, T0).totalAmount).toBe(12.345);
  });

  test("survives the JSON round trip the outbox makes (jsonb) unchanged", () => {
    const p = createdPayload({ orderId: ORDER, merchantSlug: "demo-store", totalMinor: 1, currency: "EUR" }, T0);
    expect(JSON.parse(JSON.stringify(p))).toEqual(p);
    expect(p.totalAmount).toBe(0.01);
  });
});
