/**
 * Over MCP, an actor turn's lines name the HTTP request of the tool call that caused them (docs/operations.md, logs):
 * `provision_wallet` asks the human first (an elicitation, answered in a POST of its own) and only then sends the
 * wallet actor its message, whose turn logs `wallet provisioned`. That line carries the X-Request-Id of the
 * tools/call POST, not of the answer's POST nor of the session's other requests. The real service in this process,
 * its log captured; the SDK client sends every HTTP request with an id of its own.
 */
import { afterAll, beforeAll, expect, test } from "bun:test";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { ElicitRequestSchema, type CallToolResult } from "@modelcontextprotocol/sdk/types.js";
import { setLogLevel, setLogSink } from "../../infra/log.ts";
import { ALL_SCOPES, createKey, type TestKey } from "../helpers/agents.ts";
import { startServer, type TestServer } from "../helpers/server.ts";
import { accept, DEMO } from "./helpers.ts";

let srv: TestServer;
let key: TestKey;
let client: Client;
const lines: Record<string, unknown>[] = [];
let restore: () => void = () => {};
/** The id each HTTP request was sent with, and what it carried. */
const sent: { id: string; body: string }[] = [];

beforeAll(async () => {
  restore = setLogSink((line) => void lines.push(JSON.parse(line)));
  srv = await startServer({ seed: true, config: { LOG_LEVEL: "info", RATE_LIMITS_ENABLED: false } });
  key = await createKey(srv, { scopes: ALL_SCOPES, tier: "ENTERPRISE" });
  client = new Client({ name: "acs-test", version: "1.0.0" }, { capabilities: { elicitation: { form: {} } } });
  client.setRequestHandler(ElicitRequestSchema, async () => accept());
  const withIds = (url: string | URL, init?: RequestInit) => {
    const id = `mcp-trace-${String(sent.length + 1).padStart(4, "0")}`;
    sent.push({ id, body: typeof init?.body === "string" ? init.body : "" });
    const headers = new Headers(init?.headers);
    headers.set("x-request-id", id);
    return fetch(url, { ...init, headers });
  };
  const transport = new StreamableHTTPClientTransport(new URL(`${srv.url}/${DEMO}/mcp`), { requestInit: { headers: key.headers }, fetch: withIds });
  await client.connect(transport);
}, 60_000);
afterAll(async () => {
  await client?.close();
  setLogLevel("error");
  restore();
  await srv?.stop();
});

test("the wallet turn's line names the tools/call request, not the POST that answered the human's question", async () => {
  const r = (await client.callTool({ name: "provision_wallet", arguments: {} })) as CallToolResult;
  expect(r.isError).toBeFalsy();
  const address = (r.structuredContent as { address: string }).address;
  const call = sent.filter((s) => s.body.includes('"tools/call"') && s.body.includes("provision_wallet"));
  expect(call.length).toBe(1);
  // the human's answer came in a POST of its own, after the call's
  const answers = sent.filter((s) => s.body.includes('"action":"accept"'));
  expect(answers.length).toBe(1);
  const found = lines.filter((l) => l.msg === "wallet provisioned" && l.address === address);
  expect(found.length).toBe(1);
  expect(found[0]!.requestId).toBe(call[0]!.id);
}, 30_000);
