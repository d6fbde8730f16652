/**
 * Audit R3 LOW-5: the cart merges repeated items into one line; a refusal names the request's item (the first of the
 * merged ones), not the merged line's position, on REST and through the ACP/UCP bridges (which map the field to their
 * own item field). Audit R3 LOW-6: an ACP/UCP quantity above the cart's maximum (10000) is refused by the bridge in
 * its own error shape on its own field (it was the actor message's validation text on `$./items/0/quantity`).
 */
import { beforeAll, describe, expect, test } from "bun:test";
import { ALL_SCOPES, createKey, type TestKey } from "../helpers/agents.ts";
import { useServer } from "../helpers/server.ts";

const HEADPHONES = "1e34ef13-d99e-575f-975a-67ea08dcdf99"; // DS-0001, demo-store, 2 variants
const BOARD = "5befd987-79cd-540c-8a5d-2ba5a30aed41"; // DS-0011, demo-store, no variants

const srv = useServer({ seed: true, config: { RATE_LIMITS_ENABLED: false } });
let key: TestKey;

beforeAll(async () => {
  key = await createKey(srv, { scopes: ALL_SCOPES });
}, 120_000);

const post = (path: string, body: unknown) => srv.json(`/api/v1/agent${path}`, { method: "POST", headers: key.headers, body });

describe("a refusal names the request's item, not the merged line (R3 LOW-5)", () => {
  test("REST: items [board, board, headphones without variant] → 400 on items[2].variant_id", async () => {
    const r = await post("/cart", { items: [{ product_id: BOARD, quantity: 1 }, { product_id: BOARD, quantity: 1 }, { product_id: HEADPHONES, quantity: 1 }] });
    expect(r.status).toBe(400);
    expect(r.body).toMatchObject({ success: false, code: "MISSING_REQUIRED_ARGUMENT", details: { product_id: HEADPHONES, field: "items[2].variant_id" } });
  });

  test("REST: a stock shortfall of a merged line names its first item", async () => {
    await srv.db.sql`UPDATE products SET stock_quantity = 3, reserved_quantity = 0, in_stock = true WHERE id = ${BOARD}`;
    const [v] = await srv.db.sql<{ id: string }[]>`SELECT variants->0->>'id' AS id FROM products WHERE id = ${HEADPHONES}`;
    const r = await post("/cart", {
      items: [
        { product_id: HEADPHONES, variant_id: v!.id, quantity: 1 },
        { product_id: HEADPHONES, variant_id: v!.id, quantity: 1 },
        { product_id: BOARD, quantity: 2 },
        { product_id: BOARD, quantity: 2 },
      ],
    });
    expect(r.status).toBe(400);
    expect(r.body).toMatchObject({ code: "INVALID_ARGUMENT", details: { field: "items[2].quantity", reason: "stock_insufficient", product_id: BOARD, requested: 4, available: 3 } });
  });

  test("ACP: the same items → param $.items[2].id", async () => {
    const r = await post("/acp/checkout_sessions", { items: [{ id: BOARD, quantity: 1 }, { id: BOARD, quantity: 1 }, { id: HEADPHONES, quantity: 1 }] });
    expect(r.status).toBe(400);
    expect(r.body).toMatchObject({ type: "invalid_request", code: "MISSING_REQUIRED_ARGUMENT", param: "$.items[2].id", details: { product_id: HEADPHONES, field: "items[2].id" } });
    expect(r.body.message).toStartWith("items[2].id names a product with 2 variants");
  });

  test("UCP: the same items → path $.line_items[2].item.id", async () => {
    const r = await post("/ucp/checkout-sessions", {
      line_items: [{ item: { id: BOARD }, quantity: 1 }, { item: { id: BOARD }, quantity: 1 }, { item: { id: HEADPHONES }, quantity: 1 }],
    });
    expect(r.status).toBe(400);
    expect(r.body.messages).toHaveLength(1);
    expect(r.body.messages[0]).toMatchObject({ type: "error", code: "MISSING_REQUIRED_ARGUMENT", path: "$.line_items[2].item.id", details: { field: "line_items[2].item.id" } });
  });
});

describe("ACP/UCP quantity above 10000 (R3 LOW-6)", () => {
  test("ACP: 400 INVALID_ARGUMENT on $.items[1].quantity in ACP's shape", async () => {
    const r = await post("/acp/checkout_sessions", { items: [{ id: BOARD, quantity: 1 }, { id: BOARD, quantity: 10_001 }] });
    expect(r.status).toBe(400);
    expect(r.body).toEqual({
      type: "invalid_request",
      code: "INVALID_ARGUMENT",
      message: "items[].quantity must be an integer from 1 to 10000.",
      param: "$.items[1].quantity",
      details: { field: "items[1].quantity" },
    });
  });

  test("UCP: 400 INVALID_ARGUMENT on $.line_items[0].quantity in UCP's shape", async () => {
    const r = await post("/ucp/checkout-sessions", { line_items: [{ item: { id: BOARD }, quantity: 100_000 }] });
    expect(r.status).toBe(400);
    expect(r.body.messages).toEqual([
      {
        type: "error",
        code: "INVALID_ARGUMENT",
        content: "line_items[].quantity must be an integer from 1 to 10000.",
        severity: expect.any(String),
        path: "$.line_items[0].quantity",
        details: { field: "line_items[0].quantity" },
      },
    ]);
  });
});
