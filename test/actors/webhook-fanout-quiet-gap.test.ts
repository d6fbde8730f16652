/**
 * Review X-3 (LOW, performance): the cursor moves only when its window holds an event (an idle run writes nothing),
 * while the database's other writes (every actor turn, every event of a store without an endpoint) keep consuming
 * transaction ids. The first event after a quiet spell is then reached in FAN_OUT_XIDS (100,000) steps: one fan-out
 * statement (pg_stat_activity read, two index probes, a cursor update) per 100k ids of the gap, in one run's loop:
 * 100 statements for a gap of 10M ids (~14 h at 200 ids/s).
 * Scale model: 100 windows of ids behind the cursor (a window of 1,000 ids and a gap of 100,000 where the cluster has
 * consumed that many ids; a fresh machine's cluster may have consumed fewer, so the gap and window scale down with it).
 */
import { expect, test } from "bun:test";
import { fanOutOutbox } from "../../actors/webhook/dispatcher.ts";
import { migrationKit } from "../helpers/migrations.ts";

const kit = migrationKit();

test("the first event after a quiet spell of 100 windows of transaction ids is fanned out in a few statements", async () => {
  const db = await kit.databaseBefore("9999_after_every_migration.sql");
  await db.sql`INSERT INTO stores (slug, name, country) VALUES ('s-live', 'S', 'US') ON CONFLICT DO NOTHING`;
  await db.sql`INSERT INTO webhook_endpoints (id, store_slug, url, events, secret_sealed)
    VALUES (${crypto.randomUUID()}, 's-live', 'https://example.com/h', ${["order.created"]}, 'x')`;
  // where the cursor stopped at the last event, 100 windows of transaction ids ago
  const [{ xid }] = await db.sql<{ xid: string }[]>`SELECT pg_current_xact_id()::text AS xid`;
  const gap = Math.min(100_000, Number(xid) - 10);
  expect(gap).toBeGreaterThanOrEqual(1_000); // creating and migrating the test database alone consumes more
  const window = Math.floor(gap / 100);
  const [g] = await db.sql<{ ok: boolean }[]>`
    UPDATE webhook_fanout_cursor SET done_below = (pg_current_xact_id()::text::numeric - ${gap})::text::xid8 RETURNING true AS ok`;
  expect(g?.ok).toBe(true);
  await db.sql`INSERT INTO webhook_events (store_slug, kind, payload) VALUES ('s-live', 'order.created', '{}')`;
  let statements = 0;
  let r;
  do {
    r = await fanOutOutbox(db.sql, Date.now(), window); // the boot hook's loop: while (r.more)
    statements++;
  } while (r.more && statements < 1000);
  const [d] = await db.sql<{ n: number }[]>`SELECT count(*)::int AS n FROM webhook_deliveries`;
  // found: { deliveries: 1, statements: 101 }
  expect({ deliveries: d!.n, statements }).toEqual({ deliveries: 1, statements: 1 });
}, 60_000);
