/**
 * Audit A: the risk gate's amount limits are documented in major units ("amount > 1,000.00", "amount > 250.00" for
 * a new key; docs/checkout.md "Risk gate": per currency, without FX conversion), but actors/payments/risk-gate.ts
 * compares minor units against two-decimal numbers for every currency but JPY and KRW. In a three-decimal currency
 * (KWD, BHD, OMR, JOD, TND, IQD, LYD) every limit is ten times too strict: 30.000 KWD from a new key is stepped up.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { ALL_SCOPES, createKey, login } from "../helpers/agents.ts";
import { startServer, type TestServer } from "../helpers/server.ts";

let srv: TestServer;
let productId: string;
beforeAll(async () => {
  srv = await startServer({ seed: true, config: { RATE_LIMITS_ENABLED: false } });
  const token = await login(srv);
  const r = await srv.json("/api/v1/merchant/stores/demo-store/catalog", {
    method: "PUT",
    headers: { authorization: `Bearer ${token}` },
    body: { products: [{ externalId: "AUDIT-KWD-1", title: "Brass Coffee Dallah", price: 30, currency: "KWD", stockQuantity: 50, category: "Kitchen" }] },
  });
  expect(r.status).toBe(200);
  productId = r.body.data.upserted[0].id;
  // a domestic zone in KWD, so a cart of it is quoted without a destination (a zoned store without one asks for it)
  const z = await srv.json("/api/v1/merchant/stores/demo-store/shipping-zones", {
    method: "PUT",
    headers: { authorization: `Bearer ${token}` },
    body: { zones: [{ name: "US in KWD", countries: ["US"], currency: "KWD", base: 0, minDays: 3, maxDays: 5 }] },
  });
  expect(z.status).toBe(200);
}, 120_000);
afterAll(async () => {
  await srv?.stop();
});

async function buy(quantity: number) {
  const key = await createKey(srv, { scopes: ALL_SCOPES }); // a key younger than an hour
  const cart = await srv.json("/api/v1/agent/cart", { method: "POST", headers: key.headers, body: { items: [{ product_id: productId, quantity }] } });
  expect(cart.status).toBe(201);
  return srv.json("/api/v1/agent/checkout", { method: "POST", headers: key.headers, body: { cartId: cart.body.data.id, payment_method: "MOCK" } });
}

describe("risk amount limits in a three-decimal currency", () => {
  test("a new key's 30.000 KWD checkout is below the documented 250.00 new-key limit and is not stepped up", async () => {
    const r = await buy(1);
    expect(r.status).toBe(200);
    expect(r.body.data.total_minor).toBe(30_000);
    const rules = r.body.data.risk.signals.map((s: { rule_code: string }) => s.rule_code);
    expect(rules).not.toContain("NEW_KEY_HIGH_AMOUNT");
    expect(r.body.data.risk.decision).toBe("allow");
  });

  test("a 120.000 KWD checkout is below the documented 1,000.00 step-up limit", async () => {
    const r = await buy(4);
    expect(r.status).toBe(200);
    const rules = r.body.data.risk.signals.map((s: { rule_code: string }) => s.rule_code);
    expect(rules).not.toContain("AMOUNT_STEP_UP");
  });
});
