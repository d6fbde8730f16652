/**
 * An agent route authenticates and admits the key before it looks at the request's body (REST audit M1): a caller
 * without a valid key, or whose key may not call the route, learns nothing about the route's schema and is counted
 * like any other request (rate headers on every answer).
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { createKey, login, type TestKey } from "../helpers/agents.ts";
import { startServer, type TestServer } from "../helpers/server.ts";

let srv: TestServer;
let token: string;
let enterprise: TestKey;

beforeAll(async () => {
  srv = await startServer();
  token = await login(srv);
  enterprise = await createKey(srv, { tier: "ENTERPRISE", token });
}, 60_000);
afterAll(async () => {
  await srv.stop();
});

const raw = (path: string, init: { headers?: Record<string, string>; body?: string; method?: string } = {}) =>
  srv.fetch(path, { method: init.method ?? "POST", headers: { "content-type": "application/json", ...init.headers }, body: init.body });

describe("authentication before body validation on /api/v1/agent/*", () => {
  test("no key and a body that breaks the schema: 401 unauthorized with rate headers, not 400", async () => {
    const r = await raw("/api/v1/agent/search", { body: JSON.stringify({ query: "" }) });
    expect(r.status).toBe(401);
    expect(((await r.json()) as { code: string }).code).toBe("unauthorized");
    expect(r.headers.get("x-ratelimit-limit")).not.toBeNull();
    expect(r.headers.get("x-ratelimit-remaining")).not.toBeNull();
  });

  test("no key and a body that is not JSON at all: 401, not a parse error", async () => {
    const r = await raw("/api/v1/agent/search", { body: '{"query": "lamp"' });
    expect(r.status).toBe(401);
    expect(((await r.json()) as { code: string }).code).toBe("unauthorized");
  });

  test("a wrong key and a malformed product id: 401, not 400", async () => {
    const r = await raw("/api/v1/agent/products/not-a-uuid", { method: "GET", headers: { "x-agent-api-key": "agnt_" + "x".repeat(43) } });
    expect(r.status).toBe(401);
  });

  test("requests without a key are counted per address whatever their body", async () => {
    const before = await raw("/api/v1/agent/search", { body: JSON.stringify({ query: "" }) });
    const after = await raw("/api/v1/agent/search", { body: "[" });
    expect(Number(after.headers.get("x-ratelimit-remaining"))).toBe(Number(before.headers.get("x-ratelimit-remaining")) - 1);
  });

  test("a SANDBOX key on cart creation with a broken body: 403 sandbox_not_allowed, not 400", async () => {
    const sandbox = await createKey(srv, { tier: "SANDBOX", scopes: ["search", "cart"], token });
    const r = await raw("/api/v1/agent/cart", { headers: sandbox.headers, body: JSON.stringify({ items: "x" }) });
    expect(r.status).toBe(403);
    expect(((await r.json()) as { code: string }).code).toBe("sandbox_not_allowed");
  });

  test("a key whose tier lacks the feature, with an empty body: 403 feature_not_in_tier, not 400", async () => {
    const starter = await createKey(srv, { tier: "STARTER", token });
    const r = await raw("/api/v1/agent/negotiate", { headers: starter.headers, body: "{}" });
    expect(r.status).toBe(403);
    expect(((await r.json()) as { code: string }).code).toBe("feature_not_in_tier");
  });

  test("a valid key with a broken body is 400 and still uses a unit of the key's bucket", async () => {
    const first = await raw("/api/v1/agent/search", { headers: enterprise.headers, body: JSON.stringify({ query: "" }) });
    expect(first.status).toBe(400);
    const second = await raw("/api/v1/agent/search", { headers: enterprise.headers, body: JSON.stringify({ query: "" }) });
    expect(second.status).toBe(400);
    expect(Number(second.headers.get("x-ratelimit-remaining"))).toBe(Number(first.headers.get("x-ratelimit-remaining")) - 1);
    expect(second.headers.get("x-ratelimit-limit")).toBe("10000");
  });

  test("a valid key with a valid body is answered as before", async () => {
    const r = await raw("/api/v1/agent/search", { headers: enterprise.headers, body: JSON.stringify({ query: "lamp" }) });
    expect(r.status).toBe(200);
  });
});

describe("session routes check the bearer token before the body", () => {
  test("a merchant catalog PUT without a token and with a broken body: 401, not 400", async () => {
    const r = await raw("/api/v1/merchant/stores/demo-store/catalog", { method: "PUT", body: JSON.stringify({ products: "nope" }) });
    expect(r.status).toBe(401);
    expect(((await r.json()) as { code: string }).code).toBe("unauthorized");
  });

  test("agent key creation without a token and with a broken body: 401, not 400", async () => {
    const r = await raw("/api/v1/agent-keys", { body: JSON.stringify({ name: 5 }) });
    expect(r.status).toBe(401);
  });

  test("with a session the same broken body is the 400 it always was", async () => {
    const r = await raw("/api/v1/agent-keys", { headers: { authorization: `Bearer ${token}` }, body: JSON.stringify({ name: 5 }) });
    expect(r.status).toBe(400);
  });
});
