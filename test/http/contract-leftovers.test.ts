/**
 * REST contract leftovers of the session-11 spec audit (S-3, S-4, S-5): what the served OpenAPI document promises is
 * what the routes answer, and the spec's rules are in the served schemas.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { ALL_SCOPES, createKey, type TestKey } from "../helpers/agents.ts";
import { startServer, type TestServer } from "../helpers/server.ts";

const SKILLET = "399d72f1-303c-5cf3-bc6a-5c82714b85d4"; // DS-0005, demo-store
const PRICE_HISTORY = "/api/v1/agent/products/{id}/price-history";
const CHECKOUT = "/api/v1/agent/checkout";
const PROVISION = "/api/v1/agent/wallet/provision";
const EXPLANATION = "/api/v1/agent/merchants/{slug}/trust-explanation";

interface Operation {
  parameters?: { name: string; in: string; schema: Record<string, unknown> }[];
  requestBody?: { content: Record<string, { schema: JsonSchema }> };
  responses: Record<string, { content?: Record<string, { schema: Record<string, unknown> }> } & Record<string, unknown>>;
}
interface JsonSchema {
  properties?: Record<string, JsonSchema>;
  required?: string[];
  anyOf?: JsonSchema[];
  const?: unknown;
  enum?: unknown[];
  default?: unknown;
  [k: string]: unknown;
}
interface OpenApiDoc {
  paths: Record<string, Record<string, Operation>>;
}

let srv: TestServer;
let key: TestKey;
let doc: OpenApiDoc;

beforeAll(async () => {
  srv = await startServer({ seed: true, config: { RATE_LIMITS_ENABLED: false } });
  key = await createKey(srv, { scopes: ALL_SCOPES, tier: "ENTERPRISE" });
  doc = (await srv.json<OpenApiDoc>("/api/v1/openapi.json")).body;
}, 60_000);
afterAll(async () => {
  await srv?.stop();
});

/** The values a schema admits when it is an enum or a union of constants (how TypeBox writes a literal union). */
const allowed = (s: JsonSchema): unknown[] | undefined => s.enum ?? (s.anyOf?.every((b) => "const" in b) ? s.anyOf.map((b) => b.const) : undefined);
const jsonBody = (op: Operation): JsonSchema => op.requestBody?.content["application/json"]?.schema as JsonSchema;

describe("store_suspended (S-3)", () => {
  test("the trust-explanation operation documents no 403 store_suspended, which it never answers", async () => {
    const op = doc.paths[EXPLANATION].get;
    expect(JSON.stringify(op.responses["403"] ?? {})).not.toContain("store_suspended");
    expect(JSON.stringify(op.responses["404"])).toContain("store_not_found");
  });

  test("no operation of the served document lists store_suspended, since no route answers it", () => {
    const listing = Object.entries(doc.paths).flatMap(([path, ops]) =>
      Object.entries(ops).filter(([, op]) => JSON.stringify(op.responses ?? {}).includes("store_suspended")).map(([m]) => `${m.toUpperCase()} ${path}`),
    );
    expect(listing).toEqual([]);
  });

  test("a suspended merchant's trust explanation is 404 store_not_found, as the eligibility rule says", async () => {
    const r = await srv.json("/api/v1/agent/merchants/suspended-goods/trust-explanation", { headers: key.headers });
    expect(r.status).toBe(404);
    expect(r.body).toMatchObject({ success: false, code: "store_not_found" });
  });

  test("checkout of a cart whose merchant was suspended after the cart was made is 403 NOT_ELIGIBLE naming the merchant", async () => {
    const cart = await srv.json(`/api/v1/agent/cart`, { method: "POST", headers: key.headers, body: { items: [{ product_id: SKILLET, quantity: 1 }] } });
    expect(cart.status).toBe(201);
    const before = await srv.db.sql<{ operational_status: string }[]>`SELECT operational_status FROM stores WHERE slug = 'demo-store'`;
    await srv.db.sql`UPDATE stores SET operational_status = 'suspended' WHERE slug = 'demo-store'`;
    try {
      const preview = await srv.json(`${CHECKOUT}/preview`, { method: "POST", headers: key.headers, body: { cartId: cart.body.data.id } });
      expect(preview.status).toBe(200);
      expect(preview.body.data.warnings).toContainEqual(expect.objectContaining({ code: "NOT_ELIGIBLE", reason: "merchant_not_eligible", merchant_slug: "demo-store" }));
      const r = await srv.json(CHECKOUT, {
        method: "POST",
        headers: key.headers,
        body: { cartId: cart.body.data.id, checkout_session_id: preview.body.data.checkout_session_id, payment_method: "MOCK" },
      });
      expect(r.status).toBe(403);
      expect(r.body).toMatchObject({ success: false, code: "NOT_ELIGIBLE", details: { merchant_slug: "demo-store", reason: "merchant_not_eligible" } });
    } finally {
      await srv.db.sql`UPDATE stores SET operational_status = ${before[0].operational_status} WHERE slug = 'demo-store'`;
    }
  });
});

