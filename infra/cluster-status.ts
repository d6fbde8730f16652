/**
 * What `bun run cli cluster status` prints: the actor hosts in the membership bucket, which are live, how many
 * partitions each owns (as computed by rendezvous over the live set, and as each host last reported), and
 * their activations per kind (from the heartbeat values). Read-only: it never joins placement.
 *
 *   const s = await clusterStatus(config.NATS_URL);  console.log(formatClusterStatus(s));
 */
import { connect, type NatsConnection } from "@nats-io/transport-node";
import { Kvm } from "@nats-io/kv";
import { jetstreamManager } from "@nats-io/jetstream";
import { DEFAULT_BUCKET, MemberView, computeOwnership, type HostBeat } from "../actors/transport/placement.ts";

export interface HostStatus {
  hostId: string;
  live: boolean;
  /** Milliseconds between this host's last heartbeat and the newest one in the bucket. */
  behindMs: number;
  lastHeartbeat: string;
  kinds: string[];
  /** Partitions per kind this host owns given the live set (what every host computes). */
  partitions: Record<string, number>;
  /** Partitions per kind the host said it owned in its last heartbeat (differs briefly during a move). */
  reportedPartitions: Record<string, number>;
  activations: Record<string, number>;
  pid: number;
  hostname: string;
  startedAt: string;
}

export interface ClusterStatus {
  bucket: string;
  servers: string[];
  partitions: number;
  ttlMs: number;
  hosts: HostStatus[];
  liveHosts: number;
  /** Activations per kind summed over live hosts. */
  activations: Record<string, number>;
  /** Kinds with a partition that no live host serves (requests for those actors fail until a host serves them). */
  unowned: Record<string, number>;
}

export { ACTOR_KINDS } from "./actor-kinds.ts";

export interface ClusterStatusOptions {
  bucket?: string;
  nc?: NatsConnection;
  /**
   * Kinds that must have a live owner for every partition, besides those the heartbeats name (the CLI and a gateway's
   * health pass ACTOR_KINDS). Without them a bucket with no host, or only departed ones, shows nothing unowned.
   */
  kinds?: readonly string[];
  /** Partitions per kind when no heartbeat says (ACTOR_PARTITIONS; default 64). */
  partitions?: number;
}

/** Reads the membership bucket once. `natsUrl` is NATS_URL (comma-separated servers). */
export async function clusterStatus(natsUrl: string, opts: ClusterStatusOptions = {}): Promise<ClusterStatus> {
  const bucket = opts.bucket ?? DEFAULT_BUCKET;
  const expected = opts.kinds ?? [];
  const defaultPartitions = opts.partitions ?? 64;
  const nc = opts.nc ?? (await connect({ servers: natsUrl.split(",").map((s) => s.trim()), timeout: 3000, name: "cluster-status" }));
  try {
    const kv = await new Kvm(nc).open(bucket);
    const entries: { key: string; created: number; beat: HostBeat }[] = [];
    const read = (async () => {
      // The keys are the bucket stream's subjects, read from the stream's own state (one request, no consumer). Not
      // kv.keys(): its push consumer takes an idle heartbeat for "all keys delivered", and under load that heartbeat
      // came before the keys did, so a status read listed no host at all ("0 live of 0", exit 3; session 22's CI,
      // test/distributed/host-failure.test.ts). Earlier, under load, its walk listed a live host twice.
      const prefix = `$KV.${bucket}.`;
      const info = await (await jetstreamManager(nc)).streams.info(`KV_${bucket}`, { subjects_filter: `${prefix}>` });
      const keys = Object.keys(info.state.subjects ?? {})
        .filter((subject) => subject.startsWith(prefix))
        .map((subject) => subject.slice(prefix.length))
        .sort();
      for (const key of keys) {
        const e = await kv.get(key);
        if (!e || e.operation !== "PUT") continue;
        try {
          entries.push({ key, created: e.created.getTime(), beat: e.json<HostBeat>() });
        } catch {
          // not a heartbeat
        }
      }
    })();
    // an operator command must answer: a JetStream without a leader fails here instead of hanging
    let timer: ReturnType<typeof setTimeout> | undefined;
    await Promise.race([
      read,
      new Promise<never>((_, reject) => {
        timer = setTimeout(() => reject(new Error(`cluster status: bucket ${bucket} did not answer in 5 s`)), 5000);
      }),
    ]).finally(() => clearTimeout(timer));
    const ttlMs = Math.max(0, ...entries.map((e) => e.beat.ttlMs ?? 0)) || 3000;
    const partitions = Math.max(0, ...entries.map((e) => e.beat.partitions ?? 0)) || defaultPartitions;
    const view = new MemberView(ttlMs);
    for (const e of entries) view.put(e.key, e.created, e.beat);
    // a cluster whose hosts all died has no newer heartbeat to judge them by: use this machine's clock too
    view.remove("", Date.now());
    const kinds = [...new Set([...expected, ...entries.flatMap((e) => e.beat.kinds ?? [])])].sort();
    const ownership = computeOwnership(view, kinds, partitions);
    const hosts: HostStatus[] = entries
      .map((e) => {
        const per: Record<string, number> = {};
        for (const k of e.beat.kinds ?? []) {
          let n = 0;
          for (const o of ownership.get(k)!.values()) if (o === e.key) n++;
          per[k] = n;
        }
        return {
          hostId: e.key,
          live: view.isLive(e.key),
          behindMs: Math.max(0, view.newest - e.created),
          lastHeartbeat: new Date(e.created).toISOString(),
          kinds: e.beat.kinds ?? [],
          partitions: per,
          reportedPartitions: e.beat.owned ?? {},
          activations: e.beat.activations ?? {},
          pid: e.beat.pid,
          hostname: e.beat.hostname,
          startedAt: new Date(e.beat.startedAt).toISOString(),
        };
      })
      .sort((a, b) => Number(b.live) - Number(a.live) || a.hostId.localeCompare(b.hostId));
    const activations: Record<string, number> = {};
    for (const h of hosts) if (h.live) for (const [k, n] of Object.entries(h.activations)) activations[k] = (activations[k] ?? 0) + n;
    const unowned: Record<string, number> = {};
    for (const k of kinds) {
      const missing = partitions - ownership.get(k)!.size;
      if (missing > 0) unowned[k] = missing;
    }
    return {
      bucket,
      servers: nc.info?.connect_urls ?? [nc.getServer()],
      partitions,
      ttlMs,
      hosts,
      liveHosts: hosts.filter((h) => h.live).length,
      activations,
      unowned,
    };
  } catch (err) {
    if (/stream not found|bucket not found|not found/i.test(String((err as Error)?.message))) {
      // no host ever started (the first one creates the bucket): every partition of every expected kind is unowned
      const unowned = Object.fromEntries([...expected].sort().map((k) => [k, defaultPartitions]));
      return { bucket, servers: [nc.getServer()], partitions: expected.length ? defaultPartitions : 0, ttlMs: 0, hosts: [], liveHosts: 0, activations: {}, unowned };
    }
    throw err;
  } finally {
    if (!opts.nc) await nc.close();
  }
}

