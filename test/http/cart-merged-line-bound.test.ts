/**
 * Audit R5 MED-2: repeated items merge into one cart line, and the merged quantity is bounded like an item's
 * (MAX_LINE_QUANTITY = 10000): above it, 400 INVALID_ARGUMENT on the first item's quantity field, on REST, ACP and
 * UCP (in their own terms) and MCP create_cart (before the human is asked). It was 201 with one line of 12000, which
 * a later MCP edit could not rebuild (the actor message's validation text).
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { ALL_SCOPES, createKey, type TestKey } from "../helpers/agents.ts";
import { startServer, type TestServer } from "../helpers/server.ts";
import { accept, connect, counted, errorOf, structured } from "../mcp/helpers.ts";

const BOARD = "5befd987-79cd-540c-8a5d-2ba5a30aed41"; // DS-0011, demo-store, no variants
const MESSAGE = "Repeated items of one product and variant add up to one line, whose quantity must be at most 10000 (these add up to 12000).";

let srv: TestServer;
let key: TestKey;
let other: string;

beforeAll(async () => {
  srv = await startServer({ seed: true, config: { RATE_LIMITS_ENABLED: false } });
  key = await createKey(srv, { tier: "ENTERPRISE", scopes: ALL_SCOPES });
  // Unlimited stock, so only the line bound can refuse.
  await srv.db.sql`UPDATE products SET stock_quantity = NULL, reserved_quantity = 0, in_stock = true WHERE id = ${BOARD}`;
  const [o] = await srv.db.sql<{ id: string }[]>`SELECT id FROM products WHERE store_slug = 'demo-store' AND active AND in_stock AND id <> ${BOARD}
    AND jsonb_array_length(COALESCE(variants, '[]'::jsonb)) = 0 AND stock_quantity IS NULL ORDER BY id LIMIT 1`;
  other = o!.id;
}, 120_000);
afterAll(async () => {
  await srv?.stop();
});

const post = (path: string, body: unknown) => srv.json(`/api/v1/agent${path}`, { method: "POST", headers: key.headers, body });
const details = { field: "items[1].quantity", product_id: BOARD, quantity: 12_000, max_quantity: 10_000 };

describe("a merged cart line above 10000 is refused (R5 MED-2)", () => {
  test("REST: [other, board 6000, board 6000] → 400 INVALID_ARGUMENT on items[1].quantity; 5000 + 5000 is one line of 10000", async () => {
    const r = await post("/cart", { items: [{ product_id: other, quantity: 1 }, { product_id: BOARD, quantity: 6000 }, { product_id: BOARD, quantity: 6000 }] });
    expect(r.status).toBe(400);
    expect(r.body).toMatchObject({ success: false, code: "INVALID_ARGUMENT", error: MESSAGE, details });

    const okay = await post("/cart", { items: [{ product_id: BOARD, quantity: 5000 }, { product_id: BOARD, quantity: 5000 }] });
    expect(okay.status).toBe(201);
    expect(okay.body.data.items.map((l: any) => l.quantity)).toEqual([10_000]);
  });

  test("ACP: 400 on $.items[1].quantity in ACP's shape", async () => {
    const r = await post("/acp/checkout_sessions", { items: [{ id: other, quantity: 1 }, { id: BOARD, quantity: 6000 }, { id: BOARD, quantity: 6000 }] });
    expect(r.status).toBe(400);
    expect(r.body).toMatchObject({ type: "invalid_request", code: "INVALID_ARGUMENT", message: MESSAGE, param: "$.items[1].quantity", details: { ...details, field: "items[1].quantity" } });
  });

  test("UCP: 400 on $.line_items[1].quantity in UCP's shape", async () => {
    const r = await post("/ucp/checkout-sessions", {
      line_items: [{ item: { id: other }, quantity: 1 }, { item: { id: BOARD }, quantity: 6000 }, { item: { id: BOARD }, quantity: 6000 }],
    });
    expect(r.status).toBe(400);
    expect(r.body.messages).toHaveLength(1);
    expect(r.body.messages[0]).toMatchObject({
      type: "error",
      code: "INVALID_ARGUMENT",
      content: MESSAGE,
      path: "$.line_items[1].quantity",
      details: { ...details, field: "line_items[1].quantity" },
    });
  });

  test("MCP create_cart: INVALID_ARGUMENT on items[1].quantity before the human is asked", async () => {
    const agent = await connect(srv, { headers: key.headers, elicit: accept });
    try {
      const { result, asked } = await counted(agent, () =>
        agent.call("create_cart", { items: [{ product_id: other, quantity: 1 }, { product_id: BOARD, quantity: 6000 }, { product_id: BOARD, quantity: 6000 }] }),
      );
      expect(result.isError).toBe(true);
      expect(errorOf(result)).toMatchObject({ code: "INVALID_ARGUMENT", message: MESSAGE, details });
      expect(asked).toBe(0);
      // At the bound the cart is created, and another line of it can be edited (the rebuild stays within the bound).
      const made = await agent.call("create_cart", { items: [{ product_id: BOARD, quantity: 5000 }, { product_id: BOARD, quantity: 5000 }, { product_id: other, quantity: 1 }] });
      expect(structured(made).items.map((l: any) => l.quantity).sort((a: number, b: number) => a - b)).toEqual([1, 10_000]);
      const edited = await agent.call("update_cart_item", { cart_id: structured(made).cart_id, product_id: other, quantity: 2 });
      expect(edited.isError).toBeFalsy();
      expect(structured(edited).items.map((l: any) => l.quantity).sort((a: number, b: number) => a - b)).toEqual([2, 10_000]);
    } finally {
      await agent.close();
    }
  }, 60_000);
});
