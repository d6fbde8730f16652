/**
 * MCP sessions across gateway replicas: one actor host and two gateway processes over a local 3-node NATS cluster,
 * sharing the session directory (gateway/mcp/session-directory.ts, a JetStream KV bucket). A session opened on one
 * gateway is served by the other without sticky routing: its fast-path calls from the directory entry, its write
 * tools (human confirmation on the call's SSE stream) by adopting the session there; DELETE on either ends it on
 * both; another caller is told the session does not exist on both. Also the review RH fixes: one adoption per
 * session per gateway when its first requests arrive together, a gateway's per-address cap ending only sessions
 * opened there, the size of a client's answer, and the stored initialize bounded in bytes. And a client's cancel of a
 * call reaches the gateway running it wherever it lands (broadcast over NATS).
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { ElicitRequestSchema, type CallToolResult } from "@modelcontextprotocol/sdk/types.js";
import { connect as natsConnect } from "@nats-io/transport-node";
import { Kvm } from "@nats-io/kv";
import { MAX_ANSWER_BYTES, MAX_SESSIONS_PER_ADDRESS, MAX_STORED_CLIENT_INIT } from "../../gateway/mcp/server.ts";
import { json, startDeployment, type Deployment } from "../helpers/deployment.ts";
import { ADMIN, ALL_SCOPES } from "../helpers/agents.ts";
import { DEMO, DEMO_PRODUCT } from "../mcp/helpers.ts";

let dep: Deployment | undefined;
let gw: [string, string];
let adminToken = "";

beforeAll(async () => {
  const d = await startDeployment(
    { prefix: "acs-dist-mcp-", seeded: true, gateways: 2, env: { RATE_LIMITS_ENABLED: "false" } },
    (started) => (dep = started),
  );
  gw = [d.gateways[0]!, d.gateways[1]!];
  const login = await json(`${gw[0]}/api/v1/auth/login`, { method: "POST", body: ADMIN });
  expect(login.status).toBe(200);
  adminToken = login.body.data.token;
}, 120_000);

afterAll(async () => {
  await dep?.stop();
});

async function newKey(): Promise<Record<string, string>> {
  const r = await json(`${gw[0]}/api/v1/agent-keys`, {
    method: "POST",
    headers: { authorization: `Bearer ${adminToken}` },
    body: { name: "mcp replicas", scopes: ALL_SCOPES, tier: "ENTERPRISE" },
  });
  expect(r.status).toBe(201);
  return { "x-agent-api-key": r.body.data.key };
}

/** An SDK client on `gateway`: a new session (initialize) unless `sessionId` names one to continue. */
async function client(gateway: string, headers: Record<string, string>, sessionId?: string) {
  const c = new Client({ name: "replica-test", version: "1.0.0" }, { capabilities: { elicitation: { form: {} } } });
  const asked: string[] = [];
  c.setRequestHandler(ElicitRequestSchema, async (req) => {
    asked.push((req.params as { message: string }).message);
    return { action: "accept", content: { approve: true } };
  });
  const transport = new StreamableHTTPClientTransport(new URL(`${gateway}/${DEMO}/mcp`), { requestInit: { headers }, sessionId });
  await c.connect(transport);
  return { c, transport, asked };
}

/** One JSON-RPC POST in a session, answered as JSON (the fast path) or SSE. */
async function post(gateway: string, headers: Record<string, string>, sessionId: string, method: string, params: unknown = {}) {
  const res = await fetch(`${gateway}/${DEMO}/mcp`, {
    method: "POST",
    headers: { "content-type": "application/json", accept: "application/json, text/event-stream", "mcp-session-id": sessionId, ...headers },
    body: JSON.stringify({ jsonrpc: "2.0", id: 7, method, params }),
  });
  const text = await res.text();
  return { status: res.status, type: res.headers.get("content-type"), body: res.headers.get("content-type")?.startsWith("application/json") ? JSON.parse(text) : text };
}

