/**
 * A merchant reads back what it wrote: GET /merchant/stores/{slug}/policies and GET /merchant/stores/{slug}/shipping-zones
 * answer the body their PUT takes (same fields, amounts decimals as the PUT takes them), so an integration can GET,
 * change one field and PUT the answer back. Before (helper D, session 22) GET on both paths was 405 and the stored
 * values were readable only through agent endpoints, which show the zones' promises and the refund rule's window, not
 * what the merchant declared. Same access as the PUT: the owner or an operator; anyone else, or no such store, 404
 * store_not_found; no token 401.
 */
import { beforeAll, describe, expect, test } from "bun:test";
import { Value } from "@sinclair/typebox/value";
import { login, merchantLogin } from "../helpers/agents.ts";
import { useServer } from "../helpers/server.ts";
import { OPERATIONS } from "../../gateway/openapi/operations.ts";

const srv = useServer({ seed: true, config: { RATE_LIMITS_ENABLED: false } });
const SLUG = "greenleaf-living";
const FRESH = "read-back-fresh"; // a store inserted below, never given policies or zones
let owner: Record<string, string>;
let other: Record<string, string>;
let admin: Record<string, string>;

beforeAll(async () => {
  owner = { authorization: `Bearer ${await login(srv, merchantLogin(SLUG))}` };
  other = { authorization: `Bearer ${await login(srv, merchantLogin("maple-pine-home"))}` };
  admin = { authorization: `Bearer ${await login(srv)}` };
  // as a store is first written: the row only, with the columns' defaults (no policies, no negotiation rules, no zones)
  await srv.db.sql`INSERT INTO stores (slug, name, country, owner_user_id)
    SELECT ${FRESH}, 'Read Back Fresh', 'US', id FROM users WHERE email = ${merchantLogin(SLUG).email}`;
}, 120_000);

const path = (slug: string, what: "policies" | "shipping-zones") => `/api/v1/merchant/stores/${slug}/${what}`;
const get = (slug: string, what: "policies" | "shipping-zones", headers: Record<string, string> = owner) => srv.json(path(slug, what), { headers });
const put = (slug: string, what: "policies" | "shipping-zones", body: unknown, headers: Record<string, string> = owner) =>
  srv.json(path(slug, what), { method: "PUT", headers, body });
const zoneIds = async (slug: string) => (await srv.db.sql<{ id: string }[]>`SELECT id FROM shipping_zones WHERE store_slug = ${slug} ORDER BY id`).map((r) => r.id);
const policyVersion = async (slug: string) => (await srv.db.sql<{ policy_version: number }[]>`SELECT policy_version FROM stores WHERE slug = ${slug}`)[0]!.policy_version;

const POLICIES = {
  acceptsReturns: true,
  returnWindowDays: 21,
  freeShippingThreshold: 49.99,
  restockingFeePercent: 12.5,
  shippingEstimateDays: "2-6",
  supportResponseTimeSla: "8h",
  negotiation: { enabled: true, floorPercent: 82.5, autoAcceptPercent: 96, maxRounds: 4, excludedCategories: ["Garden, Outdoor"] },
};
const ZONES = {
  zones: [
    { name: "Contiguous US", countries: ["US"], postalPrefixes: [], currency: "USD", base: 6.49, perItem: 1.25, freeOver: 75.5, minDays: 3, maxDays: 5 },
    { name: "Japan", countries: ["JP"], postalPrefixes: ["100", "150"], currency: "JPY", base: 1200, perItem: 0, freeOver: null, minDays: 6, maxDays: 12 },
  ],
};

describe("GET answers what PUT wrote", () => {
  test("the policies PUT wrote (threshold a decimal, negotiation rules included) come back field for field", async () => {
    expect((await put(SLUG, "policies", POLICIES)).status).toBe(200);
    const r = await get(SLUG, "policies");
    expect(r.status).toBe(200);
    expect(r.body).toEqual({ success: true, data: POLICIES });
  });

  test("the zones PUT wrote come back by name, amounts decimals in each zone's currency; optional fields given as they apply", async () => {
    // written without perItem, postalPrefixes and freeOver: read back with 0, [] and null, which PUT takes as the same
    const lean = { name: "Alaska and Hawaii", countries: ["US"], currency: "USD", base: 19, minDays: 5, maxDays: 9 };
    expect((await put(SLUG, "shipping-zones", { zones: [...ZONES.zones, lean] })).status).toBe(200);
    const r = await get(SLUG, "shipping-zones");
    expect(r.status).toBe(200);
    expect(r.body).toEqual({
      success: true,
      data: { zones: [{ ...lean, postalPrefixes: [], perItem: 0, freeOver: null }, ...ZONES.zones] },
    });
  });

  test("both answers fit their documented schema (gateway/openapi/operations.ts)", async () => {
    for (const what of ["policies", "shipping-zones"] as const) {
      const r = await get(SLUG, what);
      const doc = OPERATIONS[`GET /api/v1/merchant/stores/{slug}/${what}`]!.success.find((s) => s.status === 200)!;
      expect([...Value.Errors(doc.schema!, r.body)].map((e) => `${e.path} ${e.message}`)).toEqual([]);
    }
  });
});

