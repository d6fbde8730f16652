/**
 * The served OpenAPI document says what the server accepts and sends (REST audit A2 F3, F5, F6):
 * - a JSON body's integer is a JSON number, never a numeric string (gateway/plugins/json-numbers.ts refuses one), and
 *   an answer's integers are numbers too: no schema of a body or an answer admits `"150"` for an integer;
 * - the catalog models are the spec's ProductSummary, ProductDetail and MerchantSummary, with their enums, and real
 *   answers have no field the document leaves out;
 * - every answer's headers are declared: X-Request-Id, the transparency headers, X-RateLimit-*, Retry-After.
 * Checked against the document the server serves, with a small JSON Schema reader (the subset the document uses).
 */
import { beforeAll, describe, expect, test } from "bun:test";
import { EXTRAS_RESOLVER } from "../../actors/webhook/dispatcher.ts";
import { ALL_SCOPES, createKey, login, placeOrder, type TestKey } from "../helpers/agents.ts";
import { rawRequest } from "../helpers/raw-http.ts";
import { useServer, type JsonInit } from "../helpers/server.ts";

type Json = Record<string, any>;
interface Operation {
  parameters?: { name: string; in: string; schema?: Json }[];
  requestBody?: { content?: Record<string, { schema?: Json }> };
  responses: Record<string, { description?: string; "x-error-codes"?: string[]; headers?: Record<string, Json>; content?: Record<string, { schema?: Json }> }>;
}
type Doc = { paths: Record<string, Record<string, Operation>>; components: { schemas: Record<string, Json>; headers: Record<string, Json> } };

const P = {
  headphones: "617c2afa-e57a-5c6b-826e-7497b34e4f05", // demo-store, variants, compareAtPrice set
  skillet: "399d72f1-303c-5cf3-bc6a-5c82714b85d4", // demo-store
  euShop: "0009e996-50d6-53b9-8529-d5e0bdaf69d1", // qualified-eu-shop: QUALIFIED (shown PREMIUM), euQualified
};
const ZERO = "00000000-0000-4000-8000-000000000000";

const srv = useServer({ seed: true });
let doc: Doc;
let key: TestKey;
let bearer: string;

beforeAll(async () => {
  bearer = await login(srv);
  key = await createKey(srv, { scopes: ALL_SCOPES, tier: "ENTERPRISE", token: bearer });
  const r = await srv.json("/api/v1/openapi.json");
  expect(r.status).toBe(200);
  doc = r.body;
}, 60_000);

// ------------------------------------------------------------------------------------------------ a schema reader

const deref = (s: Json): Json => {
  while (s && typeof s.$ref === "string") s = s.$ref.split("/").slice(1).reduce((o: Json, k: string) => o[k], doc as Json);
  return s;
};
const typeOf = (v: unknown) => (v === null ? "null" : Array.isArray(v) ? "array" : Number.isInteger(v) ? "integer" : typeof v);
const typeMatches = (t: string, v: unknown) => t === typeOf(v) || (t === "number" && typeOf(v) === "integer");

/**
 * Why `value` does not fit `schema` ([] when it does). With `described`, an object field the schema's `properties`
 * do not name is a problem too, even where more are admitted (the document must describe what is sent).
 */
function problems(schema: Json, value: unknown, at = "", described = false): string[] {
  const s = deref(schema);
  const out: string[] = [];
  for (const part of s.allOf ?? []) out.push(...problems(part, value, at, described));
  for (const key of ["anyOf", "oneOf"] as const) {
    if (!s[key]) continue;
    const each = (s[key] as Json[]).map((b) => problems(b, value, at, described));
    if (!each.some((e) => e.length === 0)) out.push(`${at}: fits no branch of ${key} (${each.sort((a, b) => a.length - b.length)[0]!.slice(0, 2).join("; ")})`);
  }
  if ("const" in s && s.const !== value) out.push(`${at}: ${JSON.stringify(value)} is not ${JSON.stringify(s.const)}`);
  if (s.enum && !s.enum.includes(value)) out.push(`${at}: ${JSON.stringify(value)} not in enum ${JSON.stringify(s.enum)}`);
  if (s.type) {
    const types: string[] = Array.isArray(s.type) ? s.type : [s.type];
    if (!types.some((t) => typeMatches(t, value))) return [...out, `${at}: ${typeOf(value)} where ${types.join("|")} is documented`];
  }
  if (typeOf(value) === "object") {
    const v = value as Json;
    for (const r of s.required ?? []) if (!(r in v)) out.push(`${at}.${r}: required, missing`);
    for (const [k, x] of Object.entries(v)) {
      const p = s.properties?.[k];
      if (p) out.push(...problems(p, x, `${at}.${k}`, described));
      else if (s.additionalProperties === false) out.push(`${at}.${k}: not allowed`);
      else if (described && s.properties) out.push(`${at}.${k}: sent but not described`);
      else if (typeof s.additionalProperties === "object") out.push(...problems(s.additionalProperties, x, `${at}.${k}`, described));
    }
  }
  if (typeOf(value) === "array" && s.items) (value as unknown[]).forEach((x, i) => out.push(...problems(s.items, x, `${at}[${i}]`, described)));
  return out;
}

