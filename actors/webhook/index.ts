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
 * A turn reads what is due, sends it (SSRF-vetted again, signed, per-attempt timeout, bounded concurrency), then
 * records every outcome, the breaker and the next reminder in ONE transaction. If the process dies after sending
 * and before that commit, the attempt is simply made again: delivery is at-least-once and receivers deduplicate
 * by `X-Webhook-Id` (the event id, stable across retries and redeliveries).
 */
import type { Sql } from "../../infra/db.ts";
import { defineActor, type ActorContext } from "../runtime/define-actor.ts";
import { fail } from "../runtime/errors.ts";
import { attemptDelivery, openWebhookSecret, webhookRuntime, type AttemptResult } from "./deliver.ts";
import {
  DeliverDue,
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
  CLOSED_BREAKER,
  nextAttempt,
  type BreakerState,
} from "./schedule.ts";

/** Deliveries read per turn, and how many attempts run at once within a turn. */
export const DELIVERY_BATCH = 200;
export const DELIVERY_CONCURRENCY = 16;
/** A turn starts no new chunk of attempts after this long, so other messages to the endpoint are not starved. */
const TURN_BUDGET_MS = 15_000;

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
}

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
  const rows = await sql<EndpointRow[]>`
    SELECT id, store_slug, url, events, secret_sealed, previous_secret_sealed, previous_secret_expires_at, breaker, created_at, deleted_at
    FROM webhook_endpoints WHERE id = ${id}`;
  return rows[0];
}

async function liveEndpoint(ctx: ActorContext<State>): Promise<EndpointRow> {
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
  next_attempt_at: string | null;
  first_attempt_at: string;
  last_attempt_at: string;
  last_status_code: number | null;
  last_error: string | null;
  delivered_at: string | null;
  duration_ms: number;
}

