/**
 * Validation answers that tell an agent what to send (audit E): the field, the rule it broke, and the rule as data
 * (`details.allowed` for enums, `details.minimum`/`maximum` for numbers, `minLength`/`maxLength` for strings), for
 * body, query-string and path values alike; unknown search filters refused; bounded echoes; 405 for a wrong method.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { ALL_SCOPES, createKey, login, type TestKey } from "../helpers/agents.ts";
import { startServer, type TestServer } from "../helpers/server.ts";

let srv: TestServer;
let key: TestKey;
const ZERO_UUID = "00000000-0000-4000-8000-000000000000";
const SORTS = ["relevance", "price_asc", "price_desc", "trust_score", "newest"];
const LEVELS = ["BASIC", "STANDARD", "PREMIUM", "QUALIFIED"];
const FILTERS = ["minPrice", "maxPrice", "category", "inStock", "minTrustScore", "verificationLevel"];

beforeAll(async () => {
  srv = await startServer({ seed: true, config: { RATE_LIMITS_ENABLED: false } });
  key = await createKey(srv, { scopes: ALL_SCOPES, tier: "ENTERPRISE", token: await login(srv), name: "validation messages" });
}, 60_000);
afterAll(async () => {
  await srv.stop();
});

const search = (body: unknown) => srv.json("/api/v1/agent/search", { method: "POST", headers: key.headers, body });

/** The whole 400 a schema rule produces: message, field and facts, exactly. */
function rule400(location: string, field: string, what: string, facts: Record<string, unknown> = {}) {
  return {
    success: false,
    code: "validation_error",
    error: `Invalid ${location} field '${field}': ${what}`,
    details: { location, field, ...facts, errors: [{ field, message: what }] },
  };
}

describe("a JSON request without a body", () => {
  test("on a route whose body is an object says it must be an object (missing), not (got undefined) (session 22, helper A)", async () => {
    const r = await srv.fetch("/api/v1/agent/cart", { method: "POST", headers: { ...key.headers, "content-type": "application/json" } });
    expect(r.status).toBe(400);
    expect(await r.json()).toEqual({
      success: false,
      code: "validation_error",
      error: "Invalid body: must be an object (missing)",
      details: { location: "body", type: "object", errors: [{ message: "must be an object (missing)" }] },
    });
  });
});