const op = (method: string, path: string) => doc.paths[path]![method.toLowerCase()]!;
const jsonSchemaOf = (method: string, path: string, status: number) => op(method, path).responses[String(status)]!.content!["application/json"]!.schema!;
const bodySchemaOf = (method: string, path: string) => op(method, path).requestBody!.content!["application/json"]!.schema!;
const operations = () => Object.entries(doc.paths).flatMap(([path, byMethod]) => Object.entries(byMethod).map(([method, o]) => ({ method: method.toUpperCase(), path, op: o })));

/** Every schema below `s` (refs followed once), with where it is. */
function* walk(s: unknown, at: string, seen = new Set<unknown>()): Generator<{ s: Json; at: string }> {
  if (!s || typeof s !== "object" || seen.has(s)) return;
  seen.add(s);
  if (Array.isArray(s)) {
    for (const [i, x] of s.entries()) yield* walk(x, `${at}[${i}]`, seen);
    return;
  }
  const j = s as Json;
  if (typeof j.$ref === "string") return yield* walk(deref(j), at, seen);
  yield { s: j, at };
  for (const [k, v] of Object.entries(j)) if (k !== "enum" && k !== "const" && k !== "default" && k !== "examples") yield* walk(v, `${at}/${k}`, seen);
}

/** A schema where a string stands for a number (Elysia's `t.Integer` / `t.Numeric` string half). */
const numericText = (s: Json) => s.type === "string" && (s.format === "integer" || s.format === "numeric");

// ------------------------------------------------------------------------------------------------ F3: numbers

