/**
 * Audit A7 MED-2 (variant prices): search filtered (`minPrice`/`maxPrice`) and price-sorted by the product's list
 * price while the cart charges the chosen variant's own price. The rule now: a product with variants priced on
 * their own matches a price range when one of its variants' prices is in it, price_asc sorts by the lowest price in
 * range and price_desc by the highest, and the summary's `priceRange` gives the lowest and highest variant price
 * (`price` stays the list price).
 */
import { beforeAll, describe, expect, test } from "bun:test";
import { getIndexer } from "../../search/indexer.ts";
import { ALL_SCOPES, createKey, login, merchantLogin, type TestKey } from "../helpers/agents.ts";
import { useServer } from "../helpers/server.ts";

const SLUG = "summit-sports-co";
const WORD = `Quillborough${Date.now()}`;
const srv = useServer({ config: { RATE_LIMITS_ENABLED: false } });
let key: TestKey;

beforeAll(async () => {
  key = await createKey(srv, { scopes: ALL_SCOPES });
  const owner = await login(srv, merchantLogin(SLUG));
  const put = await srv.json(`/api/v1/merchant/stores/${SLUG}/catalog`, {
    method: "PUT",
    headers: { authorization: `Bearer ${owner}` },
    body: {
      products: [
        // list price 50.00; the cart charges 30.00 or 70.00 (a line must name a variant)
        { externalId: `${WORD}-var`, title: `${WORD} Jacket`, price: 50, currency: "USD", variants: [{ title: "Small", price: 30, stockQuantity: 5 }, { title: "Large", price: 70, stockQuantity: 5 }] },
        { externalId: `${WORD}-one`, title: `${WORD} Vest`, price: 40, currency: "USD", stockQuantity: 5 },
      ],
    },
  });
  expect(put.status).toBe(200);
  await getIndexer(srv.running.services)!.idle();
}, 120_000);

async function search(body: Record<string, unknown>): Promise<{ title: string; price: number; priceRange?: { min: number; max: number } }[]> {
  const r = await srv.json("/api/v1/agent/search", { method: "POST", headers: key.headers, body: { query: WORD, ...body } });
  expect(r.status).toBe(200);
  return r.body.data.products;
}
const titles = (ps: { title: string }[]) => ps.map((p) => p.title);

describe("search prices a product with variants as the cart does", () => {
  test("a price range matches a variant's price, not a list price no variant is sold at", async () => {
    expect(titles(await search({ filters: { minPrice: 25, maxPrice: 35 } }))).toEqual([`${WORD} Jacket`]);
    expect(titles(await search({ filters: { minPrice: 65, maxPrice: 75 } }))).toEqual([`${WORD} Jacket`]);
    expect(titles(await search({ filters: { minPrice: 45, maxPrice: 55 } }))).toEqual([]);
    expect(titles(await search({ filters: { minPrice: 35, maxPrice: 45 } }))).toEqual([`${WORD} Vest`]);
    expect(titles(await search({ filters: { maxPrice: 29.99 } }))).toEqual([]);
  });

  test("price sorts use the lowest variant price in range (price_desc the highest), and the summary gives the range", async () => {
    const asc = await search({ sort: "price_asc" });
    expect(titles(asc)).toEqual([`${WORD} Jacket`, `${WORD} Vest`]); // 30 before 40
    expect(asc[0]).toMatchObject({ price: 50, priceRange: { min: 30, max: 70 } });
    expect(asc[1]!.priceRange).toBeUndefined();
    expect(titles(await search({ sort: "price_desc" }))).toEqual([`${WORD} Jacket`, `${WORD} Vest`]); // 70 before 40
    // inside 35..75 the jacket's lowest matching price is 70: after the vest
    expect(titles(await search({ sort: "price_asc", filters: { minPrice: 35, maxPrice: 75 } }))).toEqual([`${WORD} Vest`, `${WORD} Jacket`]);
  });
});
