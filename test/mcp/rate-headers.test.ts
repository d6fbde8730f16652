/**
 * Every answer of a store's MCP endpoints carries X-RateLimit-* (spec, Limits §4), counted as docs/access.md ("MCP
 * requests and their buckets") says: tools/call in the MCP layers, initialize in the global layer, every other
 * message in no bucket — its headers show the caller's buckets as they stand — and an answer given before the
 * message was read shows the address's buckets on that endpoint. Rate limits on, real HTTP.
 */
import { afterAll, beforeAll, expect, test } from "bun:test";
import { ALL_SCOPES, createKey, login } from "../helpers/agents.ts";
import { startServer, type TestServer } from "../helpers/server.ts";
import { DEMO, rpc } from "./helpers.ts";

const STORE = "greenleaf-living";
const ACCEPT = "application/json, text/event-stream";
let srv: TestServer;

beforeAll(async () => {
  srv = await startServer({ seed: true, config: { RATE_LIMITS_ENABLED: true } });
}, 60_000);
afterAll(async () => srv?.stop());

interface Rate {
  limit: number;
  remaining: number;
  reset: number;
}

function rate(h: Headers): Rate {
  for (const n of ["x-ratelimit-limit", "x-ratelimit-remaining", "x-ratelimit-reset"]) expect(h.get(n), n).toMatch(/^\d+$/);
  return { limit: Number(h.get("x-ratelimit-limit")), remaining: Number(h.get("x-ratelimit-remaining")), reset: Number(h.get("x-ratelimit-reset")) };
}

const list = (path: string, headers: Record<string, string> = {}) => rpc(srv, path, "tools/list", {}, headers);
const ping = (path: string, headers: Record<string, string> = {}) => rpc(srv, path, "ping", {}, headers);
const profile = (path: string, headers: Record<string, string> = {}) => rpc(srv, path, "tools/call", { name: "get_merchant_profile", arguments: {} }, headers);

/** tools/list and ping before and after one counted tools/call: the call alone moves the bucket. */
async function listAndPingAreNotCounted(path: string, headers: Record<string, string>, limit: number): Promise<void> {
  const before = await list(path, headers);
  expect(before.status).toBe(200);
  expect(rate(before.headers)).toMatchObject({ limit, remaining: limit });
  expect(rate((await ping(path, headers)).headers)).toMatchObject({ limit, remaining: limit });
  const call = await profile(path, headers);
  expect(call.status).toBe(200);
  const counted = rate(call.headers);
  expect(counted).toMatchObject({ limit, remaining: limit - 1 });
  for (const r of [await list(path, headers), await ping(path, headers), await list(path, headers)]) {
    expect(r.status).toBe(200);
    expect(rate(r.headers)).toEqual(counted);
  }
}

test("without a credential, tools/list and ping on /{slug}/mcp carry the address's 30-per-minute bucket and take nothing from it", async () => {
  await listAndPingAreNotCounted(`/${STORE}/mcp`, {}, 30);
});

test("with an API key, tools/list and ping carry the key's per-key bucket and take nothing from it", async () => {
  const key = await createKey(srv, { scopes: ALL_SCOPES });
  await listAndPingAreNotCounted(`/${STORE}/mcp`, key.headers, 30);
  // the key's bucket, not the address's: a second key starts full
  const other = await createKey(srv, { scopes: ALL_SCOPES });
  expect(rate((await list(`/${STORE}/mcp`, other.headers)).headers)).toMatchObject({ limit: 30, remaining: 30 });
}, 30_000);

test("with an OAuth access token, tools/list and ping carry the token holder's per-key bucket and take nothing from it", async () => {
  const token = await clientCredentialsToken(STORE);
  await listAndPingAreNotCounted(`/${STORE}/mcp`, { authorization: `Bearer ${token}` }, 30);
}, 30_000);

test("an invalid credential on tools/list is 401 with the challenge, counted per address as every failed credential", async () => {
  const first = await list(`/${STORE}/mcp`, { "x-agent-api-key": "agnt_" + "x".repeat(43) });
  expect(first.status).toBe(401);
  expect(first.body.error.code).toBe(-32001);
  expect(first.headers.get("www-authenticate")).toContain("resource_metadata=");
  const a = rate(first.headers);
  expect(a.limit).toBe(30);
  const second = await ping(`/${STORE}/mcp`, { authorization: "Bearer not.a.token" });
  expect(second.status).toBe(401);
  expect(second.headers.get("www-authenticate")).toContain('error="invalid_token"');
  expect(rate(second.headers)).toMatchObject({ limit: 30, remaining: a.remaining - 1 });
});