describe("integers are JSON numbers in bodies and answers (A2-F3)", () => {
  test("no request body schema of the served document admits a numeric string: the server refuses one in every body", () => {
    const found: string[] = [];
    for (const { method, path, op: o } of operations()) {
      for (const [type, c] of Object.entries(o.requestBody?.content ?? {})) {
        for (const { s, at } of walk(c.schema, `${method} ${path} ${type}`)) if (numericText(s)) found.push(at);
      }
    }
    expect(found).toEqual([]);
  });

  test("no answer schema admits a numeric string where it sends a number", () => {
    const found: string[] = [];
    for (const { method, path, op: o } of operations()) {
      for (const [status, r] of Object.entries(o.responses)) for (const { s, at } of walk(r.content, `${method} ${path} ${status}`)) if (numericText(s)) found.push(at);
    }
    expect(found).toEqual([]);
  });

  test("the fields A2 named: the document says integer, and the server answers a numeric string with its 400", async () => {
    const H = key.headers;
    const auth = { authorization: `Bearer ${bearer}` };
    const num = (s: Json) => ({ type: s.type, anyOf: s.anyOf });

    // refund `amount`: the envelope's validation_error naming the field
    const refundPath = "/api/v1/agent/orders/{orderId}/refund";
    expect(num(bodySchemaOf("POST", refundPath).properties.amount)).toEqual({ type: "integer", anyOf: undefined });
    const orderId = await placeOrder(srv, key, P.skillet);
    const refund = await srv.json(`/api/v1/agent/orders/${orderId}/refund`, { method: "POST", headers: H, body: { amount: "150" } });
    expect(refund.status).toBe(400);
    expect(refund.body).toMatchObject({ success: false, code: "validation_error", details: { location: "body", field: "amount" } });
    expect(problems(bodySchemaOf("POST", refundPath), { amount: "150" })).not.toEqual([]);
    expect(problems(bodySchemaOf("POST", refundPath), { amount: 150 })).toEqual([]);

    // rotate-secret `overlapSeconds`
    srv.running.services.extras.set(EXTRAS_RESOLVER, async () => [{ address: "93.184.216.34", family: 4 }]);
    const hook = await srv.json("/api/v1/merchant/stores/demo-store/webhooks", { method: "POST", headers: auth, body: { url: "https://hooks.example.com/g4", events: ["order.created"] } });
    expect(hook.status).toBe(201);
    const rotatePath = "/api/v1/merchant/stores/{slug}/webhooks/{id}/rotate-secret";
    expect(num(bodySchemaOf("POST", rotatePath).properties.overlapSeconds)).toEqual({ type: "integer", anyOf: undefined });
    const rotate = await srv.json(`/api/v1/merchant/stores/demo-store/webhooks/${hook.body.data.id}/rotate-secret`, { method: "POST", headers: auth, body: { overlapSeconds: "60" } });
    expect(rotate.status).toBe(400);
    expect(rotate.body).toMatchObject({ success: false, code: "validation_error", details: { field: "overlapSeconds" } });

    // ACP items[].quantity: the ACP error shape
    const acpPath = "/api/v1/agent/acp/checkout_sessions";
    // the body is anyOf the served API versions' shapes (2025-09-29 `items`, 2026-04-17 `line_items`)
    const [acp2025, acp2026] = bodySchemaOf("POST", acpPath).anyOf as Json[];
    expect(num(acp2025!.properties.items.items.properties.quantity)).toEqual({ type: "integer", anyOf: undefined });
    expect(num(acp2026!.properties.line_items.items.properties.quantity)).toEqual({ type: "integer", anyOf: undefined });
    const acp = await srv.json(acpPath, { method: "POST", headers: H, body: { items: [{ id: P.skillet, quantity: "2" }] } });
    expect(acp.status).toBe(400);
    expect(acp.body).toMatchObject({ type: "invalid_request", code: "INVALID_ARGUMENT", param: "$.items[0].quantity" });

    // UCP line_items[].quantity (create and update): the UCP message list
    const ucpPath = "/api/v1/agent/ucp/checkout-sessions";
    expect(num(bodySchemaOf("POST", ucpPath).properties.line_items.items.properties.quantity)).toEqual({ type: "integer", anyOf: undefined });
    expect(num(bodySchemaOf("PUT", `${ucpPath}/{id}`).properties.line_items.items.properties.quantity)).toEqual({ type: "integer", anyOf: undefined });
    const ucp = await srv.json(ucpPath, { method: "POST", headers: H, body: { line_items: [{ item: { id: P.skillet }, quantity: "2" }] } });
    expect(ucp.status).toBe(400);
    expect(ucp.body.messages).toEqual([expect.objectContaining({ type: "error", code: "INVALID_ARGUMENT", details: { field: "line_items[0].quantity" } })]);
  }, 30_000);

  test("a query integer stays text that reads as a number, without Elysia's `default: 0` (no route's default)", async () => {
    const page = op("GET", "/api/v1/merchants").parameters!.find((p) => p.name === "page")!.schema!;
    expect(page.anyOf).toEqual([{ format: "integer", type: "string" }, expect.objectContaining({ type: "integer", minimum: 1 })]);
    const r = await srv.json("/api/v1/merchants?page=1&limit=2");
    expect(r.status).toBe(200);
    expect(r.body.meta).toMatchObject({ page: 1, limit: 2 });
  });
});

// ------------------------------------------------------------------------------------------------ F5: catalog models

const SPEC_PRODUCT_SUMMARY = ["id", "title", "description", "price", "compareAtPrice", "currency", "inStock", "imageUrl", "category", "merchant", "relevanceScore", "freshnessTier", "stockConfidence", "priceConfidence", "why_ranked", "euQualified"];
const SPEC_PRODUCT_DETAIL = ["id", "title", "description", "price", "compareAtPrice", "currency", "inStock", "stockQuantity", "images", "variants", "attributes", "category", "merchant", "policies", "freshnessTier"];
const SPEC_MERCHANT_SUMMARY = ["slug", "name", "trustScore", "verificationLevel", "storeStatus"];
/** The values an enum-like field may take: `enum`, or an `anyOf` of `const`s. */
const valuesOf = (s: Json): unknown[] => deref(s).enum ?? (deref(s).anyOf as Json[]).map((b) => b.const);

