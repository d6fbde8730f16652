/**
 * Audit M-8: with no actor host alive, a REST call answers 503 actor_unavailable at the ask deadline, but an MCP
 * tools/call (keyed, in a session or not) waits for two deadlines: the key's `authorize` gives up, then the refusal
 * path asks the ip actor to `peek` the address's buckets for X-RateLimit-* (gateway/mcp/server.ts, peekBuckets)
 * and waits the whole deadline again. Measured on the audit deployment (10 s deadline): REST 9.7-10.0 s, MCP
 * 19.4-19.7 s, with one "actor request gave up" line for `agent authorize` and one for `ip peek` per request.
 * Here the deadline is 2 s (ACTOR_ASK_TIMEOUT_MS): REST ~2 s, MCP ~4 s today; expected within the deadline + 1 s.
 * Run: cp into test/distributed/ and `bun test/run.ts test/distributed/mcp-outage-two-deadlines.test.ts`.
 */
import { afterAll, beforeAll, expect, test } from "bun:test";
import { ALL_SCOPES } from "../helpers/agents.ts";
import { json, startDeployment, type Deployment } from "../helpers/deployment.ts";

const EMAIL = "ops@example.com";
const PASSWORD = "distributed-password";
const DEADLINE_MS = 2_000;
let dep: Deployment | undefined;
let key = "";

beforeAll(async () => {
  const d = await startDeployment(
    { prefix: "acs-dist-mcp-outage-", nats: "single", seeded: true, users: [{ email: EMAIL, password: PASSWORD, role: "operator" }], env: { METRICS_PORT: "0", ACTOR_ASK_TIMEOUT_MS: String(DEADLINE_MS) } },
    (s) => (dep = s),
  );
  const gw = d.gateways[0]!;
  const login = await json(gw + "/api/v1/auth/login", { method: "POST", body: { email: EMAIL, password: PASSWORD } });
  const created = await json(gw + "/api/v1/agent-keys", { method: "POST", headers: { authorization: `Bearer ${login.body.data.token}` }, body: { name: "outage", scopes: ALL_SCOPES } });
  key = created.body.data.key;
  d.actors[0]!.proc.kill("SIGKILL"); // the only host: every actor call now finds no responders
  await d.actors[0]!.proc.exited;
}, 120_000);
afterAll(async () => {
  await dep?.stop();
});

async function timed(f: () => Promise<Response>) {
  const t0 = performance.now();
  const r = await f();
  await r.text();
  return { status: r.status, ms: performance.now() - t0 };
}

test("an MCP tools/call answers an actor outage within the ask deadline, as REST does", async () => {
  const gw = dep!.gateways[0]!;
  const rest = await timed(() => fetch(gw + "/api/v1/agent/search", { method: "POST", headers: { "x-agent-api-key": key, "content-type": "application/json" }, body: JSON.stringify({ query: "lamp" }) }));
  const mcp = await timed(() =>
    fetch(gw + "/demo-store/mcp", {
      method: "POST",
      headers: { "x-agent-api-key": key, "content-type": "application/json", accept: "application/json, text/event-stream" },
      body: JSON.stringify({ jsonrpc: "2.0", id: 1, method: "tools/call", params: { name: "search_products", arguments: { query: "lamp" } } }),
    }),
  );
  console.log(JSON.stringify({ rest, mcp }));
  expect(rest.status).toBe(503);
  expect(mcp.status).toBe(503);
  expect(rest.ms).toBeLessThan(DEADLINE_MS + 1_000);
  expect(mcp.ms).toBeLessThan(DEADLINE_MS + 1_000); // today ~2 × DEADLINE_MS
}, 60_000);
