/**
 * Review R4 F6: negotiate_price asked the human to approve bids the store then refused: a bid in another currency
 * than the product's (INVALID_ARGUMENT), a bid past the store's rounds per product (max_rounds_reached), and a
 * product whose category the rules exclude in another letter case (the store compares without case, the tool did
 * not). The tool now applies the store's own rules (actors/store/negotiation.ts) before it asks.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { ALL_SCOPES, createKey, type TestKey } from "../helpers/agents.ts";
import { startServer, type TestServer } from "../helpers/server.ts";
import { accept, connect, counted, DEMO_PRODUCT, errorOf, structured, type Connected } from "./helpers.ts";

let srv: TestServer;
let key: TestKey;
let demo: Connected;

beforeAll(async () => {
  srv = await startServer({ seed: true, config: { RATE_LIMITS_ENABLED: false } });
  key = await createKey(srv, { scopes: ALL_SCOPES, tier: "ENTERPRISE" });
  demo = await connect(srv, { headers: key.headers, elicit: accept });
}, 60_000);
afterAll(async () => {
  await demo?.close();
  await srv?.stop();
});

describe("negotiate_price refuses what the store would refuse before asking the human", () => {
  test("a bid in another currency than the product's is INVALID_ARGUMENT naming the product's currency, without asking", async () => {
    const { result, asked } = await counted(demo, () => demo.call("negotiate_price", { product_id: DEMO_PRODUCT, bid_price: 100, currency: "EUR" }));
    expect(errorOf(result)).toMatchObject({ code: "INVALID_ARGUMENT", details: { field: "currency", expected: "USD" } });
    expect(asked).toBe(0);
    const [row] = await srv.db.sql<{ n: number }[]>`SELECT count(*)::int AS n FROM negotiation_offers WHERE product_id = ${DEMO_PRODUCT}`;
    expect(row!.n).toBe(0);
  }, 60_000);

  test("a bid past the store's rounds per product is NOT_ELIGIBLE max_rounds_reached, without asking and without a new round", async () => {
    const [p] = await srv.db.sql<{ id: string; price: number }[]>`
      SELECT id, price_minor::int AS price FROM products WHERE store_slug = 'demo-store' AND active AND id <> ${DEMO_PRODUCT} AND price_minor >= 1000 ORDER BY id LIMIT 1`;
    const low = Math.floor(p!.price / 2) / 100; // below the floor: rejected, but each bid is a round
    for (let round = 1; round <= 3; round++) {
      const { result, asked } = await counted(demo, () => demo.call("negotiate_price", { product_id: p!.id, bid_price: low, currency: "USD" }));
      expect(structured(result)).toMatchObject({ status: "rejected", reason: "below_floor", round });
      expect(asked).toBe(1);
    }
    const { result, asked } = await counted(demo, () => demo.call("negotiate_price", { product_id: p!.id, bid_price: low, currency: "USD" }));
    expect(errorOf(result)).toMatchObject({ code: "NOT_ELIGIBLE", details: { reason: "max_rounds_reached", rounds: 3, max_rounds: 3 } });
    expect(asked).toBe(0);
    const [row] = await srv.db.sql<{ n: number }[]>`SELECT count(*)::int AS n FROM negotiation_offers WHERE product_id = ${p!.id} AND agent_key_id = ${key.id}`;
    expect(row!.n).toBe(3);
  }, 60_000);

  test("an excluded category matches in any letter case, as the store matches it: NOT_ELIGIBLE without asking", async () => {
    // northwind-outfitters excludes "Sports & Outdoors"; the product's category is spelled in capitals
    const [p] = await srv.db.sql<{ id: string }[]>`
      UPDATE products SET category = 'SPORTS & OUTDOORS'
      WHERE id = (SELECT id FROM products WHERE store_slug = 'northwind-outfitters' AND active AND category = 'Sports & Outdoors' ORDER BY id LIMIT 1)
      RETURNING id`;
    const nw = await connect(srv, { path: "/northwind-outfitters/mcp", headers: key.headers, elicit: accept });
    try {
      const { result, asked } = await counted(nw, () => nw.call("negotiate_price", { product_id: p!.id, bid_price: 1, currency: "USD" }));
      expect(errorOf(result)).toMatchObject({ code: "NOT_ELIGIBLE", details: { reason: "category_excluded", category: "SPORTS & OUTDOORS" } });
      expect(asked).toBe(0);
    } finally {
      await nw.close();
    }
  }, 60_000);

  test("a product whose every variant has its own price is NOT_ELIGIBLE variants_priced_separately, without asking", async () => {
    const id = "5d69e189-f50a-5903-bc4a-204aa49bd245"; // demo-store, with variants
    const [p] = await srv.db.sql<{ price: number }[]>`
      UPDATE products SET variants = (SELECT jsonb_agg(x || jsonb_build_object('priceMinor', price_minor + 100 * ord::int) ORDER BY ord)
        FROM jsonb_array_elements(variants) WITH ORDINALITY AS t(x, ord)) WHERE id = ${id} RETURNING price_minor::int AS price`;
    const { result, asked } = await counted(demo, () => demo.call("negotiate_price", { product_id: id, bid_price: p!.price / 100, currency: "USD" }));
    expect(errorOf(result)).toMatchObject({ code: "NOT_ELIGIBLE", details: { reason: "variants_priced_separately" } });
    expect(asked).toBe(0);
  }, 60_000);

  test("a bid the rules leave to the amount is asked once and answered by the store", async () => {
    const { result, asked } = await counted(demo, () => demo.call("negotiate_price", { product_id: DEMO_PRODUCT, bid_price: 1, currency: "USD" }));
    expect(structured(result)).toMatchObject({ status: "rejected", reason: "below_floor", round: 1 });
    expect(asked).toBe(1);
  }, 60_000);
});
