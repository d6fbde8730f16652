/**
 * `webhook/<endpointId>`: one activation per registered endpoint. It is the single writer of its endpoint row
 * (secrets, circuit breaker) and of that endpoint's deliveries, and it does the HTTP attempts. One actor per
 * endpoint (not per store) because a turn waits for its HTTP attempts: a receiver that hangs then only delays
 * its own queue, never another endpoint's, even within one store.
 *
 * Woken by the durable reminder `deliverDue` (re-armed at the earliest pending `next_attempt_at` at the end of
 * every turn, and inserted by the outbox fan-out in the same transaction as the deliveries it creates) and by
 * `deliverDue` messages the dispatcher sends right after a fan-out, so a new event goes out within ~200 ms.
 *
 * A turn claims what is due (a lease, the attempt counted) and commits; then the attempts are sent (SSRF-vetted
 * again, signed, per-attempt timeout, bounded concurrency), and a `record` turn stores every outcome, the breaker
 * and the next reminder in ONE transaction. If the process dies after sending and before that commit, the attempt
 * is simply made again after the lease: delivery is at-least-once and receivers deduplicate by `X-Webhook-Id` (the
 * event id, stable across retries and redeliveries). The attempt was counted by the committed claim, so such a
 * resend says `X-Webhook-Attempt: 2` (audit Z-3), and a lost 15th attempt is dead-lettered, not sent again.
 *
 * An endpoint that stays down is disabled: a failed attempt recorded DISABLE_AFTER_FAILING_MS (5 days) or more after
 * the first failure of its streak (no 2xx since) disables it in the same `record` turn. A streak is ended by a 2xx,
 * or by quiet: a new event's first attempt failing after the endpoint was owed nothing for STREAK_QUIET_MS (6 h)
 * starts a new streak (review X-3). Its open deliveries are
 * dead-lettered (kept for `redeliver` after re-enabling, aged by retention), its reminder is cancelled, and the
 * fan-out (dispatcher.ts) creates no delivery for it until the merchant enables it again (`enable`: breaker and streak
 * reset; what was not fanned out meanwhile is not replayed).
 */
import type { Sql } from "../../infra/db.ts";
import { defineActor, type ActorContext, type AnyActorDefinition } from "../runtime/define-actor.ts";
import { fail } from "../runtime/errors.ts";
import { attemptDelivery, openWebhookSecret, webhookRuntime } from "./deliver.ts";
import {
  DeliverDue,
  DisableEndpoint,
  EnableEndpoint,
  RecordAttempts,
  Redeliver,
  RegisterEndpoint,
  RemoveEndpoint,
  RotateSecret,
  type DeliverDueResult,
  type DeliveryView,
  type EndpointView,
} from "./messages.ts";
import {
  breakerAllows,
  breakerOnFailure,
  breakerOnSuccess,
  breakerProbeLostAt,
  CLOSED_BREAKER,
  DISABLE_AFTER_FAILING_MS,
  MAX_ATTEMPTS,
  nextAttempt,
  RETRY_HORIZON_MS,
  STREAK_QUIET_MS,
  streakAfter,
  streakDisables,
  type BreakerState,
} from "./schedule.ts";

/** At most this many attempts to one endpoint are in flight at once. */
export const DELIVERY_CONCURRENCY = 32;
const DELIVERY_BATCH = DELIVERY_CONCURRENCY;
/** A claimed delivery is leased for the attempt timeout plus this; then it is due again (at-least-once). */
const LEASE_MARGIN_MS = 30_000;
const self: { def?: AnyActorDefinition } = {};

type State = Record<string, never>;

interface EndpointRow {
  id: string;
  store_slug: string;
  url: string;
  events: string[];
  secret_sealed: string;
  previous_secret_sealed: string | null;
  previous_secret_expires_at: Date | null;
  breaker: BreakerState;
  created_at: Date;
  deleted_at: Date | null;
  failing_since: Date | null;
  disabled_at: Date | null;
  disabled_reason: string | null;
}

/** The columns of an EndpointRow, for every read and RETURNING of an endpoint (here and gateway/rest/webhooks.ts). */
export const ENDPOINT_COLUMNS = `id, store_slug, url, events, secret_sealed, previous_secret_sealed, previous_secret_expires_at, breaker, created_at,
  deleted_at, failing_since, disabled_at, disabled_reason`;

interface DeliveryRow {
  id: string;
  event_id: string;
  endpoint_id: string;
  kind: string;
  status: DeliveryView["status"];
  attempts: number;
  next_attempt_at: Date | null;
  first_attempt_at: Date | null;
  last_attempt_at: Date | null;
  last_status_code: number | null;
  last_error: string | null;
  delivered_at: Date | null;
  created_at: Date;
}

const iso = (d: Date | null) => (d ? d.toISOString() : null);

export function endpointView(r: EndpointRow): EndpointView {
  return {
    id: r.id,
    storeSlug: r.store_slug,
    url: r.url,
    events: r.events,
    createdAt: r.created_at.toISOString(),
    previousSecretExpiresAt: iso(r.previous_secret_expires_at),
    breaker: r.breaker.status,
    enabled: r.disabled_at === null,
    disabledAt: iso(r.disabled_at),
    disabledReason: r.disabled_reason,
    failingSince: iso(r.failing_since),
  };
}

