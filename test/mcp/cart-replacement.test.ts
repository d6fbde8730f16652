/**
 * An edit (update_cart_item, remove_cart_item) answers a NEW cart; the cart it replaced must not stay OPEN, mutable and
 * payable beside it (audit E: the old id forked a third cart and was previewed and paid over REST). Spec (States):
 * "cart | mutation after cart was modified … | unchanged | CART_NOT_MUTABLE". The old cart is REPLACED, durably (its
 * actor state), and every write, preview and payment of it, on MCP and REST, is CART_NOT_MUTABLE naming the new cart.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import type { TestKey } from "../helpers/agents.ts";
import type { TestServer } from "../helpers/server.ts";
import { DEMO_PRODUCT, errorOf, startBuyingAgent, structured, type Connected } from "./helpers.ts";

let srv: TestServer;
let key: TestKey;
let agent: Connected;
let other: string;

beforeAll(async () => {
  ({ srv, key, agent } = await startBuyingAgent());
  const [p] = await srv.db.sql<{ id: string }[]>`
    SELECT id FROM products WHERE store_slug = 'demo-store' AND active AND in_stock AND id <> ${DEMO_PRODUCT} AND (stock_quantity IS NULL OR stock_quantity >= 10) ORDER BY id LIMIT 1`;
  other = p!.id;
}, 60_000);
afterAll(async () => {
  await agent?.close();
  await srv?.stop();
});

async function newCart(): Promise<string> {
  return structured(await agent.call("create_cart", { items: [{ product_id: DEMO_PRODUCT, quantity: 1 }] })).cart_id;
}

function expectReplaced(e: ReturnType<typeof errorOf>, by: string) {
  expect(e.code).toBe("CART_NOT_MUTABLE");
  expect(e.details).toMatchObject({ reason: "replaced", replaced_by_cart_id: by });
  expect(e.message).toContain(by);
}

describe("a cart replaced by update_cart_item", () => {
  let oldId: string;
  let newId: string;

  beforeAll(async () => {
    oldId = await newCart();
    const edited = structured(await agent.call("update_cart_item", { cart_id: oldId, product_id: other, quantity: 2 }));
    newId = edited.cart_id;
    expect(edited.replaces_cart_id).toBe(oldId);
    expect(newId).not.toBe(oldId);
  }, 60_000);

  test("reads as REPLACED with the id of the cart that replaced it, and that state is stored", async () => {
    const got = structured(await agent.call("get_cart", { cart_id: oldId }));
    expect(got).toMatchObject({ status: "REPLACED", replaced_by_cart_id: newId });
    const [row] = await srv.db.sql<{ state: { cart: { status: string; replacedBy: string } } }[]>`SELECT state FROM actor_state WHERE kind = 'cart' AND id = ${oldId}`;
    expect(row!.state.cart).toMatchObject({ status: "REPLACED", replacedBy: newId });
    const rest = await srv.json(`/api/v1/agent/cart/${oldId}`, { headers: key.headers });
    expect(rest.body.data).toMatchObject({ status: "REPLACED", replaced_by_cart_id: newId });
  }, 60_000);

  test("refuses another edit with CART_NOT_MUTABLE naming the new cart, before the human is asked, and forks no cart", async () => {
    const asked = agent.elicitations.length;
    const [{ n: before }] = await srv.db.sql<{ n: number }[]>`SELECT count(*)::int AS n FROM actor_state WHERE kind = 'cart'`;
    expectReplaced(errorOf(await agent.call("update_cart_item", { cart_id: oldId, product_id: other, quantity: 3 })), newId);
    expectReplaced(errorOf(await agent.call("remove_cart_item", { cart_id: oldId, product_id: DEMO_PRODUCT })), newId);
    expect(agent.elicitations.length).toBe(asked);
    const [{ n: after }] = await srv.db.sql<{ n: number }[]>`SELECT count(*)::int AS n FROM actor_state WHERE kind = 'cart'`;
    expect(after).toBe(before);
  }, 60_000);

  test("refuses a coupon, a shipping choice and a preview over MCP", async () => {
    expectReplaced(errorOf(await agent.call("apply_coupon", { cart_id: oldId, code: "WELCOME10" })), newId);
    expectReplaced(errorOf(await agent.call("get_shipping_rates", { cart_id: oldId, country_code: "US", postal_code: "94107" })), newId);
    expectReplaced(errorOf(await agent.call("preview_checkout", { cart_id: oldId })), newId);
  }, 60_000);

  test("refuses a preview, a one-call checkout and a coupon over REST with 409 CART_NOT_MUTABLE", async () => {
    for (const [path, body] of [
      ["/api/v1/agent/checkout/preview", { cartId: oldId }],
      ["/api/v1/agent/checkout", { cartId: oldId, payment_method: "MOCK" }],
      ["/api/v1/agent/apply-coupon", { cartId: oldId, code: "WELCOME10" }],
    ] as const) {
      const r = await srv.json(path, { method: "POST", headers: key.headers, body });
      expect(r.status).toBe(409);
      expect(r.body).toMatchObject({ code: "CART_NOT_MUTABLE", details: { reason: "replaced", replaced_by_cart_id: newId } });
    }
    expect(await srv.db.sql`SELECT id FROM orders WHERE cart_id = ${oldId}`).toHaveLength(0);
  }, 60_000);

  test("the new cart is the one that is previewed and paid", async () => {
    const pv = structured(await agent.call("preview_checkout", { cart_id: newId }));
    const paid = structured(await agent.call("complete_checkout", { checkout_session_id: pv.checkout_session_id, idempotency_key: crypto.randomUUID(), payment_method: "MOCK" }));
    expect(paid.status).toBe("COMPLETED");
  }, 60_000);
});

describe("remove_cart_item", () => {
  test("replaces its cart the same way", async () => {
    const first = structured(await agent.call("create_cart", { items: [{ product_id: DEMO_PRODUCT, quantity: 1 }, { product_id: other, quantity: 1 }] }));
    const smaller = structured(await agent.call("remove_cart_item", { cart_id: first.cart_id, product_id: other }));
    expect(smaller.replaces_cart_id).toBe(first.cart_id);
    expect(structured(await agent.call("get_cart", { cart_id: first.cart_id }))).toMatchObject({ status: "REPLACED", replaced_by_cart_id: smaller.cart_id });
    expectReplaced(errorOf(await agent.call("preview_checkout", { cart_id: first.cart_id })), smaller.cart_id);
  }, 60_000);
});

describe("two edits racing from one cart", () => {
  test("one replaces it; the other is CART_NOT_MUTABLE naming the winner, and its new cart is discarded", async () => {
    const start = await newCart();
    const [a, b] = await Promise.all([
      agent.call("update_cart_item", { cart_id: start, product_id: other, quantity: 1 }),
      agent.call("update_cart_item", { cart_id: start, product_id: other, quantity: 4 }),
    ]);
    const won = [a, b].filter((r) => !r.isError);
    const lost = [a, b].filter((r) => r.isError);
    expect(won).toHaveLength(1);
    expect(lost).toHaveLength(1);
    const winner = structured(won[0]!).cart_id;
    expectReplaced(errorOf(lost[0]!), winner);
    // of the carts this race made, only the winner is OPEN: a loser that got as far as creating its cart (both edits
    // read the cart before either replaced it) finds the replace refused and discards it (ABANDONED)
    const rows = await srv.db.sql<{ id: string; status: string }[]>`
      SELECT id, state->'cart'->>'status' AS status FROM actor_state
      WHERE kind = 'cart' AND id <> ${start} AND state->'cart'->>'createdAt' IS NOT NULL
        AND (state->'cart'->>'createdAt')::bigint >= (SELECT (state->'cart'->>'createdAt')::bigint FROM actor_state WHERE kind = 'cart' AND id = ${start})`;
    const open = rows.filter((r) => r.status === "OPEN").map((r) => r.id);
    expect(open).toEqual([winner]);
    expect(rows.every((r) => r.status === "OPEN" || r.status === "ABANDONED")).toBe(true);
  }, 60_000);
});
