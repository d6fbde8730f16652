/**
 * Refund follow-ups of audit A1 through the real server: open requests capped per order and the merchant's refund
 * list paged (M2), a partial refund no longer freezes the order (M3, migration 0035), a merchant's cancel of a paid
 * order gives its units back (L2), a merchant's retry of a FAILED refund is bounded again (L4).
 */
import { beforeAll, describe, expect, test } from "bun:test";
import { readFile } from "node:fs/promises";
import { resolve } from "node:path";
import { ALL_SCOPES, createKey, placeOrder, type TestKey } from "../helpers/agents.ts";
import { useServer } from "../helpers/server.ts";

const BOARD = "5befd987-79cd-540c-8a5d-2ba5a30aed41"; // DS-0011, 26.95 + 6.99 shipping = 33.94
const HEADPHONES = "1e34ef13-d99e-575f-975a-67ea08dcdf99"; // DS-0001, demo-store, 2 variants

const srv = useServer({ seed: true, config: { RATE_LIMITS_ENABLED: false }, admin: true });
let key: TestKey;

beforeAll(async () => {
  key = await createKey(srv, { scopes: ALL_SCOPES });
}, 120_000);

const order = () => placeOrder(srv, key, BOARD, "MOCK");
const refund = (id: string, body: unknown = {}) => srv.json(`/api/v1/agent/orders/${id}/refund`, { method: "POST", headers: key.headers, body });
const merchant = (path: string, init: { method?: string; body?: unknown } = {}) =>
  srv.json(`/api/v1/merchant/stores/demo-store${path}`, { method: init.method ?? "GET", headers: { authorization: `Bearer ${srv.admin}` }, body: init.body });
const move = (id: string, status: string) => merchant(`/orders/${id}/status`, { method: "POST", body: { status } });
const orderRow = async (id: string) =>
  (await srv.db.sql<{ status: string; refunded_minor: number }[]>`SELECT status, refunded_minor::int AS refunded_minor FROM orders WHERE id = ${id}`)[0];

describe("open refund requests per order (M2)", () => {
  test("an order holds at most 5 requests waiting for the merchant: the 6th is 409 conflict naming the open count, and a decision makes room", async () => {
    const id = await order();
    const ids: string[] = [];
    for (let i = 0; i < 5; i++) {
      const r = await refund(id, { amount: 1 });
      expect(r.status).toBe(201);
      ids.push(r.body.data.refund_id);
    }
    const sixth = await refund(id, { amount: 1 });
    expect(sixth.status).toBe(409);
    expect(sixth.body).toMatchObject({
      success: false,
      code: "conflict",
      details: { reason: "too_many_open_refunds", open_refunds: 5, max_open_refunds: 5 },
    });
    expect((await srv.db.sql`SELECT 1 FROM order_refunds WHERE order_id = ${id}`).length).toBe(5);
    expect((await merchant(`/refunds/${ids[0]}/reject`, { method: "POST" })).status).toBe(200);
    expect((await refund(id, { amount: 1 })).status).toBe(201);
  }, 60_000);

  test("the merchant's refund list pages with limit and offset (meta.total) and filters by order_id", async () => {
    const a = await order();
    const b = await order();
    const mine: string[] = [];
    for (let i = 0; i < 3; i++) mine.push((await refund(a, { amount: 10 + i })).body.data.refund_id);
    await refund(b, { amount: 5 });
    const first = await merchant(`/refunds?order_id=${a}&limit=2`);
    expect(first.status).toBe(200);
    expect(first.body.meta).toEqual({ total: 3, limit: 2, offset: 0 });
    const second = await merchant(`/refunds?order_id=${a}&limit=2&offset=2`);
    expect(second.body.meta).toEqual({ total: 3, limit: 2, offset: 2 });
    const seen = [...first.body.data, ...second.body.data].map((r: { refund_id: string; order_id: string }) => {
      expect(r.order_id).toBe(a);
      return r.refund_id;
    });
    expect(seen.sort()).toEqual([...mine].sort());
    // Newest first.
    expect(first.body.data[0].refund_id).toBe(mine[2]);
    const all = await merchant("/refunds?status=PENDING_APPROVAL&limit=200");
    expect(all.body.meta.total).toBeGreaterThanOrEqual(4);
    expect(all.body.meta.limit).toBe(200);
    const bad = await merchant("/refunds?limit=0");
    expect(bad.status).toBe(400);
    expect(bad.body.code).toBe("validation_error");
    expect((await merchant("/refunds?order_id=nope")).status).toBe(400);
  }, 60_000);
});

