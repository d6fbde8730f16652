/**
 * Whose orders a key may read and write when it carries a customer's X-Customer-Identity (review R3-3, R3-8, R3-9):
 * - on /{slug}/mcp/customer any key holding the token reads the customer's orders, but cancel_order and
 *   onx_create_return act only on the caller key's own orders (and a cancel on a pending order the merchant recorded);
 *   another key's order is NOT_ELIGIBLE placed_by_another_agent, a recorded order's return NOT_ELIGIBLE
 *   recorded_by_merchant, both before the human is asked;
 * - on the main endpoint the order tools stay the key's, whatever customer token is sent;
 * - a purchase on /{slug}/mcp/checkout with the header is the customer's, and a token that fails verification makes
 *   complete_checkout refuse instead of buying for nobody;
 * - customer ids that differ only in letter case are one customer: orders and rate bucket.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { ALL_SCOPES, createKey, login, type TestKey } from "../helpers/agents.ts";
import { startServer, type TestServer } from "../helpers/server.ts";
import { accept, connect, counted, DEMO, DEMO_PRODUCT, errorOf, structured, type Connected } from "./helpers.ts";

let srv: TestServer;
let keyA: TestKey;
let keyB: TestKey;
let admin: string;
const open: Connected[] = [];

beforeAll(async () => {
  srv = await startServer({ seed: true, config: { RATE_LIMITS_ENABLED: false } });
  [keyA, keyB] = await Promise.all([createKey(srv, { scopes: ALL_SCOPES, tier: "ENTERPRISE" }), createKey(srv, { scopes: ALL_SCOPES, tier: "ENTERPRISE" })]);
  admin = await login(srv);
});

afterAll(async () => {
  await Promise.all(open.map((c) => c.close().catch(() => undefined)));
  await srv?.stop();
});

const newCustomer = (prefix = "cust") => `${prefix}-${crypto.randomUUID().slice(0, 8)}`;

async function customerToken(s: TestServer, customerId: string, jwt = admin): Promise<string> {
  const r = await s.json(`/api/v1/merchant/stores/${DEMO}/customer-tokens`, { method: "POST", headers: { authorization: `Bearer ${jwt}` }, body: { customer_id: customerId } });
  expect(r.status).toBe(201);
  return r.body.data.token;
}

/** An MCP session of `key` on `path` with these extra headers, whose human approves every question. */
async function as(key: TestKey, path: string, headers: Record<string, string> = {}): Promise<Connected> {
  const c = await connect(srv, { path, headers: { ...key.headers, ...headers }, elicit: accept });
  open.push(c);
  return c;
}

/** create_cart → preview_checkout → complete_checkout; the checkout's answer and the session id. */
async function buy(agent: Connected, paymentMethod = "MOCK") {
  const cart = structured(await agent.call("create_cart", { items: [{ product_id: DEMO_PRODUCT, quantity: 1 }] }));
  const pv = structured(await agent.call("preview_checkout", { cart_id: cart.cart_id }));
  const done = await agent.call("complete_checkout", { checkout_session_id: pv.checkout_session_id, idempotency_key: crypto.randomUUID(), payment_method: paymentMethod });
  return { done, sessionId: pv.checkout_session_id as string };
}

async function orderOfSession(sessionId: string): Promise<{ id: string; status: string; agent_key_id: string | null }> {
  const [row] = await srv.db.sql<{ id: string; status: string; agent_key_id: string | null }[]>`
    SELECT id, status, agent_key_id FROM orders WHERE checkout_session_id = ${sessionId}`;
  expect(row).toBeDefined();
  return row!;
}

/** The merchant records one order for `buyer` (the ingest route); its id. */
async function recordOrder(buyer: string, status: string): Promise<string> {
  const r = await srv.json(`/api/v1/merchant/stores/${DEMO}/orders`, {
    method: "POST",
    headers: { authorization: `Bearer ${admin}` },
    body: { orders: [{ externalId: `ext-${crypto.randomUUID()}`, buyer, status, currency: "USD", items: [{ title: "Mug", quantity: 1, unitPrice: 12 }] }] },
  });
  expect(r.status).toBe(201);
  return r.body.data.orders[0].orderId;
}

