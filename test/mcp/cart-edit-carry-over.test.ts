/**
 * Review R4: an MCP cart edit (update_cart_item, remove_cart_item) makes a new cart and REPLACES the old one, so
 * whatever the buyer chose on the old cart must come along: the coupon (re-checked against the new items: one that
 * no longer applies is dropped and the answer says why) and the shipping destination with its picks (F1). And
 * apply_coupon asks the human only about a coupon that applies: a code that will not apply is answered applied:false
 * at once, without an elicitation and without touching the cart (F3).
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import type { TestKey } from "../helpers/agents.ts";
import type { TestServer } from "../helpers/server.ts";
import { accept, connect, counted, DEMO_PRODUCT, errorOf, startBuyingAgent, structured, type Connected } from "./helpers.ts";

let srv: TestServer;
let key: TestKey;
let agent: Connected;
/** A second demo-store product, and a cheap one (FIVEOFF needs a 25.00 subtotal) with stock for a few units. */
let other: string;
let cheap: { id: string; price: number };

beforeAll(async () => {
  ({ srv, key, agent } = await startBuyingAgent());
  const [p] = await srv.db.sql<{ id: string }[]>`
    SELECT id FROM products WHERE store_slug = 'demo-store' AND active AND in_stock AND id <> ${DEMO_PRODUCT} AND (stock_quantity IS NULL OR stock_quantity >= 10) ORDER BY id LIMIT 1`;
  other = p!.id;
  const [c] = await srv.db.sql<{ id: string; price: number }[]>`
    SELECT id, price_minor::int AS price FROM products WHERE store_slug = 'demo-store' AND active AND in_stock AND price_minor BETWEEN 600 AND 2000
      AND (stock_quantity IS NULL OR stock_quantity >= 10) AND variants = '[]'::jsonb ORDER BY id LIMIT 1`;
  cheap = c!;
}, 60_000);
afterAll(async () => {
  await agent?.close();
  await srv?.stop();
});

describe("an MCP cart edit carries the old cart's coupon and shipping over", () => {
  test("update_cart_item keeps WELCOME10, re-priced on the new items, and the destination recorded with get_shipping_rates", async () => {
    const cart = structured(await agent.call("create_cart", { items: [{ product_id: DEMO_PRODUCT, quantity: 1 }] }));
    const applied = structured(await agent.call("apply_coupon", { cart_id: cart.cart_id, code: "WELCOME10" }));
    expect(applied).toMatchObject({ applied: true, code: "WELCOME10" });
    const rates = structured(await agent.call("get_shipping_rates", { cart_id: cart.cart_id, country_code: "US", postal_code: "94103" }));
    expect(rates.cart_id).toBe(cart.cart_id);

    const edited = structured(await agent.call("update_cart_item", { cart_id: cart.cart_id, product_id: DEMO_PRODUCT, quantity: 2 }));
    expect(edited.replaces_cart_id).toBe(cart.cart_id);
    expect(edited.coupon).toMatchObject({ code: "WELCOME10", applied: true });
    // 10 % of the new subtotal (two units), not the old discount carried as a number
    expect(edited.coupon.discount_minor).toBe(Math.round(edited.totals.subtotal_minor / 10));
    expect(edited.totals.discount_minor).toBe(edited.coupon.discount_minor);
    expect(edited.coupon.discount_minor).toBeGreaterThan(applied.discount_minor);
    expect(edited.coupon_dropped).toBeUndefined();
    expect(edited.shipping).toMatchObject({ country_code: "US", postal_code: "94103" });

    // the new cart is what is read, previewed and paid: the coupon is on it, in the actor's state
    const got = structured(await agent.call("get_cart", { cart_id: edited.cart_id }));
    expect(got.coupon).toMatchObject({ code: "WELCOME10", applied: true, discount_minor: edited.coupon.discount_minor });
    const pv = structured(await agent.call("preview_checkout", { cart_id: edited.cart_id }));
    expect(pv.totals.discount_minor).toBe(edited.coupon.discount_minor);
  }, 60_000);

  test("remove_cart_item keeps the coupon too", async () => {
    const cart = structured(await agent.call("create_cart", { items: [{ product_id: DEMO_PRODUCT, quantity: 1 }, { product_id: other, quantity: 1 }] }));
    await agent.call("apply_coupon", { cart_id: cart.cart_id, code: "WELCOME10" });
    const edited = structured(await agent.call("remove_cart_item", { cart_id: cart.cart_id, product_id: other }));
    expect(edited.items.map((i: { product_id: string }) => i.product_id)).toEqual([DEMO_PRODUCT]);
    expect(edited.coupon).toMatchObject({ code: "WELCOME10", applied: true });
    expect(edited.totals.discount_minor).toBeGreaterThan(0);
  }, 60_000);

  test("a coupon the edited items no longer qualify for is dropped, and the answer says why", async () => {
    const units = Math.ceil(2500 / cheap.price);
    const cart = structured(await agent.call("create_cart", { items: [{ product_id: cheap.id, quantity: units }] }));
    expect(structured(await agent.call("apply_coupon", { cart_id: cart.cart_id, code: "FIVEOFF" }))).toMatchObject({ applied: true });

    const edited = structured(await agent.call("update_cart_item", { cart_id: cart.cart_id, product_id: cheap.id, quantity: 1 }));
    expect(edited.coupon).toBeNull();
    expect(edited.totals.discount_minor).toBe(0);
    expect(edited.coupon_dropped).toMatchObject({ code: "FIVEOFF", reason: "below_minimum", details: { min_spend_minor: 2500, eligible_subtotal_minor: cheap.price } });
    expect(edited.coupon_dropped.message).toContain("FIVEOFF");
  }, 60_000);

  test("a picked shipping option survives the edit, so the new cart previews without asking for it again", async () => {
    const summit = await connect(srv, { path: "/summit-sports-co/mcp", headers: key.headers, elicit: accept });
    try {
      const [p] = await srv.db.sql<{ id: string }[]>`
        SELECT id FROM products WHERE store_slug = 'summit-sports-co' AND active AND in_stock AND variants = '[]'::jsonb AND (stock_quantity IS NULL OR stock_quantity >= 10) ORDER BY id LIMIT 1`;
      const cart = structured(await summit.call("create_cart", { items: [{ product_id: p!.id, quantity: 1 }] }));
      const rates = structured(await summit.call("get_shipping_rates", { cart_id: cart.cart_id, country_code: "US", postal_code: "94103" }));
      const options = rates.merchants[0].options as { option_id: string }[];
      expect(options.length).toBeGreaterThan(1); // the store makes the buyer pick (Standard, Express)
      const picked = options.at(-1)!.option_id;
      await summit.call("get_shipping_rates", { cart_id: cart.cart_id, country_code: "US", postal_code: "94103", option_id: picked });

      const edited = structured(await summit.call("update_cart_item", { cart_id: cart.cart_id, product_id: p!.id, quantity: 2 }));
      expect(edited.shipping).toEqual({ country_code: "US", postal_code: "94103", selected_options: { "summit-sports-co": picked } });
      const pv = await summit.call("preview_checkout", { cart_id: edited.cart_id });
      expect(pv.isError).toBeFalsy();
      expect(structured(pv).merchants[0].shipping_option.option_id).toBe(picked);
    } finally {
      await summit.close();
    }
  }, 60_000);

  test("the human approving an edit is told the coupon goes along", async () => {
    const cart = structured(await agent.call("create_cart", { items: [{ product_id: DEMO_PRODUCT, quantity: 1 }] }));
    await agent.call("apply_coupon", { cart_id: cart.cart_id, code: "WELCOME10" });
    const { asked } = await counted(agent, () => agent.call("update_cart_item", { cart_id: cart.cart_id, product_id: DEMO_PRODUCT, quantity: 3 }));
    expect(asked).toBe(1);
    expect(agent.elicitations.at(-1)!.message).toContain("WELCOME10");
  }, 60_000);
});

