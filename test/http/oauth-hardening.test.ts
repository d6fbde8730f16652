/**
 * OAuth hardening (security audit C-4, C-5; review R2 J-2): a refused token request changes nothing (the refresh
 * token or code stays usable), a code is only redeemed by the client it was issued to, a replay revokes the tokens
 * of the redemption it lost to even when the two run at once, and the authorization endpoint never redirects an
 * error of a request the user has not acted on to a self-registered client's redirect URI.
 */
import { beforeAll, describe, expect, test } from "bun:test";
import * as oauth from "oauth4webapi";
import { ADMIN } from "../helpers/agents.ts";
import { useServer } from "../helpers/server.ts";

const CALLBACK = "http://127.0.0.1:9/callback";

const srv = useServer();
let resourceA: string;
let resourceB: string;

beforeAll(async () => {
  const rows = await srv.db.sql<{ slug: string }[]>`SELECT slug FROM stores WHERE slug <> 'demo-store' ORDER BY slug LIMIT 1`;
  resourceA = `${srv.url}/demo-store/mcp`;
  resourceB = `${srv.url}/${rows[0]!.slug}/mcp`;
}, 60_000);

async function publicClient(redirectUri = CALLBACK, scope = "search cart"): Promise<{ client_id: string }> {
  const r = await srv.json("/api/v1/oauth/register", { method: "POST", body: { client_name: "Hardening", redirect_uris: [redirectUri], token_endpoint_auth_method: "none", scope } });
  expect(r.status).toBe(201);
  return r.body;
}

function authorizeUrl(params: Record<string, string>): string {
  return `${srv.url}/api/v1/oauth/authorize?${new URLSearchParams(params)}`;
}

/** Opens the consent page and allows it as the admin; returns the code and its verifier. */
async function codeFor(client: { client_id: string }): Promise<{ code: string; verifier: string }> {
  const verifier = oauth.generateRandomCodeVerifier();
  const page = await fetch(
    authorizeUrl({
      response_type: "code",
      client_id: client.client_id,
      redirect_uri: CALLBACK,
      code_challenge: await oauth.calculatePKCECodeChallenge(verifier),
      code_challenge_method: "S256",
      resource: resourceA,
      state: "st",
    }),
    { redirect: "manual" },
  );
  expect(page.status).toBe(200);
  const html = await page.text();
  const form = new URLSearchParams();
  for (const m of html.matchAll(/<input type="hidden" name="([^"]+)" value="([^"]*)">/g)) form.set(m[1]!, m[2]!.replace(/&amp;/g, "&"));
  form.set("email", ADMIN.email);
  form.set("password", ADMIN.password);
  form.set("decision", "allow");
  const res = await fetch(`${srv.url}/api/v1/oauth/authorize`, {
    method: "POST",
    redirect: "manual",
    headers: { "content-type": "application/x-www-form-urlencoded", cookie: (page.headers.get("set-cookie") ?? "").split(";")[0]! },
    body: form,
  });
  expect(res.status).toBe(302);
  const code = new URL(res.headers.get("location")!).searchParams.get("code");
  expect(code).toBeTruthy();
  return { code: code!, verifier };
}

async function token(form: Record<string, string>) {
  return srv.json("/api/v1/oauth/token", { method: "POST", headers: { "content-type": "application/x-www-form-urlencoded" }, body: new URLSearchParams(form).toString() });
}

async function tokensFor(client: { client_id: string }) {
  const { code, verifier } = await codeFor(client);
  const t = await token({ grant_type: "authorization_code", code, code_verifier: verifier, redirect_uri: CALLBACK, client_id: client.client_id });
  expect(t.status).toBe(200);
  return t.body as { access_token: string; refresh_token: string; scope: string };
}

