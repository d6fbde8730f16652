/**
 * Audit A (session 16 leftover), fixed in session 17 (engineer L): POST /agent/shipping-estimate and MCP
 * get_shipping_rates with product_id priced the units at the product's list price, while the cart charges a
 * variant's own price. With a zone's free-shipping threshold between the two, the estimate charged shipping the
 * cart does not (or, the other way round, promised free shipping the cart charges). Now:
 * - `variantId` (MCP `variant_id`) names the variant: its price, as the cart's line (linePricing, unitPriceOf);
 * - without it, a product whose variants differ is estimated at its lowest-priced variant: free only when every
 *   variant's line would ship free (docs/catalog.md "shipping-estimate");
 * - a variant the product does not have: 404 not_found (MCP PRODUCT_NOT_FOUND).
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { ALL_SCOPES, createKey, login, type TestKey } from "../helpers/agents.ts";
import { startServer, type TestServer } from "../helpers/server.ts";
import { accept, connect, errorOf, structured, type Connected } from "../mcp/helpers.ts";

const PRODUCT = "5d69e189-f50a-5903-bc4a-204aa49bd245"; // demo-store, Electronics, 4 variants
const DEST = { countryCode: "US", postalCode: "10001" };
let srv: TestServer;
let key: TestKey;
let mcp: Connected;
let list = 0;
let variants: string[] = [];

beforeAll(async () => {
  srv = await startServer({ seed: true, config: { RATE_LIMITS_ENABLED: false } });
  key = await createKey(srv, { tier: "ENTERPRISE", scopes: ALL_SCOPES });
  const [row] = await srv.db.sql<{ price: number; v: string[]; currency: string }[]>`SELECT price_minor::int AS price, currency,
    ARRAY(SELECT x->>'id' FROM jsonb_array_elements(variants) x) AS v FROM products WHERE id = ${PRODUCT}`;
  expect(row!.currency).toBe("USD");
  list = row!.price;
  variants = row!.v;
  // v0 without its own price (the list price), v1 at twice it, v2 at three times, v3 out of stock at twice
  await srv.db.sql`UPDATE products SET stock_quantity = NULL, reserved_quantity = 0, in_stock = true, variant_reserved = '{}'::jsonb,
    variants = (SELECT jsonb_agg(CASE ord WHEN 1 THEN x || jsonb_build_object('priceMinor', null, 'stockQuantity', null, 'inStock', true)
      WHEN 2 THEN x || jsonb_build_object('priceMinor', ${2 * list}::int, 'stockQuantity', null, 'inStock', true)
      WHEN 3 THEN x || jsonb_build_object('priceMinor', ${3 * list}::int, 'stockQuantity', null, 'inStock', true)
      ELSE x || jsonb_build_object('priceMinor', ${2 * list}::int, 'stockQuantity', 0, 'inStock', false) END ORDER BY ord)
      FROM jsonb_array_elements(variants) WITH ORDINALITY AS t(x, ord))
    WHERE id = ${PRODUCT}`;
  // one domestic zone, free from 1.5 × the list price: one unit of v1 or v2 ships free, one unit at the list price does not
  const z = await srv.json("/api/v1/merchant/stores/demo-store/shipping-zones", {
    method: "PUT",
    headers: { authorization: `Bearer ${await login(srv)}` },
    body: { zones: [{ name: "Contiguous US", countries: ["US"], currency: "USD", base: 5, perItem: 1, freeOver: Math.round(1.5 * list) / 100, minDays: 3, maxDays: 5 }] },
  });
  expect(z.status).toBe(200);
  mcp = await connect(srv, { headers: key.headers, elicit: accept });
}, 120_000);
afterAll(async () => {
  await mcp?.close?.();
  await srv?.stop();
});

const estimate = (body: Record<string, unknown>) =>
  srv.json("/api/v1/agent/shipping-estimate", { method: "POST", headers: key.headers, body: { productId: PRODUCT, ...DEST, quantity: 1, ...body } });

/** What the key's checkout preview charges for shipping one unit of the variant to DEST. */
async function previewShipping(variantId: string): Promise<number> {
  const cart = await srv.json("/api/v1/agent/cart", { method: "POST", headers: key.headers, body: { items: [{ product_id: PRODUCT, variant_id: variantId, quantity: 1 }] } });
  expect(cart.status).toBe(201);
  const pv = await srv.json("/api/v1/agent/checkout/preview", {
    method: "POST",
    headers: key.headers,
    body: { cartId: cart.body.data.id, shipping: { country_code: DEST.countryCode, postal_code: DEST.postalCode } },
  });
  expect(pv.status).toBe(200);
  return pv.body.data.totals.shipping;
}

