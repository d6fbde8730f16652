/**
 * Prometheus metrics (prom-client). One registry per process; GET /metrics renders it.
 * Actor gauges are computed at scrape time from the host, so the hot path only increments counters.
 */
import { Counter, Gauge, Histogram, Registry, collectDefaultMetrics } from "prom-client";

export const registry = new Registry();
collectDefaultMetrics({ register: registry });

/**
 * HTTP requests are counted the same way as actor turns below: in plain numbers per (method, route, status)
 * (`httpStatsFor` once per label set, `recordHttpRequest` per request) and handed to prom-client at scrape time.
 * prom-client's `inc`/`observe` validate and hash the labels on every call, ~1-2 us per request on every route
 * (docs/performance.md "Admission", "MCP"). The text /metrics renders is the same (test/unit/metrics.test.ts).
 */
/**
 * Up to 30 s: a caller's actor deadline is 10 s (503 actor_unavailable) and a catalog ingest may wait 60 s, so a
 * p99 between 2.5 s and the deadline must be told apart (audit U MED-2). 5 and 10 s cost two series per label set.
 */
export const HTTP_BUCKETS: readonly number[] = [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30];

/** One (method, route, status)'s counts: requests, and the duration histogram (per bucket, not cumulative). */
export interface HttpStats {
  readonly labels: { readonly method: string; readonly route: string; readonly status: string };
  requests: number;
  /** Per upper bound of HTTP_BUCKETS: requests whose duration is <= it and > the previous bound. */
  readonly buckets: number[];
  sum: number;
  /** Requests with a duration (the histogram's count; a request without a start stamp is only counted). */
  count: number;
}

/** route -> method -> status -> stats: three lookups of strings the caller already has, no key built per request. */
const httpStatsByRoute = new Map<string, Map<string, Map<string, HttpStats>>>();
/** Label sets in the order first counted / first timed: the lines come out in those orders, as prom-client's did. */
const httpRequestOrder: HttpStats[] = [];
const httpDurationOrder: HttpStats[] = [];

/** "200" for 200 without converting the number on every request. */
const statusText: string[] = [];
function statusString(status: number | string): string {
  if (typeof status === "string") return status;
  if (Number.isInteger(status) && status >= 0 && status < 1000) return (statusText[status] ??= String(status));
  return String(status);
}

/** The stats of one label set (created on first use; a caller may keep it, as the native health route does). */
export function httpStatsFor(method: string, route: string, status: number | string): HttpStats {
  let byMethod = httpStatsByRoute.get(route);
  if (!byMethod) httpStatsByRoute.set(route, (byMethod = new Map()));
  let byStatus = byMethod.get(method);
  if (!byStatus) byMethod.set(method, (byStatus = new Map()));
  const code = statusString(status);
  let s = byStatus.get(code);
  if (!s) byStatus.set(code, (s = { labels: { method, route, status: code }, requests: 0, buckets: HTTP_BUCKETS.map(() => 0), sum: 0, count: 0 }));
  return s;
}

/** Counts one request, and its duration when known: no labels, no hashing, no allocation once the set is known. */
export function recordHttpRequest(s: HttpStats, seconds?: number): void {
  if (s.requests++ === 0) httpRequestOrder.push(s);
  if (seconds === undefined || !Number.isFinite(seconds)) return;
  if (s.count++ === 0) httpDurationOrder.push(s);
  s.sum += seconds;
  countInBucket(s.buckets, HTTP_BUCKETS, seconds);
}

/** Adds one observation to the first bucket whose upper bound holds it (none: only +Inf, i.e. the count). */
function countInBucket(buckets: number[], bounds: readonly number[], seconds: number): void {
  for (let i = 0; i < bounds.length; i++) {
    if (seconds <= bounds[i]!) {
      buckets[i]! += 1;
      return;
    }
  }
}

/** The shape prom-client 15's Histogram keeps per label set (what its text output is rendered from). */
interface HistogramEntry {
  labels: Record<string, string>;
  bucketValues: Record<number, number>;
  sum: number;
  count: number;
}

/** prom-client 15's key for a label set in a metric's hashMap: label names sorted, each `name:value,`. */
function promHash(labels: Readonly<Record<string, string>>): string {
  let hash = "";
  for (const k of Object.keys(labels).sort()) hash += `${k}:${labels[k]},`;
  return hash;
}

/**
 * prom-client has no public way to set a histogram's counts; its per-label-set entries are replaced wholesale
 * with the same shape it builds itself (test/unit/metrics.test.ts compares the text output). Entries are keyed
 * by prom-client's own label hash, so a later `observe` of the same labels would land in the same entry.
 */
