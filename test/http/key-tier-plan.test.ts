/**
 * Who may choose a key's tier (audit A2-F2): a merchant account mints keys up to its plan (STARTER until an
 * operator raises it) and SANDBOX keys; an operator mints any tier and sets plans with PUT /api/v1/admin/users/plan.
 */
import { beforeAll, describe, expect, test } from "bun:test";
import { login, merchantLogin } from "../helpers/agents.ts";
import { useServer } from "../helpers/server.ts";

const STORE = "greenleaf-living";
const OWNER = merchantLogin(STORE);
const PLAN = "/api/v1/admin/users/plan";

const srv = useServer({ seed: true, config: { RATE_LIMITS_ENABLED: false } });
let admin: Record<string, string>;
let owner: Record<string, string>;

beforeAll(async () => {
  admin = { authorization: `Bearer ${await login(srv)}` };
  owner = { authorization: `Bearer ${await login(srv, OWNER)}` };
}, 120_000);

const mint = (headers: Record<string, string>, tier?: string) =>
  srv.json("/api/v1/agent-keys", { method: "POST", headers, body: { name: "plan test", ...(tier === undefined ? {} : { tier }) } });
const setPlan = (headers: Record<string, string>, body: unknown) => srv.json(PLAN, { method: "PUT", headers, body });

describe("a merchant account's keys are capped by its plan", () => {
  test("on the default STARTER plan, ENTERPRISE, PRO and GROWTH are 403 tier_not_in_plan naming both tiers, and no key is stored", async () => {
    const before = await srv.db.sql<{ n: number }[]>`SELECT count(*)::int AS n FROM agent_keys`;
    for (const tier of ["ENTERPRISE", "pro", "Growth"]) {
      const r = await mint(owner, tier);
      expect(r.status).toBe(403);
      expect(r.body).toEqual({
        success: false,
        error: `Your account's plan allows keys up to STARTER, not ${tier.toUpperCase()}; an operator can raise the plan.`,
        code: "tier_not_in_plan",
        details: { requestedTier: tier.toUpperCase(), planTier: "STARTER" },
      });
    }
    expect((await srv.db.sql<{ n: number }[]>`SELECT count(*)::int AS n FROM agent_keys`)[0].n).toBe(before[0].n);
  });

  test("STARTER, its alias FREE, an omitted tier and SANDBOX are minted", async () => {
    for (const [asked, got] of [["STARTER", "STARTER"], ["free", "STARTER"], [undefined, "STARTER"], ["SANDBOX", "SANDBOX"]] as const) {
      const r = await mint(owner, asked);
      expect({ asked, status: r.status, tier: r.body.data?.tier }).toEqual({ asked, status: 201, tier: got });
    }
  });

  test("an unknown tier is still 400 validation_error, before the plan is looked at", async () => {
    const r = await mint(owner, "PLATINUM");
    expect(r.status).toBe(400);
    expect(r.body).toMatchObject({ code: "validation_error", details: { field: "tier" } });
  });

  test("an operator mints any tier", async () => {
    for (const tier of ["ENTERPRISE", "PRO", "GROWTH"]) {
      const r = await mint(admin, tier);
      expect({ status: r.status, tier: r.body.data?.tier }).toEqual({ status: 201, tier });
    }
  });
});

describe("an operator sets a plan", () => {
  test("a merchant cannot set a plan, its own included: 403 forbidden, and the plan stays", async () => {
    const r = await setPlan(owner, { email: OWNER.email, plan: "ENTERPRISE" });
    expect(r.status).toBe(403);
    expect(r.body).toMatchObject({ success: false, code: "forbidden" });
    expect((await srv.db.sql<{ plan: string }[]>`SELECT plan FROM users WHERE email = ${OWNER.email}`)[0].plan).toBe("STARTER");
  });

  test("after PUT plan PRO the merchant mints PRO and GROWTH keys, and ENTERPRISE is 403 naming PRO", async () => {
    const r = await setPlan(admin, { email: OWNER.email.toUpperCase(), plan: "pro" });
    expect(r.status).toBe(200);
    expect(r.body).toEqual({ success: true, data: { email: OWNER.email, role: "merchant", plan: "PRO", previousPlan: "STARTER", keysCapped: 0 } });
    expect((await mint(owner, "PRO")).body.data.tier).toBe("PRO");
    expect((await mint(owner, "GROWTH")).body.data.tier).toBe("GROWTH");
    const above = await mint(owner, "ENTERPRISE");
    expect(above.status).toBe(403);
    expect(above.body).toMatchObject({ code: "tier_not_in_plan", details: { requestedTier: "ENTERPRISE", planTier: "PRO" } });
  });

  test("FREE sets STARTER; SANDBOX and unknown names are 400 naming the plans; an unknown e-mail is 404", async () => {
    const free = await setPlan(admin, { email: OWNER.email, plan: "FREE" });
    expect(free.body.data).toMatchObject({ plan: "STARTER", previousPlan: "PRO" });
    expect((await mint(owner, "GROWTH")).status).toBe(403);
    for (const plan of ["SANDBOX", "GOLD"]) {
      const r = await setPlan(admin, { email: OWNER.email, plan });
      expect(r.status).toBe(400);
      expect(r.body).toEqual({
        success: false,
        error: `Invalid body field 'plan': must be one of 'STARTER', 'GROWTH', 'PRO', 'ENTERPRISE', 'FREE' (got "${plan}")`,
        code: "validation_error",
        details: { location: "body", field: "plan", allowed: ["STARTER", "GROWTH", "PRO", "ENTERPRISE", "FREE"] },
      });
    }
    const missing = await setPlan(admin, { email: "nobody@nowhere.example", plan: "PRO" });
    expect(missing.status).toBe(404);
    expect(missing.body).toMatchObject({ code: "not_found", details: { field: "email" } });
  });

  test("the route is in the OpenAPI document with its codes, and POST /agent-keys lists tier_not_in_plan", async () => {
    const doc = (await srv.json("/api/v1/openapi.json")).body;
    const put = doc.paths["/api/v1/admin/users/plan"].put;
    expect(put.responses["403"]["x-error-codes"]).toContain("forbidden");
    expect(put.responses["404"]["x-error-codes"]).toEqual(["not_found"]);
    expect(doc.paths["/api/v1/agent-keys"].post.responses["403"]["x-error-codes"]).toEqual(["tier_not_in_plan"]);
  });
});
