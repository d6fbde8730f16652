/**
 * Audit A: PUT /merchant/stores/{slug}/policies bumps policy_version even when the body equals the stored policies,
 * and a version change is STATE_EXECUTION_BLOCKED (never reconfirmable) for every previewed checkout of the store.
 * A merchant integration that re-sends its unchanged policies with each sync ends every agent's checkout in flight,
 * though nothing the buyer approved moved (docs/checkout.md "State hash": blocked when "a store's policy version
 * changed" — here it changed without a change).
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { ALL_SCOPES, createKey, login, type TestKey } from "../helpers/agents.ts";
import { startServer, type TestServer } from "../helpers/server.ts";

const SHAMPOO = "78be202c-7531-5abc-af67-04c4e6b96b7a"; // demo-store DS-0053
const POLICIES = { acceptsReturns: true, returnWindowDays: 30, restockingFeePercent: 0, shippingEstimateDays: "3-5", supportResponseTimeSla: "24h" };
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

const SUMMIT_ZONES = {
  zones: [
    { name: "Contiguous US", countries: ["US"], currency: "USD", base: 5.99, perItem: 1, freeOver: 100, minDays: 3, maxDays: 5 },
    { name: "Express", countries: ["US"], currency: "USD", base: 19.99, perItem: 3, minDays: 1, maxDays: 2 },
  ],
};
const putZones = () =>
  srv.json("/api/v1/merchant/stores/summit-sports-co/shipping-zones", { method: "PUT", headers: { authorization: `Bearer ${token}` }, body: SUMMIT_ZONES });
const putPolicies = () => srv.json("/api/v1/merchant/stores/demo-store/policies", { method: "PUT", headers: { authorization: `Bearer ${token}` }, body: POLICIES });

describe("re-sending unchanged policies does not end checkouts in flight", () => {
  test("a previewed checkout completes after the merchant PUTs the same policies again", async () => {
    expect((await putPolicies()).status).toBe(200);
    const cart = await srv.json("/api/v1/agent/cart", { method: "POST", headers: key.headers, body: { items: [{ product_id: SHAMPOO, quantity: 1 }] } });
    const pv = await srv.json("/api/v1/agent/checkout/preview", { method: "POST", headers: key.headers, body: { cartId: cart.body.data.id } });
    expect(pv.body.data.status).toBe("READY_FOR_PAYMENT");
    const again = await putPolicies();
    expect(again.status).toBe(200);
    const r = await srv.json("/api/v1/agent/checkout", {
      method: "POST",
      headers: key.headers,
      body: { cartId: cart.body.data.id, checkout_session_id: pv.body.data.checkout_session_id, payment_method: "MOCK", idempotency_key: crypto.randomUUID() },
    });
    expect(r.body.code).toBeUndefined();
    expect(r.status).toBe(200);
    expect(r.body.data.status).toBe("COMPLETED");
  });

  test("a checkout that picked Express completes after the merchant PUTs the same shipping zones again", async () => {
    expect((await putZones()).status).toBe(200);
    const [p] = await srv.db.sql<{ id: string }[]>`SELECT id FROM products WHERE store_slug = 'summit-sports-co' AND active AND in_stock
      AND jsonb_array_length(variants) = 0 AND stock_quantity IS DISTINCT FROM 0 ORDER BY id LIMIT 1`;
    const cart = await srv.json("/api/v1/agent/cart", { method: "POST", headers: key.headers, body: { items: [{ product_id: p!.id, quantity: 1 }] } });
    const cartId = cart.body.data.id;
    const ask = await srv.json("/api/v1/agent/checkout/preview", { method: "POST", headers: key.headers, body: { cartId, shipping: { country_code: "US", postal_code: "10001" } } });
    expect(ask.body.code).toBe("PRECONDITION_NOT_MET");
    const express = ask.body.details.options.find((o: { name: string }) => o.name === "Express");
    const pv = await srv.json("/api/v1/agent/checkout/preview", {
      method: "POST",
      headers: key.headers,
      body: { cartId, shipping: { country_code: "US", postal_code: "10001", option_id: express.option_id } },
    });
    expect(pv.body.data.status).toBe("READY_FOR_PAYMENT");
    expect((await putZones()).status).toBe(200); // the same two zones, unchanged
    const r = await srv.json("/api/v1/agent/checkout", {
      method: "POST",
      headers: key.headers,
      body: { cartId, checkout_session_id: pv.body.data.checkout_session_id, payment_method: "tok_approve", idempotency_key: crypto.randomUUID() },
    });
    expect(r.body.code).toBeUndefined();
    expect(r.status).toBe(200);
  });

  test("the policy version moves when a buyer-facing policy changes, not for the same policies or negotiation rules alone", async () => {
    const put = (body: unknown) => srv.json("/api/v1/merchant/stores/demo-store/policies", { method: "PUT", headers: { authorization: `Bearer ${token}` }, body });
    const first = await put(POLICIES);
    expect(first.status).toBe(200);
    const v = first.body.data.policyVersion as number;
    expect((await put(POLICIES)).body.data.policyVersion).toBe(v);
    const withRules = await put({ ...POLICIES, negotiation: { enabled: true, floorPercent: 80, autoAcceptPercent: 95, maxRounds: 3, excludedCategories: [] } });
    expect(withRules.status).toBe(200);
    expect(withRules.body.data.policyVersion).toBe(v);
    const shorter = await put({ ...POLICIES, returnWindowDays: 14 });
    expect(shorter.body.data.policyVersion).toBe(v + 1);
    expect((await put(POLICIES)).body.data.policyVersion).toBe(v + 2);
  });

  test("a zone whose terms changed gets a new id and an unchanged one keeps its id", async () => {
    expect((await putZones()).status).toBe(200);
    const ids = async () => Object.fromEntries((await srv.db.sql<{ name: string; id: string }[]>`SELECT name, id FROM shipping_zones WHERE store_slug = 'summit-sports-co'`).map((r) => [r.name, r.id]));
    const before = await ids();
    const changed = { zones: [SUMMIT_ZONES.zones[0], { ...SUMMIT_ZONES.zones[1], base: 21.99 }] };
    const r = await srv.json("/api/v1/merchant/stores/summit-sports-co/shipping-zones", { method: "PUT", headers: { authorization: `Bearer ${token}` }, body: changed });
    expect(r.status).toBe(200);
    const after = await ids();
    expect(after["Contiguous US"]).toBe(before["Contiguous US"]);
    expect(after.Express).toBeDefined();
    expect(after.Express).not.toBe(before.Express);
    expect(Object.keys(after).sort()).toEqual(["Contiguous US", "Express"]);
  });
});