describe("a refused token request changes nothing", () => {
  test("a refresh refused for a scope that was not granted leaves the refresh token usable", async () => {
    const client = await publicClient();
    const t = await tokensFor(client);
    const wider = await token({ grant_type: "refresh_token", refresh_token: t.refresh_token, client_id: client.client_id, scope: "search checkout" });
    expect(wider.status).toBe(400);
    expect(wider.body).toMatchObject({ error: "invalid_scope" });
    const retry = await token({ grant_type: "refresh_token", refresh_token: t.refresh_token, client_id: client.client_id });
    expect(retry.status).toBe(200);
    expect(retry.body.refresh_token).not.toBe(t.refresh_token);
    expect(retry.body.scope).toBe(t.scope);
    // the rotated token works in turn: nothing took the retry for a replay
    expect((await token({ grant_type: "refresh_token", refresh_token: retry.body.refresh_token, client_id: client.client_id })).status).toBe(200);
  });

  test("a refresh refused for another store's resource leaves the refresh token usable", async () => {
    const client = await publicClient();
    const t = await tokensFor(client);
    const other = await token({ grant_type: "refresh_token", refresh_token: t.refresh_token, client_id: client.client_id, resource: resourceB });
    expect(other.status).toBe(400);
    expect(other.body).toMatchObject({ error: "invalid_target" });
    const retry = await token({ grant_type: "refresh_token", refresh_token: t.refresh_token, client_id: client.client_id });
    expect(retry.status).toBe(200);
  });

  test("a code presented by another client is refused and its own client still redeems it", async () => {
    const owner = await publicClient();
    const intruder = await publicClient();
    const { code, verifier } = await codeFor(owner);
    const stolen = await token({ grant_type: "authorization_code", code, code_verifier: verifier, redirect_uri: CALLBACK, client_id: intruder.client_id });
    expect(stolen.status).toBe(400);
    expect(stolen.body).toMatchObject({ error: "invalid_grant" });
    const mine = await token({ grant_type: "authorization_code", code, code_verifier: verifier, redirect_uri: CALLBACK, client_id: owner.client_id });
    expect(mine.status).toBe(200);
    expect(mine.body.refresh_token).toBeTruthy();
  });

  test("a wrong PKCE verifier, redirect URI or resource does not spend the code", async () => {
    const client = await publicClient();
    const { code, verifier } = await codeFor(client);
    const base = { grant_type: "authorization_code", code, code_verifier: verifier, redirect_uri: CALLBACK, client_id: client.client_id };
    const wrongVerifier = await token({ ...base, code_verifier: oauth.generateRandomCodeVerifier() });
    expect(wrongVerifier.status).toBe(400);
    expect(wrongVerifier.body).toMatchObject({ error: "invalid_grant" });
    const wrongRedirect = await token({ ...base, redirect_uri: "http://127.0.0.1:9/other" });
    expect(wrongRedirect.body).toMatchObject({ error: "invalid_grant" });
    const wrongResource = await token({ ...base, resource: resourceB });
    expect(wrongResource.body).toMatchObject({ error: "invalid_target" });
    const right = await token(base);
    expect(right.status).toBe(200);
  });

  test("a code its own client redeems twice still revokes the tokens of the first redemption", async () => {
    const client = await publicClient();
    const { code, verifier } = await codeFor(client);
    const form = { grant_type: "authorization_code", code, code_verifier: verifier, redirect_uri: CALLBACK, client_id: client.client_id };
    const first = await token(form);
    expect(first.status).toBe(200);
    expect((await token(form)).body).toMatchObject({ error: "invalid_grant" });
    const refresh = await token({ grant_type: "refresh_token", refresh_token: first.body.refresh_token, client_id: client.client_id });
    expect(refresh.body).toMatchObject({ error: "invalid_grant" });
  });
});