test("the dedicated endpoints and the keyless demo store show their own buckets on tools/list and ping, untouched", async () => {
  for (const [path, limit] of [
    [`/${STORE}/mcp/discovery`, 1000],
    [`/${STORE}/mcp/customer`, 200],
    [`/${STORE}/mcp/checkout`, 60],
    [`/${DEMO}/mcp`, 20],
    [`/${DEMO}/mcp/discovery`, 20],
  ] as const) {
    for (const r of [await list(path), await ping(path), await list(path)]) {
      expect(r.status).toBe(200);
      expect(rate(r.headers), path).toMatchObject({ limit, remaining: limit });
    }
  }
  // a keyed caller on a dedicated endpoint: the tightest of the address's discovery bucket and the key's own
  const key = await createKey(srv, { scopes: ALL_SCOPES });
  expect(rate((await list(`/${STORE}/mcp/discovery`, key.headers)).headers)).toMatchObject({ limit: 1000, remaining: 1000 });
}, 30_000);

test("in a session, initialize carries the global bucket it is counted in, and notifications, tools/list, ping, resources, prompts, the SSE stream and DELETE carry the endpoint's bucket without taking from it", async () => {
  const path = `/${STORE}/mcp/discovery`;
  const post = (body: unknown, headers: Record<string, string> = {}) =>
    srv.fetch(path, { method: "POST", headers: { "content-type": "application/json", accept: ACCEPT, ...headers }, body: JSON.stringify(body) });
  const initialize = (id: number) => post({ jsonrpc: "2.0", id, method: "initialize", params: { protocolVersion: "2025-11-25", capabilities: {}, clientInfo: { name: "t", version: "1" } } });

  const init = await initialize(1);
  await init.text();
  expect(init.status).toBe(200);
  const g = rate(init.headers);
  expect(g.limit).toBe(500);
  const again = await initialize(2);
  await again.text();
  expect(rate(again.headers)).toMatchObject({ limit: 500, remaining: g.remaining - 1 });

  const sid = init.headers.get("mcp-session-id")!;
  const s = { "mcp-session-id": sid, "mcp-protocol-version": "2025-11-25" };
  // an untouched bucket's window would start now, so its reset moves with the clock: compare limit and remaining
  const before = rate((await list(path, s)).headers);
  expect(before.limit).toBe(1000);
  const same = (r: Rate, what: string) => expect({ limit: r.limit, remaining: r.remaining }, what).toEqual({ limit: before.limit, remaining: before.remaining });

  const notified = await post({ jsonrpc: "2.0", method: "notifications/initialized" }, s);
  expect(notified.status).toBe(202);
  same(rate(notified.headers), "notification");

  let id = 10;
  for (const method of ["tools/list", "ping", "resources/list", "resources/templates/list", "prompts/list", "no/such-method"]) {
    const r = await post({ jsonrpc: "2.0", id: id++, method, params: {} }, s);
    await r.text();
    expect(r.status, method).toBe(200);
    same(rate(r.headers), method);
  }

  const stream = new AbortController();
  const sse = await srv.fetch(path, { method: "GET", headers: { accept: "text/event-stream", ...s }, signal: stream.signal });
  expect(sse.status).toBe(200);
  expect(sse.headers.get("content-type")).toContain("text/event-stream");
  same(rate(sse.headers), "GET");
  stream.abort();
  await sse.body?.cancel().catch(() => undefined);

  const call = await post({ jsonrpc: "2.0", id: id++, method: "tools/call", params: { name: "get_merchant_profile", arguments: {} } }, s);
  await call.text();
  expect(call.status).toBe(200);
  const counted = rate(call.headers);
  expect(counted).toMatchObject({ limit: 1000, remaining: before.remaining - 1 });

  const closed = await srv.fetch(path, { method: "DELETE", headers: s });
  await closed.text();
  expect(closed.status).toBe(200);
  expect(rate(closed.headers)).toEqual(counted);
}, 30_000);

