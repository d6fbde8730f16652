/**
 * Review R5 LOW-2: MCP create_cart asked the human about the list price where the cart charges the key's accepted
 * negotiated price (docs/catalog.md "negotiate"), so the human approved one amount and the cart held another. The
 * question and the tool's result now state what the cart charges: the negotiated unit price for a line the offer
 * prices (a product without variants, or a variant sold at the product's list price), the variant's own price for a
 * variant priced apart, the list price otherwise; the same as REST's cart for the same key.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { money } from "../../gateway/mcp/tools/commerce.ts";
import { ALL_SCOPES, createKey, type TestKey } from "../helpers/agents.ts";
import type { TestServer } from "../helpers/server.ts";
import { startBuyingAgent, structured, type Connected } from "./helpers.ts";

/** demo-store, Electronics, 2 variants (as test/mcp/create-cart-variant-summary.test.ts). */
const VARIANT_PRODUCT = "8a3a9aee-ab77-5002-b694-85328b7ffec3";

let srv: TestServer;
let key: TestKey;
let agent: Connected;

beforeAll(async () => {
  ({ srv, key, agent } = await startBuyingAgent());
}, 120_000);
afterAll(async () => {
  await agent?.close();
  await srv?.stop();
});

interface Product {
  id: string;
  title: string;
  priceMinor: number;
}

/** The nth active, untracked demo-store product without variants in a category the store negotiates. */
async function plainProduct(nth: number): Promise<Product> {
  const [p] = await srv.db.sql<{ id: string; title: string; price_minor: number }[]>`
    SELECT id, title, price_minor::int FROM products WHERE store_slug = 'demo-store' AND active AND in_stock AND stock_quantity IS NULL
      AND jsonb_array_length(COALESCE(variants, '[]'::jsonb)) = 0 AND price_minor >= 1000 ORDER BY external_id OFFSET ${nth} LIMIT 1`;
  return { id: p!.id, title: p!.title, priceMinor: p!.price_minor };
}

/** A bid at 98 % of the list price through REST with the same key (every seeded rule auto-accepts it). */
async function negotiate(p: Product): Promise<number> {
  const bidMinor = Math.ceil(p.priceMinor * 0.98);
  const r = await srv.json("/api/v1/agent/negotiate", { method: "POST", headers: key.headers, body: { productId: p.id, merchantSlug: "demo-store", bidPrice: bidMinor / 100, currency: "USD" } });
  expect(r.status).toBe(200);
  expect(r.body.data).toMatchObject({ status: "accepted", negotiatedPrice: bidMinor / 100 });
  expect(bidMinor).toBeLessThan(p.priceMinor);
  return bidMinor;
}

const question = () => agent.elicitations.at(-1)!.message.split("\n");

