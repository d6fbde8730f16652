import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { Elysia } from "elysia";
import * as oauth from "oauth4webapi";
import { decodeJwt, decodeProtectedHeader, SignJWT, base64url } from "jose";
import { clientIp } from "../../gateway/plugins/auth.ts";
import { verifyMcpAccess } from "../../gateway/oauth/index.ts";
import { tokenService } from "../../gateway/identity.ts";
import type { Services } from "../../gateway/services.ts";
import { ADMIN, createKey, login, merchantLogin } from "../helpers/agents.ts";
import { startServer, type TestServer } from "../helpers/server.ts";

/**
 * The MCP endpoint here is a probe that does exactly what the real one does first: `verifyMcpAccess` with the
 * MCP rate layers. It answers with the principal so the tests can see who the server thinks is calling.
 */
const mcpProbe = (svc: Services) =>
  new Elysia({ name: "mcp-probe" }).post("/:slug/mcp", async ({ params, request, server, set }) => {
    const access = await verifyMcpAccess(svc, {
      slug: params.slug,
      request,
      headers: set.headers as Record<string, string>,
      limits: { ip: clientIp(request, server), surface: "mcp" },
    });
    return { success: true, data: access };
  });

const insecure = { [oauth.allowInsecureRequests]: true } as const;
const CALLBACK = "http://127.0.0.1:9/callback";

let srv: TestServer;
let otherSlug: string;
let resourceA: string;
let as: oauth.AuthorizationServer;

beforeAll(async () => {
  srv = await startServer({ boot: { extraModules: [mcpProbe] } });
  const rows = await srv.db.sql<{ slug: string }[]>`SELECT slug FROM stores WHERE slug <> 'demo-store' ORDER BY slug LIMIT 1`;
  otherSlug = rows[0]!.slug;
  resourceA = `${srv.url}/demo-store/mcp`;
  as = await oauth.processDiscoveryResponse(new URL(srv.url), await oauth.discoveryRequest(new URL(srv.url), { algorithm: "oauth2", ...insecure }));
}, 60_000);
afterAll(async () => {
  await srv.stop();
});

async function register(meta: Record<string, unknown>, bearer?: string) {
  return srv.json("/api/v1/oauth/register", { method: "POST", body: meta, headers: bearer ? { authorization: `Bearer ${bearer}` } : {} });
}

async function publicClient(scope?: string) {
  const r = await register({ client_name: "Test Agent", redirect_uris: [CALLBACK], token_endpoint_auth_method: "none", ...(scope ? { scope } : {}) });
  expect(r.status).toBe(201);
  return r.body as { client_id: string };
}

function authorizeUrl(params: Record<string, string>): string {
  const u = new URL(as.authorization_endpoint!);
  for (const [k, v] of Object.entries(params)) u.searchParams.set(k, v);
  return u.toString();
}

