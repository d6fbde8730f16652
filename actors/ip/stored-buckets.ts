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
 *    request); a clean stop, a partition moving away and an idle passivation hand the used buckets over
 *    (`handOverBuckets`, run by ActorHost through `handOverOnStop`), and an activation loads its owner's rows at its
 *    start (`loadStoredBuckets`) when there may be any, and serves only once that read has answered: the activation
 *    never counts from buckets it has not read (a load that fails or runs past LOAD_TIMEOUT_MS fails the activation;
 *    the caller retries). Over NATS a moved partition is served by its new owner only once every other live host has
 *    released it, its hand-over committed (actors/transport/nats.ts `acquire`), so the load finds it. The catch-ups
 *    (`catchUpBuckets`, 1 s and 3 s after a partition move) run only for a move no release covered: a live host that
 *    does not answer releases (an older version during a rolling upgrade; ActorHost's timed backstop). A kill -9
 *    still refills these (docs/access.md).
 * A stored row is never lowered while its window runs: a hand-over from an activation that knew less (its load ran
 * out of time, or read a row about to be replaced) cannot undo a count another one reached.
 * Rows whose window ended are deleted by `pruneEnded`: from the durable writes (at most once a minute per process)
 * and on every clean stop.
 */
import { beginWithin, DatabaseUnavailableError, withoutDeadline, type Sql } from "../../infra/db.ts";
import type { Logger } from "../../infra/log.ts";
import type { AdmitResult, BucketSpec, BucketTable } from "../agent/buckets.ts";
import { onPlacementChange, type CatchUp, type HandOver } from "../runtime/host.ts";

/**
 * How long an activation's load may take, its wait for a load slot included. The activation waits for the load up to
 * this: it used to start with empty buckets after 0.5 s, and on a loaded machine (a rolling restart under traffic, CI
 * at load 14) the joiner of a moved partition then admitted up to the whole limit again before a catch-up merged the
 * row (500/15 min let 560–790 through). Past it the load fails, and so does the activation (503, retried by the
 * caller with a new load): a slow or unreachable database costs availability of the owners that may have rows, never
 * the bound. Enforced on both sides (review V-1): the server cancels the statement (`statement_timeout`, so a slow
 * read frees its connection: review RQ MED-2), and the client gives up at it plus at most 1 s (`beginWithin`), since
 * a server that stopped answering (frozen, a network partition, a half-open socket) cancels nothing.
 */
const LOAD_TIMEOUT_MS = 5_000;
/**
 * Loads running at once per process: each holds a pooled connection for up to LOAD_TIMEOUT_MS (the statement is
 * timed out there by the server), so a locked or slow table cannot take the pool from every other request. The
 * others wait for a slot until their load's deadline (review V-1: the wait had none, so two reads stuck on a stalled
 * server held up every later load of the process for good). A slot is freed when its load gives up on the client
 * side, not when the socket settles: a half-open socket may never settle, and the pool's `max` bounds those.
 */
const LOADS_AT_ONCE = 2;
/** A catch-up's (and `measureOthers`') timeout, both sides as a load's: background reads, once per partition move. */
const CATCH_UP_BUDGET_MS = 5_000;
/**
 * After a placement change, when to measure how long rows other hosts handed over may stay live. Over NATS a moved
 * partition is served only once its old owners' hand-overs committed, and its acquisition is a placement change of
 * its own (ActorHost.placementChanged): a measurement begun before it does not count (`placementEpoch`).
 */
const SETTLE_MS = 3_500;
/** How many owners this process remembers having handed over itself; past it, every load reads until they end. */
const WRITTEN_HERE_MAX = 100_000;
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

/*
 * When a load can be skipped (review RQ LOW-4: a read per new address, 404s included). A non-durable row exists only
 * because some activation handed its buckets over. This process knows the owners it handed over itself
 * (`writtenHere`); rows of other processes reach its actors only through a placement change (ActorHost calls
 * `onPlacementChange`: this host started, the live hosts changed, a deactivation, a moved partition acquired once its
 * old owners' hand-overs committed), and they last until their window ends. So after a change every load reads, until
 * the rows handed over by then are measured (`othersUntil`: the latest window end among them, SETTLE_MS after the
 * last change); from then on only
 * the owners in `writtenHere` read, until that time. The durable rows are not loaded: `admitStored` reads them in
 * its own turn.
 */
let othersUntil = Infinity;
let settleAt = 0;
let placementEpoch = 0;
let measuring = false;
const writtenHere = new Map<string, number>();
/** `writtenHere` was full: every load reads until then. */
let overflowUntil = 0;

/** A placement change (see above): every load reads until the rows handed over by then are measured. */
export function notePlacementChange(): void {
  othersUntil = Infinity;
  settleAt = Date.now() + SETTLE_MS;
  placementEpoch++;
}
onPlacementChange(notePlacementChange);

/** Whether `owner` may have a live non-durable row; starts the measurement of `othersUntil` when it is due. */
function mayHaveRows(sql: Sql, owner: string, now: number): boolean {
  if (othersUntil === Infinity && now >= settleAt && !measuring) void measureOthers(sql);
  return now < othersUntil || now < overflowUntil || (writtenHere.get(owner) ?? 0) > now;
}

async function measureOthers(sql: Sql): Promise<void> {
  measuring = true;
  const epoch = placementEpoch;
  try {
    // client-side bound too (review V-1): a read stuck on a stalled server left `measuring` set and every load reading
    const [r] = await beginWithin(sql, CATCH_UP_BUDGET_MS, (tx) => tx<{ until: string | number | null }[]>`
      SELECT max(window_end) AS until FROM rate_limit_buckets WHERE NOT durable`);
    // a placement change meanwhile: rows may have come after this read, so it does not count
    if (epoch === placementEpoch) othersUntil = Number(r?.until ?? 0);
  } catch {
    settleAt = Date.now() + LOAD_WARN_EVERY_MS; // the loads read meanwhile; measured again later
  } finally {
    measuring = false;
  }
}

/** Records that this process wrote `owner`'s rows, live until `until`. */
function noteWritten(owner: string, until: number, now: number): void {
  if ((writtenHere.get(owner) ?? 0) >= until) return;
  if (writtenHere.size >= WRITTEN_HERE_MAX && !writtenHere.has(owner)) {
    for (const [o, end] of writtenHere) if (end <= now) writtenHere.delete(o);
    if (writtenHere.size >= WRITTEN_HERE_MAX) {
      overflowUntil = Math.max(overflowUntil, until);
      return;
    }
  }
  writtenHere.set(owner, until);
}

let loadsRunning = 0;
const loadWaiters: (() => void)[] = [];

/**
 * One of LOADS_AT_ONCE slots, once free; release it with `releaseLoadSlot`. None by `deadline` (review V-1): rejects
 * DatabaseUnavailableError(sent: false), nothing was sent (503 service_unavailable, the caller retries).
 */
function loadSlot(deadline: number): Promise<void> {
  if (loadsRunning < LOADS_AT_ONCE) {
    loadsRunning++;
    return Promise.resolve();
  }
  return new Promise<void>((resolve, reject) => {
    // the slot is handed straight to the next waiter by releaseLoadSlot; a waiter that gave up leaves the queue first,
    // so no slot is ever handed to nobody
    const waiter = () => {
      clearTimeout(timer);
      resolve();
    };
    const timer = setTimeout(() => {
      const i = loadWaiters.indexOf(waiter);
      if (i >= 0) loadWaiters.splice(i, 1);
      reject(new DatabaseUnavailableError(LOAD_TIMEOUT_MS, false));
    }, Math.max(0, deadline - Date.now()));
    loadWaiters.push(waiter);
  });
}

function releaseLoadSlot(): void {
  const next = loadWaiters.shift();
  if (next) next(); // the slot goes straight to the next waiter
  else loadsRunning--;
}

type StoredRow = Row & { window_end: string | number };

/**
 * Reads non-durable live rows of `owners` within `timeoutMs`: a server-side statement timeout, so a read that runs
 * out of time frees its connection (a Promise.race alone left the SELECT holding a pooled connection: review RQ
 * MED-2), and a client-side one (`beginWithin`: no connection in time, or no answer within `timeoutMs` plus at most
 * 1 s), so a server that stopped answering fails the read rather than hanging it (review V-1). A read may be given up
 * after it was sent: harmless, it writes nothing.
 */
function readRows(sql: Sql, owners: readonly string[], timeoutMs: number): Promise<(StoredRow & { owner: string })[]> {
  return beginWithin(sql, timeoutMs, (tx) => tx<(StoredRow & { owner: string })[]>`
    SELECT owner, bucket_id, window_start, window_end, used FROM rate_limit_buckets
    WHERE owner IN ${tx(owners as string[])} AND NOT durable AND window_end > ${Date.now()}`);
}

/**
 * Loads the owner's live handed-over rows into its (new) table, when it may have any (see above). Waits for a slot
 * and the read up to LOAD_TIMEOUT_MS in all (plus at most 1 s for the server's own cancellation to arrive); a slot
 * not had or a read that fails or times out rejects, which fails the activation (review V-1: it never hangs): an
 * owner whose row may exist is never served from empty buckets.
 */
export async function loadStoredBuckets(sql: Sql, owner: string, table: BucketTable, log: Logger): Promise<void> {
  const now = Date.now();
  if (!mayHaveRows(sql, owner, now)) return;
  const deadline = now + LOAD_TIMEOUT_MS;
  let rows: StoredRow[];
  try {
    await loadSlot(deadline);
    try {
      rows = await readRows(sql, [owner], deadline - Date.now());
    } finally {
      // also when the client gave up on a read still unanswered (V-1): the slot does not wait for the socket
      releaseLoadSlot();
    }
  } catch (err) {
    warnLoad(log, "could not load stored rate-limit buckets; the activation fails and the caller retries", { owner, error: err as Error });
    throw err;
  }
  for (const r of rows) {
    const windowStart = Number(r.window_start);
    table.load(r.bucket_id, Number(r.window_end) - windowStart, { windowStart, count: r.used });
  }
}

/**
 * The catch-up of a kind whose activations keep a BucketTable (see ActorHost's CatchUp): one read of every listed
 * owner's live handed-over rows, merged into their tables (BucketTable.merge: the row plus what the activation
 * counted since its load), so the count a busy owner reached on the host it moved from is not lost.
 */
export function catchUpBuckets(tableOf: (memory: ReadonlyMap<string, unknown>) => BucketTable | undefined, ownerOf: (id: string) => string): CatchUp {
  return async (activations, sql) => {
    const byOwner = new Map<string, BucketTable>();
    for (const a of activations) {
      const table = tableOf(a.memory);
      if (table) byOwner.set(ownerOf(a.id), table);
    }
    const owners = [...byOwner.keys()];
    for (let i = 0; i < owners.length; i += HAND_OVER_CHUNK) {
      const rows = await readRows(sql, owners.slice(i, i + HAND_OVER_CHUNK), CATCH_UP_BUDGET_MS);
      for (const r of rows) {
        const windowStart = Number(r.window_start);
        byOwner.get(r.owner)?.merge(r.bucket_id, Number(r.window_end) - windowStart, { windowStart, count: r.used });
      }
    }
  };
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
    const now = Date.now();
    // before the write: a next activation here that starts while it runs reads what it finds (at worst the old row,
    // which the write only raises)
    owners.forEach((o, i) => noteWritten(o, ends[i]!, now));
    for (let i = 0; i < ids.length && Date.now() < deadline; i += HAND_OVER_CHUNK) {
      const to = i + HAND_OVER_CHUNK;
      // A live stored row is never lowered (review RQ LOW-5): only a row whose window has ended, or a count at least
      // as high, replaces it. A durable row (a log-in bucket) is never overwritten: it is the count already.
      await sql`
        INSERT INTO rate_limit_buckets (owner, bucket_id, window_start, window_end, used, durable)
        SELECT o, b, s, e, u, false
        FROM unnest(${owners.slice(i, to)}::text[], ${ids.slice(i, to)}::text[], ${starts.slice(i, to)}::bigint[],
                    ${ends.slice(i, to)}::bigint[], ${used.slice(i, to)}::int[]) AS t(o, b, s, e, u)
        ON CONFLICT (owner, bucket_id) DO UPDATE
          SET window_start = EXCLUDED.window_start, window_end = EXCLUDED.window_end, used = EXCLUDED.used
          WHERE NOT rate_limit_buckets.durable
            AND (rate_limit_buckets.window_end <= ${Date.now()} OR EXCLUDED.used >= rate_limit_buckets.used)`;
    }
    if (Date.now() < deadline) await pruneEnded(sql, true);
  };
}
