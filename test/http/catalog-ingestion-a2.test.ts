/**
 * Merchant ingestion fixes from audit A2 (MED-1, MED-2, MED-3, LOW-3), through HTTP against the real server:
 * variant stock rolls up into the product on PUT /catalog as on PATCH /inventory (search, availability, carts),
 * variant ids stay stable across syncs, strings Postgres cannot store are per-item rejections, and POST /orders
 * refuses a bad status or a future date per order.
 */
import { beforeAll, describe, expect, test } from "bun:test";
import { ALL_SCOPES, createKey, login, merchantLogin, type TestKey } from "../helpers/agents.ts";
import { useServer } from "../helpers/server.ts";
import { getIndexer } from "../../search/indexer.ts";

const SLUG = "greenleaf-living";

const srv = useServer({ seed: true, config: { RATE_LIMITS_ENABLED: false } });
let key: TestKey;
let owner: Record<string, string>;

beforeAll(async () => {
  key = await createKey(srv, { tier: "ENTERPRISE", scopes: ALL_SCOPES });
  owner = { authorization: `Bearer ${await login(srv, merchantLogin(SLUG))}` };
}, 120_000);

const putCatalog = (products: unknown[]) => srv.json(`/api/v1/merchant/stores/${SLUG}/catalog`, { method: "PUT", headers: owner, body: { products } });
const patchInventory = (items: unknown[]) => srv.json(`/api/v1/merchant/stores/${SLUG}/inventory`, { method: "PATCH", headers: owner, body: { items } });
const postOrders = (orders: unknown[]) => srv.json(`/api/v1/merchant/stores/${SLUG}/orders`, { method: "POST", headers: owner, body: { orders } });
const settle = () => getIndexer(srv.running.services)!.idle();

async function row(externalId: string) {
  const [r] = await srv.db.sql<{ id: string; stock_quantity: number | null; in_stock: boolean; variants: { id: string; title: string; options: Record<string, string>; stockQuantity: number | null }[] }[]>`
    SELECT id, stock_quantity, in_stock, variants FROM products WHERE store_slug = ${SLUG} AND external_id = ${externalId}`;
  return r!;
}

/** What an agent is told about a product: search (in-stock filter off and on), availability, and a cart without a variant. */
async function agentView(id: string, query: string) {
  await settle();
  const all = await srv.json("/api/v1/agent/search", { method: "POST", headers: key.headers, body: { query, filters: { inStock: false } } });
  const inStockOnly = await srv.json("/api/v1/agent/search", { method: "POST", headers: key.headers, body: { query, filters: { inStock: true } } });
  const availability = await srv.json(`/api/v1/agent/availability/${id}`, { headers: key.headers });
  // A product with variants is bought as one of them (audit A2-F13): the last one, the one PATCH /inventory restocks below.
  const [{ variants }] = await srv.db.sql<{ variants: { id: string }[] }[]>`SELECT variants FROM products WHERE id = ${id}`;
  const variant = variants.length ? { variant_id: variants[variants.length - 1]!.id } : {};
  const cart = await srv.json("/api/v1/agent/cart", { method: "POST", headers: key.headers, body: { items: [{ product_id: id, quantity: 1, ...variant }] } });
  return {
    searchInStock: all.body.data.products.find((p: { id: string }) => p.id === id)?.inStock,
    listedWhenInStockOnly: inStockOnly.body.data.products.some((p: { id: string }) => p.id === id),
    availability: { inStock: availability.body.data.inStock, stockQuantity: availability.body.data.stockQuantity },
    cart: cart.status === 201 ? 201 : `${cart.status} ${cart.body.details?.reason}`,
  };
}

const variantItem = (externalId: string, title: string, variants: unknown[], over: Record<string, unknown> = {}) => ({
  externalId,
  title,
  price: 20,
  currency: "USD",
  variants,
  ...over,
});

