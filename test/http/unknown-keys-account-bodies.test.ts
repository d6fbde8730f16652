/**
 * Audit W-7, the account, key and operator routes: a key the body does not have (a misspelling) is 400
 * validation_error naming it (`details.field`, `details.allowed`) and nothing is written; the right spelling still
 * works. The gateway's TypeBox normaliser dropped such keys, so `scope` for `scopes` minted a key with the default
 * scopes, `tiers` a STARTER key, a customer token's `ttl` lived the default hour, an AP2 user key's misspelt `proof`
 * was answered with a new challenge. The session (or the operator role) is still checked first.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { exportJWK, generateKeyPair } from "jose";
import { ADMIN, ALL_SCOPES, createKey, login, merchantLogin } from "../helpers/agents.ts";
import { startServer, type TestServer } from "../helpers/server.ts";
import { expectUnknownKey } from "../helpers/unknown-key.ts";

let srv: TestServer;
let admin: Record<string, string>;

beforeAll(async () => {
  srv = await startServer({ seed: true, config: { RATE_LIMITS_ENABLED: false } });
  admin = { authorization: `Bearer ${await login(srv)}` };
}, 60_000);
afterAll(async () => {
  await srv?.stop();
});

describe("a misspelt key on an account, key or operator body: 400 naming it, the right spelling works", () => {
  test("POST /auth/login with a key beside email and password: 400 naming it, no token", async () => {
    const r = await srv.json("/api/v1/auth/login", { method: "POST", body: { ...ADMIN, remember_me: true } });
    expectUnknownKey(r, "remember_me", ["email", "password"]);
    expect((await srv.json("/api/v1/auth/login", { method: "POST", body: ADMIN })).status).toBe(200);
  });

  test("POST /agent-keys with scope (for scopes): 400 naming it and no key minted (it got the default scopes)", async () => {
    const count = async () => (await srv.db.sql<{ n: number }[]>`SELECT count(*)::int AS n FROM agent_keys WHERE name = 'w7 key'`)[0]!.n;
    const r = await srv.json("/api/v1/agent-keys", { method: "POST", headers: admin, body: { name: "w7 key", scope: ["search"] } });
    expectUnknownKey(r, "scope", ["name", "scopes", "tier"]);
    const t = await srv.json("/api/v1/agent-keys", { method: "POST", headers: admin, body: { name: "w7 key", tiers: "PRO" } });
    expectUnknownKey(t, "tiers", ["name", "scopes", "tier"]);
    expect(await count()).toBe(0);
    const ok = await srv.json("/api/v1/agent-keys", { method: "POST", headers: admin, body: { name: "w7 key", scopes: ["search"], tier: "PRO" } });
    expect(ok.status).toBe(201);
    expect(ok.body.data).toMatchObject({ scopes: ["search"], tier: "PRO" });
  });

  test("POST /agent-keys without a session is 401 whatever its keys", async () => {
    const r = await srv.json("/api/v1/agent-keys", { method: "POST", body: { name: "x", scope: ["search"] } });
    expect(r.status).toBe(401);
  });

  test("PUT /admin/users/plan with a key beside email and plan: 400 naming it, the plan unchanged", async () => {
    const email = "owner@greenleaf-living.example";
    const plan = async () => (await srv.db.sql<{ plan: string }[]>`SELECT plan FROM users WHERE lower(email) = ${email}`)[0]!.plan;
    const before = await plan();
    const r = await srv.json("/api/v1/admin/users/plan", { method: "PUT", headers: admin, body: { email, plan: "PRO", notify: true } });
    expectUnknownKey(r, "notify", ["email", "plan"]);
    expect(await plan()).toBe(before);
    const ok = await srv.json("/api/v1/admin/users/plan", { method: "PUT", headers: admin, body: { email, plan: "PRO" } });
    expect(ok.status).toBe(200);
    expect(await plan()).toBe("PRO");
  });

  test("PUT /admin/users/plan from a merchant: 403 before the body is looked at", async () => {
    const merchant = { authorization: `Bearer ${await login(srv, merchantLogin("greenleaf-living"))}` };
    const r = await srv.json("/api/v1/admin/users/plan", { method: "PUT", headers: merchant, body: { email: "x@y.z", plan: "PRO", notify: true } });
    expect(r.status).toBe(403);
    expect(r.body.code).toBe("forbidden");
  });

  test("POST /merchant/stores/{slug}/customer-tokens with ttl (for ttl_seconds): 400 naming it (the token lived the default hour)", async () => {
    const route = "/api/v1/merchant/stores/demo-store/customer-tokens";
    const r = await srv.json(route, { method: "POST", headers: admin, body: { customer_id: "cust-w7", ttl: 120 } });
    expectUnknownKey(r, "ttl", ["customer_id", "ttl_seconds"]);
    const ok = await srv.json(route, { method: "POST", headers: admin, body: { customer_id: "cust-w7", ttl_seconds: 120 } });
    expect(ok.status).toBe(201);
    expect(ok.body.data.expires_in).toBe(120);
  });

  test("PUT /agent-keys/{id}/ap2-user-keys/{kid} with proff (for proof): 400 naming it, not a new challenge; the JWK's own members are not checked", async () => {
    const key = await createKey(srv, { scopes: ALL_SCOPES, tier: "ENTERPRISE" });
    const url = `/api/v1/agent-keys/${key.id}/ap2-user-keys/phone`;
    const jwk = await exportJWK((await generateKeyPair("ES256", { extractable: true })).publicKey);
    const r = await srv.json(url, { method: "PUT", headers: admin, body: { jwk, proff: "x.y.z" } });
    expectUnknownKey(r, "proff", ["jwk", "proof"]);
    // a JWK member the schema does not list (kid, use) is the JWK's: the challenge answers as before
    const challenge = await srv.json(url, { method: "PUT", headers: admin, body: { jwk: { ...jwk, use: "sig" } } });
    expect(challenge.status).toBe(400);
    expect(typeof challenge.body.details.nonce).toBe("string");
  });
});
