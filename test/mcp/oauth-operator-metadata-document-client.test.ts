/**
 * Blocking a Client ID Metadata Document client (review R2-3, on 2de3fbf / audit X-1). Such a client (client_id = its
 * https URL) has no oauth_clients row, so an operator's DELETE /api/v1/oauth/clients/{client_id} used to be 404 and its
 * tokens kept working: a malicious or compromised metadata-document client kept every grant users gave it. Now an
 * operator's DELETE on the URL blocks it (oauth_blocked_clients): its users' grants are revoked, its live access
 * tokens are refused (401, reason client_blocked), its refresh tokens and the consent page treat it as unknown. Only an
 * operator may block one (nobody owns it); a user's DELETE, like a second block, is 404 not_found.
 */
import { afterAll, beforeAll, expect, test } from "bun:test";
import { ADMIN, login, merchantLogin } from "../helpers/agents.ts";
import { authorizeUrl, codeFlowTokens, tokenRequest, type AuthorizeRequest } from "../helpers/oauth.ts";
import { startServer, type TestServer } from "../helpers/server.ts";
import { DEMO, rpc } from "./helpers.ts";

const CALLBACK = "http://127.0.0.1:50595/cb";

let srv: TestServer;
let host: ReturnType<typeof Bun.serve>;
let docUrl = "";
beforeAll(async () => {
  srv = await startServer({ seed: true, config: { RATE_LIMITS_ENABLED: false } });
  host = Bun.serve({
    hostname: "127.0.0.1",
    port: 0,
    fetch: () => Response.json({ client_id: docUrl, client_name: "Doc Client", redirect_uris: [CALLBACK], token_endpoint_auth_method: "none" }),
  });
  docUrl = `http://127.0.0.1:${host.port}/client.json`;
}, 120_000);
afterAll(async () => {
  host?.stop(true);
  await srv?.stop();
});

const VERIFIER = "m".repeat(43);

const authorizeRequest = (): AuthorizeRequest => ({ clientId: docUrl, redirectUri: CALLBACK, scope: "search cart", verifier: VERIFIER });

/** The admin consents to the metadata-document client: its access and refresh tokens. */
async function consent(): Promise<{ access: string; refresh: string }> {
  const t = await codeFlowTokens(srv, authorizeRequest());
  return { access: t.access, refresh: t.refresh! };
}

const use = (token: string) => rpc(srv, `/${DEMO}/mcp`, "tools/call", { name: "get_cart", arguments: { cart_id: crypto.randomUUID() } }, { authorization: `Bearer ${token}` });
const block = (session: string) => srv.json(`/api/v1/oauth/clients/${encodeURIComponent(docUrl)}`, { method: "DELETE", headers: { authorization: `Bearer ${session}` } });

test("a user who is no operator cannot block a metadata-document client: 404 not_found, and its token still works", async () => {
  const { access } = await consent();
  const merchant = await login(srv, merchantLogin("greenleaf-living"));
  const r = await block(merchant);
  expect(r.status).toBe(404);
  expect(r.body).toMatchObject({ success: false, code: "not_found" });
  expect((await use(access)).status).toBe(200);
}, 60_000);

test("an operator takes a metadata-document client out of service: its access token, refresh token and consent page are refused", async () => {
  const { access, refresh } = await consent();
  expect((await use(access)).status).toBe(200);
  const operator = await login(srv, ADMIN);
  const r = await block(operator);
  expect(r.status).toBe(200);
  expect(r.body).toMatchObject({ success: true, data: { clientId: docUrl } });
  expect(r.body.data.grantsRevoked).toBeGreaterThanOrEqual(2); // this test's grant and the one before
  const refused = await use(access);
  expect(refused.status).toBe(401);
  expect(refused.headers.get("www-authenticate")).toContain('error="invalid_token"');
  expect(JSON.stringify(refused.body)).toContain("client_blocked");
  // the refresh token: the client is unknown now
  const t = await tokenRequest(srv, { grant_type: "refresh_token", client_id: docUrl, refresh_token: refresh });
  expect({ status: t.status, error: t.body.error }).toEqual({ status: 401, error: "invalid_client" });
  // the consent page does not offer it to anyone
  const page = await fetch(authorizeUrl(srv, authorizeRequest()), { redirect: "manual" });
  expect(page.status).toBe(400);
  await page.arrayBuffer();
  // blocked already: 404, as for a deleted registered client
  const again = await block(operator);
  expect(again.status).toBe(404);
  expect(again.body).toMatchObject({ success: false, code: "not_found" });
}, 60_000);
