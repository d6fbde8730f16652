/**
 * Review R3-1: the boot scores the stores that have no computed score yet (trust trigger `boot`). That scoring must
 * never keep the service from coming up: before the fix an error in it threw out of the boot hooks, so `start` and
 * `actors` never listened (a crash loop under a supervisor). The failure is injected in the database: a trigger
 * refuses the trust_current row of one store, so the boot's scoring turn fails.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { Running } from "../../gateway/boot.ts";
import { seedDemo } from "../../infra/seed/demo.ts";
import { createTestDatabase, type TestDatabase } from "../helpers/db.ts";
import { bootService } from "../helpers/server.ts";

const COZY = "cozy-paws-supply";
const FRESH = "fresh-start-studio"; // seeded with no score (null)

let db: TestDatabase;
let dataDir: string;
let running: Running | undefined;
let bootError: unknown;
let seededCozy: string | null;

beforeAll(async () => {
  db = await createTestDatabase();
  dataDir = await mkdtemp(join(tmpdir(), "acs-test-data-"));
  await seedDemo(db.sql);
  [{ trust_score: seededCozy }] = await db.sql<{ trust_score: string | null }[]>`SELECT trust_score FROM stores WHERE slug = ${COZY}`;
  await db.sql.unsafe(`
    CREATE FUNCTION refuse_fresh_trust() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN RAISE EXCEPTION 'injected: scoring % fails', NEW.store_slug; END $$;
    CREATE TRIGGER refuse_fresh_trust BEFORE INSERT ON trust_current
      FOR EACH ROW WHEN (NEW.store_slug = '${FRESH}') EXECUTE FUNCTION refuse_fresh_trust();`);
  try {
    running = await bootService({ databaseUrl: db.url, dataDir, config: { SEED_DEMO: false, RATE_LIMITS_ENABLED: false, LOG_LEVEL: "silent" } });
  } catch (err) {
    bootError = err;
  }
}, 120_000);
afterAll(async () => {
  await running?.stop();
  await db?.drop();
  await rm(dataDir, { recursive: true, force: true });
});

describe("a boot whose trust scoring of unscored stores fails", () => {
  test("still comes up and serves requests", async () => {
    expect(bootError).toBeUndefined();
    const res = await fetch(`${running!.url}/api/v1/health`);
    expect(res.status).toBe(200);
  });

  test("leaves the stores with their seeded or absent score, as before boot scoring existed", async () => {
    const [n] = await db.sql<{ n: string }[]>`SELECT count(*) AS n FROM trust_current`;
    expect(Number(n.n)).toBe(0); // the batch's turn rolled back as a whole
    const rows = await db.sql<{ slug: string; trust_score: string | null }[]>`
      SELECT slug, trust_score FROM stores WHERE slug IN (${COZY}, ${FRESH}) ORDER BY slug`;
    expect(rows.map((r) => ({ ...r }))).toEqual([
      { slug: COZY, trust_score: seededCozy },
      { slug: FRESH, trust_score: null },
    ]);
  });

  test("a store is still scored on its first read once the cause is gone", async () => {
    await db.sql`DROP TRIGGER refuse_fresh_trust ON trust_current`;
    const res = await fetch(`${running!.url}/api/v1/stores/${FRESH}/trust-score`);
    expect(res.status).toBe(200);
    const body = (await res.json()) as { data: { score_0to1: number } };
    expect(typeof body.data.score_0to1).toBe("number");
    const history = await db.sql<{ trigger: string }[]>`SELECT trigger FROM trust_score_history WHERE store_slug = ${FRESH}`;
    expect(history.map((h) => h.trigger)).toEqual(["on_demand"]);
  });
});
