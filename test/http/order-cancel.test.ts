/**
 * Agent cancels: POST /agent/orders/{id}/cancel (owner key only) and POST /agent/checkout/{sessionId}/cancel.
 */
import { beforeAll, describe, expect, test } from "bun:test";
import { ALL_SCOPES, createKey, login, twoTenants, type TestKey } from "../helpers/agents.ts";
import { useServer } from "../helpers/server.ts";

const SKILLET = "399d72f1-303c-5cf3-bc6a-5c82714b85d4"; // DS-0005, tracked stock, demo-store
const BOARD = "5befd987-79cd-540c-8a5d-2ba5a30aed41"; // DS-0011, untracked stock, demo-store
const srv = useServer({ seed: true });
let key: TestKey;
let other: TestKey;

beforeAll(async () => {
  ({ key, other } = await twoTenants(srv));
}, 120_000);

async function cart(productId: string, k: TestKey = key): Promise<string> {
  const r = await srv.json("/api/v1/agent/cart", { method: "POST", headers: k.headers, body: { items: [{ product_id: productId, quantity: 1 }] } });
  expect(r.status).toBe(201);
  return r.body.data.id;
}
const checkout = (body: Record<string, unknown>, k: TestKey = key) => srv.json("/api/v1/agent/checkout", { method: "POST", headers: k.headers, body });
const cancelOrder = (id: string, k: TestKey = key) => srv.json(`/api/v1/agent/orders/${id}/cancel`, { method: "POST", headers: k.headers, body: {} });
const reserved = async () => (await srv.db.sql<{ r: number }[]>`SELECT reserved_quantity AS r FROM products WHERE id = ${SKILLET}`)[0].r;
const outbox = async (orderId: string) =>
  (await srv.db.sql<{ payload: { fromStatus: string; toStatus: string } }[]>`
    SELECT payload FROM webhook_events WHERE kind = 'order.status_changed' AND payload->>'orderId' = ${orderId} ORDER BY created_at`).map((r) => `${r.payload.fromStatus}→${r.payload.toStatus}`);

describe("POST /agent/orders/{id}/cancel", () => {
  test("a pending order waiting for the buyer is canceled with its session: 200 canceled, stock released, order.status_changed written", async () => {
    const before = await reserved();
    const id = await cart(SKILLET);
    const w = await checkout({ cartId: id, payment_method: "tok_needs_approval", idempotency_key: crypto.randomUUID() });
    expect(w.status).toBe(202);
    expect(await reserved()).toBe(before + 1);
    const [o] = await srv.db.sql<{ id: string }[]>`SELECT id FROM orders WHERE cart_id = ${id}`;
    const r = await cancelOrder(o.id);
    expect(r.status).toBe(200);
    expect(r.body).toMatchObject({ success: true, data: { order_id: o.id, status: "canceled", refund: null } });
    expect(await reserved()).toBe(before);
    expect(await outbox(o.id)).toEqual(["pending→canceled"]);
    const c = await srv.json(`/api/v1/agent/cart/${id}`, { headers: key.headers });
    expect(c.body.data.status).toBe("OPEN");
  });

  test("a paid order is 409 ORDER_NOT_CANCELLABLE naming the refund route, and nothing is canceled or refunded", async () => {
    const id = await cart(BOARD);
    const paid = await checkout({ cartId: id, payment_method: "tok_approve" });
    expect(paid.status).toBe(200);
    const orderId = paid.body.data.order_id;
    const r = await cancelOrder(orderId);
    expect(r.status).toBe(409);
    expect(r.body).toMatchObject({
      success: false,
      code: "ORDER_NOT_CANCELLABLE",
      details: { status: "paid", order_id: orderId, refund_route: `POST /api/v1/agent/orders/${orderId}/refund` },
    });
    expect(r.body.error).toContain("an agent may cancel only pending orders");
    expect(r.body.error).toContain(`POST /api/v1/agent/orders/${orderId}/refund`);
    const [o] = await srv.db.sql<{ status: string; refunded_minor: number }[]>`SELECT status, refunded_minor FROM orders WHERE id = ${orderId}`;
    expect(o).toEqual({ status: "paid", refunded_minor: 0 });
    expect(await srv.db.sql`SELECT id FROM order_refunds WHERE order_id = ${orderId}`).toHaveLength(0);
    expect(await outbox(orderId)).toEqual(["pending→paid"]);
    // The route it names is the merchant's approval path: a request, not money.
    const ask = await srv.json(`/api/v1/agent/orders/${orderId}/refund`, { method: "POST", headers: key.headers, body: {} });
    expect(ask.status).toBe(201);
    expect(ask.body.data.status).toBe("PENDING_APPROVAL");
  });

  test("a key the merchant blocked cannot get a paid order's money back by canceling it: 409, no refund, as its refund request is 404", async () => {
    const blocked = await createKey(srv, { scopes: ALL_SCOPES });
    const paid = await checkout({ cartId: await cart(BOARD, blocked), payment_method: "MOCK" }, blocked);
    expect(paid.status).toBe(200);
    const orderId = paid.body.data.order_id;
    const admin = await login(srv);
    const block = await srv.json(`/api/v1/merchant/stores/demo-store/allowlist/${blocked.id}`, { method: "POST", headers: { authorization: `Bearer ${admin}` }, body: { status: "blocked" } });
    expect(block.status).toBe(200);
    const refund = await srv.json(`/api/v1/agent/orders/${orderId}/refund`, { method: "POST", headers: blocked.headers, body: { amount: 100 } });
    expect(refund.status).toBe(404);
    const r = await cancelOrder(orderId, blocked);
    expect(r.status).toBe(409);
    expect(r.body).toMatchObject({ code: "ORDER_NOT_CANCELLABLE", details: { status: "paid" } });
    const [o] = await srv.db.sql<{ status: string; refunded_minor: number }[]>`SELECT status, refunded_minor FROM orders WHERE id = ${orderId}`;
    expect(o).toEqual({ status: "paid", refunded_minor: 0 });
  });

  test("an order its agent canceled, asked again, is 200 canceled (idempotent: nothing was charged)", async () => {
    const id = await cart(SKILLET);
    await checkout({ cartId: id, payment_method: "tok_needs_approval", idempotency_key: crypto.randomUUID() });
    const [o] = await srv.db.sql<{ id: string }[]>`SELECT id FROM orders WHERE cart_id = ${id}`;
    expect((await cancelOrder(o.id)).status).toBe(200);
    const again = await cancelOrder(o.id);
    expect(again.status).toBe(200);
    expect(again.body).toEqual({ success: true, data: { order_id: o.id, status: "canceled", refund: null } });
  });

  test("an order past the point an agent may cancel is 409 ORDER_NOT_CANCELLABLE with details.status", async () => {
    const id = await cart(BOARD);
    const paid = await checkout({ cartId: id, payment_method: "MOCK" });
    const orderId = paid.body.data.order_id;
    await srv.db.sql`UPDATE orders SET status = 'fulfilled' WHERE id = ${orderId}`;
    const r = await cancelOrder(orderId);
    expect(r.status).toBe(409);
    expect(r.body).toMatchObject({ success: false, code: "ORDER_NOT_CANCELLABLE", details: { status: "fulfilled" } });
  });

  test("another key's order is 404 ORDER_NOT_FOUND and stays as it was", async () => {
    const id = await cart(BOARD);
    const paid = await checkout({ cartId: id, payment_method: "MOCK" });
    const r = await cancelOrder(paid.body.data.order_id, other);
    expect(r.status).toBe(404);
    expect(r.body.code).toBe("ORDER_NOT_FOUND");
    const [o] = await srv.db.sql<{ status: string }[]>`SELECT status FROM orders WHERE id = ${paid.body.data.order_id}`;
    expect(o.status).toBe("paid");
  });
});

