/**
 * Review R-7 (session 17) of e7c8e41 (audit A-3): a refund request was judged by the return terms recorded at the
 * purchase alone, so a request the merchant's current terms allow (a 7-day purchase at a store now granting 30 days; a
 * purchase made while the store took no returns, now that it takes them) was refused up front with
 * RETURN_WINDOW_EXPIRED, though both were accepted before e7c8e41 and a refund request is only a request the merchant
 * approves. Now the more generous of the recorded and the current terms (actors/store/commerce.ts
 * refundPolicyColumns); A-3's case (terms shortened after the sale) is test/http/refund-window-policy-at-purchase.test.ts.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { ALL_SCOPES, createKey, login, placeOrder, type TestKey } from "../helpers/agents.ts";
import { startServer, type TestServer } from "../helpers/server.ts";

const SHAMPOO = "78be202c-7531-5abc-af67-04c4e6b96b7a"; // demo-store DS-0053
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

describe("terms lengthened after a sale: a request the merchant's current terms allow", () => {
  const setPolicies = (body: Record<string, unknown>) =>
    srv.json("/api/v1/merchant/stores/demo-store/policies", { method: "PUT", headers: { authorization: `Bearer ${token}` }, body });
  const refund = (orderId: string) => srv.json(`/api/v1/agent/orders/${orderId}/refund`, { method: "POST", headers: key.headers, body: { amount: 100 } });
  afterAll(async () => {
    await setPolicies({ acceptsReturns: true, returnWindowDays: 30 });
  });

  test("an order delivered 10 days ago under a 7-day window, at a store that now grants 30 days, may still be asked about", async () => {
    expect((await setPolicies({ acceptsReturns: true, returnWindowDays: 7 })).status).toBe(200);
    const orderId = await placeOrder(srv, key, SHAMPOO);
    await srv.db.sql`UPDATE orders SET status = 'delivered', delivered_at = now() - interval '10 days' WHERE id = ${orderId}`;
    expect((await setPolicies({ acceptsReturns: true, returnWindowDays: 30 })).status).toBe(200);
    const r = await refund(orderId);
    expect(r.body.code).toBeUndefined();
    expect(r.status).toBe(201);
  });

  test("an order bought while the store took no returns may be asked about once it accepts them", async () => {
    expect((await setPolicies({ acceptsReturns: false })).status).toBe(200);
    const orderId = await placeOrder(srv, key, SHAMPOO);
    expect((await setPolicies({ acceptsReturns: true, returnWindowDays: 30 })).status).toBe(200);
    const r = await refund(orderId);
    expect(r.body.code).toBeUndefined();
    expect(r.status).toBe(201);
  });
});
