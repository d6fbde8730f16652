/**
 * Audit A (session 16): a checkout destination whose country code does not exist ("zz") was answered 403 NOT_ELIGIBLE
 * destination_not_served, as if no merchant shipped there, while the shipping estimate answers the same value 400. A
 * country that does not exist is a mistake in the call: 400 INVALID_ARGUMENT naming the field, on REST and MCP alike
 * (the cart checks it), and the cart keeps no destination.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { ALL_SCOPES, createKey, type TestKey } from "../helpers/agents.ts";
import { startServer, type TestServer } from "../helpers/server.ts";

const SHAMPOO = "78be202c-7531-5abc-af67-04c4e6b96b7a"; // demo-store DS-0053
let srv: TestServer;
let key: TestKey;
beforeAll(async () => {
  srv = await startServer({ seed: true, config: { RATE_LIMITS_ENABLED: false } });
  key = await createKey(srv, { scopes: ALL_SCOPES });
}, 120_000);
afterAll(async () => {
  await srv?.stop();
});

describe("a destination country that does not exist", () => {
  test("is 400 INVALID_ARGUMENT on country_code at preview, and the cart keeps no destination", async () => {
    const cart = await srv.json("/api/v1/agent/cart", { method: "POST", headers: key.headers, body: { items: [{ product_id: SHAMPOO, quantity: 1 }] } });
    expect(cart.status).toBe(201);
    const pv = await srv.json("/api/v1/agent/checkout/preview", { method: "POST", headers: key.headers, body: { cartId: cart.body.data.id, shipping: { country_code: "zz", postal_code: "10001" } } });
    expect(pv.status).toBe(400);
    expect(pv.body.code).toBe("INVALID_ARGUMENT");
    expect(pv.body.details.field).toBe("country_code");
    const read = await srv.json(`/api/v1/agent/cart/${cart.body.data.id}`, { headers: key.headers });
    expect(read.body.data.shipping ?? null).toBeNull();
  });

  test("a real country in lower case is still accepted", async () => {
    const cart = await srv.json("/api/v1/agent/cart", { method: "POST", headers: key.headers, body: { items: [{ product_id: SHAMPOO, quantity: 1 }] } });
    const pv = await srv.json("/api/v1/agent/checkout/preview", { method: "POST", headers: key.headers, body: { cartId: cart.body.data.id, shipping: { country_code: "us", postal_code: "10001" } } });
    expect(pv.status).toBe(200);
    expect(pv.body.data.status).toBe("READY_FOR_PAYMENT");
  });
});
