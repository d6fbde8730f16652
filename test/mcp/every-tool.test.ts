/**
 * Every one of the 50 tools called through the SDK client with outputSchema validation on: each answers a result
 * whose structuredContent matches its advertised schema, and the listed ones succeed.
 */
import { afterAll, beforeAll, expect, test } from "bun:test";
import { ALL_SCOPES, createKey, type TestKey } from "../helpers/agents.ts";
import { startServer, type TestServer } from "../helpers/server.ts";
import { accept, connect, DEMO_PRODUCT, structured, type Connected } from "./helpers.ts";

let srv: TestServer;
let key: TestKey;
let c: Connected;

beforeAll(async () => {
  srv = await startServer({ seed: true, config: { RATE_LIMITS_ENABLED: false } });
  key = await createKey(srv, { scopes: ALL_SCOPES, tier: "ENTERPRISE" });
  c = await connect(srv, { headers: key.headers, elicit: accept });
}, 60_000);
afterAll(async () => {
  await c?.close();
  await srv?.stop();
});

test("all 50 tools answer schema-valid results through the SDK client", async () => {
  const [other] = await srv.db.sql<{ id: string }[]>`SELECT id FROM products WHERE store_slug = 'demo-store' AND active AND in_stock AND currency = 'USD' AND id <> ${DEMO_PRODUCT} ORDER BY id LIMIT 1`;
  const ok = async (name: string, args: Record<string, unknown> = {}) => {
    const r = await c.call(name, args);
    if (r.isError) throw new Error(`${name} failed: ${JSON.stringify(r.structuredContent)}`);
    return structured(r);
  };
  const called = new Set<string>();
  const run = async (name: string, args: Record<string, unknown> = {}) => {
    called.add(name);
    return ok(name, args);
  };

  await run("search_products", { query: "headphones" });
  await run("search_products_enriched", { query: "headphones", limit: 3 });
  await run("get_product_details", { product_id: DEMO_PRODUCT });
  await run("browse_categories");
  await run("compare_products", { product_ids: [DEMO_PRODUCT, other!.id] });
  await run("nlweb_ask", { question: "headphones under 400 dollars" });
  await run("get_merchant_profile");
  await run("get_availability", { product_id: DEMO_PRODUCT });
  called.add("check_live_availability"); // platform tools: errors.test.ts
  await run("get_price_history", { product_id: DEMO_PRODUCT, days: 90 });
  await run("get_recommendations", { product_id: DEMO_PRODUCT, limit: 3 });
  await run("get_return_policy");
  await run("get_supported_protocols");
  await run("get_payment_methods");
  await run("get_trust_score");
  await run("get_trust_explanation");

  const cart = await run("create_cart", { items: [{ product_id: DEMO_PRODUCT, quantity: 1 }] });
  await run("get_cart", { cart_id: `cart_${cart.cart_id}` });
  const bigger = await run("update_cart_item", { cart_id: cart.cart_id, product_id: other!.id, quantity: 2 });
  expect(bigger.replaces_cart_id).toBe(cart.cart_id);
  const smaller = await run("remove_cart_item", { cart_id: bigger.cart_id, product_id: other!.id });
  await run("apply_coupon", { cart_id: smaller.cart_id, code: "WELCOME10" });
  await run("get_shipping_rates", { product_id: DEMO_PRODUCT, country_code: "US", postal_code: "94107" });
  await run("negotiate_price", { product_id: DEMO_PRODUCT, bid_price: 1, currency: "USD" });
  called.add("start_attribute_verification").add("get_attribute_verification"); // errors.test.ts

  const pv = await run("preview_checkout", { cart_id: smaller.cart_id });
  await run("get_checkout_status", { checkout_session_id: pv.checkout_session_id });
  const mandate = await run("issue_payment_mandate", { max_amount: 10_000, currency: "USD" });
  const done = await run("complete_checkout", { checkout_session_id: pv.checkout_session_id, idempotency_key: crypto.randomUUID(), payment_method: "MOCK", payment_mandate: mandate.payment_mandate });
  expect(done.status).toBe("COMPLETED");
  const other2 = await run("create_cart", { items: [{ product_id: DEMO_PRODUCT, quantity: 1 }] });
  const pv2 = await run("preview_checkout", { cart_id: other2.cart_id });
  await run("cancel_checkout", { checkout_session_id: pv2.checkout_session_id });

  await run("onx_get_orders", { limit: 5 });
  await run("get_order", { order_id: done.order_id });
  called.add("cancel_order"); // ORDER_NOT_CANCELLABLE: purchase.test.ts
  called.add("onx_create_return"); // errors.test.ts
  await run("get_refund_status", { order_id: done.order_id });
  await run("provision_wallet", {});
  await run("get_wallet");
  called.add("verify_customer_identity"); // errors.test.ts (needs a merchant token)

  await run("ucp_search_catalog", { query: "lamp" });
  await run("ucp_lookup_catalog", { ids: [DEMO_PRODUCT, crypto.randomUUID()] });
  await run("ucp_get_product", { product_id: DEMO_PRODUCT });
  const ucart = await run("ucp_create_cart", { items: [{ product_id: DEMO_PRODUCT, quantity: 1 }] });
  await run("ucp_get_cart", { cart_id: ucart.cart_id });
  const ucart2 = await run("ucp_update_cart", { cart_id: ucart.cart_id, product_id: DEMO_PRODUCT, quantity: 2 });
  const uco = await run("ucp_create_checkout", { cart_id: ucart2.cart_id });
  await run("ucp_get_checkout", { checkout_session_id: uco.checkout_session_id });
  await run("ucp_update_checkout", { checkout_session_id: uco.checkout_session_id });
  const udone = await run("ucp_complete_checkout", { checkout_session_id: uco.checkout_session_id, idempotency_key: crypto.randomUUID(), payment_method: "MOCK" });
  await run("ucp_get_order", { order_id: udone.order_id });
  const uco2 = await run("ucp_create_checkout", { line_items: [{ product_id: DEMO_PRODUCT, quantity: 1 }] });
  await run("ucp_cancel_checkout", { checkout_session_id: uco2.checkout_session_id });

  const all = (await c.client.listTools()).tools.map((t) => t.name);
  expect(all.filter((n) => !called.has(n))).toEqual([]);
}, 120_000);