describe("enum and number failures name the field, the rule and its bounds", () => {
  test("an unknown sort is 400 listing the allowed sorts in the message and in details.allowed", async () => {
    const r = await search({ query: "shoes", sort: "cheapest" });
    expect(r.status).toBe(400);
    expect(r.body).toEqual(
      rule400("body", "sort", `must be one of 'relevance', 'price_asc', 'price_desc', 'trust_score', 'newest' (got "cheapest")`, { allowed: SORTS }),
    );
  });

  test("a lower-case verificationLevel filter is 400 listing the four levels", async () => {
    const r = await search({ query: "shoes", filters: { verificationLevel: "basic" } });
    expect(r.status).toBe(400);
    expect(r.body).toEqual(
      rule400("body", "filters.verificationLevel", `must be one of 'BASIC', 'STANDARD', 'PREMIUM', 'QUALIFIED' (got "basic")`, { allowed: LEVELS }),
    );
  });

  test("limit 0 and limit 'abc' say an integer ≥ 1 with details.minimum", async () => {
    const zero = await search({ query: "shoes", limit: 0 });
    expect(zero.status).toBe(400);
    expect(zero.body).toEqual(rule400("body", "limit", "must be an integer ≥ 1 (got 0)", { type: "integer", minimum: 1 }));
    const abc = await search({ query: "shoes", limit: "abc" });
    expect(abc.status).toBe(400);
    expect(abc.body).toEqual(rule400("body", "limit", `must be an integer ≥ 1 (got "abc")`, { type: "integer", minimum: 1 }));
  });

  test("page 0, page 1.5 and page 1e308 say an integer from 1 to 10000, and page 10000 is served", async () => {
    for (const [page, shown] of [
      [0, "0"],
      [1.5, "1.5"],
      [1e308, "1e+308"],
      [10_001, "10001"],
    ] as const) {
      const r = await search({ query: "shoes", page });
      expect(r.status).toBe(400);
      expect(r.body).toEqual(rule400("body", "page", `must be an integer from 1 to 10000 (got ${shown})`, { type: "integer", minimum: 1, maximum: 10_000 }));
    }
    const last = await search({ query: "shoes", page: 10_000 });
    expect(last.status).toBe(200);
    expect(last.body.data.meta.page).toBe(10_000);
  });

  test("a negative minPrice and a minTrustScore above 1 name their bounds", async () => {
    const neg = await search({ query: "shoes", filters: { minPrice: -1 } });
    expect(neg.body).toEqual(rule400("body", "filters.minPrice", "must be a number ≥ 0 (got -1)", { type: "number", minimum: 0 }));
    const trust = await search({ query: "shoes", filters: { minTrustScore: 2 } });
    expect(trust.body).toEqual(rule400("body", "filters.minTrustScore", "must be a number from 0 to 1 (got 2)", { type: "number", minimum: 0, maximum: 1 }));
  });

  test("a refund amount of 0 or 1.5 says integer cents ≥ 1", async () => {
    for (const [amount, shown] of [
      [0, "0"],
      [1.5, "1.5"],
    ] as const) {
      const r = await srv.json(`/api/v1/agent/orders/${ZERO_UUID}/refund`, { method: "POST", headers: key.headers, body: { amount } });
      expect(r.status).toBe(400);
      expect(r.body).toEqual(rule400("body", "amount", `must be an integer ≥ 1 (got ${shown})`, { type: "integer", minimum: 1 }));
    }
  });

  test("a cart quantity of 0, or any numeric string (a body's numbers are JSON numbers), names the item's field and the 1..10000 bound", async () => {
    for (const [quantity, got] of [[0, "0"], ["0", '"0"'], ["2", '"2"']] as const) {
      const r = await srv.json("/api/v1/agent/cart", { method: "POST", headers: key.headers, body: { items: [{ product_id: ZERO_UUID, quantity }] } });
      expect(r.status).toBe(400);
      expect(r.body).toEqual(rule400("body", "items.0.quantity", `must be an integer from 1 to 10000 (got ${got})`, { type: "integer", minimum: 1, maximum: 10_000 }));
    }
  });

  test("query-string bounds name the query field: limit=0, page=-1 and limit=abc on the merchant directory", async () => {
    const zero = await srv.json("/api/v1/merchants?limit=0");
    expect(zero.status).toBe(400);
    expect(zero.body).toEqual(rule400("query", "limit", "must be an integer ≥ 1 (got 0)", { type: "integer", minimum: 1 }));
    const neg = await srv.json("/api/v1/merchants?limit=5&page=-1");
    expect(neg.status).toBe(400);
    expect(neg.body).toEqual(rule400("query", "page", "must be an integer from 1 to 10000 (got -1)", { type: "integer", minimum: 1, maximum: 10_000 }));
    const abc = await srv.json("/api/v1/merchants?limit=abc");
    expect(abc.status).toBe(400);
    expect(abc.body).toEqual(rule400("query", "limit", `must be an integer ≥ 1 (got "abc")`, { type: "integer", minimum: 1 }));
  });

  test("a path parameter that is not a uuid names the params field", async () => {
    const r = await srv.json("/api/v1/agent/products/not-a-uuid", { headers: key.headers });
    expect(r.status).toBe(400);
    expect(r.body).toMatchObject({ code: "validation_error", details: { location: "params", field: "id" } });
    expect(r.body.error).toStartWith("Invalid params field 'id':");
  });
});

describe("unknown search filters are refused", () => {
  test("filters.max_price is 400 naming the key and every allowed filter, not an unfiltered 200", async () => {
    const r = await search({ query: "shoes", filters: { max_price: 10 } });
    expect(r.status).toBe(400);
    expect(r.body).toEqual({
      success: false,
      code: "validation_error",
      error: `Invalid body field 'filters.max_price': unknown filter; allowed: ${FILTERS.join(", ")}`,
      details: { location: "body", field: "filters.max_price", allowed: FILTERS },
    });
  });

  test("a long unknown filter name is echoed only up to 100 characters", async () => {
    const name = "x".repeat(5_000);
    const r = await search({ query: "shoes", filters: { [name]: 1 } });
    expect(r.status).toBe(400);
    expect(r.body.details.field).toBe(`filters.${"x".repeat(100)}…`);
    expect(JSON.stringify(r.body).length).toBeLessThan(1_000);
  });

  test("the known filters still search, and a caller without a key still gets 401 before the filter check", async () => {
    const ok = await search({ query: "shoes", filters: { maxPrice: 140, inStock: true } });
    expect(ok.status).toBe(200);
    for (const p of ok.body.data.products) expect(p.price).toBeLessThanOrEqual(140);
    const anon = await srv.json("/api/v1/agent/search", { method: "POST", body: { query: "shoes", filters: { max_price: 10 } } });
    expect(anon.status).toBe(401);
    expect(anon.body.code).toBe("unauthorized");
  });
});