describe("POST /agent/checkout/{sessionId}/cancel", () => {
  test("a previewed session is canceled: 200 CANCELED, the cart open again, a second cancel is 409 SESSION_INACTIVE", async () => {
    const id = await cart(BOARD);
    const p = await srv.json("/api/v1/agent/checkout/preview", { method: "POST", headers: key.headers, body: { cartId: id } });
    const sid = p.body.data.checkout_session_id;
    const r = await srv.json(`/api/v1/agent/checkout/${sid}/cancel`, { method: "POST", headers: key.headers });
    expect(r.status).toBe(200);
    expect(r.body).toMatchObject({ success: true, data: { checkout_session_id: sid, status: "CANCELED" } });
    const c = await srv.json(`/api/v1/agent/cart/${id}`, { headers: key.headers });
    expect(c.body.data.status).toBe("OPEN");
    const again = await srv.json(`/api/v1/agent/checkout/${sid}/cancel`, { method: "POST", headers: key.headers });
    expect(again.status).toBe(409);
    expect(again.body).toMatchObject({ success: false, code: "SESSION_INACTIVE", details: { status: "CANCELED" } });
  });

  test("another key's session and a malformed session id are both 404 CHECKOUT_SESSION_NOT_FOUND (the session was named, not a cart)", async () => {
    const id = await cart(BOARD);
    const p = await srv.json("/api/v1/agent/checkout/preview", { method: "POST", headers: key.headers, body: { cartId: id } });
    const r = await srv.json(`/api/v1/agent/checkout/${p.body.data.checkout_session_id}/cancel`, { method: "POST", headers: other.headers });
    expect(r.status).toBe(404);
    expect(r.body).toMatchObject({ code: "CHECKOUT_SESSION_NOT_FOUND", details: { checkout_session_id: p.body.data.checkout_session_id } });
    expect(r.body.details.cart_id).toBeUndefined();
    const bad = await srv.json("/api/v1/agent/checkout/cs_nope/cancel", { method: "POST", headers: key.headers });
    expect(bad.status).toBe(404);
    expect(bad.body.code).toBe("CHECKOUT_SESSION_NOT_FOUND");
  });
});