const SSE_JSON = { "content-type": "application/json", accept: "application/json, text/event-stream" };

/** A session opened by hand on `gateway` (initialize, then notifications/initialized); its id. */
async function openSession(gateway: string, headers: Record<string, string>): Promise<string> {
  const init = await fetch(`${gateway}/${DEMO}/mcp`, {
    method: "POST",
    headers: { ...SSE_JSON, ...headers },
    body: JSON.stringify({ jsonrpc: "2.0", id: 1, method: "initialize", params: { protocolVersion: "2025-06-18", capabilities: { elicitation: { form: {} } }, clientInfo: { name: "replica-test", version: "1" } } }),
  });
  await init.text();
  expect(init.status).toBe(200);
  const id = init.headers.get("mcp-session-id")!;
  const done = await fetch(`${gateway}/${DEMO}/mcp`, { method: "POST", headers: inSession(id, headers), body: JSON.stringify({ jsonrpc: "2.0", method: "notifications/initialized" }) });
  await done.text();
  expect(done.status).toBe(202);
  return id;
}

function inSession(sessionId: string, headers: Record<string, string>): Record<string, string> {
  return { ...SSE_JSON, ...headers, "mcp-session-id": sessionId, "mcp-protocol-version": "2025-06-18" };
}

/** A create_cart call in the session on `gateway`, read as SSE up to the human's question. */
async function writeCall(gateway: string, headers: Record<string, string>, sessionId: string, id: number) {
  const res = await fetch(`${gateway}/${DEMO}/mcp`, {
    method: "POST",
    headers: inSession(sessionId, headers),
    body: JSON.stringify({ jsonrpc: "2.0", id, method: "tools/call", params: { name: "create_cart", arguments: { items: [{ product_id: DEMO_PRODUCT, quantity: 1 }] } } }),
  });
  expect(res.status).toBe(200);
  const next = sseEvents(res);
  const question = await next();
  expect(question.method).toBe("elicitation/create");
  return { next, question };
}

/** The human's yes to `questionId`, POSTed to `gateway`. */
function approve(gateway: string, headers: Record<string, string>, sessionId: string, questionId: string) {
  return fetch(`${gateway}/${DEMO}/mcp`, {
    method: "POST",
    headers: inSession(sessionId, headers),
    body: JSON.stringify({ jsonrpc: "2.0", id: questionId, result: { action: "accept", content: { approve: true } } }),
  });
}

/** A notification in the session on `gateway` (an SDK message: a gateway without a copy adopts the session); its status. */
async function notify(gateway: string, headers: Record<string, string>, sessionId: string): Promise<number> {
  const r = await fetch(`${gateway}/${DEMO}/mcp`, { method: "POST", headers: inSession(sessionId, headers), body: JSON.stringify({ jsonrpc: "2.0", method: "notifications/roots/list_changed" }) });
  await r.text();
  return r.status;
}

/** The copy of the session (on its gateway) that asked a question: the middle part of its id. */
const copyThatAsked = (questionId: string) => questionId.split(".").slice(0, 2).join(".");

/** Reads SSE events (their `data` as JSON) from a response body, one at a time. */
function sseEvents(res: Response) {
  const reader = res.body!.getReader();
  const decoder = new TextDecoder();
  let buffer = "";
  return async function next(): Promise<any> {
    for (;;) {
      const end = buffer.indexOf("\n\n");
      if (end >= 0) {
        const event = buffer.slice(0, end);
        buffer = buffer.slice(end + 2);
        const data = event.split("\n").filter((l) => l.startsWith("data:")).map((l) => l.slice(5).trim()).join("\n");
        if (data) return JSON.parse(data);
        continue;
      }
      const { done, value } = await reader.read();
      if (done) throw new Error("the stream ended");
      buffer += decoder.decode(value, { stream: true });
    }
  };
}

