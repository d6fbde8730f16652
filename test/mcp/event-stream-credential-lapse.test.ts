/**
 * An MCP session's GET event stream ends when the credential that opened it is no longer good (review, session 13
 * "Known and left"): session 13 re-checked only OAuth access tokens, so a stream opened with an agent key stayed open
 * after the key was revoked, until the session idled out, and no stream ended at its token's `exp`. Now one re-check
 * (gateway/oauth/access.ts `CredentialWatch`, gateway/mcp/server.ts `eventStream`) serves both kinds: on each tick
 * (McpGateway.streamRecheckEveryMs, 15 s; shortened here) a revoked key's stream says why in an SSE comment and ends,
 * and every stream ends at its credential's expiry by a timer of its own, with a comment saying it expired.
 */
import { afterAll, beforeAll, expect, test } from "bun:test";
import { decodeJwt } from "jose";
import { tokenService } from "../../gateway/identity.ts";
import type { McpGateway } from "../../gateway/mcp/server.ts";
import { createKey, login, merchantLogin, type TestKey } from "../helpers/agents.ts";
import { clientCredentialsToken, registerMachineClient } from "../helpers/oauth.ts";
import { startServer, type TestServer } from "../helpers/server.ts";
import { DEMO } from "./helpers.ts";

const PATH = `/${DEMO}/mcp`;
const VERSION = "2025-11-25";
const BASE = { "content-type": "application/json", accept: "application/json, text/event-stream" };

let srv: TestServer;
let gateway: McpGateway;
let owner: string;

beforeAll(async () => {
  srv = await startServer({ seed: true, config: { RATE_LIMITS_ENABLED: false } });
  gateway = srv.running.services.extras.get("mcpGateway") as McpGateway;
  owner = await login(srv, merchantLogin("greenleaf-living"));
}, 120_000);
afterAll(async () => {
  await srv?.stop();
});

/** A session opened with `credential` (its headers): the headers of its later requests. */
async function openSession(credential: Record<string, string>): Promise<Record<string, string>> {
  const init = await srv.fetch(PATH, {
    method: "POST",
    headers: { ...BASE, ...credential },
    body: JSON.stringify({ jsonrpc: "2.0", id: 1, method: "initialize", params: { protocolVersion: VERSION, capabilities: {}, clientInfo: { name: "t", version: "1" } } }),
  });
  await init.text();
  expect(init.status).toBe(200);
  const session = { ...credential, "mcp-session-id": init.headers.get("mcp-session-id")!, "mcp-protocol-version": VERSION };
  const ready = await srv.fetch(PATH, { method: "POST", headers: { ...BASE, ...session }, body: JSON.stringify({ jsonrpc: "2.0", method: "notifications/initialized" }) });
  await ready.text();
  return session;
}

interface OpenStream {
  status: number;
  /** Reads until the stream ends or `ms` pass: whether it ended, when (Date.now()), and everything read so far. */
  readFor(ms: number): Promise<{ ended: boolean; endedAt: number | null; text: string }>;
  cancel(): Promise<void>;
}

async function openStream(session: Record<string, string>): Promise<OpenStream> {
  const res = await srv.fetch(PATH, { method: "GET", headers: { ...session, accept: "text/event-stream" } });
  const reader = res.body!.getReader();
  const dec = new TextDecoder();
  let text = "";
  let pending: ReturnType<typeof reader.read> | undefined;
  let endedAt: number | null = null;
  return {
    status: res.status,
    async readFor(ms) {
      const until = Date.now() + ms;
      while (endedAt === null && Date.now() < until) {
        pending ??= reader.read();
        const r = await Promise.race([pending, Bun.sleep(Math.max(1, until - Date.now())).then(() => null)]);
        if (!r) break;
        pending = undefined;
        if (r.done) endedAt = Date.now();
        else text += dec.decode(r.value, { stream: true });
      }
      return { ended: endedAt !== null, endedAt, text };
    },
    cancel: () => reader.cancel().catch(() => undefined),
  };
}

const revokeKey = (key: TestKey, token: string) => srv.json(`/api/v1/agent-keys/${key.id}`, { method: "DELETE", headers: { authorization: `Bearer ${token}` } });

