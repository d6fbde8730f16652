/**
 * Whether actor hosts are there to answer, for the health report (audit U LOW-5). On the in-process bus the
 * process hosts every actor itself: always ready. Over NATS (the distributed roles, or `start` with NATS_URL) it
 * reads the membership bucket as `bun run cli cluster status` does, on the transport's own connection: ready when
 * at least one host is live and every actor kind (`kinds`: the service's, ACTOR_KINDS, and any a host announced) has
 * a live owner for each partition; with no live host `unownedPartitions` counts every partition of every kind (it was
 * `{}`, as no heartbeat named a kind: audit M-3). Cached
 * for a second and bounded to one, so a slow JetStream makes the probe answer "not ready", never hang.
 */
import type { NatsConnection } from "@nats-io/transport-node";
import type { Transport } from "../../actors/transport/transport.ts";

export interface ActorHostsReport {
  /** `in-process` or `nats`. */
  transport: string;
  /** Live hosts in the membership bucket (null on the in-process bus, where this process is the host). */
  liveHosts: number | null;
  /** Kinds with partitions no live host serves, and how many (requests to those actors fail until one does). */
  unownedPartitions: Record<string, number>;
  ready: boolean;
}

const PROBE_TTL_MS = 1000;
const PROBE_TIMEOUT_MS = 1000;

export function actorHostsProbe(transport: Transport, kinds: readonly string[] = []): () => Promise<ActorHostsReport> {
  const nc = (transport as { nc?: NatsConnection }).nc;
  const partitions = (transport as { partitions?: number }).partitions;
  if (transport.name !== "nats" || !nc) {
    const fixed: ActorHostsReport = { transport: transport.name, liveHosts: null, unownedPartitions: {}, ready: true };
    return async () => fixed;
  }
  let last: { at: number; report: ActorHostsReport } | undefined;
  let inflight: Promise<ActorHostsReport> | undefined;
  const read = async (): Promise<ActorHostsReport> => {
    const { clusterStatus } = await import("../../infra/cluster-status.ts");
    let timer: ReturnType<typeof setTimeout> | undefined;
    try {
      const s = await Promise.race([
        clusterStatus("", { nc, kinds, partitions }),
        new Promise<never>((_, reject) => (timer = setTimeout(() => reject(new Error("membership bucket did not answer")), PROBE_TIMEOUT_MS))),
      ]);
      return { transport: "nats", liveHosts: s.liveHosts, unownedPartitions: s.unowned, ready: s.liveHosts > 0 && Object.keys(s.unowned).length === 0 };
    } catch {
      return { transport: "nats", liveHosts: null, unownedPartitions: {}, ready: false };
    } finally {
      clearTimeout(timer);
    }
  };
  return async () => {
    if (last && Date.now() - last.at < PROBE_TTL_MS) return last.report;
    inflight ??= read().then((report) => {
      last = { at: Date.now(), report };
      inflight = undefined;
      return report;
    });
    return inflight;
  };
}