const statusOf = async (id: string) => (await srv.db.sql<{ status: string }[]>`SELECT status FROM orders WHERE id = ${id}`)[0]!.status;
const refundCount = async (id: string) => Number((await srv.db.sql<{ n: string }[]>`SELECT count(*) AS n FROM order_refunds WHERE order_id = ${id}`)[0]!.n);

describe("writes on the customer endpoint", () => {
  test("another key with the customer's token reads a pending order key A placed for the customer but cannot cancel it (NOT_ELIGIBLE, nobody asked, still pending); key A can", async () => {
    const c = newCustomer();
    const token = await customerToken(srv, c);
    const a = await as(keyA, `/${DEMO}/mcp`, { "x-customer-identity": token });
    const { done, sessionId } = await buy(a, "tok_needs_approval");
    expect(structured(done).status).toBe("PENDING_EXTERNAL_CONFIRMATION");
    const order = await orderOfSession(sessionId);
    expect(order.status).toBe("pending");

    const b = await as(keyB, `/${DEMO}/mcp/customer`, { "x-customer-identity": token });
    const listed = structured(await b.call("onx_get_orders", {})).orders.map((o: { order_id: string }) => o.order_id);
    expect(listed).toContain(order.id);
    expect(structured(await b.call("get_order", { order_id: order.id })).order_id).toBe(order.id);

    const { result, asked } = await counted(b, () => b.call("cancel_order", { order_id: order.id }));
    const e = errorOf(result);
    expect(e.code).toBe("NOT_ELIGIBLE");
    expect(e.remedy).toBe("different_path");
    expect(e.details).toMatchObject({ order_id: order.id, reason: "placed_by_another_agent" });
    expect(asked).toBe(0);
    expect(await statusOf(order.id)).toBe("pending");
    expect(structured(await a.call("get_checkout_status", { checkout_session_id: sessionId })).checkout_status).toBe("PENDING_EXTERNAL_CONFIRMATION");

    // the key that placed it cancels it on the customer endpoint too
    const aCustomer = await as(keyA, `/${DEMO}/mcp/customer`, { "x-customer-identity": token });
    const canceled = await aCustomer.call("cancel_order", { order_id: order.id });
    expect(canceled.isError).toBeFalsy();
    expect(structured(canceled).status).toBe("canceled");
  }, 90_000);

  test("a return request is taken for the caller key's own order of the customer (and get_refund_status shows it there); another key's is NOT_ELIGIBLE, nothing recorded", async () => {
    const c = newCustomer();
    const token = await customerToken(srv, c);
    const a = await as(keyA, `/${DEMO}/mcp`, { "x-customer-identity": token });
    const { done, sessionId } = await buy(a);
    expect(structured(done).status).toBe("COMPLETED");
    const order = await orderOfSession(sessionId);
    expect(order.status).toBe("paid");

    const b = await as(keyB, `/${DEMO}/mcp/customer`, { "x-customer-identity": token });
    for (const args of [{ order_id: order.id }, { order_id: order.id, idempotency_key: crypto.randomUUID() }]) {
      const { result, asked } = await counted(b, () => b.call("onx_create_return", { ...args, reason: "too small" }));
      const e = errorOf(result);
      expect(e.code).toBe("NOT_ELIGIBLE");
      expect(e.details.reason).toBe("placed_by_another_agent");
      expect(asked).toBe(0);
    }
    expect(await refundCount(order.id)).toBe(0);

    const aCustomer = await as(keyA, `/${DEMO}/mcp/customer`, { "x-customer-identity": token });
    const asked = await aCustomer.call("onx_create_return", { order_id: order.id, reason: "too small" });
    expect(asked.isError).toBeFalsy();
    expect(structured(asked).status).toBe("PENDING_APPROVAL");
    // the customer's view of the order carries its refund requests (it answered an empty list before)
    const refunds = structured(await b.call("get_refund_status", { order_id: order.id }));
    expect(refunds.refunds.map((r: { status: string }) => r.status)).toEqual(["PENDING_APPROVAL"]);
  }, 90_000);

  test("an order the merchant recorded for the customer: a pending one is cancelled, a delivered one's return is NOT_ELIGIBLE recorded_by_merchant before the human is asked", async () => {
    const c = newCustomer();
    const token = await customerToken(srv, c);
    const [pendingId, deliveredId] = [await recordOrder(c, "pending"), await recordOrder(c, "delivered")];
    const b = await as(keyB, `/${DEMO}/mcp/customer`, { "x-customer-identity": token });

    const { result, asked } = await counted(b, () => b.call("onx_create_return", { order_id: deliveredId }));
    const e = errorOf(result);
    expect(e.code).toBe("NOT_ELIGIBLE");
    expect(e.details).toMatchObject({ order_id: deliveredId, reason: "recorded_by_merchant" });
    expect(e.message).toContain("merchant");
    expect(asked).toBe(0);
    expect(await refundCount(deliveredId)).toBe(0);

    const canceled = await b.call("cancel_order", { order_id: pendingId });
    expect(canceled.isError).toBeFalsy();
    expect(structured(canceled).status).toBe("canceled");
    expect(await statusOf(pendingId)).toBe("canceled");
  }, 90_000);
});

