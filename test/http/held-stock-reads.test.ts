/**
 * Audit A7 MED-1 and MED-3.
 * - Units held by a pending checkout (tok_needs_approval: the buyer's approval outstanding) are not shown as
 *   available: product detail, REST availability (and its agentHint), MCP get_availability and compare read
 *   stock − reserved, per variant too, as the cart counts it.
 * - Compare answers the same for the same ids in any order: a shared top score is nobody's win.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { ALL_SCOPES, createKey, type TestKey } from "../helpers/agents.ts";
import { startServer, type TestServer } from "../helpers/server.ts";
import { connect, structured, type Connected } from "../mcp/helpers.ts";

let srv: TestServer;
let key: TestKey;
let mcp: Connected;

beforeAll(async () => {
  srv = await startServer({ seed: true, config: { RATE_LIMITS_ENABLED: false } });
  key = await createKey(srv, { scopes: ALL_SCOPES, tier: "ENTERPRISE" });
  mcp = await connect(srv, { headers: key.headers });
}, 60_000);
afterAll(async () => {
  await mcp?.close();
  await srv?.stop();
});

const get = (path: string) => srv.json(path, { headers: key.headers });
const post = (path: string, body: unknown) => srv.json(path, { method: "POST", headers: key.headers, body: body as Record<string, unknown> });

async function cart(items: Record<string, unknown>[]) {
  const r = await post("/api/v1/agent/cart", { items });
  expect(r.status).toBe(201);
  return r.body.data.id as string;
}

/** A checkout left awaiting the buyer's approval: its units are held (reserved) until it is approved or expires. */
async function hold(items: Record<string, unknown>[]) {
  const r = await post("/api/v1/agent/checkout", { cartId: await cart(items), payment_method: "tok_needs_approval", idempotency_key: crypto.randomUUID() });
  expect(r.status).toBe(202);
}

describe("held units are not shown as available (A7 MED-1)", () => {
  test("detail, availability, MCP get_availability and compare read stock − held; all held is out of stock and a cart is refused", async () => {
    const [p] = await srv.db.sql<{ id: string; stock: number }[]>`
      SELECT id, stock_quantity AS stock FROM products WHERE store_slug = 'demo-store' AND active AND in_stock
        AND jsonb_array_length(variants) = 0 AND stock_quantity BETWEEN 8 AND 60 AND reserved_quantity = 0 ORDER BY external_id LIMIT 1`;
    expect(p).toBeDefined();
    const { id, stock } = p!;

    // All but 3 held: 3 left to buy, a low-stock hint on the 3.
    await hold([{ product_id: id, quantity: stock - 3 }]);
    expect((await srv.db.sql<{ r: number }[]>`SELECT reserved_quantity AS r FROM products WHERE id = ${id}`)[0]!.r).toBe(stock - 3);
    const detail = await get(`/api/v1/agent/products/${id}`);
    expect(detail.status).toBe(200);
    expect(detail.body.data).toMatchObject({ id, inStock: true, stockQuantity: 3 });
    const avail = await get(`/api/v1/agent/availability/${id}`);
    expect(avail.status).toBe(200);
    expect(avail.body.data).toMatchObject({ productId: id, inStock: true, stockQuantity: 3, stockTracked: true });
    expect(avail.body.data.agentHint).toBe("Low stock (3 left); create the cart soon, stock is only reserved at checkout.");
    const tool = await mcp.call("get_availability", { product_id: id });
    expect(tool.isError).toBeFalsy();
    expect(structured(tool)).toMatchObject({ productId: id, inStock: true, stockQuantity: 3 });

    // The last 3 held: out of stock everywhere, and the cart agrees.
    await hold([{ product_id: id, quantity: 3 }]);
    expect((await get(`/api/v1/agent/products/${id}`)).body.data).toMatchObject({ inStock: false, stockQuantity: 0 });
    const none = await get(`/api/v1/agent/availability/${id}`);
    expect(none.body.data).toMatchObject({ inStock: false, stockQuantity: 0 });
    expect(none.body.data.agentHint).toBe("Out of stock per a recent sync; suggest an alternative or check back later.");
    expect(structured(await mcp.call("get_availability", { product_id: id }))).toMatchObject({ inStock: false, stockQuantity: 0 });
    const cmp = await post("/api/v1/agent/compare", { productIds: [id] });
    expect(cmp.status).toBe(200);
    expect(cmp.body.data.products[0]).toMatchObject({ id, inStock: false });
    const refused = await post("/api/v1/agent/cart", { items: [{ product_id: id, quantity: 1 }] });
    expect(refused.status).toBe(400);
    expect(refused.body.code).toBe("INVALID_ARGUMENT");
    expect(JSON.stringify(refused.body.details)).toContain("out_of_stock");
  }, 60_000);

  test("a variant's held units come off that variant (and the product total), not off its siblings", async () => {
    const rows = await srv.db.sql<{ id: string; variants: { id: string; stockQuantity: number | null; inStock: boolean }[] }[]>`
      SELECT id, variants FROM products WHERE store_slug = 'demo-store' AND active AND in_stock AND reserved_quantity = 0
        AND stock_quantity IS NOT NULL AND jsonb_array_length(variants) >= 2 ORDER BY external_id`;
    const found = rows
      .map((r) => ({ id: r.id, variants: typeof r.variants === "string" ? JSON.parse(r.variants) : r.variants }))
      .find((r) => r.variants.every((v: any) => v.stockQuantity !== null) && r.variants[0].inStock && r.variants[0].stockQuantity >= 2);
    expect(found).toBeDefined();
    const p = found!;
    const v0 = p.variants[0];
    const total = p.variants.reduce((s: number, v: any) => s + v.stockQuantity, 0);
    await hold([{ product_id: p.id, variant_id: v0.id, quantity: v0.stockQuantity }]);

    const expectVariants = (variants: any[]) => {
      const held = variants.find((v) => v.id === v0.id);
      expect(held).toMatchObject({ inStock: false, stockQuantity: 0 });
      for (const v of p.variants.slice(1)) expect(variants.find((x) => x.id === v.id)).toMatchObject({ stockQuantity: v.stockQuantity });
    };
    const avail = await get(`/api/v1/agent/availability/${p.id}`);
    expect(avail.body.data.stockQuantity).toBe(total - v0.stockQuantity);
    expectVariants(avail.body.data.variants);
    const detail = await get(`/api/v1/agent/products/${p.id}`);
    expect(detail.body.data.stockQuantity).toBe(total - v0.stockQuantity);
    expectVariants(detail.body.data.variants);
    expectVariants(structured(await mcp.call("get_availability", { product_id: p.id })).variants);
  }, 60_000);
});

