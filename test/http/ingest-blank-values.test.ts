/**
 * Helper A (session 21): a name or id made only of white space was accepted by merchant ingestion and stored: a product
 * titled "   " (listed to agents with a blank name), an external id "  " (an upsert key nobody can read back), a
 * variant titled " ", a shipping zone named "  " (an option offered with a blank title), an order's buyer "   " (every
 * blank buyer one "unique" buyer of the trust engine). Each is refused per item, in the shape of the other invalid
 * fields ({field, message: "must contain a character other than white space"}), and nothing of a refused item is
 * written; the rest of the batch still is. The rule sits in the item schemas (actors/store/schemas.ts `NonBlank`), so
 * PUT /catalog, the dashboard's upload and the CLI import (the same `validateCatalogItems`) share it.
 */
import { beforeAll, expect, test } from "bun:test";
import { login, merchantLogin } from "../helpers/agents.ts";
import { dashboardSession } from "../helpers/dashboard.ts";
import { useServer } from "../helpers/server.ts";

const SLUG = "greenleaf-living";
const BLANK = "must contain a character other than white space";
const srv = useServer({ seed: true, config: { RATE_LIMITS_ENABLED: false } });
let owner: Record<string, string>;

beforeAll(async () => {
  owner = { authorization: `Bearer ${await login(srv, merchantLogin(SLUG))}` };
}, 60_000);

const product = (over: Record<string, unknown>) => ({ externalId: "BLANK-OK", title: "Quokka Linen Apron", price: 18, currency: "USD", ...over });
const stored = async (externalIds: string[]) =>
  (await srv.db.sql<{ external_id: string }[]>`SELECT external_id FROM products WHERE store_slug = ${SLUG} AND external_id = ANY(${externalIds}) ORDER BY external_id`).map((r) => r.external_id);

test("PUT /catalog refuses a blank title, external id or variant title per item and writes the other items", async () => {
  const r = await srv.json(`/api/v1/merchant/stores/${SLUG}/catalog`, {
    method: "PUT",
    headers: owner,
    body: {
      products: [
        product({ externalId: "BLANK-TITLE", title: "   " }),
        product({ externalId: " \t " }),
        product({ externalId: "BLANK-VARIANT", variants: [{ title: "S" }, { title: "\u00a0 " }] }),
        product({ externalId: "BLANK-OK" }),
      ],
    },
  });
  expect(r.status).toBe(200);
  expect(r.body.data.accepted).toBe(1);
  expect(r.body.data.rejected).toEqual([
    { index: 0, externalId: "BLANK-TITLE", errors: [{ field: "title", message: BLANK }] },
    { index: 1, externalId: " \t ", errors: [{ field: "externalId", message: BLANK }] },
    { index: 2, externalId: "BLANK-VARIANT", errors: [{ field: "variants.1.title", message: BLANK }] },
  ]);
  expect(await stored(["BLANK-TITLE", " \t ", "BLANK-VARIANT", "BLANK-OK"])).toEqual(["BLANK-OK"]);
}, 30_000);

test("an empty title is still refused once, for its length", async () => {
  const r = await srv.json(`/api/v1/merchant/stores/${SLUG}/catalog`, { method: "PUT", headers: owner, body: { products: [product({ externalId: "EMPTY-TITLE", title: "" })] } });
  expect(r.body.data.rejected).toHaveLength(1);
  expect(r.body.data.rejected[0].errors).toHaveLength(1);
  expect(r.body.data.rejected[0].errors[0].field).toBe("title");
  expect(await stored(["EMPTY-TITLE"])).toEqual([]);
}, 30_000);

