/**
 * Throw-away databases for tests of the seed: a fresh `t_<random>` database on the server named by
 * TEST_DATABASE_ADMIN_URL (default: local trust-auth Postgres), with every migration file applied in filename
 * order (from SEED_TEST_MIGRATIONS_DIR when set). A failed migration drops the database again. Not used at run time.
 */
import postgres from "postgres";
import { readdir, readFile } from "node:fs/promises";
import { join, resolve } from "node:path";

const MIGRATIONS_DIR = resolve(import.meta.dir, "..", "migrations");

export interface ScratchDatabase {
  name: string;
  url: string;
  sql: postgres.Sql<{}>;
  /** Closes the client and drops the database. */
  drop(): Promise<void>;
}

export async function applyMigrationFiles(sql: postgres.Sql<{}>, dir = MIGRATIONS_DIR): Promise<string[]> {
  const files = (await readdir(dir)).filter((f) => /^\d{4}_.+\.sql$/.test(f)).sort();
  for (const f of files) await sql.unsafe(await readFile(join(dir, f), "utf8"));
  return files;
}

export async function createScratchDatabase(
  adminUrl = process.env.TEST_DATABASE_ADMIN_URL ?? "postgres://postgres@127.0.0.1:5432/postgres",
  max = 8,
  migrationsDir = process.env.SEED_TEST_MIGRATIONS_DIR ?? MIGRATIONS_DIR,
): Promise<ScratchDatabase> {
  const name = `t_${crypto.randomUUID().replace(/-/g, "").slice(0, 16)}`;
  const admin = postgres(adminUrl, { max: 1, onnotice: () => {} });
  await admin.unsafe(`CREATE DATABASE ${name}`);
  await admin.end();
  const url = new URL(adminUrl);
  url.pathname = `/${name}`;
  const sql = postgres(url.toString(), { max, onnotice: () => {} });
  try {
    await applyMigrationFiles(sql, migrationsDir);
  } catch (err) {
    await sql.end({ timeout: 5 });
    const a = postgres(adminUrl, { max: 1, onnotice: () => {} });
    await a.unsafe(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
    await a.end();
    throw err;
  }
  return {
    name,
    url: url.toString(),
    sql,
    async drop() {
      await sql.end({ timeout: 5 });
      const a = postgres(adminUrl, { max: 1, onnotice: () => {} });
      await a.unsafe(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
      await a.end();
    },
  };
}
