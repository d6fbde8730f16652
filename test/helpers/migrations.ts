/** For the migration tests (test/actors/migration-*.test.ts): part of the service's migrations, and per-test clean-ups. */
import { afterEach } from "bun:test";
import { mkdtemp, readdir, rm, symlink } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";

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