describe("the spec's request rules in the served schemas (S-4)", () => {
  test("price-history days is the enum 30, 60, 90 with default 30", () => {
    const days = doc.paths[PRICE_HISTORY].get.parameters?.find((p) => p.name === "days" && p.in === "query");
    expect(days).toBeDefined();
    expect(allowed(days!.schema as JsonSchema)?.map(String)).toEqual(["30", "60", "90"]);
    expect(String((days!.schema as JsonSchema).default)).toBe("30");
  });

  test("price-history days outside the enum is the schema's 400 naming the field and the allowed values", async () => {
    for (const d of ["45", "030", "abc"]) {
      const r = await srv.json(`/api/v1/agent/products/${SKILLET}/price-history?days=${d}`, { headers: key.headers });
      expect(r.status).toBe(400);
      expect(r.body).toMatchObject({ success: false, code: "validation_error", details: { location: "query", field: "days", allowed: ["30", "60", "90"] } });
    }
    const dflt = await srv.json(`/api/v1/agent/products/${SKILLET}/price-history`, { headers: key.headers });
    expect(dflt.status).toBe(200);
    expect(dflt.body.data.days).toBe(30);
  });

  test("x402_config is described as the spec's object: three required members and facilitator_version v1 or v2", () => {
    const c = jsonBody(doc.paths[CHECKOUT].post).properties?.x402_config;
    expect(c).toBeDefined();
    expect(c!.type).toBe("object");
    expect([...(c!.required ?? [])].sort()).toEqual(["facilitator_url", "merchant_wallet_address", "network"]);
    expect(c!.properties?.merchant_wallet_address).toMatchObject({ type: "string", minLength: 1 });
    expect(c!.properties?.network).toMatchObject({ type: "string", minLength: 1 });
    expect(c!.properties?.facilitator_url).toMatchObject({ type: "string", format: "uri" });
    expect(c!.properties?.asset_address).toMatchObject({ type: "string" });
    expect(allowed(c!.properties!.facilitator_version)).toEqual(["v1", "v2"]);
  });

  test("an x402_config that is not an object is 400 INVALID_ARGUMENT on x402_config, not a missing member", async () => {
    const cart = await srv.json(`/api/v1/agent/cart`, { method: "POST", headers: key.headers, body: { items: [{ product_id: SKILLET, quantity: 1 }] } });
    for (const x402_config of ["abc", [1], 42]) {
      const r = await srv.json(CHECKOUT, { method: "POST", headers: key.headers, body: { cartId: cart.body.data.id, payment_rail: "x402", x402_config } });
      expect(r.status).toBe(400);
      expect(r.body).toMatchObject({ success: false, code: "INVALID_ARGUMENT", details: { field: "x402_config" } });
    }
    // The x402 section's own codes stay: a missing member is MISSING_REQUIRED_ARGUMENT naming it (docs/x402.md).
    const missing = await srv.json(CHECKOUT, {
      method: "POST",
      headers: key.headers,
      body: { cartId: cart.body.data.id, payment_rail: "x402", x402_config: { network: "eip155:84532", facilitator_url: "https://f.example" } },
    });
    expect(missing.status).toBe(400);
    expect(missing.body).toMatchObject({ code: "MISSING_REQUIRED_ARGUMENT", details: { field: "x402_config.merchant_wallet_address" } });
  });

  test("wallet provision network is the enum eip155:8453, eip155:84532 with default eip155:84532", () => {
    const network = jsonBody(doc.paths[PROVISION].post).properties?.network;
    expect(network).toBeDefined();
    expect(allowed(network!)).toEqual(["eip155:8453", "eip155:84532"]);
    expect(network!.default).toBe("eip155:84532");
  });

  test("a wallet network outside the enum is 400 validation_error naming the field and the allowed values", async () => {
    const fresh = await createKey(srv, { scopes: ALL_SCOPES });
    for (const network of ["eip155:1", 84532, null]) {
      const r = await srv.json(PROVISION, { method: "POST", headers: fresh.headers, body: { network } });
      expect(r.status).toBe(400);
      expect(r.body).toMatchObject({ success: false, code: "validation_error", details: { field: "network", allowed: ["eip155:8453", "eip155:84532"] } });
    }
    const made = await srv.json(PROVISION, { method: "POST", headers: fresh.headers, body: {} });
    expect(made.status).toBe(201);
    expect(made.body.data.network).toBe("eip155:84532");
  });
});

describe("/docs/errors (S-5)", () => {
  test("every remedy on the page is one of the spec's closed set", async () => {
    const res = await fetch(`${srv.url}/docs/errors`);
    expect(res.status).toBe(200);
    const html = await res.text();
    const remedies = [...html.matchAll(/<tr id="[^"]+"><td>.*?<\/td><td>\d+<\/td><td>([^<]*)<\/td>/g)].map((m) => m[1]);
    expect(remedies.length).toBeGreaterThan(40);
    const closed = ["stop", "human decides", "fix arguments", "refresh state", "different path", "retry same call", "retry with backoff"];
    expect(remedies.filter((r) => !closed.includes(r))).toEqual([]);
    expect(html).toMatch(/<tr id="unsupported_api_version">.*?<td>400<\/td><td>fix arguments<\/td>/);
  });
});
