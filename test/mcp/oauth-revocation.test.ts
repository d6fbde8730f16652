/**
 * OAuth credentials can be taken out of service (audit X-1; docs/access.md "Revoking OAuth credentials"): a client
 * deleted by its owner or an operator, a client secret replaced, a grant revoked by the user who gave it, an access
 * token revoked by RFC 7009. Each holds at once: the token endpoint refuses what was revoked, and every access token
 * it covers is refused on the MCP endpoint. A grant (refresh-token family) ends 90 days after the consent however
 * often it is refreshed.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { deleteUnusedClients } from "../../gateway/oauth/clients.ts";
import { ADMIN, login, merchantLogin } from "../helpers/agents.ts";
import { basicAuth, clientCredentials, clientCredentialsToken, codeFlowTokens, FORM, registerMachineClient, registerPublicClient, tokenRequest, type SecretClient } from "../helpers/oauth.ts";
import { startServer, type TestServer } from "../helpers/server.ts";
import { DEMO, rpc } from "./helpers.ts";

const CALLBACK = "http://127.0.0.1:50598/cb";
const OWNER = merchantLogin("greenleaf-living");
const STRANGER = merchantLogin("cozy-paws-supply");

let srv: TestServer;
let owner: string;
let stranger: string;
let operator: string;

beforeAll(async () => {
  srv = await startServer({ seed: true, config: { RATE_LIMITS_ENABLED: false } });
  [owner, stranger, operator] = await Promise.all([login(srv, OWNER), login(srv, STRANGER), login(srv, ADMIN)]);
}, 120_000);
afterAll(async () => {
  await srv?.stop();
});

const bearer = (session: string) => ({ authorization: `Bearer ${session}` });
const registerM2m = (session = owner): Promise<SecretClient> => registerMachineClient(srv, session, { name: "m2m", scope: "search cart checkout" });
const mint = (c: SecretClient, secret = c.secret) => clientCredentials(srv, c, { scope: "search cart checkout", secret });
const mintToken = (c: SecretClient): Promise<string> => clientCredentialsToken(srv, c, "search cart checkout");

const revoke = (c: SecretClient, token: string) =>
  srv.json("/api/v1/oauth/revoke", {
    method: "POST",
    headers: { ...FORM, authorization: basicAuth(c.clientId, c.secret) },
    body: new URLSearchParams({ token, token_type_hint: "access_token" }).toString(),
  });

/** A sessionless keyed tool call: 200 (a tool result) when the token is accepted, 401 when it is not. */
const use = (token: string) =>
  rpc(srv, `/${DEMO}/mcp`, "tools/call", { name: "get_cart", arguments: { cart_id: crypto.randomUUID() } }, { authorization: `Bearer ${token}` });

/** The token is refused on the MCP endpoint with 401, the invalid_token challenge and `reason`. */
async function expectRefused(token: string, reason: string) {
  const r = await use(token);
  expect(r.status).toBe(401);
  expect(r.headers.get("www-authenticate")).toContain('error="invalid_token", error_description="the access token was revoked"');
  expect(JSON.stringify(r.body)).toContain(reason);
}

const deleteClient = (clientId: string, session: string) =>
  srv.json(`/api/v1/oauth/clients/${encodeURIComponent(clientId)}`, { method: "DELETE", headers: bearer(session) });
const rotate = (clientId: string, session: string) =>
  srv.json(`/api/v1/oauth/clients/${encodeURIComponent(clientId)}/secret`, { method: "POST", headers: bearer(session) });

/** Registers a public code-flow client with refresh tokens and has `who` consent: the token response. */
async function codeFlowGrant(who: { email: string; password: string }): Promise<{ clientId: string; access: string; refresh: string }> {
  const clientId = await registerPublicClient(srv, { name: "desk agent", redirectUri: CALLBACK, grantTypes: ["authorization_code", "refresh_token"], scope: "search cart" });
  const t = await codeFlowTokens(srv, { clientId, redirectUri: CALLBACK, scope: "search cart", verifier: "w".repeat(43) }, who);
  return { clientId, access: t.access, refresh: t.refresh! };
}

const refresh = (clientId: string, refreshToken: string) => tokenRequest(srv, { grant_type: "refresh_token", client_id: clientId, refresh_token: refreshToken });

