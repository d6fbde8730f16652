import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { createHash, randomBytes } from "node:crypto";
import { ADMIN } from "../helpers/agents.ts";
import { startServer, type TestServer } from "../helpers/server.ts";

/**
 * Every cookie we set follows one rule (gateway/cookies.ts): `Secure` over https (SITE_URL) or in production. The
 * dashboard's cookies used to get it in production only and the consent form's nonce over https only.
 */

const CALLBACK = "http://127.0.0.1:9/callback";
const form = (fields: Record<string, string>) => new URLSearchParams(fields).toString();

/** The consent page's URL for a fresh public client (its cookie is the CSRF nonce). */
async function authorizeUrl(srv: TestServer, issuer: string): Promise<string> {
  const reg = await srv.json("/api/v1/oauth/register", { method: "POST", body: { client_name: "Cookie test", redirect_uris: [CALLBACK], token_endpoint_auth_method: "none" } });
  expect(reg.status).toBe(201);
  const challenge = createHash("sha256").update(randomBytes(32).toString("base64url")).digest("base64url");
  const q = new URLSearchParams({
    response_type: "code",
    client_id: reg.body.client_id,
    redirect_uri: CALLBACK,
    code_challenge: challenge,
    code_challenge_method: "S256",
    state: "s1",
    resource: `${issuer}/demo-store/mcp`,
  });
  return `/api/v1/oauth/authorize?${q}`;
}

/** The Set-Cookie values of a response, by cookie name. */
function setCookies(r: Response): Map<string, string> {
  return new Map(r.headers.getSetCookie().map((c) => [c.slice(0, c.indexOf("=")), c]));
}

async function dashboardLogin(srv: TestServer): Promise<{ page: Response; login: Response }> {
  const page = await srv.fetch("/dashboard/login");
  const token = /name="_csrf" value="([^"]+)"/.exec(await page.clone().text())![1]!;
  const login = await srv.fetch("/dashboard/login", {
    method: "POST",
    redirect: "manual",
    headers: { cookie: page.headers.get("set-cookie")!.split(";")[0]!, "content-type": "application/x-www-form-urlencoded" },
    body: form({ _csrf: token, email: ADMIN.email, password: ADMIN.password }),
  });
  return { page, login };
}

describe("a site served over https (not production)", () => {
  const SITE = "https://shop.example";
  let srv: TestServer;
  beforeAll(async () => {
    srv = await startServer({ config: { SITE_URL: SITE } });
  }, 60_000);
  afterAll(async () => {
    await srv.stop();
  });

  test("the dashboard's log-in nonce, session and known-device cookies are Secure", async () => {
    const { page, login } = await dashboardLogin(srv);
    expect(page.headers.get("set-cookie")).toMatch(/^acs_dash_login=[^;]+; Path=\/dashboard\/login; HttpOnly; SameSite=Strict; Max-Age=1800; Secure$/);
    expect(login.status).toBe(303);
    const cookies = setCookies(login);
    expect(cookies.get("acs_dash")).toMatch(/^acs_dash=[A-Za-z0-9_-]{43}; Path=\/dashboard; HttpOnly; SameSite=Strict; Max-Age=28800; Secure$/);
    expect(cookies.get("acs_known_device")).toMatch(/^acs_known_device=[^;]+; Path=\/; HttpOnly; SameSite=Strict; Max-Age=2592000; Secure$/);
  });

  test("the consent form's nonce cookie is Secure", async () => {
    const page = await srv.fetch(await authorizeUrl(srv, SITE));
    expect(page.status).toBe(200);
    expect(page.headers.get("set-cookie")).toMatch(/^acs_oauth_csrf=[A-Za-z0-9_-]{43}; Path=\/api\/v1\/oauth; HttpOnly; SameSite=Strict; Max-Age=600; Secure$/);
  });

  test("the consent form reads its nonce with the one cookie parser (a bare name before it is skipped)", async () => {
    const page = await srv.fetch(await authorizeUrl(srv, SITE));
    const nonce = /^acs_oauth_csrf=([^;]+)/.exec(page.headers.get("set-cookie")!)![1]!;
    const fields: Record<string, string> = {};
    for (const m of (await page.text()).matchAll(/<input type="hidden" name="([^"]+)" value="([^"]*)">/g)) fields[m[1]!] = m[2]!.replace(/&amp;/g, "&");
    const res = await srv.fetch("/api/v1/oauth/authorize", {
      method: "POST",
      redirect: "manual",
      headers: { "content-type": "application/x-www-form-urlencoded", cookie: `acs_oauth_csrf; acs_oauth_csrf=${nonce}` },
      body: form({ ...fields, decision: "deny" }),
    });
    expect(res.status).toBe(302);
    const location = new URL(res.headers.get("location")!);
    expect(`${location.origin}${location.pathname}`).toBe(CALLBACK);
    expect(location.searchParams.get("error")).toBe("access_denied");
  });
});

describe("production with SITE_URL left at http (behind a TLS proxy)", () => {
  let srv: TestServer;
  beforeAll(async () => {
    srv = await startServer({ config: { NODE_ENV: "production", RATE_LIMITS_ENABLED: true } });
  }, 60_000);
  afterAll(async () => {
    await srv.stop();
  });

  test("the consent form's nonce cookie is Secure, like the dashboard's", async () => {
    const page = await srv.fetch(await authorizeUrl(srv, srv.url));
    expect(page.status).toBe(200);
    expect(page.headers.get("set-cookie")).toMatch(/^acs_oauth_csrf=[^;]+; Path=\/api\/v1\/oauth; HttpOnly; SameSite=Strict; Max-Age=600; Secure$/);
    const dash = await srv.fetch("/dashboard/login");
    expect(dash.headers.get("set-cookie")).toMatch(/^acs_dash_login=[^;]+; Path=\/dashboard\/login; HttpOnly; SameSite=Strict; Max-Age=1800; Secure$/);
  });
});
