/**
 * Migration 0092: the partial index orders_agent_key_pending (pending orders by key and creation), which the
 * approval-hold guard's read (actors/cart/hold-guard.ts `holdGuardColumns`, in every payment attempt's risk read) walks
 * instead of every order of the key's last two days. Building it takes a SHARE lock on `orders`, the table every
 * checkout writes: like 0087 and 0089 (review V1-1) it never waits long while checkout writes queue behind it, gives up
 * past the connection's lock_timeout with nothing changed, and takes no lock at all when an operator built the index
 * CONCURRENTLY beforehand. (Migration 0095 replaced the index for the guard and dropped it, so the pay update is HOT
 * again: the guard's plan is asserted in test/actors/migration-0095.test.ts.)
 */
import { expect, test } from "bun:test";
import { applyMigrations, connect, type Sql } from "../../infra/db.ts";
import { createTestDatabase, type TestDatabase } from "../helpers/db.ts";
import { cleanupAfterEach, migrationsBefore } from "../helpers/migrations.ts";

const M0092 = "0092_orders_agent_key_pending.sql";

const cleanup = cleanupAfterEach();

const migrations = (first: string, through = false) => migrationsBefore(first, cleanup, through);

async function databaseBefore0092(): Promise<TestDatabase> {
  const db = await createTestDatabase({ migrate: false, poolSize: 4 });
  cleanup.push(() => db.drop());
  await applyMigrations(db.sql, await migrations(M0092));
  return db;
}

function pool(db: TestDatabase, size = 1): Sql {
  const p = connect(db.url, size, { queryDeadlineMs: 0 });
  cleanup.push(() => p.end({ timeout: 1 }));
  return p;
}

/** A connection in a transaction that holds `orders` as a checkout's write does (ROW EXCLUSIVE), until COMMIT. */
async function checkoutWriteInFlight(db: TestDatabase): Promise<Sql> {
  const tx = (await pool(db).reserve()) as unknown as Sql;
  await tx`BEGIN`;
  await tx`LOCK TABLE orders IN ROW EXCLUSIVE MODE`;
  return tx;
}

const settled = <T>(p: Promise<T>) => p.then((value) => ({ ok: true as const, value }), (err: Error & { code?: string }) => ({ ok: false as const, code: err.code, message: err.message }));
const indexDefinition = async (db: TestDatabase) =>
  (await db.sql<{ def: string; valid: boolean }[]>`SELECT pg_get_indexdef(i.indexrelid) AS def, i.indisvalid AS valid FROM pg_index i WHERE i.indexrelid = to_regclass('orders_agent_key_pending')`)[0];

test("while a checkout write holds orders, 0092 waits a little at a time so other checkout writes go on; past the connection's lock_timeout it fails with lock_not_available, changes nothing, and applies once the write ended", async () => {
  const db = await databaseBefore0092();
  await db.sql.unsafe(`ALTER DATABASE ${db.name} SET lock_timeout = '2s'`);
  const boot = pool(db, 2);
  const long = await checkoutWriteInFlight(db);
  const started = Date.now();
  const migrating = settled(applyMigrations(boot, await migrations(M0092, true)));
  const writer = pool(db);
  let slowest = 0;
  let writes = 0;
  while (Date.now() - started < 1_800) {
    const t0 = Date.now();
    await writer`UPDATE orders SET version = version WHERE id = '00000000-0000-0000-0000-000000000000'`;
    slowest = Math.max(slowest, Date.now() - t0);
    writes++;
  }
  const failed = await migrating;
  expect(failed.ok ? "" : failed.message).toBe(
    `migration ${M0092} failed: could not lock orders within 00:00:02; hint: A long transaction holds orders (pg_stat_activity, pg_locks); start again once it ended, or build orders_agent_key_pending CONCURRENTLY first.`,
  );
  expect(writes).toBeGreaterThan(3);
  expect(slowest).toBeLessThan(1_000);
  expect(await indexDefinition(db)).toBeUndefined();
  await long`COMMIT`;
  expect(await applyMigrations(boot, await migrations(M0092, true))).toEqual([M0092]);
  expect(await indexDefinition(db)).toMatchObject({ valid: true, def: expect.stringContaining("(agent_key_id, created_at) WHERE (status = 'pending'::text)") });
}, 30_000);

test("an index built CONCURRENTLY before 0092 is kept, and 0092 applies without waiting for a checkout write in flight", async () => {
  const db = await databaseBefore0092();
  await db.sql.unsafe(`CREATE INDEX CONCURRENTLY orders_agent_key_pending ON orders (agent_key_id, created_at) WHERE status = 'pending'`);
  const before = await indexDefinition(db);
  const long = await checkoutWriteInFlight(db);
  const applied = await Promise.race([applyMigrations(pool(db, 2), await migrations(M0092, true)), Bun.sleep(5_000).then(() => "still waiting")]);
  expect(applied).toEqual([M0092]);
  expect(await indexDefinition(db)).toEqual(before!);
  await long`COMMIT`;
}, 30_000);
