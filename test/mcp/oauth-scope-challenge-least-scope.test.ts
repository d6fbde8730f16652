/**
 * The scope an MCP challenge asks for the ucp_* checkout tools is the least that works (review R2-6, least privilege;
 * audit X-4). Those tools accept `checkout` or `checkout:delegate`; the challenge used to name the first, `checkout`,
 * so an MCP client stepping up as the spec's scope selection says had the human grant the platform's own checkout,
 * refunds and wallet where `checkout:delegate` would have done. Now it asks for `checkout:delegate` when the client can
 * be granted it: anonymous (the 401 hint), a public client (advisory scopes), a confidential client registered for it.
 * A confidential client registered without it is still asked for `checkout` (its registered set binds at consent).
 * The native checkout tools still ask for `checkout`, the only scope they take.
 */
import { afterAll, beforeAll, expect, test } from "bun:test";
import { ADMIN, login } from "../helpers/agents.ts";
import { clientCredentialsToken, codeFlowTokens, registerMachineClient, registerPublicClient } from "../helpers/oauth.ts";
import { startServer, type TestServer } from "../helpers/server.ts";
import { DEMO, rpc } from "./helpers.ts";

const CALLBACK = "http://127.0.0.1:50594/cb";
const PAY = { checkout_session_id: "cs_00000000-0000-4000-8000-000000000000", idempotency_key: "00000000-0000-4000-8000-000000000001", payment_method: "MOCK" };

let srv: TestServer;
let admin = "";
beforeAll(async () => {
  srv = await startServer({ seed: true, config: { RATE_LIMITS_ENABLED: false } });
  admin = await login(srv, ADMIN);
}, 120_000);
afterAll(async () => {
  await srv?.stop();
});

const call = (tool: string, token?: string) => rpc(srv, `/${DEMO}/mcp`, "tools/call", { name: tool, arguments: PAY }, token ? { authorization: `Bearer ${token}` } : {});

/** A public client's code-flow token with `search cart`. */
async function publicToken(): Promise<string> {
  const clientId = await registerPublicClient(srv, { name: "step-up", redirectUri: CALLBACK, grantTypes: ["authorization_code", "refresh_token"], scope: "search cart" });
  return (await codeFlowTokens(srv, { clientId, redirectUri: CALLBACK, scope: "search cart", verifier: "s".repeat(43) })).access;
}

/** A confidential client_credentials client registered for `registered`, its token with `search cart`. */
async function machineToken(registered: string): Promise<string> {
  return clientCredentialsToken(srv, await registerMachineClient(srv, admin, { name: "m2m", scope: registered }), "search cart");
}

const scopeOf = (challenge: string | null) => /scope="([^"]*)"/.exec(challenge ?? "")?.[1];

test("an anonymous call of ucp_complete_checkout is told to ask for checkout:delegate, not checkout", async () => {
  const r = await call("ucp_complete_checkout");
  expect(r.status).toBe(401);
  expect(scopeOf(r.headers.get("www-authenticate"))).toBe("search compare cart merchants:read checkout:delegate");
});

test("a public client's token without a checkout scope is stepped up to checkout:delegate for ucp_complete_checkout", async () => {
  const r = await call("ucp_complete_checkout", await publicToken());
  expect(r.status).toBe(403);
  expect(r.headers.get("www-authenticate")).toContain('error="insufficient_scope"');
  expect(scopeOf(r.headers.get("www-authenticate"))).toBe("search cart checkout:delegate");
  expect(r.body.error.data).toMatchObject({ code: "forbidden", scope: "checkout:delegate", tool: "ucp_complete_checkout" });
});

test("a confidential client registered for checkout:delegate is stepped up to it; one registered only for checkout is asked for checkout", async () => {
  const delegate = await call("ucp_complete_checkout", await machineToken("search cart checkout:delegate"));
  expect(delegate.status).toBe(403);
  expect(scopeOf(delegate.headers.get("www-authenticate"))).toBe("search cart checkout:delegate");
  const full = await call("ucp_complete_checkout", await machineToken("search cart checkout"));
  expect(full.status).toBe(403);
  expect(scopeOf(full.headers.get("www-authenticate"))).toBe("search cart checkout");
});

test("the native complete_checkout still asks for checkout, the only scope it takes", async () => {
  const r = await call("complete_checkout", await publicToken());
  expect(r.status).toBe(403);
  expect(scopeOf(r.headers.get("www-authenticate"))).toBe("search cart checkout");
});
