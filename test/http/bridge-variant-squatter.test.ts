/**
 * Review R3 MED-3: variant ids are merchant-chosen, so another store can give its own product a victim's variant id.
 * ACP/UCP name a variant `<product id>:<variant id>`, so what a store's id buys never depends on another store's
 * catalog: the squatter's copy neither makes the victim's variant unbuyable nor takes its place when the victim's
 * product goes inactive. A bare variant id is refused with the qualified ids to send (docs/protocols.md "Variants").
 */
import { beforeAll, describe, expect, test } from "bun:test";
import { ALL_SCOPES, createKey, login, merchantLogin, type TestKey } from "../helpers/agents.ts";
import { useServer } from "../helpers/server.ts";

const HEADPHONES = "1e34ef13-d99e-575f-975a-67ea08dcdf99"; // DS-0001, demo-store, 2 variants
const SQUATTER = "greenleaf-living";

const srv = useServer({ seed: true, config: { RATE_LIMITS_ENABLED: false } });
let key: TestKey;
let victimVariant: string;
let squatterProduct: string;

beforeAll(async () => {
  key = await createKey(srv, { scopes: ALL_SCOPES });
  await srv.db.sql`UPDATE products SET variants = (SELECT jsonb_agg(v || '{"stockQuantity": 20, "inStock": true}') FROM jsonb_array_elements(variants) v),
    stock_quantity = 40, in_stock = true WHERE id = ${HEADPHONES}`;
  const detail = await srv.json(`/api/v1/agent/products/${HEADPHONES}`, { headers: key.headers });
  victimVariant = detail.body.data.variants[0].id;
  // Another tenant imports a product whose variant id is the victim's, through its own merchant API.
  const owner = { authorization: `Bearer ${await login(srv, merchantLogin(SQUATTER))}` };
  const put = await srv.json(`/api/v1/merchant/stores/${SQUATTER}/catalog`, {
    method: "PUT",
    headers: owner,
    body: { products: [{ externalId: "F5-SQUAT", title: "Squatter", price: 5, currency: "USD", variants: [{ id: victimVariant, title: "X", stockQuantity: 5 }] }] },
  });
  if (put.status !== 200 || put.body.data.accepted !== 1) throw new Error(`squatter import: ${put.status} ${JSON.stringify(put.body)}`);
  [{ id: squatterProduct }] = await srv.db.sql<{ id: string }[]>`SELECT id::text AS id FROM products WHERE store_slug = ${SQUATTER} AND external_id = 'F5-SQUAT'`;
}, 120_000);

const post = (path: string, body: unknown) => srv.json(`/api/v1/agent${path}`, { method: "POST", headers: key.headers, body });
const carts = async () => (await srv.db.sql<{ n: number }[]>`SELECT count(*)::int AS n FROM actor_state WHERE kind = 'cart'`)[0].n;
const orderLine = async (orderId: string) =>
  (await srv.db.sql<{ product_id: string; variant_id: string | null }[]>`SELECT product_id::text, variant_id FROM order_items WHERE order_id = ${orderId}`).map((r) => ({ ...r }));