export function deliveryView(r: DeliveryRow): DeliveryView {
  return {
    id: r.id,
    eventId: r.event_id,
    event: r.kind,
    status: r.status,
    attempts: r.attempts,
    nextAttemptAt: iso(r.next_attempt_at),
    lastAttemptAt: iso(r.last_attempt_at),
    lastStatusCode: r.last_status_code,
    lastError: r.last_error,
    deliveredAt: iso(r.delivered_at),
    createdAt: r.created_at.toISOString(),
  };
}

export const DELIVERY_COLUMNS = `d.id, d.event_id, d.endpoint_id, e.kind, d.status, d.attempts, d.next_attempt_at, d.first_attempt_at,
  d.last_attempt_at, d.last_status_code, d.last_error, d.delivered_at, d.created_at`;

async function loadEndpoint(sql: Sql, id: string): Promise<EndpointRow | undefined> {
  const rows = await sql<EndpointRow[]>`SELECT ${sql.unsafe(ENDPOINT_COLUMNS)} FROM webhook_endpoints WHERE id = ${id}`;
  return rows[0];
}

/**
 * Whether this activation is the endpoint's own. Audit M-5: the id is the actor's key and the sealed secret's AAD,
 * both compared as text, while the uuid column matches any letter case; an upper-case id from a route made a second
 * activation `webhook/<ID>` that claimed the same deliveries beside `webhook/<id>` (its own in-flight count, breaking
 * one writer per endpoint) and sealed secrets no claim could open. The gateway now passes the row's id
 * (gateway/rest/webhooks.ts `endpointIdOf`); this refuses any other spelling, so such a copy never writes.
 */
function assertCanonicalId(ctx: ActorContext<State>): void {
  if (ctx.id !== ctx.id.toLowerCase()) throw fail("internal_error", "A webhook endpoint's actor id must be its lower-case UUID.");
}

/** Whether this actor can open a sealed secret for its deliveries (sealed for its id, under this SECRET_KEY). */
function opens(ctx: ActorContext<State>, sealed: string): boolean {
  const key = webhookRuntime().secretsKey;
  try {
    openWebhookSecret(key, ctx.id, sealed);
    return true;
  } catch {
    return false;
  }
}

/** Refuses a sealed secret this actor could not open for its deliveries (wrong id or another SECRET_KEY): M-5. */
function assertOpens(ctx: ActorContext<State>, sealed: string): void {
  if (!opens(ctx, sealed)) throw fail("internal_error", "The webhook secret was not sealed for this endpoint; nothing was changed.");
}

async function liveEndpoint(ctx: ActorContext<State>): Promise<EndpointRow> {
  assertCanonicalId(ctx);
  const ep = await loadEndpoint(await ctx.tx(), ctx.id);
  if (!ep || ep.deleted_at) throw fail("not_found", "No such webhook endpoint.");
  return ep;
}

/** Re-arms `deliverDue` at the earliest open delivery, or cancels it. Returns whether something is due now. */
async function rearm(ctx: ActorContext<State>, now: number): Promise<boolean> {
  const tx = await ctx.tx();
  const [row] = await tx<{ next: Date | null }[]>`
    SELECT min(next_attempt_at) AS next FROM webhook_deliveries WHERE endpoint_id = ${ctx.id} AND status IN ('pending', 'failed')`;
  if (!row?.next) {
    await ctx.cancelReminder("deliverDue");
    return false;
  }
  const at = Math.max(row.next.getTime(), now);
  await ctx.schedule("deliverDue", at, {});
  return at <= now;
}

interface Outcome {
  id: string;
  status: DeliveryView["status"];
  attempts: number;
  /** This attempt's number (the attempt log's key): `attempts` unless a later claim of the delivery counted more. */
  attempt: number;
  next_attempt_at: string | null;
  first_attempt_at: string;
  last_attempt_at: string;
  last_status_code: number | null;
  last_error: string | null;
  delivered_at: string | null;
  /** When it became delivered or dead (retention ages a finished delivery from it, migration 0086); null while failed. */
  finished_at: string | null;
  duration_ms: number;
}

/** What a worker reports back for one attempt. */
interface AttemptReport {
  id: string;
  /** The attempt's number (X-Webhook-Attempt), counted at the claim; absent in reports of an older worker. */
  attempt?: number;
  sentAt: number;
  doneAt: number;
  statusCode: number | null;
  error: string | null;
  delivered: boolean;
  durationMs: number;
}

