/**
 * A replayed authorization code takes the access token it gave out of service (review R2-2, on 2de3fbf / 7c5983f;
 * OAuth 2.1 §4.1.3; docs/access.md "Revoking OAuth credentials"). The per-request check (gateway/oauth/revocation.ts)
 * used to learn that a grant was revoked only from a revoked row in oauth_refresh_tokens, so for a code-flow client
 * registered without the refresh_token grant a replay marked nothing and the first token kept working for its 15
 * minutes. The replay now also marks the family itself (oauth_revoked_families). Both kinds of client are covered.
 */
import { afterAll, beforeAll, expect, test } from "bun:test";
import { authorizationCode, exchangeCode, registerPublicClient } from "../helpers/oauth.ts";
import { startServer, type TestServer } from "../helpers/server.ts";
import { DEMO, rpc } from "./helpers.ts";

const CALLBACK = "http://127.0.0.1:50596/cb";

let srv: TestServer;
beforeAll(async () => {
  srv = await startServer({ seed: true, config: { RATE_LIMITS_ENABLED: false } });
}, 120_000);
afterAll(async () => {
  await srv?.stop();
});

async function codeFor(grantTypes: string[]): Promise<{ clientId: string; code: string; verifier: string }> {
  const clientId = await registerPublicClient(srv, { name: "replayed", redirectUri: CALLBACK, grantTypes, scope: "search cart" });
  const verifier = "v".repeat(43);
  return { clientId, code: await authorizationCode(srv, { clientId, redirectUri: CALLBACK, scope: "search cart", verifier }), verifier };
}

const redeem = (c: { clientId: string; code: string; verifier: string }) => exchangeCode(srv, { ...c, redirectUri: CALLBACK }, c.code);
const use = (token: string) => rpc(srv, `/${DEMO}/mcp`, "tools/call", { name: "get_cart", arguments: { cart_id: crypto.randomUUID() } }, { authorization: `Bearer ${token}` });

for (const grantTypes of [["authorization_code", "refresh_token"], ["authorization_code"]]) {
  test(`a replayed authorization code takes the access token it gave out of service (client grant_types ${grantTypes.join(" ")})`, async () => {
    const c = await codeFor(grantTypes);
    const first = await redeem(c);
    expect(first.status).toBe(200);
    const token = first.body.access_token as string;
    expect((await use(token)).status).toBe(200);
    const replay = await redeem(c);
    expect({ status: replay.status, error: replay.body.error }).toEqual({ status: 400, error: "invalid_grant" });
    // docs/access.md: a reused authorization code ends the grant; a revoked family's access tokens: 401
    expect((await use(token)).status).toBe(401);
  }, 60_000);
}
