/**
 * A store that does not accept returns has a 0-day return window for refund requests too (audit M-4). Every view says
 * so (`acceptsReturns: false, returnWindowDays: 0`, "This merchant does not accept returns."), but the refund rule read
 * the stored window, absent for such a store, and applied the 30-day default: a request a day after the order was
 * 201 PENDING_APPROVAL. It is now 409 RETURN_WINDOW_EXPIRED ("only the merchant can override"), from the same answer
 * (actors/store/refunds.ts refundWindowDays). MCP onx_create_return refuses it before asking the human, as it does
 * any closed window.
 */
import { afterAll, beforeAll, expect, test } from "bun:test";
import { ALL_SCOPES, createKey, login, placeOrder, type TestKey } from "../helpers/agents.ts";
import { startServer, type TestServer } from "../helpers/server.ts";
import { accept, connect, counted, DEMO_PRODUCT, errorOf, structured } from "../mcp/helpers.ts";

const BOARD = "5befd987-79cd-540c-8a5d-2ba5a30aed41"; // demo-store
let srv: TestServer;
let key: TestKey;
let admin: string;
beforeAll(async () => {
  srv = await startServer({ seed: true });
  key = await createKey(srv, { scopes: ALL_SCOPES });
  admin = await login(srv);
  const put = await srv.json("/api/v1/merchant/stores/demo-store/policies", { method: "PUT", headers: { authorization: `Bearer ${admin}` }, body: { acceptsReturns: false } });
  expect(put.status).toBe(200);
}, 120_000);
afterAll(async () => {
  await srv?.stop();
});

test("a refund request at a store that does not accept returns is 409 RETURN_WINDOW_EXPIRED, as the 0-day window agents are shown says", async () => {
  const policy = await srv.json("/api/v1/agent/merchants/demo-store/return-policy", { headers: key.headers });
  expect(policy.status).toBe(200);
  expect(policy.body.data).toMatchObject({ acceptsReturns: false, returnWindowDays: 0, summary: "This merchant does not accept returns." });

  const id = await placeOrder(srv, key, BOARD, "MOCK");
  // a day after the order: past the 0-day window every view shows, inside the 30-day default
  await srv.db.sql`UPDATE orders SET created_at = now() - interval '1 day' WHERE id = ${id}`;
  const r = await srv.json(`/api/v1/agent/orders/${id}/refund`, { method: "POST", headers: key.headers, body: { reason: "changed my mind" } });
  expect(r.status).toBe(409);
  expect(r.body.code).toBe("RETURN_WINDOW_EXPIRED");
  expect(r.body.details).toMatchObject({ return_window_days: 0 });
  const [{ n }] = await srv.db.sql<{ n: number }[]>`SELECT count(*)::int AS n FROM order_refunds WHERE order_id = ${id}`;
  expect(n).toBe(0);
}, 60_000);

test("MCP onx_create_return at a store that does not accept returns is RETURN_WINDOW_EXPIRED without asking the human", async () => {
  const mcp = await connect(srv, { headers: key.headers, elicit: accept });
  try {
    const policy = structured(await mcp.call("get_return_policy", {}));
    expect(policy).toMatchObject({ acceptsReturns: false, returnWindowDays: 0 });
    const cart = structured(await mcp.call("create_cart", { items: [{ product_id: DEMO_PRODUCT, quantity: 1 }] }));
    const pv = structured(await mcp.call("preview_checkout", { cart_id: cart.cart_id }));
    const o = structured(await mcp.call("complete_checkout", { checkout_session_id: pv.checkout_session_id, idempotency_key: crypto.randomUUID(), payment_method: "MOCK" }));
    expect(o.status).toBe("COMPLETED");
    await srv.db.sql`UPDATE orders SET created_at = now() - interval '1 day' WHERE id = ${o.order_id}`;
    const { result, asked } = await counted(mcp, () => mcp.call("onx_create_return", { order_id: o.order_id, reason: "changed my mind" }));
    expect(errorOf(result)).toMatchObject({ code: "RETURN_WINDOW_EXPIRED", details: { return_window_days: 0 } });
    expect(asked).toBe(0);
  } finally {
    await mcp.close();
  }
}, 60_000);