/** Opens the consent page, then submits its form as a browser would (cookie + hidden fields). */
async function consent(url: string, opts: { email?: string; password?: string; decision?: string; dropCookie?: boolean } = {}) {
  const page = await fetch(url, { redirect: "manual" });
  const html = await page.text();
  const cookie = (page.headers.get("set-cookie") ?? "").split(";")[0]!;
  const form = new URLSearchParams();
  for (const m of html.matchAll(/<input type="hidden" name="([^"]+)" value="([^"]*)">/g)) {
    form.set(m[1]!, m[2]!.replace(/&amp;/g, "&").replace(/&quot;/g, '"').replace(/&lt;/g, "<").replace(/&gt;/g, ">").replace(/&#39;/g, "'"));
  }
  form.set("email", opts.email ?? ADMIN.email);
  form.set("password", opts.password ?? ADMIN.password);
  form.set("decision", opts.decision ?? "allow");
  const res = await fetch(`${srv.url}/api/v1/oauth/authorize`, {
    method: "POST",
    redirect: "manual",
    headers: { "content-type": "application/x-www-form-urlencoded", ...(opts.dropCookie ? {} : { cookie }) },
    body: form,
  });
  return { page, html, res, location: res.headers.get("location") };
}

async function codeFor(client: { client_id: string }, opts: { resource?: string; scope?: string } = {}) {
  const verifier = oauth.generateRandomCodeVerifier();
  const state = oauth.generateRandomState();
  const url = authorizeUrl({
    response_type: "code",
    client_id: client.client_id,
    redirect_uri: CALLBACK,
    code_challenge: await oauth.calculatePKCECodeChallenge(verifier),
    code_challenge_method: "S256",
    state,
    resource: opts.resource ?? resourceA,
    ...(opts.scope ? { scope: opts.scope } : {}),
  });
  const { location } = await consent(url);
  const params = oauth.validateAuthResponse(as, client as oauth.Client, new URL(location!), state);
  return { params, verifier, code: params.get("code")! };
}

async function tokenForm(form: Record<string, string>, basic?: { id: string; secret: string }) {
  const headers: Record<string, string> = { "content-type": "application/x-www-form-urlencoded" };
  if (basic) headers.authorization = `Basic ${btoa(`${encodeURIComponent(basic.id)}:${encodeURIComponent(basic.secret)}`)}`;
  return srv.json("/api/v1/oauth/token", { method: "POST", headers, body: new URLSearchParams(form).toString() });
}

async function callMcp(slug: string, headers: Record<string, string>) {
  return srv.json(`/${slug}/mcp`, { method: "POST", headers, body: { jsonrpc: "2.0", id: 1, method: "tools/list" } });
}

describe("discovery documents", () => {
  test("the authorization server metadata (RFC 8414) names every endpoint and offers PKCE S256 only", async () => {
    const r = await srv.json("/.well-known/oauth-authorization-server");
    expect(r.status).toBe(200);
    expect(r.body.issuer).toBe(srv.url);
    expect(r.body.authorization_endpoint).toBe(`${srv.url}/api/v1/oauth/authorize`);
    expect(r.body.token_endpoint).toBe(`${srv.url}/api/v1/oauth/token`);
    expect(r.body.registration_endpoint).toBe(`${srv.url}/api/v1/oauth/register`);
    expect(r.body.code_challenge_methods_supported).toEqual(["S256"]);
    expect(r.body.grant_types_supported).toEqual(["authorization_code", "refresh_token", "client_credentials"]);
    expect(r.body.scopes_supported).toContain("checkout");
    expect(r.body.client_id_metadata_document_supported).toBe(true);
  });

  test("each store's MCP endpoint has protected-resource metadata (RFC 9728) naming this authorization server", async () => {
    const rs = await oauth.processResourceDiscoveryResponse(new URL(resourceA), await oauth.resourceDiscoveryRequest(new URL(resourceA), insecure));
    expect(rs.resource).toBe(resourceA);
    expect(rs.authorization_servers).toEqual([srv.url]);
    expect(rs.bearer_methods_supported).toEqual(["header"]);
    const b = await srv.json(`/.well-known/oauth-protected-resource/${otherSlug}/mcp`);
    expect(b.body.resource).toBe(`${srv.url}/${otherSlug}/mcp`);
  });

  test("protected-resource metadata of an unknown store is 404 store_not_found", async () => {
    const r = await srv.json("/.well-known/oauth-protected-resource/no-such-store/mcp");
    expect(r.status).toBe(404);
    expect(r.body).toMatchObject({ success: false, code: "store_not_found" });
  });

  test("a 401 from an MCP endpoint carries WWW-Authenticate with the resource metadata URL", async () => {
    const r = await callMcp("demo-store", {});
    expect(r.status).toBe(401);
    expect(r.body).toMatchObject({ success: false, code: "unauthorized" });
    expect(r.headers.get("www-authenticate")).toBe(`Bearer resource_metadata="${srv.url}/.well-known/oauth-protected-resource/demo-store/mcp"`);
    expect(r.headers.get("x-ratelimit-limit")).toBe("30");
  });
});

describe("the authorization code flow", () => {
  test("a full code flow driven by oauth4webapi succeeds: discovery, registration, PKCE, consent, token, MCP call, refresh", async () => {
    // discovery from the MCP endpoint's 401, as an MCP client does it
    const challenge = (await callMcp("demo-store", {})).headers.get("www-authenticate")!;
    const prmUrl = /resource_metadata="([^"]+)"/.exec(challenge)![1]!;
    expect(prmUrl).toBe(`${srv.url}/.well-known/oauth-protected-resource/demo-store/mcp`);
    const prm = await (await fetch(prmUrl)).json();
    const issuer = new URL(prm.authorization_servers[0]);
    const server = await oauth.processDiscoveryResponse(issuer, await oauth.discoveryRequest(issuer, { algorithm: "oauth2", ...insecure }));

    const client = await oauth.processDynamicClientRegistrationResponse(
      await oauth.dynamicClientRegistrationRequest(server, { redirect_uris: [CALLBACK], token_endpoint_auth_method: "none", client_name: "oauth4webapi agent" }, insecure),
    );
    expect(client.client_id).toMatch(/^mcpc_[0-9A-Za-z]{43}$/);

    const verifier = oauth.generateRandomCodeVerifier();
    const state = oauth.generateRandomState();
    const url = new URL(server.authorization_endpoint!);
    url.searchParams.set("client_id", client.client_id);
    url.searchParams.set("redirect_uri", CALLBACK);
    url.searchParams.set("response_type", "code");
    url.searchParams.set("scope", "search cart");
    url.searchParams.set("code_challenge", await oauth.calculatePKCECodeChallenge(verifier));
    url.searchParams.set("code_challenge_method", "S256");
    url.searchParams.set("state", state);
    url.searchParams.set("resource", prm.resource);
    const { page, html, location } = await consent(url.toString());
    expect(page.status).toBe(200);
    expect(page.headers.get("content-type")).toContain("text/html");
    expect(page.headers.get("x-frame-options")).toBe("DENY");
    expect(html).toContain("oauth4webapi agent");
    expect(html).toContain("demo-store");
    expect(location!.startsWith(CALLBACK + "?")).toBe(true);

    const params = oauth.validateAuthResponse(server, client, new URL(location!), state);
    const tokenRes = await oauth.processAuthorizationCodeResponse(
      server,
      client,
      await oauth.authorizationCodeGrantRequest(server, client, oauth.None(), params, CALLBACK, verifier, { ...insecure, additionalParameters: { resource: prm.resource } }),
    );
    expect(tokenRes.token_type).toBe("bearer");
    expect(tokenRes.expires_in).toBe(900);
    expect(tokenRes.scope).toBe("search cart");
    expect(tokenRes.refresh_token).toMatch(/^rt_/);
    expect(decodeProtectedHeader(tokenRes.access_token)).toMatchObject({ alg: "EdDSA", typ: "at+jwt" });
    const claims = decodeJwt(tokenRes.access_token);
    expect(claims.aud).toBe(resourceA);
    expect(claims.iss).toBe(srv.url);
    expect(claims.client_id).toBe(client.client_id);
    expect((claims.exp as number) - (claims.iat as number)).toBe(900);

    const adminId = (await srv.db.sql<{ id: string }[]>`SELECT id FROM users WHERE email = ${ADMIN.email}`)[0]!.id;
    const mcp = await callMcp("demo-store", { authorization: `Bearer ${tokenRes.access_token}` });
    expect(mcp.status).toBe(200);
    // a user-delegated token: not machine-to-machine (no agent trust signal), bound to the resource it asked for
    expect(mcp.body.data).toEqual({ kind: "oauth", sub: adminId, clientId: client.client_id, scopes: ["search", "cart"], machineToMachine: false, audience: `${srv.url}/demo-store/mcp` });
    expect(mcp.headers.get("x-ratelimit-limit")).toBe("30");
    expect(mcp.headers.get("x-ratelimit-remaining")).toBe("29");

    const refreshed = await oauth.processRefreshTokenResponse(server, client, await oauth.refreshTokenGrantRequest(server, client, oauth.None(), tokenRes.refresh_token!, insecure));
    expect(refreshed.refresh_token).not.toBe(tokenRes.refresh_token);
    expect((await callMcp("demo-store", { authorization: `Bearer ${refreshed.access_token}` })).status).toBe(200);
  });

  test("a wrong PKCE verifier is refused with invalid_grant and does not spend the code (docs/decisions.md)", async () => {
    const client = await publicClient();
    const { code, verifier } = await codeFor(client);
    const wrong = await tokenForm({ grant_type: "authorization_code", code, redirect_uri: CALLBACK, code_verifier: oauth.generateRandomCodeVerifier(), client_id: client.client_id });
    expect(wrong.status).toBe(400);
    expect(wrong.body).toMatchObject({ success: false, error: "invalid_grant", code: "invalid_grant" });
    expect(wrong.headers.get("cache-control")).toBe("no-store");
    const right = await tokenForm({ grant_type: "authorization_code", code, redirect_uri: CALLBACK, code_verifier: verifier, client_id: client.client_id });
    expect(right.status).toBe(200);
  });

  test("a code is single use: redeeming it twice fails and revokes the refresh token it produced", async () => {
    const client = await publicClient();
    const { code, verifier } = await codeFor(client);
    const form = { grant_type: "authorization_code", code, redirect_uri: CALLBACK, code_verifier: verifier, client_id: client.client_id };
    const first = await tokenForm(form);
    expect(first.status).toBe(200);
    const second = await tokenForm(form);
    expect(second.status).toBe(400);
    expect(second.body.error).toBe("invalid_grant");
    const refresh = await tokenForm({ grant_type: "refresh_token", refresh_token: first.body.refresh_token, client_id: client.client_id });
    expect(refresh.status).toBe(400);
    expect(refresh.body.error).toBe("invalid_grant");
  });

  test("PKCE plain and a missing challenge are refused at the authorization endpoint, on the page (no redirect before consent)", async () => {
    const client = await publicClient();
    const cases: Record<string, string>[] = [{ code_challenge: "a".repeat(43), code_challenge_method: "plain" }, {}];
    for (const extra of cases) {
      const res = await fetch(authorizeUrl({ response_type: "code", client_id: client.client_id, redirect_uri: CALLBACK, state: "s1", resource: resourceA, ...extra }), { redirect: "manual" });
      expect(res.status).toBe(400);
      expect(res.headers.get("location")).toBeNull();
      expect(await res.text()).toContain("invalid_request");
    }
  });

  test("an unregistered redirect URI is answered on the page, never redirected", async () => {
    const client = await publicClient();
    const res = await fetch(
      authorizeUrl({ response_type: "code", client_id: client.client_id, redirect_uri: "https://evil.example/cb", code_challenge: "a".repeat(43), code_challenge_method: "S256", resource: resourceA }),
      { redirect: "manual" },
    );
    expect(res.status).toBe(400);
    expect(res.headers.get("location")).toBeNull();
    expect(await res.text()).toContain("redirect URI is not registered");
  });

  test("an unknown scope or resource is answered invalid_scope / invalid_target on the page (no redirect before consent)", async () => {
    const client = await publicClient();
    const base = { response_type: "code", client_id: client.client_id, redirect_uri: CALLBACK, code_challenge: "a".repeat(43), code_challenge_method: "S256" };
    const badScope = await fetch(authorizeUrl({ ...base, resource: resourceA, scope: "agent:read" }), { redirect: "manual" });
    expect(badScope.status).toBe(400);
    expect(await badScope.text()).toContain("invalid_scope");
    const badResource = await fetch(authorizeUrl({ ...base, resource: `${srv.url}/no-such-store/mcp` }), { redirect: "manual" });
    expect(badResource.status).toBe(400);
    expect(await badResource.text()).toContain("invalid_target");
  });

  test("wrong credentials on the consent page give a 401 page and no code", async () => {
    const client = await publicClient();
    const url = authorizeUrl({ response_type: "code", client_id: client.client_id, redirect_uri: CALLBACK, code_challenge: "a".repeat(43), code_challenge_method: "S256", resource: resourceA });
    const { res } = await consent(url, { password: "wrong-password" });
    expect(res.status).toBe(401);
    expect(res.headers.get("location")).toBeNull();
    expect(await res.text()).toContain("Invalid e-mail or password.");
  });

  test("a form submitted without the CSRF cookie is refused with 403", async () => {
    const client = await publicClient();
    const url = authorizeUrl({ response_type: "code", client_id: client.client_id, redirect_uri: CALLBACK, code_challenge: "a".repeat(43), code_challenge_method: "S256", resource: resourceA });
    const { res } = await consent(url, { dropCookie: true });
    expect(res.status).toBe(403);
    expect(res.headers.get("location")).toBeNull();
  });

  test("denying consent redirects back with access_denied", async () => {
    const client = await publicClient();
    const url = authorizeUrl({ response_type: "code", client_id: client.client_id, redirect_uri: CALLBACK, code_challenge: "a".repeat(43), code_challenge_method: "S256", state: "st", resource: resourceA });
    const { location } = await consent(url, { decision: "deny" });
    const back = new URL(location!);
    expect(back.searchParams.get("error")).toBe("access_denied");
    expect(back.searchParams.get("state")).toBe("st");
    expect(back.searchParams.get("code")).toBeNull();
  });
});

