/**
 * Audit A8 leftover: after the merchant accepts a capture of another amount than was authorised (the sandbox's
 * `tok_amount_mismatch` captures one minor unit more; reconcile `accept` records it in `orders.captured_minor`), the
 * webhook events say the captured total (test/http/webhook-payload-totals.test.ts) and refunds are bounded by it, but
 * the order views still said the authorised total. The agent's and the customer's order views (REST
 * GET /agent/orders/{id}, MCP get_order and onx_get_orders on the main and the customer endpoint) now say the
 * captured total as `total`/`total_minor` (the order's total from then on, `orderTotalMinor`), with the priced total
 * beside it as `priced_total_minor`. So do the merchant's order list and detail (REST here; the dashboard's orders
 * pages read the same merchant-reads.ts `orderRow`): `totalMinor`, with `pricedTotalMinor` beside it; and the receipt
 * a retried completion answers (REST and MCP), which keeps the completing answer's shape with the captured totals.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { ALL_SCOPES, createKey, login, type TestKey } from "../helpers/agents.ts";
import { startServer, type TestServer } from "../helpers/server.ts";
import { accept, connect, DEMO, DEMO_PRODUCT, errorOf, structured, type Connected } from "../mcp/helpers.ts";

let srv: TestServer;
let admin: string;
let key: TestKey;
const open: Connected[] = [];

beforeAll(async () => {
  srv = await startServer({ seed: true, config: { RATE_LIMITS_ENABLED: false } });
  admin = await login(srv);
  key = await createKey(srv, { tier: "ENTERPRISE", scopes: ALL_SCOPES });
}, 120_000);
afterAll(async () => {
  await Promise.all(open.map((c) => c.close().catch(() => undefined)));
  await srv?.stop();
}, 30_000);

const owner = () => ({ authorization: `Bearer ${admin}` });

async function as(path: string, headers: Record<string, string> = {}): Promise<Connected> {
  const c = await connect(srv, { path, headers: { ...key.headers, ...headers }, elicit: accept });
  open.push(c);
  return c;
}

async function customerToken(customerId: string): Promise<string> {
  const r = await srv.json(`/api/v1/merchant/stores/${DEMO}/customer-tokens`, { method: "POST", headers: owner(), body: { customer_id: customerId } });
  expect(r.status).toBe(201);
  return r.body.data.token;
}

/**
 * An order of `DEMO_PRODUCT` paid with tok_amount_mismatch through MCP (for the customer of `identity` when given),
 * whose capture the merchant accepts: the order is paid with captured_minor = total_minor + 1.
 */
async function acceptedOverCapture(identity?: string): Promise<{ id: string; totalMinor: number; capturedMinor: number; agent: Connected; cartId: string; completion: Record<string, string> }> {
  const agent = await as(`/${DEMO}/mcp`, identity ? { "x-customer-identity": identity } : {});
  const cart = structured(await agent.call("create_cart", { items: [{ product_id: DEMO_PRODUCT, quantity: 1 }] }));
  const pv = structured(await agent.call("preview_checkout", { cart_id: cart.cart_id }));
  const completion = { checkout_session_id: pv.checkout_session_id, idempotency_key: crypto.randomUUID(), payment_method: "tok_amount_mismatch" };
  const paid = await agent.call("complete_checkout", completion);
  expect(paid.isError).toBe(true);
  const [o] = await srv.db.sql<{ id: string }[]>`SELECT id::text FROM orders WHERE cart_id = ${cart.cart_id}`;
  const a = await srv.json(`/api/v1/merchant/stores/${DEMO}/orders/${o!.id}/reconcile`, { method: "POST", headers: owner(), body: { action: "accept" } });
  expect(a.status).toBe(200);
  const [row] = await srv.db.sql<{ status: string; total_minor: number; captured_minor: number }[]>`SELECT status, total_minor::int, captured_minor::int FROM orders WHERE id = ${o!.id}`;
  expect(row!.status).toBe("paid");
  expect(row!.captured_minor).toBe(row!.total_minor + 1);
  return { id: o!.id, totalMinor: row!.total_minor, capturedMinor: row!.captured_minor, agent, cartId: cart.cart_id, completion };
}

