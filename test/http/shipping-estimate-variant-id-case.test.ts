/**
 * Review R-9 (session 17): the shipping estimate's variantId (86600f9) was compared as sent, so an upper-case id the
 * cart accepts (it lowercases ids) was 404; now lowercased as the cart's lines are (gateway/rest/products.ts
 * estimateUnitPriceMinor, REST and MCP get_shipping_rates alike).
 */import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { ALL_SCOPES, createKey, type TestKey } from "../helpers/agents.ts";
import { startServer, type TestServer } from "../helpers/server.ts";

let srv: TestServer;
let key: TestKey;
beforeAll(async () => {
  srv = await startServer({ seed: true, config: { RATE_LIMITS_ENABLED: false } });
  key = await createKey(srv, { scopes: ALL_SCOPES });
}, 120_000);
afterAll(async () => {
  await srv?.stop();
});

describe("the estimate's variantId in another letter case", () => {
  const PRODUCT = "1e34ef13-d99e-575f-975a-67ea08dcdf99"; // demo-store, 2 variants
  const VARIANT = "6a1f21a1-9a80-513e-ba2a-90b6295163fd";
  test("an upper-case variant id the cart accepts is estimated, not 404", async () => {
    const cart = await srv.json("/api/v1/agent/cart", { method: "POST", headers: key.headers, body: { items: [{ product_id: PRODUCT, variant_id: VARIANT.toUpperCase(), quantity: 1 }] } });
    expect(cart.status).toBe(201);
    const est = await srv.json("/api/v1/agent/shipping-estimate", {
      method: "POST",
      headers: key.headers,
      body: { productId: PRODUCT, variantId: VARIANT.toUpperCase(), countryCode: "US", postalCode: "10001" },
    });
    expect(est.status).toBe(200);
  });
});