describe("refresh tokens", () => {
  test("refresh rotates the token, and presenting a spent one revokes the whole family", async () => {
    const client = await publicClient();
    const { code, verifier } = await codeFor(client);
    const t1 = (await tokenForm({ grant_type: "authorization_code", code, redirect_uri: CALLBACK, code_verifier: verifier, client_id: client.client_id })).body;
    const t2 = await tokenForm({ grant_type: "refresh_token", refresh_token: t1.refresh_token, client_id: client.client_id });
    expect(t2.status).toBe(200);
    expect(t2.body.refresh_token).not.toBe(t1.refresh_token);
    const replay = await tokenForm({ grant_type: "refresh_token", refresh_token: t1.refresh_token, client_id: client.client_id });
    expect(replay.status).toBe(400);
    expect(replay.body.error).toBe("invalid_grant");
    const afterTheft = await tokenForm({ grant_type: "refresh_token", refresh_token: t2.body.refresh_token, client_id: client.client_id });
    expect(afterTheft.status).toBe(400);
    expect(afterTheft.body.error).toBe("invalid_grant");
  });

  test("a refresh token revoked through the revocation endpoint no longer works", async () => {
    const client = await publicClient();
    const { code, verifier } = await codeFor(client);
    const t1 = (await tokenForm({ grant_type: "authorization_code", code, redirect_uri: CALLBACK, code_verifier: verifier, client_id: client.client_id })).body;
    const rev = await srv.json("/api/v1/oauth/revoke", { method: "POST", headers: { "content-type": "application/x-www-form-urlencoded" }, body: new URLSearchParams({ token: t1.refresh_token, client_id: client.client_id }).toString() });
    expect(rev.status).toBe(200);
    const r = await tokenForm({ grant_type: "refresh_token", refresh_token: t1.refresh_token, client_id: client.client_id });
    expect(r.body.error).toBe("invalid_grant");
  });

  test("a refresh token of one client is refused for another", async () => {
    const a = await publicClient();
    const b = await publicClient();
    const { code, verifier } = await codeFor(a);
    const t1 = (await tokenForm({ grant_type: "authorization_code", code, redirect_uri: CALLBACK, code_verifier: verifier, client_id: a.client_id })).body;
    const r = await tokenForm({ grant_type: "refresh_token", refresh_token: t1.refresh_token, client_id: b.client_id });
    expect(r.status).toBe(400);
    expect(r.body.error).toBe("invalid_grant");
  });
});

