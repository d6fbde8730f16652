/**
 * The MCP catalog tools advertise the same product models as the OpenAPI document (gateway/mcp/tools/schemas.ts
 * reuses gateway/openapi/models.ts): every field of the spec's ProductSummary required, with its enums, and
 * integers as JSON numbers. The official client validates each answer against that schema (test/mcp/helpers.ts).
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { ALL_SCOPES, createKey, type TestKey } from "../helpers/agents.ts";
import { startServer, type TestServer } from "../helpers/server.ts";
import { connect, structured, type Connected } from "./helpers.ts";

const SUMMARY_FIELDS = [
  "id", "title", "description", "price", "compareAtPrice", "currency", "inStock", "imageUrl", "category", "merchant",
  "relevanceScore", "freshnessTier", "stockConfidence", "priceConfidence", "why_ranked", "euQualified",
];

let srv: TestServer;
let key: TestKey;
let c: Connected;
let schemas: Map<string, any>;

beforeAll(async () => {
  srv = await startServer({ seed: true, config: { RATE_LIMITS_ENABLED: false } });
  key = await createKey(srv, { scopes: ALL_SCOPES });
  c = await connect(srv, { headers: key.headers });
  const { tools } = await c.client.listTools();
  schemas = new Map(tools.map((t) => [t.name, t.outputSchema]));
}, 120_000);
afterAll(async () => {
  await c?.close();
  await srv?.stop();
});

/** The success branch of a tool's advertised `{type: object, anyOf: [success, error]}`. */
const success = (tool: string) => schemas.get(tool).anyOf[0];
const enumOf = (s: any): string[] => s.anyOf.map((x: any) => x.const);

describe("MCP product schemas are the OpenAPI models", () => {
  test("search_products and get_recommendations list every ProductSummary field as required, with the enums", () => {
    for (const tool of ["search_products", "get_recommendations"]) {
      const item = success(tool).properties.products.items;
      expect([...item.required].sort()).toEqual([...SUMMARY_FIELDS].sort());
      expect(enumOf(item.properties.freshnessTier)).toEqual(["fresh", "good", "stale", "very_stale", "unknown"]);
      expect(enumOf(item.properties.stockConfidence)).toEqual(["high", "medium", "low"]);
      expect(enumOf(item.properties.merchant.properties.verificationLevel)).toEqual(["UNVERIFIED", "BASIC", "STANDARD", "PREMIUM"]);
    }
  });

  test("get_product_details advertises stockQuantity as an integer or null (no numeric-string branch) and the full detail", () => {
    const detail = success("get_product_details");
    expect(detail.properties.stockQuantity.anyOf).toEqual([{ type: "integer" }, { type: "null" }]);
    expect(detail.required).toEqual(expect.arrayContaining(["compareAtPrice", "category", "policies", "freshnessTier"]));
    expect(JSON.stringify(detail)).not.toContain('"format":"integer"');
  });

  test("real answers pass the client's validation against these schemas", async () => {
    const r = await c.call("search_products", { query: "headphones", limit: 3 });
    expect(r.isError).toBeFalsy();
    const products = structured(r).products;
    expect(products.length).toBeGreaterThan(0);
    for (const f of SUMMARY_FIELDS) expect(products[0]).toHaveProperty(f);
    const d = await c.call("get_product_details", { product_id: products[0].id });
    expect(d.isError).toBeFalsy();
  }, 60_000);
});
