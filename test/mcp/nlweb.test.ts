import { expect, test } from "bun:test";
import { parseAsk } from "../../gateway/mcp/tools/nlweb.ts";

test("a price ceiling with a currency word, and 'in stock', become filters", () => {
  expect(parseAsk("waterproof jacket under 80 euros in stock")).toEqual({ query: "waterproof jacket", maxPrice: 80, currency: "EUR", inStockOnly: true });
});

test("a range and a cheapest-first wish are understood", () => {
  expect(parseAsk("I need the cheapest running shoes between $40 and $90")).toMatchObject({ query: "running shoes", minPrice: 40, maxPrice: 90, currency: "USD", sort: "price_asc" });
});

test("a sentence of only filler leaves nothing to search for", () => {
  expect(parseAsk("show me something under 20").query).toBe("");
});
