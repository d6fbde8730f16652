import { afterAll, beforeAll, expect, test } from "bun:test";
import * as oauth from "oauth4webapi";
import { setLogSink } from "../../infra/log.ts";
import { ADMIN } from "../helpers/agents.ts";
import { startServer, type TestServer } from "../helpers/server.ts";

/**
 * Everything the service logs while users log in, create keys, call routes with them (good and bad), and go
 * through OAuth is captured at debug level; no key, password, token or secret may appear in it.
 */
const lines: string[] = [];
let restore: () => void;
let srv: TestServer;

beforeAll(async () => {
  restore = setLogSink((line) => lines.push(line));
  srv = await startServer({ config: { LOG_LEVEL: "debug" } });
}, 60_000);
afterAll(async () => {
  await srv.stop();
  restore();
});

test("keys, passwords and tokens never appear in the logs", async () => {
  const secrets: string[] = [ADMIN.password, "wrong-password-123"];
  const login = await srv.json("/api/v1/auth/login", { method: "POST", body: ADMIN });
  const token: string = login.body.data.token;
  secrets.push(token);
  await srv.json("/api/v1/auth/login", { method: "POST", body: { email: ADMIN.email, password: "wrong-password-123" } });
  await srv.json("/api/v1/auth/login", { method: "POST", body: { email: "nobody@example.com", password: "wrong-password-123" } });

  const created = await srv.json("/api/v1/agent-keys", { method: "POST", headers: { authorization: `Bearer ${token}` }, body: { name: "logged", tier: "GROWTH" } });
  const key: string = created.body.data.key;
  secrets.push(key, key.slice(17));
  const headers = { "x-agent-api-key": key };
  await srv.json("/api/v1/agent/search", { method: "POST", headers, body: { query: "mug" } });
  await srv.json("/api/v1/agent/search", { method: "POST", headers, body: { query: "" } });
  await srv.json(`/api/v1/agent/products/${crypto.randomUUID()}`, { headers });
  await srv.json("/api/v1/agent/merchants/demo-store/protocols", { headers });
  const wrongKey = key.slice(0, 20) + (key[20] === "a" ? "b" : "a") + key.slice(21);
  secrets.push(wrongKey);
  await srv.json("/api/v1/agent/search", { method: "POST", headers: { "x-agent-api-key": wrongKey }, body: { query: "mug" } });

  // OAuth: a confidential client and its secret, tokens, and a public client's consent with a password
  const reg = await srv.json("/api/v1/oauth/register", { method: "POST", headers: { authorization: `Bearer ${token}` }, body: { grant_types: ["client_credentials"], token_endpoint_auth_method: "client_secret_basic" } });
  secrets.push(reg.body.client_secret);
  const tok = await srv.json("/api/v1/oauth/token", {
    method: "POST",
    headers: { "content-type": "application/x-www-form-urlencoded", authorization: `Basic ${btoa(`${reg.body.client_id}:${reg.body.client_secret}`)}` },
    body: new URLSearchParams({ grant_type: "client_credentials", resource: `${srv.url}/demo-store/mcp` }).toString(),
  });
  secrets.push(tok.body.access_token);
  const pub = await srv.json("/api/v1/oauth/register", { method: "POST", body: { redirect_uris: ["http://127.0.0.1:9/cb"], token_endpoint_auth_method: "none" } });
  const verifier = oauth.generateRandomCodeVerifier();
  const q = new URLSearchParams({ response_type: "code", client_id: pub.body.client_id, redirect_uri: "http://127.0.0.1:9/cb", code_challenge: await oauth.calculatePKCECodeChallenge(verifier), code_challenge_method: "S256", resource: `${srv.url}/demo-store/mcp` });
  const page = await fetch(`${srv.url}/api/v1/oauth/authorize?${q}`);
  const html = await page.text();
  const csrf = /name="csrf_token" value="([^"]+)"/.exec(html)![1]!;
  const form = new URLSearchParams(q);
  form.set("csrf_token", csrf);
  form.set("email", ADMIN.email);
  form.set("password", ADMIN.password);
  form.set("decision", "allow");
  const done = await fetch(`${srv.url}/api/v1/oauth/authorize`, { method: "POST", redirect: "manual", headers: { "content-type": "application/x-www-form-urlencoded", cookie: page.headers.get("set-cookie")!.split(";")[0]! }, body: form });
  const code = new URL(done.headers.get("location")!).searchParams.get("code")!;
  secrets.push(code);
  const codeTok = await srv.json("/api/v1/oauth/token", {
    method: "POST",
    headers: { "content-type": "application/x-www-form-urlencoded" },
    body: new URLSearchParams({ grant_type: "authorization_code", code, code_verifier: verifier, redirect_uri: "http://127.0.0.1:9/cb", client_id: pub.body.client_id }).toString(),
  });
  expect(codeTok.status).toBe(200);
  secrets.push(codeTok.body.refresh_token, codeTok.body.access_token, verifier);

  const log = lines.join("\n");
  expect(lines.length).toBeGreaterThan(0);
  for (const s of secrets) {
    expect(typeof s).toBe("string");
    expect(log.includes(s)).toBe(false);
  }
  expect(log).not.toMatch(/agnt_[0-9A-Za-z]{13,}/);
});