describe("variant stock rolls up into the product on PUT /catalog and PATCH /inventory (MED-1)", () => {
  test("PUT /catalog: a product whose variants all have stock 0 is out of stock in search, availability and carts", async () => {
    const r = await putCatalog([variantItem("A2-ZERO", "Quokka Zero Tee", [{ title: "S", stockQuantity: 0 }, { title: "M", stockQuantity: 0 }])]);
    expect(r.status).toBe(200);
    expect(r.body.data).toMatchObject({ accepted: 1, rejected: [] });
    const p = await row("A2-ZERO");
    expect({ stock: p.stock_quantity, inStock: p.in_stock }).toEqual({ stock: 0, inStock: false });
    expect(await agentView(p.id, "quokka zero tee")).toEqual({
      searchInStock: false,
      listedWhenInStockOnly: false,
      availability: { inStock: false, stockQuantity: 0 },
      cart: "400 out_of_stock",
    });
  }, 30_000);

  test("PUT /catalog: variants with 5 and 7 units make the product 12 in stock, and a cart of one of them is accepted", async () => {
    const r = await putCatalog([variantItem("A2-ROLL", "Quokka Roll Hoodie", [{ title: "S", stockQuantity: 5 }, { title: "M", stockQuantity: 7 }])]);
    expect(r.body.data.accepted).toBe(1);
    const p = await row("A2-ROLL");
    expect({ stock: p.stock_quantity, inStock: p.in_stock }).toEqual({ stock: 12, inStock: true });
    expect(await agentView(p.id, "quokka roll hoodie")).toEqual({
      searchInStock: true,
      listedWhenInStockOnly: true,
      availability: { inStock: true, stockQuantity: 12 },
      cart: 201,
    });
  }, 30_000);

  test("PATCH /inventory: zeroing every variant takes the product out of stock; one variant back puts it in stock", async () => {
    const p = await row("A2-ROLL");
    const [s, m] = p.variants;
    const zero = await patchInventory([{ productId: p.id, variantId: s!.id, stockQuantity: 0 }, { productId: p.id, variantId: m!.id, stockQuantity: 0 }]);
    expect(zero.body.data).toMatchObject({ updated: 2, rejected: [] });
    expect(await row("A2-ROLL")).toMatchObject({ stock_quantity: 0, in_stock: false });
    expect(await agentView(p.id, "quokka roll hoodie")).toEqual({
      searchInStock: false,
      listedWhenInStockOnly: false,
      availability: { inStock: false, stockQuantity: 0 },
      cart: "400 out_of_stock",
    });
    const back = await patchInventory([{ externalId: "A2-ROLL", variantId: m!.id, stockQuantity: 3 }]);
    expect(back.body.data.updated).toBe(1);
    expect(await row("A2-ROLL")).toMatchObject({ stock_quantity: 3, in_stock: true });
    expect(await agentView(p.id, "quokka roll hoodie")).toMatchObject({ searchInStock: true, availability: { inStock: true, stockQuantity: 3 }, cart: 201 });
  }, 30_000);

  test("PATCH /inventory: a product-level stock for a product with variants is refused per item and changes nothing", async () => {
    const before = await row("A2-ROLL");
    const r = await patchInventory([{ externalId: "A2-ROLL", stockQuantity: 50 }, { externalId: "A2-ZERO", variantId: (await row("A2-ZERO")).variants[0]!.id, stockQuantity: 4 }]);
    expect(r.status).toBe(200);
    expect(r.body.data.updated).toBe(1);
    expect(r.body.data.rejected).toEqual([{ index: 0, externalId: "A2-ROLL", errors: [{ field: "variantId", message: expect.stringContaining("required for a product with variants") }] }]);
    const after = await row("A2-ROLL");
    expect({ stock: after.stock_quantity, inStock: after.in_stock, variants: after.variants }).toEqual({ stock: before.stock_quantity, inStock: before.in_stock, variants: before.variants });
    expect(await row("A2-ZERO")).toMatchObject({ stock_quantity: 4, in_stock: true });
  });

  test("PUT /catalog: a product-level stock that contradicts the variants is a per-item rejection; the others are written", async () => {
    const vs = [{ title: "S", stockQuantity: 0 }, { title: "M", stockQuantity: 0 }];
    const r = await putCatalog([
      variantItem("A2-LIE", "Quokka Lying Tee", vs, { stockQuantity: 9 }),
      variantItem("A2-LIE2", "Quokka Lying Cap", vs, { inStock: true }),
      variantItem("A2-TRUE", "Quokka Honest Tee", vs, { stockQuantity: 0, inStock: false }),
    ]);
    expect(r.body.data.accepted).toBe(1);
    expect(r.body.data.rejected.map((x: any) => [x.externalId, x.errors.map((e: any) => e.field)])).toEqual([
      ["A2-LIE", ["stockQuantity"]],
      ["A2-LIE2", ["inStock"]],
    ]);
    const rows = await srv.db.sql<{ external_id: string }[]>`SELECT external_id FROM products WHERE external_id LIKE 'A2-LIE%' OR external_id = 'A2-TRUE' ORDER BY 1`;
    expect(rows.map((x) => x.external_id)).toEqual(["A2-TRUE"]);
  });
});

