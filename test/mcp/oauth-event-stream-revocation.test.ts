/**
 * An MCP session's GET event stream opened with an OAuth access token stayed open after that token was revoked,
 * sending keep-alives until the session idled out (review, session 12 "Known and left"): every request checks
 * revocation (gateway/oauth/revocation.ts), but a stream is one request. Now the stream re-checks its token on a
 * keep-alive tick (McpGateway.streamRecheckEveryMs, 15 s; shortened here) and ends once the token, its grant
 * (refresh-token family) or its client is revoked, with an SSE comment saying why. A stream whose token stands stays
 * open, and the session's one GET stream is free again: the client reconnects with a good token.
 */
import { afterAll, beforeAll, expect, test } from "bun:test";
import type { McpGateway } from "../../gateway/mcp/server.ts";
import { ADMIN, login, merchantLogin } from "../helpers/agents.ts";
import { basicAuth, clientCredentialsToken, codeFlowTokens, FORM, registerMachineClient, registerPublicClient, type SecretClient } from "../helpers/oauth.ts";
import { startServer, type TestServer } from "../helpers/server.ts";
import { DEMO } from "./helpers.ts";

const PATH = `/${DEMO}/mcp`;
const VERSION = "2025-11-25";
const CALLBACK = "http://127.0.0.1:50611/cb";
const BASE = { "content-type": "application/json", accept: "application/json, text/event-stream" };

let srv: TestServer;
let owner: string;

beforeAll(async () => {
  srv = await startServer({ seed: true, config: { RATE_LIMITS_ENABLED: false } });
  (srv.running.services.extras.get("mcpGateway") as McpGateway).streamRecheckEveryMs = 150;
  owner = await login(srv, merchantLogin("greenleaf-living"));
}, 120_000);
afterAll(async () => {
  await srv?.stop();
});

/** A session opened with `token`: its headers for later requests (the token included). */
async function openSession(token: string): Promise<Record<string, string>> {
  const auth = { authorization: `Bearer ${token}` };
  const init = await srv.fetch(PATH, {
    method: "POST",
    headers: { ...BASE, ...auth },
    body: JSON.stringify({ jsonrpc: "2.0", id: 1, method: "initialize", params: { protocolVersion: VERSION, capabilities: {}, clientInfo: { name: "t", version: "1" } } }),
  });
  await init.text();
  expect(init.status).toBe(200);
  const session = { ...auth, "mcp-session-id": init.headers.get("mcp-session-id")!, "mcp-protocol-version": VERSION };
  const ready = await srv.fetch(PATH, { method: "POST", headers: { ...BASE, ...session }, body: JSON.stringify({ jsonrpc: "2.0", method: "notifications/initialized" }) });
  await ready.text();
  return session;
}

interface OpenStream {
  status: number;
  /** Reads until the stream ends or `ms` pass: whether it ended, and everything read so far. */
  readFor(ms: number): Promise<{ ended: boolean; text: string }>;
  cancel(): Promise<void>;
}

async function openStream(session: Record<string, string>, token?: string): Promise<OpenStream> {
  const headers = { ...session, accept: "text/event-stream", ...(token ? { authorization: `Bearer ${token}` } : {}) };
  const res = await srv.fetch(PATH, { method: "GET", headers });
  const reader = res.body!.getReader();
  const dec = new TextDecoder();
  let text = "";
  let pending: ReturnType<typeof reader.read> | undefined;
  let ended = false;
  return {
    status: res.status,
    async readFor(ms) {
      const until = Date.now() + ms;
      while (!ended && Date.now() < until) {
        pending ??= reader.read();
        const r = await Promise.race([pending, Bun.sleep(Math.max(1, until - Date.now())).then(() => null)]);
        if (!r) break;
        pending = undefined;
        if (r.done) ended = true;
        else text += dec.decode(r.value, { stream: true });
      }
      return { ended, text };
    },
    cancel: () => reader.cancel().catch(() => undefined),
  };
}

