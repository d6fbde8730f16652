/**
 * The OpenAPI document says which request bodies are closed: every route that refuses a body key its schema lacks
 * (gateway/rest/strict-body.ts) has `additionalProperties: false` on each object of its documented body that the
 * check treats as closed, so a generated client learns it from the document, not from the 400
 * (gateway/openapi/complete.ts `closedBody`). Records, open objects and `t.Unknown()` members stay open; bodies that
 * are not strict (OAuth, the protocol bridges) are not marked; the TypeBox schemas the routes share with MCP tools
 * and actor messages are not changed by building the document.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { PoliciesInput, ShippingZoneInput } from "../../actors/store/ingest.ts";
import { createApp } from "../../gateway/app.ts";
import { t } from "elysia";
import { closedBody, strictBodiesOf } from "../../gateway/openapi/complete.ts";
import { SearchRequest } from "../../gateway/rest/search.ts";
import { SearchSettingsPatchSchema } from "../../search/settings.ts";
import { ALL_SCOPES, createKey, login, type TestKey } from "../helpers/agents.ts";
import { startServer, type TestServer } from "../helpers/server.ts";
import { DEMO, rpc } from "../mcp/helpers.ts";

interface Schema {
  type?: string | string[];
  properties?: Record<string, Schema>;
  patternProperties?: Record<string, Schema>;
  additionalProperties?: boolean | Schema;
  items?: Schema;
  anyOf?: Schema[];
  required?: string[];
  $ref?: string;
}
interface Operation {
  requestBody?: { required?: boolean; content?: Record<string, { schema?: Schema }> };
}
type Doc = { paths: Record<string, Record<string, Operation>>; components: { schemas: Record<string, Schema> } };

const ZERO = "00000000-0000-4000-8000-000000000000";
/** A key no body of the API has. */
const PROBE = "notAKeyOfThisBody";

let srv: TestServer;
let doc: Doc;
let bearer: string;
let key: TestKey;
/**
 * tools/list's input schemas, and the shared TypeBox schemas as JSON, before the document was first built and just
 * after (before any other request: Elysia itself writes `additionalProperties: false` into a route's body schema
 * when that route's validator is compiled, on its first request, which is not what is checked here).
 */
let toolsBefore: unknown;
let toolsAfter: unknown;
let sharedBefore: string;
let sharedAfter: string;

const shared = () => JSON.stringify({ PoliciesInput, ShippingZoneInput, SearchRequest, SearchSettingsPatchSchema });
const toolInputs = async () => {
  const r = await rpc(srv, `/${DEMO}/mcp`, "tools/list", {});
  expect(r.status).toBe(200);
  return (r.body.result.tools as { name: string; inputSchema: unknown }[]).map((t) => ({ name: t.name, inputSchema: t.inputSchema }));
};

beforeAll(async () => {
  srv = await startServer({ seed: true, config: { RATE_LIMITS_ENABLED: false } });
  // before anything asks for the document, so this is the schemas as they were before it was completed
  toolsBefore = await toolInputs();
  sharedBefore = shared();
  const r = await srv.json("/api/v1/openapi.json");
  sharedAfter = shared();
  toolsAfter = await toolInputs();
  expect(r.status).toBe(200);
  doc = r.body;
  bearer = await login(srv);
  key = await createKey(srv, { scopes: ALL_SCOPES, tier: "ENTERPRISE", token: bearer });
}, 60_000);
afterAll(async () => {
  await srv?.stop();
});

const body = (method: string, path: string): Schema => {
  const s = doc.paths[path]?.[method.toLowerCase()]?.requestBody?.content?.["application/json"]?.schema;
  if (!s) throw new Error(`no JSON body documented for ${method} ${path}`);
  return s;
};

/** Every JSON body operation of the document: "METHOD /path" and its schema. */
const jsonBodies = () =>
  Object.entries(doc.paths).flatMap(([path, ops]) =>
    Object.entries(ops).flatMap(([method, op]) => {
      const schema = op.requestBody?.content?.["application/json"]?.schema;
      return schema ? [{ method: method.toUpperCase(), path, schema }] : [];
    }),
  );

