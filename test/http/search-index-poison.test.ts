/**
 * One merchant row the search engine cannot hold (a price beyond 2^53 minor units, written before ingestion
 * bounded prices) is skipped and logged: the start-up's full load, an event refresh and the catch-up keep every
 * other product (audit H2: one such row made the service fail to start).
 */
import { afterAll, beforeAll, expect, test } from "bun:test";
import { createEmbeddedEngine } from "../../search/embedded.ts";
import { getSearchService, SearchService } from "../../search/service.ts";
import { startServer, type TestServer } from "../helpers/server.ts";

let srv: TestServer;
let poison: string;
let neighbour: string;

beforeAll(async () => {
  srv = await startServer({ seed: true });
  const rows = await srv.db.sql<{ id: string }[]>`SELECT id FROM products WHERE active AND store_slug = 'greenleaf-living' ORDER BY id LIMIT 2`;
  [poison, neighbour] = rows.map((r) => r.id) as [string, string];
  // what the audit's PUT of price 1e15 USD wrote before the business maximum existed
  await srv.db.sql`UPDATE products SET price_minor = 100000000000000000, updated_at = now() WHERE id = ${poison}`;
  await srv.db.sql`UPDATE products SET title = 'Platypus Poison Neighbour', updated_at = now() WHERE id = ${neighbour}`;
}, 120_000);
afterAll(async () => {
  await srv?.stop();
});

test("the start-up's full load skips the unindexable row and loads every other product", async () => {
  const service = new SearchService(createEmbeddedEngine());
  const loaded = await service.loadAll(srv.db.sql);
  const [{ n }] = await srv.db.sql<{ n: number }[]>`SELECT count(*)::int AS n FROM products WHERE active`;
  expect(loaded.products).toBe(n); // rows read
  expect(service.products.has(poison)).toBe(false);
  expect(service.products.has(neighbour)).toBe(true);
  expect(service.products.size).toBe(n - 1);
});

test("an event refresh of a batch holding the row still applies the rest of the batch", async () => {
  const service = getSearchService(srv.running.services);
  await service.refreshProducts(srv.db.sql, [poison, neighbour]);
  expect(service.products.has(poison)).toBe(false);
  expect(service.products.get(neighbour)?.title).toBe("Platypus Poison Neighbour");
  const found = await service.search({ query: "platypus", filters: { inStock: false } }, new Date());
  expect(found.products.map((p) => p.id)).toEqual([neighbour]);
  await service.catchUp(srv.db.sql);
  expect(service.products.has(neighbour)).toBe(true);
});
