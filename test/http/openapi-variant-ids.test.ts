/**
 * The served OpenAPI document describes the variant ids and negotiation reasons the server uses (audit A6-9): the
 * ACP/UCP update bodies take the same item ids as create (`<product id>:<variant id>`), ProductDetail's variants
 * (also the MCP get_product output schema) name `itemId`, and a negotiate answer's `reason` lists every RejectReason,
 * variants_priced_separately included. A real product's variants fit their schema, field for field.
 */
import { beforeAll, expect, test } from "bun:test";
import { Value } from "@sinclair/typebox/value";
import { ProductDetail as McpProductDetail } from "../../gateway/mcp/tools/schemas.ts";
import { ALL_SCOPES, createKey, type TestKey } from "../helpers/agents.ts";
import { useServer } from "../helpers/server.ts";

type Json = Record<string, any>;
const HEADPHONES = "617c2afa-e57a-5c6b-826e-7497b34e4f05"; // demo-store, 2 variants
const ITEM_ID = "Product id, or <product id>:<variant id> for a variant";

const srv = useServer({ seed: true });
let doc: Json;
let key: TestKey;
beforeAll(async () => {
  key = await createKey(srv, { scopes: ALL_SCOPES });
  const r = await srv.json("/api/v1/openapi.json");
  expect(r.status).toBe(200);
  doc = r.body;
}, 60_000);

const deref = (s: Json): Json => {
  while (s && typeof s.$ref === "string") s = s.$ref.split("/").slice(1).reduce((o: Json, k: string) => o[k], doc);
  return s;
};
const body = (method: string, path: string) => deref(doc.paths[path][method].requestBody.content["application/json"].schema);
const answer = (method: string, path: string) => deref(doc.paths[path][method].responses["200"].content["application/json"].schema);
const data = (s: Json) => deref(deref(s).properties.data);

test("ACP and UCP update bodies take the create bodies' item ids", () => {
  // each ACP body is anyOf the served API versions' shapes: 2025-09-29 `items`, 2026-04-17 `line_items`
  const acpBranches = (path: string) => body("post", path).anyOf as Json[];
  const [create2025, create2026] = acpBranches("/api/v1/agent/acp/checkout_sessions");
  const [update2025, update2026] = acpBranches("/api/v1/agent/acp/checkout_sessions/{id}");
  const acpCreate = deref(deref(create2025!).properties.items.items);
  const acpUpdate = deref(deref(update2025!).properties.items.items);
  expect(acpUpdate).toEqual(acpCreate);
  expect(acpUpdate.properties.id.description).toBe(ITEM_ID);
  expect(acpUpdate.required).toEqual(["id", "quantity"]);
  const acpCreate2026 = deref(deref(create2026!).properties.line_items.items);
  expect(deref(deref(update2026!).properties.line_items.items)).toEqual(acpCreate2026);
  expect(acpCreate2026.properties.id.description).toBe(ITEM_ID);
  expect(acpCreate2026.required).toEqual(["id"]);
  const ucpCreate = deref(body("post", "/api/v1/agent/ucp/checkout-sessions").properties.line_items.items);
  const ucpUpdate = deref(body("put", "/api/v1/agent/ucp/checkout-sessions/{id}").properties.line_items.items);
  expect(ucpUpdate).toEqual(ucpCreate);
  expect(deref(ucpUpdate.properties.item).properties.id.description).toBe(ITEM_ID);
});

test("ProductDetail variants have a schema with itemId, and a real product's variants fit it exactly", async () => {
  const variant = deref(data(answer("get", "/api/v1/agent/products/{id}")).properties.variants.items);
  expect(Object.keys(variant.properties).sort()).toEqual(["id", "inStock", "itemId", "options", "price", "sku", "stockQuantity", "title"]);
  expect(variant.required.sort()).toEqual(["id", "inStock", "itemId", "options", "price", "stockQuantity", "title"]);
  expect(variant.properties.itemId.description).toContain("<product id>:<variant id>");
  const r = await srv.json(`/api/v1/agent/products/${HEADPHONES}`, { headers: { "x-agent-api-key": key.key } });
  expect(r.status).toBe(200);
  expect(r.body.data.variants.length).toBe(2);
  for (const v of r.body.data.variants) {
    expect(Object.keys(v).every((k) => k in variant.properties)).toBe(true);
    expect(v.itemId).toBe(`${HEADPHONES}:${v.id}`);
  }
  // the same model is MCP get_product_details' output schema (clients validate against it)
  expect([...Value.Errors(McpProductDetail, r.body.data)].map((e) => `${e.path}: ${e.message}`)).toEqual([]);
});

test("negotiate reason: every RejectReason or null", () => {
  const reason = data(answer("post", "/api/v1/agent/negotiate")).properties.reason;
  const values = (reason.anyOf as Json[]).map((s) => (s.type === "null" ? null : s.const)).sort();
  expect(values).toEqual(["below_floor", "category_excluded", "max_rounds_reached", "negotiation_not_enabled", "variants_priced_separately", null].sort());
  expect(reason.description).toContain("variants_priced_separately");
});