describe("strict bodies are documented closed, at every level the check closes", () => {
  test("POST /api/v1/agent/cart: the body and each of its items are additionalProperties false", () => {
    const s = body("POST", "/api/v1/agent/cart");
    expect(s.additionalProperties).toBe(false);
    expect(Object.keys(s.properties!)).toEqual(["items"]);
    expect(s.properties!.items!.items!.additionalProperties).toBe(false);
    expect(Object.keys(s.properties!.items!.items!.properties!).sort()).toEqual(["product_id", "quantity", "variant_id"]);
  });

  test("PUT merchant shipping zones: the body and each zone are closed; PUT policies: the body and its nullable negotiation rules are closed", () => {
    const zones = body("PUT", "/api/v1/merchant/stores/{slug}/shipping-zones");
    expect(zones.additionalProperties).toBe(false);
    expect(zones.properties!.zones!.items!.additionalProperties).toBe(false);
    const policies = body("PUT", "/api/v1/merchant/stores/{slug}/policies");
    expect(policies.additionalProperties).toBe(false);
    expect(policies.properties!.negotiation!.type).toEqual(["object", "null"]);
    expect(policies.properties!.negotiation!.additionalProperties).toBe(false);
  });

  test("POST /api/v1/agent/checkout: the body and its shipping choice are closed; x402_payload and x402_config (checked by their own rules) and the payment_methods record stay open", () => {
    const s = body("POST", "/api/v1/agent/checkout");
    expect(s.additionalProperties).toBe(false);
    expect(s.properties!.shipping!.additionalProperties).toBe(false);
    expect(s.properties!.x402_payload!).not.toHaveProperty("additionalProperties");
    expect(s.properties!.x402_config!).not.toHaveProperty("additionalProperties");
    expect(s.properties!.payment_methods!.patternProperties).toBeDefined();
    expect(s.properties!.payment_methods!).not.toHaveProperty("additionalProperties");
  });

  test("POST /api/v1/agent/search: the body is closed (its own transform, also strict) and deduplicate, any value, stays open", () => {
    const s = body("POST", "/api/v1/agent/search");
    expect(s.additionalProperties).toBe(false);
    expect(s.properties!.filters!.additionalProperties).toBe(false);
    expect(s.properties!.deduplicate!).not.toHaveProperty("additionalProperties");
  });

  test("PUT admin search settings: the body and its nested objects are closed; the synonyms record keeps its free keys (no additionalProperties)", () => {
    const s = body("PUT", "/api/v1/admin/search/settings");
    expect(s.additionalProperties).toBe(false);
    expect(s.properties!.typoTolerance!.additionalProperties).toBe(false);
    const synonyms = s.properties!.synonyms!;
    expect(synonyms.type).toBe("object");
    expect(synonyms.patternProperties).toBeDefined();
    expect(synonyms).not.toHaveProperty("additionalProperties");
  });

  test("the refund body, written by hand in operations.ts, lists every key the route takes once closed (idempotencyKey too)", () => {
    const s = body("POST", "/api/v1/agent/orders/{orderId}/refund");
    expect(s.additionalProperties).toBe(false);
    expect(Object.keys(s.properties!).sort()).toEqual(["amount", "idempotencyKey", "idempotency_key", "reason"]);
  });
});

describe("bodies that are not strict are not marked", () => {
  test("OAuth dynamic client registration keeps its open metadata (RFC 7591 allows more members)", () => {
    expect(body("POST", "/api/v1/oauth/register").additionalProperties).toBe(true);
  });

  test("the ACP bridge's create and the UCP bridge's create are not closed by the strict-body marking", () => {
    const acp = body("POST", "/api/v1/agent/acp/checkout_sessions");
    expect(acp.additionalProperties).toBeUndefined();
    for (const member of acp.anyOf!) expect(member.additionalProperties).toBe(true);
    expect(body("POST", "/api/v1/agent/ucp/checkout-sessions").additionalProperties).not.toBe(false);
  });
});

