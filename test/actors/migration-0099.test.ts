/**
 * Migration 0099: a trigger on webhook_events writes an event of a store without a webhook endpoint dispatched. It
 * takes its lock on webhook_events (every order change inserts there) a little at a time (review V1-1), leaves the
 * events written before it to the fan-out, and marks only events of stores without a live endpoint.
 */
import { expect, test } from "bun:test";
import { applyMigrations, type Sql } from "../../infra/db.ts";
import type { TestDatabase } from "../helpers/db.ts";
import { migrationKit, settled } from "../helpers/migrations.ts";

const M0099 = "0099_webhook_events_unsubscribed.sql";

const { migrations, databaseBefore, pool } = migrationKit();

async function databaseBefore0099(): Promise<TestDatabase> {
  const db = await databaseBefore(M0099);
  for (const slug of ["s-none", "s-live", "s-deleted"]) await db.sql`INSERT INTO stores (slug, name, country) VALUES (${slug}, 'S', 'US') ON CONFLICT DO NOTHING`;
  for (const [slug, deleted] of [["s-live", false], ["s-deleted", true]] as const) {
    await db.sql`INSERT INTO webhook_endpoints (id, store_slug, url, events, secret_sealed, deleted_at)
      VALUES (${crypto.randomUUID()}, ${slug}, 'https://example.com/h', ${["order.status_changed"]}, 'x', ${deleted ? new Date() : null})`;
  }
  return db;
}


const insertEvent = (sql: Sql, slug: string) =>
  sql<{ id: string }[]>`INSERT INTO webhook_events (store_slug, kind, payload) VALUES (${slug}, 'order.created', '{}') RETURNING id`.then((r) => r[0]!.id);
const dispatched = async (sql: Sql, id: string) => (await sql<{ d: boolean }[]>`SELECT dispatched_at IS NOT NULL AS d FROM webhook_events WHERE id = ${id}`)[0]!.d;

test("after 0099 an event of a store without a live endpoint is written dispatched; one of a store with an endpoint (whatever its events), and every event written before, are left to the fan-out", async () => {
  const db = await databaseBefore0099();
  const sql = db.sql;
  const before = await insertEvent(sql, "s-none");
  expect(await applyMigrations(sql, await migrations(M0099, true))).toEqual([M0099]);
  expect(await dispatched(sql, before)).toBe(false);
  expect(await dispatched(sql, await insertEvent(sql, "s-none"))).toBe(true);
  expect(await dispatched(sql, await insertEvent(sql, "s-deleted"))).toBe(true);
  expect(await dispatched(sql, await insertEvent(sql, "s-live"))).toBe(false);
}, 60_000);

test("while an order's transaction holds webhook_events, 0099 waits a little at a time so other inserts go on; past the connection's lock_timeout it fails with lock_not_available, changes nothing, and applies once that transaction ended", async () => {
  const db = await databaseBefore0099();
  await db.sql.unsafe(`ALTER DATABASE ${db.name} SET lock_timeout = '2s'`);
  const boot = pool(db, 2);
  const long = (await pool(db).reserve()) as unknown as Sql;
  await long`BEGIN`;
  await insertEvent(long, "s-none");
  const started = Date.now();
  const migrating = settled(applyMigrations(boot, await migrations(M0099, true)));
  const writer = pool(db);
  let slowest = 0;
  let writes = 0;
  while (Date.now() - started < 1_800) {
    const t0 = Date.now();
    await insertEvent(writer, "s-none");
    slowest = Math.max(slowest, Date.now() - t0);
    writes++;
  }
  const failed = await migrating;
  expect(Date.now() - started).toBeLessThan(6_000);
  expect(failed.ok ? "" : failed.message).toBe(
    `migration ${M0099} failed: could not lock webhook_events within 00:00:02; hint: A long transaction holds webhook_events (pg_stat_activity, pg_locks); start again once it ended.`,
  );
  expect(writes).toBeGreaterThan(3);
  expect(slowest).toBeLessThan(1_000);
  expect((await db.sql`SELECT 1 FROM pg_trigger WHERE tgname = 'webhook_events_unsubscribed'`).length).toBe(0);
  await long`COMMIT`;
  expect(await applyMigrations(boot, await migrations(M0099, true))).toEqual([M0099]);
  expect(await dispatched(db.sql, await insertEvent(db.sql, "s-none"))).toBe(true);
}, 30_000);