describe("after an accepted capture of another amount, the order views say the captured total", () => {
  test("REST GET /agent/orders/{id}: total and total_minor are the captured total, priced_total_minor the checkout's", async () => {
    const o = await acceptedOverCapture();
    const r = await srv.json(`/api/v1/agent/orders/${o.id}`, { headers: key.headers });
    expect(r.status).toBe(200);
    expect(r.body.success).toBe(true);
    expect(r.body.data).toMatchObject({ order_id: o.id, status: "paid", total_minor: o.capturedMinor, total: o.capturedMinor / 100, priced_total_minor: o.totalMinor });
    // The priced breakdown still adds up to the priced total.
    const d = r.body.data;
    expect(d.subtotal_minor - d.discount_minor + d.shipping_minor + d.tax_minor).toBe(o.totalMinor);
  }, 60_000);

  test("an order captured as priced says its total twice", async () => {
    const c = await srv.json("/api/v1/agent/cart", { method: "POST", headers: key.headers, body: { items: [{ product_id: DEMO_PRODUCT, quantity: 1 }] } });
    expect(c.status).toBe(201);
    const r = await srv.json("/api/v1/agent/checkout", { method: "POST", headers: key.headers, body: { cartId: c.body.data.id, payment_method: "MOCK" } });
    expect(r.status).toBe(200);
    const v = await srv.json(`/api/v1/agent/orders/${r.body.data.order_id}`, { headers: key.headers });
    expect(v.status).toBe(200);
    expect(v.body.data.total_minor).toBe(r.body.data.total_minor);
    expect(v.body.data.priced_total_minor).toBe(r.body.data.total_minor);
  }, 60_000);

  test("MCP get_order and onx_get_orders (by id and listed) say the captured total", async () => {
    const o = await acceptedOverCapture();
    const agent = await as(`/${DEMO}/mcp`);
    const one = structured(await agent.call("get_order", { order_id: o.id }));
    expect(one).toMatchObject({ order_id: o.id, total_minor: o.capturedMinor, total: o.capturedMinor / 100, priced_total_minor: o.totalMinor });
    const byId = structured(await agent.call("onx_get_orders", { order_id: o.id }));
    expect(byId.orders[0]).toMatchObject({ order_id: o.id, total_minor: o.capturedMinor, priced_total_minor: o.totalMinor });
    const listed = structured(await agent.call("onx_get_orders", { limit: 100 }));
    expect(listed.orders.find((x: { order_id: string }) => x.order_id === o.id)).toMatchObject({ total_minor: o.capturedMinor, total: o.capturedMinor / 100, priced_total_minor: o.totalMinor });
  }, 60_000);

  test("the customer endpoint's get_order and onx_get_orders say the captured total", async () => {
    const token = await customerToken(`cust-${crypto.randomUUID().slice(0, 8)}`);
    const o = await acceptedOverCapture(token);
    const customer = await as(`/${DEMO}/mcp/customer`, { "x-customer-identity": token });
    const one = structured(await customer.call("get_order", { order_id: o.id }));
    expect(one).toMatchObject({ order_id: o.id, total_minor: o.capturedMinor, total: o.capturedMinor / 100, priced_total_minor: o.totalMinor });
    const listed = structured(await customer.call("onx_get_orders", {}));
    expect(listed.orders).toHaveLength(1);
    expect(listed.orders[0]).toMatchObject({ order_id: o.id, total_minor: o.capturedMinor, priced_total_minor: o.totalMinor });
  }, 60_000);
});

describe("after an accepted capture of another amount, the merchant's views and the completion's receipt say the captured total", () => {
  test("the merchant's REST order list and detail: totalMinor is the captured total, pricedTotalMinor the checkout's", async () => {
    const o = await acceptedOverCapture();
    const one = await srv.json(`/api/v1/merchant/stores/${DEMO}/orders/${o.id}`, { headers: owner() });
    expect(one.status).toBe(200);
    expect(one.body.success).toBe(true);
    expect(one.body.data).toMatchObject({ id: o.id, status: "paid", totalMinor: o.capturedMinor, pricedTotalMinor: o.totalMinor, reconciliation: null });
    const list = await srv.json(`/api/v1/merchant/stores/${DEMO}/orders?status=paid&limit=20`, { headers: owner() });
    expect(list.status).toBe(200);
    expect(list.body.data.items.find((x: { id: string }) => x.id === o.id)).toMatchObject({ totalMinor: o.capturedMinor, pricedTotalMinor: o.totalMinor });
  }, 60_000);

  test("the merchant's list says a normal order's total twice", async () => {
    const c = await srv.json("/api/v1/agent/cart", { method: "POST", headers: key.headers, body: { items: [{ product_id: DEMO_PRODUCT, quantity: 1 }] } });
    const r = await srv.json("/api/v1/agent/checkout", { method: "POST", headers: key.headers, body: { cartId: c.body.data.id, payment_method: "MOCK" } });
    expect(r.status).toBe(200);
    const one = await srv.json(`/api/v1/merchant/stores/${DEMO}/orders/${r.body.data.order_id}`, { headers: owner() });
    expect(one.status).toBe(200);
    expect(one.body.data).toMatchObject({ totalMinor: r.body.data.total_minor, pricedTotalMinor: r.body.data.total_minor });
  }, 60_000);

  test("REST: the completion retried with its key is 409 CHECKOUT_ALREADY_IN_PROGRESS whose receipt says the captured total", async () => {
    const o = await acceptedOverCapture();
    const again = await srv.json("/api/v1/agent/checkout", {
      method: "POST",
      headers: key.headers,
      body: { cartId: o.cartId, checkout_session_id: o.completion.checkout_session_id, idempotency_key: o.completion.idempotency_key, payment_method: "tok_amount_mismatch" },
    });
    expect(again.status).toBe(409);
    expect(again.body).toMatchObject({ success: false, code: "CHECKOUT_ALREADY_IN_PROGRESS" });
    expect(again.body.details).toMatchObject({ status: "COMPLETED", order_id: o.id, total_minor: o.capturedMinor, total: o.capturedMinor / 100 });
    expect(again.body.details.orders).toEqual([expect.objectContaining({ order_id: o.id, status: "paid", total_minor: o.capturedMinor, total: o.capturedMinor / 100 })]);
  }, 60_000);

  test("MCP: complete_checkout retried with its key answers CHECKOUT_ALREADY_IN_PROGRESS with the captured total", async () => {
    const o = await acceptedOverCapture();
    const again = await o.agent.call("complete_checkout", o.completion);
    expect(again.isError).toBe(true);
    const e = errorOf(again);
    expect(e.code).toBe("CHECKOUT_ALREADY_IN_PROGRESS");
    expect(e.details).toMatchObject({ status: "COMPLETED", order_id: o.id, total_minor: o.capturedMinor, total: o.capturedMinor / 100 });
    expect(e.details.orders).toEqual([expect.objectContaining({ order_id: o.id, total_minor: o.capturedMinor })]);
  }, 60_000);
});