function setHistogramEntries(
  h: object,
  sets: { labels: Readonly<Record<string, string>>; buckets: readonly number[]; sum: number; count: number }[],
  bounds: readonly number[],
): void {
  const entries: Record<string, HistogramEntry> = {};
  for (const set of sets) {
    if (set.count === 0) continue;
    const bucketValues: Record<number, number> = {};
    bounds.forEach((b, i) => (bucketValues[b] = set.buckets[i]!));
    entries[promHash(set.labels)] = { labels: { ...set.labels }, bucketValues, sum: set.sum, count: set.count };
  }
  (h as { hashMap: Record<string, HistogramEntry> }).hashMap = entries;
}

// Note: the HTTP and turn metrics are rebuilt from these plain numbers at every scrape, so `registry.resetMetrics()`
// (which nothing here calls) does not clear them.
export const httpRequests = new Counter({
  name: "http_requests_total",
  help: "HTTP requests by route template, method and status.",
  labelNames: ["method", "route", "status"] as const,
  registers: [registry],
  collect() {
    // same shape as prom-client 15's Counter builds per label set; keyed by its label hash (see promHash)
    const entries: Record<string, { value: number; labels: Record<string, string> }> = {};
    for (const s of httpRequestOrder) entries[promHash(s.labels)] = { value: s.requests, labels: { ...s.labels } };
    (this as unknown as { hashMap: typeof entries }).hashMap = entries;
  },
});

type HttpLabels = Partial<Record<"method" | "route" | "status", string | number>>;
/**
 * `inc` (and `labels(...).inc()`, which binds it) counts into the same plain numbers, so a caller still using
 * prom-client's API (gateway/rest/health.ts) is not wiped out by the scrape-time rebuild above.
 */
(httpRequests as unknown as { inc: (labels?: HttpLabels | number, value?: number) => void }).inc = (labels, value = 1) => {
  if (typeof labels !== "object") throw new Error("http_requests_total is counted per (method, route, status)");
  if (value < 0) throw new Error("It is not possible to decrease a counter");
  const s = httpStatsFor(String(labels.method ?? ""), String(labels.route ?? ""), labels.status ?? "");
  if (s.requests === 0 && value > 0) httpRequestOrder.push(s);
  s.requests += value;
};

export const httpDuration = new Histogram({
  name: "http_request_duration_seconds",
  help: "HTTP request latency by route template, method and status.",
  labelNames: ["method", "route", "status"] as const,
  buckets: [...HTTP_BUCKETS],
  registers: [registry],
  collect() {
    setHistogramEntries(this, httpDurationOrder.map((s) => ({ labels: s.labels, buckets: s.buckets, sum: s.sum, count: s.count })), HTTP_BUCKETS);
  },
});

/**
 * Actor turns are counted in plain numbers (`recordTurn`) and handed to prom-client at scrape time (the two
 * metrics' `collect`): prom-client validates and hashes the labels on every `inc`/`observe`, which cost more than
 * a read-only turn's own work (docs/performance.md "Admission"). The text /metrics renders is the same.
 */
/**
 * Up to 30 s: docs/operations.md has operators keep the turn p99 well under the per-attempt timeout (3 s), and the
 * caller's deadline is 10 s, the pool's query deadline 15 s; a bucket at each lets `histogram_quantile` see them
 * (audit U MED-2). Six more series per actor kind.
 */
export const TURN_BUCKETS: readonly number[] = [0.0001, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.5, 1, 2.5, 3, 5, 10, 15, 30];

/** One actor kind's turn counts: per outcome, and the duration histogram (per bucket, not cumulative). */
export interface TurnStats {
  readonly kind: string;
  /** Turns per outcome ("ok" or an error code), in first-seen order. */
  readonly outcomes: Map<string, number>;
  /** Per upper bound of TURN_BUCKETS: turns whose duration is <= it and > the previous bound. */
  readonly buckets: number[];
  sum: number;
  count: number;
}

const turnStatsByKind = new Map<string, TurnStats>();
/** (kind, outcome) pairs in the order first seen: the counter's lines come out in that order, as prom-client's did. */
const outcomeOrder: { stats: TurnStats; outcome: string }[] = [];

/** The stats of one actor kind (a host looks it up once per kind, not per turn). */
export function turnStatsFor(kind: string): TurnStats {
  let s = turnStatsByKind.get(kind);
  if (!s) turnStatsByKind.set(kind, (s = { kind, outcomes: new Map(), buckets: TURN_BUCKETS.map(() => 0), sum: 0, count: 0 }));
  return s;
}

