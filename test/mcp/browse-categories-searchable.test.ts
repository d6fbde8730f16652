/**
 * browse_categories says "use a category name as the `category` argument of search_products", but it listed
 * names search_products cannot filter by (helper A, session 20): products without a category as a category named
 * "Uncategorized" (search_products with it: 0 products), a category of white space or punctuation under its own
 * name ("" was refused by search_products' schema), and two spellings search treats as one ("Apparel" and
 * "apparel ") as two entries, each counting only its own products. Now every listed name finds, through
 * search_products, exactly the products it counts; products search cannot reach by category are counted apart
 * (`uncategorized`).
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { getIndexer } from "../../search/indexer.ts";
import { ALL_SCOPES, createKey, login, merchantLogin } from "../helpers/agents.ts";
import { startServer, type TestServer } from "../helpers/server.ts";
import { connect, structured, type Connected } from "./helpers.ts";

const SLUG = "northwind-outfitters";
let srv: TestServer;
let agent: Connected;

beforeAll(async () => {
  srv = await startServer({ seed: true, config: { RATE_LIMITS_ENABLED: false } });
  const owner = await login(srv, merchantLogin(SLUG));
  const item = (externalId: string, category?: string) => ({ externalId, title: `Quenbright ${externalId}`, price: 10, currency: "USD", ...(category === undefined ? {} : { category }) });
  const put = await srv.json(`/api/v1/merchant/stores/${SLUG}/catalog`, {
    method: "PUT",
    headers: { authorization: `Bearer ${owner}` },
    body: { products: [item("none-1"), item("none-2"), item("blank", "  "), item("marks", "!!!"), item("empty", ""), item("apparel-lower", "apparel ")] },
  });
  expect(put.status).toBe(200);
  expect(put.body.data.accepted).toBe(6);
  await getIndexer(srv.running.services)!.idle();
  const key = await createKey(srv, { scopes: ALL_SCOPES, tier: "ENTERPRISE" });
  agent = await connect(srv, { path: `/${SLUG}/mcp`, headers: key.headers });
}, 60_000);

afterAll(async () => {
  await agent?.close();
  await srv?.stop();
});

describe("browse_categories lists the categories search_products can filter by", () => {
  test("every listed name finds, through search_products, exactly the products it counts", async () => {
    const r = await agent.call("browse_categories", {});
    expect(r.isError ?? false).toBe(false);
    const { categories } = structured<{ categories: { name: string; productCount: number }[] }>(r);
    expect(categories.length).toBeGreaterThan(0);
    for (const c of categories) {
      const s = await agent.call("search_products", { query: "*", category: c.name, in_stock_only: false, limit: 100 });
      expect(s.isError ?? false).toBe(false);
      expect({ name: c.name, total: structured(s).meta.total }).toEqual({ name: c.name, total: c.productCount });
    }
  }, 60_000);

  test("two spellings of one category are one entry, counting both", async () => {
    const { categories } = structured<{ categories: { name: string; productCount: number }[] }>(await agent.call("browse_categories", {}));
    const apparel = categories.filter((c) => c.name.trim().toLowerCase() === "apparel");
    expect(apparel.length).toBe(1);
    const [{ n }] = await srv.db.sql<{ n: number }[]>`
      SELECT count(*)::int AS n FROM products WHERE store_slug = ${SLUG} AND active AND lower(trim(category)) = 'apparel'`;
    expect(apparel[0]!.productCount).toBe(n);
  });

  test("products without a category search can filter by are counted apart, not listed as a category", async () => {
    const got = structured<{ categories: { name: string }[]; uncategorized: { productCount: number } }>(await agent.call("browse_categories", {}));
    expect(got.categories.map((c) => c.name)).not.toContain("Uncategorized");
    expect(got.categories.map((c) => c.name)).not.toContain("");
    const [{ n }] = await srv.db.sql<{ n: number }[]>`
      SELECT count(*)::int AS n FROM products WHERE store_slug = ${SLUG} AND active AND (category IS NULL OR category !~ '[[:alnum:]]')`;
    expect(n).toBe(5);
    expect(got.uncategorized.productCount).toBe(n);
  });
});