describe("the shipping estimate prices a variant as the cart does", () => {
  test("a variant with its own price above the threshold: free, as the preview of its cart", async () => {
    const est = await estimate({ variantId: variants[1] });
    expect(est.status).toBe(200);
    expect(est.body.data).toMatchObject({ shippable: true, freeShipping: true, cost: 0 });
    expect(est.body.data.cost).toBe(await previewShipping(variants[1]!));
  });

  test("a variant without its own price is priced at the list price: shipping charged, as its preview", async () => {
    const est = await estimate({ variantId: variants[0] });
    expect(est.status).toBe(200);
    expect(est.body.data).toMatchObject({ shippable: true, freeShipping: false, cost: 6 });
    expect(est.body.data.cost).toBe(await previewShipping(variants[0]!));
  });

  test("no variant given: the lowest-priced variant decides (never free where some variant's cart pays)", async () => {
    expect((await estimate({})).body.data).toMatchObject({ freeShipping: false, cost: 6 });
    // every variant priced above the product's list price (the audit's case): the estimate is free now
    await srv.db.sql`UPDATE products SET variants = (SELECT jsonb_agg(x || jsonb_build_object('priceMinor', ${2 * list}::int))
      FROM jsonb_array_elements(variants) x) WHERE id = ${PRODUCT}`;
    try {
      expect((await estimate({})).body.data).toMatchObject({ freeShipping: true, cost: 0 });
    } finally {
      await srv.db.sql`UPDATE products SET variants = (SELECT jsonb_agg(CASE ord WHEN 1 THEN x || '{"priceMinor":null}'::jsonb ELSE x END ORDER BY ord)
        FROM jsonb_array_elements(variants) WITH ORDINALITY AS t(x, ord)) WHERE id = ${PRODUCT}`;
    }
  });

  test("a variant the product does not have is 404 not_found on variantId", async () => {
    const r = await estimate({ variantId: "00000000-0000-4000-8000-000000000000" });
    expect(r.status).toBe(404);
    expect(r.body.code).toBe("not_found");
    expect(r.body.details.field).toBe("variantId");
    expect((await estimate({ variantId: "nope" })).status).toBe(400);
  });

  test("MCP get_shipping_rates with product_id and variant_id answers as REST", async () => {
    const free = structured(await mcp.call("get_shipping_rates", { product_id: PRODUCT, variant_id: variants[1], country_code: "US", postal_code: "10001", quantity: 1 }));
    expect(free).toMatchObject({ shippable: true, freeShipping: true, cost: 0 });
    const paid = structured(await mcp.call("get_shipping_rates", { product_id: PRODUCT, variant_id: variants[0], country_code: "US", postal_code: "10001", quantity: 1 }));
    expect(paid).toMatchObject({ shippable: true, freeShipping: false, cost: 6 });
    const missing = await mcp.call("get_shipping_rates", { product_id: PRODUCT, variant_id: "00000000-0000-4000-8000-000000000000", country_code: "US", postal_code: "10001" });
    expect(missing.isError).toBe(true);
    expect(errorOf(missing).code).toBe("PRODUCT_NOT_FOUND");
  });
});