/**
 * Claims what is due (breaker permitting), leases it so no other turn claims it again, and starts the HTTP
 * attempts OUTSIDE the turn: a turn never waits for a receiver, so a hanging receiver can delay neither this
 * actor's other messages nor the host's reminder poll. The worker reports with a `record` message; if the
 * process dies first, the lease runs out and the deliveries are claimed again (at-least-once).
 *
 * The claim counts the attempt (attempts + 1, first/last attempt time) in the same commit as the lease, and that
 * commit (a checkpoint) precedes every send: an attempt whose outcome is never recorded (the host killed) still
 * counts, so the resend after the lease carries the next X-Webhook-Attempt, counts toward the 15-attempt limit, and
 * the delivery list shows every attempt made (audit Z-3: the record turn counted it, so a crash resend said attempt 1
 * again). What is due but at the cap or past the horizon is dead-lettered in the same turn instead of claimed.
 */
async function claimDue(ctx: ActorContext<State>): Promise<DeliverDueResult> {
  const result: DeliverDueResult = { claimed: 0, more: false };
  const rt = webhookRuntime();
  const now = ctx.now();
  // Read in the turn's transaction: after a `record` turn this must see the breaker that turn just wrote (a probe's
  // success closed it), not the committed one (still half-open), or the released backlog would be pushed again.
  const ep = await loadEndpoint(await ctx.tx(), ctx.id);
  // A copy under another spelling of the id (M-5; its reminder may predate the fix) claims nothing and stops.
  if (!ep || ep.deleted_at || ep.id !== ctx.id) {
    await ctx.cancelReminder("deliverDue");
    return result;
  }
  // Disabled: nothing is sent. A delivery can still be open here if a fan-out read the endpoint just before the
  // disabling turn committed; it is dead-lettered like the ones the disabling found.
  if (ep.disabled_at) {
    await stopDeliveries(ctx, now);
    return result;
  }
  const inFlight = (ctx.memory.get("inFlight") as number | undefined) ?? 0;
  const room = DELIVERY_CONCURRENCY - inFlight;
  if (room <= 0) return result; // the running worker's `record` claims the next ones
  const tx = await ctx.tx();
  await deadLetterUnclaimable(tx, ctx.id, now);
  let breaker: BreakerState = ep.breaker ?? CLOSED_BREAKER;
  const decision = breakerAllows(breaker, now);
  if (!decision.allowed) {
    await holdForBreaker(tx, ctx.id, now, decision.retryAt!);
    await rearm(ctx, now);
    return result;
  }
  if (JSON.stringify(decision.state) !== JSON.stringify(breaker)) {
    breaker = decision.state;
    await tx`UPDATE webhook_endpoints SET breaker = ${tx.json(breaker as never)} WHERE id = ${ctx.id}`;
  }
  const limit = breaker.status === "half_open" ? 1 : Math.min(room, DELIVERY_BATCH);
  const timeoutMs = rt.attemptTimeoutMs;
  const leaseUntil = new Date(now + timeoutMs + LEASE_MARGIN_MS);
  const due = await tx<(DeliveryRow & { body: string })[]>`
    WITH c AS (
      SELECT d.id FROM webhook_deliveries d
      WHERE d.endpoint_id = ${ctx.id} AND d.status IN ('pending', 'failed') AND d.next_attempt_at <= ${new Date(now)}
      ORDER BY d.next_attempt_at, d.created_at LIMIT ${limit}
    ), u AS (
      UPDATE webhook_deliveries w SET next_attempt_at = ${leaseUntil}, attempts = w.attempts + 1,
        first_attempt_at = COALESCE(w.first_attempt_at, ${new Date(now)}), last_attempt_at = ${new Date(now)}
      FROM c WHERE w.id = c.id RETURNING w.*
    )
    SELECT d.id, d.event_id, d.endpoint_id, e.kind, d.status, d.attempts, d.first_attempt_at, e.payload::text AS body
    FROM u d JOIN webhook_events e ON e.id = d.event_id
    ORDER BY d.created_at`;
  result.claimed = due.length;
  await rearm(ctx, now);
  if (due.length === 0) return result;
  // opened before the commit: a secret that cannot be opened fails the turn and rolls the claim back
  const secrets = [openWebhookSecret(rt.secretsKey, ep.id, ep.secret_sealed)];
  if (ep.previous_secret_sealed && ep.previous_secret_expires_at && ep.previous_secret_expires_at.getTime() > now) {
    secrets.push(openWebhookSecret(rt.secretsKey, ep.id, ep.previous_secret_sealed));
  }
  // The claim (lease and attempt count) commits BEFORE anything is sent (review RS-2: the sends started inside the
  // turn, before its commit, so a host dying in that window undid the count, and a failed commit left a send with no
  // lease, which another claim could then send again at the same time). If this commit fails, nothing is sent.
  await ctx.checkpoint();
  ctx.memory.set("inFlight", inFlight + due.length);
  const inFlightIds = (ctx.memory.get("inFlightIds") as Set<string> | undefined) ?? new Set<string>();
  for (const d of due) inFlightIds.add(d.id);
  ctx.memory.set("inFlightIds", inFlightIds);
  const clock = { now: () => ctx.now() };
  const id = ctx.id;
  const ask = ctx.ask.bind(ctx);
  const memory = ctx.memory;
  // Started now, reported later; not awaited by this turn.
  void (async () => {
    const sentAt = clock.now();
    const reports: AttemptReport[] = await Promise.all(
      due.map(async (d) => {
        const r = await attemptDelivery({
          url: ep.url,
          eventId: d.event_id,
          eventKind: d.kind,
          body: d.body,
          attempt: d.attempts,
          secrets,
          timestampSec: Math.floor(sentAt / 1000),
          timeoutMs,
          allowPrivate: rt.allowPrivate,
          resolve: rt.resolve,
        });
        return { id: d.id, attempt: d.attempts, sentAt, doneAt: clock.now(), ...r };
      }),
    );
    try {
      // The record turn frees the room and claims what is due next, in the same turn.
      await ask(self.def!, id, "record", { reports }, { timeoutMs: 60_000 });
    } catch {
      // Not recorded: the lease expires and the deliveries are attempted again (same event id).
      memory.set("inFlight", Math.max(0, ((memory.get("inFlight") as number | undefined) ?? 0) - due.length));
      for (const d of due) (memory.get("inFlightIds") as Set<string> | undefined)?.delete(d.id);
      void ask(self.def!, id, "deliverDue", {}, { timeoutMs: 60_000 }).catch(() => {});
    }
  })();
  return result;
}

