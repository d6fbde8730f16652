/**
 * The authorization server grants nothing for a store whose MCP endpoint does not serve (session 15, audit Q
 * follow-up). A suspended, hidden or UNVERIFIED store's MCP endpoint and protected-resource metadata are 404, as an
 * unknown slug's, but authorize and token checked only that the store existed: the consent page was shown and
 * tokens were minted for its resource. Now such a store is an unknown resource (invalid_target) everywhere, in the
 * same words as an unknown slug; a store suspended after a grant gets no token from the code or refresh token, which
 * stay unspent so the grant comes back with the store.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import * as oauth from "oauth4webapi";
import { ADMIN, login } from "../helpers/agents.ts";
import { startServer, type TestServer } from "../helpers/server.ts";

const INELIGIBLE = ["suspended-goods", "lowtrust-bazaar", "unverified-outlet"] as const;
/** An eligible seeded store (PREMIUM, trust 0.95) the tests make ineligible for a while. */
const STORE = "northwind-outfitters";
const CALLBACK = "http://127.0.0.1:9/callback";

/** The three ways a store stops being eligible (isEligibleStore), each undone by `restore`. */
const LAPSES = {
  suspended: (srv: TestServer) => srv.db.sql`UPDATE stores SET operational_status = 'suspended' WHERE slug = ${STORE}`,
  hidden: (srv: TestServer) => srv.db.sql`UPDATE stores SET operational_status = 'hidden' WHERE slug = ${STORE}`,
  unverified: (srv: TestServer) => srv.db.sql`UPDATE stores SET verification_level = 'UNVERIFIED' WHERE slug = ${STORE}`,
} as const;

let srv: TestServer;
let original: { operational_status: string; verification_level: string };

beforeAll(async () => {
  srv = await startServer({ seed: true, config: { RATE_LIMITS_ENABLED: false } });
  [original] = await srv.db.sql<{ operational_status: string; verification_level: string }[]>`
    SELECT operational_status, verification_level FROM stores WHERE slug = ${STORE}`;
}, 60_000);
afterAll(async () => {
  await srv?.stop();
});

async function restore(): Promise<void> {
  await srv.db.sql`UPDATE stores SET operational_status = ${original.operational_status}, verification_level = ${original.verification_level} WHERE slug = ${STORE}`;
}

const resourceOf = (slug: string) => `${srv.url}/${slug}/mcp`;
/** Every resource form of a store: its main endpoint, a dedicated one, the older path. */
const resourcesOf = (slug: string) => [`${srv.url}/${slug}/mcp`, `${srv.url}/${slug}/mcp/discovery`, `${srv.url}/mcp/${slug}`];

async function publicClient(): Promise<string> {
  const r = await srv.json("/api/v1/oauth/register", {
    method: "POST",
    body: { client_name: "Ineligible Test", redirect_uris: [CALLBACK], token_endpoint_auth_method: "none" },
  });
  expect(r.status).toBe(201);
  return r.body.client_id as string;
}

async function authorizeUrl(clientId: string, resource: string, verifier: string): Promise<string> {
  const u = new URL(`${srv.url}/api/v1/oauth/authorize`);
  const params = {
    response_type: "code",
    client_id: clientId,
    redirect_uri: CALLBACK,
    code_challenge: await oauth.calculatePKCECodeChallenge(verifier),
    code_challenge_method: "S256",
    state: "st",
    resource,
  };
  for (const [k, v] of Object.entries(params)) u.searchParams.set(k, v);
  return u.toString();
}

