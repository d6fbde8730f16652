/**
 * Audit W-4: a product whose variants' stock adds up past 2^31 - 1 (the products.stock_quantity integer column) is
 * a per-item rejection naming the field, and the rest of the batch is written: PUT /catalog and PATCH /inventory
 * both promise per-item answers for values Postgres cannot store (docs/catalog.md). The roll-up (rollUpVariants)
 * sums the variants unchecked, so the INSERT failed with 22003 and the whole request was a field-less 400 "A value in
 * the request is not acceptable": the good items of the batch were not written either. (Audit W's test, with the
 * exact fields and messages of the fix.)
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { login, merchantLogin } from "../helpers/agents.ts";
import { startServer, type TestServer } from "../helpers/server.ts";

const SLUG = "greenleaf-living";
const MAX = 2_147_483_647;
let srv: TestServer;
let owner: Record<string, string>;

beforeAll(async () => {
  srv = await startServer({ seed: true, config: { RATE_LIMITS_ENABLED: false } });
  owner = { authorization: `Bearer ${await login(srv, merchantLogin(SLUG))}` };
}, 60_000);
afterAll(async () => {
  await srv?.stop();
});

const stockOf = async (externalId: string) =>
  (await srv.db.sql<{ stock_quantity: number | null }[]>`SELECT stock_quantity FROM products WHERE store_slug = ${SLUG} AND external_id = ${externalId}`)[0]?.stock_quantity;

describe("variant stock that rolls up past the integer column", () => {
  test("PUT /catalog: the item is rejected on its variants' stock, the other item of the batch is written", async () => {
    const r = await srv.json(`/api/v1/merchant/stores/${SLUG}/catalog`, {
      method: "PUT",
      headers: owner,
      body: {
        products: [
          { externalId: "W4-GOOD", title: "W4 plain mug", price: 9, currency: "USD", stockQuantity: 3 },
          { externalId: "W4-OVF", title: "W4 overflow tee", price: 10, currency: "USD", variants: [{ title: "S", stockQuantity: MAX }, { title: "M", stockQuantity: 1 }] },
        ],
      },
    });
    expect(r.status).toBe(200);
    expect(r.body.data.accepted).toBe(1);
    expect(r.body.data.upserted.map((u: { externalId: string }) => u.externalId)).toEqual(["W4-GOOD"]);
    expect(r.body.data.rejected).toHaveLength(1);
    expect(r.body.data.rejected[0]).toMatchObject({ index: 1, externalId: "W4-OVF" });
    expect(r.body.data.rejected[0].errors).toEqual([
      { field: "variants", message: `the variants' stock adds up to ${MAX + 1}, more than ${MAX} (the product's stock is their sum)` },
    ]);
    expect(await stockOf("W4-GOOD")).toBe(3);
    expect(await stockOf("W4-OVF")).toBeUndefined();
  });

  test("PATCH /inventory: the variant whose new stock would overflow the roll-up is rejected, the other item is written", async () => {
    const put = await srv.json(`/api/v1/merchant/stores/${SLUG}/catalog`, {
      method: "PUT",
      headers: owner,
      body: { products: [{ externalId: "W4-NEAR", title: "W4 near-max tee", price: 10, currency: "USD", variants: [{ title: "S", stockQuantity: MAX - 5 }, { title: "M", stockQuantity: 1 }] }] },
    });
    expect(put.body.data.accepted).toBe(1);
    const [p] = await srv.db.sql<{ id: string; variants: { id: string }[] }[]>`SELECT id, variants FROM products WHERE store_slug = ${SLUG} AND external_id = 'W4-NEAR'`;
    const r = await srv.json(`/api/v1/merchant/stores/${SLUG}/inventory`, {
      method: "PATCH",
      headers: owner,
      body: { items: [{ productId: p!.id, variantId: p!.variants[1]!.id, stockQuantity: MAX }, { externalId: "W4-GOOD", stockQuantity: 7 }] },
    });
    expect(r.status).toBe(200);
    expect(r.body.data.rejected).toHaveLength(1);
    expect(r.body.data.rejected[0]).toMatchObject({ index: 0, externalId: "W4-NEAR", errors: [{ field: "stockQuantity" }] });
    expect(r.body.data.updated).toBe(1);
    expect(await stockOf("W4-GOOD")).toBe(7);
    expect(await stockOf("W4-NEAR")).toBe(MAX - 4);
    const [after] = await srv.db.sql<{ variants: { stockQuantity: number }[] }[]>`SELECT variants FROM products WHERE store_slug = ${SLUG} AND external_id = 'W4-NEAR'`;
    expect(after!.variants.map((v) => v.stockQuantity)).toEqual([MAX - 5, 1]);
  });
});
