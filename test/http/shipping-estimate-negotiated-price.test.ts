/**
 * Audit A: POST /agent/shipping-estimate decides free shipping on the list price, while the cart of the same key,
 * product, quantity and destination is priced at the key's accepted negotiated price. Below the zone's freeOver the
 * preview charges shipping that the estimate called free. docs/catalog.md "shipping-estimate": "Zone and price are
 * the cart's …, so the estimate is what a preview of that product, quantity and destination charges".
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { ALL_SCOPES, createKey, login, type TestKey } from "../helpers/agents.ts";
import { startServer, type TestServer } from "../helpers/server.ts";

const CHARGER = "2175690a-af60-5f3a-ba23-b7091aed9157"; // brightside-electronics, 30.95 USD; negotiation auto-accepts ≥ 96 %
let srv: TestServer;
let key: TestKey;
beforeAll(async () => {
  srv = await startServer({ seed: true, config: { RATE_LIMITS_ENABLED: false } });
  key = await createKey(srv, { tier: "ENTERPRISE", scopes: ALL_SCOPES });
  const token = await login(srv);
  // one domestic zone, free from 123.00: 4 × 30.95 = 123.80 is free at list price, 4 × 29.75 = 119.00 is not
  const z = await srv.json("/api/v1/merchant/stores/brightside-electronics/shipping-zones", {
    method: "PUT",
    headers: { authorization: `Bearer ${token}` },
    body: { zones: [{ name: "Contiguous US", countries: ["US"], currency: "USD", base: 5.99, perItem: 1, freeOver: 123, minDays: 3, maxDays: 5 }] },
  });
  expect(z.status).toBe(200);
  const n = await srv.json("/api/v1/agent/negotiate", {
    method: "POST",
    headers: key.headers,
    body: { productId: CHARGER, merchantSlug: "brightside-electronics", bidPrice: 29.75, currency: "USD" },
  });
  expect(n.body.data.status).toBe("accepted");
}, 120_000);
afterAll(async () => {
  await srv?.stop();
});

describe("the shipping estimate quotes what the key's preview charges", () => {
  test("with an accepted offer below the free-shipping threshold, estimate and preview agree on the shipping cost", async () => {
    const est = await srv.json("/api/v1/agent/shipping-estimate", {
      method: "POST",
      headers: key.headers,
      body: { productId: CHARGER, countryCode: "US", postalCode: "10001", quantity: 4 },
    });
    expect(est.status).toBe(200);
    const cart = await srv.json("/api/v1/agent/cart", { method: "POST", headers: key.headers, body: { items: [{ product_id: CHARGER, quantity: 4 }] } });
    expect(cart.body.data.items[0].price_source).toBe("negotiated");
    const pv = await srv.json("/api/v1/agent/checkout/preview", {
      method: "POST",
      headers: key.headers,
      body: { cartId: cart.body.data.id, shipping: { country_code: "US", postal_code: "10001" } },
    });
    expect(pv.status).toBe(200);
    expect(pv.body.data.totals.shipping_minor).toBe(999); // 5.99 + 4 × 1.00: 119.00 is below 123.00
    expect(est.body.data.cost).toBe(pv.body.data.totals.shipping);
    expect(est.body.data.freeShipping).toBe(false);
  });
});
