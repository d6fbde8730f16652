/**
 * The OAuth flows the tests run against the real server (docs/access.md): registering a client (confidential
 * client_credentials, public code-flow), the PKCE authorize request, the consent page allowed by a user (its hidden
 * inputs posted back), the code exchange, the client_credentials token. Each function asserts the step's expected
 * success status, as the tests that used to repeat these lines did.
 */
import { expect } from "bun:test";
import { ADMIN } from "./agents.ts";
import type { TestServer } from "./server.ts";

/** The form content type the token, revoke and authorize endpoints take. */
export const FORM = { "content-type": "application/x-www-form-urlencoded" } as const;

export interface Credentials {
  email: string;
  password: string;
}

/** A confidential client's id and secret, as registration returned them. */
export interface SecretClient {
  clientId: string;
  secret: string;
}

/** The demo store's MCP endpoint, the `resource` the flows ask tokens for. */
export const mcpResource = (srv: TestServer): string => `${srv.url}/demo-store/mcp`;

/** The HTTP Basic authorization value of a client id and secret (each form-urlencoded first, RFC 6749 §2.3.1). */
export const basicAuth = (clientId: string, secret: string): string => `Basic ${btoa(`${encodeURIComponent(clientId)}:${encodeURIComponent(secret)}`)}`;

/** The S256 code challenge of a PKCE verifier. */
export const pkceChallenge = (verifier: string): string => new Bun.CryptoHasher("sha256").update(verifier).digest("base64url");

/** A fresh random PKCE verifier (72 characters). */
export const newVerifier = (): string => crypto.randomUUID() + crypto.randomUUID();

/** A POST to the token endpoint with `fields` form-encoded, optionally with an Authorization header. */
export function tokenRequest(srv: TestServer, fields: Record<string, string>, authorization?: string) {
  return srv.json("/api/v1/oauth/token", {
    method: "POST",
    headers: { ...FORM, ...(authorization ? { authorization } : {}) },
    body: new URLSearchParams(fields).toString(),
  });
}

/** Registers a confidential client_credentials client with `session`'s bearer token (201 expected). */
export async function registerMachineClient(
  srv: TestServer,
  session: string,
  opts: { name?: string; scope?: string; method?: "client_secret_basic" | "client_secret_post" } = {},
): Promise<SecretClient> {
  const reg = await srv.json("/api/v1/oauth/register", {
    method: "POST",
    headers: { authorization: `Bearer ${session}` },
    body: { client_name: opts.name ?? "m2m", grant_types: ["client_credentials"], token_endpoint_auth_method: opts.method ?? "client_secret_basic", scope: opts.scope ?? "search cart checkout" },
  });
  expect(reg.status).toBe(201);
  return { clientId: reg.body.client_id as string, secret: reg.body.client_secret as string };
}

/** The client_credentials token request of a client_secret_basic client, for the demo store's MCP endpoint. */
export function clientCredentials(srv: TestServer, client: SecretClient, opts: { scope?: string; secret?: string } = {}) {
  const fields: Record<string, string> = { grant_type: "client_credentials", ...(opts.scope !== undefined ? { scope: opts.scope } : {}), resource: mcpResource(srv) };
  return tokenRequest(srv, fields, basicAuth(client.clientId, opts.secret ?? client.secret));
}

/** A client_credentials access token (200 expected). */
export async function clientCredentialsToken(srv: TestServer, client: SecretClient, scope?: string): Promise<string> {
  const r = await clientCredentials(srv, client, scope === undefined ? {} : { scope });
  expect(r.status).toBe(200);
  return r.body.access_token as string;
}

/** Registers a public (token_endpoint_auth_method none) code-flow client, without a session (201 expected): its id. */
export async function registerPublicClient(
  srv: TestServer,
  opts: { name: string; redirectUri: string; scope: string; grantTypes?: string[] },
): Promise<string> {
  const reg = await srv.json("/api/v1/oauth/register", {
    method: "POST",
    body: { client_name: opts.name, redirect_uris: [opts.redirectUri], token_endpoint_auth_method: "none", grant_types: opts.grantTypes ?? ["authorization_code", "refresh_token"], scope: opts.scope },
  });
  expect(reg.status).toBe(201);
  return reg.body.client_id as string;
}

export interface AuthorizeRequest {
  clientId: string;
  redirectUri: string;
  scope: string;
  verifier: string;
}

/** The authorization endpoint's URL for a PKCE (S256) code request for the demo store's MCP endpoint. */
export function authorizeUrl(srv: TestServer, req: AuthorizeRequest): URL {
  const u = new URL("/api/v1/oauth/authorize", srv.url);
  const q = { response_type: "code", client_id: req.clientId, redirect_uri: req.redirectUri, code_challenge: pkceChallenge(req.verifier), code_challenge_method: "S256", state: "s", scope: req.scope, resource: mcpResource(srv) };
  for (const [k, v] of Object.entries(q)) u.searchParams.set(k, v);
  return u;
}

/** The consent page's hidden inputs (HTML entities undone), as the page's own form would post them. */
export function hiddenInputs(html: string): URLSearchParams {
  const fields = new URLSearchParams();
  for (const m of html.matchAll(/<input type="hidden" name="([^"]+)" value="([^"]*)">/g)) fields.set(m[1]!, m[2]!.replace(/&amp;/g, "&").replace(/&quot;/g, '"').replace(/&#39;/g, "'"));
  return fields;
}

/** Allows a consent page already fetched (`page`, its text `html`) as `who`: the authorization code (302 expected). */
export async function allowOnPage(srv: TestServer, page: Response, html: string, who: Credentials = ADMIN): Promise<string | null> {
  const fields = hiddenInputs(html);
  fields.set("email", who.email);
  fields.set("password", who.password);
  fields.set("decision", "allow");
  const post = await fetch(new URL("/api/v1/oauth/authorize", srv.url), {
    method: "POST",
    redirect: "manual",
    headers: { cookie: (page.headers.get("set-cookie") ?? "").split(";")[0]!, ...FORM },
    body: fields,
  });
  expect(post.status).toBe(302);
  return new URL(post.headers.get("location")!).searchParams.get("code");
}

/** Opens the consent page for `req` (200 expected) and allows it as `who`: the authorization code. */
export async function authorizationCode(srv: TestServer, req: AuthorizeRequest, who: Credentials = ADMIN): Promise<string> {
  const page = await fetch(authorizeUrl(srv, req), { redirect: "manual" });
  const html = await page.text();
  expect(page.status).toBe(200);
  return (await allowOnPage(srv, page, html, who))!;
}

/** The authorization_code token request of a public client. */
export function exchangeCode(srv: TestServer, req: { clientId: string; redirectUri: string; verifier: string }, code: string) {
  return tokenRequest(srv, { grant_type: "authorization_code", client_id: req.clientId, code, code_verifier: req.verifier, redirect_uri: req.redirectUri });
}

/** The whole code flow for a public client: consent as `who`, exchange the code (200 expected), the tokens. */
export async function codeFlowTokens(srv: TestServer, req: AuthorizeRequest, who: Credentials = ADMIN): Promise<{ access: string; refresh: string | undefined }> {
  const code = await authorizationCode(srv, req, who);
  const t = await exchangeCode(srv, req, code);
  expect(t.status).toBe(200);
  return { access: t.body.access_token as string, refresh: t.body.refresh_token as string | undefined };
}
