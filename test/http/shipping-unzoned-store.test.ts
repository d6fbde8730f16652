/**
 * A store with no shipping zones at all (its merchant cleared them with PUT /merchant/stores/{slug}/shipping-zones)
 * ships free in a cart, so the shipping estimate says the same: shippable, cost 0, free shipping, no zone and no
 * delivery window (REST POST /agent/shipping-estimate and MCP get_shipping_rates with product_id). Before, the REST
 * estimate said `shippable: false` and MCP answered STORE_NOT_CONFIGURED while a preview charged nothing for shipping.
 * Through HTTP and MCP against the real server.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { ALL_SCOPES, createKey, login, merchantLogin, type TestKey } from "../helpers/agents.ts";
import { startServer, type TestServer } from "../helpers/server.ts";
import { connect, structured, type Connected } from "../mcp/helpers.ts";

const SLUG = "greenleaf-living";

let srv: TestServer;
let key: TestKey;
let agent: Connected;
let productId: string;
let currency: string;

beforeAll(async () => {
  srv = await startServer({ seed: true, config: { RATE_LIMITS_ENABLED: false } });
  key = await createKey(srv, { scopes: ALL_SCOPES, tier: "ENTERPRISE" });
  const token = await login(srv, merchantLogin(SLUG));
  const cleared = await srv.json(`/api/v1/merchant/stores/${SLUG}/shipping-zones`, { method: "PUT", headers: { authorization: `Bearer ${token}` }, body: { zones: [] } });
  expect(cleared.status).toBe(200);
  const [zones] = await srv.db.sql<{ n: number }[]>`SELECT count(*)::int AS n FROM shipping_zones WHERE store_slug = ${SLUG}`;
  expect(zones!.n).toBe(0);
  const [p] = await srv.db.sql<{ id: string; currency: string }[]>`
    SELECT id, currency FROM products WHERE store_slug = ${SLUG} AND active AND in_stock AND (stock_quantity IS NULL OR stock_quantity >= 5)
      AND variants = '[]'::jsonb ORDER BY price_minor, id LIMIT 1`;
  productId = p!.id;
  currency = p!.currency;
  agent = await connect(srv, { path: `/${SLUG}/mcp`, headers: key.headers });
}, 120_000);
afterAll(async () => {
  await agent?.close();
  await srv?.stop();
});

const post = (path: string, body: unknown) => srv.json(`/api/v1/agent${path}`, { method: "POST", headers: key.headers, body });

const FREE = { shippable: true, zone: null, cost: 0, freeShipping: true, freeShippingOver: null, minDays: null, maxDays: null, estimatedDelivery: null };

describe("a store whose shipping zones were all cleared", () => {
  test("the REST estimate quotes free shipping with no zone, at home and abroad", async () => {
    for (const [countryCode, postalCode] of [["US", "10001"], ["JP", "100-0001"]] as const) {
      const est = await post("/shipping-estimate", { productId, countryCode, postalCode, quantity: 2 });
      expect(est.status).toBe(200);
      expect(est.body.data).toMatchObject({ ...FREE, currency, countryCode, quantity: 2 });
      expect(est.body.data.reason).toBeUndefined();
    }
  });

  test("a preview of the same product, quantity and destination charges the shipping the estimate quoted", async () => {
    const est = await post("/shipping-estimate", { productId, countryCode: "US", postalCode: "10001", quantity: 2 });
    const cart = await post("/cart", { items: [{ product_id: productId, quantity: 2 }] });
    expect(cart.status).toBe(201);
    const pv = await post("/checkout/preview", { cartId: cart.body.data.id, shipping: { country_code: "US", postal_code: "10001" } });
    expect(pv.status, JSON.stringify(pv.body)).toBe(200);
    expect(pv.body.data.merchants[0].merchant_slug ?? SLUG).toBe(SLUG);
    expect(pv.body.data.merchants[0].shipping).toBe(est.body.data.cost);
    expect(est.body.data.freeShipping).toBe(pv.body.data.merchants[0].shipping === 0);
  });

  test("MCP get_shipping_rates with product_id gives the same estimate instead of STORE_NOT_CONFIGURED", async () => {
    const r = await agent.call("get_shipping_rates", { product_id: productId, country_code: "US", postal_code: "10001", quantity: 2 });
    expect(r.isError ?? false).toBe(false);
    expect(structured(r)).toMatchObject({ ...FREE, currency, merchantSlug: SLUG });
  });
});
