/**
 * The OpenAPI document describes the merchant's batch writes as they are checked and answered (helper B, session 22):
 * PUT /catalog, PATCH /inventory and POST /orders take their items as `t.Unknown()` (each item is judged on its own,
 * so a bad one is a per-item rejection, not a 400 for the batch), and the document showed each item as `{}`: a
 * merchant reading it could not learn that a product needs externalId, title, price and currency. The catalog's
 * answer was an empty object described as "created, updated, rejected", fields it never has. Now each item has its
 * schema (ProductInput, InventoryItemInput, HumanOrderInput) and each answer its fields, and real answers fit them.
 */
import { beforeAll, expect, test } from "bun:test";
import { Value } from "@sinclair/typebox/value";
import { HumanOrderInput, InventoryItemInput } from "../../actors/store/ingest.ts";
import { ProductInput } from "../../actors/store/schemas.ts";
import { useServer } from "../helpers/server.ts";

type Json = Record<string, any>;
const STORE = "/api/v1/merchant/stores/demo-store";

const srv = useServer({ seed: true, admin: true });
let doc: Json;
beforeAll(async () => {
  const r = await srv.json("/api/v1/openapi.json");
  expect(r.status).toBe(200);
  doc = r.body;
}, 60_000);

const deref = (s: Json): Json => {
  while (s && typeof s.$ref === "string") s = s.$ref.split("/").slice(1).reduce((o: Json, k: string) => o[k], doc);
  return s;
};
const op = (method: string, path: string) => doc.paths[`/api/v1/merchant/stores/{slug}${path}`][method];
const itemsOf = (method: string, path: string, field: string) => deref(deref(op(method, path).requestBody.content["application/json"].schema).properties[field].items);
const dataOf = (method: string, path: string, status: string) => deref(deref(op(method, path).responses[status].content["application/json"].schema).properties.data);
const keysOf = (s: Json) => Object.keys(s.properties ?? {}).sort();
const send = (method: string, path: string, body: unknown) =>
  srv.json(`${STORE}${path}`, { method, headers: { authorization: `Bearer ${srv.admin}` }, body });

test("PUT /catalog documents each product item (its required fields and bounds) and an answer whose fields a real answer has", async () => {
  const item = itemsOf("put", "/catalog", "products");
  expect(item.required.sort()).toEqual(["currency", "externalId", "price", "title"]);
  expect(keysOf(item)).toEqual(Object.keys(ProductInput.properties).sort());
  expect(item.additionalProperties).toBe(false);
  expect(item.properties.images.items.description).toBe("http or https URL");
  const batch = deref(op("put", "/catalog").requestBody.content["application/json"].schema).properties.products;
  expect(batch.maxItems).toBe(1000);

  const data = dataOf("put", "/catalog", "200");
  expect(keysOf(data)).toEqual(["accepted", "rejected", "removed", "syncedAt", "upserted"]);
  expect(keysOf(deref(data.properties.rejected.items))).toEqual(["errors", "externalId", "index"]);
  expect(keysOf(deref(data.properties.upserted.items))).toEqual(["externalId", "id", "index"]);

  const good = { externalId: "OPENAPI-ITEM-1", title: "Documented item", price: 12.5, currency: "USD", stockQuantity: 3 };
  expect(Value.Check(ProductInput, good)).toBe(true);
  const r = await send("PUT", "/catalog", { products: [good, { externalId: "OPENAPI-ITEM-2", title: "Price in tenths of a cent", price: 1.234, currency: "USD" }] });
  expect(r.status).toBe(200);
  expect(r.body.success).toBe(true);
  expect(Object.keys(r.body.data).sort()).toEqual(keysOf(data));
  expect(r.body.data.accepted).toBe(1);
  expect(r.body.data.rejected).toEqual([{ index: 1, externalId: "OPENAPI-ITEM-2", errors: [{ field: "price", message: "more decimals than USD has (2)" }] }]);
  expect(Object.keys(r.body.data.rejected[0]).sort()).toEqual(keysOf(deref(data.properties.rejected.items)));
  expect(Object.keys(r.body.data.upserted[0]).sort()).toEqual(keysOf(deref(data.properties.upserted.items)));
});

test("PATCH /inventory documents each stock item (stockQuantity required, productId or externalId) and its rejections", async () => {
  const item = itemsOf("patch", "/inventory", "items");
  expect(item.required).toEqual(["stockQuantity"]);
  expect(keysOf(item)).toEqual(Object.keys(InventoryItemInput.properties).sort());
  expect(item.additionalProperties).toBe(false);
  const data = dataOf("patch", "/inventory", "200");
  expect(keysOf(data)).toEqual(["products", "rejected", "updated"]);

  const r = await send("PATCH", "/inventory", { items: [{ externalId: "OPENAPI-ITEM-1", stockQuantity: 7 }, { externalId: "OPENAPI-NO-SUCH", stockQuantity: 1 }] });
  expect(r.status).toBe(200);
  expect(r.body.data).toEqual({ updated: 1, products: 1, rejected: [{ index: 1, externalId: "OPENAPI-NO-SUCH", errors: [{ field: "externalId", message: "no such product in this store" }] }] });
  expect(Object.keys(r.body.data.rejected[0]).sort()).toEqual(keysOf(deref(data.properties.rejected.items)));
});

test("POST /orders documents each human order (externalId, buyer, status, currency, items) and the 201's recorded orders", async () => {
  const item = itemsOf("post", "/orders", "orders");
  expect(item.required.sort()).toEqual(["buyer", "currency", "externalId", "items", "status"]);
  expect(keysOf(item)).toEqual(Object.keys(HumanOrderInput.properties).sort());
  const data = dataOf("post", "/orders", "201");
  expect(keysOf(data)).toEqual(["accepted", "orders", "rejected"]);
  expect(keysOf(deref(data.properties.orders.items))).toEqual(["duplicate", "externalId", "index", "orderId"]);

  const order = { externalId: "OPENAPI-ORDER-1", buyer: "buyer@example.com", status: "paid", currency: "USD", items: [{ title: "Documented item", quantity: 1, unitPrice: 12.5 }] };
  expect(Value.Check(HumanOrderInput, order)).toBe(true);
  const r = await send("POST", "/orders", { orders: [order] });
  expect(r.status).toBe(201);
  expect(Object.keys(r.body.data).sort()).toEqual(keysOf(data));
  expect(r.body.data.accepted).toBe(1);
  expect(Object.keys(r.body.data.orders[0]).sort()).toEqual(keysOf(deref(data.properties.orders.items)));
});