describe("deleting an OAuth client", () => {
  test("the owner deletes its client_credentials client: its secret is refused and a token it minted before is refused at once", async () => {
    const c = await registerM2m();
    const token = await mintToken(c);
    expect((await use(token)).status).toBe(200);
    const listed = await srv.json("/api/v1/oauth/clients", { headers: bearer(owner) });
    expect(listed.status).toBe(200);
    expect(listed.body.data.map((x: { clientId: string }) => x.clientId)).toContain(c.clientId);

    const gone = await deleteClient(c.clientId, owner);
    expect(gone.status).toBe(200);
    expect(gone.body).toMatchObject({ success: true, data: { clientId: c.clientId, grantsRevoked: 0 } });
    expect(gone.body.data.deletedAt).toBeString();

    const again = await mint(c);
    expect(again.status).toBe(401);
    expect(again.body.error).toBe("invalid_client");
    await expectRefused(token, "client_deleted");
    expect((await srv.json("/api/v1/oauth/clients", { headers: bearer(owner) })).body.data.map((x: { clientId: string }) => x.clientId)).not.toContain(c.clientId);
    // deleted is gone: a second DELETE is 404
    const twice = await deleteClient(c.clientId, owner);
    expect(twice.status).toBe(404);
    expect(twice.body).toMatchObject({ success: false, code: "not_found" });
  }, 60_000);

  test("another user cannot see or delete the client (404), and the client keeps working", async () => {
    const c = await registerM2m();
    const r = await deleteClient(c.clientId, stranger);
    expect(r.status).toBe(404);
    expect(r.body).toMatchObject({ success: false, code: "not_found" });
    expect((await srv.json("/api/v1/oauth/clients", { headers: bearer(stranger) })).body.data.map((x: { clientId: string }) => x.clientId)).not.toContain(c.clientId);
    expect((await mint(c)).status).toBe(200);
  }, 60_000);

  test("an operator deletes any user's client", async () => {
    const c = await registerM2m();
    const r = await deleteClient(c.clientId, operator);
    expect(r.status).toBe(200);
    expect(r.body.data.clientId).toBe(c.clientId);
    expect((await mint(c)).status).toBe(401);
  }, 60_000);

  test("without a session the client routes are 401 in the envelope", async () => {
    const c = await registerM2m();
    const r = await srv.json(`/api/v1/oauth/clients/${c.clientId}`, { method: "DELETE" });
    expect(r.status).toBe(401);
    expect(r.body.success).toBe(false);
    expect((await srv.json("/api/v1/oauth/grants")).status).toBe(401);
    expect((await mint(c)).status).toBe(200);
  }, 60_000);

  test("deleting a code-flow client revokes the grants users gave it: its access tokens and refresh tokens are refused", async () => {
    const g = await codeFlowGrant(OWNER);
    expect((await use(g.access)).status).toBe(200);
    // a public client registered without a session has no owner: only an operator can delete it
    expect((await deleteClient(g.clientId, owner)).status).toBe(404);
    const r = await deleteClient(g.clientId, operator);
    expect(r.status).toBe(200);
    expect(r.body.data.grantsRevoked).toBe(1);
    await expectRefused(g.access, "client_deleted");
    const refreshed = await refresh(g.clientId, g.refresh);
    expect(refreshed.status).toBe(401);
    expect(refreshed.body.error).toBe("invalid_client");
    const grants = await srv.json("/api/v1/oauth/grants", { headers: bearer(owner) });
    expect(grants.body.data.map((x: { clientId: string }) => x.clientId)).not.toContain(g.clientId);
  }, 60_000);
});

test("the retention job removes a deleted client's row a day after its deletion, and keeps the owner's other clients", async () => {
  const sql = srv.running.services.sql;
  const deleted = await registerM2m();
  const kept = await registerM2m();
  expect((await deleteClient(deleted.clientId, owner)).status).toBe(200);
  const rows = async () => (await sql<{ client_id: string }[]>`SELECT client_id FROM oauth_clients WHERE client_id IN (${deleted.clientId}, ${kept.clientId})`).map((r) => r.client_id).sort();
  await deleteUnusedClients(sql, Date.now() + 23 * 60 * 60_000, 1000);
  expect(await rows()).toEqual([deleted.clientId, kept.clientId].sort());
  await deleteUnusedClients(sql, Date.now() + 25 * 60 * 60_000, 1000);
  expect(await rows()).toEqual([kept.clientId]);
  expect((await mint(kept)).status).toBe(200);
}, 60_000);

