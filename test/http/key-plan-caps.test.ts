/**
 * Plans that hold (review R2): a key's features are capped at its account's plan, SANDBOX keys included (R2-1); a
 * merchant account holds at most AGENT_KEYS_MAX_LIVE live keys (R2-1); lowering a plan caps the live keys at once,
 * and an operator can read a plan, list an account's keys and revoke one (R2-2, R2-4); POST /agent-keys quotes an
 * unknown tier or scope in the house form, bounded (R2-3); e-mails are unique in any case (R2-5).
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { login, merchantLogin } from "../helpers/agents.ts";
import { startServer, type TestServer } from "../helpers/server.ts";
import { connect, DEMO_PRODUCT, errorOf } from "../mcp/helpers.ts";

const GREENLEAF = merchantLogin("greenleaf-living");
const MAPLE = merchantLogin("maple-pine-home");
const COZY = merchantLogin("cozy-paws-supply");
const MAX_LIVE = 5;

let srv: TestServer;
let admin: Record<string, string>;
const session: Record<string, Record<string, string>> = {};

beforeAll(async () => {
  srv = await startServer({ seed: true, config: { AGENT_KEYS_MAX_LIVE: MAX_LIVE } });
  admin = { authorization: `Bearer ${await login(srv)}` };
  for (const who of [GREENLEAF, MAPLE, COZY]) session[who.email] = { authorization: `Bearer ${await login(srv, who)}` };
}, 120_000);
afterAll(async () => {
  await srv?.stop();
}, 30_000);

const mint = (headers: Record<string, string>, body: Record<string, unknown> = {}) =>
  srv.json("/api/v1/agent-keys", { method: "POST", headers, body: { name: "plan caps", ...body } });
const setPlan = (email: string, plan: string) => srv.json("/api/v1/admin/users/plan", { method: "PUT", headers: admin, body: { email, plan } });
const priceHistory = (key: string) => srv.json(`/api/v1/agent/products/${DEMO_PRODUCT}/price-history`, { headers: { "x-agent-api-key": key } });

describe("R2-1: a SANDBOX key has at most its account's plan's features", () => {
  test("a STARTER account's SANDBOX key is 403 feature_not_in_tier on the GROWTH features, naming the plan", async () => {
    const key = (await mint(session[GREENLEAF.email], { tier: "SANDBOX" })).body.data;
    expect(key).toMatchObject({ tier: "SANDBOX", plan: "STARTER" });
    const headers = { "x-agent-api-key": key.key };
    const calls = [
      ["price_history", priceHistory(key.key)],
      ["sustainability", srv.json(`/api/v1/agent/products/${DEMO_PRODUCT}/sustainability`, { headers })],
      ["recommendations", srv.json("/api/v1/agent/recommendations", { method: "POST", headers, body: { productId: DEMO_PRODUCT } })],
    ] as const;
    for (const [feature, call] of calls) {
      const r = await call;
      expect({ feature, status: r.status, body: r.body }).toEqual({
        feature,
        status: 403,
        body: {
          success: false,
          error: `the SANDBOX key of an account on the STARTER plan does not include ${feature}. The account's plan caps what its keys can do: an operator can raise the plan to GROWTH or higher; the account then mints a key of that tier (POST /api/v1/agent-keys).`,
          code: "feature_not_in_tier",
          details: { feature, tier: "SANDBOX", planTier: "STARTER", requiredTier: "GROWTH" },
        },
      });
    }
    // what the plan has, the SANDBOX key has
    expect((await srv.json("/api/v1/agent/search", { method: "POST", headers, body: { query: "mug" } })).status).toBe(200);
  });

  test("over MCP the same key's get_price_history is refused feature_not_in_tier with the plan", async () => {
    const key = (await mint(session[GREENLEAF.email], { tier: "SANDBOX" })).body.data.key;
    const agent = await connect(srv, { headers: { "x-agent-api-key": key } });
    try {
      const e = errorOf(await agent.call("get_price_history", { product_id: DEMO_PRODUCT }));
      expect({ code: e.code, details: e.details }).toEqual({
        code: "feature_not_in_tier",
        details: { feature: "price_history", tier: "SANDBOX", planTier: "STARTER", requiredTier: "GROWTH" },
      });
    } finally {
      await agent.close();
    }
  });

  test("raising the plan to GROWTH gives the live SANDBOX key the GROWTH features at once; an operator's SANDBOX key has no cap", async () => {
    const key = (await mint(session[GREENLEAF.email], { tier: "SANDBOX" })).body.data.key;
    expect((await priceHistory(key)).status).toBe(403);
    const r = await setPlan(GREENLEAF.email, "GROWTH");
    expect(r.body.data).toEqual({ email: GREENLEAF.email, role: "merchant", plan: "GROWTH", previousPlan: "STARTER", keysCapped: 0 });
    expect((await priceHistory(key)).status).toBe(200);
    const ops = (await mint(admin, { tier: "SANDBOX" })).body.data;
    expect(ops.plan).toBeNull();
    expect((await priceHistory(ops.key)).status).toBe(200);
  });
});

describe("R2-1: a merchant account holds at most AGENT_KEYS_MAX_LIVE live keys", () => {
  test("one more is 409 too_many_keys and stores nothing; a revoked key frees a place; operators are not capped", async () => {
    const h = session[MAPLE.email];
    const ids: string[] = [];
    for (let i = 0; i < MAX_LIVE; i++) {
      const r = await mint(h, { tier: i === 0 ? "SANDBOX" : undefined });
      expect(r.status).toBe(201);
      ids.push(r.body.data.id);
    }
    const count = async () => (await srv.db.sql<{ n: number }[]>`SELECT count(*)::int AS n FROM agent_keys k JOIN users u ON u.id = k.user_id WHERE u.email = ${MAPLE.email}`)[0].n;
    const over = await mint(h, { tier: "SANDBOX" });
    expect(over.status).toBe(409);
    expect(over.body).toEqual({
      success: false,
      error: `Your account already holds ${MAX_LIVE} live agent keys, the most allowed (${MAX_LIVE}); revoke one (DELETE /api/v1/agent-keys/{id}) first.`,
      code: "too_many_keys",
      details: { liveKeys: MAX_LIVE, limit: MAX_LIVE },
    });
    expect(await count()).toBe(MAX_LIVE);
    expect((await srv.json(`/api/v1/agent-keys/${ids[1]}`, { method: "DELETE", headers: h })).status).toBe(200);
    expect((await mint(h)).status).toBe(201);
    expect((await mint(h)).status).toBe(409);
    for (let i = 0; i <= MAX_LIVE; i++) expect((await mint(admin)).status).toBe(201);
  });

  test("concurrent mints of one account stop at the cap", async () => {
    const h = session[COZY.email];
    const answers = await Promise.all(Array.from({ length: MAX_LIVE + 3 }, () => mint(h)));
    expect(answers.map((a) => a.status).sort()).toEqual([...Array(MAX_LIVE).fill(201), 409, 409, 409]);
    for (const id of answers.filter((a) => a.status === 201).map((a) => a.body.data.id)) {
      await srv.json(`/api/v1/agent-keys/${id}`, { method: "DELETE", headers: h });
    }
  });
});

describe("R2-2: lowering a plan caps the account's live keys at once; operators see and revoke keys", () => {
  test("ENTERPRISE key → plan STARTER: keysCapped 1, the key now has STARTER's limit and features", async () => {
    const email = COZY.email;
    expect((await setPlan(email, "ENTERPRISE")).status).toBe(200);
    const key = (await mint(session[email], { tier: "ENTERPRISE" })).body.data;
    const sandbox = (await mint(session[email], { tier: "SANDBOX" })).body.data;
    const before = await priceHistory(key.key);
    expect({ status: before.status, limit: before.headers.get("x-ratelimit-limit") }).toEqual({ status: 200, limit: "10000" });
    expect((await priceHistory(sandbox.key)).status).toBe(200);

    const r = await setPlan(email, "STARTER");
    expect(r.status).toBe(200);
    expect(r.body).toEqual({ success: true, data: { email, role: "merchant", plan: "STARTER", previousPlan: "ENTERPRISE", keysCapped: 1 } });

    const after = await priceHistory(key.key);
    expect({ status: after.status, code: after.body.code, limit: after.headers.get("x-ratelimit-limit") }).toEqual({ status: 403, code: "feature_not_in_tier", limit: "100" });
    expect((await priceHistory(sandbox.key)).body).toMatchObject({ code: "feature_not_in_tier", details: { planTier: "STARTER" } });
    const mine = (await srv.json("/api/v1/agent-keys", { headers: session[email] })).body.data;
    expect(mine.find((k: { id: string }) => k.id === key.id)).toMatchObject({ tier: "STARTER", plan: "STARTER" });
    const [row] = await srv.db.sql<{ tier: string; plan: string }[]>`SELECT tier, plan FROM agent_keys WHERE id = ${key.id}`;
    expect(row).toEqual({ tier: "STARTER", plan: "STARTER" });
    // raising it again raises no tier
    expect((await setPlan(email, "ENTERPRISE")).body.data.keysCapped).toBe(0);
    expect((await priceHistory(key.key)).headers.get("x-ratelimit-limit")).toBe("100");
  });

  test("GET plan answers an account's plan; operators only; an unknown e-mail is 404", async () => {
    const r = await srv.json(`/api/v1/admin/users/plan?email=${encodeURIComponent(COZY.email.toUpperCase())}`, { headers: admin });
    expect(r.status).toBe(200);
    expect(r.body).toEqual({ success: true, data: { email: COZY.email, role: "merchant", plan: "ENTERPRISE" } });
    const merchant = await srv.json(`/api/v1/admin/users/plan?email=${encodeURIComponent(COZY.email)}`, { headers: session[COZY.email] });
    expect({ status: merchant.status, code: merchant.body.code }).toEqual({ status: 403, code: "forbidden" });
    const missing = await srv.json("/api/v1/admin/users/plan?email=nobody%40nowhere.example", { headers: admin });
    expect({ status: missing.status, code: missing.body.code }).toEqual({ status: 404, code: "not_found" });
  });

  test("an operator lists an account's keys (no plaintext, no hash) and revokes one: the key is 401 at once", async () => {
    const key = (await mint(session[GREENLEAF.email])).body.data;
    const list = await srv.json(`/api/v1/admin/users/agent-keys?email=${encodeURIComponent(GREENLEAF.email)}`, { headers: admin });
    expect(list.status).toBe(200);
    const listed = list.body.data.find((k: { id: string }) => k.id === key.id);
    expect(Object.keys(listed).sort()).toEqual(["createdAt", "expiresAt", "id", "name", "plan", "prefix", "revokedAt", "scopes", "tier"]);
    expect(JSON.stringify(list.body)).not.toContain(key.key);

    const byMerchant = await srv.json(`/api/v1/admin/agent-keys/${key.id}`, { method: "DELETE", headers: session[MAPLE.email] });
    expect({ status: byMerchant.status, code: byMerchant.body.code }).toEqual({ status: 403, code: "forbidden" });
    const r = await srv.json(`/api/v1/admin/agent-keys/${key.id}`, { method: "DELETE", headers: admin });
    expect(r.status).toBe(200);
    expect(r.body.data).toMatchObject({ id: key.id, revokedAt: expect.any(String) });
    const refused = await srv.json("/api/v1/agent/search", { method: "POST", headers: { "x-agent-api-key": key.key }, body: { query: "mug" } });
    expect({ status: refused.status, reason: refused.body.details?.reason }).toEqual({ status: 401, reason: "revoked" });
    const unknown = await srv.json(`/api/v1/admin/agent-keys/${crypto.randomUUID()}`, { method: "DELETE", headers: admin });
    expect({ status: unknown.status, code: unknown.body.code }).toEqual({ status: 404, code: "not_found" });
  });

  test("the new routes and too_many_keys are in the OpenAPI document", async () => {
    const doc = (await srv.json("/api/v1/openapi.json")).body;
    expect(doc.paths["/api/v1/admin/users/plan"].get.responses["404"]["x-error-codes"]).toEqual(["not_found"]);
    expect(doc.paths["/api/v1/admin/users/agent-keys"].get.responses["403"]["x-error-codes"]).toContain("forbidden");
    expect(doc.paths["/api/v1/admin/agent-keys/{id}"].delete.responses["404"]["x-error-codes"]).toEqual(["not_found"]);
    expect(doc.paths["/api/v1/agent-keys"].post.responses["409"]["x-error-codes"]).toContain("too_many_keys");
  });
});

describe("R2-3: an unknown tier or scope is quoted in the house form, bounded", () => {
  test("tier ULTRA and scope admin name the field, the allowed values and the value", async () => {
    const tier = await mint(admin, { tier: "ULTRA" });
    expect(tier.status).toBe(400);
    expect(tier.body).toEqual({
      success: false,
      error: "Invalid body field 'tier': must be one of 'STARTER', 'GROWTH', 'PRO', 'ENTERPRISE', 'SANDBOX', 'FREE' (got \"ULTRA\")",
      code: "validation_error",
      details: { location: "body", field: "tier", allowed: ["STARTER", "GROWTH", "PRO", "ENTERPRISE", "SANDBOX", "FREE"] },
    });
    const scope = await mint(admin, { scopes: ["search", "agent:read"] });
    expect(scope.status).toBe(400);
    expect(scope.body).toMatchObject({
      code: "validation_error",
      error:
        "Invalid body field 'scopes.1': must be one of 'search', 'compare', 'cart', 'checkout', 'checkout:delegate', 'orders:read', 'merchants:read', 'protocols:discover' (got \"agent:read\"); the agent:* scope names are retired",
      details: { location: "body", field: "scopes.1", scope: "agent:read" },
    });
  });

  test("a 1 MB tier or scope is refused by the schema's maxLength with an answer under 1 KB", async () => {
    const big = "X".repeat(1_000_000);
    for (const body of [{ tier: big }, { scopes: [big] }]) {
      const res = await fetch(`${srv.url}/api/v1/agent-keys`, { method: "POST", headers: { ...admin, "content-type": "application/json" }, body: JSON.stringify({ name: "big", ...body }) });
      const text = await res.text();
      expect(res.status).toBe(400);
      expect(text.length).toBeLessThan(1000);
      expect(JSON.parse(text)).toMatchObject({ code: "validation_error", details: { field: "tier" in body ? "tier" : "scopes.0", maxLength: "tier" in body ? 32 : 64 } });
    }
  });
});

describe("R2-5: an e-mail is unique in any letter case", () => {
  test("a second account whose e-mail differs only in case is refused by the database", async () => {
    const err = await srv.db.sql`INSERT INTO users (email, password_hash, role) VALUES (${GREENLEAF.email.toUpperCase()}, 'x', 'merchant')`.catch((e) => e);
    expect({ code: err?.code, constraint: err?.constraint_name }).toEqual({ code: "23505", constraint: "users_email_lower_key" });
  });
});