/**
 * Due deliveries that may not be attempted again are dead-lettered instead of claimed: the cap and the horizon are
 * otherwise applied only by `record`, which a killed host never runs, so a lost 15th attempt was sent again as
 * attempt 16, and a crash loop never dead-lettered (review RS-1). A due row already at the cap can only be one whose
 * last attempt's outcome was lost (`record` dead-letters it otherwise). Past the horizon: nothing is retried later
 * than 72 h after the first attempt, whether the lateness comes from a lost attempt or the breaker's hold.
 */
async function deadLetterUnclaimable(tx: Sql, endpointId: string, now: number): Promise<void> {
  await tx`
    UPDATE webhook_deliveries SET status = 'dead', next_attempt_at = NULL, finished_at = ${new Date(now)},
      last_error = CASE WHEN attempts >= ${MAX_ATTEMPTS}
        THEN 'outcome of attempt ' || attempts || ' lost; dead-lettered (max_attempts)'
        ELSE ${HORIZON_ERROR} END
    WHERE endpoint_id = ${endpointId} AND status IN ('pending', 'failed') AND next_attempt_at <= ${new Date(now)}
      AND (attempts >= ${MAX_ATTEMPTS} OR next_attempt_at > first_attempt_at + ${`${RETRY_HORIZON_MS} milliseconds`}::interval)`;
}
// The due time, not the claim's time, is compared with the horizon: a retry `record` scheduled just inside it is
// still sent however late the reminder poll claims it.
const HORIZON_ERROR = `not due again within ${RETRY_HORIZON_MS / 3_600_000} h of the first attempt; dead-lettered (horizon)`;
const HELD_HORIZON_ERROR = `never attempted within ${RETRY_HORIZON_MS / 3_600_000} h: the endpoint's circuit breaker stayed open; dead-lettered (horizon)`;

/**
 * Breaker open (or a probe out): what is due waits for the reopen time `retryAt` without using up attempts, and
 * what that wait would take past the 72 h horizon is dead-lettered now instead (as `record` does with a retry).
 *
 * Audit M-3: the horizon counted only from `first_attempt_at`, so a delivery made while the breaker was open (no
 * attempt, first_attempt_at NULL) was never dead-lettered: an endpoint that stayed down got one probe an hour and
 * kept every other event pending for ever (never deleted by retention, pushed again by every cool-down, and sent
 * weeks late if the receiver came back). The first hold now starts the delivery's horizon clock: first_attempt_at
 * is set to when it was first due (its due time, at most now), which is when its first attempt would have been
 * made. A claim then keeps that time (COALESCE), so a held delivery that is attempted later still dies 72 h after
 * it was first due, and `redeliver` (first_attempt_at NULL) still starts a fresh cycle. Its creation time is not
 * used: it is the database's clock, not the service clock every other delivery time uses, and a delivery that was
 * never due while the endpoint was down (our own outage) should still be tried. In the SET, every column read is
 * the row's value before this update.
 */
async function holdForBreaker(tx: Sql, endpointId: string, now: number, retryAtMs: number): Promise<void> {
  const retryAt = new Date(retryAtMs);
  const at = new Date(now);
  const since = tx`COALESCE(first_attempt_at, LEAST(next_attempt_at, ${at}))`;
  const pastHorizon = tx`${retryAt} > ${since} + ${`${RETRY_HORIZON_MS} milliseconds`}::interval`;
  await tx`
    UPDATE webhook_deliveries SET
      first_attempt_at = ${since},
      status = CASE WHEN ${pastHorizon} THEN 'dead' ELSE status END,
      next_attempt_at = CASE WHEN ${pastHorizon} THEN NULL ELSE ${retryAt} END,
      finished_at = CASE WHEN ${pastHorizon} THEN ${at} ELSE finished_at END,
      last_error = CASE WHEN NOT (${pastHorizon}) THEN last_error WHEN attempts = 0 THEN ${HELD_HORIZON_ERROR} ELSE ${HORIZON_ERROR} END
    WHERE endpoint_id = ${endpointId} AND status IN ('pending', 'failed') AND next_attempt_at < ${retryAt}`;
}

