/**
 * Session 17 (audit W-7's class on the agent's payment): a checkout body key the route does not have was dropped by
 * the gateway's normaliser, so `paymentMethod: "tok_decline"` (camelCase of payment_method) was ignored and the store's
 * default method charged, as an unknown payment_methods key was before A-10 and an x402 payment without its rail before
 * B-5. Now 400 validation_error naming the key before anything is held; the preview likewise. Bridged bodies (ACP, UCP)
 * keep their own shapes.
 */
import { afterAll, beforeAll, expect, test } from "bun:test";
import { ALL_SCOPES, createKey, type TestKey } from "../helpers/agents.ts";
import { startServer, type TestServer } from "../helpers/server.ts";

const STORE = "maple-pine-home"; // card only, default method tok_approve
let srv: TestServer;
let key: TestKey;
let productId: string;
beforeAll(async () => {
  srv = await startServer({ seed: true, config: { RATE_LIMITS_ENABLED: false } });
  key = await createKey(srv, { scopes: ALL_SCOPES });
  const [p] = await srv.db.sql<{ id: string }[]>`
    SELECT id FROM products WHERE store_slug = ${STORE} AND in_stock AND active AND variants = '[]'::jsonb ORDER BY id LIMIT 1`;
  productId = p!.id;
}, 120_000);
afterAll(async () => {
  await srv?.stop();
});

async function newCart(): Promise<string> {
  const r = await srv.json("/api/v1/agent/cart", { method: "POST", headers: key.headers, body: { items: [{ product_id: productId, quantity: 1 }] } });
  expect(r.status).toBe(201);
  return r.body.data.id;
}

test("a checkout with a misspelt payment_method is 400 naming it, and nothing is charged", async () => {
  const cartId = await newCart();
  const r = await srv.json("/api/v1/agent/checkout", { method: "POST", headers: key.headers, body: { cartId, paymentMethod: "tok_decline" } });
  expect(r.status).toBe(400);
  expect(r.body).toMatchObject({ success: false, code: "validation_error", details: { field: "paymentMethod" } });
  const orders = await srv.db.sql`SELECT id FROM orders WHERE cart_id = ${cartId}`;
  expect(orders).toHaveLength(0);
  const ok = await srv.json("/api/v1/agent/checkout", { method: "POST", headers: key.headers, body: { cartId, payment_method: "tok_approve" } });
  expect(ok.status).toBe(200);
});

test("a preview with an unknown key, or one inside shipping, is 400 naming it", async () => {
  const cartId = await newCart();
  const top = await srv.json("/api/v1/agent/checkout/preview", { method: "POST", headers: key.headers, body: { cartId, expectedRevision: 1 } });
  expect(top.status).toBe(400);
  expect(top.body).toMatchObject({ code: "validation_error", details: { field: "expectedRevision" } });
  const inner = await srv.json("/api/v1/agent/checkout/preview", { method: "POST", headers: key.headers, body: { cartId, shipping: { country_code: "US", postal_code: "10001", optionId: "x" } } });
  expect(inner.status).toBe(400);
  expect(inner.body).toMatchObject({ code: "validation_error", details: { field: "shipping.optionId" } });
});
