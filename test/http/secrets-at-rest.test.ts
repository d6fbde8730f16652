/**
 * Secrets at rest: run every flow that hands out a secret (session log-in, agent key, webhook secret and its
 * rotation, custodial wallet, OAuth confidential client + client_credentials, OAuth authorization code + PKCE +
 * refresh rotation, customer identity token), then scan every text, varchar and jsonb column of every table —
 * actor state, the retry inbox and the outbox included — for any plaintext secret. Hashes and sealed values are fine;
 * a plaintext anywhere is not.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { createHash } from "node:crypto";
import { openString } from "../../infra/crypto.ts";
import { walletSealingKey } from "../../actors/wallet/keys.ts";
import { ADMIN, ALL_SCOPES, createKey, login, merchantLogin } from "../helpers/agents.ts";
import { startServer, type TestServer } from "../helpers/server.ts";

const CALLBACK = "http://127.0.0.1:9/callback";

let srv: TestServer;
/** name → plaintext, everything the flows handed out */
const secrets = new Map<string, string>();
/** The agent key's public lookup prefix: stored in clear on purpose, so the scan must find it (it can fail). */
let controlPrefix = "";

beforeAll(async () => {
  srv = await startServer({ seed: true, config: { RATE_LIMITS_ENABLED: false } });
}, 60_000);
afterAll(async () => {
  await srv?.stop();
});

const form = (path: string, body: Record<string, string>, headers: Record<string, string> = {}) =>
  srv.json(path, { method: "POST", headers: { "content-type": "application/x-www-form-urlencoded", ...headers }, body: new URLSearchParams(body).toString() });

const b64url = (buf: Buffer) => buf.toString("base64url");

