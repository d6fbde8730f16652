/**
 * The outbox fan-out and the webhook boot hook.
 *
 * `fanOutOutbox` turns the `webhook_events` rows of the next window of writing transactions (migration 0101: a
 * watermark over `fanout_xid`, guarded by the oldest running transaction, so an event committing out of order is
 * never skipped) into one delivery per subscribed endpoint, moves the watermark and arms each endpoint actor's durable
 * `deliverDue` reminder, all in ONE statement; no event row is updated. It skips disabled endpoints
 * (actors/webhook/index.ts: 5 days without a 2xx, or the merchant): an event fanned out while one is disabled is never
 * delivered to it, even after it is enabled again. It is driven by the durable watermark, so an event committed by an
 * order change is fanned out even if the process died right after the commit: the next process picks it up. The
 * watermark row's `FOR UPDATE SKIP LOCKED` lets every actor host run it at once without double work (and the
 * (event, endpoint) unique key makes a double impossible anyway).
 *
 * The boot hook (roles start and actors) installs the webhook runtime, runs the fan-out every 200 ms and at once
 * when the outbox topic is published, kicks the endpoints it fanned out to, and sweeps for overdue deliveries
 * whose reminder was lost (belt and braces for "never lost").
 */
import type { ActorCaller } from "../runtime/define-actor.ts";
import type { Clock } from "../runtime/clock.ts";
import type { Sql } from "../../infra/db.ts";
import type { BootHook } from "../../infra/boot-hooks.ts";
import { LoopBackoff } from "../../infra/backoff.ts";
import { log } from "../../infra/log.ts";
import { registerWebhookBacklogSource, type WebhookBacklog } from "../../infra/metrics.ts";
import type { Resolver } from "../../infra/ssrf.ts";
import { installWebhookRuntime, webhookSecretsKey } from "./deliver.ts";
import { webhookActor } from "./index.ts";
import { WEBHOOK_OUTBOX_TOPIC } from "./outbox.ts";
import { WEBHOOK_ATTEMPT_TIMEOUT_MS } from "./schedule.ts";

export const FAN_OUT_INTERVAL_MS = 200;
/** Transaction ids a fan-out statement's window spans at most (a backlog goes in several statements). */
const FAN_OUT_XIDS = 100_000;
const SWEEP_INTERVAL_MS = 5_000;
/** A delivery due longer than this with nobody working on it gets its endpoint's reminder re-armed. */
const OVERDUE_MS = 30_000;

/** Keys of `Services.extras` read on every use, so a running server can be tuned (tests, benches). */
export const EXTRAS_ATTEMPT_TIMEOUT_MS = "webhook.attemptTimeoutMs";
export const EXTRAS_RESOLVER = "webhook.resolve";

/** Private/loopback destinations: only when configured, and never in production. */
export function privateUrlsAllowed(config: { ALLOW_PRIVATE_URLS: boolean; NODE_ENV: string }): boolean {
  return config.ALLOW_PRIVATE_URLS && config.NODE_ENV !== "production";
}

export interface FanOutResult {
  events: number;
  endpoints: string[];
  /** The window was cut at FAN_OUT_XIDS: events of later transactions may be waiting. */
  more: boolean;
}

/**
 * Fans out the events of one window of writing transactions (migration 0101): those with `fanout_xid` in
 * [cursor, xmin), xmin being the oldest transaction of this database still running when this statement's snapshot was
 * taken (`h` below). Each of this database's transactions below it has ended, so every event one of them committed is
 * visible here; a transaction still running
 * (whatever its events' order) is in a later window, so an event that commits out of order is never skipped. The
 * cursor moves in this statement, under its row's lock (another host's run skips meanwhile): each event is in one
 * window. No event row is updated or locked. The window is bounded (FAN_OUT_XIDS transaction ids) so a backlog goes
 * in several statements: `more` says the run should go on.
 */
