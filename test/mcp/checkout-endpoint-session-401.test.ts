/**
 * Audit S-1: on a real merchant's `/{slug}/mcp/checkout` an API key (and a user-delegated OAuth token) is refused with
 * 401 and the `invalid_token` challenge (spec, Authentication 1; docs/access.md) where every real MCP client meets it:
 * at `initialize`, through the official SDK client. Before the fix `initialize` opened a session and every tools/call
 * in it answered 404 "Session not found", so the client never learnt it needed OAuth and re-initialized in a loop.
 * Follow-up (M2): the rule holds on every request, as MCP authorization asks of an unusable token: tools/list, ping,
 * GET and DELETE too, with a session or without (a sessionless tools/list with a key was 200, and in an anonymous
 * session it bound the session to the key). Anonymous requests, client_credentials tokens and the demo store's
 * checkout endpoint are unchanged.
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

  test("in a session opened without a credential, an API key is refused 401 with the challenge on tools/list, ping, GET, DELETE and tools/call, and never binds the session", async () => {
    const init = await srv.fetch(CHECKOUT, {
      method: "POST",
      headers: { "content-type": "application/json", accept: "application/json, text/event-stream" },
      body: JSON.stringify({ jsonrpc: "2.0", id: 0, method: "initialize", params: { protocolVersion: "2025-11-25", capabilities: {}, clientInfo: { name: "t", version: "1" } } }),
    });
    expect(init.status).toBe(200);
    await init.text();
    const sid = init.headers.get("mcp-session-id")!;
    expect(sid).toBeString();
    // tools/list with the key from the opening address used to be 200 and bind the session to the key, whose every
    // tools/call was then refused: now the key is refused on every message (MCP authorization), so nothing binds
    for (const [method, params] of [["tools/list", {}], ["ping", {}], ["tools/call", preview]] as const) {
      const r = await post(sid, method, params, key.headers);
      expect(r.status, method).toBe(401);
      expect(r.challenge, method).toContain('error="invalid_token"');
      expect(r.challenge, method).toContain(expectedMetadata());
      expect(r.body.error, method).toMatchObject({ code: -32001, data: { code: "unauthorized", endpoint: "checkout" } });
      expect(r.body.id, method).toBe(7);
    }
    for (const method of ["GET", "DELETE"] as const) {
      const r = await srv.fetch(CHECKOUT, { method, headers: { accept: "text/event-stream", "mcp-session-id": sid, "mcp-protocol-version": "2025-11-25", ...key.headers } });
      expect(r.status, method).toBe(401);
      expect(r.headers.get("www-authenticate"), method).toContain('error="invalid_token"');
      expect((await r.json()).error, method).toMatchObject({ code: -32001, data: { code: "unauthorized", endpoint: "checkout" } });
    }
    // still the address's anonymous session: listing without a credential works in it (it was not bound to the key)
    const anonymous = await post(sid, "tools/list", {}, {});
    expect(anonymous.status).toBe(200);
    expect(anonymous.body.result.tools.map((t: { name: string }) => t.name)).toContain("complete_checkout");
  }, 30_000);

  test("another caller's API key on tools/list, ping or GET in a client_credentials session gets 404 Session not found, no challenge; the session's own principal with a delegated token gets the 401", async () => {
    const machine = await token({ machine: true, resource: mcpResource(srv.running.services, MERCHANT, "checkout") });
    const { client, transport } = await sdkClient(CHECKOUT, { authorization: `Bearer ${machine}` });
    await client.connect(transport);
    const sid = transport.sessionId!;
    const own = await token({ machine: false, resource: mcpResource(srv.running.services, MERCHANT, "checkout") });
    for (const method of ["tools/list", "ping"]) {
      const probe = await post(sid, method, {}, key.headers);
      expect(probe.status, method).toBe(404);
      expect(probe.body.error, method).toEqual({ code: -32001, message: "Session not found" });
      expect(probe.challenge, method).toBeNull();
      const mine = await post(sid, method, {}, { authorization: `Bearer ${own}` });
      expect(mine.status, method).toBe(401);
      expect(mine.challenge, method).toContain('error="invalid_token"');
      expect(mine.body.error.data, method).toMatchObject({ code: "unauthorized", required_grant: "client_credentials" });
    }
    const sse = await srv.fetch(CHECKOUT, { method: "GET", headers: { accept: "text/event-stream", "mcp-session-id": sid, "mcp-protocol-version": "2025-11-25", ...key.headers } });
    expect(sse.status).toBe(404);
    expect(sse.headers.get("www-authenticate")).toBeNull();
    expect((await sse.json()).error).toEqual({ code: -32001, message: "Session not found" });
    // the session's own client_credentials token still lists in it
    await client.listTools();
    await client.close();
  }, 30_000);
});

describe("tools/list and ping without a session (MCP authorization: an unusable credential is 401 on any request)", () => {
  const names = (body: { result: { tools: { name: string }[] } }) => body.result.tools.map((t) => t.name);

  test("on a real merchant's checkout endpoint an API key or a user-delegated token is 401 with the invalid_token challenge on tools/list and ping", async () => {
    const delegated = await token({ machine: false, resource: mcpResource(srv.running.services, MERCHANT, "checkout") });
    for (const [who, headers, data] of [
      ["API key", key.headers, { code: "unauthorized", endpoint: "checkout" }],
      ["delegated token", { authorization: `Bearer ${delegated}` }, { code: "unauthorized", required_grant: "client_credentials" }],
    ] as const) {
      for (const method of ["tools/list", "ping"]) {
        const r = await rpc(srv, CHECKOUT, method, {}, headers);
        expect(r.status, `${who} ${method}`).toBe(401);
        expect(r.headers.get("www-authenticate"), `${who} ${method}`).toStartWith("Bearer ");
        expect(r.headers.get("www-authenticate"), `${who} ${method}`).toContain('error="invalid_token"');
        expect(r.headers.get("www-authenticate"), `${who} ${method}`).toContain(expectedMetadata());
        expect(r.body, `${who} ${method}`).toMatchObject({ jsonrpc: "2.0", id: 1, error: { code: -32001, data } });
        expect(r.body.result, `${who} ${method}`).toBeUndefined();
        // the caller's buckets as they stand, like every other answer of the endpoint
        expect(r.headers.get("x-ratelimit-limit"), `${who} ${method}`).not.toBeNull();
      }
    }
  }, 30_000);

  test("a token issued for the checkout endpoint is 401 on tools/list at the store's main endpoint (audience)", async () => {
    const narrow = await token({ machine: true, resource: mcpResource(srv.running.services, MERCHANT, "checkout") });
    const r = await rpc(srv, `/${MERCHANT}/mcp`, "tools/list", {}, { authorization: `Bearer ${narrow}` });
    expect(r.status).toBe(401);
    expect(r.headers.get("www-authenticate")).toContain('error="invalid_token"');
    expect(r.headers.get("www-authenticate")).toContain(`resource_metadata="${srv.url}/.well-known/oauth-protected-resource/${MERCHANT}/mcp"`);
    expect(r.body.error.data).toMatchObject({ code: "unauthorized", audience: mcpResource(srv.running.services, MERCHANT, "checkout") });
  }, 30_000);

  test("a client_credentials token lists and pings there, and an anonymous caller still gets the same list and ping answer", async () => {
    const machine = await token({ machine: true, resource: mcpResource(srv.running.services, MERCHANT, "checkout") });
    const listed = await rpc(srv, CHECKOUT, "tools/list", {}, { authorization: `Bearer ${machine}` });
    expect(listed.status).toBe(200);
    expect(listed.headers.get("www-authenticate")).toBeNull();
    expect(names(listed.body)).toContain("complete_checkout");
    const pinged = await rpc(srv, CHECKOUT, "ping", {}, { authorization: `Bearer ${machine}` });
    expect(pinged).toMatchObject({ status: 200, body: { jsonrpc: "2.0", id: 1, result: {} } });

    // anonymous: as before the fix, 200 with the endpoint's tools (a keyed tool called without a credential is the 401)
    const anonymous = await rpc(srv, CHECKOUT, "tools/list", {});
    expect(anonymous.status).toBe(200);
    expect(anonymous.headers.get("www-authenticate")).toBeNull();
    expect(names(anonymous.body)).toEqual(names(listed.body));
    expect(await rpc(srv, CHECKOUT, "ping", {})).toMatchObject({ status: 200, body: { jsonrpc: "2.0", id: 1, result: {} } });
  }, 30_000);

  test("the demo store's checkout endpoint still lists and pings with an API key", async () => {
    const listed = await rpc(srv, `/${DEMO}/mcp/checkout`, "tools/list", {}, key.headers);
    expect(listed.status).toBe(200);
    expect(names(listed.body)).toContain("complete_checkout");
    expect(await rpc(srv, `/${DEMO}/mcp/checkout`, "ping", {}, key.headers)).toMatchObject({ status: 200, body: { jsonrpc: "2.0", id: 1, result: {} } });
  }, 30_000);
});

describe("an anonymous call of a protected tool (review D-2)", () => {
  test("on a real merchant's checkout endpoint the 401 names the client_credentials token, not an agent key the endpoint refuses", async () => {
    const r = await rpc(srv, CHECKOUT, "tools/call", { name: "complete_checkout", arguments: {} }, {});
    expect(r.status).toBe(401);
    expect(r.headers.get("www-authenticate")).toContain(expectedMetadata());
    expect(r.body.error.data).toMatchObject({ code: "unauthorized", tool: "complete_checkout", required_grant: "client_credentials" });
    expect(r.body.error.message).toContain("client_credentials");
    expect(r.body.error.message).not.toContain("X-Agent-Api-Key");
  }, 30_000);

  test("on the demo store's checkout endpoint it still names an agent key or an OAuth token", async () => {
    const r = await rpc(srv, `/${DEMO}/mcp/checkout`, "tools/call", { name: "complete_checkout", arguments: {} }, {});
    expect(r.status).toBe(401);
    expect(r.body.error.message).toContain("X-Agent-Api-Key");
    expect(r.body.error.data.required_grant).toBeUndefined();
  }, 30_000);
});
