/**
 * Audit A2, trust (MED-4, MED-6), through HTTP against the real service.
 *
 * MED-4: trust GMV added the minor units of every currency, so one merchant-imported order of 61 IDR (6,100
 * "minor units") lifted greenleaf-living (USD) over the agent_verified GMV floor (1,000,000 cents), from cap 92 to
 * cap 100. Only orders in the store's own currency count towards GMV.
 *
 * MED-6: after a restart with TRUST_SCORE_PUBLIC_V41_ENABLED changed, the public signed score (the engines re-run
 * over the stored facts with this process's flags) and the number search, the directory and the checkout gate read
 * (stores.trust_score) disagreed until the 6-hourly refresh. The boot now recomputes the stores whose published
 * number the engines in force would not publish.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { Running } from "../../gateway/boot.ts";
import type { Config } from "../../infra/config.ts";
import { ALL_SCOPES, createKey, login, merchantLogin, type TestKey } from "../helpers/agents.ts";
import { createTestDatabase, type TestDatabase } from "../helpers/db.ts";
import { bootService, serverHandle, type TestServer } from "../helpers/server.ts";

const SECRET_KEY = "c".repeat(64);
const GREENLEAF = "greenleaf-living"; // USD, 26 agent orders, GMV just under the agent_verified floor
const HARBOUR = "harbour-lane-uk"; // v4.1 0.66 (below the agent threshold), v2 0.72 (above it)

let db: TestDatabase;
let dataDir: string;
let running: Running | undefined;
let srv: TestServer;
let admin = "";

async function start(config: Partial<Config>): Promise<void> {
  running = await bootService({ databaseUrl: db.url, dataDir, config: { SECRET_KEY, RATE_LIMITS_ENABLED: false, ...config } });
  srv = serverHandle(running, db);
  admin = await login(srv);
}

beforeAll(async () => {
  db = await createTestDatabase({ seeded: true }); // migrated and seeded: a copy of a template (test/helpers/db.ts)
  dataDir = await mkdtemp(join(tmpdir(), "acs-test-data-"));
  await start({ SEED_DEMO: true });
}, 120_000);
afterAll(async () => {
  await running?.stop();
  await db?.drop();
  await rm(dataDir, { recursive: true, force: true });
});

const auth = (token: string) => ({ authorization: `Bearer ${token}` });
async function recompute(slug: string): Promise<void> {
  const r = await srv.json("/api/v1/admin/trust/recompute", { method: "POST", headers: auth(admin), body: { slug } });
  expect(r.status).toBe(200);
}
async function publicScore(slug: string) {
  const r = await srv.json(`/api/v1/stores/${slug}/trust-score`);
  expect(r.status).toBe(200);
  return r.body.data as { score_0to1: number; tier: string; engines: { overall: string }; operational_status: string; agent_checkout_allowed: boolean };
}

describe("trust GMV (MED-4)", () => {
  test("an imported order in another currency than the store's does not count towards GMV or lift the tier", async () => {
    await recompute(GREENLEAF);
    const before = await publicScore(GREENLEAF);
    expect(before.tier).toBe("agent_verified_thin");
    const [{ gmv: gmvBefore }] = await db.sql<{ gmv: string }[]>`SELECT (facts->'orders'->>'gmvMinor') AS gmv FROM trust_current WHERE store_slug = ${GREENLEAF}`;

    const owner = await login(srv, merchantLogin(GREENLEAF));
    const order = {
      externalId: `idr-${Date.now()}`,
      buyer: "someone@example.com",
      status: "delivered",
      currency: "IDR",
      items: [{ title: "sticker", quantity: 1, unitPrice: 61 }],
      fulfilledOnTime: true,
    };
    const r = await srv.json(`/api/v1/merchant/stores/${GREENLEAF}/orders`, { method: "POST", headers: auth(owner), body: { orders: [order] } });
    expect(r.status).toBe(201);
    expect(r.body.data.accepted).toBe(1);

    await recompute(GREENLEAF);
    const after = await publicScore(GREENLEAF);
    const [{ gmv: gmvAfter, human }] = await db.sql<{ gmv: string; human: string }[]>`
      SELECT (facts->'orders'->>'gmvMinor') AS gmv, (facts->'orders'->>'human') AS human FROM trust_current WHERE store_slug = ${GREENLEAF}`;
    expect(Number(gmvAfter)).toBe(Number(gmvBefore));
    expect(Number(gmvAfter)).toBeLessThan(1_000_000);
    expect(Number(human)).toBeGreaterThan(0); // the order itself still counts as an order
    expect(after.tier).toBe("agent_verified_thin");
  });
});

describe("a restart with another trust engine configuration (MED-6)", () => {
  let key: TestKey;

  test("publishes one number from the boot: the public score, the directory and the stored number the checkout gate reads", async () => {
    const v41 = await publicScore(HARBOUR);
    expect(v41.engines.overall).toBe("v41");
    const historyBefore = await db.sql`SELECT 1 FROM trust_score_history WHERE store_slug = ${HARBOUR}`;

    await running!.stop();
    running = undefined;
    await start({ SEED_DEMO: false, TRUST_SCORE_PUBLIC_V41_ENABLED: false });
    key = await createKey(srv, { scopes: ALL_SCOPES });

    const pub = await publicScore(HARBOUR);
    expect(pub.engines.overall).toBe("v2");
    const [row] = await db.sql<{ trust_score: string; operational_status: string }[]>`
      SELECT trust_score, operational_status FROM stores WHERE slug = ${HARBOUR}`;
    expect(Number(row.trust_score)).toBe(pub.score_0to1);
    expect(row.operational_status).toBe(pub.operational_status);
    const dir = await srv.json(`/api/v1/agent/merchants/${HARBOUR}`, { headers: key.headers });
    expect(dir.status).toBe(200);
    expect(dir.body.data.trustScore).toBe(pub.score_0to1);
    // The boot recomputed it (trigger boot, engine v2) instead of leaving the old engine's number for 6 h.
    const history = await db.sql<{ trigger: string; engine: string }[]>`
      SELECT trigger, engine FROM trust_score_history WHERE store_slug = ${HARBOUR} ORDER BY computed_at DESC, id DESC`;
    expect(history.length).toBe(historyBefore.length + 1);
    expect({ ...history[0] }).toEqual({ trigger: "boot", engine: "v2" });
  });

  test("every store's published status is the one its public trust score shows", async () => {
    const rows = await db.sql<{ slug: string; trust_score: string; operational_status: string }[]>`
      SELECT slug, trust_score, operational_status FROM stores ORDER BY slug`;
    for (const r of rows) {
      const pub = await publicScore(r.slug);
      expect({ slug: r.slug, score: Number(r.trust_score), status: r.operational_status }).toEqual({
        slug: r.slug,
        score: pub.score_0to1,
        status: pub.operational_status,
      });
    }
  });

  test("a second boot with the same configuration recomputes nothing", async () => {
    const [{ n: before }] = await db.sql<{ n: string }[]>`SELECT count(*) AS n FROM trust_score_history`;
    await running!.stop();
    running = undefined;
    await start({ SEED_DEMO: false, TRUST_SCORE_PUBLIC_V41_ENABLED: false });
    const [{ n: after }] = await db.sql<{ n: string }[]>`SELECT count(*) AS n FROM trust_score_history`;
    expect(after).toBe(before);
  });
});