export async function fanOutOutbox(sql: Sql, now: number, limit = FAN_OUT_XIDS): Promise<FanOutResult> {
  const at = new Date(now);
  const [row] = await sql<{ events: number; endpoints: string[]; more: boolean; ahead: boolean | null }[]>`
    WITH h AS (
      -- The oldest transaction that may still commit an event of this database: one in progress at this statement's
      -- snapshot, unless pg_stat_activity (read after the snapshot) shows it running in another database of the
      -- cluster (transaction ids are cluster-wide: another database's CREATE DATABASE or long transaction would hold
      -- our webhooks back). An id seen there in another database is not ours (ids are unique and a backend never
      -- changes database); one not seen there, or hidden from us, counts. None: every id below the snapshot's xmax has
      -- ended, its events visible here.
      SELECT COALESCE(
        (SELECT min(x) FROM pg_snapshot_xip(s.snap) x
         WHERE NOT EXISTS (SELECT 1 FROM pg_stat_activity a
           WHERE a.backend_xid IS NOT NULL AND a.datid IS NOT NULL
             AND a.datid <> (SELECT oid FROM pg_database WHERE datname = current_database())
             AND a.backend_xid::text::numeric = x::text::numeric % 4294967296)),
        pg_snapshot_xmax(s.snap)) AS upto
      FROM (SELECT pg_current_snapshot() AS snap) s
    ), c AS (
      -- locked only when its window holds an event (an idle run writes nothing); a later cursor (another host moved it
      -- since this statement's snapshot) is what the lock returns, and its window is then read from there
      SELECT k.done_below FROM webhook_fanout_cursor k, h
      WHERE k.id AND EXISTS (SELECT 1 FROM webhook_events e WHERE e.dispatched_at IS NULL AND e.fanout_xid >= k.done_below AND e.fanout_xid < h.upto)
      FOR UPDATE OF k SKIP LOCKED
    ), f AS (
      -- the window starts at the first waiting event, not at the cursor: the cursor stands still while no event of a
      -- store with an endpoint is written, and other writes consume ids meanwhile (review X-3: the first event after
      -- a quiet spell was reached in one statement per FAN_OUT_XIDS ids of the gap)
      SELECT (SELECT min(e.fanout_xid) FROM webhook_events e WHERE e.dispatched_at IS NULL AND e.fanout_xid >= c.done_below) AS first FROM c
    ), w AS (
      SELECT f.first AS lo, LEAST(h.upto, (f.first::text::numeric + ${limit})::text::xid8) AS hi, h.upto FROM f, h
    ), ev AS (
      SELECT e.id, e.store_slug, e.kind FROM webhook_events e, w
      WHERE e.dispatched_at IS NULL AND e.fanout_xid >= w.lo AND e.fanout_xid < w.hi
    ), ins AS (
      INSERT INTO webhook_deliveries (event_id, endpoint_id, store_slug, next_attempt_at)
      SELECT ev.id, ep.id, ev.store_slug, ${at}::timestamptz FROM ev
      -- a disabled endpoint gets no delivery (and no reminder): nothing is kept or probed for it until it is enabled
      JOIN webhook_endpoints ep ON ep.store_slug = ev.store_slug AND ep.deleted_at IS NULL AND ep.disabled_at IS NULL
        AND ev.kind = ANY (ep.events)
      ON CONFLICT (event_id, endpoint_id) DO NOTHING
      RETURNING endpoint_id
    ), mv AS (
      UPDATE webhook_fanout_cursor k SET done_below = w.hi FROM w WHERE k.id AND w.hi > w.lo RETURNING 1
    ), rem AS (
      INSERT INTO actor_reminders (kind, id, name, due_at, payload)
      SELECT DISTINCT 'webhook', endpoint_id::text, 'deliverDue', ${at}::timestamptz, 'null'::jsonb FROM ins
      ON CONFLICT (kind, id, name) DO UPDATE SET due_at = LEAST(actor_reminders.due_at, EXCLUDED.due_at)
      RETURNING id
    )
    SELECT (SELECT count(*)::int FROM ev) AS events, ARRAY(SELECT id FROM rem) AS endpoints,
      COALESCE((SELECT hi < upto FROM w) AND EXISTS (SELECT 1 FROM mv), false) AS more,
      (SELECT k.done_below > pg_snapshot_xmax(pg_current_snapshot()) FROM webhook_fanout_cursor k WHERE k.id) AS ahead`;
  if (row?.ahead && (await realignFanoutCursor(sql))) return fanOutOutbox(sql, now, limit);
  return { events: row?.events ?? 0, endpoints: row?.endpoints ?? [], more: row?.more ?? false };
}

/**
 * A cursor ahead of every transaction id this server has given out means the database was restored into another
 * server (pg_dump, logical replication; pg_upgrade and physical replicas keep the counter): the cursor and the
 * restored events' `fanout_xid` are the source server's ids, and every event written here since has a lower id, so
 * it would count as fanned out and never reach an endpoint (review X-2). Realigned in one statement under the
 * cursor's lock: a restored event (its row version written by the restore, not by the transaction it names) the
 * source had fanned out (below the source's cursor) is marked dispatched; one it had not gets this transaction's id,
 * and the cursor goes back to the oldest running transaction, or to the first event written here if that is older.
 * True when it realigned (another host may have done it first).
 */
