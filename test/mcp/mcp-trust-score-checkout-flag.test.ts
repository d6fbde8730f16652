/**
 * Review Y-4 (session 17, the MCP twin of 1f4577f / audit B-1): MCP get_trust_score says in its description that it
 * returns "whether agent checkout is allowed", and REST GET /api/v1/stores/:slug/trust-score returns
 * agent_checkout_allowed (now through agentCheckoutOpen), but the tool's answer has no such field at all: an agent on
 * MCP cannot read the flag 1f4577f fixed. Copy into test/mcp/ and run `bun test/run.ts test/mcp/<file>`.
 */
import { afterAll, beforeAll, expect, test } from "bun:test";
import { ALL_SCOPES, createKey, type TestKey } from "../helpers/agents.ts";
import { startServer, type TestServer } from "../helpers/server.ts";
import { connect, structured, type Connected } from "./helpers.ts";

let srv: TestServer;
let key: TestKey;
let c: Connected;

beforeAll(async () => {
  srv = await startServer({ seed: true, config: { RATE_LIMITS_ENABLED: false } });
  key = await createKey(srv, { scopes: ALL_SCOPES, tier: "ENTERPRISE" });
  c = await connect(srv, { headers: key.headers });
}, 60_000);
afterAll(async () => {
  await c?.close();
  await srv?.stop();
});

test("MCP get_trust_score carries agent_checkout_allowed, equal to the public REST read", async () => {
  const rest = await srv.json("/api/v1/stores/demo-store/trust-score");
  expect(rest.status).toBe(200);
  expect(typeof rest.body.data.agent_checkout_allowed).toBe("boolean");
  const r = await c.call("get_trust_score");
  expect(r.isError).toBeFalsy();
  const mcp = structured(r);
  expect(mcp.agent_checkout_allowed).toBe(rest.body.data.agent_checkout_allowed);
});
