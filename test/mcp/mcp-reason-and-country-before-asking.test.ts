/**
 * Review R (session 17) of session 16's audit-A fixes: the MCP twins of two REST fixes.
 * - R-3 (A-4 twin): onx_create_return with a reason Postgres cannot store as sent (a lone UTF-16 surrogate; valid
 *   JSON "\ud800") asks the human to approve the refund and only then is refused 400 on reason by the store: the
 *   tool's precheck (returnAmountToAsk) validates the amount and the window but not the reason. A NUL is refused before
 *   the question (the schema's no-NUL pattern, fuzz F2-6); a lone surrogate should be too.
 * - R-4 (508eac1 twin): get_shipping_rates with product_id and a country_code that is no ISO 3166-1 code ("ZZ") answers
 *   200 shippable:false, while the same tool with cart_id, REST's cart preview and REST's shipping estimate answer
 *   400 INVALID_ARGUMENT on country_code.
 */
import { afterAll, beforeAll, expect, test } from "bun:test";
import { placeOrder, type TestKey } from "../helpers/agents.ts";
import type { TestServer } from "../helpers/server.ts";
import { counted, DEMO_PRODUCT, errorOf, startBuyingAgent, structured, type Connected } from "./helpers.ts";

let srv: TestServer;
let key: TestKey;
let agent: Connected;

beforeAll(async () => {
  ({ srv, key, agent } = await startBuyingAgent());
}, 60_000);
afterAll(async () => {
  await agent?.close();
  await srv?.stop();
});

test("R-3: a lone surrogate in a return's reason is INVALID_ARGUMENT on reason before the human is asked", async () => {
  const order = await placeOrder(srv, key, DEMO_PRODUCT);
  const { result, asked } = await counted(agent, () => agent.call("onx_create_return", { order_id: order, reason: "broken \ud800 text" }));
  expect(errorOf(result)).toMatchObject({ code: "INVALID_ARGUMENT", details: { field: "reason" } });
  expect(asked).toBe(0);
  const rows = await srv.db.sql`SELECT id FROM order_refunds WHERE order_id = ${order}`;
  expect(rows.length).toBe(0);
}, 30_000);

test("R-4: get_shipping_rates for a product with a country_code that is no ISO code is INVALID_ARGUMENT on country_code, as with a cart", async () => {
  const cart = structured(await agent.call("create_cart", { items: [{ product_id: DEMO_PRODUCT, quantity: 1 }] }));
  const withCart = await agent.call("get_shipping_rates", { cart_id: cart.cart_id ?? cart.id, country_code: "ZZ", postal_code: "12345" });
  expect(errorOf(withCart)).toMatchObject({ code: "INVALID_ARGUMENT", details: { field: "country_code" } });
  const estimate = await agent.call("get_shipping_rates", { product_id: DEMO_PRODUCT, country_code: "ZZ", postal_code: "12345" });
  expect(estimate.isError).toBe(true);
  expect(errorOf(estimate)).toMatchObject({ code: "INVALID_ARGUMENT", details: { field: "country_code" } });
}, 30_000);
