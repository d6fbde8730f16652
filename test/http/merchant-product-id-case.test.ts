/**
 * Merchant ingestion takes a product's id in either case (audit M-6). `format: "uuid"` accepts upper-case hex (RFC
 * 9562: the digits are case-insensitive) and the service lowercases every other UUID it is sent, but PATCH /inventory
 * and POST /orders compared the id as text with the stored lower-case one: the inventory item was rejected "no such
 * product in this store" and the human order's item was stored unlinked (product_id null, a title snapshot only).
 */
import { afterAll, beforeAll, expect, test } from "bun:test";
import { login } from "../helpers/agents.ts";
import { startServer, type TestServer } from "../helpers/server.ts";

const SKILLET = "399d72f1-303c-5cf3-bc6a-5c82714b85d4"; // demo-store DS-0005
let srv: TestServer;
let admin: string;

beforeAll(async () => {
  srv = await startServer({ seed: true });
  admin = await login(srv);
}, 60_000);
afterAll(async () => {
  await srv?.stop();
});

const merchant = (path: string, method: string, body: unknown) =>
  srv.json(`/api/v1/merchant/stores/demo-store${path}`, { method, headers: { authorization: `Bearer ${admin}` }, body });

test("PATCH /inventory sets the stock of a product named by its id in upper case", async () => {
  const r = await merchant("/inventory", "PATCH", { items: [{ productId: SKILLET.toUpperCase(), stockQuantity: 7 }] });
  expect(r.status).toBe(200);
  expect(r.body.success).toBe(true);
  expect(r.body.data).toMatchObject({ updated: 1, products: 1, rejected: [] });
  const [p] = await srv.db.sql<{ stock_quantity: number | null }[]>`SELECT stock_quantity FROM products WHERE id = ${SKILLET}`;
  expect(p!.stock_quantity).toBe(7);
});

test("PATCH /inventory counts an id sent in both cases as one product", async () => {
  const r = await merchant("/inventory", "PATCH", { items: [{ productId: SKILLET, stockQuantity: 3 }, { productId: SKILLET.toUpperCase(), stockQuantity: 4 }] });
  expect(r.status).toBe(200);
  expect(r.body.data).toMatchObject({ updated: 2, products: 1, rejected: [] });
  const [p] = await srv.db.sql<{ stock_quantity: number | null }[]>`SELECT stock_quantity FROM products WHERE id = ${SKILLET}`;
  expect(p!.stock_quantity).toBe(4);
});

test("a human order naming its product by the id in upper case links the item to the product", async () => {
  const r = await merchant("/orders", "POST", {
    orders: [{ externalId: "upper-case-1", buyer: "a@b.example", status: "paid", currency: "USD", items: [{ productId: SKILLET.toUpperCase(), quantity: 1, unitPrice: 5 }] }],
  });
  expect(r.status).toBe(201);
  expect(r.body.data.rejected).toEqual([]);
  const orderId = r.body.data.orders[0].orderId;
  const [item] = await srv.db.sql<{ product_id: string | null; title: string }[]>`
    SELECT product_id, title FROM order_items WHERE order_id = ${orderId}`;
  const [product] = await srv.db.sql<{ title: string }[]>`SELECT title FROM products WHERE id = ${SKILLET}`;
  expect(item).toEqual({ product_id: SKILLET, title: product!.title });
});
