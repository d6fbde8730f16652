/**
 * Review H's findings on the MCP endpoints (limits off; the initialize admission is test/mcp/initialize-admission):
 *  - finding 3: the per-address session cap holds under concurrent `initialize` (a slot is reserved when the
 *    session is created, and given back when the initialize fails);
 *  - finding 1 for MCP: a too-wide message is refused before anything walks it;
 *  - N1: nlweb_ask's limit is the spec's search limit (default 20, above 100 served as 100), as search_products;
 *  - N2: a request with `id: null` is -32600 with and without a session;
 *  - N4: a platform whose TLS certificate does not verify is STORE_NOT_CONFIGURED, not a retryable outage.
 */
import { expect, test } from "bun:test";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { MAX_SESSIONS_PER_ADDRESS, type McpGateway } from "../../gateway/mcp/server.ts";
import { EXTRAS_PLATFORM_RESOLVER } from "../../gateway/mcp/tools/integrations.ts";
import { MAX_JSON_ARRAY_ITEMS } from "../../gateway/plugins/json-depth.ts";
import { useServer } from "../helpers/server.ts";
import { DEMO, DEMO_PRODUCT, rpc } from "./helpers.ts";

const srv = useServer({ seed: true, config: { RATE_LIMITS_ENABLED: false } });

const HEADERS = { "content-type": "application/json", accept: "application/json, text/event-stream" };
const INITIALIZE = { jsonrpc: "2.0", id: 0, method: "initialize", params: { protocolVersion: "2025-11-25", capabilities: {}, clientInfo: { name: "t", version: "1" } } };

function gateway(): McpGateway {
  return srv.running.services.extras.get("mcpGateway") as McpGateway;
}
/** The sessions `ip` opened on this gateway (the per-address pools are "opened <addr>" and "adopted <addr>"). */
function held(ip: string): number {
  return (gateway() as unknown as { byOwner: Map<string, Set<string>> }).byOwner.get(`opened ${ip}`)?.size ?? 0;
}
/** One initialize through the gateway in process, from `ip`: status and session id. */
async function initFrom(ip: string, message: unknown = INITIALIZE): Promise<{ status: number; sid: string | null }> {
  const out = { headers: {} as Record<string, string | number>, status: undefined as number | string | undefined };
  const res = await gateway().handle(new Request(`${srv.url}/${DEMO}/mcp`, { method: "POST", headers: HEADERS, body: JSON.stringify(message) }), DEMO, "main", ip, out);
  if (typeof res === "string") return { status: Number(out.status ?? 200), sid: null };
  await res.text();
  return { status: res.status, sid: res.headers.get("mcp-session-id") };
}

test("concurrent initializes from one address never hold more than MAX_SESSIONS_PER_ADDRESS sessions", async () => {
  const ip = "203.0.113.9";
  const results = await Promise.all(Array.from({ length: 500 }, () => initFrom(ip)));
  // 146 held for 500 concurrent before the reservation
  expect(held(ip)).toBeLessThanOrEqual(MAX_SESSIONS_PER_ADDRESS);
  expect(held(ip)).toBeGreaterThan(0);
  // every answer is a session or the 429 for "all slots are still being opened"
  for (const r of results) expect(r.status === 200 ? r.sid !== null : r.status === 429).toBe(true);
  // once the burst is over, a new initialize gets a session (closing the address's least recently used one)
  const after = await initFrom(ip);
  expect(after.status).toBe(200);
  expect(held(ip)).toBeLessThanOrEqual(MAX_SESSIONS_PER_ADDRESS);
}, 60_000);

test("a failed initialize gives its reserved slot back", async () => {
  const ip = "203.0.113.77";
  // no params: the SDK refuses the initialize, no session is made
  const bad = await Promise.all(Array.from({ length: 20 }, () => initFrom(ip, { jsonrpc: "2.0", id: 0, method: "initialize" })));
  for (const r of bad) expect(r.sid).toBeNull();
  expect(held(ip)).toBe(0);
  expect((gateway() as unknown as { byOwner: Map<string, Set<string>> }).byOwner.has(`opened ${ip}`)).toBe(false);
});