test("a stream opened with an agent key ends once the key is revoked, saying why; another key's stream stays open", async () => {
  gateway.streamRecheckEveryMs = 150;
  const revoked = await createKey(srv, { token: owner, name: "stream key revoked" });
  const kept = await createKey(srv, { token: owner, name: "stream key kept" });
  const revokedStream = await openStream(await openSession(revoked.headers));
  const keptStream = await openStream(await openSession(kept.headers));
  expect([revokedStream.status, keptStream.status]).toEqual([200, 200]);
  // several re-checks pass while the key stands
  const before = await revokedStream.readFor(1_000);
  expect(before.ended).toBe(false);
  expect(before.text).toContain(": stream open");

  expect((await revokeKey(revoked, owner)).status).toBe(200);
  const after = await revokedStream.readFor(20_000);
  expect(after.ended).toBe(true);
  expect(after.text).toContain(": agent key revoked (key_revoked); stream closed");

  // the other key has seen as many re-checks and its stream is still open
  const other = await keptStream.readFor(1_000);
  expect(other.ended).toBe(false);
  expect(other.text).not.toContain("revoked");
  await keptStream.cancel();
}, 60_000);

test("an operator's revocation of another account's key ends that key's stream too", async () => {
  gateway.streamRecheckEveryMs = 150;
  const key = await createKey(srv, { token: owner, name: "stream key operator-revoked" });
  const stream = await openStream(await openSession(key.headers));
  expect(stream.status).toBe(200);
  await stream.readFor(300);
  const admin = await login(srv);
  const r = await srv.json(`/api/v1/admin/agent-keys/${key.id}`, { method: "DELETE", headers: { authorization: `Bearer ${admin}` } });
  expect(r.status).toBe(200);
  const after = await stream.readFor(20_000);
  expect(after.ended).toBe(true);
  expect(after.text).toContain(": agent key revoked (key_revoked); stream closed");
}, 60_000);

test("a stream ends at its access token's exp, by its own timer (not a re-check tick), saying it expired", async () => {
  // no tick during the test: only the expiry timer can end the stream
  gateway.streamRecheckEveryMs = 600_000;
  const c = await registerMachineClient(srv, owner, { name: "stream m2m short-lived", scope: "search cart" });
  // the client's own token, its claims as issued, with a life of 2 s (the token endpoint issues 15 minutes)
  const issued = decodeJwt(await clientCredentialsToken(srv, c, "search cart"));
  const { iss: _iss, sub, aud, exp: _exp, nbf: _nbf, iat: _iat, jti: _jti, scope, ...extra } = issued;
  const tokens = await tokenService(srv.running.services);
  const short = await tokens.issueToken({ sub: sub!, aud: aud as string | string[], scope: scope as string, ttlSeconds: 2, typ: "at+jwt", extra });
  const exp = decodeJwt(short).exp! * 1000;

  const stream = await openStream(await openSession({ authorization: `Bearer ${short}` }));
  expect(stream.status).toBe(200);
  const read = await stream.readFor(exp - Date.now() + 5_000);
  expect(read.ended).toBe(true);
  expect(read.text).toContain(": stream open");
  expect(read.text).toContain(": access token expired; stream closed");
  // at the instant, not before it (the ticks are 10 minutes apart: only the timer ends it this soon)
  expect(read.endedAt!).toBeGreaterThanOrEqual(exp);
  expect(read.endedAt! - exp).toBeLessThan(3_000);
}, 60_000);

test("a stream whose access token stands past the test's window stays open (the expiry timer is the token's own)", async () => {
  gateway.streamRecheckEveryMs = 150;
  const c = await registerMachineClient(srv, owner, { name: "stream m2m long-lived", scope: "search cart" });
  const stream = await openStream(await openSession({ authorization: `Bearer ${await clientCredentialsToken(srv, c, "search cart")}` }));
  expect(stream.status).toBe(200);
  const read = await stream.readFor(2_500);
  expect(read.ended).toBe(false);
  expect(read.text).not.toContain("expired");
  await stream.cancel();
}, 60_000);
