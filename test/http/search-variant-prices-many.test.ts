/**
 * The prices search takes for a product with many variants (the catalog's limit, 250) from the `variant_prices`
 * read in search/service.ts (PRODUCT_FIELDS; session 9 checked it is linear in the variants, an InitPlan per
 * product): the in-stock variants' prices (a variant without a price costs the list price) when any variant is in
 * stock, else every variant's price. Checked through the search summary's `priceRange` and the price filter.
 */
import { beforeAll, describe, expect, test } from "bun:test";
import { getIndexer } from "../../search/indexer.ts";
import { ALL_SCOPES, createKey, login, merchantLogin, type TestKey } from "../helpers/agents.ts";
import { useServer } from "../helpers/server.ts";

const SLUG = "summit-sports-co";
const WORD = `Vandermolt${Date.now()}`;
const VARIANTS = 250;
const srv = useServer({ config: { RATE_LIMITS_ENABLED: false } });
let key: TestKey;

/**
 * Mixed: every fifth variant in stock, priced 100 + i (the one at i = 125 has no price: the list price, 500);
 * the others out of stock at 10..59, prices no in-stock variant has.
 */
const mixed = Array.from({ length: VARIANTS }, (_, i) =>
  i % 5 === 0
    ? { title: `In ${i}`, ...(i === 125 ? {} : { price: 100 + i }), stockQuantity: 3 }
    : { title: `Out ${i}`, price: 10 + (i % 50), stockQuantity: 0 },
);
/** None in stock: every variant's price counts, 10..259. */
const allOut = Array.from({ length: VARIANTS }, (_, i) => ({ title: `Size ${i}`, price: 10 + i, stockQuantity: 0 }));

beforeAll(async () => {
  key = await createKey(srv, { scopes: ALL_SCOPES });
  const owner = await login(srv, merchantLogin(SLUG));
  const put = await srv.json(`/api/v1/merchant/stores/${SLUG}/catalog`, {
    method: "PUT",
    headers: { authorization: `Bearer ${owner}` },
    body: {
      products: [
        { externalId: `${WORD}-mixed`, title: `${WORD} Mixed Parka`, price: 500, currency: "USD", variants: mixed },
        { externalId: `${WORD}-out`, title: `${WORD} Sold Out Parka`, price: 500, currency: "USD", variants: allOut },
      ],
    },
  });
  expect(put.status).toBe(200);
  await getIndexer(srv.running.services)!.idle();
}, 120_000);

async function search(filters: Record<string, unknown>): Promise<{ title: string; price: number; priceRange?: { min: number; max: number } }[]> {
  const r = await srv.json("/api/v1/agent/search", { method: "POST", headers: key.headers, body: { query: WORD, filters } });
  expect(r.status).toBe(200);
  expect(r.body.success).toBe(true);
  return r.body.data.products;
}
const titles = (ps: { title: string }[]) => ps.map((p) => p.title).sort();

describe("search prices a product with 250 variants from one pass over them", () => {
  test("with some variants in stock, the range and the price filter use only the in-stock variants' prices", async () => {
    const found = await search({ inStock: true });
    expect(found.map((p) => [p.title, p.price, p.priceRange])).toEqual([[`${WORD} Mixed Parka`, 500, { min: 100, max: 500 }]]);
    expect(titles(await search({ inStock: true, minPrice: 344.5, maxPrice: 345.5 }))).toEqual([`${WORD} Mixed Parka`]); // i = 245
    expect(titles(await search({ inStock: true, minPrice: 499, maxPrice: 501 }))).toEqual([`${WORD} Mixed Parka`]); // the priceless variant
    expect(titles(await search({ inStock: true, minPrice: 101, maxPrice: 104 }))).toEqual([]); // in-stock prices step by 5
    expect(titles(await search({ inStock: true, minPrice: 10, maxPrice: 59 }))).toEqual([]); // only out-of-stock variants cost this
  });

  test("with no variant in stock, every variant's price counts (the stock filter off: both products may match)", async () => {
    const found = await search({ inStock: false });
    expect(found.map((p) => [p.title, p.price, p.priceRange]).sort()).toEqual([
      [`${WORD} Mixed Parka`, 500, { min: 100, max: 500 }],
      [`${WORD} Sold Out Parka`, 500, { min: 10, max: 259 }],
    ]);
    expect(titles(await search({ inStock: false, minPrice: 201, maxPrice: 201 }))).toEqual([`${WORD} Sold Out Parka`]);
    // the mixed product's out-of-stock variants (10..59) still do not count: it has variants in stock
    expect(titles(await search({ inStock: false, minPrice: 10, maxPrice: 59 }))).toEqual([`${WORD} Sold Out Parka`]);
    expect(titles(await search({ inStock: false, minPrice: 260, maxPrice: 499 }))).toEqual([`${WORD} Mixed Parka`]);
  });
});