describe("replacing a client secret", () => {
  test("the owner gets a new secret once; the old one and the tokens it minted are refused at once, the new one works", async () => {
    const c = await registerM2m();
    const old = await mintToken(c);
    const r = await rotate(c.clientId, owner);
    expect(r.status).toBe(200);
    expect(r.headers.get("cache-control")).toContain("no-store");
    expect(r.body).toMatchObject({ success: true, data: { clientId: c.clientId, clientSecretExpiresAt: 0 } });
    const secret = r.body.data.clientSecret as string;
    expect(secret).toMatch(/^mcps_/);
    expect(secret).not.toBe(c.secret);

    const withOld = await mint(c);
    expect(withOld.status).toBe(401);
    expect(withOld.body.error).toBe("invalid_client");
    await expectRefused(old, "secret_rotated");
    const fresh = await mint(c, secret);
    expect(fresh.status).toBe(200);
    expect((await use(fresh.body.access_token)).status).toBe(200);
  }, 60_000);

  test("nobody but the owner replaces a secret (404, operators included), and a public client has none (409)", async () => {
    const c = await registerM2m();
    for (const session of [stranger, operator]) {
      const r = await rotate(c.clientId, session);
      expect(r.status).toBe(404);
      expect(r.body).toMatchObject({ success: false, code: "not_found" });
    }
    expect((await mint(c)).status).toBe(200);
    const pub = await srv.json("/api/v1/oauth/register", {
      method: "POST",
      headers: bearer(owner),
      body: { client_name: "pub", redirect_uris: [CALLBACK], token_endpoint_auth_method: "none" },
    });
    expect(pub.status).toBe(201);
    const r = await rotate(pub.body.client_id, owner);
    expect(r.status).toBe(409);
    expect(r.body).toMatchObject({ success: false, code: "conflict" });
  }, 60_000);
});

describe("the grants a user gave", () => {
  test("the user lists a grant and revokes it: its refresh token and access token are refused at once", async () => {
    const g = await codeFlowGrant(STRANGER);
    const list = await srv.json("/api/v1/oauth/grants", { headers: bearer(stranger) });
    expect(list.status).toBe(200);
    const grant = list.body.data.find((x: { clientId: string }) => x.clientId === g.clientId);
    expect(grant).toMatchObject({ clientName: "desk agent", scopes: ["search", "cart"], resource: `${srv.url}/${DEMO}/mcp` });
    // another user neither sees it nor revokes it
    expect((await srv.json("/api/v1/oauth/grants", { headers: bearer(owner) })).body.data.map((x: { id: string }) => x.id)).not.toContain(grant.id);
    const foreign = await srv.json(`/api/v1/oauth/grants/${grant.id}`, { method: "DELETE", headers: bearer(owner) });
    expect(foreign.status).toBe(404);
    expect(foreign.body).toMatchObject({ success: false, code: "not_found" });
    expect((await use(g.access)).status).toBe(200);

    const r = await srv.json(`/api/v1/oauth/grants/${grant.id}`, { method: "DELETE", headers: bearer(stranger) });
    expect(r.status).toBe(200);
    expect(r.body).toEqual({ success: true, data: { id: grant.id, revoked: true } });
    await expectRefused(g.access, "grant_revoked");
    const refreshed = await refresh(g.clientId, g.refresh);
    expect(refreshed.status).toBe(400);
    expect(refreshed.body.error).toBe("invalid_grant");
    expect((await srv.json("/api/v1/oauth/grants", { headers: bearer(stranger) })).body.data.map((x: { id: string }) => x.id)).not.toContain(grant.id);
  }, 60_000);

  test("a grant ends 90 days after the consent: refreshing keeps that end and never issues a token past it", async () => {
    const g = await codeFlowGrant(STRANGER);
    const listed = async () =>
      (await srv.json("/api/v1/oauth/grants", { headers: bearer(stranger) })).body.data.find((x: { clientId: string }) => x.clientId === g.clientId) as {
        id: string;
        expiresAt: string;
        grantExpiresAt: string;
      };
    const first = await listed();
    const day = 24 * 60 * 60_000;
    expect(Date.parse(first.grantExpiresAt) - Date.now()).toBeGreaterThan(90 * day - 60_000);
    expect(Date.parse(first.grantExpiresAt) - Date.now()).toBeLessThanOrEqual(90 * day);
    expect(Date.parse(first.expiresAt) - Date.now()).toBeLessThanOrEqual(30 * day);

    const once = await refresh(g.clientId, g.refresh);
    expect(once.status).toBe(200);
    const second = await listed();
    expect(second.grantExpiresAt).toBe(first.grantExpiresAt);

    // the grant's end close by (as 89 days on): the next token ends there, not 30 days later
    const end = new Date(Date.now() + 60 * 60_000);
    await srv.running.services.sql`UPDATE oauth_refresh_tokens SET family_expires_at = ${end} WHERE family_id = ${second.id}`;
    const twice = await refresh(g.clientId, once.body.refresh_token);
    expect(twice.status).toBe(200);
    const third = await listed();
    expect(Date.parse(third.expiresAt)).toBe(end.getTime());
    expect(Date.parse(third.grantExpiresAt)).toBe(end.getTime());
  }, 60_000);
});