async function deliverDue(ctx: ActorContext<State>): Promise<DeliverDueResult> {
  const result: DeliverDueResult = { attempted: 0, delivered: 0, failed: 0, deadLettered: 0, more: false };
  const rt = webhookRuntime();
  const now = ctx.now();
  const ep = await loadEndpoint(ctx.sql, ctx.id);
  if (!ep || ep.deleted_at) {
    await ctx.cancelReminder("deliverDue");
    return result;
  }
  const due = await ctx.sql<(DeliveryRow & { body: string })[]>`
    SELECT ${ctx.sql.unsafe(DELIVERY_COLUMNS)}, e.payload::text AS body
    FROM webhook_deliveries d JOIN webhook_events e ON e.id = d.event_id
    WHERE d.endpoint_id = ${ctx.id} AND d.status IN ('pending', 'failed') AND d.next_attempt_at <= ${new Date(now)}
    ORDER BY d.next_attempt_at, d.created_at LIMIT ${DELIVERY_BATCH}`;

  let breaker: BreakerState = ep.breaker ?? CLOSED_BREAKER;
  const initialBreaker = JSON.stringify(breaker);
  const outcomes: Outcome[] = [];
  let deferUntil: number | undefined;

  if (due.length > 0) {
    const secrets = [openWebhookSecret(rt.secretsKey, ep.id, ep.secret_sealed)];
    if (ep.previous_secret_sealed && ep.previous_secret_expires_at && ep.previous_secret_expires_at.getTime() > now) {
      secrets.push(openWebhookSecret(rt.secretsKey, ep.id, ep.previous_secret_sealed));
    }
    const started = Date.now();
    let i = 0;
    while (i < due.length && Date.now() - started < TURN_BUDGET_MS) {
      const decision = breakerAllows(breaker, ctx.now());
      breaker = decision.state;
      if (!decision.allowed) {
        deferUntil = decision.retryAt;
        break;
      }
      // Half-open: exactly one probe; closed: a chunk in parallel.
      const size = breaker.status === "half_open" ? 1 : DELIVERY_CONCURRENCY;
      const chunk = due.slice(i, i + size);
      i += chunk.length;
      const sentAt = ctx.now();
      const results: AttemptResult[] = await Promise.all(
        chunk.map((d) =>
          attemptDelivery({
            url: ep.url,
            eventId: d.event_id,
            eventKind: d.kind,
            body: d.body,
            attempt: d.attempts + 1,
            secrets,
            timestampSec: Math.floor(sentAt / 1000),
            timeoutMs: rt.attemptTimeoutMs,
            allowPrivate: rt.allowPrivate,
            resolve: rt.resolve,
          }),
        ),
      );
      const doneAt = ctx.now();
      chunk.forEach((d, k) => {
        const r = results[k]!;
        const attempts = d.attempts + 1;
        const first = d.first_attempt_at?.getTime() ?? sentAt;
        const base = {
          id: d.id,
          attempts,
          first_attempt_at: new Date(first).toISOString(),
          last_attempt_at: new Date(sentAt).toISOString(),
          last_status_code: r.statusCode,
          duration_ms: r.durationMs,
        };
        result.attempted++;
        if (r.delivered) {
          breaker = breakerOnSuccess(breaker);
          result.delivered++;
          outcomes.push({ ...base, status: "delivered", next_attempt_at: null, last_error: null, delivered_at: new Date(doneAt).toISOString() });
          return;
        }
        breaker = breakerOnFailure(breaker, doneAt);
        const step = nextAttempt({ attemptsMade: attempts, firstAttemptAt: first, now: doneAt });
        if (step.kind === "retry") {
          result.failed++;
          outcomes.push({ ...base, status: "failed", next_attempt_at: new Date(step.at).toISOString(), last_error: r.error, delivered_at: null });
        } else {
          result.deadLettered++;
          outcomes.push({ ...base, status: "dead", next_attempt_at: null, last_error: `${r.error ?? "failed"}; dead-lettered (${step.reason})`, delivered_at: null });
        }
      });
    }
    if (deferUntil === undefined && breaker.status === "open") deferUntil = breaker.openedAt + breaker.cooldownMs;
  }

  const tx = await ctx.tx();
  if (outcomes.length) {
    await tx`
      UPDATE webhook_deliveries d SET status = v.status, attempts = v.attempts, next_attempt_at = v.next_attempt_at,
        first_attempt_at = v.first_attempt_at, last_attempt_at = v.last_attempt_at, last_status_code = v.last_status_code,
        last_error = v.last_error, delivered_at = v.delivered_at
      FROM jsonb_to_recordset(${tx.json(outcomes as never)}) AS v(id uuid, status text, attempts int, next_attempt_at timestamptz,
        first_attempt_at timestamptz, last_attempt_at timestamptz, last_status_code int, last_error text, delivered_at timestamptz)
      WHERE d.id = v.id AND d.endpoint_id = ${ctx.id}`;
    await tx`
      INSERT INTO webhook_delivery_attempts (delivery_id, attempt, attempted_at, status_code, error, duration_ms)
      SELECT v.id, v.attempts, v.last_attempt_at, v.last_status_code, v.last_error, v.duration_ms
      FROM jsonb_to_recordset(${tx.json(outcomes as never)}) AS v(id uuid, attempts int, last_attempt_at timestamptz,
        last_status_code int, last_error text, duration_ms int)
      ON CONFLICT DO NOTHING`;
  }
  if (deferUntil !== undefined) {
    // Breaker open: what is due waits for the reopen time without using up attempts.
    await tx`UPDATE webhook_deliveries SET next_attempt_at = ${new Date(deferUntil)}
             WHERE endpoint_id = ${ctx.id} AND status IN ('pending', 'failed') AND next_attempt_at < ${new Date(deferUntil)}`;
  }
  if (JSON.stringify(breaker) !== initialBreaker) {
    await tx`UPDATE webhook_endpoints SET breaker = ${tx.json(breaker as never)} WHERE id = ${ctx.id}`;
  }
  result.more = await rearm(ctx, ctx.now());
  return result;
}