describe("variant identity is stable across syncs (MED-2)", () => {
  const twoMs = [
    { title: "M", options: { color: "red" }, stockQuantity: 5 },
    { title: "M", options: { color: "blue" }, stockQuantity: 7 },
  ];

  test("two variants with the same title keep two distinct ids over re-syncs; a stock update and a cart hit the named one", async () => {
    await putCatalog([variantItem("A2-TWIN", "Quokka Twin Shirt", twoMs)]);
    const first = (await row("A2-TWIN")).variants.map((v) => v.id);
    expect(new Set(first).size).toBe(2);
    for (let i = 0; i < 2; i++) {
      expect((await putCatalog([variantItem("A2-TWIN", "Quokka Twin Shirt", twoMs)])).body.data.accepted).toBe(1);
      expect((await row("A2-TWIN")).variants.map((v) => v.id)).toEqual(first);
    }
    const [red, blue] = first;
    const inv = await patchInventory([{ externalId: "A2-TWIN", variantId: blue, stockQuantity: 0 }]);
    expect(inv.body.data.updated).toBe(1);
    const after = await row("A2-TWIN");
    expect(after.variants.map((v) => [v.options.color, v.stockQuantity])).toEqual([["red", 5], ["blue", 0]]);
    expect(after.stock_quantity).toBe(5);
    const cart = await srv.json("/api/v1/agent/cart", { method: "POST", headers: key.headers, body: { items: [{ product_id: after.id, variant_id: red, quantity: 1 }] } });
    expect(cart.status).toBe(201);
  });

  test("a variant with a sku keeps its id when its title changes", async () => {
    await putCatalog([variantItem("A2-SKU", "Quokka Sku Socks", [{ sku: "QS-1", title: "Small" }, { sku: "QS-2", title: "Large" }])]);
    const before = (await row("A2-SKU")).variants.map((v) => v.id);
    await putCatalog([variantItem("A2-SKU", "Quokka Sku Socks", [{ sku: "QS-2", title: "L" }, { sku: "QS-1", title: "S" }])]);
    expect((await row("A2-SKU")).variants.map((v) => v.id)).toEqual([before[1], before[0]]);
  });

  test("stored variants sharing one id (the old rule's rows): a reordered re-sync leaves the id on the variant a cart resolves it to", async () => {
    const sizes = (order: string[]) => order.map((size) => ({ title: "Shirt", options: { size }, price: size === "S" ? 10 : 30, stockQuantity: 5 }));
    await putCatalog([variantItem("A2-OLDDUP", "Quokka Old Dup Shirt", sizes(["S", "M"]))]);
    // what the old title-only rule stored: both sizes under the first one's id
    await srv.db.sql`UPDATE products SET variants = jsonb_set(variants, '{1,id}', variants->0->'id') WHERE store_slug = ${SLUG} AND external_id = 'A2-OLDDUP'`;
    const before = await row("A2-OLDDUP");
    const shared = before.variants[0]!.id;
    expect(before.variants.map((v) => v.id)).toEqual([shared, shared]);
    const cartUnitPrice = async () => {
      const cart = await srv.json("/api/v1/agent/cart", { method: "POST", headers: key.headers, body: { items: [{ product_id: before.id, variant_id: shared, quantity: 1 }] } });
      expect(cart.status).toBe(201);
      return cart.body.data.items[0].unit_price;
    };
    expect(await cartUnitPrice()).toBe(10); // a cart resolves the shared id to the first entry: size S
    expect((await putCatalog([variantItem("A2-OLDDUP", "Quokka Old Dup Shirt", sizes(["M", "S"]))])).body.data.accepted).toBe(1);
    const after = await row("A2-OLDDUP");
    expect(after.variants.map((v) => [v.options.size, v.id === shared])).toEqual([["M", false], ["S", true]]);
    expect(await cartUnitPrice()).toBe(10); // still size S, not the other size
  });

  test("repeated variant ids inside one product are a per-item error; the other items are written", async () => {
    const id = crypto.randomUUID();
    const r = await putCatalog([
      variantItem("A2-DUPID", "Quokka Dup Id", [{ id, title: "S" }, { id, title: "M" }]),
      variantItem("A2-DUPSKU", "Quokka Dup Sku", [{ sku: "X", title: "S" }, { sku: "X", title: "M" }]),
      variantItem("A2-OKID", "Quokka Ok Id", [{ id, title: "S" }, { title: "M" }]),
    ]);
    expect(r.status).toBe(200);
    expect(r.body.data.rejected.map((x: any) => [x.index, x.externalId, x.errors.map((e: any) => e.field)])).toEqual([
      [0, "A2-DUPID", ["variants.1.id"]],
      [1, "A2-DUPSKU", ["variants.1.sku"]],
    ]);
    const rows = await srv.db.sql<{ external_id: string }[]>`SELECT external_id FROM products WHERE external_id IN ('A2-DUPID', 'A2-DUPSKU', 'A2-OKID')`;
    expect(rows.map((x) => x.external_id)).toEqual(["A2-OKID"]);
    expect((await row("A2-OKID")).variants[0]!.id).toBe(id);
  });
});

