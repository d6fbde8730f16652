/**
 * Audit S-1: on a real merchant's `/{slug}/mcp/checkout` an API key (and a user-delegated OAuth token) is refused with
 * 401 and the `invalid_token` challenge (spec, Authentication 1; docs/access.md) where every real MCP client meets it:
 * at `initialize`, through the official SDK client. Before the fix `initialize` opened a session and every tools/call
 * in it answered 404 "Session not found", so the client never learnt it needed OAuth and re-initialized in a loop.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport, StreamableHTTPError } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import type { CallToolResult } from "@modelcontextprotocol/sdk/types.js";
import { issueAccessToken } from "../../gateway/oauth/grants.ts";
import { mcpResource } from "../../gateway/oauth/common.ts";
import { ALL_SCOPES, createKey, login, type TestKey } from "../helpers/agents.ts";
import { startServer, type TestServer } from "../helpers/server.ts";
import { DEMO, rpc, structured } from "./helpers.ts";

const MERCHANT = "greenleaf-living";
const CHECKOUT = `/${MERCHANT}/mcp/checkout`;
let srv: TestServer;
let key: TestKey;

beforeAll(async () => {
  srv = await startServer({ seed: true, config: { RATE_LIMITS_ENABLED: false } });
  key = await createKey(srv, { scopes: ALL_SCOPES });
}, 60_000);
afterAll(async () => {
  await srv?.stop();
});

async function token(opts: { machine: boolean; resource: string; clientId?: string }): Promise<string> {
  const session = await login(srv);
  const userId = JSON.parse(Buffer.from(session.split(".")[1]!, "base64url").toString("utf8")).sub as string;
  return issueAccessToken(srv.running.services, {
    clientId: opts.clientId ?? "mcpc_s1",
    userId,
    scopes: ["search", "cart", "checkout"],
    resource: opts.resource,
    ...(opts.machine ? { machine: { authMethod: "client_secret_basic" as const } } : {}),
  });
}

interface Seen {
  status: number;
  challenge: string | null;
  sessionId: string | null;
  body: string;
}

/** The official SDK client on `path`, with every HTTP answer it got recorded (the SDK's error does not carry headers). */
async function sdkClient(path: string, headers: Record<string, string>) {
  const seen: Seen[] = [];
  const recording = async (input: string | URL | Request, init?: RequestInit): Promise<Response> => {
    const res = await fetch(input, init);
    seen.push({ status: res.status, challenge: res.headers.get("www-authenticate"), sessionId: res.headers.get("mcp-session-id"), body: await res.clone().text() });
    return res;
  };
  const client = new Client({ name: "s1-test", version: "1.0.0" }, { capabilities: {} });
  const transport = new StreamableHTTPClientTransport(new URL(`${srv.url}${path}`), { requestInit: { headers }, fetch: recording });
  return { client, transport, seen };
}

const expectedMetadata = () => `resource_metadata="${srv.url}/.well-known/oauth-protected-resource/${MERCHANT}/mcp/checkout"`;

async function expectRefusedAtConnect(headers: Record<string, string>): Promise<Seen> {
  const { client, transport, seen } = await sdkClient(CHECKOUT, headers);
  const err = await client.connect(transport).then(
    () => null,
    (e: unknown) => e,
  );
  expect(err).toBeInstanceOf(StreamableHTTPError);
  expect((err as StreamableHTTPError).code).toBe(401);
  // one request, the initialize: refused before a session exists, so there is nothing to loop on
  expect(seen).toHaveLength(1);
  const [init] = seen;
  expect(init!.status).toBe(401);
  expect(init!.sessionId).toBeNull();
  expect(init!.challenge).toStartWith("Bearer ");
  expect(init!.challenge).toContain('error="invalid_token"');
  expect(init!.challenge).toContain(expectedMetadata());
  await client.close();
  return init!;
}