describe("create_cart asks about and answers with what the cart charges", () => {
  test("a product with an accepted offer: the human is asked about the negotiated unit price and total, the result and REST's cart charge it", async () => {
    const p = await plainProduct(0);
    const price = await negotiate(p);
    const r = await agent.call("create_cart", { items: [{ product_id: p.id, quantity: 3 }] });
    expect(r.isError).toBeFalsy();
    const lines = question();
    expect(lines[0]).toBe(
      `Create a cart at Demo Store: 3 × ${p.title} (${money(price, "USD")}, negotiated; list ${money(p.priceMinor, "USD")}) — about ${money(3 * price, "USD")} before shipping and tax.`,
    );
    expect(lines).toContain(`- amount: ${(3 * price) / 100}`);
    const cart = structured(r);
    expect(cart.items[0]).toMatchObject({ product_id: p.id, quantity: 3, unit_price_minor: price, list_price_minor: p.priceMinor, price_source: "negotiated" });
    expect(cart.totals.subtotal_minor).toBe(3 * price);
    // REST's cart for the same key prices the same line the same way.
    const rest = await srv.json("/api/v1/agent/cart", { method: "POST", headers: key.headers, body: { items: [{ product_id: p.id, quantity: 3 }] } });
    expect(rest.status).toBe(201);
    expect(rest.body.data.items[0]).toMatchObject({ unit_price_minor: price, price_source: "negotiated" });
    expect(rest.body.data.totals.subtotal_minor).toBe(cart.totals.subtotal_minor);
  }, 60_000);

  test("an offer and a list-priced line in one cart: each line at its own price, the total their sum", async () => {
    const offered = await plainProduct(1);
    const plain = await plainProduct(2);
    const price = await negotiate(offered);
    const r = await agent.call("create_cart", { items: [{ product_id: offered.id, quantity: 1 }, { product_id: plain.id, quantity: 2 }] });
    expect(r.isError).toBeFalsy();
    const total = price + 2 * plain.priceMinor;
    expect(question()[0]).toBe(
      `Create a cart at Demo Store: 1 × ${offered.title} (${money(price, "USD")}, negotiated; list ${money(offered.priceMinor, "USD")}), ` +
        `2 × ${plain.title} (${money(plain.priceMinor, "USD")}) — about ${money(total, "USD")} before shipping and tax.`,
    );
    expect(structured(r).totals.subtotal_minor).toBe(total);
  }, 60_000);

  test("another key's offer does not lower this key's quote", async () => {
    const p = await plainProduct(3);
    const other = await createKey(srv, { scopes: ALL_SCOPES, tier: "ENTERPRISE" });
    const bid = Math.ceil(p.priceMinor * 0.98);
    const n = await srv.json("/api/v1/agent/negotiate", { method: "POST", headers: other.headers, body: { productId: p.id, merchantSlug: "demo-store", bidPrice: bid / 100, currency: "USD" } });
    expect(n.body.data.status).toBe("accepted");
    const r = await agent.call("create_cart", { items: [{ product_id: p.id, quantity: 1 }] });
    expect(question()[0]).toBe(`Create a cart at Demo Store: 1 × ${p.title} (${money(p.priceMinor, "USD")}) — about ${money(p.priceMinor, "USD")} before shipping and tax.`);
    expect(structured(r).items[0]).toMatchObject({ unit_price_minor: p.priceMinor, price_source: "list" });
  }, 60_000);

  test("an expired offer is quoted at the list price, as the cart charges it", async () => {
    const p = await plainProduct(4);
    await negotiate(p);
    await srv.db.sql`UPDATE negotiation_offers SET expires_at = now() - interval '1 second' WHERE agent_key_id = ${key.id} AND product_id = ${p.id}`;
    const r = await agent.call("create_cart", { items: [{ product_id: p.id, quantity: 1 }] });
    expect(question()[0]).toBe(`Create a cart at Demo Store: 1 × ${p.title} (${money(p.priceMinor, "USD")}) — about ${money(p.priceMinor, "USD")} before shipping and tax.`);
    expect(structured(r).items[0]).toMatchObject({ unit_price_minor: p.priceMinor, price_source: "list" });
  }, 60_000);

  test("a variant priced apart keeps its own price; a variant at the product's list price takes the offer", async () => {
    const [prod] = await srv.db.sql<{ title: string; price: number }[]>`
      UPDATE products SET stock_quantity = 30, reserved_quantity = 0, in_stock = true, variant_reserved = '{}'::jsonb,
        variants = jsonb_set(jsonb_set(variants, '{0}', variants->0 || jsonb_build_object('priceMinor', price_minor * 2, 'stockQuantity', 30, 'inStock', true)),
          '{1}', variants->1 || '{"priceMinor":null,"stockQuantity":30,"inStock":true}'::jsonb)
      WHERE id = ${VARIANT_PRODUCT} RETURNING title, price_minor::int AS price`;
    const vs = await srv.db.sql<{ id: string; title: string }[]>`SELECT v->>'id' AS id, v->>'title' AS title FROM products, jsonb_array_elements(variants) v WHERE id = ${VARIANT_PRODUCT}`;
    const [apart, atList] = [vs[0]!, vs[1]!];
    const price = await negotiate({ id: VARIANT_PRODUCT, title: prod!.title, priceMinor: prod!.price });
    const r = await agent.call("create_cart", {
      items: [
        { product_id: VARIANT_PRODUCT, variant_id: apart.id, quantity: 1 },
        { product_id: VARIANT_PRODUCT, variant_id: atList.id, quantity: 1 },
      ],
    });
    expect(r.isError).toBeFalsy();
    const own = prod!.price * 2;
    expect(question()[0]).toBe(
      `Create a cart at Demo Store: 1 × ${prod!.title} (${apart.title}) (${money(own, "USD")}), ` +
        `1 × ${prod!.title} (${atList.title}) (${money(price, "USD")}, negotiated; list ${money(prod!.price, "USD")}) — about ${money(own + price, "USD")} before shipping and tax.`,
    );
    const cart = structured(r);
    expect(cart.items.map((i: { unit_price_minor: number; price_source: string }) => [i.unit_price_minor, i.price_source])).toEqual([
      [own, "list"],
      [price, "negotiated"],
    ]);
    expect(cart.totals.subtotal_minor).toBe(own + price);
  }, 60_000);

  test("update_cart_item is asked about at the negotiated price the new cart charges", async () => {
    const p = await plainProduct(5);
    const price = await negotiate(p);
    const c = structured(await agent.call("create_cart", { items: [{ product_id: p.id, quantity: 1 }] }));
    const r = await agent.call("update_cart_item", { cart_id: c.cart_id, product_id: p.id, quantity: 4 });
    expect(r.isError).toBeFalsy();
    expect(question()[0]).toBe(`Set ${p.title} to 4 × ${money(price, "USD")} (negotiated; list ${money(p.priceMinor, "USD")}) in your cart at Demo Store.`);
    expect(question()).toContain(`- amount: ${(4 * price) / 100}`);
    expect(structured(r).items[0]).toMatchObject({ unit_price_minor: price, price_source: "negotiated", quantity: 4 });
  }, 60_000);
});