async function authorizationCode(clientId: string, resource: string): Promise<{ code: string; verifier: string }> {
  const verifier = b64url(Buffer.from(crypto.getRandomValues(new Uint8Array(32))));
  const challenge = b64url(createHash("sha256").update(verifier).digest());
  const u = new URL(`${srv.url}/api/v1/oauth/authorize`);
  for (const [k, v] of Object.entries({ response_type: "code", client_id: clientId, redirect_uri: CALLBACK, code_challenge: challenge, code_challenge_method: "S256", state: "s1", resource })) {
    u.searchParams.set(k, v);
  }
  const page = await fetch(u, { redirect: "manual" });
  expect(page.status).toBe(200);
  const html = await page.text();
  const cookie = (page.headers.get("set-cookie") ?? "").split(";")[0]!;
  const body = new URLSearchParams();
  for (const m of html.matchAll(/<input type="hidden" name="([^"]+)" value="([^"]*)">/g)) {
    body.set(m[1]!, m[2]!.replace(/&amp;/g, "&").replace(/&quot;/g, '"').replace(/&lt;/g, "<").replace(/&gt;/g, ">").replace(/&#39;/g, "'"));
  }
  body.set("email", ADMIN.email);
  body.set("password", ADMIN.password);
  body.set("decision", "allow");
  const res = await fetch(`${srv.url}/api/v1/oauth/authorize`, { method: "POST", redirect: "manual", headers: { "content-type": "application/x-www-form-urlencoded", cookie }, body });
  const location = res.headers.get("location");
  expect(location).toBeTruthy();
  const code = new URL(location!).searchParams.get("code");
  expect(code).toBeTruthy();
  return { code: code!, verifier };
}

describe("secret-bearing flows", () => {
  test("log-in, agent key, webhook secret and its rotation, wallet, OAuth clients, tokens and refresh all hand out their secrets", async () => {
    const session = await login(srv);
    secrets.set("session JWT", session);
    const merchantSession = await login(srv, merchantLogin("northwind-outfitters"));
    secrets.set("merchant session JWT", merchantSession);

    const key = await createKey(srv, { scopes: ALL_SCOPES, tier: "ENTERPRISE", token: session });
    secrets.set("agent key", key.key);
    controlPrefix = key.key.slice("agnt_".length, "agnt_".length + 12);

    const auth = { authorization: `Bearer ${session}` };
    const hook = await srv.json("/api/v1/merchant/stores/demo-store/webhooks", { method: "POST", headers: auth, body: { url: "http://127.0.0.1:9/hooks", events: ["order.created"] } });
    expect(hook.status).toBe(201);
    secrets.set("webhook secret", hook.body.data.secret);
    const rotated = await srv.json(`/api/v1/merchant/stores/demo-store/webhooks/${hook.body.data.id}/rotate-secret`, { method: "POST", headers: auth, body: {} });
    expect(rotated.status).toBe(200);
    secrets.set("rotated webhook secret", rotated.body.data.secret);

    const wallet = await srv.json("/api/v1/agent/wallet/provision", { method: "POST", headers: key.headers, body: {} });
    expect(wallet.status).toBe(201);
    const [row] = await srv.db.sql<{ id: string; sealed_private_key: string }[]>`SELECT id, sealed_private_key FROM agent_wallets WHERE agent_key_id = ${key.id}`;
    const kek = srv.running.services.extras.get("secretKey") as Uint8Array;
    const privateKey = openString(walletSealingKey(kek), row!.sealed_private_key, `agent-wallet:${row!.id}`);
    expect(privateKey).toMatch(/^0x[0-9a-f]{64}$/);
    secrets.set("wallet private key", privateKey.slice(2)); // the hex digits, with or without 0x

    const resource = `${srv.url}/demo-store/mcp`;
    const m2m = await srv.json("/api/v1/oauth/register", {
      method: "POST",
      headers: auth,
      body: { client_name: "m2m", grant_types: ["client_credentials"], token_endpoint_auth_method: "client_secret_post", scope: "search checkout" },
    });
    expect(m2m.status).toBe(201);
    secrets.set("OAuth client secret", m2m.body.client_secret);
    const cc = await form("/api/v1/oauth/token", { grant_type: "client_credentials", client_id: m2m.body.client_id, client_secret: m2m.body.client_secret, resource });
    expect(cc.status).toBe(200);
    secrets.set("client_credentials access token", cc.body.access_token);

    const pub = await srv.json("/api/v1/oauth/register", {
      method: "POST",
      body: { client_name: "agent", redirect_uris: [CALLBACK], token_endpoint_auth_method: "none", grant_types: ["authorization_code", "refresh_token"] },
    });
    expect(pub.status).toBe(201);
    const { code, verifier } = await authorizationCode(pub.body.client_id, resource);
    secrets.set("authorization code", code);
    secrets.set("PKCE verifier", verifier);
    const tokens = await form("/api/v1/oauth/token", { grant_type: "authorization_code", code, redirect_uri: CALLBACK, code_verifier: verifier, client_id: pub.body.client_id });
    expect(tokens.status).toBe(200);
    expect(tokens.body.refresh_token).toBeTruthy();
    secrets.set("access token", tokens.body.access_token);
    secrets.set("refresh token", tokens.body.refresh_token);
    const refreshed = await form("/api/v1/oauth/token", { grant_type: "refresh_token", refresh_token: tokens.body.refresh_token, client_id: pub.body.client_id });
    expect(refreshed.status).toBe(200);
    secrets.set("refreshed access token", refreshed.body.access_token);
    secrets.set("rotated refresh token", refreshed.body.refresh_token);

    const customer = await srv.json("/api/v1/merchant/stores/demo-store/customer-tokens", { method: "POST", headers: auth, body: { customer_id: "cust-1" } });
    expect(customer.status).toBe(201);
    secrets.set("customer identity token", customer.body.data.token);

    for (const [name, value] of secrets) expect({ name, long: typeof value === "string" && value.length >= 20 }).toEqual({ name, long: true });
  }, 60_000);

  test("no plaintext secret is stored in any text, varchar or jsonb column of any table", async () => {
    expect(secrets.size).toBeGreaterThanOrEqual(14);
    const sql = srv.db.sql;
    const columns = await sql<{ table_name: string; column_name: string }[]>`
      SELECT c.table_name, c.column_name FROM information_schema.columns c
      JOIN information_schema.tables t ON t.table_schema = c.table_schema AND t.table_name = c.table_name AND t.table_type = 'BASE TABLE'
      WHERE c.table_schema = 'public' AND c.data_type IN ('text', 'jsonb', 'character varying', 'json', 'ARRAY')`;
    expect(columns.some((c) => c.table_name === "actor_state")).toBe(true);
    expect(columns.some((c) => c.table_name === "actor_inbox")).toBe(true);
    const needles = [...secrets.values()];
    const found: string[] = [];
    const control: string[] = [];
    for (const { table_name, column_name } of columns) {
      const hit = await sql`SELECT 1 FROM ${sql(table_name)} WHERE strpos(${sql(column_name)}::text, ${controlPrefix}) > 0 LIMIT 1`;
      if (hit.length) control.push(`${table_name}.${column_name}`);
      const rows = await sql<{ v: string }[]>`
        SELECT ${sql(column_name)}::text AS v FROM ${sql(table_name)}
        WHERE EXISTS (SELECT 1 FROM unnest(${needles}::text[]) s WHERE strpos(lower(${sql(column_name)}::text), lower(s)) > 0)`;
      for (const r of rows) {
        const which = [...secrets].filter(([, s]) => r.v.toLowerCase().includes(s.toLowerCase())).map(([n]) => n);
        found.push(`${table_name}.${column_name}: ${which.join(", ")}`);
      }
    }
    expect(control).toContain("agent_keys.prefix");
    expect(found).toEqual([]);
  }, 60_000);
});
