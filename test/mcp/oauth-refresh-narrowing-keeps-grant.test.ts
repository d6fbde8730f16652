/**
 * Audit A-1 (fixed: gateway/oauth/grants.ts rotateRefreshToken writes the new refresh token with the spent one's scopes;
 * only the access token is narrowed). Auditor A's finding: a refresh that asks for a narrower `scope` narrows the GRANT, not only the access token.
 * RFC 6749 §6: the refresh's `scope` "MUST NOT include any scope not originally granted by the resource owner, and if
 * omitted is treated as equal to the scope originally granted by the resource owner"; and "If a new refresh token
 * is issued, the refresh token scope MUST be identical to that of the refresh token included by the client in the
 * request." gateway/oauth/grants.ts rotateRefreshToken writes the new refresh token with `next(prior).scopes`, i.e.
 * the narrowed set (token.ts grantTokens: `{ ...p, scopes }`), so one least-privilege refresh ("search" for one call)
 * loses "cart" for the rest of the grant: the next refresh asking for "search cart" is 400 invalid_scope and the user
 * must consent again; GET /api/v1/oauth/grants then shows the narrowed grant.
 */
import { afterAll, beforeAll, expect, test } from "bun:test";
import { ADMIN, login } from "../helpers/agents.ts";
import { codeFlowTokens, registerPublicClient, tokenRequest } from "../helpers/oauth.ts";
import { startServer, type TestServer } from "../helpers/server.ts";

const CALLBACK = "http://127.0.0.1:50611/cb";
let srv: TestServer;

beforeAll(async () => {
  srv = await startServer({ seed: true, config: { RATE_LIMITS_ENABLED: false } });
}, 120_000);
afterAll(async () => {
  await srv?.stop();
});

test("a narrower refresh does not take the originally granted scopes away from the grant (RFC 6749 §6)", async () => {
  const clientId = await registerPublicClient(srv, { name: "narrowing agent", redirectUri: CALLBACK, grantTypes: ["authorization_code", "refresh_token"], scope: "search cart" });
  const t = await codeFlowTokens(srv, { clientId, redirectUri: CALLBACK, scope: "search cart", verifier: "n".repeat(43) });
  const refresh = (refreshToken: string, scope?: string) =>
    tokenRequest(srv, { grant_type: "refresh_token", client_id: clientId, refresh_token: refreshToken, ...(scope ? { scope } : {}) });

  // one least-privilege refresh: an access token with "search" only
  const narrow = await refresh(t.refresh!, "search");
  expect(narrow.status).toBe(200);
  expect(narrow.body.scope).toBe("search");

  // the next refresh omits scope: "treated as equal to the scope originally granted by the resource owner"
  const omitted = await refresh(narrow.body.refresh_token as string);
  expect(omitted.status).toBe(200);
  expect(omitted.body.scope).toBe("search cart");

  // and asking again for a scope the resource owner granted is not "exceeds the scope granted"
  const again = await refresh(omitted.body.refresh_token as string, "search cart");
  expect({ status: again.status, body: again.status === 200 ? again.body.scope : again.body.error_description }).toEqual({ status: 200, body: "search cart" });

  // the user's grant still reads as what they consented to
  const grants = await srv.json("/api/v1/oauth/grants", { headers: { authorization: `Bearer ${await login(srv, ADMIN)}` } });
  const mine = (grants.body.data as { clientId: string; scopes: string[] }[]).find((g) => g.clientId === clientId);
  expect(mine?.scopes).toEqual(["search", "cart"]);
}, 60_000);