export async function realignFanoutCursor(sql: Sql): Promise<boolean> {
  const rows = await sql`
    WITH k AS (
      SELECT done_below FROM webhook_fanout_cursor WHERE id AND done_below > pg_snapshot_xmax(pg_current_snapshot()) FOR UPDATE
    ), restored AS (
      SELECT e.id, e.fanout_xid < k.done_below AS done FROM webhook_events e, k
      WHERE e.dispatched_at IS NULL AND e.xmin::text::numeric <> e.fanout_xid::text::numeric % 4294967296
    ), fin AS (
      UPDATE webhook_events e SET dispatched_at = now() FROM restored r WHERE e.id = r.id AND r.done RETURNING 1
    ), again AS (
      UPDATE webhook_events e SET fanout_xid = pg_current_xact_id() FROM restored r WHERE e.id = r.id AND NOT r.done RETURNING 1
    )
    UPDATE webhook_fanout_cursor c SET done_below = LEAST(
        pg_snapshot_xmin(pg_current_snapshot()),
        (SELECT min(e.fanout_xid) FROM webhook_events e
         WHERE e.dispatched_at IS NULL AND e.xmin::text::numeric = e.fanout_xid::text::numeric % 4294967296))
    FROM k WHERE c.id RETURNING (SELECT count(*) FROM fin) AS finished, (SELECT count(*) FROM again) AS requeued`;
  if (rows.length === 0) return false;
  log.warn("webhook fan-out cursor realigned after a restore into another server", { finished: Number(rows[0]!.finished), requeued: Number(rows[0]!.requeued) });
  return true;
}

/** Waiting events are counted up to this many (the gauge says "at least" beyond it; the count stays one short scan). */
export const BACKLOG_COUNT_CAP = 100_000;

/**
 * The webhook backlog for /metrics (infra/metrics.ts): events committed but not yet fanned out (above the cursor; an
 * event waits there while any older transaction of the database runs, docs/webhooks.md "Fan-out lag"), the age of the
 * head of that queue, and deliveries due but not yet attempted. The event side reads `created_at` against the database's clock (its default); the
 * delivery side reads `next_attempt_at`, written with the service clock, against `now`. One statement under a 2 s
 * statement timeout: a scrape never waits on a stuck database longer than that.
 */
export async function webhookBacklog(sql: Sql, now: number): Promise<WebhookBacklog> {
  return sql.begin(async (tx) => {
    await tx`SET LOCAL statement_timeout = 2000`;
    const [r] = await tx<{ waiting: number; fanout_lag: number | null; due: number; delivery_lag: number | null }[]>`
      WITH k AS (SELECT done_below FROM webhook_fanout_cursor WHERE id),
      waiting AS (
        SELECT 1 FROM webhook_events e
        WHERE e.dispatched_at IS NULL AND e.fanout_xid >= (SELECT done_below FROM k)
        LIMIT ${BACKLOG_COUNT_CAP}
      ), due AS (
        SELECT d.next_attempt_at FROM webhook_deliveries d
        WHERE d.status IN ('pending', 'failed') AND d.next_attempt_at <= ${new Date(now)}::timestamptz
        LIMIT ${BACKLOG_COUNT_CAP}
      )
      -- the fan-out's lag is the age of the head of its queue (the first event above the cursor, the one it waits
      -- on), read along webhook_events_fanout: a min over every waiting row was planned as a scan of every fanned-out
      -- event while the cursor table had no statistics, past the 2 s timeout at a million events (review Y-5)
      SELECT (SELECT count(*)::int FROM waiting) AS waiting,
        (SELECT extract(epoch FROM now() - e.created_at)::float8 FROM webhook_events e
         WHERE e.dispatched_at IS NULL AND e.fanout_xid >= (SELECT done_below FROM k) ORDER BY e.fanout_xid LIMIT 1) AS fanout_lag,
        (SELECT count(*)::int FROM due) AS due,
        (SELECT extract(epoch FROM ${new Date(now)}::timestamptz - min(d.next_attempt_at))::float8 FROM webhook_deliveries d
         WHERE d.status IN ('pending', 'failed') AND d.next_attempt_at <= ${new Date(now)}::timestamptz) AS delivery_lag`;
    return {
      fanoutWaitingEvents: r!.waiting,
      fanoutLagSeconds: Math.max(0, r!.fanout_lag ?? 0),
      deliveriesDue: r!.due,
      deliveryLagSeconds: Math.max(0, r!.delivery_lag ?? 0),
    };
  });
}

