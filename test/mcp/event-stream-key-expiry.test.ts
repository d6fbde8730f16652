/**
 * A GET event stream opened with an expiring agent key (a SANDBOX key: 24 h, actors/agent/access.ts keyExpiresAt) ends
 * when the key expires, saying so (gateway/oauth/access.ts `CredentialWatch`, gateway/mcp/server.ts `eventStream`).
 * The services' clock is moved here, which the stream's timer (set for the real 24 h) cannot follow: it is the
 * re-check tick, judging the key's record by the services' clock as every request's `authorize` does, that ends it.
 * (The timer at the instant is test/mcp/event-stream-credential-lapse.test.ts's, with an access token.)
 */
import { afterAll, beforeAll, expect, test } from "bun:test";
import { ManualClock } from "../../actors/runtime/clock.ts";
import type { McpGateway } from "../../gateway/mcp/server.ts";
import { createKey } from "../helpers/agents.ts";
import { startServer, type TestServer } from "../helpers/server.ts";
import { DEMO } from "./helpers.ts";

const PATH = `/${DEMO}/mcp`;
const VERSION = "2025-11-25";
const BASE = { "content-type": "application/json", accept: "application/json, text/event-stream" };
const DAY_MS = 24 * 60 * 60 * 1000;
const clock = new ManualClock(Date.now());
let srv: TestServer;

beforeAll(async () => {
  srv = await startServer({ seed: true, boot: { clock }, config: { RATE_LIMITS_ENABLED: false } });
  (srv.running.services.extras.get("mcpGateway") as McpGateway).streamRecheckEveryMs = 150;
}, 120_000);
afterAll(async () => {
  await srv?.stop();
});

test("a stream opened with a SANDBOX key ends once the key's 24 hours are over, saying it expired", async () => {
  const key = await createKey(srv, { tier: "SANDBOX", name: "stream sandbox key" });
  const init = await srv.fetch(PATH, {
    method: "POST",
    headers: { ...BASE, ...key.headers },
    body: JSON.stringify({ jsonrpc: "2.0", id: 1, method: "initialize", params: { protocolVersion: VERSION, capabilities: {}, clientInfo: { name: "t", version: "1" } } }),
  });
  await init.text();
  expect(init.status).toBe(200);
  const session = { ...key.headers, "mcp-session-id": init.headers.get("mcp-session-id")!, "mcp-protocol-version": VERSION };
  await (await srv.fetch(PATH, { method: "POST", headers: { ...BASE, ...session }, body: JSON.stringify({ jsonrpc: "2.0", method: "notifications/initialized" }) })).text();
  const res = await srv.fetch(PATH, { method: "GET", headers: { ...session, accept: "text/event-stream" } });
  expect(res.status).toBe(200);
  const reader = res.body!.getReader();
  const dec = new TextDecoder();
  let text = "";
  // a read left waiting when the time is up is the next call's: its chunk is not lost
  let pending: ReturnType<typeof reader.read> | undefined;
  const readFor = async (ms: number): Promise<boolean> => {
    const until = Date.now() + ms;
    while (Date.now() < until) {
      pending ??= reader.read();
      const r = await Promise.race([pending, Bun.sleep(Math.max(1, until - Date.now())).then(() => null)]);
      if (!r) return false;
      pending = undefined;
      if (r.done) return true;
      text += dec.decode(r.value, { stream: true });
    }
    return false;
  };

  // a minute before its end: the re-checks pass
  clock.advance(DAY_MS - 60_000);
  expect(await readFor(1_000)).toBe(false);
  expect(text).toContain(": stream open");
  expect(text).not.toContain("expired");

  clock.advance(60_000);
  expect(await readFor(20_000)).toBe(true);
  expect(text).toContain(": agent key expired; stream closed");
}, 60_000);
