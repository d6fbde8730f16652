/**
 * A session bound to key A, called without any credential (audit A5 L2): a protected tool answers 404 "Session not
 * found" like ping and a public tool do, not a 401 challenge that would confirm the session id is live. The session's
 * own key keeps working, and an anonymous session's opener still gets the 401 challenge it needs to sign in.
 */
import { expect, test } from "bun:test";
import { ALL_SCOPES, createKey } from "../helpers/agents.ts";
import { useServer } from "../helpers/server.ts";
import { DEMO } from "./helpers.ts";

const PATH = `/${DEMO}/mcp`;
const VERSION = "2025-11-25";
const BASE = { "content-type": "application/json", accept: "application/json, text/event-stream" };
const srv = useServer({ seed: true, config: { RATE_LIMITS_ENABLED: false } });

function post(body: unknown, headers: Record<string, string> = {}) {
  return srv.fetch(PATH, { method: "POST", headers: { ...BASE, ...headers }, body: JSON.stringify(body) });
}

async function open(headers: Record<string, string>): Promise<Record<string, string>> {
  const init = await post({ jsonrpc: "2.0", id: 1, method: "initialize", params: { protocolVersion: VERSION, capabilities: {}, clientInfo: { name: "t", version: "1" } } }, headers);
  await init.text();
  expect(init.status).toBe(200);
  return { "mcp-session-id": init.headers.get("mcp-session-id")!, "mcp-protocol-version": VERSION };
}

const getCart = (id: number) => ({ jsonrpc: "2.0", id, method: "tools/call", params: { name: "get_cart", arguments: { cart_id: "00000000-0000-4000-8000-000000000000" } } });

test("an anonymous protected call in a session bound to a key is 404 Session not found, as ping is, with no challenge", async () => {
  const key = await createKey(srv, { scopes: ALL_SCOPES });
  const session = await open(key.headers);

  const ping = await post({ jsonrpc: "2.0", id: 2, method: "ping" }, session);
  expect(ping.status).toBe(404);
  expect(await ping.json()).toEqual({ jsonrpc: "2.0", id: null, error: { code: -32001, message: "Session not found" } });

  const anon = await post(getCart(3), session);
  expect(anon.status).toBe(404);
  expect(anon.headers.get("www-authenticate")).toBeNull();
  expect(await anon.json()).toEqual({ jsonrpc: "2.0", id: null, error: { code: -32001, message: "Session not found" } });

  // the key that owns it still calls the tool (its own tool error: no such cart)
  const own = await post(getCart(4), { ...session, ...key.headers });
  expect(own.status).toBe(200);
  expect(await own.text()).toContain("CART_NOT_FOUND");
}, 60_000);

test("an anonymous session's opener calling a protected tool without a credential still gets the 401 challenge", async () => {
  const session = await open({});
  const r = await post(getCart(2), session);
  expect(r.status).toBe(401);
  expect(r.headers.get("www-authenticate")).toContain(`resource_metadata="${srv.url}/.well-known/oauth-protected-resource/${DEMO}/mcp"`);
  await r.text();
}, 60_000);

test("a second initialize in a session is -32600 with the request's own id; a fractional id is -32600, not a parse error (audit A5 L3)", async () => {
  const key = await createKey(srv, { scopes: ALL_SCOPES });
  const session = { ...(await open(key.headers)), ...key.headers };
  const again = await post({ jsonrpc: "2.0", id: 7, method: "initialize", params: { protocolVersion: VERSION, capabilities: {}, clientInfo: { name: "t", version: "1" } } }, session);
  expect(again.status).toBe(400);
  expect(await again.json()).toEqual({ jsonrpc: "2.0", id: 7, error: { code: -32600, message: "Invalid Request: Server already initialized" } });

  for (const headers of [session, {}]) {
    const frac = await post({ jsonrpc: "2.0", id: 2.5, method: "ping" }, headers);
    expect(frac.status).toBe(400);
    expect(await frac.json()).toEqual({ jsonrpc: "2.0", id: null, error: { code: -32600, message: "Invalid Request: id must be a string or an integer." } });
  }
  // the session still works
  const ping = await post({ jsonrpc: "2.0", id: 3, method: "ping" }, session);
  expect(ping.status).toBe(200);
  await ping.text();
}, 60_000);