export const webhookActor = defineActor({
  kind: "webhook",
  initialState: (): State => ({}),
  messages: {
    register: RegisterEndpoint,
    rotateSecret: RotateSecret,
    remove: RemoveEndpoint,
    redeliver: Redeliver,
    deliverDue: DeliverDue,
  },
  handlers: {
    async register(ctx, m): Promise<EndpointView> {
      const tx = await ctx.tx();
      const rows = await tx<EndpointRow[]>`
        INSERT INTO webhook_endpoints (id, store_slug, url, events, secret_sealed, created_by, created_at)
        VALUES (${ctx.id}, ${m.storeSlug}, ${m.url}, ${[...new Set(m.events)]}, ${m.secretSealed}, ${m.createdBy}, ${new Date(ctx.now())})
        ON CONFLICT (id) DO NOTHING
        RETURNING id, store_slug, url, events, secret_sealed, previous_secret_sealed, previous_secret_expires_at, breaker, created_at, deleted_at`;
      if (!rows[0]) throw fail("conflict", "A webhook endpoint with this id exists.");
      return endpointView(rows[0]);
    },

    async rotateSecret(ctx, m): Promise<EndpointView> {
      const ep = await liveEndpoint(ctx);
      const tx = await ctx.tx();
      const expires = m.overlapMs > 0 ? new Date(ctx.now() + m.overlapMs) : null;
      const [row] = await tx<EndpointRow[]>`
        UPDATE webhook_endpoints SET previous_secret_sealed = ${expires ? ep.secret_sealed : null},
          previous_secret_expires_at = ${expires}, secret_sealed = ${m.secretSealed}
        WHERE id = ${ctx.id}
        RETURNING id, store_slug, url, events, secret_sealed, previous_secret_sealed, previous_secret_expires_at, breaker, created_at, deleted_at`;
      return endpointView(row!);
    },

    async remove(ctx): Promise<EndpointView> {
      await liveEndpoint(ctx);
      const tx = await ctx.tx();
      const now = new Date(ctx.now());
      const [row] = await tx<EndpointRow[]>`
        UPDATE webhook_endpoints SET deleted_at = ${now}, previous_secret_sealed = NULL, previous_secret_expires_at = NULL
        WHERE id = ${ctx.id}
        RETURNING id, store_slug, url, events, secret_sealed, previous_secret_sealed, previous_secret_expires_at, breaker, created_at, deleted_at`;
      await tx`UPDATE webhook_deliveries SET status = 'dead', next_attempt_at = NULL, last_error = 'endpoint deleted'
               WHERE endpoint_id = ${ctx.id} AND status IN ('pending', 'failed')`;
      await ctx.cancelReminder("deliverDue");
      return endpointView(row!);
    },

    /**
     * Manual replay: the delivery starts a fresh retry cycle (attempts and the 72 h horizon reset; the attempt
     * log keeps the history) with the SAME event id. Asking for it also closes the endpoint's breaker: the
     * merchant says the receiver works again.
     */
    async redeliver(ctx, m): Promise<DeliveryView> {
      await liveEndpoint(ctx);
      const tx = await ctx.tx();
      const now = new Date(ctx.now());
      const updated = await tx`
        UPDATE webhook_deliveries SET status = 'pending', attempts = 0, first_attempt_at = NULL, next_attempt_at = ${now}, delivered_at = NULL
        WHERE id = ${m.deliveryId} AND endpoint_id = ${ctx.id}`;
      if (updated.count !== 1) throw fail("not_found", "No such delivery for this webhook endpoint.");
      await tx`UPDATE webhook_endpoints SET breaker = ${tx.json(CLOSED_BREAKER as never)} WHERE id = ${ctx.id}`;
      await ctx.schedule("deliverDue", now.getTime(), {});
      const [row] = await tx<DeliveryRow[]>`
        SELECT ${tx.unsafe(DELIVERY_COLUMNS)} FROM webhook_deliveries d JOIN webhook_events e ON e.id = d.event_id WHERE d.id = ${m.deliveryId}`;
      return deliveryView(row!);
    },

    deliverDue: (ctx) => deliverDue(ctx),
  },
  reminders: {
    async deliverDue(ctx) {
      await deliverDue(ctx);
    },
  },
});
