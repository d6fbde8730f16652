/**
 * Registered OAuth clients nobody uses do not stay forever (audit W-1): `last_used_at` is stamped when a user
 * authorizes the client and when a token is issued to it (at most once an hour per client; a refused token request
 * is no use), and the retention job's `oauth_clients` rule (gateway/oauth/clients.ts `deleteUnusedClients`) deletes
 * ownerless clients never used 24 h after registering or unused for 31 days, keeping used, recent and owned ones.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import * as oauth from "oauth4webapi";
import { deleteUnusedClients } from "../../gateway/oauth/clients.ts";
import { runRetention } from "../../infra/retention.ts";
import { ADMIN, login } from "../helpers/agents.ts";
import { startServer, type TestServer } from "../helpers/server.ts";

const CALLBACK = "http://127.0.0.1:9/callback";

let srv: TestServer;
beforeAll(async () => {
  // the retention job runs only when a test says so
  srv = await startServer({ config: { RETENTION_INTERVAL_MS: 0 } });
}, 60_000);
afterAll(async () => {
  await srv.stop();
});

async function register(metadata: Record<string, unknown> = {}, bearer?: string): Promise<string> {
  const r = await srv.json("/api/v1/oauth/register", {
    method: "POST",
    body: { client_name: "Retention", redirect_uris: [CALLBACK], token_endpoint_auth_method: "none", ...metadata },
    headers: bearer ? { authorization: `Bearer ${bearer}` } : {},
  });
  expect(r.status).toBe(201);
  return r.body.client_id;
}

/** Opens the consent page and allows it as the admin: the code and its verifier. */
async function consent(clientId: string): Promise<{ code: string; verifier: string }> {
  const verifier = oauth.generateRandomCodeVerifier();
  const q = new URLSearchParams({
    response_type: "code",
    client_id: clientId,
    redirect_uri: CALLBACK,
    code_challenge: await oauth.calculatePKCECodeChallenge(verifier),
    code_challenge_method: "S256",
    resource: `${srv.url}/demo-store/mcp`,
  });
  const page = await fetch(`${srv.url}/api/v1/oauth/authorize?${q}`, { redirect: "manual" });
  expect(page.status).toBe(200);
  const form = new URLSearchParams();
  for (const m of (await page.text()).matchAll(/<input type="hidden" name="([^"]+)" value="([^"]*)">/g)) form.set(m[1]!, m[2]!.replace(/&amp;/g, "&"));
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
  return { code: new URL(res.headers.get("location")!).searchParams.get("code")!, verifier };
}

const token = (form: Record<string, string>) =>
  srv.json("/api/v1/oauth/token", { method: "POST", headers: { "content-type": "application/x-www-form-urlencoded" }, body: new URLSearchParams(form).toString() });

/** How long ago the client's use was stamped, in seconds; null if never. */
async function stampAge(clientId: string): Promise<number | null> {
  const rows = await srv.db.sql<{ age: number | null }[]>`
    SELECT extract(epoch FROM now() - last_used_at)::float8 AS age FROM oauth_clients WHERE client_id = ${clientId}`;
  return rows[0]!.age;
}

async function backdate(clientId: string, createdAgo: string, lastUsedAgo: string | null): Promise<void> {
  await srv.db.sql`UPDATE oauth_clients SET created_at = now() - ${createdAgo}::interval,
                   last_used_at = CASE WHEN ${lastUsedAgo}::text IS NULL THEN NULL ELSE now() - ${lastUsedAgo}::interval END
                   WHERE client_id = ${clientId}`;
}

