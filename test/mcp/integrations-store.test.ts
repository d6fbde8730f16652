/**
 * The integration tools that take a cart (start_attribute_verification; complete_checkout's mandate read in
 * integrations.ts verifyMandateFor) hold the cart to the endpoint's store as every cart tool does (commerce.ts
 * ofThisStore, audit V "also seen"): a cart none of whose merchants is the endpoint's store is CART_NOT_FOUND there,
 * before the human is asked to share anything and before any platform is written to; in a cart shared with other
 * stores only this store's lines go to a platform, since the human is asked to share the attribute with this store.
 * (verifyMandateFor's own read is reached only after complete_checkout's precheck refused such a cart already, so it
 * is covered by reading the same rule, not by a call of its own.)
 */
import { afterAll, beforeAll, expect, test } from "bun:test";
import { ALL_SCOPES, createKey, type TestKey } from "../helpers/agents.ts";
import { startServer, type TestServer } from "../helpers/server.ts";
import { accept, connect, DEMO, errorOf, structured, type Connected } from "./helpers.ts";

const GREEN = "greenleaf-living";

let srv: TestServer;
let key: TestKey;
let demo: Connected;
let green: Connected;
let platform: ReturnType<typeof Bun.serve>;
/** Bodies the merchant platform received (attribute writes). */
const writes: { cart_id: string; attribute: string; value: unknown; path: string }[] = [];
let demoProduct: string;
let greenProduct: string;

beforeAll(async () => {
  srv = await startServer({ seed: true, config: { RATE_LIMITS_ENABLED: false } });
  key = await createKey(srv, { scopes: ALL_SCOPES, tier: "ENTERPRISE" });
  demo = await connect(srv, { path: `/${DEMO}/mcp`, headers: key.headers, elicit: accept });
  green = await connect(srv, { path: `/${GREEN}/mcp`, headers: key.headers, elicit: accept });
  platform = Bun.serve({
    hostname: "127.0.0.1",
    port: 0,
    async fetch(req) {
      if (req.method === "POST") writes.push({ ...((await req.json()) as { cart_id: string; attribute: string; value: unknown }), path: new URL(req.url).pathname });
      return Response.json({ in_stock: true, quantity: 3 });
    },
  });
  // one USD product of each store, without variants, integrating the platform (its path names the store)
  for (const store of [DEMO, GREEN]) {
    const [p] = await srv.db.sql<{ id: string }[]>`
      SELECT id FROM products WHERE store_slug = ${store} AND active AND in_stock AND currency = 'USD' AND variants = '[]'::jsonb
        AND stock_quantity >= 5 ORDER BY id LIMIT 1`;
    await srv.db.sql`UPDATE products SET attributes = attributes || ${srv.db.sql.json({ platform_endpoint: `http://127.0.0.1:${platform.port}/${store}` })} WHERE id = ${p!.id}`;
    if (store === DEMO) demoProduct = p!.id;
    else greenProduct = p!.id;
  }
}, 120_000);
afterAll(async () => {
  platform?.stop(true);
  await demo?.close();
  await green?.close();
  await srv?.stop();
});

async function restCart(productIds: string[]): Promise<string> {
  const c = await srv.json("/api/v1/agent/cart", { method: "POST", headers: key.headers, body: { items: productIds.map((product_id) => ({ product_id, quantity: 1 })) } });
  expect(c.status).toBe(201);
  return c.body.data.id as string;
}

test("another store's endpoint answers CART_NOT_FOUND for start_attribute_verification of a demo-store cart, without asking the human or writing to the platform", async () => {
  const cartId = await restCart([demoProduct]);
  const asked = green.elicitations.length;
  const before = writes.length;
  const e = errorOf(await green.call("start_attribute_verification", { cart_id: cartId, attribute: "age_over_18", value: true }));
  expect({ code: e.code, cart_id: e.details.cart_id }).toEqual({ code: "CART_NOT_FOUND", cart_id: cartId });
  expect(green.elicitations.length).toBe(asked);
  expect(writes.length).toBe(before);

  // on its own store's endpoint the same cart's attribute is shared with that store's platform
  const v = await demo.call("start_attribute_verification", { cart_id: cartId, attribute: "age_over_18", value: true });
  expect(v.isError).toBeFalsy();
  expect(structured(v).lines).toBe(1);
  expect(writes.slice(before)).toEqual([{ cart_id: cartId, attribute: "age_over_18", value: true, path: `/${DEMO}` }]);
}, 60_000);

test("in a cart shared by two stores, start_attribute_verification on one store's endpoint writes only that store's lines to a platform", async () => {
  const cartId = await restCart([demoProduct, greenProduct]);
  const before = writes.length;
  const v = await green.call("start_attribute_verification", { cart_id: cartId, attribute: "age_over_21", value: true });
  expect(v.isError).toBeFalsy();
  expect(structured(v).lines).toBe(1);
  expect(writes.slice(before)).toEqual([{ cart_id: cartId, attribute: "age_over_21", value: true, path: `/${GREEN}` }]);
  // the question named the store the attribute is shared with
  expect(green.elicitations.at(-1)?.message).toContain("Greenleaf Living");
}, 60_000);
