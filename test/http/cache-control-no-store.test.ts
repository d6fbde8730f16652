/**
 * Audit A (session 16): API answers are the caller's own (a new key's once-only secret, a login token, carts, orders)
 * behind a custom auth header a shared cache cannot see, so every answer under /api carries Cache-Control: no-store,
 * errors included; the well-known documents keep their own public caching.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { ADMIN, createKey, type TestKey } from "../helpers/agents.ts";
import { startServer, type TestServer } from "../helpers/server.ts";

const SHAMPOO = "78be202c-7531-5abc-af67-04c4e6b96b7a"; // demo-store DS-0053
let srv: TestServer;
let key: TestKey;
beforeAll(async () => {
  srv = await startServer({ seed: true, config: { RATE_LIMITS_ENABLED: false } });
  key = await createKey(srv);
}, 120_000);
afterAll(async () => {
  await srv?.stop();
});

describe("API answers are never stored by a cache", () => {
  test("the health probe under /api is no-store too, though it is answered before the edge hook (session 22, helper A)", async () => {
    const health = await srv.fetch("/api/v1/health");
    expect(health.status).toBe(200);
    expect(health.headers.get("cache-control")).toBe("no-store");
  });

  test("the login answer (a bearer token) and a new agent key's answer (its secret) are no-store", async () => {
    const login = await srv.json("/api/v1/auth/login", { method: "POST", body: ADMIN });
    expect(login.status).toBe(200);
    expect(login.headers.get("cache-control")).toBe("no-store");
    const created = await srv.json("/api/v1/agent-keys", { method: "POST", headers: { authorization: `Bearer ${login.body.data.token}` }, body: { name: "cache test" } });
    expect(created.status).toBe(201);
    expect(typeof created.body.data.key).toBe("string");
    expect(created.headers.get("cache-control")).toBe("no-store");
  });

  test("a cart and its read are no-store, and so is another key's 404 for it", async () => {
    const cart = await srv.json("/api/v1/agent/cart", { method: "POST", headers: key.headers, body: { items: [{ product_id: SHAMPOO, quantity: 1 }] } });
    expect(cart.status).toBe(201);
    expect(cart.headers.get("cache-control")).toBe("no-store");
    const read = await srv.json(`/api/v1/agent/cart/${cart.body.data.id}`, { headers: key.headers });
    expect(read.status).toBe(200);
    expect(read.headers.get("cache-control")).toBe("no-store");
    const other = await createKey(srv);
    const foreign = await srv.json(`/api/v1/agent/cart/${cart.body.data.id}`, { headers: other.headers });
    expect(foreign.status).toBe(404);
    expect(foreign.headers.get("cache-control")).toBe("no-store");
  });

  test("a store's MCP endpoints answer no-store too, a protocol error and a tool answer alike (review R, session 17)", async () => {
    for (const path of ["/demo-store/mcp", "/demo-store/mcp/discovery"]) {
      const bad = await srv.fetch(path, { method: "POST", headers: { "content-type": "application/json", accept: "application/json, text/event-stream" }, body: "{" });
      expect(bad.headers.get("cache-control")).toBe("no-store");
      const list = await srv.fetch(path, {
        method: "POST",
        headers: { ...key.headers, "content-type": "application/json", accept: "application/json, text/event-stream", "mcp-protocol-version": "2025-11-25" },
        body: JSON.stringify({ jsonrpc: "2.0", id: 1, method: "tools/list" }),
      });
      expect(list.status).toBe(200);
      expect(list.headers.get("cache-control")).toBe("no-store");
    }
  });

  test("the JWKS outside /api keeps its public cache lifetime", async () => {
    const res = await srv.fetch("/.well-known/jwks.json");
    expect(res.status).toBe(200);
    expect(res.headers.get("cache-control")).toBe("public, max-age=60");
  });
});
