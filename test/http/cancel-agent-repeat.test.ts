/**
 * The agent's cancel (REST POST /agent/orders/{id}/cancel) answers 200 `canceled` exactly when the agent's own cancel
 * canceled the order and nothing was charged for it (review RC-1, RC-3):
 * - a repeated cancel by the same agent (a client retry in flight, or sent after the first finished) answers 200
 *   `canceled` again, as MCP cancel_order's idempotentHint promises;
 * - a pending order the merchant canceled is 409 ORDER_NOT_CANCELLABLE (the agent's cancel did not cancel it);
 * - in a two-store checkout, the cart's cancel of the session succeeds without touching a store's captured leg: an
 *   order that was paid, then canceled and refunded by its merchant while the agent's cancel waited, is 409 with
 *   status canceled, not 200 `{canceled, refund: null}` (made deterministic with row locks, as RC's repro).
 */
import { beforeAll, expect, test } from "bun:test";
import { ALL_SCOPES, createKey, type TestKey } from "../helpers/agents.ts";
import { useServer } from "../helpers/server.ts";

const BOARD = "5befd987-79cd-540c-8a5d-2ba5a30aed41"; // DS-0011, untracked stock, demo-store
const GREEN = "0b5e6581-f379-55d4-baa7-547e63907bea"; // greenleaf-living
const srv = useServer({ seed: true, config: { RATE_LIMITS_ENABLED: false }, admin: true });
let key: TestKey;

beforeAll(async () => {
  key = await createKey(srv, { scopes: ALL_SCOPES, tier: "ENTERPRISE" });
}, 120_000);

const cancel = (orderId: string) => srv.json(`/api/v1/agent/orders/${orderId}/cancel`, { method: "POST", headers: key.headers, body: {} });

/** A one-store checkout waiting for the buyer's approval: its order is pending. */
async function pendingOrder(): Promise<string> {
  const c = await srv.json("/api/v1/agent/cart", { method: "POST", headers: key.headers, body: { items: [{ product_id: BOARD, quantity: 1 }] } });
  expect(c.status).toBe(201);
  const w = await srv.json("/api/v1/agent/checkout", {
    method: "POST",
    headers: key.headers,
    body: { cartId: c.body.data.id, payment_method: "tok_needs_approval", idempotency_key: crypto.randomUUID() },
  });
  expect(w.status).toBe(202);
  const [o] = await srv.db.sql<{ id: string }[]>`SELECT id FROM orders WHERE cart_id = ${c.body.data.id} AND status = 'pending'`;
  return o!.id;
}

/** Waits until a statement of this test's database waits on a row lock (the other side of a held test lock). */
async function someoneWaits(): Promise<void> {
  for (let i = 0; i < 1_000; i++) {
    const [w] = await srv.db.sql<{ n: number }[]>`
      SELECT count(*)::int AS n FROM pg_stat_activity
      WHERE datname = current_database() AND wait_event_type = 'Lock' AND pid <> pg_backend_pid() AND query ILIKE '%orders%'`;
    if (w!.n > 0) return;
    await Bun.sleep(10);
  }
  throw new Error("nobody waited on the held order row");
}

test("an agent's cancel sent twice at once answers 200 canceled to both, and a later retry answers 200 canceled too", async () => {
  const orderId = await pendingOrder();
  const both = await Promise.all([cancel(orderId), cancel(orderId)]);
  for (const r of both) {
    expect(r.status).toBe(200);
    expect(r.body).toEqual({ success: true, data: { order_id: orderId, status: "canceled", refund: null } });
  }
  const later = await cancel(orderId);
  expect(later.status).toBe(200);
  expect(later.body).toEqual({ success: true, data: { order_id: orderId, status: "canceled", refund: null } });
  const [o] = await srv.db.sql<{ status: string; paid_at: Date | null }[]>`SELECT status, paid_at FROM orders WHERE id = ${orderId}`;
  expect(o).toEqual({ status: "canceled", paid_at: null });
}, 60_000);

test("an agent's cancel of a pending order its merchant canceled is 409 ORDER_NOT_CANCELLABLE with status canceled", async () => {
  const orderId = await pendingOrder();
  const m = await srv.json(`/api/v1/merchant/stores/demo-store/orders/${orderId}/status`, { method: "POST", headers: { authorization: `Bearer ${srv.admin}` }, body: { status: "canceled" } });
  expect(m.status).toBe(200);
  expect(m.body.data).toMatchObject({ order_id: orderId, status: "canceled" });
  const r = await cancel(orderId);
  expect(r.status).toBe(409);
  expect(r.body).toMatchObject({ success: false, code: "ORDER_NOT_CANCELLABLE", details: { status: "canceled", order_id: orderId } });
}, 60_000);

