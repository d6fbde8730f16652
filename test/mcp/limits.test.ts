/** Rate limits of the spec's layers 1–3 on the MCP endpoints, with rate limits ON. */
import { afterAll, beforeAll, expect, test } from "bun:test";
import { ALL_SCOPES, createKey } from "../helpers/agents.ts";
import { startServer, type TestServer } from "../helpers/server.ts";
import { connect, DEMO, DEMO_PRODUCT, rpc } from "./helpers.ts";

let srv: TestServer;

beforeAll(async () => {
  srv = await startServer({ seed: true, config: { RATE_LIMITS_ENABLED: true } });
}, 60_000);
afterAll(async () => srv?.stop());

const call = (path: string, name: string, args: unknown, headers: Record<string, string> = {}) => rpc(srv, path, "tools/call", { name, arguments: args }, headers);

test("search_products has its own 20-per-minute bucket per key, with the headers, and a 429 carries Retry-After", async () => {
  const key = await createKey(srv, { scopes: ALL_SCOPES });
  const seen: number[] = [];
  for (let i = 0; i < 20; i++) {
    const r = await call(`/${DEMO}/mcp`, "search_products", { query: "lamp" }, key.headers);
    seen.push(r.status);
    if (i === 0) {
      expect(r.headers.get("x-ratelimit-limit")).toBe("20");
      expect(Number(r.headers.get("x-ratelimit-reset"))).toBeGreaterThan(Date.now() / 1000);
    }
  }
  expect(seen.every((s) => s === 200)).toBe(true);
  const over = await call(`/${DEMO}/mcp`, "search_products", { query: "lamp" }, key.headers);
  expect(over.status).toBe(429);
  expect(over.headers.get("retry-after")).toBeString();
  expect(over.headers.get("x-ratelimit-remaining")).toBe("0");
  expect(over.body.error.data.code).toBe("rate_limit_exceeded");
  // another tool still has room in the per-key bucket
  const other = await call(`/${DEMO}/mcp`, "get_product_details", { product_id: DEMO_PRODUCT }, key.headers);
  expect(other.status).toBe(200);
}, 60_000);

test("the per-key bucket allows 30 tool calls a minute across tools", async () => {
  const key = await createKey(srv, { scopes: ALL_SCOPES });
  let ok = 0;
  for (let i = 0; i < 30; i++) {
    const r = await call(`/${DEMO}/mcp`, "get_merchant_profile", {}, key.headers);
    if (r.status === 200) ok++;
  }
  expect(ok).toBe(30);
  const over = await call(`/${DEMO}/mcp`, "browse_categories", {}, key.headers);
  expect(over.status).toBe(429);
  expect(over.headers.get("x-ratelimit-limit")).toBe("30");
}, 60_000);

test("the keyless demo store allows 20 requests a minute per IP, and a 429 never breaks the handshake", async () => {
  let ok = 0;
  for (let i = 0; i < 20; i++) if ((await call(`/${DEMO}/mcp`, "get_return_policy", {})).status === 200) ok++;
  expect(ok).toBe(20);
  expect((await call(`/${DEMO}/mcp`, "get_return_policy", {})).status).toBe(429);
  // initialize, tools/list and ping are not counted: a new client still connects and lists tools
  const c = await connect(srv);
  try {
    expect((await c.client.listTools()).tools.length).toBe(50);
    expect(await c.client.ping()).toEqual({});
  } finally {
    await c.close();
  }
}, 60_000);

test("the discovery endpoint uses its dedicated bucket, not the per-key one", async () => {
  const key = await createKey(srv, { scopes: ALL_SCOPES });
  const r = await call(`/${DEMO}/mcp/discovery`, "get_merchant_profile", {}, key.headers);
  expect(r.status).toBe(200);
  expect(Number(r.headers.get("x-ratelimit-limit"))).toBeGreaterThanOrEqual(1000);
}, 30_000);

test("an API key on a real merchant's checkout endpoint is refused with 401", async () => {
  const key = await createKey(srv, { scopes: ALL_SCOPES });
  const r = await call(`/northwind-outfitters/mcp/checkout`, "preview_checkout", { cart_id: crypto.randomUUID() }, key.headers);
  expect(r.status).toBe(401);
  expect(r.headers.get("www-authenticate")).toContain("resource_metadata=");
}, 30_000);

test("initialize is counted in the address's global bucket (500 per 15 minutes), so one address cannot open sessions without bound", async () => {
  const init = () =>
    fetch(`${srv.url}/${DEMO}/mcp`, {
      method: "POST",
      headers: { "content-type": "application/json", accept: "application/json, text/event-stream" },
      body: JSON.stringify({ jsonrpc: "2.0", id: 0, method: "initialize", params: { protocolVersion: "2025-11-25", capabilities: {}, clientInfo: { name: "t", version: "1" } } }),
    });
  const a = await init();
  await a.text();
  expect(a.status).toBe(200);
  expect(a.headers.get("x-ratelimit-limit")).toBe("500");
  const b = await init();
  await b.text();
  expect(Number(b.headers.get("x-ratelimit-remaining"))).toBe(Number(a.headers.get("x-ratelimit-remaining")) - 1);
}, 30_000);

test("keyless calls on the demo store's discovery endpoint share the demo bucket (20/min per IP), not the 1000/min discovery one", async () => {
  const statuses: number[] = [];
  for (let i = 0; i < 45; i++) {
    const r = await call(`/${DEMO}/mcp/discovery`, "browse_categories", {});
    expect(r.headers.get("x-ratelimit-limit")).toBe("20");
    statuses.push(r.status);
  }
  // at most 20 per window, and 45 quick calls span at most two windows
  expect(statuses.filter((s) => s === 429).length).toBeGreaterThanOrEqual(5);
  // with a key the discovery endpoint keeps its own bucket
  const key = await createKey(srv, { scopes: ALL_SCOPES });
  const keyed = await call(`/${DEMO}/mcp/discovery`, "browse_categories", {}, key.headers);
  expect(keyed.status).toBe(200);
  expect(Number(keyed.headers.get("x-ratelimit-limit"))).toBeGreaterThanOrEqual(1000);
}, 60_000);
