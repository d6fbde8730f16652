/**
 * What `bun run cli cluster status` prints: the actor hosts in the membership bucket, which are live, how many
 * partitions each owns (as computed by rendezvous over the live set, and as each host last reported), and
 * their activations per kind (from the heartbeat values). Read-only: it never joins placement.
 *
 *   const s = await clusterStatus(config.NATS_URL);  console.log(formatClusterStatus(s));
 */
import { connect, type NatsConnection } from "@nats-io/transport-node";
import { Kvm } from "@nats-io/kv";
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

/** Reads the membership bucket once. `natsUrl` is NATS_URL (comma-separated servers). */
export async function clusterStatus(natsUrl: string, opts: { bucket?: string; nc?: NatsConnection } = {}): Promise<ClusterStatus> {
  const bucket = opts.bucket ?? DEFAULT_BUCKET;
  const nc = opts.nc ?? (await connect({ servers: natsUrl.split(",").map((s) => s.trim()), timeout: 3000, name: "cluster-status" }));
  try {
    const kv = await new Kvm(nc).open(bucket);
    const entries: { key: string; created: number; beat: HostBeat }[] = [];
    const read = (async () => {
      // keys() walks the bucket while hosts keep beating: a key updated during the walk can be listed again, which
      // showed a live host twice (test/distributed/host-failure.test.ts, once under CI load). Each key is read once.
      const listed = new Set<string>();
      for await (const key of await kv.keys()) {
        if (listed.has(key)) continue;
        listed.add(key);
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
    const partitions = Math.max(0, ...entries.map((e) => e.beat.partitions ?? 0)) || 64;
    const view = new MemberView(ttlMs);
    for (const e of entries) view.put(e.key, e.created, e.beat);
    // a cluster whose hosts all died has no newer heartbeat to judge them by: use this machine's clock too
    view.remove("", Date.now());
    const kinds = [...new Set(entries.flatMap((e) => e.beat.kinds ?? []))].sort();
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
      return { bucket, servers: [nc.getServer()], partitions: 0, ttlMs: 0, hosts: [], liveHosts: 0, activations: {}, unowned: {} };
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
  for (const [k, n] of Object.entries(s.unowned)) lines.push(`WARNING: ${n} partitions of ${k} have no live host`);
  return lines.join("\n");
}

if (import.meta.main) {
  const url = process.argv[2] ?? process.env.NATS_URL;
  if (!url) {
    console.error("usage: bun infra/cluster-status.ts NATS_URL");
    process.exit(2);
  }
  console.log(formatClusterStatus(await clusterStatus(url)));
}
