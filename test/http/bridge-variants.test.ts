/**
 * ACP and UCP items have no variant field: an item id may name a variant as `<product id>:<variant id>` (the ids in
 * ProductDetail), and the line is that product with that variant. A product id of a product with variants is refused in the protocol's
 * own error shape, naming the item id field and the variants to choose from (docs/protocols.md "Variants").
 */
import { beforeAll, describe, expect, test } from "bun:test";
import { ALL_SCOPES, createKey, type TestKey } from "../helpers/agents.ts";
import { useServer } from "../helpers/server.ts";

const HEADPHONES = "1e34ef13-d99e-575f-975a-67ea08dcdf99"; // DS-0001, demo-store, 2 variants
const BOARD = "5befd987-79cd-540c-8a5d-2ba5a30aed41"; // DS-0011, demo-store, no variants

const srv = useServer({ seed: true, config: { RATE_LIMITS_ENABLED: false } });
let key: TestKey;
let variants: { id: string; title: string; inStock: boolean }[];
/** The item id naming variant `i` of the headphones. */
const item = (i: number) => `${HEADPHONES}:${variants[i].id}`;

beforeAll(async () => {
  key = await createKey(srv, { scopes: ALL_SCOPES });
  // Enough stock of each variant for every purchase below (the seed has one Burgundy), rolled up into the product.
  await srv.db.sql`UPDATE products SET variants = (SELECT jsonb_agg(v || '{"stockQuantity": 20, "inStock": true}') FROM jsonb_array_elements(variants) v),
    stock_quantity = 40, in_stock = true WHERE id = ${HEADPHONES}`;
  const detail = await srv.json(`/api/v1/agent/products/${HEADPHONES}`, { headers: key.headers });
  // The ids an agent reads in the product's details are the ones it sends.
  variants = detail.body.data.variants;
  if (variants.length !== 2) throw new Error(`expected 2 variants, got ${JSON.stringify(variants)}`);
}, 120_000);

const post = (path: string, body: unknown) => srv.json(`/api/v1/agent${path}`, { method: "POST", headers: key.headers, body });
const put = (path: string, body: unknown) => srv.json(`/api/v1/agent${path}`, { method: "PUT", headers: key.headers, body });
const carts = async () => (await srv.db.sql<{ n: number }[]>`SELECT count(*)::int AS n FROM actor_state WHERE kind = 'cart'`)[0].n;
const orderLines = async (orderId: string) =>
  (await srv.db.sql<{ product_id: string; variant_id: string | null; quantity: number }[]>`
    SELECT i.product_id::text, i.variant_id, i.quantity FROM order_items i JOIN orders o ON o.id = i.order_id
    WHERE o.id = ${orderId} OR o.id IN (SELECT id FROM orders WHERE cart_id = (SELECT cart_id FROM orders WHERE id = ${orderId}))
    ORDER BY i.id`).map((r) => ({ ...r }));

const listed = () => variants.map((v) => ({ variant_id: v.id, title: v.title, in_stock: v.inStock, item_id: `${HEADPHONES}:${v.id}` }));

describe("ACP: an item id names a variant", () => {
  test("a session of a <product>:<variant> id buys that variant: the line echoes the variant id, an update sends it back, the order names it", async () => {
    const created = await post("/acp/checkout_sessions", { items: [{ id: item(0), quantity: 1 }, { id: BOARD, quantity: 1 }] });
    expect(created.status).toBe(201);
    expect(created.body.line_items.map((l: { id: string; item: unknown }) => ({ id: l.id, item: l.item }))).toEqual([
      { id: `li_${HEADPHONES}_${variants[0].id}`, item: { id: item(0), quantity: 1 } },
      { id: `li_${BOARD}`, item: { id: BOARD, quantity: 1 } },
    ]);
    // The items as the session shows them, with the other variant added: what an ACP client sends on update.
    const items = [...created.body.line_items.map((l: { item: unknown }) => l.item), { id: item(1).toUpperCase(), quantity: 1 }];
    const updated = await post(`/acp/checkout_sessions/${created.body.id}`, { items });
    expect(updated.status).toBe(200);
    expect(updated.body.line_items.map((l: { item: { id: string } }) => l.item.id)).toEqual([item(0), BOARD, item(1)]);
    const done = await post(`/acp/checkout_sessions/${created.body.id}/complete`, { payment_data: { token: "tok_approve", provider: "stripe" } });
    expect(done.status).toBe(200);
    expect(done.body.status).toBe("completed");
    expect(await orderLines(done.body.order.id)).toEqual([
      { product_id: HEADPHONES, variant_id: variants[0].id, quantity: 1 },
      { product_id: BOARD, variant_id: null, quantity: 1 },
      { product_id: HEADPHONES, variant_id: variants[1].id, quantity: 1 },
    ]);
  }, 60_000);

  test("the product id of a product with variants is 400 MISSING_REQUIRED_ARGUMENT with param $.items[i].id and the variants; no cart is made", async () => {
    const n = await carts();
    const r = await post("/acp/checkout_sessions", { items: [{ id: BOARD, quantity: 1 }, { id: HEADPHONES, quantity: 1 }] });
    expect(r.status).toBe(400);
    expect(r.body).toEqual({
      type: "invalid_request",
      code: "MISSING_REQUIRED_ARGUMENT",
      message: "items[1].id names a product with 2 variants: send one of them as <product id>:<variant id> (details.variants[].item_id).",
      param: "$.items[1].id",
      details: { product_id: HEADPHONES, field: "items[1].id", variant_count: 2, variants: listed() },
    });
    expect(await carts()).toBe(n);
  }, 60_000);
});

