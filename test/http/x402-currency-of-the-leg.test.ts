/**
 * Review Y-6 (session 17, c9ba83b; the reviewer's test, with the protocols page checked too): x402Availability refused a store by `stores.currency` (USD only), but what
 * x402 settles is the cart's leg, priced in the PRODUCTS' currency, which the catalog lets differ from the store's
 * (ingest checks each product's own ISO code; legRequirements has always checked `leg.currency`). A store whose
 * configured currency is EUR selling USD-priced products, with its x402 wallet configured, took x402 payments for its
 * USD carts before c9ba83b; now every such checkout is 400 PAYMENT_METHOD_NOT_CONFIGURED currency_not_supported and the
 * protocols page says x402 is unusable. (The opposite case, a USD store's EUR cart, is still advertised and refused by
 * legRequirements.) Fixed: availability no longer looks at the store's currency; the protocols entry lists the
 * `currencies` x402 settles and the checkout judges each leg by its own (legRequirements).
 */
import { afterAll, beforeAll, expect, test } from "bun:test";
import { ALL_SCOPES, createKey, login, type TestKey } from "../helpers/agents.ts";
import { startServer, type TestServer } from "../helpers/server.ts";

const SLUG = "qualified-eu-shop"; // stores.currency EUR, payment methods card and x402
const FACILITATOR = "https://facilitator.example";
let srv: TestServer;
let key: TestKey;
let productId: string;

beforeAll(async () => {
  srv = await startServer({ seed: true, config: { X402_FACILITATOR_ALLOWLIST: FACILITATOR, RATE_LIMITS_ENABLED: false } });
  key = await createKey(srv, { scopes: ALL_SCOPES });
  // the operator configures the store's x402 wallet (nothing in the service writes this table), like demo-store's row
  await srv.db.sql`INSERT INTO store_x402_config (store_slug, pay_to, network, asset_address, facilitator_url)
    VALUES (${SLUG}, '0x9965507D1a55bcC2695C58ba16FB37d819B0A4dc', 'eip155:84532', '0x036CbD53842c5426634e7929541eC2318f3dCF7e', NULL)`;
  // no shipping zones: the store ships free, so no destination step before the checkout (docs/checkout.md "Shipping")
  await srv.db.sql`DELETE FROM shipping_zones WHERE store_slug = ${SLUG}`;
  const admin = await login(srv);
  const r = await srv.json(`/api/v1/merchant/stores/${SLUG}/catalog`, {
    method: "PUT",
    headers: { authorization: `Bearer ${admin}` },
    body: { products: [{ externalId: `y6-${crypto.randomUUID()}`, title: "Y6 Travel Mug", category: "Home & Kitchen", price: 12, currency: "USD", stockQuantity: null, inStock: true }] },
  });
  expect(r.status).toBe(200);
  productId = r.body.data.upserted[0].id as string;
}, 120_000);
afterAll(async () => {
  await srv?.stop();
});

test("a USD cart at a store whose own currency is EUR is payable over x402 (a 402 challenge), as its leg is USD", async () => {
  const cart = await srv.json("/api/v1/agent/cart", { method: "POST", headers: key.headers, body: { items: [{ product_id: productId, quantity: 1 }] } });
  expect(cart.status).toBe(201);
  const r = await srv.json("/api/v1/agent/checkout", {
    method: "POST",
    headers: key.headers,
    body: { cartId: cart.body.data.id, payment_rail: "x402", x402_config: { merchant_wallet_address: "0x9965507D1a55bcC2695C58ba16FB37d819B0A4dc", network: "eip155:84532", facilitator_url: FACILITATOR } },
  });
  // was 400 PAYMENT_METHOD_NOT_CONFIGURED, details.reason currency_not_supported, currency EUR (the store's)
  expect(r.body.details?.reason).not.toBe("currency_not_supported");
  expect(r.status).toBe(402);
});

test("the protocols page advertises x402 at that store, with the cart currencies it settles", async () => {
  const pr = await srv.json(`/api/v1/agent/merchants/${SLUG}/protocols`, { headers: key.headers });
  expect(pr.status).toBe(200);
  const x402 = pr.body.data.protocols.find((e: { id: string }) => e.id === "x402");
  expect(x402).toMatchObject({ configured: true, allowed_facilitators: [FACILITATOR], currencies: ["USD"] });
  expect(x402.reason).toBeUndefined();
});