const DISABLED_ERROR = "endpoint disabled; dead-lettered (disabled)";
const days = (ms: number) => `${ms / 86_400_000} day${ms === 86_400_000 ? "" : "s"}`;

/**
 * Stops a disabled endpoint's deliveries: the open ones are dead-lettered (their last error kept, `endpoint disabled`
 * appended) and its reminder is cancelled, so nothing probes it any more. Finished now, so retention keeps them for
 * `redeliver` as long as any dead delivery (30 days). An attempt still in flight is included: its late outcome finds
 * the delivery finished and is not recorded (a 2xx it may have had is not lost to the receiver, only to the list).
 */
async function stopDeliveries(ctx: ActorContext<State>, now: number): Promise<void> {
  const tx = await ctx.tx();
  await tx`
    UPDATE webhook_deliveries SET status = 'dead', next_attempt_at = NULL, finished_at = ${new Date(now)},
      last_error = COALESCE(last_error || '; ', '') || ${DISABLED_ERROR}
    WHERE endpoint_id = ${ctx.id} AND status IN ('pending', 'failed')`;
  await ctx.cancelReminder("deliverDue");
}

/** What the structured log lines about an endpoint carry: never its URL's path or query (they may hold a token). */
function endpointLogFields(ep: EndpointRow): Record<string, unknown> {
  let host = "";
  try {
    host = new URL(ep.url).host;
  } catch {
    // a stored URL was vetted at registration; an unparsable one is logged without a host
  }
  return { endpointId: ep.id, store: ep.store_slug, host };
}

/**
 * The latest time an open or half-open breaker may have pushed deliveries to (`breakerAllows`' retryAt), or null
 * for a closed breaker (it holds nothing back).
 */
function heldUntil(b: BreakerState): number | null {
  if (b.status === "open") return b.openedAt + b.cooldownMs;
  if (b.status === "half_open") return breakerProbeLostAt(b);
  return null;
}

/**
 * The breaker just closed (the probe, or a late attempt, succeeded): the receiver works, so what it held back is
 * due now instead of at the reopen time it was pushed to (audit A2 MED-5: the backlog waited a full cool-down,
 * 5 min to 1 h, while newer events went first). Due at its creation time, so the claim's order (due time, then
 * creation) sends it oldest first and before anything newer.
 */
async function releaseBacklog(ctx: ActorContext<State>, heldUntilMs: number, justRecorded: readonly string[]): Promise<void> {
  const tx = await ctx.tx();
  // Attempts still in flight keep their lease; those just recorded keep the outcome this turn gave them.
  const inFlight = [...((ctx.memory.get("inFlightIds") as Set<string> | undefined) ?? []), ...justRecorded];
  await tx`
    UPDATE webhook_deliveries SET next_attempt_at = LEAST(next_attempt_at, created_at)
    WHERE endpoint_id = ${ctx.id} AND status IN ('pending', 'failed') AND next_attempt_at <= ${new Date(heldUntilMs)}
      AND NOT (id = ANY(${inFlight}::uuid[]))`;
}

