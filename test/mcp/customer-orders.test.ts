/**
 * The customer endpoint shows a customer their own orders (audit B F0): an order the merchant recorded with
 * `buyer: <customer id>` and an order an agent placed on the main endpoint with that customer's X-Customer-Identity
 * both carry the customer's buyer_ref (actors/store/buyer-ref.ts), so `onx_get_orders` lists them and `get_order`
 * answers them; another customer of the store is still refused with ORDER_OWNERSHIP_FAILED.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { ALL_SCOPES, createKey, login, type TestKey } from "../helpers/agents.ts";
import { startServer, type TestServer } from "../helpers/server.ts";
import { accept, connect, DEMO, DEMO_PRODUCT, errorOf, structured, type Connected } from "./helpers.ts";

let srv: TestServer;
let key: TestKey;
let admin: string;
const open: Connected[] = [];

beforeAll(async () => {
  srv = await startServer({ seed: true, config: { RATE_LIMITS_ENABLED: false } });
  key = await createKey(srv, { scopes: ALL_SCOPES, tier: "ENTERPRISE" });
  admin = await login(srv);
});

afterAll(async () => {
  await Promise.all(open.map((c) => c.close().catch(() => undefined)));
  await srv?.stop();
});

async function customerToken(customerId: string): Promise<string> {
  const r = await srv.json(`/api/v1/merchant/stores/${DEMO}/customer-tokens`, { method: "POST", headers: { authorization: `Bearer ${admin}` }, body: { customer_id: customerId } });
  expect(r.status).toBe(201);
  return r.body.data.token;
}

async function as(path: string, headers: Record<string, string>, elicit = false): Promise<Connected> {
  const c = await connect(srv, { path, headers: { ...key.headers, ...headers }, ...(elicit ? { elicit: accept } : {}) });
  open.push(c);
  return c;
}

describe("a customer's own orders on /{slug}/mcp/customer", () => {
  test("a customer sees the order the merchant recorded for them and the one the agent placed for them; another customer gets ORDER_OWNERSHIP_FAILED", async () => {
    const me = `Cust-${crypto.randomUUID().slice(0, 8)}`; // the merchant's id, any case: recorded orders lower-case it
    const other = `cust-${crypto.randomUUID().slice(0, 8)}`;
    const [myToken, otherToken] = await Promise.all([customerToken(me), customerToken(other)]);

    const recorded = await srv.json(`/api/v1/merchant/stores/${DEMO}/orders`, {
      method: "POST",
      headers: { authorization: `Bearer ${admin}` },
      body: { orders: [{ externalId: `ext-${me}`, buyer: me, status: "delivered", currency: "USD", items: [{ title: "Mug", quantity: 1, unitPrice: 12 }] }] },
    });
    expect(recorded.status).toBe(201);
    const recordedId: string = recorded.body.data.orders[0].orderId;

    // The agent buys on the main endpoint for this customer (X-Customer-Identity), its key owning the order.
    const agent = await as(`/${DEMO}/mcp`, { "x-customer-identity": myToken }, true);
    const cart = structured(await agent.call("create_cart", { items: [{ product_id: DEMO_PRODUCT, quantity: 1 }] }));
    const pv = structured(await agent.call("preview_checkout", { cart_id: cart.cart_id }));
    const done = structured(await agent.call("complete_checkout", { checkout_session_id: pv.checkout_session_id, idempotency_key: crypto.randomUUID(), payment_method: "MOCK" }));
    expect(done.status).toBe("COMPLETED");
    const placedId: string = done.order_id;
    const [row] = await srv.db.sql<{ agent_key_id: string }[]>`SELECT agent_key_id FROM orders WHERE id = ${placedId}`;
    expect(row?.agent_key_id).toBe(key.id);

    const mine = await as(`/${DEMO}/mcp/customer`, { "x-customer-identity": myToken });
    const listed = structured(await mine.call("onx_get_orders", {})).orders.map((o: { order_id: string }) => o.order_id);
    expect(listed.sort()).toEqual([recordedId, placedId].sort());
    for (const id of [recordedId, placedId]) {
      const got = await mine.call("get_order", { order_id: id });
      expect(got.isError).toBeFalsy();
      expect(structured(got).order_id).toBe(id);
    }

    const theirs = await as(`/${DEMO}/mcp/customer`, { "x-customer-identity": otherToken });
    expect(structured(await theirs.call("onx_get_orders", {})).orders).toEqual([]);
    for (const id of [recordedId, placedId]) {
      const e = errorOf(await theirs.call("get_order", { order_id: id }));
      expect(e.code).toBe("ORDER_OWNERSHIP_FAILED");
      expect(e.details.order_id).toBe(id);
    }

    // The agent's own view is unchanged: the order it placed is still its key's (main endpoint, no customer token).
    const plain = await as(`/${DEMO}/mcp`, {});
    expect(structured(await plain.call("get_order", { order_id: placedId })).order_id).toBe(placedId);
  }, 90_000);
});
