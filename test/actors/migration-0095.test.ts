/**
 * Migration 0095: the approval-hold guard (actors/cart/hold-guard.ts `holdGuardColumns`, in every payment attempt's
 * risk read) finds the caller's holds through stock_reservations_key_held (held reservations by their order's key),
 * and 0092's orders_agent_key_pending, whose `status` predicate made the update that pays an order non-HOT, is dropped.
 * The migration gives the held reservations written before it their order's key; it takes its locks on
 * stock_reservations and orders together, a little at a time (review V1-1), and keeps an index an operator built
 * CONCURRENTLY beforehand.
 */
import { expect, test } from "bun:test";
import { holdGuardColumns } from "../../actors/cart/hold-guard.ts";
import { applyMigrations, type Sql } from "../../infra/db.ts";
import { createTestDatabase } from "../helpers/db.ts";
import { indexDefinition, migrationKit, settled } from "../helpers/migrations.ts";

const M0095 = "0095_stock_reservations_key_held.sql";
const KEY = "11111111-1111-4111-8111-111111111111";

const { cleanup, migrations, databaseBefore, pool } = migrationKit();

const databaseBefore0095 = () => databaseBefore(M0095);



/** `n` pending orders of `who` (null: 64 other keys), each holding stock since `g * 5` minutes ago, the key on the hold only `withKey`. */
async function pendingHolds(sql: Sql, store: string, who: string | null, n: number, withKey: boolean): Promise<void> {
  await sql`WITH o AS (INSERT INTO orders (store_slug, channel, agent_key_id, buyer_ref, status, total_minor, currency, payment_rail, checkout_session_id, created_at)
      SELECT ${store}, 'agent', COALESCE(${who}::uuid, md5((g % 64)::text)::uuid), 'b', 'pending', 100, 'USD', 'card', 'cs_' || ${who ?? "other"} || '_' || g, now() - g * interval '5 minutes'
      FROM generate_series(1, ${n}) g RETURNING id, agent_key_id, created_at)
    INSERT INTO stock_reservations (id, store_slug, order_id, lines, status, created_at${withKey ? sql`, agent_key_id` : sql``})
    SELECT 'r_' || id, ${store}, id, '[]', 'held', created_at${withKey ? sql`, agent_key_id` : sql``} FROM o`;
}

test("the hold guard's read of a key with thousands of paid orders reads only its held reservations, then their orders by id", async () => {
  const db = await createTestDatabase({ seeded: true });
  cleanup.push(() => db.drop());
  const sql = db.sql;
  const [store] = await sql<{ slug: string }[]>`SELECT slug FROM stores ORDER BY slug LIMIT 1`;
  // the key's history: 5,000 paid orders over the last two days, a pending order holding nothing (untracked stock),
  // three pending ones holding stock, waiting for a buyer; everyone else's pending orders holding stock: 2,000
  await sql`INSERT INTO orders (store_slug, channel, agent_key_id, buyer_ref, status, total_minor, currency, payment_rail, checkout_session_id, created_at)
    SELECT ${store!.slug}, 'agent', ${KEY}, 'b', 'paid', 100, 'USD', 'card', 'cs_paid_' || g, now() - g * interval '30 seconds' FROM generate_series(1, 5000) g`;
  await sql`INSERT INTO orders (store_slug, channel, agent_key_id, buyer_ref, status, total_minor, currency, payment_rail, checkout_session_id, created_at)
    VALUES (${store!.slug}, 'agent', ${KEY}, 'b', 'pending', 100, 'USD', 'card', 'cs_untracked', now() - interval '1 hour')`;
  await pendingHolds(sql, store!.slug, KEY, 3, true);
  await pendingHolds(sql, store!.slug, null, 2000, true);
  await sql`ANALYZE orders`;
  await sql`ANALYZE stock_reservations`;
  const guard = { keyId: KEY, sessionId: "cs_paying_now", storeSlugs: [store!.slug] };
  const plan = (await sql<{ "QUERY PLAN": string }[]>`EXPLAIN (ANALYZE, COSTS OFF) SELECT ${holdGuardColumns(sql, guard)}`).map((r) => r["QUERY PLAN"]).join("\n");
  expect(plan).toMatch(/stock_reservations_key_held[^\n]*\(actual time=[\d.]+\.\.[\d.]+ rows=3 loops=1\)/);
  expect(plan).not.toContain("orders_agent_key");
  expect(plan).not.toContain("Seq Scan");
  const [row] = await sql<{ guard_holding: { s: string }[] }[]>`SELECT ${holdGuardColumns(sql, guard)}`;
  expect(row!.guard_holding.map((h) => h.s).sort()).toEqual([`cs_${KEY}_1`, `cs_${KEY}_2`, `cs_${KEY}_3`]);
}, 60_000);

