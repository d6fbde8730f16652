/**
 * Review Y-5 (session 17, 5531b6e): webhookBacklog's fan-out lag now reads `min(created_at)` over every waiting event
 * with a join to webhook_fanout_cursor. Fanned-out events of stores with an endpoint keep `dispatched_at IS NULL`
 * (migration 0101: the cursor, not the column, says they are done), so both partial indexes hold every such event of
 * the retention window. When the cursor table has no statistics (a fresh migration, a restored or pg_upgraded database
 * until autovacuum has seen 50 cursor updates) the planner estimates it at ~1,100 rows and reads the whole events table
 * (parallel seq scan, JIT): ~2 s for 1,000,000 events here, past the statement's 2 s timeout, so the ONE statement
 * fails and all four webhook gauges read NaN at every scrape, with a full scan per scrape. The capped CTE form it
 * replaced took 0.4 ms on the same data. A plan that does not depend on the cursor's statistics:
 *   `… WHERE e.dispatched_at IS NULL AND e.fanout_xid >= (SELECT done_below FROM webhook_fanout_cursor WHERE id)
 *    ORDER BY e.fanout_xid LIMIT 1` (the head of the queue, the event the fan-out waits on; 0.2 ms), or keep the min
 *   over the capped CTE. Copy into test/http/ (or test/unit/) and run `bun test/run.ts <file>` (inserts 1 M rows, ~20 s).
 */
import { afterAll, beforeAll, expect, test } from "bun:test";
import { webhookBacklog } from "../../actors/webhook/dispatcher.ts";
import { createTestDatabase, type TestDatabase } from "../helpers/db.ts";

let db: TestDatabase;

beforeAll(async () => {
  db = await createTestDatabase(); // migrated; webhook_fanout_cursor never analyzed, as after a migration or restore
  await db.sql`ALTER TABLE webhook_events DISABLE TRIGGER webhook_events_unsubscribed`; // a store with an endpoint
  for (let part = 0; part < 5; part++) {
    // in parts of 200,000: each statement well inside the pool's 15 s query deadline on a busy machine
    await db.sql`INSERT INTO webhook_events (store_slug, kind, payload, created_at, fanout_xid)
      SELECT 's', 'order.created', '{}'::jsonb, now() - interval '20 days' + g * interval '1 second', '100'::xid8
      FROM generate_series(${part * 200_000 + 1}::int, ${(part + 1) * 200_000}::int) g`;
  }
  await db.sql`UPDATE webhook_fanout_cursor SET done_below = pg_current_xact_id()`; // every event fanned out
  await db.sql`ANALYZE webhook_events`; // the big table has its statistics (autovacuum), the one-row cursor not yet
}, 120_000);
afterAll(async () => {
  await db?.drop();
});

test("the backlog read answers fast with nothing waiting, whatever the cursor table's statistics", async () => {
  const started = performance.now();
  const b = await webhookBacklog(db.sql, Date.now()); // fails now: statement timeout (2 s), or close to it
  expect(b).toMatchObject({ fanoutWaitingEvents: 0, fanoutLagSeconds: 0 });
  expect(performance.now() - started).toBeLessThan(500);
}, 60_000);
