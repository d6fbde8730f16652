/**
 * Rate-limit buckets kept outside their owner actor's memory (audit Z-1; migration 0075 `rate_limit_buckets`), so a
 * rolling restart of the actor hosts does not refill them:
 *  - **Durable buckets** (the failed-log-in buckets, gateway/login.ts): the row is the count. `admitStored` decides
 *    on the row under a per-owner lock and writes it before the owner answers; `releaseStored` gives a unit back in
 *    one statement. So the count survives any restart, kill -9 included, and stays exact even while two activations
 *    of one owner overlap (a partition moving). A log-in is rare and already costs a password hash, so one write per
 *    attempt (and one more per success, whose unit goes back) is cheap; a refusal the memory already knows writes
 *    nothing, so a guesser hammering a full bucket costs no database work.
 *  - **Everything else** (tier, global, per-address buckets): memory only on the hot path (no write, no await per
 *    request); a clean stop hands the used buckets over (`handOverBuckets`, run by ActorHost.stop through
 *    `handOverOnStop`) and every activation loads its owner's rows once, at its start (`loadStoredBuckets`). A
 *    kill -9 still refills these (docs/access.md).
 * A loaded row is a count that was reached in that window, so it never makes a bucket fuller than it really is.
 * Rows whose window ended are deleted by `pruneEnded`: from the durable writes (at most once a minute per process)
 * and on every clean stop.
 */
import { withoutDeadline, type Sql } from "../../infra/db.ts";
import type { Logger } from "../../infra/log.ts";
import type { AdmitResult, BucketSpec, BucketTable } from "../agent/buckets.ts";
import type { HandOver } from "../runtime/host.ts";

/**
 * How long an activation waits for its stored buckets before it serves with what it has: a database that does not
 * answer must not hold up every new address's first request (only the durable buckets need it, and they read it
 * again in their own turn).
 */
const LOAD_BUDGET_MS = 500;
/** How often one process logs a failed load (at most). */
const LOAD_WARN_EVERY_MS = 30_000;
/** How often one process deletes ended rows from the durable writes (at most). */
const PRUNE_EVERY_MS = 60_000;
/** Rows per statement of a hand-over (the deadline is checked between statements). */
const HAND_OVER_CHUNK = 1_000;

interface Row {
  bucket_id: string;
  window_start: string | number;
  used: number;
}

let lastLoadWarning = 0;

/** One warn line per LOAD_WARN_EVERY_MS at most: during an outage every new address's activation fails its load. */
function warnLoad(log: Logger, msg: string, fields: Record<string, unknown>): void {
  const now = Date.now();
  if (now - lastLoadWarning < LOAD_WARN_EVERY_MS) return;
  lastLoadWarning = now;
  log.warn(msg, fields);
}

/** Loads the owner's rows whose window has not ended into its (new) table. Best effort within LOAD_BUDGET_MS. */
export async function loadStoredBuckets(sql: Sql, owner: string, table: BucketTable, log: Logger): Promise<void> {
  const now = Date.now();
  const read = sql<(Row & { window_end: string | number })[]>`
    SELECT bucket_id, window_start, window_end, used FROM rate_limit_buckets WHERE owner = ${owner} AND window_end > ${now}`;
  let rows: (Row & { window_end: string | number })[] | null;
  try {
    rows = await Promise.race([read, Bun.sleep(LOAD_BUDGET_MS).then(() => null)]);
  } catch (err) {
    warnLoad(log, "could not load stored rate-limit buckets; activations start with empty ones", { owner, error: err as Error });
    return;
  }
  if (!rows) {
    read.catch(() => {});
    warnLoad(log, "stored rate-limit buckets not read in time; activations start with empty ones", { owner, budgetMs: LOAD_BUDGET_MS });
    return;
  }
  for (const r of rows) {
    const start = Number(r.window_start);
    table.put(r.bucket_id, Number(r.window_end) - start, { windowStart: start, count: r.used });
  }
}

/**
 * Admits durable buckets (all-or-nothing, as BucketTable.admit) on their stored rows and writes the new counts before
 * returning; the table follows the rows. A refusal the table already shows is answered without the database.
 */