describe("a client's last use", () => {
  test("is stamped by a consent and by a token issued, not by a refused token request, and at most once an hour", async () => {
    const id = await register();
    expect(await stampAge(id)).toBeNull();
    // anyone can send this with a public client's id: it must not keep the client alive
    const refused = await token({ grant_type: "authorization_code", client_id: id, code: "ac_garbage", code_verifier: "v".repeat(43), redirect_uri: CALLBACK });
    expect(refused.status).toBe(400);
    expect(refused.body.error).toBe("invalid_grant");
    expect(await stampAge(id)).toBeNull();

    const { code, verifier } = await consent(id);
    expect(await stampAge(id)).toBeLessThan(60);

    await backdate(id, "2 hours", "2 hours");
    const issued = await token({ grant_type: "authorization_code", client_id: id, code, code_verifier: verifier, redirect_uri: CALLBACK });
    expect(issued.status).toBe(200);
    expect(await stampAge(id)).toBeLessThan(60);

    // stamped 30 minutes ago: a refresh within the hour writes nothing
    await backdate(id, "2 hours", "30 minutes");
    const refreshed = await token({ grant_type: "refresh_token", client_id: id, refresh_token: issued.body.refresh_token });
    expect(refreshed.status).toBe(200);
    expect(await stampAge(id)).toBeGreaterThan(29 * 60);
    // an hour and more: the next refresh stamps it again
    await backdate(id, "2 hours", "61 minutes");
    expect((await token({ grant_type: "refresh_token", client_id: id, refresh_token: refreshed.body.refresh_token })).status).toBe(200);
    expect(await stampAge(id)).toBeLessThan(60);
  }, 30_000);
});

describe("the sweep", () => {
  test("deletes ownerless clients never used 24 h after registering or unused 31 days, and keeps recent, used and owned ones", async () => {
    const session = await login(srv);
    const neverUsedOld = await register();
    const neverUsedNew = await register();
    const unusedLong = await register();
    const usedWithinRefreshLife = await register();
    const ownedNeverUsed = await register({ token_endpoint_auth_method: "client_secret_basic" }, session);
    const ownedUnusedLong = await register({ token_endpoint_auth_method: "client_secret_basic" }, session);
    await backdate(neverUsedOld, "25 hours", null);
    await backdate(neverUsedNew, "23 hours", null);
    await backdate(unusedLong, "60 days", "32 days");
    await backdate(usedWithinRefreshLife, "60 days", "30 days");
    await backdate(ownedNeverUsed, "60 days", null);
    await backdate(ownedUnusedLong, "60 days", "60 days");

    // a batch of one row, then the other, then nothing left
    expect(await deleteUnusedClients(srv.db.sql, Date.now(), 1)).toBe(1);
    expect(await deleteUnusedClients(srv.db.sql, Date.now(), 1)).toBe(1);
    const left = (await srv.db.sql<{ client_id: string }[]>`SELECT client_id FROM oauth_clients`).map((r) => r.client_id);
    expect(left).not.toContain(neverUsedOld);
    expect(left).not.toContain(unusedLong);
    for (const kept of [neverUsedNew, usedWithinRefreshLife, ownedNeverUsed, ownedUnusedLong]) expect(left).toContain(kept);
    expect(await deleteUnusedClients(srv.db.sql, Date.now(), 1000)).toBe(0);
  });

  test("the retention job runs it: a client in use keeps working across a run, and a swept one is an unknown client", async () => {
    const kept = await register();
    const { code, verifier } = await consent(kept);
    await backdate(kept, "60 days", "1 day");
    const swept = await register();
    await backdate(swept, "2 days", null);
    const deleted = await runRetention(srv.db.sql, { RETENTION_BATCH: 1000, RETENTION_OAUTH_GRACE_DAYS: 1, RETENTION_CART_GRACE_DAYS: 7, RETENTION_WEBHOOK_EVENT_DAYS: 30 }, Date.now());
    expect(deleted.oauth_clients).toBe(1);
    const issued = await token({ grant_type: "authorization_code", client_id: kept, code, code_verifier: verifier, redirect_uri: CALLBACK });
    expect(issued.status).toBe(200);
    const gone = await token({ grant_type: "authorization_code", client_id: swept, code: "ac_x", code_verifier: "v".repeat(43) });
    expect(gone.status).toBe(401);
    expect(gone.body).toMatchObject({ error: "invalid_client", code: "invalid_client" });
  }, 30_000);
});
