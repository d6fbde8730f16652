/**
 * Audit A (session 16): the API mixes `cartId` with `idempotency_key`, and a body's `idempotencyKey` (camelCase) was
 * ignored: two refund requests sent with the same camelCase key made two PENDING_APPROVAL requests, the retry
 * protection the agent meant to send silently absent. Either spelling is the same key; both, differing, are 400.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { ALL_SCOPES, createKey, placeOrder, type TestKey } from "../helpers/agents.ts";
import { startServer, type TestServer } from "../helpers/server.ts";

const SHAMPOO = "78be202c-7531-5abc-af67-04c4e6b96b7a"; // demo-store DS-0053
let srv: TestServer;
let key: TestKey;
beforeAll(async () => {
  srv = await startServer({ seed: true, config: { RATE_LIMITS_ENABLED: false } });
  key = await createKey(srv, { scopes: ALL_SCOPES });
}, 120_000);
afterAll(async () => {
  await srv?.stop();
});

describe("idempotencyKey in camelCase is the idempotency key", () => {
  test("a refund request sent twice with the same idempotencyKey makes one request", async () => {
    const orderId = await placeOrder(srv, key, SHAMPOO);
    const idem = crypto.randomUUID();
    const send = () => srv.json(`/api/v1/agent/orders/${orderId}/refund`, { method: "POST", headers: key.headers, body: { amount: 100, idempotencyKey: idem } });
    const first = await send();
    const again = await send();
    expect(first.status).toBe(201);
    expect(again.status).toBe(201);
    expect(again.body.data.id).toBe(first.body.data.id);
    const rows = await srv.db.sql`SELECT id FROM order_refunds WHERE order_id = ${orderId}`;
    expect(rows.length).toBe(1);
  });

  test("both spellings with different keys are 400 INVALID_ARGUMENT on idempotency_key, and nothing is written", async () => {
    const orderId = await placeOrder(srv, key, SHAMPOO);
    const r = await srv.json(`/api/v1/agent/orders/${orderId}/refund`, {
      method: "POST",
      headers: key.headers,
      body: { amount: 100, idempotency_key: crypto.randomUUID(), idempotencyKey: crypto.randomUUID() },
    });
    expect(r.status).toBe(400);
    expect(r.body.code).toBe("INVALID_ARGUMENT");
    expect(r.body.details.field).toBe("idempotency_key");
    expect((await srv.db.sql`SELECT id FROM order_refunds WHERE order_id = ${orderId}`).length).toBe(0);
  });

  test("a checkout's idempotencyKey binds the session as idempotency_key does", async () => {
    const cart = await srv.json("/api/v1/agent/cart", { method: "POST", headers: key.headers, body: { items: [{ product_id: SHAMPOO, quantity: 1 }] } });
    const pv = await srv.json("/api/v1/agent/checkout/preview", { method: "POST", headers: key.headers, body: { cartId: cart.body.data.id } });
    const idem = crypto.randomUUID();
    const body = { cartId: cart.body.data.id, checkout_session_id: pv.body.data.checkout_session_id, payment_method: "MOCK" };
    const paid = await srv.json("/api/v1/agent/checkout", { method: "POST", headers: key.headers, body: { ...body, idempotencyKey: idem } });
    expect(paid.status).toBe(200);
    const other = await srv.json("/api/v1/agent/checkout", { method: "POST", headers: key.headers, body: { ...body, idempotency_key: crypto.randomUUID() } });
    expect(other.status).toBe(409);
    expect(other.body.code).toBe("IDEMPOTENCY_KEY_CONFLICT");
  });
});