describe("UCP: an item id names a variant", () => {
  test("a checkout of a <product>:<variant> id buys that variant: item.id is that id, the line id names product and variant", async () => {
    const created = await post("/ucp/checkout-sessions", { line_items: [{ item: { id: item(1) }, quantity: 1 }] });
    expect(created.status).toBe(201);
    expect(created.body.line_items[0]).toMatchObject({ id: `li_${HEADPHONES}_${variants[1].id}`, item: { id: item(1) }, quantity: 1 });
    expect(created.body.fulfillment.methods[0].line_item_ids).toEqual([`li_${HEADPHONES}_${variants[1].id}`]);
    const updated = await put(`/ucp/checkout-sessions/${created.body.id}`, { line_items: [{ item: { id: item(0) }, quantity: 3 }] });
    expect(updated.status).toBe(200);
    expect(updated.body.line_items.map((l: { item: { id: string }; quantity: number }) => [l.item.id, l.quantity])).toEqual([[item(0), 3]]);
    const done = await post(`/ucp/checkout-sessions/${created.body.id}/complete`, { payment: { instruments: [{ handler_id: "sandbox_card", credential: { token: "tok_approve" } }] } });
    expect(done.status).toBe(200);
    expect(done.body.status).toBe("completed");
    expect(await orderLines(done.body.order.id)).toEqual([{ product_id: HEADPHONES, variant_id: variants[0].id, quantity: 3 }]);
  }, 60_000);

  test("the product id of a product with variants is 400 with path $.line_items[i].item.id and the variants", async () => {
    const r = await post("/ucp/checkout-sessions", { line_items: [{ item: { id: HEADPHONES }, quantity: 1 }] });
    expect(r.status).toBe(400);
    expect(r.body.messages).toEqual([
      {
        type: "error",
        code: "MISSING_REQUIRED_ARGUMENT",
        content: expect.stringMatching(/^line_items\[0\]\.item\.id names a product with 2 variants/),
        severity: "requires_buyer_input",
        path: "$.line_items[0].item.id",
        details: { product_id: HEADPHONES, field: "line_items[0].item.id", variant_count: 2, variants: listed() },
      },
    ]);
  }, 60_000);

  test("a bare variant id, even one two active products share, is refused with the qualified ids, not guessed", async () => {
    // A merchant may choose its variant ids (UUIDs): give another product the headphones' first variant id.
    const [other] = await srv.db.sql<{ id: string }[]>`
      UPDATE products SET variants = ${srv.db.sql.json([{ ...variants[0], title: "Copy" }] as never)}
      WHERE id = (SELECT id FROM products WHERE id <> ${HEADPHONES} AND variants = '[]' AND active ORDER BY id LIMIT 1) RETURNING id::text AS id`;
    try {
      const r = await post("/ucp/checkout-sessions", { line_items: [{ item: { id: variants[0].id }, quantity: 1 }] });
      expect(r.status).toBe(400);
      expect(r.body.messages[0]).toMatchObject({
        code: "INVALID_ARGUMENT",
        path: "$.line_items[0].item.id",
        details: { field: "line_items[0].item.id", variant_id: variants[0].id, item_ids: [HEADPHONES, other.id].sort().map((p) => `${p}:${variants[0].id}`) },
      });
    } finally {
      await srv.db.sql`UPDATE products SET variants = '[]' WHERE id = ${other.id}`;
    }
  }, 60_000);
});