describe("concurrent replays revoke the winner's tokens", () => {
  // Each round races two requests; without the fix the winner's refresh token survived most rounds (R2: 13 of 15).
  const ROUNDS = 4;

  test("of two concurrent redemptions of one code, one gets tokens, the other invalid_grant, and the winner's refresh token is revoked", async () => {
    const usable: number[] = [];
    for (let round = 0; round < ROUNDS; round++) {
      const client = await publicClient();
      const { code, verifier } = await codeFor(client);
      const form = { grant_type: "authorization_code", code, code_verifier: verifier, redirect_uri: CALLBACK, client_id: client.client_id };
      const answers = await Promise.all([token(form), token(form)]);
      expect(answers.map((a) => a.status).sort()).toEqual([200, 400]);
      const winner = answers.find((a) => a.status === 200)!;
      expect(answers.find((a) => a.status === 400)!.body).toMatchObject({ error: "invalid_grant" });
      const refresh = await token({ grant_type: "refresh_token", refresh_token: winner.body.refresh_token, client_id: client.client_id });
      if (refresh.status === 200) usable.push(round);
      else expect(refresh.body).toMatchObject({ error: "invalid_grant" });
    }
    expect(usable).toEqual([]);
  });

  test("of two concurrent refreshes with one refresh token, the winner's new refresh token is revoked with its family", async () => {
    const usable: number[] = [];
    for (let round = 0; round < ROUNDS; round++) {
      const client = await publicClient();
      const first = await tokensFor(client);
      const form = { grant_type: "refresh_token", refresh_token: first.refresh_token, client_id: client.client_id };
      const answers = await Promise.all([token(form), token(form)]);
      expect(answers.map((a) => a.status).sort()).toEqual([200, 400]);
      const winner = answers.find((a) => a.status === 200)!;
      const next = await token({ grant_type: "refresh_token", refresh_token: winner.body.refresh_token, client_id: client.client_id });
      if (next.status === 200) usable.push(round);
      else expect(next.body).toMatchObject({ error: "invalid_grant" });
    }
    expect(usable).toEqual([]);
  });
});

describe("authorization errors before consent are shown, never redirected", () => {
  const EVIL = "https://evil.example/landing";
  const valid = (clientId: string) => ({
    response_type: "code",
    client_id: clientId,
    redirect_uri: EVIL,
    code_challenge: "a".repeat(43),
    code_challenge_method: "S256",
    resource: `${srv.url}/demo-store/mcp`,
    state: "s1",
  });

  test("an unsupported response_type, a missing or plain PKCE challenge, a bad scope or resource give a 400 page and no Location", async () => {
    const client = await publicClient(EVIL);
    const cases: [Record<string, string>, string][] = [
      [{ response_type: "x" }, "unsupported_response_type"],
      [{ response_type: "token" }, "unsupported_response_type"],
      [{ code_challenge: "" }, "invalid_request"],
      [{ code_challenge_method: "plain" }, "invalid_request"],
      [{ scope: "agent:read" }, "invalid_scope"],
      [{ resource: `${srv.url}/no-such-store/mcp` }, "invalid_target"],
    ];
    for (const [change, error] of cases) {
      const params = { ...valid(client.client_id), ...change };
      for (const k of Object.keys(params) as (keyof typeof params)[]) if (params[k] === "") delete params[k];
      const res = await fetch(authorizeUrl(params), { redirect: "manual" });
      expect({ change, status: res.status, location: res.headers.get("location") }).toEqual({ change, status: 400, location: null });
      expect(res.headers.get("content-type")).toContain("text/html");
      expect(await res.text()).toContain(error);
    }
  });

  test("a valid request still shows the consent page, and denying it still redirects back with access_denied", async () => {
    const client = await publicClient(EVIL);
    const page = await fetch(authorizeUrl(valid(client.client_id)), { redirect: "manual" });
    expect(page.status).toBe(200);
    const html = await page.text();
    const form = new URLSearchParams();
    for (const m of html.matchAll(/<input type="hidden" name="([^"]+)" value="([^"]*)">/g)) form.set(m[1]!, m[2]!.replace(/&amp;/g, "&"));
    form.set("decision", "deny");
    const res = await fetch(`${srv.url}/api/v1/oauth/authorize`, {
      method: "POST",
      redirect: "manual",
      headers: { "content-type": "application/x-www-form-urlencoded", cookie: (page.headers.get("set-cookie") ?? "").split(";")[0]! },
      body: form,
    });
    expect(res.status).toBe(302);
    const back = new URL(res.headers.get("location")!);
    expect(back.origin + back.pathname).toBe(EVIL);
    expect(back.searchParams.get("error")).toBe("access_denied");
    expect(back.searchParams.get("state")).toBe("s1");
  });
});