/** Counts one turn: no labels, no hashing, no allocation once the (kind, outcome) pair has been seen. */
export function recordTurn(s: TurnStats, outcome: string, seconds: number): void {
  const n = s.outcomes.get(outcome);
  if (n === undefined) {
    s.outcomes.set(outcome, 1);
    outcomeOrder.push({ stats: s, outcome });
  } else s.outcomes.set(outcome, n + 1);
  if (!Number.isFinite(seconds)) return;
  s.sum += seconds;
  s.count += 1;
  countInBucket(s.buckets, TURN_BUCKETS, seconds);
}

export const actorMessages = new Counter({
  name: "actor_messages_total",
  help: "Messages processed by actor kind and outcome (ok, error code).",
  labelNames: ["kind", "outcome"] as const,
  registers: [registry],
  collect() {
    this.reset();
    for (const { stats, outcome } of outcomeOrder) this.inc({ kind: stats.kind, outcome }, stats.outcomes.get(outcome)!);
  },
});

export const actorTurnDuration = new Histogram({
  name: "actor_turn_duration_seconds",
  help: "Time an actor turn takes, including its durable write.",
  labelNames: ["kind"] as const,
  buckets: [...TURN_BUCKETS],
  registers: [registry],
  collect() {
    setHistogramEntries(this, [...turnStatsByKind.values()].map((s) => ({ labels: { kind: s.kind }, buckets: s.buckets, sum: s.sum, count: s.count })), TURN_BUCKETS);
  },
});

export const actorFencingConflicts = new Counter({
  name: "actor_fencing_conflicts_total",
  help: "Turns refused because another activation wrote a newer version (ownership moved).",
  labelNames: ["kind"] as const,
  registers: [registry],
});

export const actorLockConflicts = new Counter({
  name: "actor_lock_conflicts_total",
  help: "Turns failed by a deadlock (40P01) or serialization failure (40001) between concurrent turns: a lock-order bug, answered 503.",
  labelNames: ["kind", "sqlstate"] as const,
  registers: [registry],
});

/** The SQLSTATEs `actor_lock_conflicts_total` counts: deadlock, serialization failure. */
export const LOCK_CONFLICT_SQLSTATES = ["40P01", "40001"] as const;

/**
 * A hosted kind's conflict series, shown at 0 from the host's start: a labelled counter has no series until its first
 * count, so an alert on "more than N" or on its rate saw nothing rather than zero, and a dashboard showed "no data"
 * where nothing had gone wrong (helper B, session 22; Prometheus's advice: initialise the known label values).
 */
export function showConflictSeries(kind: string): void {
  actorFencingConflicts.inc({ kind }, 0);
  for (const sqlstate of LOCK_CONFLICT_SQLSTATES) actorLockConflicts.inc({ kind, sqlstate }, 0);
}

export interface ActorStatsSource {
  activationCounts(): Record<string, number>;
  mailboxDepths(): Record<string, number>;
}

const sources = new Set<ActorStatsSource>();
export function registerActorStats(src: ActorStatsSource): () => void {
  sources.add(src);
  return () => sources.delete(src);
}

function sum(pick: (s: ActorStatsSource) => Record<string, number>): Map<string, number> {
  const total = new Map<string, number>();
  for (const s of sources) for (const [k, v] of Object.entries(pick(s))) total.set(k, (total.get(k) ?? 0) + v);
  return total;
}

new Gauge({
  name: "actor_activations",
  help: "Live actor activations by kind.",
  labelNames: ["kind"] as const,
  registers: [registry],
  collect() {
    this.reset();
    for (const [kind, n] of sum((s) => s.activationCounts())) this.set({ kind }, n);
  },
});

new Gauge({
  name: "actor_mailbox_depth",
  help: "Messages waiting in actor mailboxes by kind.",
  labelNames: ["kind"] as const,
  registers: [registry],
  collect() {
    this.reset();
    for (const [kind, n] of sum((s) => s.mailboxDepths())) this.set({ kind }, n);
  },
});

const partitionSources = new Set<() => Record<string, number>>();
/** Distributed hosts report how many partitions of each kind they own (placement moves them). */
export function registerPartitionSource(src: () => Record<string, number>): () => void {
  partitionSources.add(src);
  return () => partitionSources.delete(src);
}

new Gauge({
  name: "actor_partitions_owned",
  help: "Partitions of each actor kind owned by this host (distributed mode).",
  labelNames: ["kind"] as const,
  registers: [registry],
  collect() {
    this.reset();
    const total = new Map<string, number>();
    for (const src of partitionSources) for (const [k, v] of Object.entries(src())) total.set(k, (total.get(k) ?? 0) + v);
    for (const [kind, n] of total) this.set({ kind }, n);
  },
});

