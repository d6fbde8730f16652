/**
 * A full refund of a paid order that was never fulfilled gives its sold units back (review R1-L1), as the merchant's
 * cancel of a paid order does: the goods never left the merchant. Once, in the refund's transaction (the committed
 * reservation is marked `returned`). A partial refund, and a full refund once the order is fulfilled, leave the
 * stock as it is (docs/checkout.md "Refunds").
 */
import { beforeAll, describe, expect, test } from "bun:test";
import { ALL_SCOPES, createKey, type TestKey } from "../helpers/agents.ts";
import { useServer } from "../helpers/server.ts";

const srv = useServer({ seed: true, config: { RATE_LIMITS_ENABLED: false }, admin: true });
let key: TestKey;

beforeAll(async () => {
  key = await createKey(srv, { tier: "ENTERPRISE", scopes: ALL_SCOPES });
}, 120_000);

type Res = { status: number; body: any };
const asAdmin = () => ({ authorization: `Bearer ${srv.admin}` });
const agentPost = (path: string, body: unknown): Promise<Res> => srv.json(`/api/v1${path}`, { method: "POST", headers: key.headers, body });
const merchantPost = (path: string, body?: unknown): Promise<Res> =>
  srv.json(`/api/v1/merchant/stores/demo-store${path}`, { method: "POST", headers: asAdmin(), ...(body === undefined ? {} : { body }) });

/** A new demo-store product with `stock` tracked units at 40.00. */
async function trackedProduct(stock: number): Promise<string> {
  const r = await srv.json("/api/v1/merchant/stores/demo-store/catalog", {
    method: "PUT",
    headers: asAdmin(),
    body: { products: [{ externalId: `f3r-${crypto.randomUUID()}`, title: "F3 Restock Kettle", category: "Kitchen", price: 40, currency: "USD", stockQuantity: stock, inStock: true }] },
  });
  expect(r.status).toBe(200);
  return r.body.data.upserted[0].id as string;
}

/** Buys `quantity` units (of `variantId` when given) in one call: the paid order's id and total. */
async function buy(productId: string, quantity: number, variantId?: string): Promise<{ orderId: string; totalMinor: number }> {
  const c = await agentPost("/agent/cart", { items: [{ product_id: productId, quantity, ...(variantId ? { variant_id: variantId } : {}) }] });
  expect(c.status).toBe(201);
  const r = await agentPost("/agent/checkout", { cartId: c.body.data.id, payment_method: "tok_approve" });
  expect(r.status).toBe(200);
  const [o] = await srv.db.sql<{ total_minor: number }[]>`SELECT total_minor::int FROM orders WHERE id = ${r.body.data.order_id}`;
  return { orderId: r.body.data.order_id, totalMinor: o!.total_minor };
}

/** The agent asks for `amount` (minor units; omitted: everything) back, the merchant approves: REFUNDED. */
async function refund(orderId: string, amount?: number): Promise<void> {
  const asked = await agentPost(`/agent/orders/${orderId}/refund`, amount === undefined ? {} : { amount });
  expect(asked.status).toBe(201);
  const ok = await merchantPost(`/refunds/${asked.body.data.refund_id}/approve`);
  expect(ok.status).toBe(200);
  expect(ok.body.data.status).toBe("REFUNDED");
}

const stockOf = async (productId: string) =>
  (await srv.db.sql<{ stock_quantity: number; reserved_quantity: number; in_stock: boolean }[]>`
    SELECT stock_quantity, reserved_quantity, in_stock FROM products WHERE id = ${productId}`)[0]!;
const reservationsOf = async (orderId: string) => (await srv.db.sql<{ status: string }[]>`SELECT status FROM stock_reservations WHERE order_id = ${orderId}`).map((r) => r.status);
const orderStatus = async (orderId: string) => (await srv.db.sql<{ status: string }[]>`SELECT status FROM orders WHERE id = ${orderId}`)[0]!.status;