export async function admitStored(sql: Sql, owner: string, table: BucketTable, specs: readonly BucketSpec[]): Promise<AdmitResult> {
  const known = table.decide(specs);
  if (!known.allowed) return known;
  const ids = specs.map((s) => s.id);
  let result: AdmitResult = known;
  await withoutDeadline(sql).begin(async (tx) => {
    // one owner's admissions take turns in the database too, should two activations of it overlap (a moving partition)
    await tx`SELECT pg_advisory_xact_lock(hashtextextended(${`rate_limit_buckets/${owner}`}, 0))`;
    const rows = await tx<Row[]>`SELECT bucket_id, window_start, used FROM rate_limit_buckets WHERE owner = ${owner} AND bucket_id IN ${tx(ids)}`;
    const byId = new Map(rows.map((r) => [r.bucket_id, r]));
    for (const s of specs) {
      const r = byId.get(s.id);
      table.put(s.id, s.windowMs, r ? { windowStart: Number(r.window_start), count: r.used } : null);
    }
    result = table.decide(specs);
    if (!result.allowed) return;
    const states = result.states;
    await tx`
      INSERT INTO rate_limit_buckets (owner, bucket_id, window_start, window_end, used, durable)
      SELECT ${owner}, b, s, e, u, true
      FROM unnest(${ids}::text[], ${states.map((st) => st.windowStart)}::bigint[],
                  ${states.map((st, i) => st.windowStart + specs[i]!.windowMs)}::bigint[], ${states.map((st) => st.count)}::int[]) AS t(b, s, e, u)
      ON CONFLICT (owner, bucket_id) DO UPDATE
        SET window_start = EXCLUDED.window_start, window_end = EXCLUDED.window_end, used = EXCLUDED.used, durable = true`;
  });
  // only once committed: a failed write leaves the table at the rows (the caller gets the error, nothing counted)
  if (result.allowed) specs.forEach((s, i) => table.put(s.id, s.windowMs, result.states[i]!));
  pruneEnded(sql);
  return result;
}

/** Gives back one unit of each durable bucket taken at `consumedAt`, if its window is still the one it was taken in. */
export async function releaseStored(sql: Sql, owner: string, table: BucketTable, specs: readonly BucketSpec[], consumedAt: number): Promise<void> {
  if (!specs.length) return;
  const rows = await withoutDeadline(sql)<Row[]>`
    UPDATE rate_limit_buckets SET used = GREATEST(0, used - 1)
    WHERE owner = ${owner} AND bucket_id IN ${sql(specs.map((s) => s.id))} AND window_start <= ${consumedAt} AND window_end > ${Date.now()}
    RETURNING bucket_id, window_start, used`;
  for (const r of rows) {
    const spec = specs.find((s) => s.id === r.bucket_id)!;
    table.put(r.bucket_id, spec.windowMs, { windowStart: Number(r.window_start), count: r.used });
  }
}

let lastPrune = 0;

/** Deletes rows whose window has ended; from a write path at most once per PRUNE_EVERY_MS, not awaited. */
export function pruneEnded(sql: Sql, force = false): Promise<unknown> | undefined {
  const now = Date.now();
  if (!force && now - lastPrune < PRUNE_EVERY_MS) return undefined;
  lastPrune = now;
  return sql`DELETE FROM rate_limit_buckets WHERE window_end <= ${now}`.catch(() => {});
}

/**
 * The hand-over of a kind whose activations keep a BucketTable in memory: every used bucket still in its window, as
 * a row of its owner (`ownerOf(actor id)`), a chunk per statement until `deadline`. A durable row (a log-in bucket)
 * is never overwritten: it is the count already. Then the ended rows go.
 */
export function handOverBuckets(tableOf: (memory: ReadonlyMap<string, unknown>) => BucketTable | undefined, ownerOf: (id: string) => string): HandOver {
  return async (activations, sql, deadline) => {
    const owners: string[] = [];
    const ids: string[] = [];
    const starts: number[] = [];
    const ends: number[] = [];
    const used: number[] = [];
    for (const a of activations) {
      const table = tableOf(a.memory);
      if (!table) continue;
      const owner = ownerOf(a.id);
      for (const b of table.used()) {
        owners.push(owner);
        ids.push(b.id);
        starts.push(b.windowStart);
        ends.push(b.windowEnd);
        used.push(b.count);
      }
    }
    for (let i = 0; i < ids.length && Date.now() < deadline; i += HAND_OVER_CHUNK) {
      const to = i + HAND_OVER_CHUNK;
      await sql`
        INSERT INTO rate_limit_buckets (owner, bucket_id, window_start, window_end, used, durable)
        SELECT o, b, s, e, u, false
        FROM unnest(${owners.slice(i, to)}::text[], ${ids.slice(i, to)}::text[], ${starts.slice(i, to)}::bigint[],
                    ${ends.slice(i, to)}::bigint[], ${used.slice(i, to)}::int[]) AS t(o, b, s, e, u)
        ON CONFLICT (owner, bucket_id) DO UPDATE
          SET window_start = EXCLUDED.window_start, window_end = EXCLUDED.window_end, used = EXCLUDED.used
          WHERE NOT rate_limit_buckets.durable`;
    }
    if (Date.now() < deadline) await pruneEnded(sql, true);
  };
}
