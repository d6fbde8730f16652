/**
 * Migration 0089 (the cart retention index on `actor_state`, infra/retention.ts DELETE_STATEMENTS.carts) takes a SHARE
 * lock on the table every actor writes: like 0087 (review V1-1) it never waits long while actor writes queue behind
 * it, gives up past the connection's lock_timeout with nothing changed, and takes no lock at all when an operator
 * built the index CONCURRENTLY beforehand. Each test builds its own database at 0088.
 */
import { expect, test } from "bun:test";
import { applyMigrations, connect, type Sql } from "../../infra/db.ts";
import { createTestDatabase, type TestDatabase } from "../helpers/db.ts";
import { cleanupAfterEach, migrationsBefore } from "../helpers/migrations.ts";

const M0089 = "0089_retention_cart_expiry.sql";
const CART = "0b6f0c1e-8d0e-4c57-9d1a-3f2b1c0a9e11";

const cleanup = cleanupAfterEach();

/** The migrations before `first` (a file name) or through it (`through`), as their own directory. */
const migrations = (first: string, through = false) => migrationsBefore(first, cleanup, through);

/** A database migrated through 0088, holding one open cart. */
async function databaseBefore0089(): Promise<TestDatabase> {
  const db = await createTestDatabase({ migrate: false, poolSize: 4 });
  cleanup.push(() => db.drop());
  await applyMigrations(db.sql, await migrations(M0089));
  await db.sql`INSERT INTO actor_state (kind, id, version, state) VALUES ('cart', ${CART}, 1, ${{ cart: { status: "OPEN", expiresAt: 1_700_000_000_000 } } as never}::jsonb)`;
  return db;
}

/** A pool of its own, with the database's settings (a start-up's). */
function pool(db: TestDatabase, size = 1): Sql {
  const p = connect(db.url, size, { queryDeadlineMs: 0 });
  cleanup.push(() => p.end({ timeout: 1 }));
  return p;
}

/** A connection in a transaction that wrote the cart, as an actor turn in flight holds it. */
async function actorWriteInFlight(db: TestDatabase): Promise<Sql> {
  const tx = (await pool(db).reserve()) as unknown as Sql;
  await tx`BEGIN`;
  await tx`UPDATE actor_state SET version = version + 1 WHERE kind = 'cart' AND id = ${CART}`;
  return tx;
}

const settled = <T>(p: Promise<T>) => p.then((value) => ({ ok: true as const, value }), (err: Error & { code?: string }) => ({ ok: false as const, code: err.code, message: err.message }));
const indexDefinition = async (db: TestDatabase) =>
  (await db.sql<{ def: string; valid: boolean }[]>`SELECT pg_get_indexdef(i.indexrelid) AS def, i.indisvalid AS valid FROM pg_index i WHERE i.indexrelid = to_regclass('actor_state_cart_expiry')`)[0];

test("while an actor write holds actor_state, 0089 waits a little at a time so other actor writes go on; past the connection's lock_timeout it fails with lock_not_available, changes nothing, and applies once the write ended", async () => {
  const db = await databaseBefore0089();
  await db.sql.unsafe(`ALTER DATABASE ${db.name} SET lock_timeout = '2s'`);
  const boot = pool(db, 2);
  const long = await actorWriteInFlight(db);
  const started = Date.now();
  const migrating = settled(applyMigrations(boot, await migrations(M0089, true)));
  // other actors' writes meanwhile: queued behind the migration's waiting lock for a moment at most each time
  const writer = pool(db);
  let slowest = 0;
  let writes = 0;
  while (Date.now() - started < 1_800) {
    const t0 = Date.now();
    await writer`UPDATE actor_state SET version = version WHERE kind = 'cart' AND id <> ${CART}`;
    slowest = Math.max(slowest, Date.now() - t0);
    writes++;
  }
  const failed = await migrating;
  expect(Date.now() - started).toBeLessThan(6_000);
  expect(failed.ok ? "" : failed.message).toBe(
    `migration ${M0089} failed: could not lock actor_state within 00:00:02; hint: A long transaction holds actor_state (pg_stat_activity, pg_locks); start again once it ended, or build actor_state_cart_expiry CONCURRENTLY first.`,
  );
  expect(writes).toBeGreaterThan(3);
  expect(slowest).toBeLessThan(1_000);
  expect(await indexDefinition(db)).toBeUndefined();
  await long`COMMIT`;
  expect(await applyMigrations(boot, await migrations(M0089, true))).toEqual([M0089]);
  expect(await indexDefinition(db)).toMatchObject({ valid: true });
}, 30_000);

test("an index built CONCURRENTLY before 0089 is kept, and 0089 applies without waiting for an actor write in flight", async () => {
  const db = await databaseBefore0089();
  await db.sql.unsafe(`CREATE INDEX CONCURRENTLY actor_state_cart_expiry ON actor_state ((state->'cart'->'expiresAt'), id)
    WHERE kind = 'cart' AND jsonb_typeof(state->'cart'->'expiresAt') = 'number' AND state->'cart'->>'status' IN ('OPEN', 'EXPIRED', 'ABANDONED', 'REPLACED')`);
  const before = await indexDefinition(db);
  const long = await actorWriteInFlight(db);
  const applied = await Promise.race([applyMigrations(pool(db, 2), await migrations(M0089, true)), Bun.sleep(5_000).then(() => "still waiting")]);
  expect(applied).toEqual([M0089]);
  expect(await indexDefinition(db)).toEqual(before!);
  await long`COMMIT`;
}, 30_000);