describe("GET then PUT of the GET's own answer changes nothing", () => {
  test("for every seeded store (as the operator): PUT takes both answers, the policy version and the zones' rows stay, and GET answers the same", async () => {
    const slugs = (await srv.db.sql<{ slug: string }[]>`SELECT slug FROM stores WHERE slug <> ${FRESH} ORDER BY slug`).map((r) => r.slug);
    expect(slugs.length).toBeGreaterThan(5);
    for (const slug of slugs) {
      const policies = await get(slug, "policies", admin);
      const zones = await get(slug, "shipping-zones", admin);
      expect({ slug, p: policies.status, z: zones.status }).toEqual({ slug, p: 200, z: 200 });
      const version = await policyVersion(slug);
      const ids = await zoneIds(slug);
      const p = await put(slug, "policies", policies.body.data, admin);
      const z = await put(slug, "shipping-zones", zones.body.data, admin);
      expect({ slug, p: p.status, pCode: p.body.code, z: z.status, zCode: z.body.code }).toEqual({ slug, p: 200, pCode: undefined, z: 200, zCode: undefined });
      expect({ slug, version: await policyVersion(slug), ids: await zoneIds(slug) }).toEqual({ slug, version, ids });
      expect((await get(slug, "policies", admin)).body).toEqual(policies.body);
      expect((await get(slug, "shipping-zones", admin)).body).toEqual(zones.body);
    }
  }, 120_000);

  test("a change of one field of the answer, sent back, changes that field only", async () => {
    const before = (await get(SLUG, "policies")).body.data;
    expect((await put(SLUG, "policies", { ...before, restockingFeePercent: 5 })).status).toBe(200);
    expect((await get(SLUG, "policies")).body.data).toEqual({ ...before, restockingFeePercent: 5 });
    const zones = (await get(SLUG, "shipping-zones")).body.data.zones;
    const changed = zones.map((z: { name: string }) => (z.name === "Japan" ? { ...z, base: 1500 } : z));
    expect((await put(SLUG, "shipping-zones", { zones: changed })).status).toBe(200);
    expect((await get(SLUG, "shipping-zones")).body.data.zones).toEqual(changed);
  });
});

describe("a store never given policies or zones", () => {
  test("answers the defaults: policies {acceptsReturns: false, negotiation: null}, zones [] (its carts ship free); PUT takes both back", async () => {
    const p = await get(FRESH, "policies");
    expect(p.status).toBe(200);
    expect(p.body).toEqual({ success: true, data: { acceptsReturns: false, negotiation: null } });
    const z = await get(FRESH, "shipping-zones");
    expect(z.status).toBe(200);
    expect(z.body).toEqual({ success: true, data: { zones: [] } });
    const version = await policyVersion(FRESH);
    expect((await put(FRESH, "policies", p.body.data)).status).toBe(200);
    expect((await put(FRESH, "shipping-zones", z.body.data)).status).toBe(200);
    expect(await policyVersion(FRESH)).toBe(version);
    expect((await get(FRESH, "policies")).body).toEqual(p.body);
    expect((await get(FRESH, "shipping-zones")).body).toEqual(z.body);
  });
});

describe("a row PUT would refuse now", () => {
  test("a return window stored (before PUT refused it) at a store that takes no returns reads as 0, the window refunds apply, and PUT takes it back", async () => {
    await srv.db.sql`UPDATE stores SET policies = ${srv.db.sql.json({ acceptsReturns: false, returnWindowDays: 30 })} WHERE slug = ${FRESH}`;
    const p = await get(FRESH, "policies");
    expect(p.body).toEqual({ success: true, data: { acceptsReturns: false, returnWindowDays: 0, negotiation: null } });
    expect((await put(FRESH, "policies", p.body.data)).status).toBe(200);
    expect((await get(FRESH, "policies")).body).toEqual(p.body);
  });
});

describe("access is the PUT's", () => {
  test("another merchant, or a store that does not exist, is 404 store_not_found; no token is 401; a malformed slug is 400 on the slug", async () => {
    for (const what of ["policies", "shipping-zones"] as const) {
      const mine = await get(SLUG, what, other);
      expect({ what, status: mine.status, code: mine.body.code }).toEqual({ what, status: 404, code: "store_not_found" });
      const none = await get("no-such-store-here", what);
      expect({ what, status: none.status, code: none.body.code }).toEqual({ what, status: 404, code: "store_not_found" });
      const anon = await get(SLUG, what, {});
      expect({ what, status: anon.status, code: anon.body.code }).toEqual({ what, status: 401, code: "unauthorized" });
      const bad = await get("Not-A-Slug", what);
      expect({ what, status: bad.status, code: bad.body.code, field: bad.body.details?.field }).toEqual({ what, status: 400, code: "validation_error", field: "slug" });
    }
  });

  test("the owner and an operator read the same answer", async () => {
    for (const what of ["policies", "shipping-zones"] as const) {
      const [mine, operator] = [await get(SLUG, what), await get(SLUG, what, admin)];
      expect({ what, owner: mine.status, operator: operator.status }).toEqual({ what, owner: 200, operator: 200 });
      expect(operator.body).toEqual(mine.body);
    }
  });
});
