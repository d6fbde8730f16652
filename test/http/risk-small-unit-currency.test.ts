/**
 * Review R-5 (session 17) of 5d9b565 (audit A-1): the risk gate's amount limits in the currency's major unit had own rows
 * only for small-unit ZERO-decimal currencies; a two-decimal currency whose unit is worth far less than a dollar (IDR,
 * about 16,000 to the dollar) kept 1,000.00 / 10,000.00 / 250.00 of its unit: Rp 160,000 (about USD 10) was
 * AMOUNT_BLOCK, so in enforce mode an IDR store could sell nothing above ~USD 0.63. Now rounded units per dollar for
 * every currency of small unit (actors/payments/risk-gate.ts UNITS_PER_USD).
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { ALL_SCOPES, createKey, login, type TestKey } from "../helpers/agents.ts";
import { startServer, type TestServer } from "../helpers/server.ts";

let srv: TestServer;
let key: TestKey;
let token: string;
beforeAll(async () => {
  srv = await startServer({ seed: true, config: { RATE_LIMITS_ENABLED: false } });
  key = await createKey(srv, { scopes: ALL_SCOPES });
  token = await login(srv);
}, 120_000);
afterAll(async () => {
  await srv?.stop();
});

describe("risk limits in a two-decimal currency of small unit", () => {
  test("an IDR checkout of Rp 160,000 (about USD 10) is neither blocked nor stepped up for its amount", async () => {
    const r0 = await srv.json("/api/v1/merchant/stores/demo-store/catalog", {
      method: "PUT",
      headers: { authorization: `Bearer ${token}` },
      body: { products: [{ externalId: "REVIEW-R-IDR-1", title: "Batik Table Runner", price: 160000, currency: "IDR", stockQuantity: 50, category: "Home" }] },
    });
    expect(r0.status).toBe(200);
    const productId = r0.body.data.upserted[0].id;
    // the demo store has zones: give it a domestic one in IDR so the cart is quoted without a destination
    const z = await srv.json("/api/v1/merchant/stores/demo-store/shipping-zones", {
      method: "PUT",
      headers: { authorization: `Bearer ${token}` },
      body: { zones: [{ name: "US in IDR", countries: ["US"], currency: "IDR", base: 0, minDays: 3, maxDays: 5 }] },
    });
    expect(z.status).toBe(200);
    const cart = await srv.json("/api/v1/agent/cart", { method: "POST", headers: key.headers, body: { items: [{ product_id: productId, quantity: 1 }] } });
    expect(cart.status).toBe(201);
    const r = await srv.json("/api/v1/agent/checkout", { method: "POST", headers: key.headers, body: { cartId: cart.body.data.id, payment_method: "MOCK" } });
    expect(r.status).toBe(200);
    const rules = r.body.data.risk.signals.map((s: { rule_code: string }) => s.rule_code);
    expect(rules).not.toContain("AMOUNT_BLOCK");
    expect(rules).not.toContain("AMOUNT_STEP_UP");
  });
});
