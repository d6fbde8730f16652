/**
 * Prometheus metrics (prom-client). One registry per process; GET /metrics renders it.
 * Actor gauges are computed at scrape time from the host, so the hot path only increments counters.
 */
import { Counter, Gauge, Histogram, Registry, collectDefaultMetrics } from "prom-client";

export const registry = new Registry();
collectDefaultMetrics({ register: registry });

export const httpRequests = new Counter({
  name: "http_requests_total",
  help: "HTTP requests by route template, method and status.",
  labelNames: ["method", "route", "status"] as const,
  registers: [registry],
});

export const httpDuration = new Histogram({
  name: "http_request_duration_seconds",
  help: "HTTP request latency by route template, method and status.",
  labelNames: ["method", "route", "status"] as const,
  buckets: [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5],
  registers: [registry],
});

/**
 * Actor turns are counted in plain numbers (`recordTurn`) and handed to prom-client at scrape time (the two
 * metrics' `collect`): prom-client validates and hashes the labels on every `inc`/`observe`, which cost more than
 * a read-only turn's own work (docs/performance.md "Admission"). The text /metrics renders is the same.
 */
const TURN_BUCKETS = [0.0001, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.5, 1];

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
  for (let i = 0; i < TURN_BUCKETS.length; i++) {
    if (seconds <= TURN_BUCKETS[i]!) {
      s.buckets[i]! += 1;
      break;
    }
  }
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

/** The shape prom-client 15's Histogram keeps per label set (what its text output is rendered from). */
interface HistogramEntry {
  labels: Record<string, string>;
  bucketValues: Record<number, number>;
  sum: number;
  count: number;
}

export const actorTurnDuration = new Histogram({
  name: "actor_turn_duration_seconds",
  help: "Time an actor turn takes, including its durable write.",
  labelNames: ["kind"] as const,
  buckets: TURN_BUCKETS,
  registers: [registry],
  collect() {
    // prom-client has no public way to set a histogram's counts; its per-label-set entries are replaced
    // wholesale with the same shape it builds itself (test/unit/metrics.test.ts compares the text output).
    const entries: Record<string, HistogramEntry> = {};
    for (const s of turnStatsByKind.values()) {
      if (s.count === 0) continue;
      const bucketValues: Record<number, number> = {};
      TURN_BUCKETS.forEach((b, i) => (bucketValues[b] = s.buckets[i]!));
      entries[s.kind] = { labels: { kind: s.kind }, bucketValues, sum: s.sum, count: s.count };
    }
    (this as unknown as { hashMap: Record<string, HistogramEntry> }).hashMap = entries;
  },
});

export const actorFencingConflicts = new Counter({
  name: "actor_fencing_conflicts_total",
  help: "Turns refused because another activation wrote a newer version (ownership moved).",
  labelNames: ["kind"] as const,
  registers: [registry],
});

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
