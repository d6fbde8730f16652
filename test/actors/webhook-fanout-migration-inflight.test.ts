/**
 * Review X-1: migration 0101 starts the fan-out's cursor at the migration's own transaction id. A transaction that got
 * its id before the migration's and writes its event after the migration committed (an order in flight during the
 * rolling start: it wrote its order row, then its event insert ran, or queued behind the migration's lock on
 * webhook_events) gets fanout_xid below the cursor: the event counts as dispatched and is never fanned out.
 */
import { expect, test } from "bun:test";
import { applyMigrations, type Sql } from "../../infra/db.ts";
import { fanOutOutbox } from "../../actors/webhook/dispatcher.ts";
import { migrationKit } from "../helpers/migrations.ts";

const M0101 = "0101_webhook_events_fanout_watermark.sql";
const kit = migrationKit();

test("an event written after 0101 by a transaction that began writing before it is fanned out to the store's endpoint", async () => {
  const db = await kit.databaseBefore(M0101);
  await db.sql`INSERT INTO stores (slug, name, country) VALUES ('s-live', 'S', 'US') ON CONFLICT DO NOTHING`;
  const endpoint = crypto.randomUUID();
  await db.sql`INSERT INTO webhook_endpoints (id, store_slug, url, events, secret_sealed)
    VALUES (${endpoint}, 's-live', 'https://example.com/h', ${["order.created"]}, 'x')`;

  // an order's transaction: it has written (so it has a transaction id) but not yet its event
  const order = (await kit.pool(db).reserve()) as unknown as Sql;
  await order`BEGIN`;
  await order`UPDATE stores SET name = 'S2' WHERE slug = 's-live'`;

  // the rolling start applies 0101 meanwhile (it locks webhook_events only, which the order has not touched yet)
  expect((await applyMigrations(kit.pool(db, 2), await kit.migrations(M0101, true))).at(-1)).toBe(M0101);

  const [ev] = await order<{ id: string }[]>`INSERT INTO webhook_events (store_slug, kind, payload) VALUES ('s-live', 'order.created', '{}') RETURNING id`;
  await order`COMMIT`;

  for (let i = 0; i < 5; i++) await fanOutOutbox(db.sql, Date.now());
  const [d] = await db.sql<{ n: number; dispatched: boolean }[]>`
    SELECT (SELECT count(*)::int FROM webhook_deliveries WHERE event_id = ${ev!.id}) AS n,
      webhook_event_dispatched(e.dispatched_at, e.fanout_xid) AS dispatched FROM webhook_events e WHERE e.id = ${ev!.id}`;
  // found: { deliveries: 0, dispatched: true } (the event counts as dispatched and reaches no endpoint)
  expect({ deliveries: d!.n, dispatched: d!.dispatched }).toEqual({ deliveries: 1, dispatched: true });
}, 60_000);
