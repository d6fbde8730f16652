/**
 * Audit A-8 (session 16): a store whose shipping zones are all in USD (demo-store) and a product it lists in EUR. With a destination,
 * even the store's own country, the cart is refused (403 NOT_ELIGIBLE destination_not_served; the shipping estimate
 * says shippable: false): zones in another currency are "no option" (docs/checkout.md "Shipping"). Without a
 * destination the same cart is quoted free shipping (shipping_quoted: true, 0) and can be paid: the store then owes a
 * shipment its zones do not price, for nothing. The two answers for one cart contradict each other.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { ALL_SCOPES, createKey, login, type TestKey } from "../helpers/agents.ts";
import { startServer, type TestServer } from "../helpers/server.ts";

let srv: TestServer;
let token: string;
let key: TestKey;
let productId: string;
beforeAll(async () => {
  srv = await startServer({ seed: true, config: { RATE_LIMITS_ENABLED: false } });
  key = await createKey(srv, { tier: "ENTERPRISE", scopes: ALL_SCOPES });
  token = await login(srv);
  const r = await srv.json("/api/v1/merchant/stores/demo-store/catalog", {
    method: "PUT",
    headers: { authorization: `Bearer ${token}` },
    body: { products: [{ externalId: "AUDIT-EUR-1", title: "Enamel Espresso Cup", price: 24, currency: "EUR", stockQuantity: 20, category: "Kitchen" }] },
  });
  expect(r.status).toBe(200);
  productId = r.body.data.upserted[0].id;
}, 120_000);
afterAll(async () => {
  await srv?.stop();
});

const newCart = async () =>
  (await srv.json("/api/v1/agent/cart", { method: "POST", headers: key.headers, body: { items: [{ product_id: productId, quantity: 1 }] } })).body.data.id as string;

describe("a cart the store's zones cannot price is not shipped free for lack of a destination", () => {
  test("the store's own country is refused for this product (estimate and preview)", async () => {
    const est = await srv.json("/api/v1/agent/shipping-estimate", { method: "POST", headers: key.headers, body: { productId, countryCode: "US", postalCode: "10001" } });
    expect(est.body.data.shippable).toBe(false);
    const pv = await srv.json("/api/v1/agent/checkout/preview", {
      method: "POST",
      headers: key.headers,
      body: { cartId: await newCart(), shipping: { country_code: "US", postal_code: "10001" } },
    });
    expect(pv.status).toBe(403);
    expect(pv.body.details.reason).toBe("destination_not_served");
  });

  test("without a destination the preview gives the same answer, not free shipping", async () => {
    const pv = await srv.json("/api/v1/agent/checkout/preview", { method: "POST", headers: key.headers, body: { cartId: await newCart() } });
    expect(pv.body.data?.totals?.shipping_minor).toBeUndefined(); // before: 0, shipping_quoted true
    expect(pv.status).toBe(409);
    expect(pv.body.code).toBe("PRECONDITION_NOT_MET");
    expect(pv.body.details.reason).toBe("shipping_destination_required");
  });

  test("a one-call checkout without a destination does not complete", async () => {
    const r = await srv.json("/api/v1/agent/checkout", { method: "POST", headers: key.headers, body: { cartId: await newCart(), payment_method: "MOCK" } });
    expect(r.status).toBe(409); // before: 200 COMPLETED with shipping 0
    expect(r.body.details.reason).toBe("shipping_destination_required");
    expect((await srv.db.sql`SELECT 1 FROM orders WHERE store_slug = 'demo-store' AND currency = 'EUR'`).length).toBe(0);
  });

  test("a store whose zones ship only abroad is not shipped free to an unnamed destination", async () => {
    // brightside-electronics (US) ships only to GB and DE, 29.99 + 3.00 per item, in its own currency
    const z = await srv.json("/api/v1/merchant/stores/brightside-electronics/shipping-zones", {
      method: "PUT",
      headers: { authorization: `Bearer ${token}` },
      body: { zones: [{ name: "International", countries: ["GB", "DE"], currency: "USD", base: 29.99, perItem: 3, minDays: 7, maxDays: 14 }] },
    });
    expect(z.status).toBe(200);
    const CHARGER = "2175690a-af60-5f3a-ba23-b7091aed9157";
    const cart = async () =>
      (await srv.json("/api/v1/agent/cart", { method: "POST", headers: key.headers, body: { items: [{ product_id: CHARGER, quantity: 1 }] } })).body.data.id as string;
    const toGb = await srv.json("/api/v1/agent/checkout/preview", { method: "POST", headers: key.headers, body: { cartId: await cart(), shipping: { country_code: "GB", postal_code: "SW1A 1AA" } } });
    expect(toGb.body.data.totals.shipping_minor).toBe(3299);
    const toUs = await srv.json("/api/v1/agent/checkout/preview", { method: "POST", headers: key.headers, body: { cartId: await cart(), shipping: { country_code: "US", postal_code: "10001" } } });
    expect(toUs.status).toBe(403);
    const r = await srv.json("/api/v1/agent/checkout", { method: "POST", headers: key.headers, body: { cartId: await cart(), payment_method: "tok_approve" } });
    expect(r.status).toBe(409); // before: 200 COMPLETED, shipping 0 (no destination given)
    expect(r.body.code).toBe("PRECONDITION_NOT_MET");
    expect(r.body.details.reason).toBe("shipping_destination_required");
  });
});
