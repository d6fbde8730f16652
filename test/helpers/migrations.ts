/** For the migration tests (test/actors/migration-*.test.ts): part of the service's migrations, and per-test clean-ups. */
import { afterEach } from "bun:test";
import { mkdtemp, readdir, rm, symlink } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { applyMigrations, connect, type Sql } from "../../infra/db.ts";
import { createTestDatabase, type TestDatabase } from "./db.ts";

const MIGRATIONS = resolve(import.meta.dir, "../../infra/migrations");

/** A list of clean-ups run after each test of the calling file, the last pushed first; a failing one is ignored. */
export function cleanupAfterEach(): (() => Promise<unknown>)[] {
  const cleanup: (() => Promise<unknown>)[] = [];
  afterEach(async () => {
    for (const c of cleanup.splice(0).reverse()) await c().catch(() => {});
  });
  return cleanup;
}

/**
 * The migrations whose file names sort before `first` (with `through`, `first` too), as a directory of their own for
 * `applyMigrations`; its removal goes on `cleanup`.
 */
export async function migrationsBefore(first: string, cleanup: (() => Promise<unknown>)[], through = false): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), "acs-mig-"));
  cleanup.push(() => rm(dir, { recursive: true, force: true }));
  for (const f of await readdir(MIGRATIONS)) if (/^\d{4}_.+\.sql$/.test(f) && (f < first || (through && f === first))) await symlink(join(MIGRATIONS, f), join(dir, f));
  return dir;
}

/**
 * What most migration tests set up (test/actors/migration-00NN.test.ts): a file's clean-ups, a database migrated up to
 * (not including) a given migration, and pools without the per-query deadline, each ended after the test.
 */
export function migrationKit() {
  const cleanup = cleanupAfterEach();
  return {
    cleanup,
    /** The migrations before `first` (with `through`, `first` too), as a directory for `applyMigrations`. */
    migrations: (first: string, through = false) => migrationsBefore(first, cleanup, through),
    /** A fresh database with every migration before `first` applied; dropped after the test. */
    async databaseBefore(first: string, poolSize = 4): Promise<TestDatabase> {
      const db = await createTestDatabase({ migrate: false, poolSize });
      cleanup.push(() => db.drop());
      await applyMigrations(db.sql, await migrationsBefore(first, cleanup));
      return db;
    },
    /** A pool of `size` connections to `db` without the per-query deadline (a migration may wait on purpose). */
    pool(db: TestDatabase, size = 1): Sql {
      const p = connect(db.url, size, { queryDeadlineMs: 0 });
      cleanup.push(() => p.end({ timeout: 1 }));
      return p;
    },
  };
}

/** A promise's outcome as data: its value, or the error's SQLSTATE and message. */
export const settled = <T>(p: Promise<T>) =>
  p.then(
    (value) => ({ ok: true as const, value }),
    (err: Error & { code?: string }) => ({ ok: false as const, code: err.code, message: err.message }),
  );

/** An index's definition and validity, or undefined when there is no such index. */
export const indexDefinition = async (db: TestDatabase, name: string) =>
  (await db.sql<{ def: string; valid: boolean }[]>`SELECT pg_get_indexdef(i.indexrelid) AS def, i.indisvalid AS valid FROM pg_index i WHERE i.indexrelid = to_regclass(${name})`)[0];