describe("the catalog models are the spec's (A2-F5)", () => {
  const searchProduct = () => jsonSchemaOf("POST", "/api/v1/agent/search", 200).properties.data.properties.products.items;
  const detail = () => jsonSchemaOf("GET", "/api/v1/agent/products/{id}", 200).properties.data;
  const directoryMerchant = () => jsonSchemaOf("GET", "/api/v1/merchants", 200).properties.data.items;

  test("ProductSummary, ProductDetail and MerchantSummary require the spec's fields and give its enums", () => {
    expect([...deref(searchProduct()).required].sort()).toEqual([...SPEC_PRODUCT_SUMMARY].sort());
    // additive and optional: priceRange (variant prices, audit A7 MED-2)
    expect(Object.keys(deref(searchProduct()).properties).sort()).toEqual([...SPEC_PRODUCT_SUMMARY, "priceRange"].sort());
    expect([...deref(detail()).required].sort()).toEqual([...SPEC_PRODUCT_DETAIL].sort());
    expect(deref(detail()).properties.policies.required).toEqual(["acceptsReturns"]);
    expect(Object.keys(deref(detail()).properties.policies.properties).sort()).toEqual(["acceptsReturns", "freeShippingThreshold", "restockingFeePercent", "returnWindowDays", "shippingEstimateDays", "supportResponseTimeSla"]);
    for (const m of [searchProduct().properties.merchant, detail().properties.merchant, directoryMerchant()]) {
      expect([...deref(m).required].sort()).toEqual([...SPEC_MERCHANT_SUMMARY].sort());
      expect(deref(m).properties.lastSyncAt).toBeDefined();
      expect(valuesOf(deref(m).properties.verificationLevel)).toEqual(["UNVERIFIED", "BASIC", "STANDARD", "PREMIUM"]);
      expect(valuesOf(deref(m).properties.storeStatus)).toEqual(["active", "deprioritized"]);
    }
    for (const s of [searchProduct(), detail()]) expect(valuesOf(deref(s).properties.freshnessTier)).toEqual(["fresh", "good", "stale", "very_stale", "unknown"]);
    for (const f of ["stockConfidence", "priceConfidence"]) expect(valuesOf(deref(searchProduct()).properties[f])).toEqual(["high", "medium", "low"]);
  });

  test("real answers of search, product detail, recommendations and the directory: every field described, required ones present, enums kept", async () => {
    const H = key.headers;
    const found: string[] = [];
    let products = 0;
    async function check(method: string, template: string, url: string, init: JsonInit = {}) {
      const r = await srv.json(url, { ...init, method });
      expect(r.status).toBe(200);
      found.push(...problems(jsonSchemaOf(method, template, 200), r.body, `${method} ${url}`, true));
      return r.body;
    }
    for (const query of ["sunscreen", "headphones", "skillet", "jacket"]) {
      const body = await check("POST", "/api/v1/agent/search", "/api/v1/agent/search", { headers: H, body: { query, limit: 50 } });
      products += body.data.products.length;
    }
    const eu = await check("POST", "/api/v1/agent/search", "/api/v1/agent/search", { headers: H, body: { query: "sunscreen", filters: { verificationLevel: "QUALIFIED" } } });
    for (const id of [P.headphones, P.skillet, P.euShop]) await check("GET", "/api/v1/agent/products/{id}", `/api/v1/agent/products/${id}`, { headers: H });
    await check("POST", "/api/v1/agent/recommendations", "/api/v1/agent/recommendations", { headers: H, body: { productId: P.headphones } });
    await check("GET", "/api/v1/merchants", "/api/v1/merchants?limit=100");
    expect(found).toEqual([]);
    // the sample reaches what it is meant to: many products, an EU-qualified one, a set compareAtPrice
    expect(products).toBeGreaterThan(20);
    expect(eu.data.products.some((p: Json) => p.euQualified === true && p.merchant.verificationLevel === "PREMIUM")).toBe(true);
    const headphones = (await srv.json(`/api/v1/agent/products/${P.headphones}`, { headers: H })).body.data;
    expect(headphones.variants.length).toBeGreaterThan(0);
    expect(typeof headphones.compareAtPrice).toBe("number");
  }, 30_000);

  test("the checker sees a field the model leaves out and a value outside an enum", () => {
    const sample = { ...Object.fromEntries(SPEC_PRODUCT_SUMMARY.map((f) => [f, null])) };
    expect(problems(searchProduct(), { ...sample, extra: 1 }, "", true)).toContain(".extra: sent but not described");
    const merchant = { slug: "s", name: "n", trustScore: 0.5, verificationLevel: "QUALIFIED", storeStatus: "active" };
    expect(problems(directoryMerchant(), merchant).join()).toContain("fits no branch");
  });
});

