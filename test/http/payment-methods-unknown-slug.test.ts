/**
 * Audit A: `payment_methods` names a payment method per merchant of the cart. A key that matches no merchant of the
 * cart (a typo, another letter case: "Brightside-Electronics") is silently ignored, and that merchant is charged with
 * the default instrument instead ("else tok_approve (the sandbox's card on file)", docs/checkout.md "Payment method"):
 * the agent asked for one instrument and the buyer was charged on another. An unknown token is refused before anything
 * is held (400 INVALID_ARGUMENT, details.field payment_methods.<slug>); an unknown merchant key should be too.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { ALL_SCOPES, createKey, type TestKey } from "../helpers/agents.ts";
import { startServer, type TestServer } from "../helpers/server.ts";

const SHAMPOO = "78be202c-7531-5abc-af67-04c4e6b96b7a"; // demo-store
const CHARGER = "2175690a-af60-5f3a-ba23-b7091aed9157"; // brightside-electronics
let srv: TestServer;
let key: TestKey;
beforeAll(async () => {
  srv = await startServer({ seed: true, config: { RATE_LIMITS_ENABLED: false } });
  key = await createKey(srv, { tier: "ENTERPRISE", scopes: ALL_SCOPES });
}, 120_000);
afterAll(async () => {
  await srv?.stop();
});

async function checkout(paymentMethods: Record<string, string>) {
  const cart = await srv.json("/api/v1/agent/cart", {
    method: "POST",
    headers: key.headers,
    body: { items: [{ product_id: SHAMPOO, quantity: 1 }, { product_id: CHARGER, quantity: 1 }] },
  });
  expect(cart.status).toBe(201);
  const r = await srv.json("/api/v1/agent/checkout", { method: "POST", headers: key.headers, body: { cartId: cart.body.data.id, payment_methods: paymentMethods } });
  const paid = await srv.db.sql<{ store_slug: string; payment_method: string | null }[]>`
    SELECT store_slug, payment_method FROM orders WHERE cart_id = ${cart.body.data.id} AND status = 'paid' ORDER BY store_slug`;
  return { r, paid };
}

describe("a payment method named for a merchant the cart does not have is not replaced by the default", () => {
  test("a merchant key in another letter case: brightside is not charged on the card on file", async () => {
    const { r, paid } = await checkout({ "demo-store": "MOCK", "Brightside-Electronics": "tok_decline" });
    expect(paid.filter((o) => o.store_slug === "brightside-electronics")).toEqual([]);
    expect(r.status).toBe(400);
    expect(r.body.code).toBe("INVALID_ARGUMENT");
    expect(r.body.details.field).toBe("payment_methods.Brightside-Electronics");
    expect(r.body.details.reason).toBe("unknown_merchant");
    expect(r.body.details.merchant_slugs).toEqual(["brightside-electronics", "demo-store"]);
  });

  test("a misspelt merchant key is refused before anything is held or charged", async () => {
    const { r, paid } = await checkout({ "demo-store": "MOCK", "brightside-electronic": "tok_decline" });
    expect(r.status).toBe(400);
    expect(r.body.code).toBe("INVALID_ARGUMENT");
    expect(r.body.details.field).toBe("payment_methods.brightside-electronic");
    expect(paid.length).toBe(0);
    const held = await srv.db.sql`SELECT 1 FROM orders o JOIN order_items i ON i.order_id = o.id WHERE o.agent_key_id = ${key.id} AND o.status = 'pending'`;
    expect(held.length).toBe(0);
  });
});
