/**
 * The strict request contract of /api/v1 (REST audit; security audit C-6), through HTTP
 * against the real service: a JSON body's numbers are JSON numbers, query numbers are plain decimals, every 401 has
 * a challenge, bodies are JSON objects sent as JSON, HEAD is GET without a body, a query parameter comes once, and a
 * secret field's value is never quoted back.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { SESSION_AUDIENCE, tokenService } from "../../gateway/identity.ts";
import { ALL_SCOPES, createKey, login, placeOrder, type TestKey } from "../helpers/agents.ts";
import { startServer, type TestServer } from "../helpers/server.ts";

const BOARD = "5befd987-79cd-540c-8a5d-2ba5a30aed41"; // demo-store DS-0011, in stock
const SHIRT = "c475113d-5486-5006-876c-e52a7ac49b33"; // northwind-outfitters

let srv: TestServer;
let key: TestKey;
let admin: string;

beforeAll(async () => {
  srv = await startServer({ seed: true });
  admin = await login(srv);
  key = await createKey(srv, { scopes: ALL_SCOPES, tier: "ENTERPRISE", token: admin });
}, 120_000);
afterAll(async () => {
  await srv?.stop();
});

const post = (path: string, body: unknown, headers: Record<string, string> = key.headers) => srv.json(path, { method: "POST", headers, body });
const raw = (path: string, body: string | FormData, contentType: string | null, headers: Record<string, string> = key.headers) =>
  srv.json(path, { method: "POST", headers: { ...headers, ...(contentType ? { "content-type": contentType } : {}) }, body });

describe("A-2: a JSON body's numbers are JSON numbers", () => {
  for (const amount of ["0x10", "1e2", " 150", "12.0", "100"]) {
    test(`a refund amount sent as the string ${JSON.stringify(amount)} is 400 naming the field, and nothing is refunded`, async () => {
      const id = await placeOrder(srv, key, BOARD);
      const r = await post(`/api/v1/agent/orders/${id}/refund`, { amount });
      expect(r.status).toBe(400);
      expect(r.body).toMatchObject({ success: false, code: "validation_error", details: { location: "body", field: "amount", type: "integer", minimum: 1 } });
      expect(r.body.error).toBe(`Invalid body field 'amount': must be an integer ≥ 1 (got ${JSON.stringify(amount)})`);
      expect((await srv.db.sql`SELECT id FROM order_refunds WHERE order_id = ${id}`).length).toBe(0);
    });
  }

  test("a refund amount sent as a JSON number is still a partial refund of that many cents", async () => {
    const id = await placeOrder(srv, key, BOARD);
    const r = await post(`/api/v1/agent/orders/${id}/refund`, { amount: 100 });
    expect(r.status).toBe(201);
    expect(r.body.data.amount_minor).toBe(100);
  });

  test("a cart quantity sent as a string is 400 naming items.0.quantity; as a number the cart is created", async () => {
    const bad = await post("/api/v1/agent/cart", { items: [{ product_id: BOARD, quantity: "2" }] });
    expect(bad.status).toBe(400);
    expect(bad.body).toMatchObject({ code: "validation_error", details: { location: "body", field: "items.0.quantity", type: "integer" } });
    const good = await post("/api/v1/agent/cart", { items: [{ product_id: BOARD, quantity: 2 }] });
    expect(good.status).toBe(201);
  });

  for (const [field, value] of [["limit", "1e2"], ["limit", " 5"], ["limit", "5"], ["page", "2"]] as const) {
    test(`search ${field} sent as the string ${JSON.stringify(value)} is 400 naming ${field}`, async () => {
      const r = await post("/api/v1/agent/search", { query: "shirt", [field]: value });
      expect(r.status).toBe(400);
      expect(r.body).toMatchObject({ code: "validation_error", details: { location: "body", field, type: "integer" } });
    });
  }

  test("search limit and page sent as numbers are served", async () => {
    const r = await post("/api/v1/agent/search", { query: "shirt", limit: 5, page: 2 });
    expect(r.status).toBe(200);
    expect(r.body.success).toBe(true);
  });

  test("a query-string integer is read from plain decimal digits only", async () => {
    for (const page of ["0x2", "1e1", "%202", "2.0"]) {
      const r = await srv.json(`/api/v1/merchants?page=${page}`);
      expect(r.status).toBe(400);
      expect(r.body).toMatchObject({ code: "validation_error", details: { location: "query", field: "page" } });
    }
    const ok = await srv.json("/api/v1/merchants?page=1&limit=3");
    expect(ok.status).toBe(200);
    expect(ok.body.meta).toMatchObject({ page: 1, limit: 3 });
  });

  test("the OpenAPI document declares body integers as plain integers, without the numeric-string alternative", async () => {
    const doc = (await srv.json("/api/v1/openapi.json")).body;
    const limit = doc.paths["/api/v1/agent/search"].post.requestBody.content["application/json"].schema.properties.limit;
    expect(limit.type).toBe("integer");
    expect(JSON.stringify(limit)).not.toContain('"string"');
  });
});

describe("A-3: every REST 401 carries WWW-Authenticate", () => {
  test("an agent route without a key, or with a wrong one, challenges for the X-Agent-Api-Key header", async () => {
    for (const headers of [{}, { "x-agent-api-key": "agnt_notakey" }] as Record<string, string>[]) {
      const r = await post("/api/v1/agent/search", { query: "shirt" }, headers);
      expect(r.status).toBe(401);
      expect(r.body.code).toBe("unauthorized");
      expect(r.headers.get("www-authenticate")).toBe('ApiKey realm="api", header="X-Agent-Api-Key"');
    }
  });

  test("a JWT route without a token gets a Bearer challenge without an error; with a bad token error=invalid_token", async () => {
    const none = await srv.json("/api/v1/agent-keys");
    expect(none.status).toBe(401);
    expect(none.headers.get("www-authenticate")).toBe('Bearer realm="api"');
    const bad = await srv.json("/api/v1/agent-keys", { headers: { authorization: "Bearer not.a.jwt" } });
    expect(bad.status).toBe(401);
    expect(bad.headers.get("www-authenticate")).toBe('Bearer realm="api", error="invalid_token"');
  });

  test("an expired session token is 401 token_expired with error_description in the challenge", async () => {
    const tokens = await tokenService(srv.running.services);
    const t = await tokens.issueToken({ sub: crypto.randomUUID(), aud: SESSION_AUDIENCE, ttlSeconds: 1, extra: { role: "operator", email: "x@example.com" } });
    await Bun.sleep(2_100);
    const r = await srv.json("/api/v1/merchant/stores/demo-store/orders", { headers: { authorization: `Bearer ${t}` } });
    expect(r.status).toBe(401);
    expect(r.body.code).toBe("token_expired");
    expect(r.headers.get("www-authenticate")).toBe('Bearer realm="api", error="invalid_token", error_description="The token has expired"');
  });

  test("the OpenAPI document declares the WWW-Authenticate header on agent and session 401s", async () => {
    const doc = (await srv.json("/api/v1/openapi.json")).body;
    for (const op of [doc.paths["/api/v1/agent/search"].post, doc.paths["/api/v1/agent-keys"].get]) {
      expect(op.responses["401"].headers["WWW-Authenticate"].schema).toEqual({ type: "string" });
    }
  });

  test("MCP keeps its own challenge with resource_metadata", async () => {
    const r = await srv.fetch("/demo-store/mcp", {
      method: "POST",
      headers: { "content-type": "application/json", accept: "application/json, text/event-stream" },
      body: JSON.stringify({ jsonrpc: "2.0", id: 1, method: "tools/call", params: { name: "create_cart", arguments: { items: [{ product_id: BOARD, quantity: 1 }] } } }),
    });
    expect(r.status).toBe(401);
    expect(r.headers.get("www-authenticate")).toContain(`resource_metadata="${srv.url}/.well-known/oauth-protected-resource/demo-store/mcp"`);
    expect(r.headers.get("www-authenticate")).not.toContain("X-Agent-Api-Key");
  });
});

describe("A-4: /api/v1 bodies are JSON", () => {
  const refused = (contentType: string) => ({
    success: false,
    code: "validation_error",
    details: { location: "body", contentType, expectedContentType: "application/json" },
  });

  test("a form-encoded search is 400 saying the body must be JSON, as text/plain is", async () => {
    for (const type of ["application/x-www-form-urlencoded", "text/plain"]) {
      const r = await raw("/api/v1/agent/search", type === "text/plain" ? '{"query":"shirt"}' : "query=shirt", type);
      expect(r.status).toBe(400);
      expect(r.body).toMatchObject(refused(type));
      expect(r.body.error).toBe(`Invalid body: the request body must be JSON sent with Content-Type: application/json (Content-Type was '${type}')`);
    }
  });

  test("a multipart search is 400 saying the body must be JSON", async () => {
    const form = new FormData();
    form.set("query", "shirt");
    const r = await srv.fetch("/api/v1/agent/search", { method: "POST", headers: key.headers, body: form });
    expect(r.status).toBe(400);
    const body = (await r.json()) as { code: string; details: { contentType: string } };
    expect(body.code).toBe("validation_error");
    expect(body.details.contentType).toStartWith("multipart/form-data");
  });

  test("a form-encoded login is refused and mints no token", async () => {
    const r = await raw("/api/v1/auth/login", "email=admin%40example.com&password=admin-password", "application/x-www-form-urlencoded", {});
    expect(r.status).toBe(400);
    expect(r.body).toMatchObject(refused("application/x-www-form-urlencoded"));
  });

  test("a refund with a JSON body sent as text/plain or form-encoded is refused, and nothing is refunded", async () => {
    const id = await placeOrder(srv, key, BOARD);
    for (const [body, type] of [['{"amount":100}', "text/plain"], ["amount=100", "application/x-www-form-urlencoded"]] as const) {
      const r = await raw(`/api/v1/agent/orders/${id}/refund`, body, type);
      expect(r.status).toBe(400);
      expect(r.body).toMatchObject(refused(type));
    }
    expect((await srv.db.sql`SELECT id FROM order_refunds WHERE order_id = ${id}`).length).toBe(0);
  });

  test("an empty optional body is no body whatever its content type (curl -d '' sends a form type)", async () => {
    const id = await placeOrder(srv, key, BOARD);
    const r = await raw(`/api/v1/agent/orders/${id}/refund`, "", "application/x-www-form-urlencoded");
    expect(r.status).toBe(201);
  });

  test("the OAuth token endpoint still takes its form body; register refuses one with an RFC 7591 error", async () => {
    const token = await raw("/api/v1/oauth/token", "grant_type=client_credentials", "application/x-www-form-urlencoded", {});
    expect(token.body.error).not.toBe("validation_error");
    expect(["invalid_client", "invalid_request", "unauthorized_client"]).toContain(token.body.error);
    const reg = await raw("/api/v1/oauth/register", "redirect_uris=https%3A%2F%2Fexample.com%2Fcb", "application/x-www-form-urlencoded", {});
    expect(reg.status).toBe(400);
    expect(reg.body.error).toBe("invalid_client_metadata");
    expect(reg.body.error_description).toBe("the body must be JSON sent with Content-Type: application/json");
  });

  test("the OpenAPI document offers only application/json bodies on the JSON routes, form bodies on the OAuth ones", async () => {
    const doc = (await srv.json("/api/v1/openapi.json")).body;
    expect(Object.keys(doc.paths["/api/v1/agent/search"].post.requestBody.content)).toEqual(["application/json"]);
    expect(Object.keys(doc.paths["/api/v1/auth/login"].post.requestBody.content)).toEqual(["application/json"]);
    expect(Object.keys(doc.paths["/api/v1/oauth/token"].post.requestBody.content)).toEqual(["application/x-www-form-urlencoded"]);
  });
});

describe("A-5: HEAD on a keyed agent GET route is GET without the body", () => {
  test("HEAD on a product answers 200 with GET's headers and length and no body", async () => {
    const get = await srv.fetch(`/api/v1/agent/products/${SHIRT}`, { headers: key.headers });
    const getBody = await get.text();
    const head = await srv.fetch(`/api/v1/agent/products/${SHIRT}`, { method: "HEAD", headers: key.headers });
    expect(head.status).toBe(200);
    expect(await head.text()).toBe("");
    expect(head.headers.get("content-type")).toBe(get.headers.get("content-type"));
    expect(head.headers.get("content-length")).toBe(String(Buffer.byteLength(getBody)));
    expect(head.headers.get("x-ratelimit-limit")).not.toBeNull();
  });

  test("HEAD needs what GET needs: no key is 401, a key without the scope is 403", async () => {
    const none = await srv.fetch(`/api/v1/agent/products/${SHIRT}`, { method: "HEAD" });
    expect(none.status).toBe(401);
    const compareOnly = await createKey(srv, { scopes: ["compare"], token: admin });
    const forbidden = await srv.fetch(`/api/v1/agent/products/${SHIRT}`, { method: "HEAD", headers: compareOnly.headers });
    expect(forbidden.status).toBe(403);
  });
});

describe("A-9: bodies that are not objects, repeated query parameters", () => {
  for (const body of ["[]", "null", "42", '"shirt"']) {
    test(`a ${body} body is "must be a JSON object" on a required and on an optional body`, async () => {
      for (const path of ["/api/v1/agent/search", "/api/v1/agent/wallet/provision"]) {
        const r = await raw(path, body, "application/json");
        expect(r.status).toBe(400);
        expect(r.body).toMatchObject({ success: false, code: "validation_error", details: { location: "body", type: "object" } });
        expect(r.body.error).toStartWith("Invalid body: must be a JSON object (got ");
      }
    });
  }

  test("a query parameter given twice is 400 naming it; once is served", async () => {
    const twice = await srv.json("/api/v1/merchants?page=1&page=2");
    expect(twice.status).toBe(400);
    expect(twice.body).toEqual({
      success: false,
      code: "validation_error",
      error: "Invalid query field 'page': given more than once; send each query parameter once",
      details: { location: "query", field: "page", errors: [{ field: "page", message: "given more than once; send each query parameter once" }] },
    });
    const keyed = await srv.json(`/api/v1/agent/products/${SHIRT}/price-history?days=45&days=30`, { headers: key.headers });
    expect(keyed.status).toBe(400);
    expect(keyed.body.details).toMatchObject({ location: "query", field: "days" });
    const once = await srv.json(`/api/v1/agent/products/${SHIRT}/price-history?days=30`, { headers: key.headers });
    expect(once.status).toBe(200);
  });
});

describe("C-6: a secret field's value is never quoted back", () => {
  test("an over-long password is 400 naming the field and the rule, without any of the password", async () => {
    const password = "S3cretHorse".repeat(200);
    const r = await post("/api/v1/auth/login", { email: "a@b.example", password }, {});
    expect(r.status).toBe(400);
    expect(r.body.details.field).toBe("password");
    const text = JSON.stringify(r.body);
    expect(text).not.toContain("S3cretHorse");
    expect(r.body.error).toContain("(got a string of 2200 characters, not shown)");
  });

  test("other fields still quote the value they got", async () => {
    const r = await post("/api/v1/agent/search", { query: "shirt", limit: "lots" });
    expect(r.body.error).toContain('(got "lots")');
  });
});