/** Applies a worker's attempt reports: delivered, retry at the next jittered time, or dead letter; breaker. */
async function recordAttempts(ctx: ActorContext<State>, reports: AttemptReport[]): Promise<{ recorded: number }> {
  ctx.memory.set("inFlight", Math.max(0, ((ctx.memory.get("inFlight") as number | undefined) ?? 0) - reports.length));
  for (const r of reports) (ctx.memory.get("inFlightIds") as Set<string> | undefined)?.delete(r.id);
  const tx = await ctx.tx();
  const ep = await loadEndpoint(tx, ctx.id);
  if (!ep || ep.id !== ctx.id) return { recorded: 0 };
  const ids = reports.map((r) => r.id);
  const rows = await tx<{ id: string; attempts: number; first_attempt_at: Date | null }[]>`
    SELECT id, attempts, first_attempt_at FROM webhook_deliveries
    WHERE endpoint_id = ${ctx.id} AND id IN ${tx(ids)} AND status IN ('pending', 'failed') FOR UPDATE`;
  const byId = new Map(rows.map((r) => [r.id, r]));
  let breaker: BreakerState = ep.breaker ?? CLOSED_BREAKER;
  const initialBreaker = JSON.stringify(breaker);
  // The failure streak: a 2xx ends it, a failure starts it when none runs (stored with the breaker, same statement).
  const initialFailingSince = ep.failing_since?.getTime() ?? null;
  let failingSince = initialFailingSince;
  let lastFailure: AttemptReport | null = null;
  let quietChecked = false;
  const outcomes: Outcome[] = [];
  for (const r of [...reports].sort((a, b) => a.doneAt - b.doneAt)) {
    const row = byId.get(r.id);
    if (!row) continue; // deleted or disabled endpoint, or redelivered meanwhile
    // Counted when claimed (a report without `attempt` comes from a worker whose claim did not count it). A report
    // of the cycle before a manual redeliver (attempts reset to 0) is still one attempt made.
    const attempts = r.attempt === undefined ? row.attempts + 1 : Math.max(row.attempts, 1);
    // Silence ends a streak (review X-3): a new event's first attempt failing after the endpoint was owed nothing for
    // STREAK_QUIET_MS starts a new one. A retry's delivery was open all along, so only a first attempt can follow
    // quiet; asked once per turn (the answer is the same for the turn's other first attempts).
    if (!r.delivered && failingSince !== null && attempts === 1 && !quietChecked) {
      quietChecked = true;
      if (await quietBefore(tx, ctx.id, r.id, r.sentAt)) failingSince = null;
    }
    failingSince = streakAfter(failingSince, r.delivered, r.doneAt);
    if (!r.delivered) lastFailure = r;
    const first = row.first_attempt_at?.getTime() ?? r.sentAt;
    const base = {
      id: r.id,
      attempts,
      attempt: r.attempt ?? attempts,
      first_attempt_at: new Date(first).toISOString(),
      last_attempt_at: new Date(r.sentAt).toISOString(),
      last_status_code: r.statusCode,
      duration_ms: r.durationMs,
    };
    if (r.delivered) {
      breaker = breakerOnSuccess(breaker);
      const done = new Date(r.doneAt).toISOString();
      outcomes.push({ ...base, status: "delivered", next_attempt_at: null, last_error: null, delivered_at: done, finished_at: done });
      continue;
    }
    breaker = breakerOnFailure(breaker, r.doneAt);
    const step = nextAttempt({ attemptsMade: attempts, firstAttemptAt: first, now: r.doneAt });
    if (step.kind === "retry") {
      outcomes.push({ ...base, status: "failed", next_attempt_at: new Date(step.at).toISOString(), last_error: r.error, delivered_at: null, finished_at: null });
    } else {
      outcomes.push({ ...base, status: "dead", next_attempt_at: null, last_error: `${r.error ?? "failed"}; dead-lettered (${step.reason})`, delivered_at: null, finished_at: new Date(r.doneAt).toISOString() });
    }
  }
  if (outcomes.length) {
    await tx`
      UPDATE webhook_deliveries d SET status = v.status, attempts = v.attempts, next_attempt_at = v.next_attempt_at,
        first_attempt_at = v.first_attempt_at, last_attempt_at = v.last_attempt_at, last_status_code = v.last_status_code,
        last_error = v.last_error, delivered_at = v.delivered_at, finished_at = v.finished_at
      FROM jsonb_to_recordset(${tx.json(outcomes as never)}) AS v(id uuid, status text, attempts int, next_attempt_at timestamptz,
        first_attempt_at timestamptz, last_attempt_at timestamptz, last_status_code int, last_error text, delivered_at timestamptz,
        finished_at timestamptz)
      WHERE d.id = v.id AND d.endpoint_id = ${ctx.id}`;
    await tx`
      INSERT INTO webhook_delivery_attempts (delivery_id, attempt, attempted_at, status_code, error, duration_ms)
      SELECT v.id, v.attempt, v.last_attempt_at, v.last_status_code, v.last_error, v.duration_ms
      FROM jsonb_to_recordset(${tx.json(outcomes as never)}) AS v(id uuid, attempt int, last_attempt_at timestamptz,
        last_status_code int, last_error text, duration_ms int)
      ON CONFLICT DO NOTHING`;
  }
  // No 2xx for the whole period and this turn's last outcome a failure: the endpoint is disabled now. Judged on a
  // failure just recorded, never on the age of the streak alone: an endpoint not tried for days (no events) may work.
  const disable = ep.disabled_at === null && lastFailure !== null && streakDisables(failingSince, lastFailure.doneAt);
  const now = ctx.now();
  const reason = disable
    ? `No 2xx answer for ${days(DISABLE_AFTER_FAILING_MS)}: failing since ${new Date(failingSince!).toISOString()}; last attempt: ${lastFailure!.error ?? "failed"}.`
    : null;
  const breakerChanged = JSON.stringify(breaker) !== initialBreaker;
  if (breakerChanged || failingSince !== initialFailingSince || disable) {
    // One statement for the breaker, the streak and a disabling (the turn wrote the breaker alone before: no more
    // statements on the hot path; a success on a healthy endpoint still writes nothing here).
    await tx`
      UPDATE webhook_endpoints SET breaker = ${tx.json(breaker as never)},
        failing_since = ${failingSince === null ? null : new Date(failingSince)},
        disabled_at = COALESCE(disabled_at, ${disable ? new Date(now) : null}), disabled_reason = COALESCE(disabled_reason, ${reason})
      WHERE id = ${ctx.id}`;
  }
  if (disable) {
    await stopDeliveries(ctx, now);
    // Logged once the disabling has committed, so the warning never reports a rolled-back turn.
    await ctx.checkpoint();
    ctx.log.warn("webhook endpoint disabled: it failed continuously for the disable period", {
      ...endpointLogFields(ep),
      failingSince: new Date(failingSince!).toISOString(),
      disabledAt: new Date(now).toISOString(),
      periodMs: DISABLE_AFTER_FAILING_MS,
      lastStatusCode: lastFailure!.statusCode,
      lastError: lastFailure!.error,
    });
    return { recorded: outcomes.length };
  }
  if (breakerChanged) {
    const held = heldUntil(JSON.parse(initialBreaker) as BreakerState);
    if (breaker.status === "closed" && held !== null) await releaseBacklog(ctx, held, ids);
  }
  await claimDue(ctx);
  return { recorded: outcomes.length };
}