describe("the main and checkout endpoints", () => {
  test("the main endpoint keeps key ownership: another key with the customer's token does not find the customer's order; a key with another customer's token still reads its own", async () => {
    const [c, d] = [newCustomer(), newCustomer()];
    const [tokenC, tokenD] = await Promise.all([customerToken(srv, c), customerToken(srv, d)]);
    const a = await as(keyA, `/${DEMO}/mcp`, { "x-customer-identity": tokenC });
    const { sessionId } = await buy(a);
    const order = await orderOfSession(sessionId);

    const b = await as(keyB, `/${DEMO}/mcp`, { "x-customer-identity": tokenC });
    expect(errorOf(await b.call("get_order", { order_id: order.id })).code).toBe("ORDER_NOT_FOUND");
    expect(errorOf(await b.call("get_refund_status", { order_id: order.id })).code).toBe("ORDER_NOT_FOUND");
    const bLists = structured(await b.call("onx_get_orders", {})).orders.map((o: { order_id: string }) => o.order_id);
    expect(bLists).not.toContain(order.id);
    const { result, asked } = await counted(b, () => b.call("cancel_order", { order_id: order.id }));
    expect(errorOf(result).code).toBe("ORDER_NOT_FOUND");
    expect(asked).toBe(0);

    const aWithD = await as(keyA, `/${DEMO}/mcp`, { "x-customer-identity": tokenD });
    const got = await aWithD.call("get_order", { order_id: order.id });
    expect(got.isError).toBeFalsy();
    expect(structured(got).order_id).toBe(order.id);
    expect(structured(await aWithD.call("onx_get_orders", {})).orders.map((o: { order_id: string }) => o.order_id)).toContain(order.id);
  }, 90_000);

  test("a purchase on /{slug}/mcp/checkout with X-Customer-Identity is the customer's order, still owned by the key", async () => {
    const c = newCustomer();
    const token = await customerToken(srv, c);
    const checkout = await as(keyA, `/${DEMO}/mcp/checkout`, { "x-customer-identity": token });
    const { done, sessionId } = await buy(checkout);
    expect(structured(done).status).toBe("COMPLETED");
    const order = await orderOfSession(sessionId);
    expect(order.agent_key_id).toBe(keyA.id);

    const mine = await as(keyB, `/${DEMO}/mcp/customer`, { "x-customer-identity": token });
    expect(structured(await mine.call("onx_get_orders", {})).orders.map((o: { order_id: string }) => o.order_id)).toEqual([order.id]);
  }, 90_000);

  test("complete_checkout with an X-Customer-Identity that fails verification is IDENTITY_TOKEN_REJECTED before the human is asked, and nothing is paid", async () => {
    const token = await customerToken(srv, newCustomer());
    for (const path of [`/${DEMO}/mcp`, `/${DEMO}/mcp/checkout`]) {
      const agent = await as(keyA, path, { "x-customer-identity": token.slice(0, -3) + "abc" });
      const cart = structured(await agent.call("create_cart", { items: [{ product_id: DEMO_PRODUCT, quantity: 1 }] }));
      const pv = structured(await agent.call("preview_checkout", { cart_id: cart.cart_id }));
      const { result, asked } = await counted(agent, () =>
        agent.call("complete_checkout", { checkout_session_id: pv.checkout_session_id, idempotency_key: crypto.randomUUID(), payment_method: "MOCK" }),
      );
      const e = errorOf(result);
      expect(e.code).toBe("IDENTITY_TOKEN_REJECTED");
      expect(e.details.reason).toBeString();
      expect(asked).toBe(0);
      expect(structured(await agent.call("get_checkout_status", { checkout_session_id: pv.checkout_session_id })).checkout_status).toBe("READY_FOR_PAYMENT");
      expect((await srv.db.sql`SELECT id FROM orders WHERE checkout_session_id = ${pv.checkout_session_id}`).length).toBe(0);
    }
  }, 90_000);
});

