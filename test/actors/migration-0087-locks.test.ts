/**
 * Migration 0087 takes its table locks without deadlocking the service and without holding them for a backfill
 * (review V1-1). The service writes `orders` and `stock_reservations` in both orders (a paid order's cancel or refund:
 * orders, then stock_reservations; a settle or a pending order's cancel: stock_reservations, then orders). 0087 needs
 * SHARE ROW EXCLUSIVE on orders (its trigger) and ACCESS EXCLUSIVE on stock_reservations, bridge_sessions and
 * ap2_mandate_agents (new columns); it took them stock_reservations first and deadlocked with a cancel in flight, and it
 * held them through the backfill of closed orders (about 28 s per million rows). Now each attempt takes orders first,
 * never waits long while it holds one, and gives everything back to try again; the backfill is 0088, which takes no
 * table lock the service waits for. Each test builds its own database at 0086.
 */
import { expect, test } from "bun:test";
import { applyMigrations, connect, type Sql } from "../../infra/db.ts";
import { createTestDatabase, type TestDatabase } from "../helpers/db.ts";
import { cleanupAfterEach, migrationsBefore as migrationsIn } from "../helpers/migrations.ts";

const M0087 = "0087_retention_mandates_sold_stock.sql";
const M0088 = "0088_retention_sold_stock_backfill.sql";

const cleanup = cleanupAfterEach();

/** The migrations before `first` (a file name), as their own directory. */
const migrationsBefore = (first: string) => migrationsIn(first, cleanup);

/** The migrations up to 0088, so a later migration's name never shows among the applied ones checked here. */
const throughM0088 = () => migrationsBefore("0089");

/** A database migrated up to (not including) `first`, with one store. */
async function databaseBefore(first: string): Promise<TestDatabase> {
  const db = await createTestDatabase({ migrate: false, poolSize: 4 });
  cleanup.push(() => db.drop());
  await applyMigrations(db.sql, await migrationsBefore(first));
  await db.sql`INSERT INTO stores (slug, name, country) VALUES ('s', 'S', 'US')`;
  return db;
}

/** A connection of its own, in a transaction, as a service write in flight holds it. */
async function inFlight(db: TestDatabase): Promise<Sql> {
  const pool = connect(db.url, 1, { queryDeadlineMs: 0 });
  cleanup.push(() => pool.end({ timeout: 1 }));
  const tx = (await pool.reserve()) as unknown as Sql & { release(): void };
  await tx`BEGIN`;
  return tx;
}

/** Resolves once the migration's backend waits for a table lock (each of its attempts does, for at most 400 ms). */
async function migrationWaitsOnALock(db: TestDatabase): Promise<void> {
  const watch = connect(db.url, 1, { queryDeadlineMs: 0 });
  try {
    for (const until = Date.now() + 10_000; Date.now() < until; await Bun.sleep(5)) {
      const [w] = await watch<{ n: number }[]>`
        SELECT count(*)::int AS n FROM pg_stat_activity WHERE datname = current_database() AND wait_event_type = 'Lock' AND query LIKE 'BEGIN; -- Retention%'`;
      if (w!.n > 0) return;
    }
    throw new Error("the migration never waited on a lock");
  } finally {
    await watch.end({ timeout: 1 });
  }
}

const settled = <T>(p: Promise<T>) => p.then((value) => ({ ok: true as const, value }), (err: Error & { code?: string }) => ({ ok: false as const, code: err.code, message: err.message }));

test("a paid order's cancel in flight (orders, then stock_reservations) and 0087 both commit: the migration waits for it, no deadlock", async () => {
  const db = await databaseBefore(M0087);
  const cancel = await inFlight(db);
  await cancel`UPDATE orders SET updated_at = updated_at WHERE false`; // moveOrder's write
  const migrating = settled(applyMigrations(db.sql, await throughM0088()));
  await migrationWaitsOnALock(db);
  const restock = await settled(cancel`UPDATE stock_reservations SET updated_at = updated_at WHERE false`); // returnSoldStock's
  await Bun.sleep(1_200); // past deadlock_timeout (1 s), with both in flight
  const committed = await settled(cancel`COMMIT`);
  expect({ restock: restock.ok, committed: committed.ok }).toEqual({ restock: true, committed: true });
  expect(await migrating).toEqual({ ok: true, value: [M0087, M0088] });
}, 30_000);

test("a settle or a pending order's cancel in flight (stock_reservations, then orders) and 0087 both commit, no deadlock", async () => {
  const db = await databaseBefore(M0087);
  const settle = await inFlight(db);
  await settle`UPDATE stock_reservations SET updated_at = updated_at WHERE false`; // the reservation's settle
  const migrating = settled(applyMigrations(db.sql, await throughM0088()));
  await migrationWaitsOnALock(db);
  const paid = await settled(settle`UPDATE orders SET updated_at = updated_at WHERE false`); // the order's move
  await Bun.sleep(1_200);
  const committed = await settled(settle`COMMIT`);
  expect({ paid: paid.ok, committed: committed.ok }).toEqual({ paid: true, committed: true });
  expect(await migrating).toEqual({ ok: true, value: [M0087, M0088] });
}, 30_000);