describe("strings Postgres cannot store are per-item rejections (MED-3)", () => {
  test("PUT /catalog: items with a lone surrogate in a value, a key or a variant option are rejected; the rest is written", async () => {
    const r = await putCatalog([
      { externalId: "A2-LS-TITLE", title: "Bad \ud800 item", price: 5, currency: "USD" },
      { externalId: "A2-LS-GOOD", title: "Quokka Good Mug \ud83d\ude00", price: 5, currency: "USD" },
      { externalId: "A2-LS-KEY", title: "Bad key", price: 5, currency: "USD", attributes: { ["mat\udc00"]: "x" } },
      variantItem("A2-LS-OPT", "Bad option", [{ title: "S", options: { size: "\udbff" } }]),
      { externalId: "A2-LS-NUL", title: "Nul \u0000 item", price: 5, currency: "USD" },
    ]);
    expect(r.status).toBe(200);
    expect(r.body.data.accepted).toBe(1);
    expect(r.body.data.rejected.map((x: any) => [x.index, x.errors.map((e: any) => e.field)])).toEqual([
      [0, ["title"]],
      [2, ["attributes.mat\udc00"]],
      [3, ["variants.0.options.size"]],
      [4, ["title"]],
    ]);
    expect(r.body.data.rejected[0].errors[0].message).toContain("lone UTF-16 surrogate");
    const rows = await srv.db.sql<{ external_id: string; title: string }[]>`SELECT external_id, title FROM products WHERE external_id LIKE 'A2-LS-%'`;
    expect(rows.map((x) => [x.external_id, x.title])).toEqual([["A2-LS-GOOD", "Quokka Good Mug \ud83d\ude00"]]);
  });

  test("POST /orders: orders with a lone surrogate are rejected one by one; the others are recorded", async () => {
    const order = (externalId: string, title = "Planter") => ({ externalId, buyer: "ann@example.com", status: "delivered", currency: "USD", items: [{ title, quantity: 1, unitPrice: 10 }] });
    const r = await postOrders([order("A2-O-BAD\udc00"), order("A2-O-GOOD"), order("A2-O-TITLE", "Pot \ud800")]);
    expect(r.status).toBe(201);
    expect(r.body.data.accepted).toBe(1);
    expect(r.body.data.rejected.map((x: any) => [x.index, x.errors.map((e: any) => e.field)])).toEqual([
      [0, ["externalId"]],
      [2, ["items.0.title"]],
    ]);
    const refs = await srv.db.sql<{ external_id: string }[]>`SELECT external_id FROM merchant_order_refs WHERE store_slug = ${SLUG} AND external_id LIKE 'A2-O-%'`;
    expect(refs.map((x) => x.external_id)).toEqual(["A2-O-GOOD"]);
    const items = await srv.db.sql<{ title: string }[]>`SELECT title FROM order_items WHERE title LIKE 'Pot %'`;
    expect(items.length).toBe(0);
  });
});