/** Re-arms the reminder of endpoints whose due deliveries have waited longer than OVERDUE_MS. */
export async function sweepOverdue(sql: Sql, now: number): Promise<string[]> {
  const rows = await sql<{ id: string }[]>`
    INSERT INTO actor_reminders (kind, id, name, due_at, payload)
    SELECT DISTINCT 'webhook', d.endpoint_id::text, 'deliverDue', ${new Date(now)}::timestamptz, 'null'::jsonb
    FROM webhook_deliveries d
    WHERE d.status IN ('pending', 'failed') AND d.next_attempt_at <= ${new Date(now - OVERDUE_MS)}::timestamptz
    ON CONFLICT (kind, id, name) DO UPDATE SET due_at = LEAST(actor_reminders.due_at, EXCLUDED.due_at)
    RETURNING id`;
  return rows.map((r) => r.id);
}

/** Keeps at most one "deliver until nothing is due" loop per endpoint in this process. */
export class Kicker {
  private readonly active = new Set<string>();
  private readonly again = new Set<string>();
  constructor(private readonly actors: ActorCaller) {}

  kick(endpointId: string): void {
    if (this.active.has(endpointId)) {
      this.again.add(endpointId);
      return;
    }
    this.active.add(endpointId);
    void (async () => {
      try {
        for (let rounds = 0; rounds < 1000; rounds++) {
          this.again.delete(endpointId);
          const r = await this.actors.ask(webhookActor, endpointId, "deliverDue", {}, { timeoutMs: 60_000 });
          if (!r.more && !this.again.has(endpointId)) break;
        }
      } catch {
        // The durable reminder delivers it anyway; a kick only saves latency.
      } finally {
        this.active.delete(endpointId);
      }
    })();
  }

  get busy(): number {
    return this.active.size;
  }
}

export const webhookBootHook: BootHook = {
  name: "webhooks",
  roles: ["start", "actors"],
  async run({ services, transport }) {
    const kek = services.extras.get("secretKey") as Uint8Array;
    const secretsKey = webhookSecretsKey(kek);
    const uninstall = installWebhookRuntime(() => ({
      secretsKey,
      allowPrivate: privateUrlsAllowed(services.config),
      attemptTimeoutMs: (services.extras.get(EXTRAS_ATTEMPT_TIMEOUT_MS) as number | undefined) ?? WEBHOOK_ATTEMPT_TIMEOUT_MS,
      resolve: services.extras.get(EXTRAS_RESOLVER) as Resolver | undefined,
    }));
    const kicker = new Kicker(services.actors);
    const clock: Clock = services.clock;
    let stopped = false;
    let running: Promise<void> | undefined;
    let rerun = false;
    let lastSweep = 0;
    // while the database is down every tick fails: the interval's ticks wait out a backoff (an outbox publish, which
    // means a commit just worked, still runs at once) and the failure is logged once in a while, not 5 times a second
    const backoff = new LoopBackoff("webhook fan-out", services.log, { baseMs: FAN_OUT_INTERVAL_MS, maxMs: 5_000 });

    const tick = async () => {
      if (running) {
        rerun = true;
        return running;
      }
      running = (async () => {
        do {
          rerun = false;
          try {
            let r: FanOutResult;
            do {
              r = await fanOutOutbox(services.sql, clock.now());
              for (const id of r.endpoints) kicker.kick(id);
            } while (r.more && !stopped);
            if (Date.now() - lastSweep >= SWEEP_INTERVAL_MS) {
              lastSweep = Date.now();
              await sweepOverdue(services.sql, clock.now());
            }
            backoff.succeeded();
          } catch (err) {
            if (!stopped) backoff.failed(err);
          }
        } while (rerun && !stopped);
      })().finally(() => {
        running = undefined;
      });
      return running;
    };

    const timer = setInterval(() => void (backoff.due() ? tick() : undefined), FAN_OUT_INTERVAL_MS);
    const unsubscribe = transport.subscribe(WEBHOOK_OUTBOX_TOPIC, () => void tick());
    services.extras.set("webhook.fanOutNow", tick);
    const unregisterBacklog = registerWebhookBacklogSource(() => webhookBacklog(services.sql, clock.now()));
    void tick();
    return async () => {
      stopped = true;
      unregisterBacklog();
      clearInterval(timer);
      unsubscribe();
      await running;
      uninstall();
    };
  },
};
