/**
 * Audit A: a price filter bound with more decimals than the product's currency is rounded to the nearest minor unit
 * before comparing (search/ranking.ts boundsOf / rankFromColumns use toMinor = Math.round), so minPrice 214.994 keeps
 * a 214.99 product (below the bound) and maxPrice 214.985 keeps it too (above the bound). The engine query itself
 * uses floor/ceil (engineQueryFor), so only the ranking's exact check is wrong.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { createKey, type TestKey } from "../helpers/agents.ts";
import { startServer, type TestServer } from "../helpers/server.ts";

const HEADPHONES = "2f23aa45-2628-56d0-aee7-1517908284bd"; // brightside-electronics, 214.99 USD
let srv: TestServer;
let key: TestKey;
beforeAll(async () => {
  srv = await startServer({ seed: true, config: { RATE_LIMITS_ENABLED: false } });
  key = await createKey(srv, { tier: "ENTERPRISE" });
}, 120_000);
afterAll(async () => {
  await srv?.stop();
});

const ids = async (filters: Record<string, number>) => {
  const r = await srv.json("/api/v1/agent/search", { method: "POST", headers: key.headers, body: { query: "Kestrel Labs Max Noise-Cancelling Headphones", limit: 100, filters } });
  expect(r.status).toBe(200);
  return r.body.data.products.map((p: { id: string }) => p.id) as string[];
};

describe("price filters are exact bounds", () => {
  test("the 214.99 product is found with minPrice 214.99 and maxPrice 214.99", async () => {
    expect(await ids({ minPrice: 214.99, maxPrice: 214.99 })).toEqual([HEADPHONES]);
  });

  test("minPrice 214.994 leaves out a product priced 214.99", async () => {
    expect(await ids({ minPrice: 214.994 })).not.toContain(HEADPHONES);
  });

  test("maxPrice 214.985 leaves out a product priced 214.99", async () => {
    expect(await ids({ maxPrice: 214.985 })).not.toContain(HEADPHONES);
  });
});