describe("strings Postgres cannot store in single-object writes (MED-3, policies and zones)", () => {
  test("PUT /policies and PUT /shipping-zones with a lone surrogate are 400 naming the field, and nothing changes", async () => {
    const [before] = await srv.db.sql<{ policy_version: number }[]>`SELECT policy_version FROM stores WHERE slug = ${SLUG}`;
    const zonesBefore = await srv.db.sql<{ name: string }[]>`SELECT name FROM shipping_zones WHERE store_slug = ${SLUG} ORDER BY name`;
    const p = await srv.json(`/api/v1/merchant/stores/${SLUG}/policies`, { method: "PUT", headers: owner, body: { acceptsReturns: true, shippingEstimateDays: "2-3 \ud800" } });
    expect(p.status).toBe(400);
    expect(p.body).toMatchObject({ code: "validation_error", details: { field: "shippingEstimateDays" } });
    const z = await srv.json(`/api/v1/merchant/stores/${SLUG}/shipping-zones`, {
      method: "PUT",
      headers: owner,
      body: { zones: [{ name: "Zone \udc00", countries: ["FR"], currency: "USD", base: 5, minDays: 1, maxDays: 3 }] },
    });
    expect(z.status).toBe(400);
    expect(z.body).toMatchObject({ code: "validation_error", details: { field: "zones.0.name" } });
    const [after] = await srv.db.sql<{ policy_version: number }[]>`SELECT policy_version FROM stores WHERE slug = ${SLUG}`;
    expect(after!.policy_version).toBe(before!.policy_version);
    const zonesAfter = await srv.db.sql<{ name: string }[]>`SELECT name FROM shipping_zones WHERE store_slug = ${SLUG} ORDER BY name`;
    expect(zonesAfter.map((x) => x.name)).toEqual(zonesBefore.map((x) => x.name));
  });
});

describe("POST /orders checks each order on its own (LOW-3)", () => {
  test("a wrong status and a date in the future are per-order rejections with 201; the other orders are recorded", async () => {
    const base = { buyer: "bob@example.com", currency: "USD", items: [{ title: "Lamp", quantity: 1, unitPrice: 30 }] };
    const soon = new Date(Date.now() + 60_000).toISOString();
    const r = await postOrders([
      { ...base, externalId: "A2-S-1", status: "shipped_maybe" },
      { ...base, externalId: "A2-S-2", status: "paid" },
      { ...base, externalId: "A2-S-3", status: "delivered", createdAt: "2099-01-01T00:00:00Z" },
      { ...base, externalId: "A2-S-4", status: "delivered", createdAt: soon },
      { ...base, externalId: "A2-S-5", status: "paid", items: [{ title: "Lamp", quantity: 1, unitPrice: 1.001 }] },
    ]);
    expect(r.status).toBe(201);
    expect(r.body.data.accepted).toBe(2);
    expect(r.body.data.rejected.map((x: any) => [x.index, x.externalId, x.errors.map((e: any) => e.field)])).toEqual([
      [0, "A2-S-1", ["status"]],
      [2, "A2-S-3", ["createdAt"]],
      [4, "A2-S-5", ["items.0.unitPrice"]],
    ]);
    expect(r.body.data.rejected[1].errors[0].message).toContain("future");
    const rows = await srv.db.sql<{ external_id: string }[]>`SELECT external_id FROM merchant_order_refs WHERE external_id LIKE 'A2-S-%' ORDER BY 1`;
    expect(rows.map((x) => x.external_id)).toEqual(["A2-S-2", "A2-S-4"]);
  });

  test("a malformed envelope is still a 400 for the whole request", async () => {
    const r = await srv.json(`/api/v1/merchant/stores/${SLUG}/orders`, { method: "POST", headers: owner, body: { orders: [] } });
    expect(r.status).toBe(400);
    expect(r.body.code).toBe("validation_error");
  });
});
