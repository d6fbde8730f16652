/**
 * A cart line of a product with variants must name one (audit A2-F13): the product's stock is the roll-up of its
 * variants (docs/catalog.md), so a line without a variant sold units no variant gave up and made an order naming no
 * variant. The cart actor refuses it (400 MISSING_REQUIRED_ARGUMENT, `items[i].variant_id`) for every caller: REST,
 * MCP create_cart, and the ACP/UCP bridges (which share the actor).
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { ALL_SCOPES, createKey, type TestKey } from "../helpers/agents.ts";
import { startServer, type TestServer } from "../helpers/server.ts";
import { connect, errorOf } from "../mcp/helpers.ts";

const HEADPHONES = "1e34ef13-d99e-575f-975a-67ea08dcdf99"; // DS-0001, demo-store, 2 variants
const BOARD = "5befd987-79cd-540c-8a5d-2ba5a30aed41"; // DS-0011, demo-store, no variants

let srv: TestServer;
let key: TestKey;
let variants: { id: string; title: string; inStock: boolean }[];
const stock = async () =>
  (await srv.db.sql<{ s: number; r: number; held: Record<string, number> }[]>`SELECT stock_quantity AS s, reserved_quantity AS r, variant_reserved AS held FROM products WHERE id = ${HEADPHONES}`)[0];
const carts = async () => (await srv.db.sql<{ n: number }[]>`SELECT count(*)::int AS n FROM actor_state WHERE kind = 'cart'`)[0].n;

beforeAll(async () => {
  srv = await startServer({ seed: true, config: { RATE_LIMITS_ENABLED: false } });
  key = await createKey(srv, { scopes: ALL_SCOPES });
  const [p] = await srv.db.sql<{ v: { id: string; title: string; inStock: boolean }[] }[]>`SELECT variants AS v FROM products WHERE id = ${HEADPHONES}`;
  variants = p.v;
}, 120_000);
afterAll(async () => {
  await srv?.stop();
});

const expectedDetails = (i: number) => ({
  product_id: HEADPHONES,
  field: `items[${i}].variant_id`,
  variant_count: 2,
  variants: variants.map((v) => ({ variant_id: v.id, title: v.title, in_stock: v.inStock })),
});

describe("a line of a product with variants names its variant", () => {
  test("REST: a cart line without variant_id is 400 MISSING_REQUIRED_ARGUMENT naming items[i].variant_id and the variants; nothing is created or held", async () => {
    const before = await stock();
    const n = await carts();
    const r = await srv.json("/api/v1/agent/cart", {
      method: "POST",
      headers: key.headers,
      body: { items: [{ product_id: BOARD, quantity: 1 }, { product_id: HEADPHONES, quantity: 2 }] },
    });
    expect(r.status).toBe(400);
    expect(r.body).toMatchObject({ success: false, code: "MISSING_REQUIRED_ARGUMENT", details: expectedDetails(1) });
    expect(await carts()).toBe(n);
    expect(await stock()).toEqual(before);
  }, 60_000);

  test("REST: the same line with a variant is accepted and the order names the variant", async () => {
    const r = await srv.json("/api/v1/agent/cart", { method: "POST", headers: key.headers, body: { items: [{ product_id: HEADPHONES, variant_id: variants[0].id, quantity: 1 }] } });
    expect(r.status).toBe(201);
    expect(r.body.data.items[0]).toMatchObject({ product_id: HEADPHONES, variant_id: variants[0].id });
    const done = await srv.json("/api/v1/agent/checkout", { method: "POST", headers: key.headers, body: { cartId: r.body.data.id, payment_method: "MOCK" } });
    expect(done.status).toBe(200);
    const [line] = await srv.db.sql<{ variant_id: string | null }[]>`SELECT i.variant_id FROM order_items i JOIN orders o ON o.id = i.order_id WHERE o.cart_id = ${r.body.data.id}`;
    expect(line.variant_id).toBe(variants[0].id);
  }, 60_000);

  test("MCP create_cart: the same refusal as a tool error naming items[i].variant_id, before the human is asked", async () => {
    const c = await connect(srv, { headers: key.headers, elicit: () => ({ action: "accept", content: { approve: true } }) });
    try {
      const n = await carts();
      const r = await c.call("create_cart", { items: [{ product_id: BOARD, quantity: 1 }, { product_id: HEADPHONES, quantity: 1 }] });
      expect(errorOf(r)).toMatchObject({ code: "MISSING_REQUIRED_ARGUMENT", details: expectedDetails(1) });
      expect(c.elicitations).toHaveLength(0);
      expect(await carts()).toBe(n);
    } finally {
      await c.close();
    }
  }, 60_000);

  test("ACP and UCP: creating a checkout session of such an item is 400 MISSING_REQUIRED_ARGUMENT in the protocol's error shape", async () => {
    const n = await carts();
    const acp = await srv.json("/api/v1/agent/acp/checkout_sessions", { method: "POST", headers: key.headers, body: { items: [{ id: HEADPHONES, quantity: 1 }] } });
    expect(acp.status).toBe(400);
    // The bridges name their own item id field (an item id may name a variant: test/http/bridge-variants.test.ts).
    expect(acp.body).toMatchObject({ type: "invalid_request", code: "MISSING_REQUIRED_ARGUMENT", param: "$.items[0].id", details: { ...expectedDetails(0), field: "items[0].id" } });
    const ucp = await srv.json("/api/v1/agent/ucp/checkout-sessions", { method: "POST", headers: key.headers, body: { line_items: [{ item: { id: HEADPHONES }, quantity: 1 }] } });
    expect(ucp.status).toBe(400);
    expect(ucp.body.messages[0]).toMatchObject({ type: "error", code: "MISSING_REQUIRED_ARGUMENT", details: { ...expectedDetails(0), field: "line_items[0].item.id" } });
    expect(await carts()).toBe(n);
  }, 60_000);
});