describe("fulfilment after a partial refund (M3)", () => {
  test("a partly refunded paid order keeps its status, then is fulfilled, shipped and delivered; the refund stays recorded", async () => {
    const id = await order();
    const r = await refund(id, { amount: 1000 });
    expect((await merchant(`/refunds/${r.body.data.refund_id}/approve`, { method: "POST" })).body.data.status).toBe("REFUNDED");
    expect(await orderRow(id)).toEqual({ status: "paid", refunded_minor: 1000 });
    for (const status of ["fulfilled", "shipped", "delivered"]) {
      const m = await move(id, status);
      expect(m.status).toBe(200);
      expect(m.body.data).toMatchObject({ order_id: id, status });
    }
    expect(await orderRow(id)).toEqual({ status: "delivered", refunded_minor: 1000 });
    const o = await srv.json(`/api/v1/agent/orders/${id}`, { headers: key.headers });
    expect(o.body.data).toMatchObject({ status: "delivered", refunded_minor: 1000 });
    const events = await srv.db.sql<{ type: string; from_status: string; to_status: string }[]>`
      SELECT type, from_status, to_status FROM order_events WHERE order_id = ${id} AND type = 'refund_partial'`;
    expect([...events]).toEqual([{ type: "refund_partial", from_status: "paid", to_status: "paid" }]);
    // The rest is still refundable, and refunding it ends the order.
    const rest = await refund(id, {});
    expect(rest.body.data.amount_minor).toBe(3394 - 1000);
    await merchant(`/refunds/${rest.body.data.refund_id}/approve`, { method: "POST" });
    expect(await orderRow(id)).toEqual({ status: "refunded", refunded_minor: 3394 });
  }, 60_000);

  test("a partly refunded paid order can be canceled by the merchant, which refunds the remainder", async () => {
    const id = await order();
    const r = await refund(id, { amount: 394 });
    await merchant(`/refunds/${r.body.data.refund_id}/approve`, { method: "POST" });
    const c = await move(id, "canceled");
    expect(c.status).toBe(200);
    expect(c.body.data).toMatchObject({ order_id: id, status: "canceled", refund: { status: "REFUNDED", amount_minor: 3000 } });
    expect(await orderRow(id)).toEqual({ status: "canceled", refunded_minor: 3394 });
  }, 60_000);

  test("migration 0035 puts a legacy partially_refunded order back to the status its first partial refund found", async () => {
    const shipped = await order();
    const bare = await order();
    await move(shipped, "shipped");
    await srv.db.sql`UPDATE orders SET status = 'partially_refunded', refunded_minor = 100 WHERE id IN ${srv.db.sql([shipped, bare])}`;
    await srv.db.sql`INSERT INTO order_events (order_id, type, from_status, to_status, data)
      VALUES (${shipped}, 'refund_partial', 'shipped', 'partially_refunded', '{}'), (${shipped}, 'refund_partial', 'partially_refunded', 'partially_refunded', '{}')`;
    const text = await readFile(resolve(import.meta.dir, "../../infra/migrations/0035_partial_refund_restock.sql"), "utf8");
    await srv.db.sql.unsafe(text.slice(0, text.indexOf("-- L2:")));
    expect(await orderRow(shipped)).toEqual({ status: "shipped", refunded_minor: 100 });
    expect(await orderRow(bare)).toEqual({ status: "paid", refunded_minor: 100 });
    const [ev] = await srv.db.sql`SELECT type, from_status, to_status FROM order_events WHERE order_id = ${shipped} ORDER BY id DESC LIMIT 1`;
    expect(ev).toEqual({ type: "status_restored", from_status: "partially_refunded", to_status: "shipped" });
    expect((await move(shipped, "delivered")).status).toBe(200);
  }, 60_000);
});

