/**
 * OAuth step-up through the SDK's own auth flow (audit A5 M1). The SDK registers a public client by dynamic
 * registration with the scope of the first 401 challenge (the default agent scopes, no `checkout`); a later
 * complete_checkout is 403 `insufficient_scope` naming `checkout`, and the SDK sends the human to the consent page
 * with that scope. A public client's registered scope is advisory, so the page asks and the call then runs; a
 * confidential client stays held to its registered set. A refresh cannot widen a grant, and says so (A5 L1).
 */
import { afterAll, beforeAll, expect, test } from "bun:test";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import type { OAuthClientProvider } from "@modelcontextprotocol/sdk/client/auth.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import type { OAuthClientInformationMixed, OAuthTokens } from "@modelcontextprotocol/sdk/shared/auth.js";
import type { CallToolResult } from "@modelcontextprotocol/sdk/types.js";
import { ADMIN, login } from "../helpers/agents.ts";
import { allowOnPage, pkceChallenge } from "../helpers/oauth.ts";
import { startServer, type TestServer } from "../helpers/server.ts";
import { DEMO } from "./helpers.ts";

const CALLBACK = "http://127.0.0.1:50599/cb";
let srv: TestServer;

beforeAll(async () => {
  srv = await startServer({ seed: true, config: { RATE_LIMITS_ENABLED: false } });
}, 60_000);
afterAll(async () => {
  await srv?.stop();
});

/** Opens the consent page (status and text recorded) and, when it is the page, allows as the admin: the code. */
async function consent(url: URL, pages: { status: number; scope: string | null; text: string }[]): Promise<string | undefined> {
  const page = await fetch(url, { redirect: "manual" });
  const html = await page.text();
  pages.push({ status: page.status, scope: url.searchParams.get("scope"), text: html.replace(/<[^>]+>/g, " ").replace(/\s+/g, " ") });
  if (page.status !== 200) return undefined;
  return (await allowOnPage(srv, page, html, ADMIN)) ?? undefined;
}

/**
 * An SDK OAuthClientProvider for a public client registered for the code grant only (no refresh token: the SDK 1.32
 * refreshes first when it holds one and then gives up on the 403, see docs/access.md).
 */
function agentProvider() {
  const state: { client?: OAuthClientInformationMixed; tokens?: OAuthTokens; verifier?: string; code?: string } = {};
  const pages: { status: number; scope: string | null; text: string }[] = [];
  const provider: OAuthClientProvider = {
    get redirectUrl() {
      return CALLBACK;
    },
    get clientMetadata() {
      return { client_name: "step-up agent", redirect_uris: [CALLBACK], grant_types: ["authorization_code"], response_types: ["code"], token_endpoint_auth_method: "none" };
    },
    clientInformation: () => state.client,
    saveClientInformation: (c) => void (state.client = c),
    tokens: () => state.tokens,
    saveTokens: (t) => void (state.tokens = t),
    codeVerifier: () => state.verifier!,
    saveCodeVerifier: (v) => void (state.verifier = v),
    redirectToAuthorization: async (url) => {
      state.code = await consent(url, pages);
    },
  };
  return { provider, state, pages };
}

/** One tool call the way an SDK app does it: on UnauthorizedError finish the authorization with the code, retry once. */
async function callWithAuth(p: ReturnType<typeof agentProvider>, name: string, args: Record<string, unknown>): Promise<CallToolResult> {
  for (let attempt = 0; ; attempt++) {
    const client = new Client({ name: "acs-test", version: "1.0.0" });
    const transport = new StreamableHTTPClientTransport(new URL(`${srv.url}/${DEMO}/mcp`), { authProvider: p.provider });
    try {
      await client.connect(transport);
      return (await client.callTool({ name, arguments: args })) as CallToolResult;
    } catch (err) {
      const code = p.state.code;
      p.state.code = undefined;
      if (attempt > 0 || !code) throw err;
      await transport.finishAuth(code);
    } finally {
      await client.close().catch(() => {});
    }
  }
}