describe("RFC 7009 revocation of an access token", () => {
  test("the client revokes its access token: 200 {} and the token is refused from then on, its other tokens are not", async () => {
    const c = await registerM2m();
    const token = await mintToken(c);
    const other = await mintToken(c);
    expect((await use(token)).status).toBe(200);
    const r = await revoke(c, token);
    expect(r.status).toBe(200);
    expect(r.body).toEqual({});
    await expectRefused(token, "token_revoked");
    expect((await use(other)).status).toBe(200);
  }, 60_000);

  test("another client's revocation of the token answers 200 {} and leaves it working", async () => {
    const c = await registerM2m();
    const intruder = await registerM2m(stranger);
    const token = await mintToken(c);
    const r = await revoke(intruder, token);
    expect(r.status).toBe(200);
    expect(r.body).toEqual({});
    expect((await use(token)).status).toBe(200);
  }, 60_000);

  test("revoking a code-flow access token leaves its grant: the refresh token still works", async () => {
    const g = await codeFlowGrant(OWNER);
    const r = await srv.json("/api/v1/oauth/revoke", {
      method: "POST",
      headers: { "content-type": "application/x-www-form-urlencoded" },
      body: new URLSearchParams({ token: g.access, client_id: g.clientId }).toString(),
    });
    expect(r.status).toBe(200);
    await expectRefused(g.access, "token_revoked");
    const refreshed = await refresh(g.clientId, g.refresh);
    expect(refreshed.status).toBe(200);
    expect((await use(refreshed.body.access_token)).status).toBe(200);
  }, 60_000);
});

test("the served OpenAPI document lists each new route with its own error codes in the envelope", async () => {
  const r = await srv.json("/api/v1/openapi.json");
  expect(r.status).toBe(200);
  const codes = (path: string, method: string, status: number): string[] | undefined => r.body.paths[path]?.[method]?.responses?.[String(status)]?.["x-error-codes"];
  expect(r.body.paths["/api/v1/oauth/clients"]?.get?.responses?.["200"]).toBeDefined();
  expect(codes("/api/v1/oauth/clients", "get", 401)).toEqual(expect.arrayContaining(["unauthorized"]));
  expect(codes("/api/v1/oauth/clients/{client_id}", "delete", 404)).toEqual(["not_found"]);
  expect(codes("/api/v1/oauth/clients/{client_id}/secret", "post", 404)).toEqual(["not_found"]);
  expect(codes("/api/v1/oauth/clients/{client_id}/secret", "post", 409)).toEqual(["conflict"]);
  expect(r.body.paths["/api/v1/oauth/grants"]?.get?.responses?.["200"]).toBeDefined();
  expect(codes("/api/v1/oauth/grants/{id}", "delete", 404)).toEqual(["not_found"]);
  const envelope = JSON.stringify(r.body.paths["/api/v1/oauth/grants/{id}"].delete.responses["404"].content["application/json"].schema);
  expect(envelope).toContain('"enum":["not_found"]');
}, 60_000);

test("inside the session it opened, a revoked token is answered as for an unknown session, and initializing again is 401", async () => {
  const c = await registerM2m();
  const token = await mintToken(c);
  const headers = { authorization: `Bearer ${token}` };
  const init = await rpc(srv, `/${DEMO}/mcp`, "initialize", { protocolVersion: "2025-06-18", capabilities: {}, clientInfo: { name: "t", version: "1" } }, headers);
  expect(init.status).toBe(200);
  const session = init.headers.get("mcp-session-id")!;
  expect(session).toBeString();
  const inSession = { ...headers, "mcp-session-id": session, "mcp-protocol-version": "2025-06-18" };
  const call = () => rpc(srv, `/${DEMO}/mcp`, "tools/call", { name: "get_cart", arguments: { cart_id: crypto.randomUUID() } }, inSession);
  expect((await call()).status).toBe(200);
  expect((await revoke(c, token)).status).toBe(200);
  const after = await call();
  // the session's owner is not told the session exists to a revoked credential (its holder may be a thief); the
  // client's re-initialize then gets the 401 that sends it to the token endpoint
  expect(after.status).toBe(404);
  const again = await rpc(srv, `/${DEMO}/mcp`, "initialize", { protocolVersion: "2025-06-18", capabilities: {}, clientInfo: { name: "t", version: "1" } }, headers);
  expect(again.status).toBe(401);
  expect(again.headers.get("www-authenticate")).toContain('error="invalid_token"');
}, 60_000);

test("a client_id with a NUL byte or broken text in the path is refused in the envelope, never a 500", async () => {
  for (const bad of ["%00", "mcpc_%00x", "%ED%A0%80", "%FF"]) {
    for (const [method, path] of [["DELETE", `/api/v1/oauth/clients/${bad}`], ["POST", `/api/v1/oauth/clients/${bad}/secret`]] as const) {
      const r = await srv.json(path, { method, headers: bearer(owner) });
      expect({ path, method, status: r.status, success: r.body?.success }).toEqual({ path, method, status: r.status < 500 ? r.status : -1, success: false });
      expect([400, 404]).toContain(r.status);
    }
  }
}, 60_000);
