/**
 * Operators over every account's OAuth clients (review, session 12 "Known and left": both needed SQL):
 * - GET /api/v1/admin/oauth/clients lists registered clients across accounts and the metadata-document clients the
 *   database knows (a consent, a block), paged, filtered by owner, client_id (a document URL), kind or blocked, never
 *   a secret or its hash;
 * - DELETE /api/v1/admin/oauth/blocked-clients/{client_id} lifts a block of a metadata-document client: the consent
 *   page and token endpoint know it again; a second unblock, like an id never blocked, is 404 not_found.
 * Operators only (403 forbidden for a merchant, 401 without a session), in the REST envelope.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { ADMIN, login, merchantLogin } from "../helpers/agents.ts";
import { authorizeUrl, codeFlowTokens, registerMachineClient, registerPublicClient, type AuthorizeRequest } from "../helpers/oauth.ts";
import { startServer, type TestServer } from "../helpers/server.ts";
import { DEMO, rpc } from "./helpers.ts";

const CALLBACK = "http://127.0.0.1:50612/cb";
const OWNER = merchantLogin("greenleaf-living");
const STRANGER = merchantLogin("cozy-paws-supply");

let srv: TestServer;
let host: ReturnType<typeof Bun.serve>;
let docUrl = "";
let operator: string;
let owner: string;
let stranger: string;

beforeAll(async () => {
  srv = await startServer({ seed: true, config: { RATE_LIMITS_ENABLED: false } });
  host = Bun.serve({
    hostname: "127.0.0.1",
    port: 0,
    fetch: () => Response.json({ client_id: docUrl, client_name: "Doc Client", redirect_uris: [CALLBACK], token_endpoint_auth_method: "none" }),
  });
  docUrl = `http://127.0.0.1:${host.port}/client.json`;
  [operator, owner, stranger] = await Promise.all([login(srv, ADMIN), login(srv, OWNER), login(srv, STRANGER)]);
}, 120_000);
afterAll(async () => {
  host?.stop(true);
  await srv?.stop();
});

const bearer = (session: string) => ({ authorization: `Bearer ${session}` });
const list = (query: Record<string, string>, session = operator) => srv.json(`/api/v1/admin/oauth/clients?${new URLSearchParams(query)}`, { headers: bearer(session) });
const unblock = (clientId: string, session = operator) =>
  srv.json(`/api/v1/admin/oauth/blocked-clients/${encodeURIComponent(clientId)}`, { method: "DELETE", headers: bearer(session) });
const block = (clientId: string) => srv.json(`/api/v1/oauth/clients/${encodeURIComponent(clientId)}`, { method: "DELETE", headers: bearer(operator) });
const docRequest = (): AuthorizeRequest => ({ clientId: docUrl, redirectUri: CALLBACK, scope: "search cart", verifier: "q".repeat(43) });
const use = (token: string) => rpc(srv, `/${DEMO}/mcp`, "tools/call", { name: "get_cart", arguments: { cart_id: crypto.randomUUID() } }, { authorization: `Bearer ${token}` });

describe("who may call them", () => {
  test("a merchant gets 403 forbidden and no session 401 unauthorized, on both routes", async () => {
    for (const r of [await list({}, owner), await unblock(docUrl, owner)]) {
      expect({ status: r.status, success: r.body.success, code: r.body.code }).toEqual({ status: 403, success: false, code: "forbidden" });
    }
    for (const r of [await srv.json("/api/v1/admin/oauth/clients"), await srv.json(`/api/v1/admin/oauth/blocked-clients/${encodeURIComponent(docUrl)}`, { method: "DELETE" })]) {
      expect({ status: r.status, code: r.body.code }).toEqual({ status: 401, code: "unauthorized" });
    }
  });
});

describe("listing every account's clients", () => {
  test("an operator sees other accounts' registered clients with their owner, filtered by owner, and never a secret", async () => {
    const mine = await registerMachineClient(srv, owner, { name: "owner's m2m", scope: "search cart" });
    const theirs = await registerMachineClient(srv, stranger, { name: "stranger's m2m", scope: "search" });
    const ownerless = await registerPublicClient(srv, { name: "ownerless desk agent", redirectUri: CALLBACK, scope: "search cart" });

    const byOwner = await list({ owner: ` ${OWNER.email.toUpperCase()} ` });
    expect(byOwner.status).toBe(200);
    expect(byOwner.body.data.map((c: { clientId: string }) => c.clientId)).toContain(mine.clientId);
    expect(byOwner.body.data.every((c: { ownerEmail: string }) => c.ownerEmail === OWNER.email)).toBe(true);
    expect(byOwner.body.data.find((c: { clientId: string }) => c.clientId === mine.clientId)).toMatchObject({
      kind: "registered",
      clientName: "owner's m2m",
      ownerEmail: OWNER.email,
      grantTypes: ["client_credentials"],
      tokenEndpointAuthMethod: "client_secret_basic",
      scope: "search cart",
      liveGrants: 0,
      blockedAt: null,
    });

    const all = await list({ limit: "200" });
    expect(all.status).toBe(200);
    const ids = all.body.data.map((c: { clientId: string }) => c.clientId);
    expect(ids).toEqual(expect.arrayContaining([mine.clientId, theirs.clientId, ownerless]));
    expect(all.body.data.find((c: { clientId: string }) => c.clientId === ownerless)).toMatchObject({ ownerEmail: null, tokenEndpointAuthMethod: "none" });
    const text = JSON.stringify(all.body);
    for (const secret of [mine.secret, theirs.secret, "mcps_", "secret_hash", "secretHash"]) expect(text).not.toContain(secret);

    const one = await list({ client_id: theirs.clientId });
    expect(one.body.data.map((c: { clientId: string; ownerEmail: string }) => [c.clientId, c.ownerEmail])).toEqual([[theirs.clientId, STRANGER.email]]);
    expect(one.body.meta).toEqual({ total: 1, limit: 50, offset: 0 });
  }, 60_000);

  test("pages with limit and offset over the same order, meta giving the total", async () => {
    const whole = await list({ limit: "200" });
    const total = whole.body.meta.total as number;
    expect(total).toBeGreaterThanOrEqual(3);
    const pages: string[] = [];
    for (let offset = 0; offset < total; offset += 2) {
      const page = await list({ limit: "2", offset: String(offset) });
      expect(page.body.meta).toEqual({ total, limit: 2, offset });
      pages.push(...page.body.data.map((c: { clientId: string }) => c.clientId));
    }
    expect(pages).toEqual(whole.body.data.map((c: { clientId: string }) => c.clientId));
    const past = await list({ offset: String(total + 10) });
    expect({ status: past.status, data: past.body.data, total: past.body.meta.total }).toEqual({ status: 200, data: [], total });
  }, 60_000);

  test("bad filters are 400 validation_error, an unknown owner 404 not_found, never a 500", async () => {
    for (const query of [{ limit: "0" }, { limit: "201" }, { offset: "-1" }, { kind: "bogus" }, { blocked: "yes" }, { owner: "x" }, { client_id: "" }, { client_id: "a\u0000b" }] as Record<string, string>[]) {
      const r = await list(query);
      expect({ query, status: r.status, code: r.body.code, success: r.body.success }).toEqual({ query, status: 400, code: "validation_error", success: false });
    }
    const unknown = await list({ owner: "nobody@nowhere.example" });
    expect({ status: unknown.status, code: unknown.body.code, details: unknown.body.details }).toEqual({ status: 404, code: "not_found", details: { field: "owner" } });
  });
});

describe("a metadata-document client, blocked and unblocked", () => {
  test("listed once a user consents, shown blocked by its operator, unblocked once: its consent page and tokens work again", async () => {
    const { access } = await codeFlowTokens(srv, docRequest());
    const seen = await list({ client_id: docUrl });
    expect(seen.status).toBe(200);
    expect(seen.body.data).toEqual([
      expect.objectContaining({ clientId: docUrl, kind: "metadata_document", clientName: null, ownerEmail: null, scope: null, redirectUris: null, liveGrants: 1, blockedAt: null, blockedBy: null }),
    ]);
    expect((await list({ kind: "metadata_document" })).body.data.map((c: { clientId: string }) => c.clientId)).toContain(docUrl);
    expect((await list({ kind: "registered" })).body.data.map((c: { clientId: string }) => c.clientId)).not.toContain(docUrl);

    // never blocked: nothing to lift
    const notBlocked = await unblock(docUrl);
    expect({ status: notBlocked.status, code: notBlocked.body.code }).toEqual({ status: 404, code: "not_found" });

    expect((await block(docUrl)).status).toBe(200);
    expect((await use(access)).status).toBe(401);
    const blocked = await list({ blocked: "true" });
    expect(blocked.body.data).toEqual([expect.objectContaining({ clientId: docUrl, liveGrants: 0, blockedBy: ADMIN.email, blockedAt: expect.any(String) })]);
    expect((await list({ blocked: "false" })).body.data.map((c: { clientId: string }) => c.clientId)).not.toContain(docUrl);
    const blockedAt = blocked.body.data[0].blockedAt as string;

    const r = await unblock(docUrl);
    expect(r.status).toBe(200);
    expect(r.body).toEqual({ success: true, data: { clientId: docUrl, blockedAt, unblockedAt: expect.any(String) } });
    // lifting it again changes nothing and says so
    const again = await unblock(docUrl);
    expect({ status: again.status, success: again.body.success, code: again.body.code }).toEqual({ status: 404, success: false, code: "not_found" });
    expect((await list({ client_id: docUrl })).body.data[0]).toMatchObject({ blockedAt: null, blockedBy: null });

    // the grant the block revoked stays revoked; the consent page offers the client again and a new consent works
    expect((await use(access)).status).toBe(401);
    const page = await fetch(authorizeUrl(srv, docRequest()), { redirect: "manual" });
    expect(page.status).toBe(200);
    await page.arrayBuffer();
    const fresh = await codeFlowTokens(srv, docRequest());
    expect((await use(fresh.access)).status).toBe(200);
  }, 60_000);

  test("unblocking a registered client, an unknown URL or a malformed id is 404 or 400 in the envelope, never a 500", async () => {
    const registered = await registerPublicClient(srv, { name: "not blockable", redirectUri: CALLBACK, scope: "search" });
    for (const id of [registered, "https://unknown.example/client.json"]) {
      const r = await unblock(id);
      expect({ status: r.status, code: r.body.code }).toEqual({ status: 404, code: "not_found" });
    }
    for (const bad of ["%00", "%ED%A0%80", "%FF"]) {
      const r = await srv.json(`/api/v1/admin/oauth/blocked-clients/${bad}`, { method: "DELETE", headers: bearer(operator) });
      expect([400, 404]).toContain(r.status);
      expect(r.body.success).toBe(false);
    }
  });
});

test("the served OpenAPI document lists both routes with their error codes in the envelope", async () => {
  const r = await srv.json("/api/v1/openapi.json");
  expect(r.status).toBe(200);
  const codes = (path: string, method: string, status: number): string[] | undefined => r.body.paths[path]?.[method]?.responses?.[String(status)]?.["x-error-codes"];
  expect(r.body.paths["/api/v1/admin/oauth/clients"]?.get?.responses?.["200"]).toBeDefined();
  expect(codes("/api/v1/admin/oauth/clients", "get", 403)).toEqual(["forbidden"]);
  expect(codes("/api/v1/admin/oauth/clients", "get", 404)).toEqual(["not_found"]);
  expect(codes("/api/v1/admin/oauth/clients", "get", 400)).toEqual(expect.arrayContaining(["validation_error"]));
  expect(codes("/api/v1/admin/oauth/blocked-clients/{client_id}", "delete", 404)).toEqual(["not_found"]);
  expect(codes("/api/v1/admin/oauth/blocked-clients/{client_id}", "delete", 403)).toEqual(["forbidden"]);
});