describe("bounds", () => {
  test("the search query says 1 to 500 characters for an empty, a 501- and a 1001-character query alike", async () => {
    for (const [query, shown] of [
      ["", `""`],
      ["a".repeat(501), JSON.stringify(`${"a".repeat(100)}…`)],
      ["a".repeat(1_001), JSON.stringify(`${"a".repeat(100)}…`)],
    ] as const) {
      const r = await search({ query });
      expect(r.status).toBe(400);
      expect(r.body).toEqual(rule400("body", "query", `must be a string of 1 to 500 characters (got ${shown})`, { type: "string", minLength: 1, maxLength: 500 }));
    }
    // characters are code points: 500 emoji (1,000 UTF-16 units) are 500 characters
    expect((await search({ query: "😀".repeat(500) })).status).toBe(200);
    expect((await search({ query: "😀".repeat(501) })).status).toBe(400);
  });

  test("the OpenAPI document states the bounds the server applies", async () => {
    const doc = await srv.json("/api/v1/openapi.json");
    const schema = doc.body.paths["/api/v1/agent/search"].post.requestBody.content["application/json"].schema;
    expect(schema.properties.query).toMatchObject({ type: "string", minLength: 1, maxLength: 500 });
    expect(schema.properties.page).toMatchObject({ minimum: 1, maximum: 10_000 });
    expect(schema.properties.filters.properties.category).toMatchObject({ type: "string", maxLength: 200 });
    expect(schema.properties.filters.additionalProperties).toBe(false);
  });

  test("filters.category is bounded at 200 characters instead of being echoed whole", async () => {
    const long = await search({ query: "shoes", filters: { category: "c".repeat(100_000) } });
    expect(long.status).toBe(400);
    expect(long.body).toEqual(
      rule400("body", "filters.category", `must be a string of at most 200 characters (got ${JSON.stringify(`${"c".repeat(100)}…`)})`, { type: "string", maxLength: 200 }),
    );
    const fits = await search({ query: "shoes", filters: { category: "c".repeat(200) } });
    expect(fits.status).toBe(200);
  });

  test("a caller's 20,000-character object key is echoed in the 400 only up to 100 characters, in the message and both fields", async () => {
    const long = "k".repeat(20_000);
    const r = await srv.json("/api/v1/agent/checkout", {
      method: "POST",
      headers: { ...key.headers, "idempotency-key": crypto.randomUUID() },
      body: { cartId: ZERO_UUID, payment_method: "tok_visa", payment_methods: { [long]: "" } },
    });
    expect(r.status).toBe(400);
    expect(r.body).toEqual(
      rule400("body", `payment_methods.${"k".repeat(100)}…`, `must be a string of 1 to 100 characters (got "")`, { type: "string", minLength: 1, maxLength: 100 }),
    );
    expect(JSON.stringify(r.body).length).toBeLessThan(1_000);
  });

  test("a JSON body sent as text/plain is 400 saying the body must be application/json", async () => {
    const res = await srv.fetch("/api/v1/agent/search", { method: "POST", headers: { ...key.headers, "content-type": "text/plain" }, body: `{"query":"shoes"}` });
    expect(res.status).toBe(400);
    const what = "the request body must be JSON sent with Content-Type: application/json (Content-Type was 'text/plain')";
    expect(await res.json()).toEqual({
      success: false,
      code: "validation_error",
      error: `Invalid body: ${what}`,
      details: { location: "body", contentType: "text/plain", expectedContentType: "application/json", errors: [{ message: what }] },
    });
    const json = await srv.fetch("/api/v1/agent/search", { method: "POST", headers: { ...key.headers, "content-type": "application/json; charset=utf-8" }, body: `{"query":"shoes"}` });
    expect(json.status).toBe(200);
  });

  test("a route with an optional body refuses text/plain with the same answer, and blames the field of a JSON body", async () => {
    const path = `/api/v1/agent/orders/${ZERO_UUID}/refund`;
    const text = await srv.fetch(path, { method: "POST", headers: { ...key.headers, "content-type": "text/plain" }, body: `{"amount":0}` });
    expect(text.status).toBe(400);
    expect(((await text.json()) as { details: unknown }).details).toMatchObject({ location: "body", contentType: "text/plain", expectedContentType: "application/json" });
    const r = await srv.fetch(path, { method: "POST", headers: { ...key.headers, "content-type": "application/json" }, body: `{"amount":0}` });
    expect(r.status).toBe(400);
    expect(await r.json()).toEqual(rule400("body", "amount", "must be an integer ≥ 1 (got 0)", { type: "integer", minimum: 1 }));
  });

  test("a 16,000-character path id is echoed in the 404 only up to 100 characters", async () => {
    const r = await srv.json(`/api/v1/agent/availability/${"a".repeat(16_000)}`, { headers: key.headers });
    expect(r.status).toBe(404);
    expect(r.body).toEqual({
      success: false,
      code: "not_found",
      error: "Product not found or not available.",
      details: { productId: `${"a".repeat(100)}…` },
    });
  });
});

