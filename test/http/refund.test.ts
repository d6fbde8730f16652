import { beforeAll, describe, expect, test } from "bun:test";
import { ALL_SCOPES, createKey, login, merchantLogin, placeOrder, twoTenants, type TestKey } from "../helpers/agents.ts";
import { useServer } from "../helpers/server.ts";

const BOARD = "5befd987-79cd-540c-8a5d-2ba5a30aed41"; // DS-0011, 26.95 + 6.99 shipping = 33.94

const srv = useServer({ seed: true, admin: true });
let key: TestKey;
let other: TestKey;

beforeAll(async () => {
  ({ key, other } = await twoTenants(srv));
}, 120_000);

const order = (k: TestKey = key, token = "MOCK") => placeOrder(srv, k, BOARD, token);
const refund = (id: string, body: unknown = {}, k: TestKey = key) => srv.json(`/api/v1/agent/orders/${id}/refund`, { method: "POST", headers: k.headers, body });
const merchant = (path: string, init: { method?: string; body?: unknown; token?: string } = {}) =>
  srv.json(`/api/v1/merchant/stores/demo-store${path}`, { method: init.method ?? "GET", headers: { authorization: `Bearer ${init.token ?? srv.admin}` }, body: init.body });

describe("requesting a refund", () => {
  test("an omitted amount asks for the full total: 201 PENDING_APPROVAL; then nothing is left (409)", async () => {
    const id = await order();
    const r = await refund(id, { reason: "arrived broken" });
    expect(r.status).toBe(201);
    expect(r.body.data).toMatchObject({ order_id: id, status: "PENDING_APPROVAL", amount_minor: 3394, amount: 33.94, currency: "USD", reason: "arrived broken" });
    const again = await refund(id, { amount: 1 });
    expect(again.status).toBe(409);
    expect(again.body.code).toBe("conflict");
  });

  test("amounts are integer cents > 0 and never above what is left; reasons are at most 255 characters (code points)", async () => {
    const id = await order();
    for (const body of [{ amount: 0 }, { amount: -5 }, { amount: 1.5 }, { amount: "ten" }, { reason: 7 }]) {
      const r = await refund(id, body);
      expect(r.status).toBe(400);
    }
    const long = await refund(id, { amount: 100, reason: "x".repeat(256) });
    expect(long.status).toBe(400);
    expect(long.body).toMatchObject({ code: "INVALID_ARGUMENT", details: { field: "reason" } });
    const emoji = await refund(id, { amount: 100, reason: "📦".repeat(255) });
    expect(emoji.status).toBe(201);
    const over = await refund(id, { amount: 3394 });
    expect(over.status).toBe(400);
    expect(over.body).toMatchObject({ code: "INVALID_ARGUMENT", details: { field: "amount", refundable_minor: 3294 } });
    const rest = await refund(id, { amount: 3294 });
    expect(rest.status).toBe(201);
  });

  test("another key's order, an unknown order and a non-uuid id are 404", async () => {
    const id = await order();
    expect((await refund(id, {}, other)).status).toBe(404);
    expect((await refund(crypto.randomUUID())).status).toBe(404);
    const bad = await refund("order-1");
    expect(bad.status).toBe(404);
    expect(bad.body.code).toBe("ORDER_NOT_FOUND");
  });

  test("a blocked allowlist binding is 404 until the merchant unblocks the key", async () => {
    const id = await order();
    const list = await merchant("/allowlist");
    expect(list.body.data.find((b: { key_id: string }) => b.key_id === key.id)).toMatchObject({ status: "allowed" });
    const block = await merchant(`/allowlist/${key.id}`, { method: "POST", body: { status: "blocked" } });
    expect(block.status).toBe(200);
    expect((await refund(id, { amount: 100 })).status).toBe(404);
    await merchant(`/allowlist/${key.id}`, { method: "POST", body: { status: "allowed" } });
    expect((await refund(id, { amount: 100 })).status).toBe(201);
    const stranger = await login(srv, merchantLogin("greenleaf-living"));
    const foreign = await merchant(`/allowlist/${key.id}`, { method: "POST", body: { status: "blocked" }, token: stranger });
    expect(foreign.status).toBe(404);
    expect(foreign.body.code).toBe("store_not_found");
  });

  test("after the return window (30 days for the demo store) the request is 409 RETURN_WINDOW_EXPIRED", async () => {
    const id = await order();
    await srv.db.sql`UPDATE orders SET created_at = now() - interval '31 days' WHERE id = ${id}`;
    const r = await refund(id, {});
    expect(r.status).toBe(409);
    expect(r.body.code).toBe("RETURN_WINDOW_EXPIRED");
  });

  test("a SANDBOX key is refused with 403", async () => {
    const sandbox = await createKey(srv, { scopes: ALL_SCOPES, tier: "SANDBOX" });
    const r = await refund(crypto.randomUUID(), {}, sandbox);
    expect(r.status).toBe(403);
  });
});

describe("merchant review", () => {
  test("the merchant lists pending refunds, approves one (refunded through the rail) and rejects another; the order follows", async () => {
    const id = await order(key, "tok_approve");
    const a = await refund(id, { amount: 1000 });
    const b = await refund(id, { amount: 500 });
    const pending = await merchant("/refunds?status=PENDING_APPROVAL");
    expect(pending.status).toBe(200);
    expect(pending.body.data.map((r: { refund_id: string }) => r.refund_id)).toEqual(expect.arrayContaining([a.body.data.refund_id, b.body.data.refund_id]));
    const approved = await merchant(`/refunds/${a.body.data.refund_id}/approve`, { method: "POST" });
    expect(approved.status).toBe(200);
    expect(approved.body.data.status).toBe("REFUNDED");
    expect(approved.body.data.refund_reference).toMatch(/^re_/);
    const rejected = await merchant(`/refunds/${b.body.data.refund_id}/reject`, { method: "POST" });
    expect(rejected.body.data.status).toBe("REJECTED");
    const twice = await merchant(`/refunds/${b.body.data.refund_id}/approve`, { method: "POST" });
    expect(twice.status).toBe(409);
    const o = await srv.json(`/api/v1/agent/orders/${id}`, { headers: key.headers });
    expect(o.body.data).toMatchObject({ status: "paid", refunded_minor: 1000 }); // a partial refund keeps the fulfilment status (audit A1 M3)
    const ledger = await srv.db.sql`SELECT refunded_minor FROM sandbox_ledger_intents WHERE capture_ref = ${o.body.data.capture_reference}`;
    expect(ledger[0].refunded_minor).toBe(1000);
    // the rest, then the order is refunded, and nothing more can be asked
    const rest = await refund(id, {});
    expect(rest.body.data.amount_minor).toBe(3394 - 1000);
    await merchant(`/refunds/${rest.body.data.refund_id}/approve`, { method: "POST" });
    const done = await srv.json(`/api/v1/agent/orders/${id}`, { headers: key.headers });
    expect(done.body.data).toMatchObject({ status: "refunded", refunded_minor: 3394 });
    expect((await refund(id, { amount: 1 })).status).toBe(409);
  });

  test("another merchant cannot list or decide this store's refunds (404)", async () => {
    const stranger = await login(srv, merchantLogin("greenleaf-living"));
    const r = await merchant("/refunds", { token: stranger });
    expect(r.status).toBe(404);
  });
});