describe("an MCP session opened on one gateway", () => {
  test("is served by the other: tools/list, a fast-path tools/call, and a write tool that asks the human there", async () => {
    const key = await newKey();
    const first = await client(gw[0], key);
    const sessionId = first.transport.sessionId!;
    expect(sessionId).toMatch(/^[0-9a-f-]{36}$/);

    const second = await client(gw[1], key, sessionId);
    const listed = await second.c.listTools();
    expect(listed.tools.map((t) => t.name)).toContain("create_cart");

    const search = await post(gw[1], key, sessionId, "tools/call", { name: "search_products", arguments: { query: "headphones", limit: 2 } });
    expect(search.status).toBe(200);
    expect(search.type).toStartWith("application/json");
    expect(search.body.id).toBe(7);
    expect(search.body.result.isError).toBeUndefined();
    expect(search.body.result.structuredContent.products.length).toBeGreaterThan(0);

    // a write tool needs the SDK transport: the second gateway adopts the session and asks on the call's stream
    const cart = (await second.c.callTool({ name: "create_cart", arguments: { items: [{ product_id: DEMO_PRODUCT, quantity: 1 }] } })) as CallToolResult;
    expect(cart.isError).toBeUndefined();
    expect(second.asked).toHaveLength(1);
    const made = cart.structuredContent as { cart_id?: string; id?: string };
    expect(made.cart_id ?? made.id).toBeString();

    // and the first gateway still serves it
    expect((await post(gw[0], key, sessionId, "ping")).status).toBe(200);
    await first.c.close();
    await second.c.close();
  }, 60_000);

  test("is 404 Session not found on both gateways for another key, as an unknown session is", async () => {
    const owner = await newKey();
    const other = await newKey();
    const { c, transport } = await client(gw[0], owner);
    const sessionId = transport.sessionId!;
    for (const g of gw) {
      for (const method of ["tools/list", "ping"]) {
        const r = await post(g, other, sessionId, method);
        expect({ status: r.status, body: r.body }).toEqual({ status: 404, body: { jsonrpc: "2.0", id: null, error: { code: -32001, message: "Session not found" } } });
      }
      const call = await post(g, other, sessionId, "tools/call", { name: "search_products", arguments: { query: "shirt" } });
      expect({ status: call.status, body: call.body }).toEqual({ status: 404, body: { jsonrpc: "2.0", id: null, error: { code: -32001, message: "Session not found" } } });
    }
    // the owner keeps it on both
    for (const g of gw) expect((await post(g, owner, sessionId, "tools/list")).status).toBe(200);
    await c.close();
  }, 60_000);

  test("ends on both gateways when DELETEd on either, including the other's adopted copy", async () => {
    const key = await newKey();
    const first = await client(gw[0], key);
    const sessionId = first.transport.sessionId!;
    // the second gateway adopts it (a write tool goes through its own SDK copy of the session)
    const second = await client(gw[1], key, sessionId);
    const cart = (await second.c.callTool({ name: "create_cart", arguments: { items: [{ product_id: DEMO_PRODUCT, quantity: 1 }] } })) as CallToolResult;
    expect(cart.isError).toBeUndefined();

    const del = await fetch(`${gw[0]}/${DEMO}/mcp`, { method: "DELETE", headers: { "mcp-session-id": sessionId, ...key } });
    expect(del.status).toBe(200);
    for (const g of gw) {
      for (const method of ["tools/list", "ping"]) {
        const r = await post(g, key, sessionId, method);
        expect({ status: r.status, body: r.body }).toEqual({ status: 404, body: { jsonrpc: "2.0", id: null, error: { code: -32001, message: "Session not found" } } });
      }
      const write = await post(g, key, sessionId, "tools/call", { name: "create_cart", arguments: { items: [{ product_id: DEMO_PRODUCT, quantity: 1 }] } });
      expect(write.status).toBe(404);
    }

    // and the other way round: a session DELETEd on the gateway that did not open it
    const third = await client(gw[0], key);
    const id3 = third.transport.sessionId!;
    expect((await fetch(`${gw[1]}/${DEMO}/mcp`, { method: "DELETE", headers: { "mcp-session-id": id3, ...key } })).status).toBe(200);
    for (const g of gw) expect((await post(g, key, id3, "ping")).status).toBe(404);
    await Promise.allSettled([first.c.close(), second.c.close(), third.c.close()]);
  }, 60_000);

  test("a write tool asked on one gateway is approved by the human's answer reaching the other (forwarded over NATS)", async () => {
    const key = await newKey();
    const { c, transport } = await client(gw[0], key);
    const sessionId = transport.sessionId!;
    const headers = { "content-type": "application/json", accept: "application/json, text/event-stream", "mcp-session-id": sessionId, ...key };
    const call = await fetch(`${gw[1]}/${DEMO}/mcp`, {
      method: "POST",
      headers,
      body: JSON.stringify({ jsonrpc: "2.0", id: 41, method: "tools/call", params: { name: "create_cart", arguments: { items: [{ product_id: DEMO_PRODUCT, quantity: 1 }] } } }),
    });
    expect(call.status).toBe(200);
    const next = sseEvents(call);
    const question = await next();
    expect(question.method).toBe("elicitation/create");
    // the question's id names the gateway and session copy that asked it, so no other copy can take its answer
    expect(question.id).toMatch(/^[0-9a-f]{8}\.\d+\.\d+$/);
    const answer = await fetch(`${gw[0]}/${DEMO}/mcp`, {
      method: "POST",
      headers,
      body: JSON.stringify({ jsonrpc: "2.0", id: question.id, result: { action: "accept", content: { approve: true } } }),
    });
    expect(answer.status).toBe(202);
    const result = await next();
    expect(result.id).toBe(41);
    expect(result.result.isError).toBeUndefined();
    const made = result.result.structuredContent as { cart_id?: string; id?: string };
    expect(made.cart_id ?? made.id).toBeString();
    await c.close();
  }, 60_000);

  test("opened without a credential, it is bound on both gateways by the first key presented on either", async () => {
    const [a, b] = [await newKey(), await newKey()];
    const { c, transport } = await client(gw[0], {});
    const sessionId = transport.sessionId!;
    // key A signs in to it on the second gateway: the binding is written to the directory
    expect((await post(gw[1], a, sessionId, "tools/list")).status).toBe(200);
    for (const g of gw) {
      expect((await post(g, b, sessionId, "ping")).status).toBe(404);
      expect((await post(g, {}, sessionId, "ping")).status).toBe(404);
      expect((await post(g, a, sessionId, "ping")).status).toBe(200);
    }
    await c.close();
  }, 60_000);

  test("keeps at most 16 KiB of a client's initialize in the directory, and its elicitation capability with it", async () => {
    const key = await newKey();
    const init = await fetch(`${gw[0]}/${DEMO}/mcp`, {
      method: "POST",
      headers: { "content-type": "application/json", accept: "application/json, text/event-stream", ...key },
      body: JSON.stringify({
        jsonrpc: "2.0",
        id: 1,
        method: "initialize",
        params: { protocolVersion: "2025-06-18", capabilities: { elicitation: { form: {} }, experimental: { pad: { data: "x".repeat(200_000) } } }, clientInfo: { name: "padded", version: "1" } },
      }),
    });
    const initText = await init.text();
    expect({ status: init.status, text: init.status === 200 ? "" : initText }).toEqual({ status: 200, text: "" });
    const sessionId = init.headers.get("mcp-session-id")!;
    const nc = await natsConnect({ servers: dep!.natsUrl });
    try {
      const entry = await (await new Kvm(nc).open("mcp_sessions")).get(sessionId);
      expect(entry!.length).toBeLessThanOrEqual(MAX_STORED_CLIENT_INIT + 1024);
      expect(entry!.json<{ client: unknown }>().client).toEqual({ protocolVersion: "2025-06-18", capabilities: { elicitation: { form: {} } }, clientInfo: { name: "padded", version: "1" } });
    } finally {
      await nc.close();
    }
    const second = await client(gw[1], key, sessionId);
    const cart = (await second.c.callTool({ name: "create_cart", arguments: { items: [{ product_id: DEMO_PRODUCT, quantity: 1 }] } })) as CallToolResult;
    expect(cart.isError).toBeUndefined();
    expect(second.asked).toHaveLength(1);
    await second.c.close();
  }, 60_000);

  test("keeps at most 16 KiB of a client's initialize counted in bytes, not characters", async () => {
    const key = await newKey();
    const init = await fetch(`${gw[0]}/${DEMO}/mcp`, {
      method: "POST",
      headers: { ...SSE_JSON, ...key },
      body: JSON.stringify({
        jsonrpc: "2.0",
        id: 1,
        method: "initialize",
        // 16,200 characters but 48,600 bytes of UTF-8
        params: { protocolVersion: "2025-06-18", capabilities: { elicitation: { form: {} }, experimental: { pad: { data: "一".repeat(16_200) } } }, clientInfo: { name: "wide", version: "1" } },
      }),
    });
    await init.text();
    expect(init.status).toBe(200);
    const nc = await natsConnect({ servers: dep!.natsUrl });
    try {
      const entry = await (await new Kvm(nc).open("mcp_sessions")).get(init.headers.get("mcp-session-id")!);
      expect(entry!.length).toBeLessThanOrEqual(MAX_STORED_CLIENT_INIT + 1024);
      expect(entry!.json<{ client: unknown }>().client).toEqual({ protocolVersion: "2025-06-18", capabilities: { elicitation: { form: {} } }, clientInfo: { name: "wide", version: "1" } });
    } finally {
      await nc.close();
    }
  }, 60_000);

  test("requests arriving together at a gateway without a copy adopt the session once, and the human's answer completes the write", async () => {
    // a gateway of its own (no copy of anything yet) that logs each adoption
    const g3 = await dep!.spawnRole("gateway", { LOG_LEVEL: "debug" });
    const adoptions = () => g3.output.filter((l) => l.includes("adopted an MCP session")).length;
    const key = await newKey();
    const sessionId = await openSession(gw[0], key);
    // a write call and notifications 0-30 ms behind it, as an SDK client moved to another gateway sends its first
    // POSTs and opens its GET stream: each reads "no copy here" before the first adoption has finished
    const call = writeCall(g3.url!, key, sessionId, 41);
    const notes = Array.from({ length: 10 }, (_, i) => Bun.sleep(i * 3).then(() => notify(g3.url!, key, sessionId)));
    const { next, question } = await call;
    expect(await Promise.all(notes)).toEqual(Array(10).fill(202));
    expect((await approve(g3.url!, key, sessionId, question.id)).status).toBe(202);
    const result = await Promise.race([next(), Bun.sleep(10_000).then(() => "no result in 10 s")]);
    expect(result.id).toBe(41);
    expect(result.result.isError).toBeUndefined();
    expect(adoptions()).toBe(1);
    // and the session's next question comes from the same copy
    const again = await writeCall(g3.url!, key, sessionId, 42);
    expect(copyThatAsked(again.question.id)).toBe(copyThatAsked(question.id));
    expect((await approve(g3.url!, key, sessionId, again.question.id)).status).toBe(202);
    expect((await again.next()).id).toBe(42);
    expect(adoptions()).toBe(1);
    g3.proc.kill("SIGTERM");
    await g3.proc.exited;
  }, 60_000);

  test("an answer over MAX_ANSWER_BYTES is refused 400 before it is forwarded, and the question still takes the real answer", async () => {
    const key = await newKey();
    const sessionId = await openSession(gw[0], key);
    const { next, question } = await writeCall(gw[1], key, sessionId, 43);
    // near the 1 MiB body limit: forwarded over NATS with its wrapper it would exceed max_payload
    const base = JSON.stringify({ jsonrpc: "2.0", id: question.id, result: { action: "accept", content: { approve: true }, _meta: { pad: "" } } });
    const big = base.replace('"pad":""', `"pad":"${"x".repeat(1_048_000 - base.length)}"`);
    const refused = await fetch(`${gw[0]}/${DEMO}/mcp`, { method: "POST", headers: inSession(sessionId, key), body: big });
    expect({ status: refused.status, body: await refused.json() }).toEqual({
      status: 400,
      body: { jsonrpc: "2.0", id: null, error: { code: -32600, message: `Invalid Request: an answer to a server request is at most ${MAX_ANSWER_BYTES} bytes.`, data: { code: "validation_error", maxBytes: MAX_ANSWER_BYTES } } },
    });
    expect((await approve(gw[0], key, sessionId, question.id)).status).toBe(202);
    const result = await next();
    expect(result.id).toBe(43);
    expect(result.result.isError).toBeUndefined();
  }, 60_000);

  test("a tool call waiting for the human on one gateway is cancelled by notifications/cancelled POSTed to the other: the question is withdrawn, a later yes pays nothing", async () => {
    const key = await newKey();
    const { c, transport } = await client(gw[0], key);
    const sessionId = transport.sessionId!;
    const cart = (await c.callTool({ name: "create_cart", arguments: { items: [{ product_id: DEMO_PRODUCT, quantity: 1 }] } })) as CallToolResult;
    const preview = (await c.callTool({ name: "preview_checkout", arguments: { cart_id: (cart.structuredContent as { cart_id: string }).cart_id } })) as CallToolResult;
    const cs = (preview.structuredContent as { checkout_session_id: string }).checkout_session_id;
    expect(cs).toMatch(/^cs_/);
    // the payment runs on the second gateway (the client's POST was balanced there) and asks the human
    const stop = new AbortController();
    const res = await fetch(`${gw[1]}/${DEMO}/mcp`, {
      method: "POST",
      headers: inSession(sessionId, key),
      body: JSON.stringify({ jsonrpc: "2.0", id: 44, method: "tools/call", params: { name: "complete_checkout", arguments: { checkout_session_id: cs, idempotency_key: crypto.randomUUID(), payment_method: "MOCK" } } }),
      signal: stop.signal,
    });
    const next = sseEvents(res);
    const question = await next();
    expect(question.method).toBe("elicitation/create");
    // the client gives up; its cancel lands on the first gateway, which holds a copy of the session but not the call
    const cancel = await fetch(`${gw[0]}/${DEMO}/mcp`, {
      method: "POST",
      headers: inSession(sessionId, key),
      body: JSON.stringify({ jsonrpc: "2.0", method: "notifications/cancelled", params: { requestId: 44, reason: "the user pressed stop" } }),
    });
    expect(cancel.status).toBe(202);
    // the gateway running the call withdraws its question on the call's stream
    const withdrawn = await Promise.race([next(), Bun.sleep(5_000).then(() => "the question was not withdrawn within 5 s")]);
    expect(withdrawn).toEqual({ jsonrpc: "2.0", method: "notifications/cancelled", params: { requestId: question.id, reason: expect.any(String) } });
    // the human's yes arrives anyway: it answers nothing, nothing is paid
    expect((await approve(gw[1], key, sessionId, question.id)).status).toBe(202);
    await Bun.sleep(300);
    const status = await post(gw[0], key, sessionId, "tools/call", { name: "get_checkout_status", arguments: { checkout_session_id: cs } });
    expect(status.status).toBe(200);
    const st = status.body.result.structuredContent as { checkout_status: string; order_id?: string | null };
    expect({ status: st.checkout_status, order: st.order_id ?? null }).toEqual({ status: "READY_FOR_PAYMENT", order: null });
    stop.abort();
    await c.close();
  }, 60_000);

  test("a cancel naming the call's request id from another session of the same key cancels nothing, on either gateway", async () => {
    const key = await newKey();
    const running = await openSession(gw[0], key);
    const other = await openSession(gw[0], key);
    await fetch(`${gw[1]}/${DEMO}/mcp`, { method: "POST", headers: inSession(other, key), body: JSON.stringify({ jsonrpc: "2.0", id: 1, method: "ping" }) }).then((r) => r.text());
    const { next, question } = await writeCall(gw[1], key, running, 45);
    for (const g of gw) {
      const r = await fetch(`${g}/${DEMO}/mcp`, {
        method: "POST",
        headers: inSession(other, key),
        body: JSON.stringify({ jsonrpc: "2.0", method: "notifications/cancelled", params: { requestId: 45, reason: "not yours" } }),
      });
      expect(r.status).toBe(202);
    }
    await Bun.sleep(200); // what was broadcast has arrived
    expect((await approve(gw[0], key, running, question.id)).status).toBe(202);
    const result = await next();
    expect(result.id).toBe(45);
    expect(result.result.isError).toBeUndefined();
  }, 60_000);

  test(`a gateway's cap of ${MAX_SESSIONS_PER_ADDRESS} sessions per address ends only sessions opened there: adopted copies are dropped there alone`, async () => {
    const key = await newKey();
    const g3 = await dep!.spawnRole("gateway");
    const note = (gateway: string, sessionId: string) => notify(gateway, key, sessionId);
    // every session of this file comes from 127.0.0.1: the earlier tests' sessions are the least recently used
    const onFirst: string[] = [];
    for (let i = 0; i < MAX_SESSIONS_PER_ADDRESS; i++) onFirst.push(await openSession(gw[0], key));
    const elsewhere = [await openSession(gw[1], key)];
    // the first gateway holds the address's 100 opened sessions and adopts one more
    expect(await note(gw[0], elsewhere[0]!)).toBe(202);
    // and then 100 more opened on the other two gateways: 101 adopted copies, the least recently used one dropped
    for (let i = 0; i < MAX_SESSIONS_PER_ADDRESS / 2; i++) elsewhere.push(await openSession(gw[1], key), await openSession(g3.url!, key));
    for (const id of elsewhere.slice(1)) expect(await note(gw[0], id)).toBe(202);
    const pings = await Promise.all([...onFirst, ...elsewhere].map(async (id) => (await post(gw[1], key, id, "ping")).status));
    expect(pings.filter((s) => s !== 200)).toEqual([]);
    // the dropped copy's session is adopted again when it needs the first gateway's copy
    expect(await note(gw[0], elsewhere[0]!)).toBe(202);
    g3.proc.kill("SIGTERM");
    await g3.proc.exited;
  }, 180_000);

  // last: it stops the first gateway
  test("outlives the gateway that opened it: stopped with SIGTERM, its sessions go on at the other", async () => {
    const key = await newKey();
    const { transport } = await client(gw[0], key);
    const sessionId = transport.sessionId!;
    const proc = dep!.gatewayProcs[0]!.proc;
    proc.kill("SIGTERM");
    expect(await proc.exited).toBe(0);
    const second = await client(gw[1], key, sessionId);
    expect((await post(gw[1], key, sessionId, "tools/list")).status).toBe(200);
    const cart = (await second.c.callTool({ name: "create_cart", arguments: { items: [{ product_id: DEMO_PRODUCT, quantity: 1 }] } })) as CallToolResult;
    expect(cart.isError).toBeUndefined();
    expect(second.asked).toHaveLength(1);
    await second.c.close();
  }, 60_000);
});