/**
 * Whether the endpoint was owed nothing for STREAK_QUIET_MS before `sentAt` (the first attempt of delivery
 * `deliveryId`): no other delivery open that was due before it (attempted, or held by the breaker, which sets
 * first_attempt_at), and none finished within the period. Service-clock columns only (created_at is the database's
 * clock). Runs only on a failed first attempt during a streak; newest first, so a failing busy endpoint stops at
 * its first row, and only a quiet one reads its deliveries back to retention's 30 days.
 */
async function quietBefore(tx: Sql, endpointId: string, deliveryId: string, sentAt: number): Promise<boolean> {
  const since = new Date(sentAt - STREAK_QUIET_MS);
  const owed = await tx`
    SELECT 1 FROM webhook_deliveries
    WHERE endpoint_id = ${endpointId} AND id <> ${deliveryId} AND (
      (status IN ('pending', 'failed') AND first_attempt_at < ${new Date(sentAt)})
      OR (status IN ('delivered', 'dead') AND COALESCE(finished_at, delivered_at, last_attempt_at) > ${since}))
    ORDER BY created_at DESC LIMIT 1`;
  return owed.length === 0;
}

const MANUAL_REASON = "Disabled by the merchant.";

/** Live endpoints a store may have (docs/webhooks.md). */
export const MAX_ENDPOINTS_PER_STORE = 20;
/**
 * First key of the two-key advisory lock `register` takes per store (the second is the slug's hash), as its turn's
 * first statement. Migration 0100's outbox trigger takes the same lock in shared, non-waiting form to mark an event of
 * an endpoint-less store dispatched (review X-1): changing the key, or taking another lock before it here, brings X-1
 * back or adds waits (test/http/webhook-endpoint-created-mid-order.test.ts catches a key change).
 */
const WEBHOOK_CAP_LOCK = 0x5eb0;