describe("customer ids that differ only in letter case", () => {
  test("are one customer: an order bought with CUS-… and one recorded for Cus-… are both cus-…'s", async () => {
    const base = newCustomer("cus");
    const [upper, mixed, lower] = [base.toUpperCase(), `C${base.slice(1)}`, base];
    const a = await as(keyA, `/${DEMO}/mcp`, { "x-customer-identity": await customerToken(srv, upper) });
    const { sessionId } = await buy(a);
    const bought = await orderOfSession(sessionId);
    const recorded = await recordOrder(mixed, "delivered");

    const me = await as(keyB, `/${DEMO}/mcp/customer`, { "x-customer-identity": await customerToken(srv, lower) });
    const listed = structured(await me.call("onx_get_orders", {})).orders.map((o: { order_id: string }) => o.order_id);
    expect(listed.sort()).toEqual([bought.id, recorded].sort());
  }, 90_000);

  test("share the customer endpoint's rate bucket (200/min per customer)", async () => {
    const limited = await startServer({ seed: true, config: { RATE_LIMITS_ENABLED: true } });
    try {
      const base = newCustomer("cus");
      const jwt = await login(limited);
      const key = await createKey(limited, { scopes: ALL_SCOPES, tier: "ENTERPRISE" });
      const tokens = [await customerToken(limited, base.toUpperCase(), jwt), await customerToken(limited, base, jwt)];
      const remaining: number[] = [];
      for (const token of tokens) {
        // sessionless tools/call: the customer bucket is the only layer of a keyed call on the customer endpoint
        const r = await fetch(`${limited.url}/${DEMO}/mcp/customer`, {
          method: "POST",
          headers: { "content-type": "application/json", accept: "application/json, text/event-stream", ...key.headers, "x-customer-identity": token },
          body: JSON.stringify({ jsonrpc: "2.0", id: 1, method: "tools/call", params: { name: "verify_customer_identity", arguments: {} } }),
        });
        expect(r.status).toBe(200);
        await r.text();
        expect(r.headers.get("x-ratelimit-limit")).toBe("200");
        remaining.push(Number(r.headers.get("x-ratelimit-remaining")));
      }
      expect(remaining).toEqual([199, 198]);
    } finally {
      await limited.stop();
    }
  }, 90_000);
});
