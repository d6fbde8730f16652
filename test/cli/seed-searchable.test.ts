/**
 * Products the synthetic seed adds while the service runs are searchable after the service's next search catch-up,
 * with no restart and no reindex (audit AX F3): the seed sends no catalog.changed event, but its inserts get a
 * change_xid from the products trigger (migration 0076), which the catch-up follows. The CLI and the README said a
 * restart or a reindex was needed ("their timestamps are in the past"), true only before the horizon was a
 * transaction id.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { connect, startEmbeddedPostgres } from "../../infra/db.ts";
import { getIndexer } from "../../search/indexer.ts";
import { ALL_SCOPES, createKey, type TestKey } from "../helpers/agents.ts";
import { startServer, type TestServer } from "../helpers/server.ts";

const root = resolve(import.meta.dir, "../..");
let srv: TestServer;
let key: TestKey;
const cleanups: (() => Promise<void> | void)[] = [];

beforeAll(async () => {
  srv = await startServer({ seed: true, config: { RATE_LIMITS_ENABLED: false } });
  key = await createKey(srv, { scopes: ALL_SCOPES, tier: "ENTERPRISE" });
}, 60_000);
afterAll(async () => {
  for (const c of cleanups.reverse()) await c();
  await srv?.stop();
});

/** The seed CLI with only these variables: no DATABASE_URL from the test runner's environment. */
function seed(args: string[], env: Record<string, string> = {}) {
  const r = Bun.spawnSync(["bun", "infra/seed/cli.ts", ...args], {
    cwd: root,
    env: { PATH: process.env.PATH ?? "", HOME: process.env.HOME ?? "/tmp", LOG_LEVEL: "warn", ...env },
    stdout: "pipe",
    stderr: "pipe",
  });
  return { code: r.exitCode, err: r.stderr.toString() };
}

async function searchIds(query: string): Promise<string[]> {
  const r = await srv.json("/api/v1/agent/search", { method: "POST", headers: key.headers, body: { query, filters: { inStock: false } } });
  expect(r.status).toBe(200);
  return (r.body.data.products as { id: string }[]).map((p) => p.id);
}

describe("products seeded while the service runs", () => {
  test("are found by the service's next search catch-up, without a restart or a reindex", async () => {
    const r = seed(["--database-url", srv.db.url, "--products", "5", "--merchants", "1"]);
    expect(r.code).toBe(0);
    const [row] = await srv.db.sql<{ id: string; title: string }[]>`SELECT id, title FROM products WHERE store_slug LIKE 'synth-%' ORDER BY external_id LIMIT 1`;
    expect(await searchIds(row!.title)).not.toContain(row!.id); // no event: not yet
    await getIndexer(srv.running.services)!.catchUp();
    expect(await searchIds(row!.title)).toContain(row!.id);
  }, 60_000);

  test("the CLI seeding the running embedded Postgres says the catch-up finds them within 30 s, or a reindex at once", async () => {
    const dataDir = mkdtempSync(join(tmpdir(), "acs-seed-running-"));
    cleanups.push(() => rmSync(dataDir, { recursive: true, force: true }));
    expect(seed(["--products", "5", "--merchants", "1"], { DATA_DIR: dataDir }).code).toBe(0);
    // as `bun run start` would: the embedded Postgres of that directory, running
    const pg = await startEmbeddedPostgres(join(dataDir, "pg"));
    const sql = connect(pg.url, 1);
    cleanups.push(async () => {
      await sql.end({ timeout: 2 });
      await pg.stop();
    });
    const r = seed(["--data-dir", dataDir, "--products", "5", "--merchants", "1", "--seed", "7"]);
    expect(r.code).toBe(0);
    expect(r.err).toContain("seed: the running service searches these within 30 s (its search catch-up), or at once after POST /api/v1/admin/search/reindex (operator)\n");
  }, 120_000);
});