test("a message wider than the body bounds is refused -32600 before anything walks it", async () => {
  const r = await srv.fetch(`/${DEMO}/mcp`, {
    method: "POST",
    headers: HEADERS,
    body: JSON.stringify({ jsonrpc: "2.0", id: 1, method: "tools/call", params: { name: "search_products", arguments: { query: Array(MAX_JSON_ARRAY_ITEMS + 1).fill(0) } } }),
  });
  const body = await r.json();
  expect(r.status).toBe(400);
  expect(body.error.code).toBe(-32600);
  expect(body.error.data).toMatchObject({ code: "validation_error", maxArrayItems: MAX_JSON_ARRAY_ITEMS });
  const inner = `[${Array(9_000).fill("0").join(",")}]`;
  const many = await srv.fetch(`/${DEMO}/mcp`, {
    method: "POST",
    headers: HEADERS,
    body: `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"search_products","arguments":{"query":[${Array(20).fill(inner).join(",")}]}}}`,
  });
  expect(many.status).toBe(400);
  expect((await many.json()).error.data).toMatchObject({ code: "validation_error", maxValues: 131_072 });
});

test("nlweb_ask takes the spec's search limit: default 20, 60 served, above 100 served as 100", async () => {
  const meta = async (args: Record<string, unknown>) => {
    const r = await rpc(srv, `/${DEMO}/mcp`, "tools/call", { name: "nlweb_ask", arguments: { question: "lamp", ...args } });
    const sc = r.body.result.structuredContent;
    expect(sc.error).toBeUndefined();
    return sc.meta as { limit: number };
  };
  expect((await meta({})).limit).toBe(20);
  expect((await meta({ limit: 60 })).limit).toBe(60);
  expect((await meta({ limit: 500 })).limit).toBe(100);
});

test("a request with id null is -32600, with a session and without", async () => {
  const init = await srv.fetch(`/${DEMO}/mcp`, { method: "POST", headers: HEADERS, body: JSON.stringify(INITIALIZE) });
  await init.text();
  const sid = init.headers.get("mcp-session-id")!;
  expect(sid).toBeTruthy();
  const call = { jsonrpc: "2.0", id: null, method: "tools/call", params: { name: "search_products", arguments: { query: "lamp" } } };
  const withoutSession: Record<string, string> = {};
  for (const extra of [withoutSession, { "mcp-session-id": sid, "mcp-protocol-version": "2025-11-25" }]) {
    const r = await srv.fetch(`/${DEMO}/mcp`, { method: "POST", headers: { ...HEADERS, ...extra }, body: JSON.stringify(call) });
    const body = await r.json();
    expect(r.status).toBe(400);
    expect(body).toMatchObject({ jsonrpc: "2.0", id: null, error: { code: -32600 } });
  }
});

test("a platform whose TLS certificate does not verify is STORE_NOT_CONFIGURED (not retryable), not UPSTREAM_UNAVAILABLE", async () => {
  const dir = mkdtempSync(join(tmpdir(), "acs-tls-"));
  const made = Bun.spawnSync(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", join(dir, "k.pem"), "-out", join(dir, "c.pem"), "-days", "2", "-subj", "/CN=platform.test", "-addext", "subjectAltName=DNS:platform.test"]);
  expect(made.exitCode).toBe(0);
  const platform = Bun.serve({ hostname: "127.0.0.1", port: 0, tls: { key: Bun.file(join(dir, "k.pem")), cert: Bun.file(join(dir, "c.pem")) }, fetch: () => Response.json({ in_stock: true }) });
  const svc = srv.running.services;
  svc.extras.set(EXTRAS_PLATFORM_RESOLVER, async () => [{ address: "127.0.0.1", family: 4 }]);
  const [before] = await srv.db.sql<{ attributes: Record<string, unknown> }[]>`SELECT attributes FROM products WHERE id = ${DEMO_PRODUCT}`;
  // self-signed: no trusted chain for platform.test
  await srv.db.sql`UPDATE products SET attributes = attributes || ${srv.db.sql.json({ platform_endpoint: `https://platform.test:${platform.port}/items/1` })} WHERE id = ${DEMO_PRODUCT}`;
  try {
    const r = await rpc(srv, `/${DEMO}/mcp`, "tools/call", { name: "check_live_availability", arguments: { product_id: DEMO_PRODUCT } });
    const e = r.body.result.structuredContent.error;
    expect(e.code).toBe("STORE_NOT_CONFIGURED");
    expect(e.retryable).toBe(false);
    expect(e.details.reason).toBe("tls_certificate");
    expect(typeof e.details.tls).toBe("string");
  } finally {
    svc.extras.delete(EXTRAS_PLATFORM_RESOLVER);
    await srv.db.sql`UPDATE products SET attributes = ${srv.db.sql.json(before!.attributes as never)} WHERE id = ${DEMO_PRODUCT}`;
    platform.stop(true);
    rmSync(dir, { recursive: true, force: true });
  }
});
