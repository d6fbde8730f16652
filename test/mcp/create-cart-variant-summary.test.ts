/**
 * MCP create_cart asks the human about a variant line at the variant's price and title, and checks the variant's
 * stock before asking (audit R3 MED-4: it used the product's price, title and rolled-up stock, so the human approved
 * 10.00 for a 1000.00 cart, or was asked and then refused out_of_stock). A refusal names the request's item index,
 * not the merged line's (audit R3 LOW-5), as the cart actor does.
 */
import { afterAll, beforeAll, expect, test } from "bun:test";
import { ALL_SCOPES, createKey, type TestKey } from "../helpers/agents.ts";
import { startServer, type TestServer } from "../helpers/server.ts";
import { accept, connect, errorOf, structured, type Connected } from "./helpers.ts";
import { money } from "../../gateway/mcp/tools/commerce.ts";

/** demo-store, Electronics, 2 tracked variants. */
const P = "8a3a9aee-ab77-5002-b694-85328b7ffec3";

let srv: TestServer;
let key: TestKey;
let agent: Connected;
let title: string;
let list: number;
let gold: { id: string; title: string };
let gone: { id: string; title: string };

beforeAll(async () => {
  srv = await startServer({ seed: true, config: { RATE_LIMITS_ENABLED: false } });
  key = await createKey(srv, { scopes: ALL_SCOPES, tier: "ENTERPRISE" });
  // Variant 0 ("gold") costs ten times the product, variant 1 ("gone") has no stock; the product's roll-up has 30.
  const [p] = await srv.db.sql<{ title: string; price: number }[]>`
    UPDATE products SET stock_quantity = 30, reserved_quantity = 0, in_stock = true, variant_reserved = '{}'::jsonb,
      variants = jsonb_set(jsonb_set(variants, '{0}', variants->0 || jsonb_build_object('priceMinor', price_minor * 10, 'stockQuantity', 30, 'inStock', true)),
        '{1}', variants->1 || '{"priceMinor":null,"stockQuantity":0,"inStock":false}'::jsonb)
    WHERE id = ${P} RETURNING title, price_minor::int AS price`;
  title = p!.title;
  list = p!.price;
  const vs = await srv.db.sql<{ id: string; title: string }[]>`SELECT v->>'id' AS id, v->>'title' AS title FROM products, jsonb_array_elements(variants) v WHERE id = ${P}`;
  [gold, gone] = [vs[0]!, vs[1]!];
  agent = await connect(srv, { headers: key.headers, elicit: accept });
}, 120_000);
afterAll(async () => {
  await agent?.close();
  await srv?.stop();
});

test("a variant line is asked about at the variant's title and price, and the total asked is the cart's", async () => {
  const r = await agent.call("create_cart", { items: [{ product_id: P, variant_id: gold.id, quantity: 2 }] });
  expect(r.isError).toBeFalsy();
  const unit = list * 10;
  expect(agent.elicitations.at(-1)!.message.split("\n")[0]).toBe(
    `Create a cart at Demo Store: 2 × ${title} (${gold.title}) (${money(unit, "USD")}) — about ${money(2 * unit, "USD")} before shipping and tax.`,
  );
  const cart = structured(r);
  expect(cart.items[0]).toMatchObject({ variant_id: gold.id, unit_price_minor: unit, quantity: 2 });
  expect(cart.totals.subtotal_minor).toBe(2 * unit);
});

test("a variant without stock is refused before the human is asked (INVALID_ARGUMENT out_of_stock on the request's item)", async () => {
  const asked = agent.elicitations.length;
  const e = errorOf(await agent.call("create_cart", { items: [{ product_id: P, variant_id: gone.id, quantity: 1 }] }));
  expect(agent.elicitations.length).toBe(asked);
  expect(e.code).toBe("INVALID_ARGUMENT");
  expect(e.details).toMatchObject({ field: "items[0].quantity", reason: "out_of_stock", product_id: P, requested: 1, available: 0 });

  // Items [gold, gold, gone]: the merged lines are gold and gone (index 1), the request's item is items[2].
  const m = errorOf(
    await agent.call("create_cart", {
      items: [
        { product_id: P, variant_id: gold.id, quantity: 1 },
        { product_id: P, variant_id: gold.id, quantity: 1 },
        { product_id: P, variant_id: gone.id, quantity: 1 },
      ],
    }),
  );
  expect(agent.elicitations.length).toBe(asked);
  expect(m.details).toMatchObject({ field: "items[2].quantity", reason: "out_of_stock", product_id: P });
});

test("a variant the product does not have is refused before the human is asked (PRODUCT_NOT_FOUND on items[i].variant_id)", async () => {
  const asked = agent.elicitations.length;
  const other = crypto.randomUUID();
  const e = errorOf(await agent.call("create_cart", { items: [{ product_id: P, variant_id: gold.id, quantity: 1 }, { product_id: P, variant_id: other, quantity: 1 }] }));
  expect(agent.elicitations.length).toBe(asked);
  expect(e.code).toBe("PRODUCT_NOT_FOUND");
  expect(e.details).toMatchObject({ field: "items[1].variant_id", product_id: P, variant_id: other });
});

test("update_cart_item of a variant line is asked about at the variant's title and price", async () => {
  const c = structured(await agent.call("create_cart", { items: [{ product_id: P, variant_id: gold.id, quantity: 1 }] }));
  const r = await agent.call("update_cart_item", { cart_id: c.cart_id, product_id: P, variant_id: gold.id, quantity: 3 });
  expect(r.isError).toBeFalsy();
  const unit = list * 10;
  expect(agent.elicitations.at(-1)!.message.split("\n")[0]).toBe(`Set ${title} (${gold.title}) to 3 × ${money(unit, "USD")} in your cart at Demo Store.`);
  expect(structured(r).totals.subtotal_minor).toBe(3 * unit);
});
