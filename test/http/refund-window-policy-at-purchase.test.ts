/**
 * Audit A: the return window a refund request is held to is read from the store's policies as they are now
 * (actors/store/commerce.ts proposeRefund joins stores.policies), not as they were when the buyer approved the order
 * (the preview's state hash covers the store's policy version; its change before payment blocks the checkout). A
 * merchant that shortens its window, or stops accepting returns, after a sale refuses refunds the buyer was promised:
 * an order paid under "returns within 30 days" gets 409 RETURN_WINDOW_EXPIRED the same day.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { ALL_SCOPES, createKey, login, placeOrder, type TestKey } from "../helpers/agents.ts";
import { startServer, type TestServer } from "../helpers/server.ts";

const SHAMPOO = "78be202c-7531-5abc-af67-04c4e6b96b7a"; // demo-store DS-0053, 10.99 USD; demo-store: returns within 30 days
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

const setPolicies = (body: Record<string, unknown>) =>
  srv.json("/api/v1/merchant/stores/demo-store/policies", { method: "PUT", headers: { authorization: `Bearer ${token}` }, body });
const refund = (orderId: string) => srv.json(`/api/v1/agent/orders/${orderId}/refund`, { method: "POST", headers: key.headers, body: { amount: 100 } });

describe("a refund is held to the return policy the order was bought under", () => {
  test("the demo store's policy at purchase is 30 days", async () => {
    const r = await srv.json("/api/v1/agent/merchants/demo-store/return-policy", { headers: key.headers });
    expect(r.status).toBe(200);
    expect(r.body.data.returnWindowDays).toBe(30);
  });

  test("an order delivered 10 days ago under a 30-day window can still be refunded after the store shortens it to 7 days", async () => {
    const orderId = await placeOrder(srv, key, SHAMPOO);
    await srv.db.sql`UPDATE orders SET status = 'delivered', delivered_at = now() - interval '10 days' WHERE id = ${orderId}`;
    expect((await setPolicies({ acceptsReturns: true, returnWindowDays: 7 })).status).toBe(200);
    const r = await refund(orderId);
    expect(r.body.code).toBeUndefined();
    expect(r.status).toBe(201);
    expect(r.body.data.status).toBe("PENDING_APPROVAL");
  });

  test("an order paid today under a 30-day window can still be refunded after the store stops accepting returns", async () => {
    expect((await setPolicies({ acceptsReturns: true, returnWindowDays: 30 })).status).toBe(200);
    const orderId = await placeOrder(srv, key, SHAMPOO);
    expect((await setPolicies({ acceptsReturns: false })).status).toBe(200);
    const r = await refund(orderId);
    expect(r.body.code).toBeUndefined();
    expect(r.status).toBe(201);
  });
});