describe("a real merchant's checkout endpoint through the official SDK client", () => {
  test("an API key is refused at connect with 401 and the invalid_token challenge naming the endpoint's metadata", async () => {
    const init = await expectRefusedAtConnect(key.headers);
    const body = JSON.parse(init.body);
    expect(body.error.code).toBe(-32001);
    expect(body.error.data).toMatchObject({ code: "unauthorized", endpoint: "checkout" });
  }, 30_000);

  test("a user-delegated (authorization_code) token is refused at connect with 401, invalid_token and the client_credentials hint", async () => {
    const delegated = await token({ machine: false, resource: mcpResource(srv.running.services, MERCHANT, "checkout") });
    const init = await expectRefusedAtConnect({ authorization: `Bearer ${delegated}` });
    expect(JSON.parse(init.body).error.data).toMatchObject({ code: "unauthorized", required_grant: "client_credentials" });
  }, 30_000);

  test("a client_credentials token connects and calls tools, in a session and without one", async () => {
    const machine = await token({ machine: true, resource: mcpResource(srv.running.services, MERCHANT, "checkout") });
    const { client, transport, seen } = await sdkClient(CHECKOUT, { authorization: `Bearer ${machine}` });
    await client.connect(transport);
    expect(transport.sessionId).toBeString();
    await client.listTools();
    const r = (await client.callTool({ name: "preview_checkout", arguments: { cart_id: crypto.randomUUID() } })) as CallToolResult;
    // a tool answer about the unknown cart, not a refusal
    expect(structured(r).error?.code).not.toBe("unauthorized");
    expect(seen.every((s) => s.status < 400)).toBe(true);
    await client.close();

    const sessionless = await rpc(srv, CHECKOUT, "tools/call", { name: "preview_checkout", arguments: { cart_id: crypto.randomUUID() } }, { authorization: `Bearer ${machine}` });
    expect(sessionless.status).toBe(200);
  }, 30_000);

  test("a token issued for the checkout endpoint is refused at connect on the store's main endpoint (audience), with its challenge", async () => {
    const narrow = await token({ machine: true, resource: mcpResource(srv.running.services, MERCHANT, "checkout") });
    const { client, transport, seen } = await sdkClient(`/${MERCHANT}/mcp`, { authorization: `Bearer ${narrow}` });
    const err = await client.connect(transport).then(
      () => null,
      (e: unknown) => e,
    );
    expect((err as StreamableHTTPError).code).toBe(401);
    expect(seen).toHaveLength(1);
    expect(seen[0]!.sessionId).toBeNull();
    expect(seen[0]!.challenge).toContain('error="invalid_token"');
    expect(seen[0]!.challenge).toContain(`resource_metadata="${srv.url}/.well-known/oauth-protected-resource/${MERCHANT}/mcp"`);
    expect(JSON.parse(seen[0]!.body).error.data).toMatchObject({ code: "unauthorized", audience: mcpResource(srv.running.services, MERCHANT, "checkout") });
    await client.close();
  }, 30_000);

  test("the demo store's checkout endpoint still takes an API key in a session", async () => {
    const { client, transport } = await sdkClient(`/${DEMO}/mcp/checkout`, key.headers);
    await client.connect(transport);
    const r = (await client.callTool({ name: "preview_checkout", arguments: { cart_id: crypto.randomUUID() } })) as CallToolResult;
    expect(structured(r).error?.code).not.toBe("unauthorized");
    await client.close();
  }, 30_000);
});

describe("sessions on a real merchant's checkout endpoint", () => {
  const HEADERS = { "content-type": "application/json", accept: "application/json, text/event-stream", "mcp-protocol-version": "2025-11-25" };
  const post = async (sid: string, method: string, params: unknown, headers: Record<string, string>) => {
    const res = await srv.fetch(CHECKOUT, { method: "POST", headers: { ...HEADERS, "mcp-session-id": sid, ...headers }, body: JSON.stringify({ jsonrpc: "2.0", id: 7, method, params }) });
    const text = await res.text();
    // an answer through the session's SDK transport comes as one SSE event
    const json = res.headers.get("content-type")?.startsWith("text/event-stream") ? /^data: (.*)$/m.exec(text)![1]! : text;
    return { status: res.status, challenge: res.headers.get("www-authenticate"), body: JSON.parse(json) };
  };
  const preview = { name: "preview_checkout", arguments: { cart_id: "00000000-0000-4000-8000-000000000000" } };

  test("another caller's API key or user-delegated token probing a client_credentials session gets 404 Session not found, no challenge; the session's own principal gets the 401", async () => {
    const machine = await token({ machine: true, resource: mcpResource(srv.running.services, MERCHANT, "checkout") });
    const { client, transport } = await sdkClient(CHECKOUT, { authorization: `Bearer ${machine}` });
    await client.connect(transport);
    const sid = transport.sessionId!;
    // another OAuth client (a principal is client and subject: the same client's own delegated token would be the owner)
    const delegated = await token({ machine: false, resource: mcpResource(srv.running.services, MERCHANT, "checkout"), clientId: "mcpc_other" });
    for (const probe of [key.headers, { authorization: `Bearer ${delegated}` }]) {
      const r = await post(sid, "tools/call", preview, probe);
      expect(r.status).toBe(404);
      expect(r.body.error).toEqual({ code: -32001, message: "Session not found" });
      expect(r.challenge).toBeNull();
    }
    // the session's own principal (same client, same subject) with a delegated token is the owner: told why, not hidden
    const own = await token({ machine: false, resource: mcpResource(srv.running.services, MERCHANT, "checkout") });
    const mine = await post(sid, "tools/call", preview, { authorization: `Bearer ${own}` });
    expect(mine.status).toBe(401);
    expect(mine.challenge).toContain('error="invalid_token"');
    expect(mine.body.error.data).toMatchObject({ code: "unauthorized", required_grant: "client_credentials" });
    await client.close();
  }, 30_000);

  test("a session opened without a credential and then bound to an API key answers that key's tools/call with the 401 challenge, not Session not found", async () => {
    const init = await srv.fetch(CHECKOUT, {
      method: "POST",
      headers: { "content-type": "application/json", accept: "application/json, text/event-stream" },
      body: JSON.stringify({ jsonrpc: "2.0", id: 0, method: "initialize", params: { protocolVersion: "2025-11-25", capabilities: {}, clientInfo: { name: "t", version: "1" } } }),
    });
    expect(init.status).toBe(200);
    await init.text();
    const sid = init.headers.get("mcp-session-id")!;
    expect(sid).toBeString();
    // tools/list with the key from the opening address binds the session to the key (it is not a tool call)
    expect((await post(sid, "tools/list", {}, key.headers)).status).toBe(200);
    const r = await post(sid, "tools/call", preview, key.headers);
    expect(r.status).toBe(401);
    expect(r.challenge).toContain('error="invalid_token"');
    expect(r.challenge).toContain(expectedMetadata());
    expect(r.body.error.data).toMatchObject({ code: "unauthorized", endpoint: "checkout" });
  }, 30_000);
});
