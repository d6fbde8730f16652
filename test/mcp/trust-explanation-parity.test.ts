/**
 * Audit M-6: MCP get_trust_explanation is built apart from REST GET /agent/merchants/{slug}/trust-explanation
 * (gateway/mcp/tools/integrations.ts vs gateway/rest/trust.ts) and leaves out seven of REST's fields, among them the
 * machine-readable verdict `recommendation_code` (proceed / proceed_with_caution / human_review / avoid) and
 * `operational_status`: an agent on MCP gets only the prose `recommendation`. docs/decisions.md ("MCP: one
 * application function per view, shared with REST") says MCP results carry every field REST shows.
 * Run: cp into test/mcp/ and `bun test/run.ts test/mcp/trust-explanation-parity.test.ts`.
 */
import { afterAll, beforeAll, expect, test } from "bun:test";
import { ALL_SCOPES, createKey, type TestKey } from "../helpers/agents.ts";
import { startServer, type TestServer } from "../helpers/server.ts";
import { connect, DEMO, structured, type Connected } from "./helpers.ts";

let srv: TestServer;
let key: TestKey;
let agent: Connected;
beforeAll(async () => {
  srv = await startServer({ seed: true, config: { RATE_LIMITS_ENABLED: false } });
  key = await createKey(srv, { scopes: ALL_SCOPES, tier: "ENTERPRISE" });
  agent = await connect(srv, { headers: key.headers });
}, 60_000);
afterAll(async () => {
  await agent?.close();
  await srv.stop();
});

test("get_trust_explanation carries every field of the REST trust explanation, with the same values", async () => {
  const rest = await srv.json(`/api/v1/agent/merchants/${DEMO}/trust-explanation`, { headers: key.headers });
  expect(rest.status).toBe(200);
  const mcp = structured<Record<string, unknown>>(await agent.call("get_trust_explanation"));
  const missing = Object.keys(rest.body.data).filter((k) => !(k in mcp));
  expect(missing).toEqual([]); // today: score, engines, confidence_level, operational_status, trend_delta_0to1, trend_window_days, recommendation_code
  for (const k of Object.keys(rest.body.data)) expect({ [k]: mcp[k] }).toEqual({ [k]: rest.body.data[k] });
});

test("get_supported_protocols' bridge has the REST protocols read's type and values", async () => {
  const rest = await srv.json(`/api/v1/agent/merchants/${DEMO}/protocols`, { headers: key.headers });
  expect(rest.status).toBe(200);
  const mcp = structured<{ bridge: unknown }>(await agent.call("get_supported_protocols"));
  // was ["acp", "ap2", "ucp"] on MCP and [{id, name, endpoint}] on REST under the same name
  expect(mcp.bridge).toEqual(rest.body.data.bridge);
});