describe("stock back on a merchant's cancel of a paid order (L2)", () => {
  async function setStock(a: number, b: number) {
    await srv.db.sql`UPDATE products SET stock_quantity = ${a + b}, reserved_quantity = 0, in_stock = true, variant_reserved = '{}'::jsonb,
      variants = jsonb_set(jsonb_set(jsonb_set(jsonb_set(variants, '{0,stockQuantity}', to_jsonb(${a}::int)), '{0,inStock}', 'true'),
        '{1,stockQuantity}', to_jsonb(${b}::int)), '{1,inStock}', 'true')
      WHERE id = ${HEADPHONES}`;
  }
  async function level() {
    const [p] = await srv.db.sql<{ stock: number; in_stock: boolean; a: number; b: number; a_in: boolean }[]>`
      SELECT stock_quantity AS stock, in_stock, (variants->0->>'stockQuantity')::int AS a, (variants->1->>'stockQuantity')::int AS b,
        (variants->0->>'inStock')::boolean AS a_in FROM products WHERE id = ${HEADPHONES}`;
    return p;
  }
  async function buyVariant(quantity: number): Promise<string> {
    const [v] = await srv.db.sql<{ a: string }[]>`SELECT variants->0->>'id' AS a FROM products WHERE id = ${HEADPHONES}`;
    const cart = await srv.json("/api/v1/agent/cart", { method: "POST", headers: key.headers, body: { items: [{ product_id: HEADPHONES, variant_id: v.a, quantity }] } });
    expect(cart.status).toBe(201);
    const r = await srv.json("/api/v1/agent/checkout", { method: "POST", headers: key.headers, body: { cartId: cart.body.data.id, payment_method: "MOCK" } });
    expect(r.status).toBe(200);
    return r.body.data.order_id as string;
  }

  test("the units sold come back to the product and its variant, once, and a variant sold out is in stock again", async () => {
    await setStock(3, 5);
    const id = await buyVariant(2);
    expect(await level()).toEqual({ stock: 6, in_stock: true, a: 1, b: 5, a_in: true });
    const c = await move(id, "canceled");
    expect(c.body.data).toMatchObject({ status: "canceled", refund: { status: "REFUNDED" } });
    expect(await level()).toEqual({ stock: 8, in_stock: true, a: 3, b: 5, a_in: true });
    // The merchant's repeated cancel answers the cancel again (audit D-1) and gives nothing back a second time.
    const again = await move(id, "canceled");
    expect({ status: again.status, body: again.body }).toEqual({ status: 200, body: c.body });
    expect(await level()).toEqual({ stock: 8, in_stock: true, a: 3, b: 5, a_in: true });
    const [res] = await srv.db.sql`SELECT status FROM stock_reservations WHERE order_id = ${id}`;
    expect(res.status).toBe("returned");

    await setStock(2, 0);
    const all = await buyVariant(2);
    expect(await level()).toEqual({ stock: 0, in_stock: false, a: 0, b: 0, a_in: false });
    await move(all, "fulfilled");
    expect((await move(all, "canceled")).status).toBe(200);
    expect(await level()).toEqual({ stock: 2, in_stock: true, a: 2, b: 0, a_in: true });
  }, 60_000);
});

describe("a merchant's retry of a FAILED refund (L4)", () => {
  test("is refused (409 conflict, exceeds_refundable) when requests made since it failed took its share, and nothing reaches the processor", async () => {
    const id = await order();
    const [{ payment_rail: rail }] = await srv.db.sql<{ payment_rail: string }[]>`SELECT payment_rail FROM orders WHERE id = ${id}`;
    const first = (await refund(id, { amount: 3000 })).body.data.refund_id as string;
    // The processor cannot be reached for this order: the approve ends FAILED (the sandbox has no such refusal of its own).
    await srv.db.sql`UPDATE orders SET payment_rail = 'manual' WHERE id = ${id}`;
    const failed = await merchant(`/refunds/${first}/approve`, { method: "POST" });
    expect(failed.body.data.status).toBe("FAILED");
    await srv.db.sql`UPDATE orders SET payment_rail = ${rail} WHERE id = ${id}`;
    // A FAILED refund is not in flight: the buyer may ask again, and the merchant pays that one.
    const second = await refund(id, { amount: 1000 });
    expect(second.status).toBe(201);
    expect((await merchant(`/refunds/${second.body.data.refund_id}/approve`, { method: "POST" })).body.data.status).toBe("REFUNDED");
    const retry = await merchant(`/refunds/${first}/approve`, { method: "POST" });
    expect(retry.status).toBe(409);
    expect(retry.body).toMatchObject({
      success: false,
      code: "conflict",
      details: { reason: "exceeds_refundable", status: "FAILED", amount_minor: 3000, refundable_minor: 2394 },
    });
    const [row] = await srv.db.sql`SELECT status, rail_attempt FROM order_refunds WHERE id = ${first}`;
    expect(row).toEqual({ status: "FAILED", rail_attempt: 0 });
    expect(await orderRow(id)).toEqual({ status: "paid", refunded_minor: 1000 });
    expect((await merchant(`/refunds/${first}/reject`, { method: "POST" })).body.data.status).toBe("REJECTED");
  }, 60_000);

  test("goes through when what it asks is still refundable", async () => {
    const id = await order();
    const [{ payment_rail: rail }] = await srv.db.sql<{ payment_rail: string }[]>`SELECT payment_rail FROM orders WHERE id = ${id}`;
    const first = (await refund(id, { amount: 2394 })).body.data.refund_id as string;
    await srv.db.sql`UPDATE orders SET payment_rail = 'manual' WHERE id = ${id}`;
    expect((await merchant(`/refunds/${first}/approve`, { method: "POST" })).body.data.status).toBe("FAILED");
    await srv.db.sql`UPDATE orders SET payment_rail = ${rail} WHERE id = ${id}`;
    const second = await refund(id, { amount: 1000 });
    await merchant(`/refunds/${second.body.data.refund_id}/approve`, { method: "POST" });
    const retry = await merchant(`/refunds/${first}/approve`, { method: "POST" });
    expect(retry.status).toBe(200);
    expect(retry.body.data).toMatchObject({ refund_id: first, status: "REFUNDED", amount_minor: 2394 });
    expect(await orderRow(id)).toEqual({ status: "refunded", refunded_minor: 3394 });
  }, 60_000);
});