// ------------------------------------------------------------------------------------------------ F6: headers

const OURS = ["x-request-id", "x-agent-commerce", "x-initiated-by", "x-ai-act-transparency", "x-ratelimit-limit", "x-ratelimit-remaining", "x-ratelimit-reset", "retry-after", "www-authenticate", "location"];

describe("response headers are declared (A2-F6)", () => {
  test("every response declares X-Request-Id and the transparency headers; writes X-AI-Act-Transparency; every route but health X-RateLimit-*; every 429 Retry-After", () => {
    const missing: string[] = [];
    for (const { method, path, op: o } of operations()) {
      for (const [status, r] of Object.entries(o.responses)) {
        const names = Object.keys(r.headers ?? {});
        const want = ["X-Request-Id", "X-Agent-Commerce", "X-Initiated-By"];
        if (!["GET", "HEAD", "OPTIONS"].includes(method)) want.push("X-AI-Act-Transparency");
        if (path !== "/api/v1/health") want.push("X-RateLimit-Limit", "X-RateLimit-Remaining", "X-RateLimit-Reset");
        if (status === "429" || status === "503") want.push("Retry-After");
        for (const w of want) if (!names.includes(w)) missing.push(`${method} ${path} ${status}: ${w}`);
        for (const h of Object.values(r.headers ?? {})) if (!deref(h).schema) missing.push(`${method} ${path} ${status}: a header without a schema`);
      }
    }
    expect(missing).toEqual([]);
    // the health probe has no rate-limit layer: nothing is declared that is never sent
    expect(Object.keys(op("GET", "/api/v1/health").responses["200"]!.headers!)).not.toContain("X-RateLimit-Limit");
  });

  test("real answers: each required declared header is sent with a value its schema admits, and each of ours sent is declared", async () => {
    const H = key.headers;
    const auth = { authorization: `Bearer ${bearer}` };
    const found: string[] = [];
    const statuses = new Set<number>();
    function compare(method: string, template: string, status: number, headers: Headers) {
      statuses.add(status);
      const r = op(method, template).responses[String(status)];
      if (!r) return found.push(`${method} ${template}: ${status} not documented`);
      const declared = Object.fromEntries(Object.entries(r.headers ?? {}).map(([k, v]) => [k.toLowerCase(), deref(v)]));
      for (const [name, h] of Object.entries(declared)) {
        const value = headers.get(name);
        if (value === null) {
          if (h.required) found.push(`${method} ${template} ${status}: ${name} declared required, not sent`);
          continue;
        }
        const typed = h.schema.type === "integer" ? (/^\d+$/.test(value) ? Number(value) : value) : value;
        for (const p of problems(h.schema, typed, name)) found.push(`${method} ${template} ${status}: ${p}`);
      }
      for (const name of OURS) if (headers.get(name) !== null && !declared[name]) found.push(`${method} ${template} ${status}: ${name} sent, not declared`);
    }
    async function call(method: string, template: string, url: string, init: JsonInit = {}) {
      const r = await srv.json(url, { ...init, method, redirect: "manual" });
      compare(method, template, r.status, r.headers);
      return r;
    }
    await call("GET", "/api/v1/health", "/api/v1/health");
    await call("POST", "/api/v1/agent/search", "/api/v1/agent/search", { headers: H, body: { query: "skillet" } });
    await call("POST", "/api/v1/agent/search", "/api/v1/agent/search", { body: { query: "skillet" } }); // 401 + WWW-Authenticate
    await call("POST", "/api/v1/agent/search", "/api/v1/agent/search", { headers: H, body: { query: 5 } }); // 400
    await call("GET", "/api/v1/agent/products/{id}", `/api/v1/agent/products/${P.skillet}`, { headers: H });
    await call("GET", "/api/v1/agent/products/{id}", `/api/v1/agent/products/${ZERO}`, { headers: H }); // 404
    await call("POST", "/api/v1/agent/cart", "/api/v1/agent/cart", { headers: H, body: { items: [{ product_id: P.skillet, quantity: 1 }] } }); // 201
    await call("GET", "/api/v1/agent/docs", "/api/v1/agent/docs"); // 302 + Location
    await call("GET", "/docs/errors", "/docs/errors"); // HTML
    await call("POST", "/api/v1/auth/login", "/api/v1/auth/login", { body: { email: "nobody@example.com", password: "wrong-password" } }); // 401
    await call("GET", "/api/v1/merchant/stores/{slug}/orders", "/api/v1/merchant/stores/demo-store/orders", { headers: auth });
    await call("GET", "/api/v1/merchant/stores/{slug}/orders", "/api/v1/merchant/stores/demo-store/orders", { headers: { authorization: "Bearer nope" } }); // 401
    await call("GET", "/api/v1/merchants", "/api/v1/merchants");
    // 413 on a declared Content-Length: refused before admission, so without X-RateLimit-* (declared, not required)
    const big = await rawRequest(srv, `POST /api/v1/agent/search HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nX-Agent-Api-Key: ${key.key}\r\nContent-Length: 99999999\r\nConnection: close`, "{}");
    const [head] = big.split("\r\n\r\n");
    const lines = head!.split("\r\n");
    const rawHeaders = new Headers(lines.slice(1).map((l) => [l.slice(0, l.indexOf(":")), l.slice(l.indexOf(":") + 1).trim()] as [string, string]));
    compare("POST", "/api/v1/agent/search", Number(lines[0]!.split(" ")[1]), rawHeaders);
    // 429 with Retry-After: the public routes allow 30 a minute per address (a fixed window: 70 calls pass a reset too)
    let limited: Awaited<ReturnType<typeof call>> | undefined;
    for (let i = 0; i < 70 && !limited; i++) {
      const r = await call("GET", "/api/v1/stores/{slug}/trust-score", "/api/v1/stores/demo-store/trust-score");
      if (r.status === 429) limited = r;
    }
    expect(found).toEqual([]);
    expect(limited?.headers.get("retry-after")).toMatch(/^\d+$/);
    for (const s of [200, 201, 302, 400, 401, 404, 413, 429]) expect(statuses).toContain(s);
  }, 60_000);
});

