/**
 * Audit B-5: ACP 2026-04-17's Item has no quantity, so the bridge reads "an entry is one unit, and a repeated id
 * adds up" (docs/protocols.md, gateway/bridge/acp-2026-04-17.ts): a schema-conformant client buys 101 units of one
 * product by listing it 101 times. That is one cart line of quantity 101 (well under MAX_LINE_QUANTITY), but the
 * bridge hands the raw entries to `cart.create`, whose message schema allows at most MAX_CART_LINES (100) entries
 * before merging: the create is refused 400 with an internal message ("invalid cart.create message: Expected array
 * length to be less or equal to 100") and `param: "$./items"`, which is neither a JSONPath nor the member the client
 * sent (`line_items`). Now the bridge merges the entries by the cart's rule first (common.ts `newCart`): one line of
 * 101, and a list of more distinct items than the bound refused in the client's terms (`$.line_items`, `$.items`).
 */
import { beforeAll, describe, expect, test } from "bun:test";
import { ALL_SCOPES, createKey, type TestKey } from "../helpers/agents.ts";
import { ACP, UCP } from "../helpers/bridge.ts";
import { useServer } from "../helpers/server.ts";

const srv = useServer({ seed: true, config: { RATE_LIMITS_ENABLED: false } });
let key: TestKey;
let product: string;
beforeAll(async () => {
  key = await createKey(srv, { scopes: ALL_SCOPES });
  const [p] = await srv.db.sql<{ id: string }[]>`
    SELECT id FROM products WHERE active AND in_stock AND COALESCE(jsonb_array_length(variants), 0) = 0 AND (stock_quantity IS NULL OR stock_quantity >= 200) ORDER BY id LIMIT 1`;
  product = p!.id;
}, 120_000);

describe("ACP 2026-04-17: line_items entries of one item add up to one line", () => {
  test("101 entries of one product are one line of quantity 101", async () => {
    const r = await srv.json(ACP, {
      method: "POST",
      headers: { ...key.headers, "api-version": "2026-04-17", "idempotency-key": crypto.randomUUID() },
      body: { line_items: Array.from({ length: 101 }, () => ({ id: product })) },
    });
    expect({ status: r.status, param: r.body.param, message: r.body.message?.slice(0, 40) }).toMatchObject({ status: 201 });
    expect(r.body.line_items).toHaveLength(1);
    expect(r.body.line_items[0].quantity).toBe(101);
  });

  test("more than 100 different items is refused on $.line_items in the version's words", async () => {
    const r = await srv.json(ACP, {
      method: "POST",
      headers: { ...key.headers, "api-version": "2026-04-17", "idempotency-key": crypto.randomUUID() },
      body: { line_items: Array.from({ length: 101 }, () => ({ id: crypto.randomUUID() })) },
    });
    expect({ status: r.status, code: r.body.code, param: r.body.param }).toEqual({ status: 400, code: "INVALID_ARGUMENT", param: "$.line_items" });
    expect(r.body.message).toContain("at most 100");
  });
});

describe("ACP 2025-09-29 and UCP: repeated entries add up before the line bound", () => {
  test("2025-09-29 items of 101 entries of one product are one line; 101 different ones are refused on $.items, a merged line over 10000 on its first entry", async () => {
    const send = (items: unknown[]) => srv.json(ACP, { method: "POST", headers: { ...key.headers, "api-version": "2025-09-29", "idempotency-key": crypto.randomUUID() }, body: { items } });
    const one = await send(Array.from({ length: 101 }, () => ({ id: product, quantity: 1 })));
    expect(one.status).toBe(201);
    expect(one.body.line_items).toHaveLength(1);
    expect(one.body.line_items[0].item.quantity).toBe(101);
    const many = await send(Array.from({ length: 101 }, () => ({ id: crypto.randomUUID(), quantity: 1 })));
    expect({ status: many.status, code: many.body.code, param: many.body.param }).toEqual({ status: 400, code: "INVALID_ARGUMENT", param: "$.items" });
    // a merged line over 10000 is refused on its first entry's quantity (the merged line's index maps back)
    const big = await send([{ id: crypto.randomUUID(), quantity: 1 }, { id: product, quantity: 6000 }, { id: product, quantity: 6000 }]);
    expect({ status: big.status, code: big.body.code, param: big.body.param }).toEqual({ status: 400, code: "INVALID_ARGUMENT", param: "$.items[1].quantity" });
  });

  test("UCP line_items of 101 entries of one product are one line", async () => {
    const r = await srv.json(UCP, {
      method: "POST",
      headers: { ...key.headers, "idempotency-key": crypto.randomUUID() },
      body: { line_items: Array.from({ length: 101 }, () => ({ item: { id: product }, quantity: 1 })) },
    });
    expect(r.status).toBe(201);
    expect(r.body.line_items).toHaveLength(1);
    expect(r.body.line_items[0].quantity).toBe(101);
  });
});
