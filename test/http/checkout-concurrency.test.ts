import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { ALL_SCOPES, createKey, type TestKey } from "../helpers/agents.ts";
import { startServer, type TestServer } from "../helpers/server.ts";

const SKILLET = "399d72f1-303c-5cf3-bc6a-5c82714b85d4"; // DS-0005, demo-store
const BOARD = "5befd987-79cd-540c-8a5d-2ba5a30aed41"; // DS-0011, untracked

let srv: TestServer;
let keys: TestKey[];

beforeAll(async () => {
  // Rate limits would refuse 200 calls a minute from one key long before the stock question arises.
  srv = await startServer({ seed: true, config: { RATE_LIMITS_ENABLED: false } });
  keys = await Promise.all([0, 1, 2, 3].map(() => createKey(srv, { scopes: ALL_SCOPES })));
}, 120_000);
afterAll(async () => {
  await srv?.stop();
});

const newCart = async (k: TestKey, product: string) => {
  const r = await srv.json("/api/v1/agent/cart", { method: "POST", headers: k.headers, body: { items: [{ product_id: product, quantity: 1 }] } });
  expect(r.status).toBe(201);
  return r.body.data.id as string;
};

describe("concurrency", () => {
  test("100 concurrent completions of one session with the same idempotency key make exactly one order and one capture", async () => {
    const k = keys[0];
    const cartId = await newCart(k, BOARD);
    const p = await srv.json("/api/v1/agent/checkout/preview", { method: "POST", headers: k.headers, body: { cartId } });
    const sid = p.body.data.checkout_session_id;
    const key = crypto.randomUUID();
    const results = await Promise.all(
      Array.from({ length: 100 }, () =>
        srv.json("/api/v1/agent/checkout", { method: "POST", headers: k.headers, body: { cartId, checkout_session_id: sid, idempotency_key: key, payment_method: "tok_approve" } }),
      ),
    );
    const ok = results.filter((r) => r.status === 200);
    const repeats = results.filter((r) => r.status === 409);
    expect(ok).toHaveLength(1);
    expect(repeats).toHaveLength(99);
    for (const r of repeats) {
      expect(r.body.code).toBe("CHECKOUT_ALREADY_IN_PROGRESS");
      expect(r.body.details.order_ids).toEqual([ok[0].body.data.order_id]);
    }
    const orders = await srv.db.sql`SELECT id, status FROM orders WHERE cart_id = ${cartId}`;
    expect([...orders]).toEqual([{ id: ok[0].body.data.order_id, status: "paid" }]);
    const captures = await srv.db.sql`SELECT count(*)::int AS n FROM sandbox_ledger_intents WHERE intent_id LIKE 'pi_%' AND intent_id IN (SELECT intent_id FROM orders WHERE cart_id = ${cartId})`;
    expect(captures[0].n).toBe(1);
  }, 60_000);

  test("200 concurrent checkouts competing for the last 10 units make exactly 10 orders; stock ends at 0, never negative", async () => {
    await srv.db.sql`UPDATE products SET stock_quantity = 10, reserved_quantity = 0, in_stock = true WHERE id = ${SKILLET}`;
    const carts: { k: TestKey; id: string }[] = [];
    for (let i = 0; i < 200; i += 20) {
      const batch = await Promise.all(Array.from({ length: 20 }, (_, j) => keys[(i + j) % keys.length]).map(async (k) => ({ k, id: await newCart(k, SKILLET) })));
      carts.push(...batch);
    }
    const results = await Promise.all(
      carts.map(({ k, id }) => srv.json("/api/v1/agent/checkout", { method: "POST", headers: k.headers, body: { cartId: id, payment_method: "MOCK" } })),
    );
    const statuses = results.map((r) => r.status);
    expect(statuses.filter((s) => s === 200)).toHaveLength(10);
    expect(statuses.filter((s) => s === 409)).toHaveLength(190);
    for (const r of results.filter((x) => x.status === 409)) {
      expect(r.body.code).toBe("STATE_EXECUTION_BLOCKED");
      expect(["out_of_stock", "stock_insufficient"]).toContain(r.body.details.reasons[0].code);
    }
    const [p] = await srv.db.sql<{ s: number; r: number; in_stock: boolean }[]>`SELECT stock_quantity AS s, reserved_quantity AS r, in_stock FROM products WHERE id = ${SKILLET}`;
    expect(p).toEqual({ s: 0, r: 0, in_stock: false });
    const paid = await srv.db.sql`SELECT count(*)::int AS n FROM orders o JOIN order_items i ON i.order_id = o.id WHERE i.product_id = ${SKILLET} AND o.status = 'paid' AND o.cart_id IS NOT NULL`;
    expect(paid[0].n).toBe(10);
    const held = await srv.db.sql`SELECT count(*)::int AS n FROM stock_reservations WHERE status = 'held'`;
    expect(held[0].n).toBe(0);
  }, 120_000);
});
