/**
 * MCP parity of audit W-7 (REST: test/http/unknown-keys-agent-bodies.test.ts): the tools whose REST twin refuses an
 * unknown body key refuse an unknown argument the same way, as the tool error INVALID_ARGUMENT naming it
 * (`details.field`, `details.allowed`: the keys of the object that lacks it), and nothing runs; the right spelling
 * works. Every tool's input schema is closed at every level (`additionalProperties: false`), which is what makes the
 * dispatcher's schema check refuse them; the first test keeps it so for tools added later.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { Kind, type TSchema } from "@sinclair/typebox";
import { ALL_TOOLS } from "../../gateway/mcp/tools/index.ts";
import { ALL_SCOPES, createKey, type TestKey } from "../helpers/agents.ts";
import { startServer, type TestServer } from "../helpers/server.ts";
import { accept, connect, errorOf, type Connected } from "./helpers.ts";

const BOARD = "5befd987-79cd-540c-8a5d-2ba5a30aed41"; // DS-0011, demo-store, no variants
const HEADPHONES = "1e34ef13-d99e-575f-975a-67ea08dcdf99"; // DS-0001, demo-store, 2 variants

/** Paths of the objects in `s` that admit keys they do not list. */
function openObjects(s: TSchema, path = ""): string[] {
  const out: string[] = [];
  if (s[Kind] === "Object") {
    if (s.additionalProperties !== false) out.push(path || "(arguments)");
    for (const [k, v] of Object.entries((s.properties ?? {}) as Record<string, TSchema>)) out.push(...openObjects(v, `${path}.${k}`));
  }
  if (s[Kind] === "Array" && s.items) out.push(...openObjects(s.items as TSchema, `${path}[]`));
  for (const k of ["anyOf", "allOf", "oneOf"] as const) for (const m of (s[k] ?? []) as TSchema[]) out.push(...openObjects(m, path));
  return out;
}

test("every MCP tool's arguments are closed at every level: an unknown argument fails the tool's schema check", () => {
  const open = ALL_TOOLS.flatMap((t) => openObjects(t.input).map((p) => `${t.name}: ${p}`));
  expect(open).toEqual([]);
});

let srv: TestServer;
let key: TestKey;
let c: Connected;
let variant: string;

beforeAll(async () => {
  srv = await startServer({ seed: true, config: { RATE_LIMITS_ENABLED: false } });
  key = await createKey(srv, { scopes: ALL_SCOPES, tier: "ENTERPRISE" });
  c = await connect(srv, { headers: key.headers, elicit: accept });
  [{ variant }] = await srv.db.sql<{ variant: string }[]>`SELECT variants->0->>'id' AS variant FROM products WHERE id = ${HEADPHONES}`;
}, 60_000);
afterAll(async () => {
  await c?.close();
  await srv?.stop();
});

/** The tool error of an unknown argument, exactly. */
async function expectUnknownArgument(name: string, args: Record<string, unknown>, field: string, allowed: string[]) {
  const r = await c.call(name, args);
  const e = errorOf(r);
  expect(e.code).toBe("INVALID_ARGUMENT");
  expect(e.message).toBe(`Unknown argument '${field}'.`);
  expect(e.details).toEqual({ field, allowed });
}

const carts = async () => (await srv.db.sql<{ n: number }[]>`SELECT count(*)::int AS n FROM actor_state WHERE kind = 'cart'`)[0]!.n;

describe("a misspelt argument on the REST twins' tools: INVALID_ARGUMENT naming it, the right spelling works", () => {
  test("create_cart with a line's variantId: refused naming items.0.variantId with the line's keys, no cart", async () => {
    const before = await carts();
    await expectUnknownArgument("create_cart", { items: [{ product_id: HEADPHONES, quantity: 1, variantId: variant }] }, "items.0.variantId", ["product_id", "quantity", "variant_id"]);
    expect(await carts()).toBe(before);
    const ok = await c.call("create_cart", { items: [{ product_id: HEADPHONES, quantity: 1, variant_id: variant }] });
    expect(ok.isError).toBeFalsy();
  });

  test("apply_coupon with expectedRevision, get_shipping_rates with qty, cancel_order with reasn: refused naming them", async () => {
    const cart = await c.call("create_cart", { items: [{ product_id: BOARD, quantity: 1 }] });
    const cartId = (cart.structuredContent as { cart_id: string }).cart_id;
    await expectUnknownArgument("apply_coupon", { cart_id: cartId, code: "WELCOME10", expectedRevision: 1 }, "expectedRevision", ["cart_id", "code", "expected_revision"]);
    const r = await c.call("get_shipping_rates", { product_id: BOARD, country_code: "US", postal_code: "94107", qty: 5 });
    expect(errorOf(r)).toMatchObject({ code: "INVALID_ARGUMENT", message: "Unknown argument 'qty'.", details: { field: "qty" } });
    expect((await c.call("get_shipping_rates", { product_id: BOARD, country_code: "US", postal_code: "94107", quantity: 5 })).isError).toBeFalsy();
    await expectUnknownArgument("cancel_order", { order_id: crypto.randomUUID(), reasn: "changed my mind" }, "reasn", ["order_id", "reason"]);
  });

  test("negotiate_price, get_recommendations, compare_products, search_products, provision_wallet: refused naming the unknown one", async () => {
    await expectUnknownArgument("negotiate_price", { product_id: BOARD, productId: BOARD, bid_price: 1, currency: "USD" }, "productId", ["product_id", "bid_price", "currency"]);
    await expectUnknownArgument("get_recommendations", { product_id: BOARD, limt: 2 }, "limt", ["product_id", "limit"]);
    await expectUnknownArgument("compare_products", { product_ids: [BOARD], productIds: [BOARD] }, "productIds", ["product_ids"]);
    const s = await c.call("search_products", { query: "board", sortBy: "price_asc" });
    expect(errorOf(s)).toMatchObject({ code: "INVALID_ARGUMENT", details: { field: "sortBy" } });
    await expectUnknownArgument("provision_wallet", { netwrok: "eip155:8453" }, "netwrok", ["network"]);
    expect((await c.call("get_recommendations", { product_id: BOARD, limit: 2 })).isError).toBeFalsy();
  });
});
