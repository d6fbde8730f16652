/**
 * F2-6 (MCP tool fuzz): a NUL in free text the database stores or looks up (a return's or a cancel's reason, a coupon
 * code, a postal code, an attribute's value) was refused by Postgres, for onx_create_return after the human had approved
 * the refund, with the generic "A value in the request is not acceptable" and no details.field. The tools' schemas now
 * carry the REST routes' no-NUL pattern, so it is the argument's INVALID_ARGUMENT, before any question.
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

test("a NUL in a return's reason is INVALID_ARGUMENT on reason before the human is asked", async () => {
  const order = await placeOrder(srv, key, DEMO_PRODUCT);
  const { result, asked } = await counted(agent, () => agent.call("onx_create_return", { order_id: order, reason: "broken\u0000" }));
  expect(errorOf(result)).toMatchObject({ code: "INVALID_ARGUMENT", details: { field: "reason" } });
  expect(asked).toBe(0);
}, 30_000);

test("a NUL in a cancel's reason, a coupon code, a postal code or an attribute value is INVALID_ARGUMENT naming the argument", async () => {
  const cart = structured(await agent.call("create_cart", { items: [{ product_id: DEMO_PRODUCT, quantity: 1 }] }));
  const cases: [string, Record<string, unknown>, string][] = [
    ["cancel_order", { order_id: crypto.randomUUID(), reason: "a\u0000" }, "reason"],
    ["apply_coupon", { cart_id: cart.cart_id, code: "WELCOME10\u0000" }, "code"],
    ["get_shipping_rates", { cart_id: cart.cart_id, country_code: "US", postal_code: "\u0000" }, "postal_code"],
    ["start_attribute_verification", { cart_id: cart.cart_id, attribute: "shipping_country", value: "U\u0000S" }, "value"],
  ];
  for (const [tool, args, field] of cases) {
    const { result, asked } = await counted(agent, () => agent.call(tool, args));
    expect({ tool, ...errorOf(result) }).toMatchObject({ tool, code: "INVALID_ARGUMENT", details: { field } });
    expect(asked).toBe(0);
  }
}, 30_000);