/** A plain-text rendering for the operator CLI. */
export function formatClusterStatus(s: ClusterStatus): string {
  const lines = [`actor hosts: ${s.liveHosts} live of ${s.hosts.length} in bucket ${s.bucket} (partitions per kind: ${s.partitions}, ttl ${s.ttlMs} ms)`];
  for (const h of s.hosts) {
    const parts = Object.entries(h.partitions).map(([k, n]) => `${k}:${n}`).join(" ") || "-";
    const acts = Object.entries(h.activations).map(([k, n]) => `${k}:${n}`).join(" ") || "-";
    lines.push(`  ${h.live ? "LIVE" : "DEAD"}  ${h.hostId}  pid ${h.pid} on ${h.hostname}  last beat ${h.behindMs} ms behind`);
    lines.push(`        partitions ${parts}   activations ${acts}`);
  }
  const acts = Object.entries(s.activations).map(([k, n]) => `${k}:${n}`).join(" ");
  if (acts) lines.push(`activations (live hosts): ${acts}`);
  if (s.liveHosts === 0) lines.push("WARNING: no live actor host: every actor call answers 503 actor_unavailable until one is started");
  for (const [k, n] of Object.entries(s.unowned)) lines.push(`WARNING: ${n} partitions of ${k} have no live host`);
  return lines.join("\n");
}

/**
 * The exit code of `bun run cli cluster status` for this status: 0 when at least one host is live and every partition
 * of every kind has a live owner, 3 otherwise (a WARNING line says what), so a script or a check can act on it.
 * (1 is an error reading the bucket, 2 a usage error.)
 */
export function clusterStatusExitCode(s: ClusterStatus): number {
  return s.liveHosts > 0 && Object.keys(s.unowned).length === 0 ? 0 : 3;
}

if (import.meta.main) {
  const url = process.argv[2] ?? process.env.NATS_URL;
  if (!url) {
    console.error("usage: bun infra/cluster-status.ts NATS_URL");
    process.exit(2);
  }
  const { ACTOR_KINDS } = await import("./actor-kinds.ts");
  try {
    const status = await clusterStatus(url, { kinds: ACTOR_KINDS, partitions: Number(process.env.ACTOR_PARTITIONS) || undefined });
    console.log(formatClusterStatus(status));
    process.exit(clusterStatusExitCode(status));
  } catch (err) {
    // NATS down, no JetStream leader: one line and exit 1, as `bun run cli cluster status` (not an unhandled stack)
    const text = err instanceof Error ? err.message : String(err);
    process.stderr.write(`${text.startsWith("cluster status:") ? text : `cluster status: ${text}`}\n`);
    process.exit(1);
  }
}
