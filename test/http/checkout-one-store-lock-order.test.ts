/**
 * One-store checkouts of several tracked products lock the leg's product rows in one order (docs/checkout.md "Lock
 * order"): the hold, the capture settle, the release and the cancel each lock the products first by id. Before,
 * the hold locked them in the order of the cart's lines and the settle in the order its plan read the reservation's
 * lines: 40 concurrent checkouts of the same two tracked products gave 34–40 × 503 (40P01 deadlocks) after the
 * card was charged (audit K-4).
 */
import { expect, test } from "bun:test";
import { ALL_SCOPES, createKey } from "../helpers/agents.ts";
import { useServer } from "../helpers/server.ts";
import { TRACKED_BOARD } from "../helpers/two-store-session.ts";

const srv = useServer({ seed: true, config: { RATE_LIMITS_ENABLED: false } });

// Two more tracked demo-store products (the audit's pair).
const P1 = "07959359-57dd-5898-845a-3927446e73cb";
const P2 = "0aace689-92e7-5efa-a26a-305d0128d5b2";

type Res = { status: number; body: any };

test("forty concurrent one-store checkouts of the same tracked products, in both line orders, all pay and sell the stock exactly", async () => {
  const ids = [P1, P2, TRACKED_BOARD];
  await srv.db.sql`UPDATE products SET stock_quantity = 1000, reserved_quantity = 0, in_stock = true WHERE id IN ${srv.db.sql(ids)}`;
  const k = await createKey(srv, { tier: "ENTERPRISE", scopes: ALL_SCOPES });
  const post = (path: string, body: unknown): Promise<Res> => srv.json(`/api/v1${path}`, { method: "POST", headers: k.headers, body });
  const BUYERS = 40;
  const carts: string[] = [];
  for (let i = 0; i < BUYERS; i++) {
    const lines = [P1, P2, TRACKED_BOARD].map((product_id) => ({ product_id, quantity: 1 }));
    // two and three tracked lines, in cart order and reversed
    const items = i % 4 === 0 ? lines.slice(0, 2) : i % 4 === 1 ? lines.slice(0, 2).reverse() : i % 4 === 2 ? lines : lines.slice().reverse();
    const c = await post("/agent/cart", { items });
    expect(c.status).toBe(201);
    carts.push(c.body.data.id);
  }
  const res = await Promise.all(carts.map((cartId) => post("/agent/checkout", { cartId, payment_method: "MOCK", idempotency_key: crypto.randomUUID() })));
  const answers = res.map((r) => `${r.status} ${r.body.code ?? r.body.data?.status ?? ""}`);
  expect(answers.filter((a) => a !== "200 COMPLETED")).toEqual([]);
  const rows = await srv.db.sql<{ id: string; stock: number; reserved: number }[]>`
    SELECT id::text, stock_quantity::int AS stock, reserved_quantity::int AS reserved FROM products WHERE id IN ${srv.db.sql(ids)} ORDER BY id`;
  const sold: Record<string, number> = { [P1]: BUYERS, [P2]: BUYERS, [TRACKED_BOARD]: BUYERS / 2 };
  expect([...rows]).toEqual(ids.slice().sort().map((id) => ({ id, stock: 1000 - sold[id]!, reserved: 0 })));
}, 120_000);
