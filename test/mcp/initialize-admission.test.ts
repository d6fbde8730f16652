/**
 * `initialize` admission (review H, finding 2): the spec's global layer is per IP *or* per authenticated user, so a
 * handshake that carries a valid credential is counted in that principal's bucket, not in its address's anonymous
 * one. Before, anonymous traffic from a shared address (NAT, an agent platform's egress) locked every keyed or
 * OAuth client behind it out of `initialize` for up to 15 minutes. Anonymous handshakes stay per address, and an
 * invalid credential gets the 401 challenge (and is counted per address) instead of a session.
 */
import { beforeAll, expect, test } from "bun:test";
import { ALL_SCOPES, createKey, login, type TestKey } from "../helpers/agents.ts";
import { useServer } from "../helpers/server.ts";

const STORE = "greenleaf-living";
const srv = useServer({ seed: true, config: { RATE_LIMITS_ENABLED: true } });
let key: TestKey;
let token: string;

beforeAll(async () => {
  key = await createKey(srv, { scopes: ALL_SCOPES });
  token = await clientCredentialsToken(STORE);
}, 60_000);

async function clientCredentialsToken(slug: string): Promise<string> {
  const session = await login(srv);
  const reg = await srv.json("/api/v1/oauth/register", {
    method: "POST",
    headers: { authorization: `Bearer ${session}` },
    body: { client_name: "init m2m", grant_types: ["client_credentials"], token_endpoint_auth_method: "client_secret_basic", scope: "search cart" },
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

const init = (headers: Record<string, string> = {}) =>
  srv.fetch(`/${STORE}/mcp`, {
    method: "POST",
    headers: { "content-type": "application/json", accept: "application/json, text/event-stream", ...headers },
    body: JSON.stringify({ jsonrpc: "2.0", id: 0, method: "initialize", params: { protocolVersion: "2025-11-25", capabilities: {}, clientInfo: { name: "t", version: "1" } } }),
  });

test("an invalid credential at initialize gets the 401 challenge, not a session (run while the address has budget)", async () => {
  const invalid: Record<string, string>[] = [{ "x-agent-api-key": "ak_live_not_a_real_key_000000000000" }, { authorization: "Bearer not.a.token" }];
  for (const headers of invalid) {
    const r = await init(headers);
    const body = await r.json();
    expect(r.status).toBe(401);
    expect(body.error.code).toBe(-32001);
    expect(r.headers.get("www-authenticate")).toContain("Bearer");
    expect(r.headers.get("mcp-session-id")).toBeNull();
  }
});

test("with the address's anonymous global bucket used up, a keyed or OAuth initialize is still admitted (in its own bucket); an anonymous one is not", async () => {
  const keyedBefore = await init(key.headers);
  await keyedBefore.text();
  expect(keyedBefore.status).toBe(200);
  const keyRemaining = Number(keyedBefore.headers.get("x-ratelimit-remaining"));

  // anonymous requests from 127.0.0.1 until the global layer (500 / 15 min per address) refuses
  let last = 0;
  for (let i = 0; i < 60 && last !== 429; i++) {
    const rs = await Promise.all(Array.from({ length: 10 }, () => srv.fetch("/api/v1/nope")));
    for (const r of rs) {
      await r.text();
      last = r.status;
    }
  }
  expect(last).toBe(429);

  const anonymous = await init();
  const anonBody = await anonymous.json();
  expect(anonymous.status).toBe(429);
  expect(anonBody.error.code).toBe(-32029);

  const keyed = await init(key.headers);
  await keyed.text();
  expect(keyed.status).toBe(200);
  expect(keyed.headers.get("mcp-session-id")).toBeTruthy();
  // counted in the key's own global bucket: one more handshake spent there
  expect(Number(keyed.headers.get("x-ratelimit-remaining"))).toBe(keyRemaining - 1);

  const oauth = await init({ authorization: `Bearer ${token}` });
  await oauth.text();
  expect(oauth.status).toBe(200);
  expect(oauth.headers.get("mcp-session-id")).toBeTruthy();
}, 120_000);
