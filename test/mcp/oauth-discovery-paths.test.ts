/**
 * OAuth discovery from each MCP path, with the SDK's own discovery helpers (audit B F4). RFC 9728 §3.3: the metadata
 * a 401 names must carry `resource` = the URL the client requested. A dedicated endpoint's 401 names its own metadata
 * (not the main endpoint's), and the older path /mcp/{slug} is its own resource with its own metadata
 * (/.well-known/oauth-protected-resource/mcp/{slug}), so the SDK completes OAuth there too.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { discoverOAuthProtectedResourceMetadata, extractWWWAuthenticateParams, selectResourceURL, type OAuthClientProvider } from "@modelcontextprotocol/sdk/client/auth.js";
import { ClientCredentialsProvider } from "@modelcontextprotocol/sdk/client/auth-extensions.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { login } from "../helpers/agents.ts";
import { startServer, type TestServer } from "../helpers/server.ts";
import { DEMO } from "./helpers.ts";

const STORE = "summit-sports-co";
let srv: TestServer;

beforeAll(async () => {
  srv = await startServer({ seed: true, config: { RATE_LIMITS_ENABLED: false } });
}, 60_000);
afterAll(async () => srv?.stop());

/** An anonymous call of a tool that needs a credential: the 401 and its challenge. */
function anonymousGetCart(path: string): Promise<Response> {
  return fetch(`${srv.url}${path}`, {
    method: "POST",
    headers: { "content-type": "application/json", accept: "application/json, text/event-stream" },
    body: JSON.stringify({ jsonrpc: "2.0", id: 1, method: "tools/call", params: { name: "get_cart", arguments: { cart_id: crypto.randomUUID() } } }),
  });
}

describe("the 401's resource_metadata and the SDK's discovery on every MCP path", () => {
  const cases: [path: string, metadataPath: string][] = [
    [`/${STORE}/mcp`, `/${STORE}/mcp`],
    [`/${STORE}/mcp/checkout`, `/${STORE}/mcp/checkout`],
    [`/mcp/${STORE}`, `/mcp/${STORE}`],
  ];
  for (const [path, metadataPath] of cases) {
    test(`${path}: the challenge names ${metadataPath}'s metadata, whose resource is the URL requested, and the SDK selects it`, async () => {
      const url = new URL(`${srv.url}${path}`);
      const r = await anonymousGetCart(path);
      expect(r.status).toBe(401);
      const { resourceMetadataUrl } = extractWWWAuthenticateParams(r);
      expect(String(resourceMetadataUrl)).toBe(`${srv.url}/.well-known/oauth-protected-resource${metadataPath}`);
      const prm = await discoverOAuthProtectedResourceMetadata(url, { resourceMetadataUrl });
      expect(prm.resource).toBe(url.href);
      expect(prm.authorization_servers).toEqual([srv.url]);
      expect(String(await selectResourceURL(url, {} as OAuthClientProvider, prm))).toBe(url.href);
      // without the header, the SDK derives the same document from the path (RFC 9728 §3.1)
      expect((await discoverOAuthProtectedResourceMetadata(url)).resource).toBe(url.href);
    });
  }

  test("the older path's metadata is 404 store_not_found for an unknown store", async () => {
    const r = await srv.json("/.well-known/oauth-protected-resource/mcp/no-such-store");
    expect(r.status).toBe(404);
    expect(r.body.code).toBe("store_not_found");
  });

  test("the SDK client completes client_credentials OAuth on the older path /mcp/{slug} and calls a tool with the token", async () => {
    const session = await login(srv);
    const reg = await srv.json("/api/v1/oauth/register", {
      method: "POST",
      headers: { authorization: `Bearer ${session}` },
      body: { client_name: "older path", grant_types: ["client_credentials"], token_endpoint_auth_method: "client_secret_basic", scope: "search cart checkout orders:read" },
    });
    expect(reg.status).toBe(201);
    const provider = new ClientCredentialsProvider({ clientId: reg.body.client_id, clientSecret: reg.body.client_secret, scope: "search cart checkout orders:read", expectedIssuer: srv.url });
    const client = new Client({ name: "older-path", version: "1" });
    await client.connect(new StreamableHTTPClientTransport(new URL(`${srv.url}/mcp/${DEMO}`), { authProvider: provider }));
    try {
      // onx_get_orders needs a credential: the first try is the 401, the SDK discovers, gets a token and retries
      const r = await client.callTool({ name: "onx_get_orders", arguments: {} });
      expect(r.isError).toBeFalsy();
      expect((r.structuredContent as { orders: unknown[] }).orders).toEqual([]);
      const token = provider.tokens()!.access_token;
      const aud = JSON.parse(Buffer.from(token.split(".")[1]!, "base64url").toString("utf8")).aud;
      expect(aud).toBe(`${srv.url}/mcp/${DEMO}`);
      // the older path's resource is the store's main one under another name: good on /{slug}/mcp too
      const main = await fetch(`${srv.url}/${DEMO}/mcp`, {
        method: "POST",
        headers: { "content-type": "application/json", accept: "application/json, text/event-stream", authorization: `Bearer ${token}` },
        body: JSON.stringify({ jsonrpc: "2.0", id: 1, method: "tools/call", params: { name: "onx_get_orders", arguments: {} } }),
      });
      expect(main.status).toBe(200);
    } finally {
      await client.close();
    }
  }, 60_000);
});