test("while a long transaction holds orders, writers queued behind 0087 wait under a second at a time; past the connection's lock_timeout 0087 fails with lock_not_available, changes nothing, and applies once it ended", async () => {
  const db = await databaseBefore(M0087);
  await db.sql.unsafe(`ALTER DATABASE ${db.name} SET lock_timeout = '2s'`);
  const boot = connect(db.url, 2, { queryDeadlineMs: 0 }); // a start-up's pool: new sessions, with the database's setting
  cleanup.push(() => boot.end({ timeout: 1 }));
  const long = await inFlight(db);
  await long`UPDATE orders SET updated_at = updated_at WHERE false`;
  const started = Date.now();
  const migrating = settled(applyMigrations(boot, await throughM0088()));
  await migrationWaitsOnALock(db);
  // another checkout write to orders meanwhile: queued behind the migration's waiting lock only briefly each time
  const writer = connect(db.url, 1, { queryDeadlineMs: 0 });
  cleanup.push(() => writer.end({ timeout: 1 }));
  let slowest = 0;
  while (Date.now() - started < 1_800) {
    const t0 = Date.now();
    await writer`UPDATE orders SET updated_at = updated_at WHERE false`;
    slowest = Math.max(slowest, Date.now() - t0);
  }
  const failed = await migrating;
  expect(Date.now() - started).toBeLessThan(6_000);
  expect(failed).toMatchObject({ ok: false });
  expect(failed.ok ? "" : failed.message).toBe(
    `migration ${M0087} failed: could not lock orders, stock_reservations, bridge_sessions and ap2_mandate_agents within 00:00:02; hint: A long transaction holds one of them (pg_stat_activity, pg_locks); start again once it ended.`,
  );
  expect(slowest).toBeLessThan(1_000);
  const [cols] = await db.sql<{ n: number }[]>`SELECT count(*)::int AS n FROM information_schema.columns WHERE table_name = 'stock_reservations' AND column_name = 'order_closed_at'`;
  const [done] = await db.sql<{ n: number }[]>`SELECT count(*)::int AS n FROM schema_migrations WHERE name IN (${M0087}, ${M0088})`;
  expect({ column: cols!.n, applied: done!.n }).toEqual({ column: 0, applied: 0 });
  await long`COMMIT`;
  expect(await applyMigrations(boot, await throughM0088())).toEqual([M0087, M0088]);
}, 30_000);

test("0088 stamps the sold reservations of orders closed before 0087 with the order's last change, keeps a stamp 0087's trigger wrote, clears returned rows' kept marks, and runs beside checkout's writes", async () => {
  const db = await databaseBefore(M0087);
  const old = "2026-01-02 03:04:05+00";
  const order = async (status: string) => {
    const [o] = await db.sql<{ id: string }[]>`
      INSERT INTO orders (id, store_slug, channel, buyer_ref, status, total_minor, currency, payment_rail, updated_at)
      VALUES (gen_random_uuid(), 's', 'human', 'b', ${status}, 100, 'USD', 'card', ${old}) RETURNING id::text`;
    return o!.id;
  };
  const reservation = (id: string, orderId: string, status: string, kept = false) =>
    db.sql`INSERT INTO stock_reservations (id, store_slug, order_id, lines, status, kept_as_last_attempt)
      VALUES (${id}, 's', ${orderId}, '[]'::jsonb, ${status}, ${kept})`;
  const delivered = await order("delivered");
  const paid = await order("paid");
  const shipsLater = await order("paid");
  const canceled = await order("canceled");
  const pending = await order("pending");
  await reservation("r_delivered", delivered, "committed");
  await reservation("r_paid", paid, "committed");
  await reservation("r_ships_later", shipsLater, "committed");
  await reservation("r_returned", canceled, "returned", true);
  await reservation("r_held", pending, "held");

  // 0087 alone, then an order ships: the trigger stamps its row now
  await applyMigrations(db.sql, await migrationsBefore(M0088));
  await db.sql`UPDATE orders SET status = 'shipped', updated_at = ${old} WHERE id = ${shipsLater}`;
  const [shipped] = await db.sql<{ stamped: string }[]>`SELECT order_closed_at::text AS stamped FROM stock_reservations WHERE id = 'r_ships_later'`;
  const stamped = shipped!.stamped;
  expect(stamped).not.toBe(old);

  // checkout writes in flight (a hold's reservation row, its order) while 0088 applies: it waits for neither
  const checkout = await inFlight(db);
  await checkout`UPDATE stock_reservations SET updated_at = now() WHERE id = 'r_held'`;
  await checkout`UPDATE orders SET updated_at = now() WHERE id = ${pending}`;
  const applied = await Promise.race([applyMigrations(db.sql, await throughM0088()), Bun.sleep(10_000).then(() => "still waiting")]);
  await checkout`COMMIT`;
  expect(applied).toEqual([M0088]);

  const rows = await db.sql<{ id: string; closed: string | null; kept: boolean }[]>`
    SELECT id, order_closed_at::text AS closed, kept_as_last_attempt AS kept FROM stock_reservations ORDER BY id`;
  expect([...rows]).toEqual([
    { id: "r_delivered", closed: old, kept: false },
    { id: "r_held", closed: null, kept: false },
    { id: "r_paid", closed: null, kept: false },
    { id: "r_returned", closed: null, kept: false },
    { id: "r_ships_later", closed: stamped, kept: false },
  ]);
}, 30_000);
