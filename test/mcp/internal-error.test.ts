/**
 * An unexpected fault on an MCP endpoint is a 500 like REST's: `internal_error` with `details.requestId` (the id the
 * log line carries too), no stack. Driven through a gateway app of its own whose MCP gateway is made to fail
 * (fault injection: nothing on the real path fails on demand).
 */
import { afterAll, beforeAll, expect, test } from "bun:test";
import { createApp } from "../../gateway/app.ts";
import type { McpGateway } from "../../gateway/mcp/server.ts";
import { startServer, type TestServer } from "../helpers/server.ts";
import { DEMO } from "./helpers.ts";

let srv: TestServer;

beforeAll(async () => {
  srv = await startServer({ seed: true, config: { RATE_LIMITS_ENABLED: false, LOG_LEVEL: "error" } });
}, 60_000);
afterAll(async () => {
  await srv?.stop();
});

test("an MCP request that fails unexpectedly answers 500 internal_error with details.requestId and no internals", async () => {
  const svc = srv.running.services;
  const app = createApp(svc);
  const gw = svc.extras.get("mcpGateway") as McpGateway; // the instance this app's MCP routes call
  gw.handle = async () => {
    throw new Error("socket torn down at /var/lib/secret");
  };
  const res = await app.handle(
    new Request(`${srv.url}/${DEMO}/mcp`, {
      method: "POST",
      headers: { "content-type": "application/json", accept: "application/json, text/event-stream" },
      body: JSON.stringify({ jsonrpc: "2.0", id: 1, method: "ping" }),
    }),
  );
  expect(res.status).toBe(500);
  const text = await res.text();
  const json = JSON.parse(text);
  expect(json).toMatchObject({ success: false, code: "internal_error", details: { requestId: res.headers.get("x-request-id") } });
  expect(json.details.requestId).toBeString();
  expect(text).not.toContain("secret");
});

test("a database outage on an MCP endpoint is the envelope's 503 service_unavailable with Retry-After, not a 500", async () => {
  const svc = srv.running.services;
  const app = createApp(svc);
  const gw = svc.extras.get("mcpGateway") as McpGateway;
  gw.handle = async () => {
    throw Object.assign(new Error("connect ECONNREFUSED 127.0.0.1:5432"), { code: "ECONNREFUSED" });
  };
  const res = await app.handle(
    new Request(`${srv.url}/${DEMO}/mcp`, {
      method: "POST",
      headers: { "content-type": "application/json", accept: "application/json, text/event-stream" },
      body: JSON.stringify({ jsonrpc: "2.0", id: 1, method: "ping" }),
    }),
  );
  expect(res.status).toBe(503);
  expect(res.headers.get("retry-after")).toBe("30");
  expect(await res.json()).toMatchObject({ success: false, code: "service_unavailable" });
});
