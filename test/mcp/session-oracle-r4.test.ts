/**
 * Review R4-2: in a session bound to a key, a credential that does not authenticate (a junk bearer token or agent
 * key) got 401 where an unknown session id gets 404, so the session id was still confirmed live (ef79eda fixed only
 * the no-credential case). Now it is 404 "Session not found" on tools/call, ping and GET, like an unknown session.
 * Sessionless calls and an anonymous session's opener keep their 401.
 */
import { expect, test } from "bun:test";
import { ALL_SCOPES, createKey } from "../helpers/agents.ts";
import { useServer } from "../helpers/server.ts";
import { DEMO } from "./helpers.ts";

const PATH = `/${DEMO}/mcp`;
const VERSION = "2025-11-25";
const BASE = { "content-type": "application/json", accept: "application/json, text/event-stream" };
const NOT_FOUND = { jsonrpc: "2.0", id: null, error: { code: -32001, message: "Session not found" } };
const JUNK: Record<string, string>[] = [{ authorization: "Bearer junk" }, { "x-agent-api-key": "junk" }];
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

async function answer(r: Response) {
  return { status: r.status, challenge: r.headers.get("www-authenticate"), body: await r.json() };
}

test("a junk credential in a session bound to a key is answered as an unknown session is: 404, no challenge", async () => {
  const key = await createKey(srv, { scopes: ALL_SCOPES });
  const bound = await open(key.headers);
  const unknown = { "mcp-session-id": crypto.randomUUID(), "mcp-protocol-version": VERSION };
  const want = { status: 404, challenge: null, body: NOT_FOUND };
  for (const session of [bound, unknown]) {
    for (const junk of JUNK) {
      expect(await answer(await post(getCart(2), { ...session, ...junk }))).toEqual(want);
      expect(await answer(await post({ jsonrpc: "2.0", id: 3, method: "ping" }, { ...session, ...junk }))).toEqual(want);
      expect(await answer(await srv.fetch(PATH, { method: "GET", headers: { accept: "text/event-stream", ...session, ...junk } }))).toEqual(want);
    }
  }
  // the owner's key still works in its session
  const own = await post(getCart(4), { ...bound, ...key.headers });
  expect(own.status).toBe(200);
  expect(await own.text()).toContain("CART_NOT_FOUND");
}, 60_000);

test("a junk credential without a session, or from an anonymous session's own address, still gets the 401 challenge", async () => {
  const anonymous: Record<string, string> = await open({});
  for (const session of [{} as Record<string, string>, anonymous]) {
    for (const junk of JUNK) {
      const r = await answer(await post(getCart(2), { ...session, ...junk }));
      expect(r.status).toBe(401);
      expect(r.challenge).toContain(`resource_metadata="${srv.url}/.well-known/oauth-protected-resource/${DEMO}/mcp"`);
      expect(r.body).toMatchObject({ jsonrpc: "2.0", id: 2, error: { code: -32001, data: { code: "unauthorized" } } });
    }
  }
}, 60_000);

test("the owner's own access token that expired in its session still gets 401 token_expired, so its client can refresh; anyone else's expired token gets 404", async () => {
  const { tokenService } = await import("../../gateway/identity.ts");
  const tokens = await tokenService(srv.running.services);
  const [admin] = await srv.db.sql<{ id: string }[]>`SELECT id FROM users WHERE role = 'operator' ORDER BY email LIMIT 1`;
  const resource = `${srv.url}${PATH}`;
  const token = await tokens.issueToken({ sub: admin!.id, aud: resource, scope: [...ALL_SCOPES], ttlSeconds: 2, typ: "at+jwt", extra: { client_id: "mcpc_owner" } });
  const bearer = { authorization: `Bearer ${token}` };
  const session = await open(bearer);
  const before = await post(getCart(5), { ...session, ...bearer });
  expect(before.status).toBe(200);
  await before.text();
  await Bun.sleep(2_600);
  const r = await answer(await post(getCart(6), { ...session, ...bearer }));
  expect(r.status).toBe(401);
  expect(r.challenge).toContain('error="invalid_token"');
  expect(r.body).toMatchObject({ jsonrpc: "2.0", id: 6, error: { code: -32001, data: { code: "token_expired" } } });
  // anyone else's expired token, though authentic, learns nothing about the session: 404 as for an unknown one (review R5 LOW-1)
  const other = await tokens.issueToken({ sub: crypto.randomUUID(), aud: resource, scope: [...ALL_SCOPES], ttlSeconds: 1, typ: "at+jwt", extra: { client_id: "mcpc_other" } });
  await Bun.sleep(1_100);
  const stranger = { authorization: `Bearer ${other}` };
  const keyBound = await open((await createKey(srv, { scopes: ALL_SCOPES })).headers);
  for (const s of [session, keyBound]) {
    expect(await answer(await post(getCart(7), { ...s, ...stranger }))).toEqual({ status: 404, challenge: null, body: NOT_FOUND });
    expect(await answer(await post({ jsonrpc: "2.0", id: 8, method: "ping" }, { ...s, ...stranger }))).toEqual({ status: 404, challenge: null, body: NOT_FOUND });
  }
}, 60_000);