test("an agent's cancel of a two-store checkout's order that was paid, then canceled and refunded by its merchant, is 409 with status canceled, not 200 with refund null", async () => {
  const c = await srv.json("/api/v1/agent/cart", { method: "POST", headers: key.headers, body: { items: [{ product_id: BOARD, quantity: 1 }, { product_id: GREEN, quantity: 1 }] } });
  expect(c.status).toBe(201);
  const cartId = c.body.data.id as string;
  const p = await srv.json("/api/v1/agent/checkout/preview", { method: "POST", headers: key.headers, body: { cartId } });
  expect(p.status).toBe(200);
  const body = {
    cartId,
    checkout_session_id: p.body.data.checkout_session_id,
    idempotency_key: crypto.randomUUID(),
    payment_methods: { "demo-store": "tok_needs_approval", "greenleaf-living": "tok_needs_approval" },
  };
  const w = await srv.json("/api/v1/agent/checkout", { method: "POST", headers: key.headers, body });
  expect(w.status).toBe(202);
  const orders = await srv.db.sql<{ id: string; store_slug: string }[]>`SELECT id, store_slug FROM orders WHERE cart_id = ${cartId} ORDER BY store_slug`;
  const x = orders.find((o) => o.store_slug === "demo-store")!.id;
  const y = orders.find((o) => o.store_slug === "greenleaf-living")!.id;
  const urls = w.body.details.approval_urls as { merchant_slug: string; url: string }[];
  expect((await fetch(`${urls.find((u) => u.merchant_slug === "demo-store")!.url}/approve`, { method: "POST" })).status).toBe(200);
  expect((await fetch(`${urls.find((u) => u.merchant_slug === "greenleaf-living")!.url}/reject`, { method: "POST" })).status).toBe(200);

  const t1 = await srv.db.sql.reserve();
  const t2 = await srv.db.sql.reserve();
  let paid, merchant, agent;
  try {
    // 1. The completion waits on X's row; 2. the agent's cancel of X reads X pending and queues at the cart.
    await t1`BEGIN`;
    await t1`SELECT id FROM orders WHERE id = ${x} FOR UPDATE`;
    const paying = srv.json("/api/v1/agent/checkout", { method: "POST", headers: key.headers, body });
    await someoneWaits();
    const agentCanceling = cancel(x);
    await Bun.sleep(300);
    // 3. Y's row held: the cart's cancel of the session (after the completion) waits on it.
    await t2`BEGIN`;
    await t2`SELECT id FROM orders WHERE id = ${y} FOR NO KEY UPDATE`;
    await t1`COMMIT`;
    paid = await paying;
    await someoneWaits();
    // 4. Meanwhile the merchant cancels paid X (refunded); 5. the session cancel goes on: it cancels Y, not X.
    merchant = await srv.json(`/api/v1/merchant/stores/demo-store/orders/${x}/status`, { method: "POST", headers: { authorization: `Bearer ${srv.admin}` }, body: { status: "canceled" } });
    await t2`COMMIT`;
    agent = await agentCanceling;
  } finally {
    t1.release();
    t2.release();
  }
  expect(paid.status).toBe(402);
  expect(paid.body.code).toBe("PAYMENT_NOT_APPROVED");
  expect(merchant.status).toBe(200);
  expect(merchant.body.data).toMatchObject({ order_id: x, status: "canceled", refund: { status: "REFUNDED" } });
  expect(agent.status).toBe(409);
  expect(agent.body).toMatchObject({ success: false, code: "ORDER_NOT_CANCELLABLE", details: { status: "canceled", order_id: x } });
  const rows = await srv.db.sql<{ id: string; status: string; total_minor: number; refunded_minor: number }[]>`
    SELECT id, status, total_minor::int, refunded_minor::int FROM orders WHERE cart_id = ${cartId}`;
  expect(rows.find((r) => r.id === x)).toMatchObject({ status: "canceled", refunded_minor: rows.find((r) => r.id === x)!.total_minor });
  expect(rows.find((r) => r.id === y)).toMatchObject({ status: "canceled", refunded_minor: 0 });
  // Y was canceled by the agent's cancel of the session: its own cancel of Y answers 200 (idempotent)
  const again = await cancel(y);
  expect(again.status).toBe(200);
  expect(again.body).toEqual({ success: true, data: { order_id: y, status: "canceled", refund: null } });
}, 60_000);
