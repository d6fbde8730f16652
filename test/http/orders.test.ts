import { beforeAll, describe, expect, test } from "bun:test";
import { ALL_SCOPES, createKey, login, merchantLogin, placeOrder, twoTenants, type TestKey } from "../helpers/agents.ts";
import { useServer } from "../helpers/server.ts";

const BOARD = "5befd987-79cd-540c-8a5d-2ba5a30aed41"; // DS-0011, demo-store (owned by the admin)

const srv = useServer({ seed: true, admin: true });
let key: TestKey;
let other: TestKey;

beforeAll(async () => {
  ({ key, other } = await twoTenants(srv));
}, 120_000);

const order = (k: TestKey = key) => placeOrder(srv, k, BOARD);
const setStatus = (id: string, status: string, token = srv.admin, slug = "demo-store") =>
  srv.json(`/api/v1/merchant/stores/${slug}/orders/${id}/status`, { method: "POST", headers: { authorization: `Bearer ${token}` }, body: { status } });

describe("reading orders", () => {
  test("the owning key reads its order with status, items and event history; another key and an unknown id get 404", async () => {
    const id = await order();
    const r = await srv.json(`/api/v1/agent/orders/${id}`, { headers: key.headers });
    expect(r.status).toBe(200);
    expect(r.body.data).toMatchObject({ id, status: "paid", merchant_slug: "demo-store", currency: "USD", items: [{ product_id: BOARD, quantity: 1, unit_price_minor: 2695 }] });
    const theirs = await srv.json(`/api/v1/agent/orders/${id}`, { headers: other.headers });
    expect(theirs.status).toBe(404);
    expect(theirs.body.code).toBe("ORDER_NOT_FOUND");
    const none = await srv.json(`/api/v1/agent/orders/${crypto.randomUUID()}`, { headers: key.headers });
    expect(none.status).toBe(404);
    const bad = await srv.json(`/api/v1/agent/orders/not-a-uuid`, { headers: key.headers });
    expect(bad.status).toBe(400);
  });

  test("a key with orders:read only may read; a SANDBOX key is refused with 403", async () => {
    const reader = await createKey(srv, { scopes: ["orders:read"] });
    const id = await order();
    // orders:read is a read scope, but ownership still applies: a different key than the buyer gets 404
    const r = await srv.json(`/api/v1/agent/orders/${id}`, { headers: reader.headers });
    expect(r.status).toBe(404);
    const sandbox = await createKey(srv, { scopes: ALL_SCOPES, tier: "SANDBOX" });
    const s = await srv.json(`/api/v1/agent/orders/${id}`, { headers: sandbox.headers });
    expect(s.status).toBe(403);
    expect(s.body.code).toBe("sandbox_not_allowed");
  });
});

describe("merchant order status", () => {
  test("the owner moves paid → fulfilled → shipped → delivered; each move is appended to the history and written to the outbox", async () => {
    const id = await order();
    for (const status of ["fulfilled", "shipped", "delivered"]) {
      const r = await setStatus(id, status);
      expect(r.status).toBe(200);
      expect(r.body.data).toEqual({ order_id: id, status });
    }
    const o = await srv.json(`/api/v1/agent/orders/${id}`, { headers: key.headers });
    expect(o.body.data.status).toBe("delivered");
    expect(o.body.data.delivered_at).not.toBeNull();
    expect(o.body.data.events.map((e: { to_status: string | null }) => e.to_status)).toEqual(["pending", "paid", "fulfilled", "shipped", "delivered"]);
    const out = await srv.db.sql<{ payload: { fromStatus: string; toStatus: string; merchantSlug: string } }[]>`
      SELECT payload FROM webhook_events WHERE kind = 'order.status_changed' AND payload->>'orderId' = ${id} ORDER BY created_at`;
    expect(out.map((x) => `${x.payload.fromStatus}>${x.payload.toStatus}`)).toEqual(["pending>paid", "paid>fulfilled", "fulfilled>shipped", "shipped>delivered"]);
    expect(Object.keys(out[1].payload).sort()).toEqual(["currency", "event", "fromStatus", "merchantSlug", "orderId", "timestamp", "toStatus", "totalAmount"]);
  });

  test("an illegal move is 409 conflict; the history refuses rewrites", async () => {
    const id = await order();
    await setStatus(id, "shipped");
    const r = await setStatus(id, "fulfilled");
    expect(r.status).toBe(409);
    expect(r.body.code).toBe("conflict");
    expect(r.body.details).toMatchObject({ status: "shipped", event: "fulfill" });
    await expect(srv.db.sql`UPDATE order_events SET type = 'x' WHERE order_id = ${id}`).rejects.toThrow(/append-only/);
  });

  test("another merchant gets 404 store_not_found for this store; no token is 401; a bad status is 400", async () => {
    const id = await order();
    const greenleaf = await login(srv, merchantLogin("greenleaf-living"));
    const r = await setStatus(id, "shipped", greenleaf);
    expect(r.status).toBe(404);
    expect(r.body.code).toBe("store_not_found");
    const anon = await srv.json(`/api/v1/merchant/stores/demo-store/orders/${id}/status`, { method: "POST", body: { status: "shipped" } });
    expect(anon.status).toBe(401);
    const bad = await setStatus(id, "lost");
    expect(bad.status).toBe(400);
    const wrongStore = await setStatus(id, "shipped", greenleaf, "greenleaf-living");
    expect(wrongStore.status).toBe(404);
    expect(wrongStore.body.code).toBe("ORDER_NOT_FOUND");
  });
});