/**
 * Webhooks. Attempts are counted where they are made (the delivering process), by outcome; the backlog gauges are
 * read from the database at scrape time (every host running the webhook dispatcher reports the same database-wide
 * figures: alert on their max), so nothing is added to the fan-out's or the delivery's hot path.
 */
export const webhookAttempts = new Counter({
  name: "webhook_delivery_attempts_total",
  help: "Webhook delivery attempts made by this process, by outcome: delivered (2xx), failed (any other answer, a refused URL, a network error or a timeout).",
  labelNames: ["outcome"] as const,
  registers: [registry],
});

export const webhookAttemptDuration = new Histogram({
  name: "webhook_delivery_attempt_duration_seconds",
  help: "Time a webhook delivery attempt took, from the URL check to the answer's status (or the timeout).",
  buckets: [0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10],
  registers: [registry],
});

/** The database-wide webhook backlog, as one scrape reads it (undefined: the read failed; the gauges show NaN). */
export interface WebhookBacklog {
  /** Events committed at stores with endpoints that the fan-out has not reached yet (counted up to a cap). */
  fanoutWaitingEvents: number;
  /** Age of the head of that queue in seconds (the event the fan-out waits on), 0 when none: how far behind it runs. */
  fanoutLagSeconds: number;
  /** Deliveries due now (pending or failed, next attempt time passed). */
  deliveriesDue: number;
  /** How long the longest-due of them has been due, in seconds, 0 when none. */
  deliveryLagSeconds: number;
}

const webhookBacklogSources = new Set<() => Promise<WebhookBacklog | undefined>>();
let backlogGauges: Gauge[] = [];
/**
 * The webhook dispatcher's boot hook registers its reader (roles start and actors); the returned function removes it.
 * The four gauges exist while a reader is registered: a gateway-only process (no fan-out) shows none rather than
 * zeros (prom-client prints an unlabelled gauge's 0 after a reset).
 */
export function registerWebhookBacklogSource(src: () => Promise<WebhookBacklog | undefined>): () => void {
  webhookBacklogSources.add(src);
  if (backlogGauges.length === 0) backlogGauges = BACKLOG_GAUGES.map(([name, help, pick]) => backlogGauge(name, help, pick));
  return () => {
    webhookBacklogSources.delete(src);
    if (webhookBacklogSources.size > 0) return;
    for (const g of backlogGauges) registry.removeSingleMetric((g as unknown as { name: string }).name);
    backlogGauges = [];
  };
}

/**
 * One database read per scrape for the four gauges: prom-client collects them separately, so a read started less than
 * a second ago is shared (a scrape storm costs one query a second, not four a scrape).
 */
let backlogRead: { at: number; value: Promise<WebhookBacklog | undefined> } | undefined;
function readBacklog(): Promise<WebhookBacklog | undefined> {
  const now = performance.now();
  if (!backlogRead || now - backlogRead.at >= 1_000) {
    const [src] = webhookBacklogSources; // one database per process: the first source answers for all
    backlogRead = { at: now, value: src ? src().catch(() => undefined) : Promise.resolve(undefined) };
  }
  return backlogRead.value;
}

/** A failed read (database down, 2 s statement timeout) shows NaN: not a reassuring 0, and no alert of its own. */
function backlogGauge(name: string, help: string, pick: (b: WebhookBacklog) => number): Gauge {
  return new Gauge({
    name,
    help,
    registers: [registry],
    async collect() {
      const b = await readBacklog();
      this.set(b ? pick(b) : Number.NaN);
    },
  });
}

const BACKLOG_GAUGES: readonly [string, string, (b: WebhookBacklog) => number][] = [
  ["webhook_fanout_waiting_events", "Committed webhook events the fan-out has not reached yet (capped at 100000). Events wait while a transaction older than them is still running (docs/webhooks.md).", (b) => b.fanoutWaitingEvents],
  ["webhook_fanout_lag_seconds", "Age of the head of the fan-out's queue (the first committed webhook event above its cursor, the one it waits on); 0 when none.", (b) => b.fanoutLagSeconds],
  ["webhook_deliveries_due", "Webhook deliveries due now (pending or failed, next attempt time passed) and not yet attempted.", (b) => b.deliveriesDue],
  ["webhook_delivery_lag_seconds", "How long the longest-due webhook delivery has been due; 0 when none.", (b) => b.deliveryLagSeconds],
];
