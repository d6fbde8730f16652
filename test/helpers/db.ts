/**
 * Every test file gets its own fresh database, so files can run in any order and in parallel processes.
 * The server comes from TEST_PG_URL, else the local PostgreSQL at 127.0.0.1:5432 (CI and dev machines here),
 * else an embedded Postgres started once per test process (a fresh machine with nothing installed).
 */
import { mkdtemp } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { applyMigrations, connect, startEmbeddedPostgres, type Sql } from "../../infra/db.ts";

let adminUrl: Promise<string> | undefined;

async function reachable(url: string): Promise<boolean> {
  const sql = connect(url, 1);
  try {
    await Promise.race([sql`SELECT 1`, Bun.sleep(2000).then(() => Promise.reject(new Error("timeout")))]);
    return true;
  } catch {
    return false;
  } finally {
    await sql.end({ timeout: 1 }).catch(() => {});
  }
}

export function serverUrl(): Promise<string> {
  adminUrl ??= (async () => {
    const candidates = [process.env.TEST_PG_URL, "postgres://postgres@127.0.0.1:5432/postgres"].filter(Boolean) as string[];
    for (const url of candidates) if (await reachable(url)) return url;
    const dir = await mkdtemp(join(tmpdir(), "acs-test-pg-"));
    const pg = await startEmbeddedPostgres(join(dir, "pg"));
    process.once("exit", () => void pg.stop());
    return pg.url;
  })();
  return adminUrl;
}

export interface TestDatabase {
  url: string;
  name: string;
  sql: Sql;
  drop(): Promise<void>;
}

/** Creates an empty database (migrated unless `migrate: false`). Call `drop()` in afterAll. */
export async function createTestDatabase(opts: { migrate?: boolean; poolSize?: number } = {}): Promise<TestDatabase> {
  const base = await serverUrl();
  const name = `t_${Date.now().toString(36)}_${Math.random().toString(36).slice(2, 8)}`;
  const admin = connect(base, 1);
  await admin.unsafe(`CREATE DATABASE ${name}`);
  await admin.end();
  const u = new URL(base);
  u.pathname = `/${name}`;
  const url = u.toString();
  const sql = connect(url, opts.poolSize ?? 10);
  if (opts.migrate !== false) await applyMigrations(sql);
  return {
    url,
    name,
    sql,
    async drop() {
      await sql.end({ timeout: 2 }).catch(() => {});
      const a = connect(base, 1);
      await a.unsafe(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`).catch(() => {});
      await a.end();
    },
  };
}