describe("client credentials (machine to machine)", () => {
  test("a confidential client registered with a user session gets tokens that act for that user", async () => {
    const who = merchantLogin(otherSlug);
    const session = await login(srv, who);
    const reg = await register({ client_name: "m2m", grant_types: ["client_credentials"], token_endpoint_auth_method: "client_secret_basic", scope: "search checkout" }, session);
    expect(reg.status).toBe(201);
    expect(reg.body.client_secret).toMatch(/^mcps_/);
    const client: oauth.Client = { client_id: reg.body.client_id };
    const res = await oauth.processClientCredentialsResponse(
      as,
      client,
      await oauth.clientCredentialsGrantRequest(as, client, oauth.ClientSecretBasic(reg.body.client_secret), { scope: "checkout", resource: `${srv.url}/${otherSlug}/mcp` }, insecure),
    );
    expect(res.refresh_token).toBeUndefined();
    const ownerId = (await srv.db.sql<{ id: string }[]>`SELECT id FROM users WHERE email = ${who.email}`)[0]!.id;
    const mcp = await callMcp(otherSlug, { authorization: `Bearer ${res.access_token}` });
    expect(mcp.status).toBe(200);
    // client_credentials: machine-to-machine with the agent trust signal (what a merchant's checkout endpoint demands)
    expect(mcp.body.data).toEqual({ kind: "oauth", sub: ownerId, clientId: reg.body.client_id, scopes: ["checkout"], machineToMachine: true, audience: `${srv.url}/${otherSlug}/mcp` });
  });

  test("client_credentials without a session owner, with a wrong secret, or without a resource is refused", async () => {
    const anon = await register({ grant_types: ["client_credentials"], token_endpoint_auth_method: "client_secret_post" });
    expect(anon.status).toBe(400);
    expect(anon.body).toMatchObject({ error: "invalid_client_metadata", code: "invalid_client_metadata" });

    const reg = await register({ grant_types: ["client_credentials"], token_endpoint_auth_method: "client_secret_basic" }, await login(srv));
    const wrong = await tokenForm({ grant_type: "client_credentials", resource: resourceA }, { id: reg.body.client_id, secret: "mcps_wrong" });
    expect(wrong.status).toBe(401);
    expect(wrong.body).toEqual({ success: false, error: "invalid_client", error_description: expect.any(String), code: "invalid_client" });
    // RFC 6749 §5.2: a 401 to a client that authenticated with Basic names the scheme it must use
    expect(wrong.headers.get("www-authenticate")).toBe('Basic realm="oauth"');
    expect(wrong.headers.get("cache-control")).toBe("no-store");
    const noResource = await tokenForm({ grant_type: "client_credentials" }, { id: reg.body.client_id, secret: reg.body.client_secret });
    expect(noResource.status).toBe(400);
    expect(noResource.body.error).toBe("invalid_target");
  });

  test("a public client may not use client_credentials and an unknown grant type is refused", async () => {
    const client = await publicClient();
    const r = await tokenForm({ grant_type: "client_credentials", client_id: client.client_id, resource: resourceA });
    expect(r.status).toBe(400);
    expect(r.body.error).toBe("unauthorized_client");
    const u = await tokenForm({ grant_type: "password", client_id: client.client_id });
    expect(u.body.error).toBe("unsupported_grant_type");
  });
});

