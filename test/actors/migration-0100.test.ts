/**
 * Migration 0100 (review X, finding X-1): 0099's trigger marks an event of a store without an endpoint dispatched
 * only while it holds register's per-store lock (0x5eb0, hashtext(slug)) in the shared form, to the order's commit;
 * it takes that lock without waiting, so an order never waits for a registration (the waiting form could deadlock two
 * orders of one store around a queued registration), and an event it cannot lock for is left to the fan-out.
 */
import { expect, test } from "bun:test";
import { applyMigrations, connect, type Sql } from "../../infra/db.ts";
import { createTestDatabase, type TestDatabase } from "../helpers/db.ts";
import { cleanupAfterEach, migrationsBefore } from "../helpers/migrations.ts";

const M0100 = "0100_webhook_events_unsubscribed_at_commit.sql";
/** actors/webhook/index.ts WEBHOOK_CAP_LOCK. */
const WEBHOOK_CAP_LOCK = 0x5eb0;

const cleanup = cleanupAfterEach();

async function database(): Promise<TestDatabase> {
  const db = await createTestDatabase({ migrate: false, poolSize: 4 });
  cleanup.push(() => db.drop());
  expect((await applyMigrations(db.sql, await migrationsBefore(M0100, cleanup, true))).at(-1)).toBe(M0100);
  for (const slug of ["s-none", "s-live"]) await db.sql`INSERT INTO stores (slug, name, country) VALUES (${slug}, 'S', 'US') ON CONFLICT DO NOTHING`;
  await db.sql`INSERT INTO webhook_endpoints (id, store_slug, url, events, secret_sealed)
    VALUES (${crypto.randomUUID()}, 's-live', 'https://example.com/h', ${["order.created"]}, 'x')`;
  return db;
}

/** A connection of its own (a transaction spans several statements on it). */
async function session(db: TestDatabase): Promise<Sql> {
  const p = connect(db.url, 1, { queryDeadlineMs: 0 });
  cleanup.push(() => p.end({ timeout: 1 }));
  return (await p.reserve()) as unknown as Sql;
}

const insertEvent = (sql: Sql, slug: string) =>
  sql<{ id: string }[]>`INSERT INTO webhook_events (store_slug, kind, payload) VALUES (${slug}, 'order.created', '{}') RETURNING id`.then((r) => r[0]!.id);
const dispatched = async (sql: Sql, id: string) => (await sql<{ d: boolean }[]>`SELECT dispatched_at IS NOT NULL AS d FROM webhook_events WHERE id = ${id}`)[0]!.d;
const registerLock = (sql: Sql, slug: string) => sql`SELECT pg_advisory_xact_lock(${WEBHOOK_CAP_LOCK}, hashtext(${slug}))`;
const timed = async <T>(p: Promise<T>): Promise<{ value: T; ms: number }> => {
  const t0 = Date.now();
  const value = await p;
  return { value, ms: Date.now() - t0 };
};

test("after 0100 an event of a store without an endpoint is still written dispatched, and one of a store with an endpoint is left to the fan-out", async () => {
  const db = await database();
  expect(await dispatched(db.sql, await insertEvent(db.sql, "s-none"))).toBe(true);
  expect(await dispatched(db.sql, await insertEvent(db.sql, "s-live"))).toBe(false);
}, 60_000);

test("an order that found no endpoint makes a registration of its store wait for the order's commit", async () => {
  const db = await database();
  const order = await session(db);
  const register = await session(db);
  await order`BEGIN`;
  const id = await insertEvent(order, "s-none");
  await register`BEGIN`;
  let granted = false;
  const registering = registerLock(register, "s-none").then(() => (granted = true));
  await Bun.sleep(500);
  expect(granted).toBe(false);
  await order`COMMIT`;
  await registering;
  await register`COMMIT`;
  expect(await dispatched(db.sql, id)).toBe(true);
}, 60_000);

test("an order that meets a registration in progress in its store does not wait and leaves its event to the fan-out; other stores are not affected", async () => {
  const db = await database();
  const register = await session(db);
  await register`BEGIN`;
  await registerLock(register, "s-none");
  const order = await session(db);
  await order`BEGIN`;
  const inserted = await timed(insertEvent(order, "s-none"));
  expect(inserted.ms).toBeLessThan(500);
  const other = await insertEvent(order, "s-other-store");
  await order`COMMIT`;
  await register`COMMIT`;
  expect(await dispatched(db.sql, inserted.value)).toBe(false);
  expect(await dispatched(db.sql, other)).toBe(true);
}, 60_000);

test("a registration queued behind one order does not make a second order of the store wait: no deadlock when the first then needs a row the second holds", async () => {
  const db = await database();
  const first = await session(db);
  const second = await session(db);
  const register = await session(db);
  await first`BEGIN`;
  const firstEvent = await insertEvent(first, "s-none");
  await register`BEGIN`;
  let granted = false;
  const registering = registerLock(register, "s-none").then(() => (granted = true));
  await Bun.sleep(200);
  expect(granted).toBe(false);
  // the second order holds a row (as a product row of a hold) and then writes its event while the registration waits
  await second`BEGIN`;
  await second`UPDATE stores SET name = name WHERE slug = 's-live'`;
  const secondEvent = await timed(insertEvent(second, "s-none"));
  expect(secondEvent.ms).toBeLessThan(500);
  // the first order now needs that row: it waits for the second, which commits without waiting for anyone
  const firstWaits = first`UPDATE stores SET name = name WHERE slug = 's-live'`.execute();
  await Bun.sleep(200);
  await second`COMMIT`;
  await firstWaits;
  await first`COMMIT`;
  await registering;
  await register`COMMIT`;
  expect(await dispatched(db.sql, firstEvent)).toBe(true);
  expect(await dispatched(db.sql, secondEvent.value)).toBe(false);
}, 60_000);