describe("a squatter store's copy of a variant id changes nothing for the victim's", () => {
  test("the product's details show each variant's item id, <product id>:<variant id>", async () => {
    const detail = await srv.json(`/api/v1/agent/products/${HEADPHONES}`, { headers: key.headers });
    expect(detail.body.data.variants.map((v: { id: string; itemId: string }) => v.itemId)).toEqual(
      detail.body.data.variants.map((v: { id: string }) => `${HEADPHONES}:${v.id}`),
    );
    expect(detail.body.data.variants[0].itemId).toBe(`${HEADPHONES}:${victimVariant}`);
  }, 60_000);

  test("ACP: <product>:<variant> buys the victim's variant, echoed as sent, and the order names it", async () => {
    const item = `${HEADPHONES}:${victimVariant}`;
    const created = await post("/acp/checkout_sessions", { items: [{ id: item.toUpperCase(), quantity: 1 }] });
    expect(created.status).toBe(201);
    expect(created.body.line_items.map((l: { id: string; item: unknown }) => ({ id: l.id, item: l.item }))).toEqual([
      { id: `li_${HEADPHONES}_${victimVariant}`, item: { id: item, quantity: 1 } },
    ]);
    const done = await post(`/acp/checkout_sessions/${created.body.id}/complete`, { payment_data: { token: "tok_approve", provider: "stripe" } });
    expect(done.status).toBe(200);
    expect(done.body.status).toBe("completed");
    expect(await orderLine(done.body.order.id)).toEqual([{ product_id: HEADPHONES, variant_id: victimVariant }]);
  }, 60_000);

  test("UCP: the same, and the squatter's own qualified id buys the squatter's product", async () => {
    const victim = await post("/ucp/checkout-sessions", { line_items: [{ item: { id: `${HEADPHONES}:${victimVariant}` }, quantity: 1 }] });
    expect(victim.status).toBe(201);
    expect(victim.body.line_items[0]).toMatchObject({ id: `li_${HEADPHONES}_${victimVariant}`, item: { id: `${HEADPHONES}:${victimVariant}` }, quantity: 1 });
    const squat = await post("/ucp/checkout-sessions", { line_items: [{ item: { id: `${squatterProduct}:${victimVariant}` }, quantity: 1 }] });
    expect(squat.status).toBe(201);
    expect(squat.body.line_items[0]).toMatchObject({ id: `li_${squatterProduct}_${victimVariant}`, item: { id: `${squatterProduct}:${victimVariant}`, title: expect.stringContaining("Squatter") } });
  }, 60_000);

  test("the victim's product inactive: its qualified id is refused by the cart, never resolved to the squatter's product", async () => {
    await srv.db.sql`UPDATE products SET active = false WHERE id = ${HEADPHONES}`;
    try {
      const n = await carts();
      const r = await post("/acp/checkout_sessions", { items: [{ id: `${HEADPHONES}:${victimVariant}`, quantity: 1 }] });
      expect(r.status).toBe(404);
      expect(r.body).toMatchObject({ type: "invalid_request", code: "PRODUCT_NOT_FOUND", param: "$.items[0].id", details: { field: "items[0].id" } });
      expect(await carts()).toBe(n);
    } finally {
      await srv.db.sql`UPDATE products SET active = true WHERE id = ${HEADPHONES}`;
    }
  }, 60_000);

  test("a bare variant id is 400 INVALID_ARGUMENT on the item id with the qualified ids to send; no cart is made", async () => {
    const n = await carts();
    const acp = await post("/acp/checkout_sessions", { items: [{ id: victimVariant, quantity: 1 }] });
    expect(acp.status).toBe(400);
    expect(acp.body).toEqual({
      type: "invalid_request",
      code: "INVALID_ARGUMENT",
      message: "items[0].id is a variant id: name a variant as <product id>:<variant id> (details.item_ids).",
      param: "$.items[0].id",
      details: { field: "items[0].id", variant_id: victimVariant, item_ids: [HEADPHONES, squatterProduct].sort().map((p) => `${p}:${victimVariant}`) },
    });
    const ucp = await post("/ucp/checkout-sessions", { line_items: [{ item: { id: victimVariant }, quantity: 1 }] });
    expect(ucp.status).toBe(400);
    expect(ucp.body.messages[0]).toMatchObject({ code: "INVALID_ARGUMENT", path: "$.line_items[0].item.id", details: { variant_id: victimVariant } });
    expect(await carts()).toBe(n);
  }, 60_000);

  test("a variant id qualified with a product that does not have it is refused on the item id field", async () => {
    const variant = crypto.randomUUID();
    const r = await post("/acp/checkout_sessions", { items: [{ id: `${squatterProduct}:${variant}`, quantity: 1 }] });
    expect(r.status).toBe(404);
    expect(r.body).toEqual({
      type: "invalid_request",
      code: "PRODUCT_NOT_FOUND",
      message: "No such variant of this product.",
      param: "$.items[0].id",
      details: { product_id: squatterProduct, variant_id: variant, field: "items[0].id" },
    });
  }, 60_000);

  test("an item id of another shape is 400 INVALID_ARGUMENT on the field", async () => {
    for (const id of [`${HEADPHONES}:`, `${HEADPHONES}:${victimVariant}:x`, `${HEADPHONES}/${victimVariant}`]) {
      const r = await post("/acp/checkout_sessions", { items: [{ id, quantity: 1 }] });
      expect(r.status).toBe(400);
      expect(r.body).toMatchObject({ code: "INVALID_ARGUMENT", param: "$.items[0].id" });
    }
  }, 60_000);
});