describe("every strict route is marked, and only those", () => {
  test("every route whose transform hooks hold a strict check (the app's own routes) has its documented body closed", () => {
    const app = createApp(srv.running.services);
    const strict = strictBodiesOf(app.routes);
    const unmarked = [...strict.keys()].filter((op) => {
      const [method, path] = op.split(" ") as [string, string];
      return doc.paths[path]?.[method.toLowerCase()] === undefined || body(method, path).additionalProperties !== false;
    });
    expect(unmarked).toEqual([]);
    // the REST writes, the two with transforms of their own (checkout, search), the AP2 key and customer-token routes,
    // and twelve that take no body (`{}` only, gateway/rest/optional-body.ts noBody): webhook enable/disable and trust key
    // rotation (helper C, session 21); refund approve/reject, checkout session cancel, the sandbox buyer's decision,
    // webhook redeliver, search reindex, and the DELETEs of an agent key (own, operator's), a coupon, a webhook endpoint
    // (helper E, session 21)
    expect(strict.size).toBe(53);
    for (const op of ["POST /api/v1/agent/checkout", "POST /api/v1/agent/search", "PUT /api/v1/agent-keys/{id}/ap2-user-keys/{kid}", "POST /api/v1/merchant/stores/{slug}/customer-tokens"]) {
      expect(strict.has(op)).toBe(true);
    }
  });

  test("a body key no schema has is refused by exactly the operations documented closed, whose 400 allows exactly the keys the document lists", async () => {
    const refused: string[] = [];
    const closed: string[] = [];
    const disagree: string[] = [];
    for (const { method, path, schema } of jsonBodies()) {
      const url = path.replace("{slug}", DEMO).replace(/\{[^}]+\}/g, ZERO);
      const r = await srv.json(url, { method, headers: { ...key.headers, authorization: `Bearer ${bearer}` }, body: { [PROBE]: 1 } });
      const op = `${method} ${path}`;
      if (schema.additionalProperties === false) closed.push(op);
      if (r.status === 400 && r.body?.code === "validation_error" && r.body.details?.field === PROBE) {
        refused.push(op);
        const allowed = [...(r.body.details.allowed as string[])].sort();
        if (JSON.stringify(allowed) !== JSON.stringify(Object.keys(schema.properties ?? {}).sort())) disagree.push(op);
      }
    }
    expect(refused.length).toBe(53);
    expect(closed).toEqual(refused);
    expect(disagree).toEqual([]);
  });
});

describe("the document marks copies: the shared schemas are unchanged", () => {
  test("MCP tools/list's input schemas are the same after the document was built as before", () => {
    expect(toolsAfter).toEqual(toolsBefore);
    expect((toolsAfter as unknown[]).length).toBeGreaterThan(10);
  });

  test("building the document leaves the TypeBox schemas shared with actor messages and the search settings as they were (SearchRequest, marked closed in the document, has no additionalProperties of its own)", () => {
    expect(sharedAfter).toBe(sharedBefore);
    expect(JSON.parse(sharedAfter).SearchRequest).not.toHaveProperty("additionalProperties");
    expect(JSON.parse(sharedAfter).SearchSettingsPatchSchema.properties.synonyms).not.toHaveProperty("additionalProperties");
  });
});

describe("a body named by a $ref", () => {
  test("is marked as an inline copy, and the component it names (maybe another route's body) stays as it was", () => {
    const Item = t.Object({ sku: t.String() });
    const Body = t.Object({ item: Item, tags: t.Record(t.String(), t.String()) });
    const component = { type: "object", required: ["sku"], properties: { sku: { type: "string" } } };
    const components = { schemas: { Item: component } };
    const json = { type: "object", properties: { item: { $ref: "#/components/schemas/Item" }, tags: { type: "object", patternProperties: { "^(.*)$": { type: "string" } } } } };
    expect(closedBody(Body, json, components)).toEqual({
      type: "object",
      additionalProperties: false,
      required: ["item", "tags"],
      properties: {
        item: { type: "object", required: ["sku"], properties: { sku: { type: "string" } }, additionalProperties: false },
        tags: { type: "object", patternProperties: { "^(.*)$": { type: "string" } } },
      },
    });
    expect(components.schemas.Item).toEqual({ type: "object", required: ["sku"], properties: { sku: { type: "string" } } });
    expect(Body).not.toHaveProperty("additionalProperties");
  });
});