test("no index of orders reads status any more, so the update that pays a pending order is HOT", async () => {
  const db = await createTestDatabase({ seeded: true });
  cleanup.push(() => db.drop());
  const sql = db.sql;
  const indexes = await sql<{ def: string }[]>`SELECT pg_get_indexdef(indexrelid) AS def FROM pg_index WHERE indrelid = 'orders'::regclass`;
  expect(indexes.filter((i) => /status/.test(i.def)).map((i) => i.def)).toEqual([]);
  const [store] = await sql<{ slug: string }[]>`SELECT slug FROM stores ORDER BY slug LIMIT 1`;
  // twenty checkouts one after the other, each order written pending and then paid as the settle pays it
  const hot = await sql.begin(async (tx) => {
    for (let i = 0; i < 20; i++) {
      const [o] = await tx<{ id: string }[]>`INSERT INTO orders (store_slug, channel, agent_key_id, buyer_ref, status, total_minor, currency, payment_rail, checkout_session_id)
        VALUES (${store!.slug}, 'agent', ${KEY}, 'b', 'pending', 100, 'USD', 'card', ${`cs_hot_${i}`}) RETURNING id`;
      await tx`UPDATE orders SET status = 'paid', capture_ref = 'c', intent_id = 'i', simulated = true, paid_at = now(), updated_at = now(), version = version + 1
        WHERE id = ${o!.id} AND status = 'pending'`;
    }
    const [r] = await tx<{ hot: number; upd: number }[]>`SELECT pg_stat_get_xact_tuples_hot_updated('orders'::regclass)::int AS hot, pg_stat_get_xact_tuples_updated('orders'::regclass)::int AS upd`;
    return r!;
  });
  expect(hot.upd).toBe(20);
  // 0 of 20 with 0092's index; a page with no room left for the new version can still make one non-HOT
  expect(hot.hot).toBeGreaterThanOrEqual(15);
}, 60_000);

test("held reservations written before 0095 get their order's key and count for the guard; others are left alone; 0092's index is gone", async () => {
  const db = await databaseBefore0095();
  const sql = db.sql;
  await sql`INSERT INTO stores (slug, name, country) VALUES ('s-0095', 'S', 'US') ON CONFLICT DO NOTHING`;
  await pendingHolds(sql, "s-0095", KEY, 3, false);
  // a committed reservation of a paid order of the key: not held, not touched
  await sql`WITH o AS (INSERT INTO orders (store_slug, channel, agent_key_id, buyer_ref, status, total_minor, currency, payment_rail, checkout_session_id)
      VALUES ('s-0095', 'agent', ${KEY}, 'b', 'paid', 100, 'USD', 'card', 'cs_paid') RETURNING id)
    INSERT INTO stock_reservations (id, store_slug, order_id, lines, status) SELECT 'r_paid', 's-0095', id, '[]', 'committed' FROM o`;
  expect(await indexDefinition(db, "orders_agent_key_pending")).toBeDefined();
  expect(await applyMigrations(sql, await migrations(M0095, true))).toEqual([M0095]);
  expect(await indexDefinition(db, "orders_agent_key_pending")).toBeUndefined();
  expect(await indexDefinition(db, "stock_reservations_key_held")).toMatchObject({
    valid: true,
    def: expect.stringContaining("(agent_key_id) WHERE ((status = 'held'::text) AND (agent_key_id IS NOT NULL))"),
  });
  const keys = await sql<{ id: string; agent_key_id: string | null }[]>`SELECT id, agent_key_id FROM stock_reservations WHERE store_slug = 's-0095' ORDER BY id`;
  expect(keys.map((k) => [k.id.startsWith("r_paid") ? "paid" : "held", k.agent_key_id])).toEqual([
    ["held", KEY],
    ["held", KEY],
    ["held", KEY],
    ["paid", null],
  ]);
  const [row] = await sql<{ guard_holding: { s: string }[] }[]>`SELECT ${holdGuardColumns(sql, { keyId: KEY, sessionId: "cs_now", storeSlugs: ["s-0095"] })}`;
  expect(row!.guard_holding.map((h) => h.s).sort()).toEqual([`cs_${KEY}_1`, `cs_${KEY}_2`, `cs_${KEY}_3`]);
}, 60_000);

