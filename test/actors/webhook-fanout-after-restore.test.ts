/**
 * Review X-2: webhook_fanout_cursor.done_below is a transaction id of the server it was written on. docs/operations.md
 * "After a database restore" supports restoring a pg_dump into a new server; the dump carries the cursor (COPY
 * webhook_fanout_cursor), far ahead of the new server's transaction counter. Every event written there afterwards has
 * fanout_xid below the cursor: counted dispatched, never fanned out, until the new counter passes the old one.
 * The restore is simulated by writing the cursor a restore loads (the source server 10 million transactions ahead).
 */
import { expect, test } from "bun:test";
import { fanOutOutbox } from "../../actors/webhook/dispatcher.ts";
import { migrationKit } from "../helpers/migrations.ts";

const kit = migrationKit();

test("after a pg_dump restore into a new server an order's event is fanned out to the store's endpoint", async () => {
  const db = await kit.databaseBefore("9999_after_every_migration.sql");
  await db.sql`INSERT INTO stores (slug, name, country) VALUES ('s-live', 'S', 'US') ON CONFLICT DO NOTHING`;
  await db.sql`INSERT INTO webhook_endpoints (id, store_slug, url, events, secret_sealed)
    VALUES (${crypto.randomUUID()}, 's-live', 'https://example.com/h', ${["order.created"]}, 'x')`;
  // what pg_restore loads into the new server: the source server's cursor
  await db.sql`UPDATE webhook_fanout_cursor SET done_below = (pg_current_xact_id()::text::numeric + 10000000)::text::xid8`;

  const [ev] = await db.sql<{ id: string }[]>`INSERT INTO webhook_events (store_slug, kind, payload) VALUES ('s-live', 'order.created', '{}') RETURNING id`;
  for (let i = 0; i < 5; i++) await fanOutOutbox(db.sql, Date.now());
  const [d] = await db.sql<{ n: number }[]>`SELECT count(*)::int AS n FROM webhook_deliveries WHERE event_id = ${ev!.id}`;
  // found: 0 (the event counts as dispatched: webhook_event_dispatched is true from its insert)
  expect(d!.n).toBe(1);
}, 60_000);

test("restored events: one the source had fanned out is not sent again, one it had not is fanned out once", async () => {
  const db = await kit.databaseBefore("9999_after_every_migration.sql");
  await db.sql`INSERT INTO stores (slug, name, country) VALUES ('s-live', 'S', 'US') ON CONFLICT DO NOTHING`;
  await db.sql`INSERT INTO webhook_endpoints (id, store_slug, url, events, secret_sealed)
    VALUES (${crypto.randomUUID()}, 's-live', 'https://example.com/h', ${["order.created"]}, 'x')`;
  // the source server's cursor and two of its events, as a restore copies them (the rows written by the restore's
  // own transaction, their fanout_xid the source's): one below the source's cursor, one above it
  const [src] = await db.sql<{ cursor: string }[]>`
    UPDATE webhook_fanout_cursor SET done_below = (pg_current_xact_id()::text::numeric + 10000000)::text::xid8 RETURNING done_below::text AS cursor`;
  const cursor = BigInt(src!.cursor);
  const [done] = await db.sql<{ id: string }[]>`INSERT INTO webhook_events (store_slug, kind, payload, fanout_xid)
    VALUES ('s-live', 'order.created', '{}', ${String(cursor - 5n)}::xid8) RETURNING id`;
  const [waiting] = await db.sql<{ id: string }[]>`INSERT INTO webhook_events (store_slug, kind, payload, fanout_xid)
    VALUES ('s-live', 'order.created', '{}', ${String(cursor + 5n)}::xid8) RETURNING id`;
  // and one written on the new server after the restore
  const [fresh] = await db.sql<{ id: string }[]>`INSERT INTO webhook_events (store_slug, kind, payload) VALUES ('s-live', 'order.created', '{}') RETURNING id`;
  for (let i = 0; i < 5; i++) await fanOutOutbox(db.sql, Date.now());
  const deliveries = async (id: string) => (await db.sql<{ n: number }[]>`SELECT count(*)::int AS n FROM webhook_deliveries WHERE event_id = ${id}`)[0]!.n;
  expect({ done: await deliveries(done!.id), waiting: await deliveries(waiting!.id), fresh: await deliveries(fresh!.id) }).toEqual({ done: 0, waiting: 1, fresh: 1 });
  const [flags] = await db.sql<{ all: boolean }[]>`SELECT bool_and(webhook_event_dispatched(dispatched_at, fanout_xid)) AS all FROM webhook_events`;
  expect(flags!.all).toBe(true);
  // the cursor is back on this server's counter: an order written now is fanned out too
  const [later] = await db.sql<{ id: string }[]>`INSERT INTO webhook_events (store_slug, kind, payload) VALUES ('s-live', 'order.created', '{}') RETURNING id`;
  await fanOutOutbox(db.sql, Date.now());
  expect(await deliveries(later!.id)).toBe(1);
}, 60_000);