const revokeAccessToken = (c: SecretClient, token: string) =>
  srv.json("/api/v1/oauth/revoke", {
    method: "POST",
    headers: { ...FORM, authorization: basicAuth(c.clientId, c.secret) },
    body: new URLSearchParams({ token, token_type_hint: "access_token" }).toString(),
  });

test("a stream whose access token is revoked (RFC 7009) ends, saying why; the session's stream opens again with a new token", async () => {
  const c = await registerMachineClient(srv, owner, { name: "stream m2m", scope: "search cart" });
  const token = await clientCredentialsToken(srv, c, "search cart");
  const session = await openSession(token);
  const stream = await openStream(session);
  expect(stream.status).toBe(200);
  // several re-checks pass while the token stands
  const before = await stream.readFor(1_000);
  expect(before.ended).toBe(false);
  expect(before.text).toContain(": stream open");

  expect((await revokeAccessToken(c, token)).status).toBe(200);
  const after = await stream.readFor(20_000);
  expect(after.ended).toBe(true);
  expect(after.text).toContain(": access token revoked (token_revoked); stream closed");

  // the session's one GET stream was freed (the SDK answers 409 while one is open); the same principal reconnects
  const again = await openStream(session, await clientCredentialsToken(srv, c, "search cart"));
  expect(again.status).toBe(200);
  expect((await again.readFor(500)).ended).toBe(false);
  await again.cancel();
}, 60_000);

test("a stream whose grant the user revokes ends, while another grant's stream of the same client stays open", async () => {
  const clientId = await registerPublicClient(srv, { name: "stream desk agent", redirectUri: CALLBACK, scope: "search cart" });
  const req = () => ({ clientId, redirectUri: CALLBACK, scope: "search cart", verifier: crypto.randomUUID() + crypto.randomUUID() });
  const admin = await login(srv, ADMIN);
  const first = await codeFlowTokens(srv, req());
  const second = await codeFlowTokens(srv, req());
  const revokedStream = await openStream(await openSession(first.access));
  const keptStream = await openStream(await openSession(second.access));
  expect([revokedStream.status, keptStream.status]).toEqual([200, 200]);
  await revokedStream.readFor(300);

  // the first authorization's grant: the family the first access token names
  const grants = await srv.json("/api/v1/oauth/grants", { headers: { authorization: `Bearer ${admin}` } });
  const ours = grants.body.data.filter((g: { clientId: string }) => g.clientId === clientId);
  expect(ours.length).toBe(2);
  const gid = JSON.parse(Buffer.from(first.access.split(".")[1]!, "base64url").toString("utf8")).gid as string;
  expect(ours.map((g: { id: string }) => g.id)).toContain(gid);
  const r = await srv.json(`/api/v1/oauth/grants/${gid}`, { method: "DELETE", headers: { authorization: `Bearer ${admin}` } });
  expect(r.status).toBe(200);

  const ended = await revokedStream.readFor(20_000);
  expect(ended.ended).toBe(true);
  expect(ended.text).toContain(": access token revoked (grant_revoked); stream closed");
  // the other grant's stream has seen as many re-checks and is still open
  const kept = await keptStream.readFor(1_000);
  expect(kept.ended).toBe(false);
  expect(kept.text).not.toContain("revoked");
  await keptStream.cancel();
}, 60_000);

test("a stream whose client is deleted by its owner ends", async () => {
  const c = await registerMachineClient(srv, owner, { name: "stream m2m deleted", scope: "search cart" });
  const stream = await openStream(await openSession(await clientCredentialsToken(srv, c, "search cart")));
  expect(stream.status).toBe(200);
  await stream.readFor(300);
  const del = await srv.json(`/api/v1/oauth/clients/${encodeURIComponent(c.clientId)}`, { method: "DELETE", headers: { authorization: `Bearer ${owner}` } });
  expect(del.status).toBe(200);
  const after = await stream.readFor(20_000);
  expect(after.ended).toBe(true);
  expect(after.text).toContain(": access token revoked (client_deleted); stream closed");
}, 60_000);
