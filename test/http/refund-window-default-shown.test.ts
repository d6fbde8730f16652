/**
 * A store that accepts returns without declaring a window: refund requests are held to the 30-day default
 * (actors/store/refunds.ts refundWindowDays), and every view now shows that window (review G, session 14: the rule
 * applied 30 days while /return-policy, MCP get_return_policy and the merchant's own read showed
 * `returnWindowDays: null`, "within an unspecified number of days"). The views and the rule give one answer
 * (ingest.ts policiesView), REST and MCP alike, and a request is refused exactly past the window shown.
 */
import { expect, test } from "bun:test";
import { ALL_SCOPES, createKey, login, placeOrder, type TestKey } from "../helpers/agents.ts";
import { useServer } from "../helpers/server.ts";
import { accept, connect, counted, DEMO_PRODUCT, errorOf, structured } from "../mcp/helpers.ts";
import { DEFAULT_RETURN_WINDOW_DAYS } from "../../actors/store/refunds.ts";

const BOARD = "5befd987-79cd-540c-8a5d-2ba5a30aed41"; // demo-store
const srv = useServer({ seed: true });

let key: TestKey;
let put: { status: number; body: any };
test("set-up: demo-store accepts returns and declares no window", async () => {
  key = await createKey(srv, { scopes: ALL_SCOPES });
  put = await srv.json("/api/v1/merchant/stores/demo-store/policies", { method: "PUT", headers: { authorization: `Bearer ${await login(srv)}` }, body: { acceptsReturns: true } });
  expect(put.status).toBe(200);
  const [{ policies }] = await srv.db.sql<{ policies: Record<string, unknown> }[]>`SELECT policies FROM stores WHERE slug = 'demo-store'`;
  expect(policies).toEqual({ acceptsReturns: true }); // stored as declared: no window
});

test("the merchant's answer, the return policy and the profile show the 30 days the refund rule applies", async () => {
  expect(DEFAULT_RETURN_WINDOW_DAYS).toBe(30);
  expect(put.body.data.policies).toMatchObject({ acceptsReturns: true, returnWindowDays: 30 });

  const policy = await srv.json("/api/v1/agent/merchants/demo-store/return-policy", { headers: key.headers });
  expect(policy.status).toBe(200);
  expect(policy.body.data).toMatchObject({ acceptsReturns: true, returnWindowDays: 30 });
  expect(policy.body.data.summary).toStartWith("Returns accepted within 30 days");

  const profile = await srv.json("/api/v1/agent/merchants/demo-store", { headers: key.headers });
  expect(profile.status).toBe(200);
  expect(profile.body.data.policies).toMatchObject({ acceptsReturns: true, returnWindowDays: 30 });
});

test("a refund request is accepted inside the window shown and refused past it, naming that window", async () => {
  const inside = await placeOrder(srv, key, BOARD, "MOCK");
  await srv.db.sql`UPDATE orders SET created_at = now() - interval '29 days' WHERE id = ${inside}`;
  const ok = await srv.json(`/api/v1/agent/orders/${inside}/refund`, { method: "POST", headers: key.headers, body: { reason: "changed my mind" } });
  expect(ok.status).toBe(201);

  const past = await placeOrder(srv, key, BOARD, "MOCK");
  await srv.db.sql`UPDATE orders SET created_at = now() - interval '31 days' WHERE id = ${past}`;
  const r = await srv.json(`/api/v1/agent/orders/${past}/refund`, { method: "POST", headers: key.headers, body: { reason: "changed my mind" } });
  expect(r.status).toBe(409);
  expect(r.body.code).toBe("RETURN_WINDOW_EXPIRED");
  expect(r.body.details).toMatchObject({ return_window_days: 30 });
}, 60_000);

test("MCP shows the same 30 days (return policy, merchant profile) and onx_create_return refuses past them without asking the human", async () => {
  const mcp = await connect(srv, { headers: key.headers, elicit: accept });
  try {
    const policy = structured(await mcp.call("get_return_policy", {}));
    expect(policy).toMatchObject({ acceptsReturns: true, returnWindowDays: 30 });
    expect(policy.summary).toStartWith("Returns accepted within 30 days");
    const profile = structured(await mcp.call("get_merchant_profile", {}));
    expect(profile.policies).toMatchObject({ acceptsReturns: true, returnWindowDays: 30 });

    const cart = structured(await mcp.call("create_cart", { items: [{ product_id: DEMO_PRODUCT, quantity: 1 }] }));
    const pv = structured(await mcp.call("preview_checkout", { cart_id: cart.cart_id }));
    const o = structured(await mcp.call("complete_checkout", { checkout_session_id: pv.checkout_session_id, idempotency_key: crypto.randomUUID(), payment_method: "MOCK" }));
    expect(o.status).toBe("COMPLETED");
    await srv.db.sql`UPDATE orders SET created_at = now() - interval '31 days' WHERE id = ${o.order_id}`;
    const { result, asked } = await counted(mcp, () => mcp.call("onx_create_return", { order_id: o.order_id, reason: "changed my mind" }));
    expect(errorOf(result)).toMatchObject({ code: "RETURN_WINDOW_EXPIRED", details: { return_window_days: 30 } });
    expect(asked).toBe(0);
  } finally {
    await mcp.close();
  }
}, 60_000);