describe("compare is order-independent (A7 MED-3)", () => {
  test("two products of one merchant in either order: same bests and recommendation; shared titles are nobody's", async () => {
    const [a, c] = await srv.db.sql<{ id: string; price: number }[]>`
      SELECT id, price_minor::int AS price FROM products WHERE store_slug = 'demo-store' AND active AND in_stock AND reserved_quantity = 0
        AND currency = 'USD' AND jsonb_array_length(variants) = 0 ORDER BY price_minor DESC, id LIMIT 2`;
    expect(a!.price).toBeGreaterThan(c!.price); // a dearer, c cheaper
    const one = await post("/api/v1/agent/compare", { productIds: [a!.id, c!.id] });
    const two = await post("/api/v1/agent/compare", { productIds: [c!.id, a!.id] });
    expect(one.status).toBe(200);
    expect(two.status).toBe(200);
    const pick = (d: any) => ({ bestValue: d.bestValue, bestTrust: d.bestTrust, bestReturnPolicy: d.bestReturnPolicy, bestShipping: d.bestShipping, recommendation: d.recommendation });
    expect(pick(one.body.data)).toEqual(pick(two.body.data));
    // one merchant: trust, returns and shipping are ties (no winner); the cheaper product is best value and recommended.
    expect(one.body.data).toMatchObject({ bestValue: c!.id, bestTrust: null, bestReturnPolicy: null, bestShipping: null });
    expect(one.body.data.recommendation.productId).toBe(c!.id);
    expect(one.body.data.recommendation.reasons.slice(1)).toEqual(["best value"]);
    // MCP compare_products agrees, in either order
    const m1 = structured(await mcp.call("compare_products", { product_ids: [a!.id, c!.id] }));
    const m2 = structured(await mcp.call("compare_products", { product_ids: [c!.id, a!.id] }));
    expect(m1.recommendation).toEqual(one.body.data.recommendation);
    expect(m2.recommendation).toEqual(one.body.data.recommendation);
  }, 60_000);
});