test("answers given before the message is read carry the address's bucket on that endpoint and take nothing from it", async () => {
  const path = `/${STORE}/mcp/checkout`;
  const raw = (init: RequestInit & { headers?: Record<string, string> }, at = path) =>
    srv.fetch(at, { method: "POST", ...init, headers: { "content-type": "application/json", accept: ACCEPT, ...init.headers } });
  const full = { limit: 60, remaining: 60 };
  const cases: [string, Promise<Response>, number][] = [
    ["not JSON", raw({ body: "{" }), 400],
    ["a batch", raw({ body: JSON.stringify([{ jsonrpc: "2.0", id: 1, method: "ping" }]) }), 400],
    ["not JSON-RPC", raw({ body: JSON.stringify({ id: 1, method: "ping" }) }), 400],
    ["a null request id", raw({ body: JSON.stringify({ jsonrpc: "2.0", id: null, method: "ping" }) }), 400],
    ["an unsupported protocol version", raw({ body: JSON.stringify({ jsonrpc: "2.0", id: 1, method: "ping" }), headers: { "mcp-protocol-version": "1999-01-01" } }), 400],
    ["an unknown session", raw({ body: JSON.stringify({ jsonrpc: "2.0", id: 1, method: "ping" }), headers: { "mcp-session-id": crypto.randomUUID() } }), 404],
    ["GET without a session", srv.fetch(path, { method: "GET", headers: { accept: "text/event-stream" } }), 405],
    ["DELETE without a session", srv.fetch(path, { method: "DELETE" }), 400],
    ["tools/call without a name", raw({ body: JSON.stringify({ jsonrpc: "2.0", id: 1, method: "tools/call", params: {} }) }), 200],
  ];
  for (const [what, pending, status] of cases) {
    const r = await pending;
    await r.text();
    expect(r.status, what).toBe(status);
    expect(rate(r.headers), what).toMatchObject(full);
  }
  // an unknown store: the address's buckets on /{slug}/mcp, as a tools/list there shows them
  const unknown = await raw({ body: JSON.stringify({ jsonrpc: "2.0", id: 1, method: "ping" }) }, "/no-such-store/mcp");
  await unknown.text();
  expect(unknown.status).toBe(404);
  expect(rate(unknown.headers)).toEqual(rate((await list(`/${STORE}/mcp`)).headers));
});

test("refusals after admission carry the buckets that admitted them: 401 for a keyed tool without a credential, 403 for an OAuth token without the tool's scope", async () => {
  // anonymous on the customer endpoint: its own per-address bucket (200/min), untouched by the other tests
  const path = `/${STORE}/mcp/customer`;
  const before = rate((await list(path)).headers);
  const anonymous = await rpc(srv, path, "tools/call", { name: "get_wallet", arguments: {} });
  expect(anonymous.status).toBe(401);
  expect(anonymous.headers.get("www-authenticate")).toContain("resource_metadata=");
  expect(rate(anonymous.headers)).toMatchObject({ limit: 200, remaining: before.remaining - 1 });

  const token = await clientCredentialsToken(STORE); // scopes: search cart
  const auth = { authorization: `Bearer ${token}` };
  const listed = rate((await list(`/${STORE}/mcp`, auth)).headers);
  expect(listed).toMatchObject({ limit: 30, remaining: 30 });
  const lacking = await rpc(srv, `/${STORE}/mcp`, "tools/call", { name: "get_wallet", arguments: {} }, auth);
  expect(lacking.status).toBe(403);
  expect(lacking.headers.get("www-authenticate")).toContain('error="insufficient_scope"');
  expect(rate(lacking.headers)).toMatchObject({ limit: 30, remaining: 29 });
}, 30_000);

test("an initialize with an invalid credential is 401 with the address's global bucket, in which it was counted", async () => {
  const init = (headers: Record<string, string>) =>
    srv.fetch(`/${STORE}/mcp`, {
      method: "POST",
      headers: { "content-type": "application/json", accept: ACCEPT, ...headers },
      body: JSON.stringify({ jsonrpc: "2.0", id: 1, method: "initialize", params: { protocolVersion: "2025-11-25", capabilities: {}, clientInfo: { name: "t", version: "1" } } }),
    });
  const first = await init({ "x-agent-api-key": "agnt_" + "y".repeat(43) });
  await first.text();
  expect(first.status).toBe(401);
  const a = rate(first.headers);
  expect(a.limit).toBe(500);
  const second = await init({ authorization: "Bearer not.a.token" });
  await second.text();
  expect(second.status).toBe(401);
  expect(rate(second.headers)).toMatchObject({ limit: 500, remaining: a.remaining - 1 });
});

async function clientCredentialsToken(slug: string): Promise<string> {
  const session = await login(srv);
  const reg = await srv.json("/api/v1/oauth/register", {
    method: "POST",
    headers: { authorization: `Bearer ${session}` },
    body: { client_name: "rate headers", grant_types: ["client_credentials"], token_endpoint_auth_method: "client_secret_basic", scope: "search cart" },
  });
  expect(reg.status).toBe(201);
  const basic = btoa(`${encodeURIComponent(reg.body.client_id)}:${encodeURIComponent(reg.body.client_secret)}`);
  const res = await srv.json("/api/v1/oauth/token", {
    method: "POST",
    headers: { "content-type": "application/x-www-form-urlencoded", authorization: `Basic ${basic}` },
    body: new URLSearchParams({ grant_type: "client_credentials", resource: `${srv.url}/${slug}/mcp` }).toString(),
  });
  expect(res.status).toBe(200);
  return res.body.access_token as string;
}