// ------------------------------------------------------------------------------------------------ checkout answers

describe("the checkout's answers an agent must act on are described (audit AX F2)", () => {
  const checkout = () => op("POST", "/api/v1/agent/checkout");
  const said = (status: number) => checkout().responses[String(status)]!.description ?? "";

  test("409 names coupon_exhausted with its store_id and coupon_code beside the other STATE_EXECUTION_BLOCKED reasons", () => {
    expect(said(409)).toStartWith("STATE_EXECUTION_BLOCKED: details.reasons[].code names what changed, e.g. out_of_stock, price_beyond_cut, or coupon_exhausted (with store_id and coupon_code");
    expect(said(409)).toContain("Codes: ");
  });

  test("503 names details.status SETTLEMENT_UNKNOWN and says to call again with the same idempotency_key, without signing again", () => {
    expect(said(503)).toStartWith("UPSTREAM_UNAVAILABLE with details.status SETTLEMENT_UNKNOWN");
    expect(said(503)).toContain("call again with the same idempotency_key, and on x402 do not sign again");
  });

  test("x402_payload is described, and a request with two payment headers gets the 400 the document describes (details.payment_sources)", async () => {
    expect(bodySchemaOf("POST", "/api/v1/agent/checkout").properties.x402_payload.description).toStartWith("x402 v2 PaymentPayload");
    expect(said(400)).toContain("both headers count as two) are INVALID_ARGUMENT with details.payment_sources");
    const cart = await srv.json("/api/v1/agent/cart", { method: "POST", headers: key.headers, body: { items: [{ product_id: P.skillet, quantity: 1 }] } });
    expect(cart.status).toBe(201);
    const x402Config = { merchant_wallet_address: "0x0000000000000000000000000000000000000001", network: "eip155:84532", facilitator_url: "https://facilitator.example" };
    const r = await srv.json("/api/v1/agent/checkout", {
      method: "POST",
      headers: { ...key.headers, "PAYMENT-SIGNATURE": "e30=", "X-PAYMENT": "e30=" },
      body: { cartId: cart.body.data.id, payment_rail: "x402", x402_config: x402Config, idempotency_key: crypto.randomUUID() },
    });
    expect({ status: r.status, code: r.body.code, details: r.body.details }).toEqual({
      status: 400,
      code: "INVALID_ARGUMENT",
      details: { field: "x402_payload", payment_sources: ["PAYMENT-SIGNATURE", "X-PAYMENT"] },
    });
    expect(checkout().responses["400"]!["x-error-codes"]).toContain("INVALID_ARGUMENT");
  });
});
