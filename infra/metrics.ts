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

export const actorMessages = new Counter({
  name: "actor_messages_total",
  help: "Messages processed by actor kind and outcome (ok, error code).",
  labelNames: ["kind", "outcome"] as const,
  registers: [registry],
});

export const actorTurnDuration = new Histogram({
  name: "actor_turn_duration_seconds",
  help: "Time an actor turn takes, including its durable write.",
  labelNames: ["kind"] as const,
  buckets: [0.0001, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.5, 1],
  registers: [registry],
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
