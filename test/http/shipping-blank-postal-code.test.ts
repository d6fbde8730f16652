/**
 * A destination postal code of white space only is refused (helper D, session 21), as the ACP/UCP bridges refuse it
 * (gateway/bridge/shipping.ts destinationOf). It passed `minLength: 1`, was trimmed to "" on the cart and then matched
 * only country-wide zones: a cart shipped to "no postal code", priced as if anywhere in the country. REST's preview and
 * one-call checkout (`shipping.postal_code`), REST's shipping estimate (`postalCode`) and MCP get_shipping_rates
 * (`postal_code`, with a cart or a product) answer 400 / a tool error naming the field, nothing recorded on the cart.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { ALL_SCOPES, createKey, type TestKey } from "../helpers/agents.ts";
import { startServer, type TestServer } from "../helpers/server.ts";
import { connect, DEMO_PRODUCT, errorOf, type Connected } from "../mcp/helpers.ts";

const BLANK = " \t ";
let srv: TestServer;
let key: TestKey;
let mcp: Connected;

beforeAll(async () => {
  srv = await startServer({ seed: true, config: { RATE_LIMITS_ENABLED: false } });
  key = await createKey(srv, { scopes: ALL_SCOPES, tier: "ENTERPRISE" });
  mcp = await connect(srv, { headers: key.headers });
}, 120_000);
afterAll(async () => {
  await mcp?.close();
  await srv?.stop();
});

async function cart(): Promise<string> {
  const r = await srv.json("/api/v1/agent/cart", { method: "POST", headers: key.headers, body: { items: [{ product_id: DEMO_PRODUCT, quantity: 1 }] } });
  expect(r.status).toBe(201);
  return r.body.data.id;
}
const post = (path: string, body: Record<string, unknown>) => srv.json(path, { method: "POST", headers: key.headers, body });
const cartShipping = async (id: string) => (await srv.json(`/api/v1/agent/cart/${id}`, { headers: key.headers })).body.data?.shipping ?? null;
const refusal = (r: { status: number; body: any }) => ({ status: r.status, success: r.body.success, code: r.body.code, field: r.body.details?.field });

describe("a destination postal code of white space only", () => {
  test("REST preview with it is 400 naming shipping.postal_code, and the cart records no destination", async () => {
    const id = await cart();
    const r = await post("/api/v1/agent/checkout/preview", { cartId: id, shipping: { country_code: "US", postal_code: BLANK } });
    expect(refusal(r)).toEqual({ status: 400, success: false, code: "validation_error", field: "shipping.postal_code" });
    expect(await cartShipping(id)).toBeNull();
    // a real postal code still previews
    const ok = await post("/api/v1/agent/checkout/preview", { cartId: id, shipping: { country_code: "US", postal_code: "94107" } });
    expect(ok.status).toBe(200);
  }, 60_000);

  test("REST one-call checkout with it is 400 naming shipping.postal_code, nothing charged", async () => {
    const id = await cart();
    const r = await post("/api/v1/agent/checkout", { cartId: id, payment_method: "MOCK", idempotency_key: crypto.randomUUID(), shipping: { country_code: "US", postal_code: BLANK } });
    expect(refusal(r)).toEqual({ status: 400, success: false, code: "validation_error", field: "shipping.postal_code" });
    const orders = await srv.db.sql`SELECT 1 FROM orders WHERE cart_id = ${id}`;
    expect(orders.length).toBe(0);
  }, 60_000);

  test("REST shipping estimate with it is 400 naming postalCode", async () => {
    const r = await post("/api/v1/agent/shipping-estimate", { productId: DEMO_PRODUCT, countryCode: "US", postalCode: BLANK });
    expect(refusal(r)).toEqual({ status: 400, success: false, code: "validation_error", field: "postalCode" });
  }, 60_000);

  test("MCP get_shipping_rates with it is a tool error naming postal_code, for a cart (nothing recorded) and for a product", async () => {
    const id = await cart();
    const withCart = errorOf(await mcp.call("get_shipping_rates", { cart_id: id, country_code: "US", postal_code: BLANK }));
    expect({ code: withCart.code, field: withCart.details?.field }).toEqual({ code: "INVALID_ARGUMENT", field: "postal_code" });
    expect(await cartShipping(id)).toBeNull();
    const withProduct = errorOf(await mcp.call("get_shipping_rates", { product_id: DEMO_PRODUCT, country_code: "US", postal_code: BLANK }));
    expect({ code: withProduct.code, field: withProduct.details?.field }).toEqual({ code: "INVALID_ARGUMENT", field: "postal_code" });
    // a NUL is still refused, and a real postal code answers
    const nul = errorOf(await mcp.call("get_shipping_rates", { product_id: DEMO_PRODUCT, country_code: "US", postal_code: "941\u000007" }));
    expect(nul.code).toBe("INVALID_ARGUMENT");
    const ok = await mcp.call("get_shipping_rates", { cart_id: id, country_code: "US", postal_code: " 94107 " });
    expect(ok.isError).toBeFalsy();
  }, 60_000);
});