test("while a checkout write holds orders, 0095 waits a little at a time and holds neither table meanwhile; past the connection's lock_timeout it fails with lock_not_available, changes nothing, and applies once the write ended", async () => {
  const db = await databaseBefore0095();
  await db.sql.unsafe(`ALTER DATABASE ${db.name} SET lock_timeout = '2s'`);
  const boot = pool(db, 2);
  const long = (await pool(db).reserve()) as unknown as Sql;
  await long`BEGIN`;
  await long`LOCK TABLE orders IN ROW EXCLUSIVE MODE`;
  const started = Date.now();
  const migrating = settled(applyMigrations(boot, await migrations(M0095, true)));
  // the checkout's other table stays usable: a read of stock_reservations (the guard's) is never stuck behind the migration
  const reader = pool(db);
  let slowest = 0;
  let reads = 0;
  while (Date.now() - started < 1_800) {
    const t0 = Date.now();
    await reader`SELECT count(*) FROM stock_reservations WHERE order_id = '00000000-0000-0000-0000-000000000000'`;
    slowest = Math.max(slowest, Date.now() - t0);
    reads++;
  }
  const failed = await migrating;
  expect(failed.ok ? "" : failed.message).toBe(
    `migration ${M0095} failed: could not lock stock_reservations and orders within 00:00:02; hint: A long transaction holds stock_reservations or orders (pg_stat_activity, pg_locks); start again once it ended.`,
  );
  expect(reads).toBeGreaterThan(3);
  expect(slowest).toBeLessThan(1_000);
  expect(await indexDefinition(db, "stock_reservations_key_held")).toBeUndefined();
  expect(await indexDefinition(db, "orders_agent_key_pending")).toBeDefined();
  await long`COMMIT`;
  expect(await applyMigrations(boot, await migrations(M0095, true))).toEqual([M0095]);
  expect(await indexDefinition(db, "stock_reservations_key_held")).toMatchObject({ valid: true });
}, 30_000);

test("an index built CONCURRENTLY before 0095 is kept", async () => {
  const db = await databaseBefore0095();
  await db.sql.unsafe(`ALTER TABLE stock_reservations ADD COLUMN agent_key_id uuid`);
  await db.sql.unsafe(`CREATE INDEX CONCURRENTLY stock_reservations_key_held ON stock_reservations (agent_key_id) WHERE status = 'held' AND agent_key_id IS NOT NULL`);
  const before = await db.sql<{ oid: number }[]>`SELECT to_regclass('stock_reservations_key_held')::oid::int AS oid`;
  expect(await applyMigrations(db.sql, await migrations(M0095, true))).toEqual([M0095]);
  expect(await db.sql<{ oid: number }[]>`SELECT to_regclass('stock_reservations_key_held')::oid::int AS oid`).toEqual(before);
}, 30_000);