test("the dashboard's catalog upload refuses a blank title on its line and imports the others", async () => {
  const s = await dashboardSession(srv, SLUG);
  const lines = [JSON.stringify(product({ externalId: "UPLOAD-BLANK", title: "  " })), JSON.stringify(product({ externalId: "UPLOAD-OK" }))];
  const fd = new FormData();
  fd.append("_csrf", s.csrf);
  fd.append("file", new File([lines.join("\n")], "blank.jsonl"));
  const r = await srv.fetch(`/dashboard/s/${SLUG}/catalog/upload`, { method: "POST", headers: { cookie: s.cookie }, body: fd });
  expect(r.status).toBe(200);
  const page = await r.text();
  expect(page).toContain("1 accepted");
  expect(page).toMatch(/<td data-label="Line">1<\/td>[\s\S]*?title: must contain a character other than white space/);
  expect(await stored(["UPLOAD-BLANK", "UPLOAD-OK"])).toEqual(["UPLOAD-OK"]);
}, 60_000);

test("PUT /shipping-zones with a zone named with white space only: 400 on zones.1.name, the stored zones unchanged", async () => {
  const before = await srv.db.sql`SELECT name, countries FROM shipping_zones WHERE store_slug = ${SLUG} ORDER BY name`;
  const r = await srv.json(`/api/v1/merchant/stores/${SLUG}/shipping-zones`, {
    method: "PUT",
    headers: owner,
    body: {
      zones: [
        { name: "US", countries: ["US"], currency: "USD", base: 5, minDays: 2, maxDays: 4 },
        { name: "   ", countries: ["CA"], currency: "USD", base: 15, minDays: 5, maxDays: 9 },
      ],
    },
  });
  expect(r.status).toBe(400);
  expect(r.body).toMatchObject({ success: false, code: "validation_error", details: { field: "zones.1.name" } });
  expect(r.body.details.errors).toEqual([{ field: "zones.1.name", message: BLANK }]);
  expect(await srv.db.sql`SELECT name, countries FROM shipping_zones WHERE store_slug = ${SLUG} ORDER BY name`).toEqual(before);
}, 30_000);

test("PATCH /inventory refuses an item naming a blank external id, and POST /orders an order with a blank buyer or external id", async () => {
  const inv = await srv.json(`/api/v1/merchant/stores/${SLUG}/inventory`, { method: "PATCH", headers: owner, body: { items: [{ externalId: "   ", stockQuantity: 3 }] } });
  expect(inv.status).toBe(200);
  expect(inv.body.data.rejected).toEqual([{ index: 0, externalId: "   ", errors: [{ field: "externalId", message: BLANK }] }]);

  const order = (over: Record<string, unknown>) => ({ externalId: "BLANK-ORDER-OK", buyer: "ada@example.com", status: "paid", currency: "USD", items: [{ title: "Apron", quantity: 1, unitPrice: 18 }], ...over });
  const r = await srv.json(`/api/v1/merchant/stores/${SLUG}/orders`, {
    method: "POST",
    headers: owner,
    body: { orders: [order({ externalId: "BLANK-BUYER", buyer: "   " }), order({ externalId: "  " }), order({ externalId: "BLANK-ITEM", items: [{ title: " ", quantity: 1, unitPrice: 18 }] }), order({})] },
  });
  expect(r.status).toBe(201);
  expect(r.body.data.rejected).toEqual([
    { index: 0, externalId: "BLANK-BUYER", errors: [{ field: "buyer", message: BLANK }] },
    { index: 1, externalId: "  ", errors: [{ field: "externalId", message: BLANK }] },
    { index: 2, externalId: "BLANK-ITEM", errors: [{ field: "items.0.title", message: BLANK }] },
  ]);
  expect(r.body.data.orders.map((o: { externalId: string }) => o.externalId)).toEqual(["BLANK-ORDER-OK"]);
  const refs = await srv.db.sql<{ external_id: string }[]>`SELECT external_id FROM merchant_order_refs WHERE store_slug = ${SLUG} AND external_id = ANY(${["BLANK-BUYER", "  ", "BLANK-ITEM"]})`;
  expect(refs.length).toBe(0);
}, 30_000);