describe("a wrong method on an existing path", () => {
  test("GET on the search path is 405 method_not_allowed with Allow: POST, the envelope and the rate headers", async () => {
    const limited = await startServer({ seed: true });
    try {
      const k = await createKey(limited, { tier: "ENTERPRISE" });
      const r = await limited.json("/api/v1/agent/search", { headers: k.headers });
      expect(r.status).toBe(405);
      expect(r.headers.get("allow")).toBe("POST");
      expect(r.headers.get("x-ratelimit-limit")).not.toBeNull();
      expect(r.headers.get("x-ratelimit-remaining")).not.toBeNull();
      expect(r.body).toEqual({
        success: false,
        code: "method_not_allowed",
        error: "GET is not allowed on /api/v1/agent/search; use POST.",
        details: { method: "GET", allowed: ["POST"] },
      });
    } finally {
      await limited.stop();
    }
  }, 60_000);

  test("DELETE on the cart path lists POST, PUT on a health probe lists GET, and an unknown path is still 404", async () => {
    const cart = await srv.json("/api/v1/agent/cart", { method: "DELETE", headers: key.headers });
    expect(cart.status).toBe(405);
    expect(cart.headers.get("allow")).toBe("POST");
    expect(cart.body.code).toBe("method_not_allowed");
    const health = await srv.json("/api/v1/health", { method: "PUT" });
    expect(health.status).toBe(405);
    expect(health.headers.get("allow")).toBe("GET, HEAD");
    expect((await srv.fetch("/api/v1/health", { method: "HEAD" })).status).toBe(200);
    const none = await srv.json("/api/v1/agent/nothing-here", { headers: key.headers });
    expect(none.status).toBe(404);
    expect(none.body).toEqual({ success: false, code: "route_not_found", error: "No route for GET /api/v1/agent/nothing-here." });
  });

  test("a path with a parameter answers 405 for another method: DELETE on a product lists GET and HEAD, which is served", async () => {
    const r = await srv.json(`/api/v1/agent/products/${ZERO_UUID}`, { method: "DELETE", headers: key.headers });
    expect(r.status).toBe(405);
    expect(r.headers.get("allow")).toBe("GET, HEAD");
    expect(r.body).toEqual({
      success: false,
      code: "method_not_allowed",
      error: `DELETE is not allowed on /api/v1/agent/products/${ZERO_UUID}; use GET or HEAD.`,
      details: { method: "DELETE", allowed: ["GET", "HEAD"] },
    });
    // HEAD is answered like GET (here the same 404 status, without a body), not 405
    const head = await srv.fetch(`/api/v1/agent/products/${ZERO_UUID}`, { method: "HEAD", headers: key.headers });
    expect(head.status).toBe(404);
  });
});
