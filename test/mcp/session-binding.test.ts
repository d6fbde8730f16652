/**
 * An MCP session opened without a credential belongs to the address that opened it (review R2-F3). It used to be
 * bound to the first valid credential anyone presented with its id: a stranger holding the leaked id and any key of
 * their own took the session, and its opener, signing in, was told "Session not found". Now only the opening
 * address may use it or bind it by signing in; from any other address it does not exist (404 -32001), for a key, an
 * anonymous caller and a DELETE alike.
 *
 * The stranger's requests leave from another loopback address (127.0.0.2) over a raw socket; fetch() always
 * leaves from 127.0.0.1.
 */
import { afterAll, beforeAll, expect, test } from "bun:test";
import { connect as tcpConnect } from "node:net";
import { ALL_SCOPES, createKey } from "../helpers/agents.ts";
import { startServer, type TestServer } from "../helpers/server.ts";
import { DEMO } from "./helpers.ts";

const PATH = `/${DEMO}/mcp`;
const VERSION = "2025-11-25";
let srv: TestServer;

beforeAll(async () => {
  srv = await startServer({ seed: true, config: { RATE_LIMITS_ENABLED: false } });
}, 60_000);
afterAll(async () => srv?.stop());

const BASE = { "content-type": "application/json", accept: "application/json, text/event-stream" };

/** From the test's own address (127.0.0.1, the session's opener). */
function post(body: unknown, headers: Record<string, string> = {}) {
  return srv.fetch(PATH, { method: "POST", headers: { ...BASE, ...headers }, body: JSON.stringify(body) });
}

/** The status code of one request sent from `from` (another loopback address). */
function statusFrom(from: string, method: "POST" | "DELETE", headers: Record<string, string>, body?: unknown): Promise<number> {
  const url = new URL(srv.url);
  const payload = body === undefined ? "" : JSON.stringify(body);
  const lines = [
    `${method} ${PATH} HTTP/1.1`,
    `Host: ${url.host}`,
    "Connection: close",
    `Content-Length: ${Buffer.byteLength(payload)}`,
    ...Object.entries({ ...BASE, ...headers }).map(([k, v]) => `${k}: ${v}`),
  ];
  return new Promise((resolve, reject) => {
    const sock = tcpConnect({ host: url.hostname, port: Number(url.port), localAddress: from });
    let head = "";
    sock.on("data", (d) => {
      head += d.toString("latin1");
      const m = /^HTTP\/1\.1 (\d{3})/.exec(head);
      if (m) {
        sock.destroy();
        resolve(Number(m[1]));
      }
    });
    sock.on("error", reject);
    sock.write(lines.join("\r\n") + "\r\n\r\n" + payload);
  });
}

/** The JSON-RPC message of a response, whether sent as JSON or as one SSE event (in-session answers). */
async function rpc(res: Response): Promise<unknown> {
  const text = await res.text();
  const data = text.startsWith("{") ? text : text.split("\n").find((l) => l.startsWith("data: "))?.slice(6);
  return JSON.parse(data ?? text);
}

async function openAnonymous(): Promise<Record<string, string>> {
  const init = await post({ jsonrpc: "2.0", id: 1, method: "initialize", params: { protocolVersion: VERSION, capabilities: {}, clientInfo: { name: "opener", version: "1" } } });
  await init.text();
  expect(init.status).toBe(200);
  return { "mcp-session-id": init.headers.get("mcp-session-id")!, "mcp-protocol-version": VERSION };
}

const ping = (id: number) => ({ jsonrpc: "2.0", id, method: "ping" });

test("a key presented from another address cannot take an anonymous session, and its opener still signs in to it", async () => {
  const opener = await createKey(srv, { scopes: ALL_SCOPES });
  const stranger = await createKey(srv, { scopes: ALL_SCOPES });
  const session = await openAnonymous();

  expect(await statusFrom("127.0.0.2", "POST", { ...session, ...stranger.headers }, ping(2))).toBe(404);

  // the opener signs in after the fact: its session is still its own, and now bound to its key
  const signedIn = await post(ping(3), { ...session, ...opener.headers });
  expect(signedIn.status).toBe(200);
  expect(await rpc(signedIn)).toEqual({ jsonrpc: "2.0", id: 3, result: {} });

  // bound: the stranger's key is refused from its own address and from the opener's
  expect(await statusFrom("127.0.0.2", "POST", { ...session, ...stranger.headers }, ping(4))).toBe(404);
  const fromHere = await post(ping(5), { ...session, ...stranger.headers });
  expect(fromHere.status).toBe(404);
  expect(await rpc(fromHere)).toMatchObject({ jsonrpc: "2.0", error: { code: -32001, message: "Session not found" } });
}, 60_000);

test("an anonymous session cannot be used or closed from another address, and keeps serving its opener", async () => {
  const session = await openAnonymous();
  expect(await statusFrom("127.0.0.2", "POST", session, ping(2))).toBe(404);
  expect(await statusFrom("127.0.0.2", "DELETE", session)).toBe(404);
  const still = await post(ping(3), session);
  expect(still.status).toBe(200);
  expect(await rpc(still)).toEqual({ jsonrpc: "2.0", id: 3, result: {} });
}, 60_000);