export const webhookActor = defineActor({
  kind: "webhook",
  initialState: (): State => ({}),
  messages: {
    record: RecordAttempts,
    register: RegisterEndpoint,
    rotateSecret: RotateSecret,
    remove: RemoveEndpoint,
    enable: EnableEndpoint,
    disable: DisableEndpoint,
    redeliver: Redeliver,
    deliverDue: DeliverDue,
  },
  handlers: {
    async register(ctx, m): Promise<EndpointView> {
      assertCanonicalId(ctx);
      assertOpens(ctx, m.secretSealed);
      const tx = await ctx.tx();
      // Each endpoint is its own actor, so nothing else serialises two creations in one store: the cap is counted
      // and the row inserted under a per-store lock held to the turn's commit (audit A3-4: counted in the gateway,
      // 30 concurrent creations made 28 endpoints).
      await tx`SELECT pg_advisory_xact_lock(${WEBHOOK_CAP_LOCK}, hashtext(${m.storeSlug}))`;
      const [{ n }] = await tx<{ n: number }[]>`
        SELECT count(*)::int AS n FROM webhook_endpoints WHERE store_slug = ${m.storeSlug} AND deleted_at IS NULL`;
      if (n >= MAX_ENDPOINTS_PER_STORE) throw fail("conflict", `A store may have at most ${MAX_ENDPOINTS_PER_STORE} webhook endpoints.`);
      const rows = await tx<EndpointRow[]>`
        INSERT INTO webhook_endpoints (id, store_slug, url, events, secret_sealed, created_by, created_at)
        VALUES (${ctx.id}, ${m.storeSlug}, ${m.url}, ${[...new Set(m.events)]}, ${m.secretSealed}, ${m.createdBy}, ${new Date(ctx.now())})
        ON CONFLICT (id) DO NOTHING
        RETURNING ${tx.unsafe(ENDPOINT_COLUMNS)}`;
      if (!rows[0]) throw fail("conflict", "A webhook endpoint with this id exists.");
      return endpointView(rows[0]);
    },

    async rotateSecret(ctx, m): Promise<EndpointView> {
      const ep = await liveEndpoint(ctx);
      // A secret every later claim would fail to open stops the endpoint for good after a 200 (M-5): refuse it here.
      assertOpens(ctx, m.secretSealed);
      const tx = await ctx.tx();
      // The replaced secret keeps signing only if a claim can open it: one sealed under another spelling of the id
      // before the M-5 fix failed every claim, and kept as the previous secret it would go on failing them for the
      // whole overlap. Dropping it lets one rotation (any overlap) repair such an endpoint; it never signed anything.
      const expires = m.overlapMs > 0 && opens(ctx, ep.secret_sealed) ? new Date(ctx.now() + m.overlapMs) : null;
      const [row] = await tx<EndpointRow[]>`
        UPDATE webhook_endpoints SET previous_secret_sealed = ${expires ? ep.secret_sealed : null},
          previous_secret_expires_at = ${expires}, secret_sealed = ${m.secretSealed}
        WHERE id = ${ctx.id}
        RETURNING ${tx.unsafe(ENDPOINT_COLUMNS)}`;
      return endpointView(row!);
    },

    async remove(ctx): Promise<EndpointView> {
      await liveEndpoint(ctx);
      const tx = await ctx.tx();
      const now = new Date(ctx.now());
      const [row] = await tx<EndpointRow[]>`
        UPDATE webhook_endpoints SET deleted_at = ${now}, previous_secret_sealed = NULL, previous_secret_expires_at = NULL
        WHERE id = ${ctx.id}
        RETURNING ${tx.unsafe(ENDPOINT_COLUMNS)}`;
      await tx`UPDATE webhook_deliveries SET status = 'dead', next_attempt_at = NULL, last_error = 'endpoint deleted', finished_at = ${now}
               WHERE endpoint_id = ${ctx.id} AND status IN ('pending', 'failed')`;
      await ctx.cancelReminder("deliverDue");
      return endpointView(row!);
    },

    /**
     * The merchant turns a disabled endpoint back on: the breaker closes and the failure streak restarts (the next
     * failure starts a new 5-day period). Events fanned out while it was disabled never had a delivery for it and are
     * not replayed; its dead deliveries can be redelivered. An enabled endpoint is answered as it is.
     */
    async enable(ctx): Promise<EndpointView> {
      const ep = await liveEndpoint(ctx);
      if (!ep.disabled_at) return endpointView(ep);
      const tx = await ctx.tx();
      const [row] = await tx<EndpointRow[]>`
        UPDATE webhook_endpoints SET disabled_at = NULL, disabled_reason = NULL, failing_since = NULL, breaker = ${tx.json(CLOSED_BREAKER as never)}
        WHERE id = ${ctx.id}
        RETURNING ${tx.unsafe(ENDPOINT_COLUMNS)}`;
      ctx.log.info("webhook endpoint enabled", { ...endpointLogFields(ep), disabledAt: iso(ep.disabled_at) });
      return endpointView(row!);
    },

    /** The merchant turns an endpoint off, as the service does after the failure period. A disabled one is answered as it is. */
    async disable(ctx): Promise<EndpointView> {
      const ep = await liveEndpoint(ctx);
      if (ep.disabled_at) return endpointView(ep);
      const tx = await ctx.tx();
      const now = ctx.now();
      const [row] = await tx<EndpointRow[]>`
        UPDATE webhook_endpoints SET disabled_at = ${new Date(now)}, disabled_reason = ${MANUAL_REASON}
        WHERE id = ${ctx.id}
        RETURNING ${tx.unsafe(ENDPOINT_COLUMNS)}`;
      await stopDeliveries(ctx, now);
      ctx.log.info("webhook endpoint disabled by the merchant", endpointLogFields(ep));
      return endpointView(row!);
    },

    /**
     * Manual replay: the delivery starts a fresh retry cycle (attempts and the 72 h horizon reset; the attempt
     * log keeps the history) with the SAME event id. Asking for it also closes the endpoint's breaker: the
     * merchant says the receiver works again. A disabled endpoint refuses it (409): enable it first.
     */
    async redeliver(ctx, m): Promise<DeliveryView> {
      const ep = await liveEndpoint(ctx);
      if (ep.disabled_at) throw fail("conflict", "The webhook endpoint is disabled: enable it first, then redeliver.");
      const tx = await ctx.tx();
      const now = new Date(ctx.now());
      const updated = await tx`
        UPDATE webhook_deliveries SET status = 'pending', attempts = 0, first_attempt_at = NULL, next_attempt_at = ${now}, delivered_at = NULL,
          -- no longer finished: a host of an earlier version finishing it would otherwise leave its death's time to age it
          finished_at = NULL
        WHERE id = ${m.deliveryId} AND endpoint_id = ${ctx.id}`;
      if (updated.count !== 1) throw fail("not_found", "No such delivery for this webhook endpoint.");
      await tx`UPDATE webhook_endpoints SET breaker = ${tx.json(CLOSED_BREAKER as never)} WHERE id = ${ctx.id}`;
      await ctx.schedule("deliverDue", now.getTime(), {});
      const [row] = await tx<DeliveryRow[]>`
        SELECT ${tx.unsafe(DELIVERY_COLUMNS)} FROM webhook_deliveries d JOIN webhook_events e ON e.id = d.event_id WHERE d.id = ${m.deliveryId}`;
      return deliveryView(row!);
    },

    deliverDue: (ctx) => claimDue(ctx),
    record: (ctx, m) => recordAttempts(ctx, m.reports),
  },
  reminders: {
    async deliverDue(ctx) {
      await claimDue(ctx);
    },
  },
});
self.def = webhookActor;