describe("a full refund of a paid, never-fulfilled order returns its sold units", () => {
  test("sold out at 3 of 3, refunded in full: refunded, 3 units back and in stock, the reservation returned; buying again works", async () => {
    const p = await trackedProduct(3);
    const { orderId } = await buy(p, 3);
    expect(await stockOf(p)).toEqual({ stock_quantity: 0, reserved_quantity: 0, in_stock: false });
    await refund(orderId);
    expect(await orderStatus(orderId)).toBe("refunded");
    expect(await stockOf(p)).toEqual({ stock_quantity: 3, reserved_quantity: 0, in_stock: true });
    expect(await reservationsOf(orderId)).toEqual(["returned"]);
    const events = await srv.db.sql<{ type: string }[]>`SELECT type FROM order_events WHERE order_id = ${orderId} AND type = 'refund_full'`;
    expect(events).toHaveLength(1);
    // The units are sellable again.
    expect(await orderStatus((await buy(p, 3)).orderId)).toBe("paid");
  }, 60_000);

  test("a partial refund, then the rest: the units come back once, with the refund that completes it", async () => {
    const p = await trackedProduct(5);
    const { orderId, totalMinor } = await buy(p, 2);
    await refund(orderId, 1000);
    expect(await orderStatus(orderId)).toBe("paid");
    expect(await stockOf(p)).toMatchObject({ stock_quantity: 3 });
    expect(await reservationsOf(orderId)).toEqual(["committed"]);
    await refund(orderId, totalMinor - 1000);
    expect(await orderStatus(orderId)).toBe("refunded");
    expect(await stockOf(p)).toEqual({ stock_quantity: 5, reserved_quantity: 0, in_stock: true });
    expect(await reservationsOf(orderId)).toEqual(["returned"]);
  }, 60_000);

  test("a fulfilled order refunded in full keeps its units sold (the goods left the merchant)", async () => {
    const p = await trackedProduct(4);
    const { orderId } = await buy(p, 1);
    const moved = await merchantPost(`/orders/${orderId}/status`, { status: "fulfilled" });
    expect(moved.status).toBe(200);
    await refund(orderId);
    expect(await orderStatus(orderId)).toBe("refunded");
    expect(await stockOf(p)).toMatchObject({ stock_quantity: 3 });
    expect(await reservationsOf(orderId)).toEqual(["committed"]);
  }, 60_000);
});

describe("a restock past the stock column's maximum saturates (docs/review.md session 17, 'Refund restock')", () => {
  const MAX = 2_147_483_647;
  const setStock = async (item: Record<string, unknown>) => {
    const r = await srv.json("/api/v1/merchant/stores/demo-store/inventory", { method: "PATCH", headers: asAdmin(), body: { items: [item] } });
    expect(r.status).toBe(200);
    expect(r.body.data.updated).toBe(1);
  };

  test("the merchant set the stock to 2^31 - 1 after the sale: the full refund completes and the stock stays at the maximum", async () => {
    const p = await trackedProduct(5);
    const { orderId } = await buy(p, 2);
    await setStock({ productId: p, stockQuantity: MAX });
    await refund(orderId);
    expect(await orderStatus(orderId)).toBe("refunded");
    expect(await stockOf(p)).toEqual({ stock_quantity: MAX, reserved_quantity: 0, in_stock: true });
    expect(await reservationsOf(orderId)).toEqual(["returned"]);
  }, 60_000);

  test("a variant set to 2^31 - 1 after the sale: the variant and the product saturate, the refund completes", async () => {
    const put = await srv.json("/api/v1/merchant/stores/demo-store/catalog", {
      method: "PUT",
      headers: asAdmin(),
      body: { products: [{ externalId: `f3r-v-${crypto.randomUUID()}`, title: "F3 Restock Tee", category: "Apparel", price: 20, currency: "USD", variants: [{ title: "S", stockQuantity: 4 }] }] },
    });
    expect(put.status).toBe(200);
    const p = put.body.data.upserted[0].id as string;
    const [row] = await srv.db.sql<{ variants: { id: string }[] }[]>`SELECT variants FROM products WHERE id = ${p}`;
    const variantId = row!.variants[0]!.id;
    const { orderId } = await buy(p, 1, variantId);
    await setStock({ productId: p, variantId, stockQuantity: MAX });
    await refund(orderId);
    expect(await orderStatus(orderId)).toBe("refunded");
    const [after] = await srv.db.sql<{ stock_quantity: number; variants: { stockQuantity: number }[] }[]>`SELECT stock_quantity, variants FROM products WHERE id = ${p}`;
    expect(after!.stock_quantity).toBe(MAX);
    expect(after!.variants.map((v) => v.stockQuantity)).toEqual([MAX]);
  }, 60_000);
});
