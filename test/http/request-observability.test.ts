/**
 * What an operator sees of a request (audit U): a failed request can be found in the log by its X-Request-Id
 * (MED-1), requests refused before routing are counted under their route, not with the 404s (MED-3), and a body
 * over the limit is answered by us, with the envelope and the request id, whether its length is declared (even past
 * Bun's old 21 MiB cap) or it comes chunked (LOW-4). The real service, in this process, so its log can be captured.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { setLogLevel, setLogSink } from "../../infra/log.ts";
import { createKey, type TestKey } from "../helpers/agents.ts";
import { rawRequest as sendRaw, repeatingBody } from "../helpers/raw-http.ts";
import { startServer, type TestServer } from "../helpers/server.ts";

const SKILLET = "399d72f1-303c-5cf3-bc6a-5c82714b85d4"; // DS-0005, in stock

let srv: TestServer;
let cartKey: TestKey;
let searchKey: TestKey;
const logLines: string[] = [];
let restoreSink: () => void = () => {};

beforeAll(async () => {
  restoreSink = setLogSink((line) => void logLines.push(line));
  // idle activations passivate at once, so the next request for a cart loads it again; asks give up after 2 s
  // instead of the client's 10 s (the 503 actor_unavailable case waits that long)
  srv = await startServer({ config: { LOG_LEVEL: "info", ACTOR_IDLE_MS: 100, ACTOR_ASK_TIMEOUT_MS: 2_000 } });
  cartKey = await createKey(srv, { scopes: ["cart"] });
  searchKey = await createKey(srv, { scopes: ["search"] });
}, 120_000);

afterAll(async () => {
  setLogLevel("error");
  restoreSink();
  await srv?.stop();
}, 60_000);

const linesWith = (text: string) => logLines.filter((l) => l.includes(text)).map((l) => JSON.parse(l) as Record<string, unknown>);

const rawRequest = (head: string, body: string) => sendRaw(srv, head, body);

describe("a failed request in the log", () => {
  test("a 503 actor_unavailable is logged with the caller's X-Request-Id, the route template and the code", async () => {
    const created = await srv.json("/api/v1/agent/cart", { method: "POST", headers: cartKey.headers, body: { items: [{ product_id: SKILLET, quantity: 1 }] } });
    expect(created.status).toBe(201);
    const id = created.body.data.id as string;
    await Bun.sleep(400); // passivated: the next request loads it
    // a state its onActivate cannot read: every load throws, and the caller gets 503 actor_unavailable
    await srv.db.sql`UPDATE actor_state SET state = 'null'::jsonb WHERE kind = 'cart' AND id = ${id}`;
    const requestId = "w-trace-503-0001";
    const res = await srv.fetch(`/api/v1/agent/cart/${id}`, { headers: { ...cartKey.headers, "x-request-id": requestId } });
    expect(res.status).toBe(503);
    expect(res.headers.get("x-request-id")).toBe(requestId);
    expect((await res.json()).code).toBe("actor_unavailable");
    await Bun.sleep(50); // the line is written after the response
    // the actor host's lines of that request carry its id too (test/http/request-id-actor-logs.test.ts)
    const lines = linesWith(requestId).filter((l) => l.msg === "request failed");
    expect(lines.length).toBe(1);
    expect(lines[0]).toMatchObject({
      level: "warn",
      msg: "request failed",
      requestId,
      method: "GET",
      route: "/api/v1/agent/cart/:id",
      path: `/api/v1/agent/cart/${id}`,
      status: 503,
      code: "actor_unavailable",
    });
    // never the key itself
    expect(logLines.join("\n")).not.toContain(cartKey.key);
  }, 60_000);

  test("a successful request writes no line at LOG_LEVEL=info, and one access line at debug", async () => {
    const quiet = "w-trace-ok-info-0001";
    expect((await srv.fetch(`/api/v1/agent/products/${SKILLET}`, { headers: { ...searchKey.headers, "x-request-id": quiet } })).status).toBe(200);
    await Bun.sleep(50); // the hook runs after the response is sent
    const loud = "w-trace-ok-debug-0001";
    setLogLevel("debug");
    try {
      expect((await srv.fetch(`/api/v1/agent/products/${SKILLET}`, { headers: { ...searchKey.headers, "x-request-id": loud } })).status).toBe(200);
      await Bun.sleep(50);
    } finally {
      setLogLevel("info");
    }
    expect(linesWith(quiet)).toEqual([]);
    const access = linesWith(loud);
    expect(access.length).toBe(1);
    expect(access[0]).toMatchObject({ level: "debug", msg: "request", requestId: loud, method: "GET", route: "/api/v1/agent/products/:id", status: 200 });
    expect(typeof access[0]!.ms).toBe("number");
  });
});

describe("requests refused before routing in http_requests_total", () => {
  test("a 401 without a key, a 403 for a missing scope and a 429 carry their route template; a 404 stays unmatched", async () => {
    expect((await srv.fetch(`/api/v1/agent/products/${SKILLET}`)).status).toBe(401);
    expect((await srv.fetch("/api/v1/agent/merchants/northwind-outfitters", { headers: searchKey.headers })).status).toBe(403);
    expect((await srv.fetch("/api/v1/agent/no-such-route")).status).toBe(404);
    // a STARTER key's 100 requests a minute, then 429
    const limited = await createKey(srv, { scopes: ["search"] });
    let refused = 0;
    for (let i = 0; i < 105 && refused === 0; i++) {
      const res = await srv.fetch(`/api/v1/agent/availability/${SKILLET}`, { headers: limited.headers });
      await res.arrayBuffer();
      if (res.status === 429) refused++;
    }
    expect(refused).toBe(1);
    const text = await (await srv.fetch("/metrics")).text();
    const count = (labels: string) => Number(new RegExp(`^http_requests_total\\{${labels.replace(/[{}()[\].*+?^$|\\/]/g, "\\$&")}\\} (\\d+)$`, "m").exec(text)?.[1] ?? 0);
    expect(count('method="GET",route="/api/v1/agent/products/:id",status="401"')).toBeGreaterThanOrEqual(1);
    expect(count('method="GET",route="/api/v1/agent/merchants/:slug",status="403"')).toBeGreaterThanOrEqual(1);
    expect(count('method="GET",route="/api/v1/agent/availability/:id",status="429"')).toBe(1);
    expect(count('method="GET",route="unmatched",status="404"')).toBeGreaterThanOrEqual(1);
    expect(text).not.toMatch(/route="unmatched",status="(401|403|429)"/);
  }, 60_000);
});

describe("bodies over the limit", () => {
  test("a body declared larger than Bun's old 21 MiB cap gets our 413 envelope, the request id and Connection: close", async () => {
    const { host } = new URL(srv.url);
    const answer = await rawRequest(
      [`POST /api/v1/auth/login HTTP/1.1`, `Host: ${host}`, "Content-Type: application/json", "Content-Length: 99999999", "X-Request-Id: w-trace-413-0001"].join("\r\n"),
      "{}",
    );
    expect(answer).toStartWith("HTTP/1.1 413");
    expect(answer.toLowerCase()).toContain("x-request-id: w-trace-413-0001");
    expect(answer.toLowerCase()).toContain("connection: close");
    expect(answer.toLowerCase()).toContain("x-agent-commerce: 1");
    const body = JSON.parse(answer.slice(answer.indexOf("\r\n\r\n") + 4));
    expect(body).toMatchObject({ success: false, code: "payload_too_large", details: { limitBytes: 1048576 } });
    const text = await (await srv.fetch("/metrics")).text();
    expect(text).toMatch(/^http_requests_total\{method="POST",route="refused_before_routing",status="413"\} \d+$/m);
  });

  test("a chunked body past the route's 1 MiB limit is refused with 413 and the envelope while it is read", async () => {
    const total = 32 * 1024 * 1024;
    const { body: stream, state } = repeatingBody(new Uint8Array(64 * 1024).fill(0x61), total);
    const res = await fetch(srv.url + "/api/v1/auth/login", {
      method: "POST",
      headers: { "content-type": "application/json", "x-request-id": "w-trace-413-chunked" },
      body: stream,
      signal: AbortSignal.timeout(20_000),
    });
    expect(res.status).toBe(413);
    expect(res.headers.get("x-request-id")).toBe("w-trace-413-chunked");
    expect(await res.json()).toMatchObject({ success: false, code: "payload_too_large", details: { limitBytes: 1048576 } });
    // the service did not read the whole 32 MiB (Bun's old cap let 21 MiB through before refusing)
    expect(state.sent).toBeLessThan(total);
  }, 30_000);

  test("a chunked body past the limit on a store's MCP endpoint gets the same 413 as a JSON-RPC error, not a parse error", async () => {
    const { body: stream } = repeatingBody(new TextEncoder().encode(" ".repeat(64 * 1024)), 4 * 1024 * 1024);
    const res = await fetch(srv.url + "/demo-store/mcp", {
      method: "POST",
      headers: { "content-type": "application/json", accept: "application/json, text/event-stream" },
      body: stream,
      signal: AbortSignal.timeout(20_000),
    });
    expect(res.status).toBe(413);
    expect(res.headers.get("x-request-id")).toBeTruthy();
    // an MCP client reads JSON-RPC (gateway/mcp/oversize.ts; test/mcp/oversize.test.ts)
    expect(await res.json()).toMatchObject({ jsonrpc: "2.0", id: null, error: { code: -32600, data: { code: "payload_too_large", limitBytes: 1048576 } } });
  }, 30_000);

  test("a chunked body within the limit is read as before", async () => {
    const body = new TextEncoder().encode(JSON.stringify({ email: "admin@example.com", password: "admin-password" }));
    const stream = new ReadableStream<Uint8Array>({
      start(controller) {
        controller.enqueue(body.slice(0, 10));
        controller.enqueue(body.slice(10));
        controller.close();
      },
    });
    const res = await fetch(srv.url + "/api/v1/auth/login", { method: "POST", headers: { "content-type": "application/json" }, body: stream });
    expect(res.status).toBe(200);
    expect((await res.json()).data.token).toEqual(expect.any(String));
  });
});
