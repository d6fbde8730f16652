/**
 * Audit B (session 17), B6: SITE_URL is accepted with a trailing slash (config schema `^https?://`), and then used
 * raw: the signed trust score's `jwks_url` is `https://shop.example//.well-known/jwks.json` (a path that is not the
 * well-known document on a server that does not collapse slashes), the protocols page's MCP endpoint
 * `https://shop.example//demo-store/mcp`, the x402 challenge's resource.url `https://shop.example//api/v1/agent/checkout`.
 * An operator writing the origin with its slash (a common way) publishes broken links. Expected: the origin
 * normalised once (no trailing slash), or the value refused at start-up.
 */
import { afterAll, beforeAll, expect, test } from "bun:test";
import { ALL_SCOPES, createKey, type TestKey } from "../helpers/agents.ts";
import { startServer, type TestServer } from "../helpers/server.ts";

let srv: TestServer;
let key: TestKey;

beforeAll(async () => {
  srv = await startServer({ seed: true, config: { SITE_URL: "https://shop.example/", RATE_LIMITS_ENABLED: false } });
  key = await createKey(srv, { scopes: ALL_SCOPES });
}, 120_000);
afterAll(async () => {
  await srv?.stop();
}, 30_000);

test("published links hold no double slash when SITE_URL ends with one", async () => {
  const ts = await srv.json("/api/v1/stores/demo-store/trust-score");
  expect(ts.status).toBe(200);
  const pr = await srv.json("/api/v1/agent/merchants/demo-store/protocols", { headers: key.headers });
  expect(pr.status).toBe(200);
  // fails now: "https://shop.example//.well-known/jwks.json"
  expect(ts.body.data.jwks_url).toBe("https://shop.example/.well-known/jwks.json");
  // fails now: "https://shop.example//demo-store/mcp"
  expect(pr.body.data.mcp.endpoint).toBe("https://shop.example/demo-store/mcp");
});
