/**
 * nlweb_ask reads a price range given high to low as low to high (audit Q-5): "between 500 and 5" was interpreted
 * as min 500 > max 5, and the search answered INVALID_ARGUMENT on `max_price`, an argument nlweb_ask does not take
 * (its arguments are `question` and `limit`), so the agent had nothing it could fix.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { ALL_SCOPES, createKey } from "../helpers/agents.ts";
import { startServer, type TestServer } from "../helpers/server.ts";
import { connect, structured, type Connected } from "./helpers.ts";

let srv: TestServer;
let agent: Connected;
beforeAll(async () => {
  srv = await startServer({ seed: true, config: { RATE_LIMITS_ENABLED: false } });
  const key = await createKey(srv, { scopes: ALL_SCOPES, tier: "ENTERPRISE" });
  agent = await connect(srv, { headers: key.headers });
}, 60_000);
afterAll(async () => {
  await agent?.close();
  await srv?.stop();
});

describe("nlweb_ask with a price range given high to low", () => {
  test("searches the range low to high and says so in interpreted, with the results of the ordered question", async () => {
    const inverted = await agent.call("nlweb_ask", { question: "headphones between 500 and 5" });
    expect(inverted.isError ?? false).toBe(false);
    const got = structured(inverted);
    expect(got.interpreted).toEqual({
      query: "headphones",
      minPrice: 5,
      maxPrice: 500,
      inStockOnly: false,
      note: "the price bounds were given high to low; searched from 5 to 500",
    });
    const ordered = structured(await agent.call("nlweb_ask", { question: "headphones between 5 and 500" }));
    expect(ordered.interpreted).toEqual({ query: "headphones", minPrice: 5, maxPrice: 500, inStockOnly: false });
    expect(got.products.length).toBeGreaterThan(0);
    expect(got.products).toEqual(ordered.products);
  }, 30_000);
});