test("an SDK client registered with the first challenge's scopes steps up to checkout: the consent page asks, and complete_checkout runs", async () => {
  const agent = agentProvider();
  const first = await callWithAuth(agent, "get_cart", { cart_id: "00000000-0000-4000-8000-000000000000" });
  expect((first.structuredContent as any).error.code).toBe("CART_NOT_FOUND");
  expect((agent.state.client as { scope?: string }).scope).toBe("search compare cart merchants:read");
  expect(agent.state.tokens!.scope).toBe("search compare cart merchants:read");

  const paid = await callWithAuth(agent, "complete_checkout", { checkout_session_id: "cs_unknown", idempotency_key: crypto.randomUUID(), payment_method: "MOCK" });
  // the step-up's consent page was the page (200), listing checkout, not a 400 invalid_scope
  expect(agent.pages.map((p) => p.status)).toEqual([200, 200]);
  expect(agent.pages[1]!.scope).toBe("search compare cart merchants:read checkout");
  expect(agent.pages[1]!.text).toContain("checkout");
  expect(agent.state.tokens!.scope).toBe("search compare cart checkout merchants:read");
  // the call ran with the new token: the tool's own answer about the unknown session, not a scope refusal
  expect((paid.structuredContent as any).error.code).toBe("CHECKOUT_SESSION_NOT_FOUND");
}, 60_000);

async function register(body: Record<string, unknown>, headers: Record<string, string> = {}) {
  const r = await srv.json("/api/v1/oauth/register", { method: "POST", headers, body: { client_name: "c", redirect_uris: [CALLBACK], ...body } });
  expect(r.status).toBe(201);
  return r.body as { client_id: string };
}

function authorizeUrl(clientId: string, scope: string): URL {
  const u = new URL("/api/v1/oauth/authorize", srv.url);
  const q = {
    response_type: "code",
    client_id: clientId,
    redirect_uri: CALLBACK,
    code_challenge: "ZtJtGU_RqCTL6SPCRqWJvg0r45aZWjcr2sSo8A9xlI8",
    code_challenge_method: "S256",
    state: "s",
    scope,
    resource: `${srv.url}/${DEMO}/mcp`,
  };
  for (const [k, v] of Object.entries(q)) u.searchParams.set(k, v);
  return u;
}

test("a confidential client stays held to its registered scopes at the consent page; an unknown scope is refused for anyone", async () => {
  const session = await login(srv);
  const conf = await register({ token_endpoint_auth_method: "client_secret_basic", scope: "search cart" }, { authorization: `Bearer ${session}` });
  const refused = await fetch(authorizeUrl(conf.client_id, "search cart checkout"), { redirect: "manual" });
  expect(refused.status).toBe(400);
  expect(await refused.text()).toContain("invalid_scope: the client is not registered for scope &quot;checkout&quot;");

  const pub = await register({ token_endpoint_auth_method: "none", scope: "search cart" });
  expect((await fetch(authorizeUrl(pub.client_id, "search cart checkout"), { redirect: "manual" })).status).toBe(200);
  const unknown = await fetch(authorizeUrl(pub.client_id, "search admin"), { redirect: "manual" });
  expect(unknown.status).toBe(400);
  expect(await unknown.text()).toContain("unknown scope &quot;admin&quot;");
}, 60_000);

test("a refresh asking for more than was granted is invalid_scope saying it exceeds the grant (not 'not registered')", async () => {
  const pub = await register({ token_endpoint_auth_method: "none", grant_types: ["authorization_code", "refresh_token"] });
  const verifier = "v".repeat(43);
  const u = authorizeUrl(pub.client_id, "search cart");
  u.searchParams.set("code_challenge", pkceChallenge(verifier));
  const code = await consent(u, []);
  const token = (form: Record<string, string>) =>
    srv.json("/api/v1/oauth/token", { method: "POST", headers: { "content-type": "application/x-www-form-urlencoded" }, body: new URLSearchParams({ client_id: pub.client_id, ...form }).toString() });
  const t = await token({ grant_type: "authorization_code", code: code!, code_verifier: verifier, redirect_uri: CALLBACK });
  expect(t.status).toBe(200);
  const wider = await token({ grant_type: "refresh_token", refresh_token: t.body.refresh_token, scope: "search cart orders:read" });
  expect(wider.status).toBe(400);
  expect(wider.body.error).toBe("invalid_scope");
  expect(wider.body.error_description).toBe(
    'scope "orders:read" exceeds the scope granted to this refresh token (search cart); ask for it at the authorization endpoint (a new consent), not by refreshing',
  );
  const narrower = await token({ grant_type: "refresh_token", refresh_token: t.body.refresh_token, scope: "search" });
  expect(narrower.status).toBe(200);
  expect(narrower.body.scope).toBe("search");
}, 60_000);