describe("apply_coupon asks the human only about a coupon that applies", () => {
  test("an unknown, an expired and a used-up code are answered applied:false without asking, and the cart is unchanged", async () => {
    const cart = structured(await agent.call("create_cart", { items: [{ product_id: DEMO_PRODUCT, quantity: 1 }] }));
    for (const [code, reason] of [
      ["NO-SUCH-CODE-R4", "invalid"],
      ["EXPIRED15", "expired"],
      ["LIMITED50", "exhausted"],
    ] as const) {
      const { result, asked } = await counted(agent, () => agent.call("apply_coupon", { cart_id: cart.cart_id, code }));
      expect(structured(result)).toMatchObject({ applied: false, code, reason, discount_minor: 0 });
      expect(asked).toBe(0);
    }
    const got = structured(await agent.call("get_cart", { cart_id: cart.cart_id }));
    expect(got).toMatchObject({ revision: cart.revision, coupon: null });
  }, 60_000);

  test("a coupon below its minimum spend is answered with the minimum, without asking", async () => {
    const cart = structured(await agent.call("create_cart", { items: [{ product_id: cheap.id, quantity: 1 }] }));
    const { result, asked } = await counted(agent, () => agent.call("apply_coupon", { cart_id: cart.cart_id, code: "fiveoff" }));
    expect(structured(result)).toMatchObject({ applied: false, code: "FIVEOFF", reason: "below_minimum", details: { min_spend_minor: 2500 } });
    expect(asked).toBe(0);
  }, 60_000);

  test("a coupon that applies is asked once, with its discount, and then applied", async () => {
    const cart = structured(await agent.call("create_cart", { items: [{ product_id: DEMO_PRODUCT, quantity: 1 }] }));
    const { result, asked } = await counted(agent, () => agent.call("apply_coupon", { cart_id: cart.cart_id, code: "WELCOME10" }));
    const r = structured(result);
    expect(r).toMatchObject({ applied: true, code: "WELCOME10" });
    expect(asked).toBe(1);
    expect(agent.elicitations.at(-1)!.message).toContain("off");
    expect(structured(await agent.call("get_cart", { cart_id: cart.cart_id })).coupon).toMatchObject({ code: "WELCOME10", applied: true });
  }, 60_000);

  test("the cart's own refusals still come first: a stale expected_revision is CART_NOT_MUTABLE without asking", async () => {
    const cart = structured(await agent.call("create_cart", { items: [{ product_id: DEMO_PRODUCT, quantity: 1 }] }));
    await agent.call("apply_coupon", { cart_id: cart.cart_id, code: "WELCOME10" });
    const { result, asked } = await counted(agent, () => agent.call("apply_coupon", { cart_id: cart.cart_id, code: "NO-SUCH-CODE", expected_revision: 1 }));
    expect(errorOf(result)).toMatchObject({ code: "CART_NOT_MUTABLE", details: { reason: "stale_revision" } });
    expect(asked).toBe(0);
  }, 60_000);
});