/** Opens the consent page and returns how to submit its form as a browser would (cookie + hidden fields). */
async function openConsent(url: string) {
  const page = await fetch(url, { redirect: "manual" });
  const html = await page.text();
  expect(page.status).toBe(200);
  const cookie = (page.headers.get("set-cookie") ?? "").split(";")[0]!;
  const form = new URLSearchParams();
  for (const m of html.matchAll(/<input type="hidden" name="([^"]+)" value="([^"]*)">/g)) {
    form.set(m[1]!, m[2]!.replace(/&amp;/g, "&").replace(/&quot;/g, '"').replace(/&lt;/g, "<").replace(/&gt;/g, ">").replace(/&#39;/g, "'"));
  }
  form.set("email", ADMIN.email);
  form.set("password", ADMIN.password);
  form.set("decision", "allow");
  return async () => {
    const res = await fetch(`${srv.url}/api/v1/oauth/authorize`, {
      method: "POST",
      redirect: "manual",
      headers: { "content-type": "application/x-www-form-urlencoded", cookie },
      body: form,
    });
    return { status: res.status, location: new URL(res.headers.get("location") ?? "about:blank") };
  };
}

/** A code for `STORE` while it is eligible. */
async function codeFor(clientId: string): Promise<{ code: string; verifier: string }> {
  const verifier = oauth.generateRandomCodeVerifier();
  const { status, location } = await (await openConsent(await authorizeUrl(clientId, resourceOf(STORE), verifier)))();
  expect(status).toBe(302);
  return { code: location.searchParams.get("code")!, verifier };
}

async function token(form: Record<string, string>, basic?: { id: string; secret: string }) {
  const headers: Record<string, string> = { "content-type": "application/x-www-form-urlencoded" };
  if (basic) headers.authorization = `Basic ${btoa(`${encodeURIComponent(basic.id)}:${encodeURIComponent(basic.secret)}`)}`;
  return srv.json("/api/v1/oauth/token", { method: "POST", headers, body: new URLSearchParams(form).toString() });
}

const oauthError = (r: { status: number; body: Record<string, unknown> }) => ({ status: r.status, error: r.body.error, code: r.body.code, description: r.body.error_description });
const unknownResource = (resource: string) => ({ status: 400, error: "invalid_target", code: "invalid_target", description: `unknown resource ${resource}` });

describe("the consent page of an ineligible store", () => {
  for (const slug of INELIGIBLE) {
    test(`is refused for ${slug} with the very page an unknown slug gets: invalid_target unknown resource, no form, no cookie`, async () => {
      const clientId = await publicClient();
      const verifier = oauth.generateRandomCodeVerifier();
      for (const i of [0, 1, 2]) {
        const pages = await Promise.all(
          [resourcesOf(slug)[i]!, resourcesOf("no-such-store")[i]!].map(async (resource) => {
            const r = await fetch(await authorizeUrl(clientId, resource, verifier), { redirect: "manual" });
            return { status: r.status, location: r.headers.get("location"), cookie: r.headers.get("set-cookie"), body: await r.text() };
          }),
        );
        expect(pages[0]).toEqual(pages[1]!);
        expect({ status: pages[0]!.status, location: pages[0]!.location, cookie: pages[0]!.cookie }).toEqual({ status: 400, location: null, cookie: null });
        expect(pages[0]!.body).toContain("invalid_target: unknown resource");
        expect(pages[0]!.body).not.toContain("csrf_token");
      }
    });
  }

  test("once submitted for a store suspended while the page was open, goes back to the client with invalid_target and no code", async () => {
    const clientId = await publicClient();
    const submit = await openConsent(await authorizeUrl(clientId, resourceOf(STORE), oauth.generateRandomCodeVerifier()));
    await LAPSES.suspended(srv);
    try {
      const { status, location } = await submit();
      expect(status).toBe(302);
      expect(`${location.origin}${location.pathname}`).toBe(CALLBACK);
      expect(Object.fromEntries(location.searchParams)).toEqual({ error: "invalid_target", error_description: "unknown resource", state: "st", iss: srv.url });
      const codes = await srv.db.sql`SELECT 1 FROM oauth_codes WHERE client_id = ${clientId}`;
      expect(codes.length).toBe(0);
    } finally {
      await restore();
    }
  });
});

describe("the token endpoint for an ineligible store", () => {
  test("refuses client_credentials for every ineligible store's resource exactly as for an unknown slug's", async () => {
    const reg = await srv.json("/api/v1/oauth/register", {
      method: "POST",
      body: { client_name: "m2m", grant_types: ["client_credentials"], token_endpoint_auth_method: "client_secret_basic" },
      headers: { authorization: `Bearer ${await login(srv)}` },
    });
    expect(reg.status).toBe(201);
    const basic = { id: reg.body.client_id as string, secret: reg.body.client_secret as string };
    for (const slug of [...INELIGIBLE, "no-such-store"]) {
      for (const resource of resourcesOf(slug)) {
        expect({ resource, ...oauthError(await token({ grant_type: "client_credentials", resource }, basic)) }).toEqual({ resource, ...unknownResource(resource) });
      }
    }
    // the same client gets a token for an eligible store's resource
    const ok = await token({ grant_type: "client_credentials", resource: resourceOf(STORE) }, basic);
    expect(ok.status).toBe(200);
  });

  test("refuses a code issued before the store was suspended, and the unspent code gives tokens once it is reinstated", async () => {
    const clientId = await publicClient();
    const { code, verifier } = await codeFor(clientId);
    const exchange = { grant_type: "authorization_code", code, code_verifier: verifier, redirect_uri: CALLBACK, client_id: clientId };
    await LAPSES.suspended(srv);
    try {
      expect(oauthError(await token(exchange))).toEqual(unknownResource(resourceOf(STORE)));
      const [row] = await srv.db.sql<{ used_at: Date | null }[]>`SELECT used_at FROM oauth_codes WHERE client_id = ${clientId}`;
      expect(row!.used_at).toBeNull();
    } finally {
      await restore();
    }
    const r = await token(exchange);
    expect(r.status).toBe(200);
    expect(typeof r.body.access_token).toBe("string");
    expect(r.body.refresh_token).toMatch(/^rt_/);
  });

  for (const [lapse, make] of Object.entries(LAPSES)) {
    test(`refuses a refresh for a store ${lapse} after the grant with invalid_target, and the grant survives to refresh once it is eligible again`, async () => {
      const clientId = await publicClient();
      const { code, verifier } = await codeFor(clientId);
      const first = await token({ grant_type: "authorization_code", code, code_verifier: verifier, redirect_uri: CALLBACK, client_id: clientId });
      expect(first.status).toBe(200);
      const refresh = first.body.refresh_token as string;
      await make(srv);
      try {
        // with the resource named or not, as for a store that does not exist
        expect(oauthError(await token({ grant_type: "refresh_token", refresh_token: refresh, client_id: clientId }))).toEqual(unknownResource(resourceOf(STORE)));
        expect(oauthError(await token({ grant_type: "refresh_token", refresh_token: refresh, client_id: clientId, resource: resourceOf(STORE) }))).toEqual(
          unknownResource(resourceOf(STORE)),
        );
        // nothing spent, nothing revoked: a temporary lapse ends no grant
        const rows = await srv.db.sql<{ used_at: Date | null; revoked_at: Date | null }[]>`
          SELECT used_at, revoked_at FROM oauth_refresh_tokens WHERE client_id = ${clientId}`;
        expect(rows.map((r) => [r.used_at, r.revoked_at])).toEqual([[null, null]]);
        // and the access token issued before is no good at the store's MCP endpoint meanwhile
        const mcp = await srv.json(`/${STORE}/mcp`, {
          method: "POST",
          headers: { authorization: `Bearer ${first.body.access_token}`, accept: "application/json, text/event-stream" },
          body: { jsonrpc: "2.0", id: 1, method: "tools/list" },
        });
        expect({ status: mcp.status, code: mcp.body.code }).toEqual({ status: 404, code: "store_not_found" });
      } finally {
        await restore();
      }
      const again = await token({ grant_type: "refresh_token", refresh_token: refresh, client_id: clientId });
      expect(again.status).toBe(200);
      expect(again.body.refresh_token).toMatch(/^rt_/);
      expect(again.body.refresh_token).not.toBe(refresh);
    });
  }

  test("still answers invalid_grant, not invalid_target, for an unknown refresh token or code", async () => {
    const clientId = await publicClient();
    await LAPSES.suspended(srv);
    try {
      const r = await token({ grant_type: "refresh_token", refresh_token: "rt_nope", client_id: clientId });
      expect(oauthError(r)).toMatchObject({ status: 400, error: "invalid_grant" });
      const c = await token({ grant_type: "authorization_code", code: "ac_nope", code_verifier: oauth.generateRandomCodeVerifier(), client_id: clientId });
      expect(oauthError(c)).toMatchObject({ status: 400, error: "invalid_grant" });
    } finally {
      await restore();
    }
  });
});