describe("access tokens at the MCP endpoint", () => {
  async function m2mToken(resource: string): Promise<string> {
    const reg = await register({ grant_types: ["client_credentials"], token_endpoint_auth_method: "client_secret_basic" }, await login(srv));
    const r = await tokenForm({ grant_type: "client_credentials", resource }, { id: reg.body.client_id, secret: reg.body.client_secret });
    return r.body.access_token;
  }

  test("a token for store A is refused at store B", async () => {
    const token = await m2mToken(resourceA);
    expect((await callMcp("demo-store", { authorization: `Bearer ${token}` })).status).toBe(200);
    const r = await callMcp(otherSlug, { authorization: `Bearer ${token}` });
    expect(r.status).toBe(401);
    expect(r.body.code).toBe("unauthorized");
    expect(r.headers.get("www-authenticate")).toStartWith(`Bearer resource_metadata="${srv.url}/.well-known/oauth-protected-resource/${otherSlug}/mcp", error="invalid_token"`);
  });

  test("an alg none token and an HS256 token keyed with our public key are refused", async () => {
    const real = decodeJwt(await m2mToken(resourceA));
    const enc = (o: object) => base64url.encode(JSON.stringify(o));
    const none = `${enc({ alg: "none", typ: "at+jwt" })}.${enc(real)}.`;
    const jwks = await (await fetch(`${srv.url}/api/v1/oauth/jwks`)).json();
    const hs = await new SignJWT({ ...real }).setProtectedHeader({ alg: "HS256", typ: "at+jwt", kid: jwks.keys[0].kid }).sign(new TextEncoder().encode(JSON.stringify(jwks.keys[0])));
    const hsX = await new SignJWT({ ...real }).setProtectedHeader({ alg: "HS256", typ: "at+jwt" }).sign(base64url.decode(jwks.keys[0].x));
    for (const forged of [none, hs, hsX]) {
      const r = await callMcp("demo-store", { authorization: `Bearer ${forged}` });
      expect(r.status).toBe(401);
      expect(r.body.code).toBe("unauthorized");
      expect(r.headers.get("www-authenticate")).toContain('error="invalid_token"');
    }
  });

  test("an expired access token is 401 token_expired", async () => {
    const tokens = await tokenService(srv.running.services);
    const t = await tokens.issueToken({ sub: crypto.randomUUID(), aud: resourceA, ttlSeconds: 1, typ: "at+jwt", extra: { client_id: "mcpc_x" } });
    await Bun.sleep(2100);
    const r = await callMcp("demo-store", { authorization: `Bearer ${t}` });
    expect(r.status).toBe(401);
    expect(r.body).toMatchObject({ success: false, code: "token_expired" });
    expect(r.headers.get("www-authenticate")).toContain('error="invalid_token"');
  });

  test("a user session token is not an access token", async () => {
    const r = await callMcp("demo-store", { authorization: `Bearer ${await login(srv)}` });
    expect(r.status).toBe(401);
    expect(r.body.code).toBe("unauthorized");
  });

  test("an agent key is accepted at the MCP endpoint too", async () => {
    const key = await createKey(srv);
    const r = await callMcp("demo-store", key.headers);
    expect(r.status).toBe(200);
    expect(r.body.data.kind).toBe("key");
    expect(r.body.data.agent.keyId).toBe(key.id);
    expect(r.headers.get("x-ratelimit-limit")).toBe("30");
  });
});

describe("client registration and metadata documents", () => {
  test("registration refuses a non-loopback http redirect URI and a fragment", async () => {
    for (const uri of ["http://example.com/cb", "https://example.com/cb#frag"]) {
      const r = await register({ redirect_uris: [uri], token_endpoint_auth_method: "none" });
      expect(r.status).toBe(400);
      expect(r.body).toMatchObject({ success: false, error: "invalid_redirect_uri", code: "invalid_redirect_uri" });
    }
  });

  test("a Client ID Metadata Document URL works as a client_id", async () => {
    let docUrl = "";
    const host = Bun.serve({
      hostname: "127.0.0.1",
      port: 0,
      fetch: () => Response.json({ client_id: docUrl, client_name: "Doc Client", redirect_uris: [CALLBACK], token_endpoint_auth_method: "none" }),
    });
    docUrl = `http://127.0.0.1:${host.port}/client.json`;
    try {
      const { code, verifier } = await codeFor({ client_id: docUrl });
      const r = await tokenForm({ grant_type: "authorization_code", code, redirect_uri: CALLBACK, code_verifier: verifier, client_id: docUrl });
      expect(r.status).toBe(200);
      expect(decodeJwt(r.body.access_token).client_id).toBe(docUrl);
    } finally {
      host.stop(true);
    }
  });
});

describe("the real MCP endpoint", () => {
  let real: TestServer;
  beforeAll(async () => {
    real = await startServer();
  }, 60_000);
  afterAll(async () => {
    await real.stop();
  });

  const tools = (url: string, slug: string, headers: Record<string, string>, name: string, args: Record<string, unknown>) =>
    fetch(`${url}/${slug}/mcp`, {
      method: "POST",
      headers: { "content-type": "application/json", accept: "application/json, text/event-stream", ...headers },
      body: JSON.stringify({ jsonrpc: "2.0", id: 1, method: "tools/call", params: { name, arguments: args } }),
    });

  test("accepts an OAuth access token for its store, refuses it at another store, and asks anonymous callers to authenticate", async () => {
    const session = (await real.json("/api/v1/auth/login", { method: "POST", body: ADMIN })).body.data.token;
    const reg = await real.json("/api/v1/oauth/register", { method: "POST", headers: { authorization: `Bearer ${session}` }, body: { grant_types: ["client_credentials"], token_endpoint_auth_method: "client_secret_post" } });
    const tok = await real.json("/api/v1/oauth/token", {
      method: "POST",
      headers: { "content-type": "application/x-www-form-urlencoded" },
      body: new URLSearchParams({ grant_type: "client_credentials", client_id: reg.body.client_id, client_secret: reg.body.client_secret, resource: `${real.url}/demo-store/mcp` }).toString(),
    });
    const bearer = { authorization: `Bearer ${tok.body.access_token}` };
    const ok = await tools(real.url, "demo-store", bearer, "search_products", { query: "mug" });
    expect(ok.status).toBe(200);
    expect((await ok.json()).result).toBeDefined();
    expect(ok.headers.get("x-ratelimit-limit")).toBe("20");

    const slugB = (await real.db.sql<{ slug: string }[]>`SELECT slug FROM stores WHERE slug <> 'demo-store' ORDER BY slug LIMIT 1`)[0]!.slug;
    const other = await tools(real.url, slugB, bearer, "search_products", { query: "mug" });
    expect(other.status).toBe(401);
    expect(other.headers.get("www-authenticate")).toContain(`resource_metadata="${real.url}/.well-known/oauth-protected-resource/${slugB}/mcp"`);

    const anon = await tools(real.url, slugB, {}, "create_cart", { items: [] });
    expect(anon.status).toBe(401);
    // with the scopes to ask for: the default agent scopes, which include create_cart's "cart"
    expect(anon.headers.get("www-authenticate")).toBe(`Bearer resource_metadata="${real.url}/.well-known/oauth-protected-resource/${slugB}/mcp", scope="search compare cart merchants:read"`);
  });
});
