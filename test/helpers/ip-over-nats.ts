/**
 * The rate-limit placement tests over NATS (test/actors/rate-limit-move-no-hold.test.ts,
 * rate-limit-paused-host-late-handover.test.ts): a private nats-server (the real `ip` kind's subjects, kept off the
 * shared server) and a database for the file, hosts and callers that go after each test, and the placement helpers.
 * Registers the file's beforeAll/afterEach/afterAll hooks.
 */
import { afterAll, afterEach, beforeAll } from "bun:test";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { Subprocess } from "bun";
import { ActorClient } from "../../actors/runtime/client.ts";
import { ActorHost } from "../../actors/runtime/host.ts";
import { ipActor } from "../../actors/ip/index.ts";
import { NatsTransport, type NatsTransportOptions } from "../../actors/transport/nats.ts";
import { partitionOf, rendezvousOwner } from "../../actors/transport/placement.ts";
import { startSingleNats } from "./deployment.ts";
import { createTestDatabase, type TestDatabase } from "./db.ts";

export function ipOverNats() {
  const PARTITIONS = 16;
  const TTL_MS = 3000;
  const spec = { id: "mnh-g", limit: 50, windowMs: 15 * 60_000 };
  let db: TestDatabase;
  let dir: string;
  let nats: { url: string; proc: Subprocess };
  /** Closed after each test, the last first. */
  const opened: { close(): Promise<unknown> }[] = [];

  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), "acs-mnh-"));
    [nats, db] = await Promise.all([startSingleNats(dir), createTestDatabase()]);
  }, 60_000);
  // each test's hosts go with it: the ip partitions' subjects are the same whatever the membership bucket
  afterEach(async () => {
    for (const o of opened.splice(0).reverse()) await o.close().catch(() => {});
  });
  afterAll(async () => {
    nats?.proc.kill("SIGKILL");
    await nats?.proc.exited;
    await db?.drop();
    await rm(dir, { recursive: true, force: true });
  });

  const opts = (bucket: string, hostId?: string): NatsTransportOptions => ({
    servers: nats.url,
    bucket,
    partitions: PARTITIONS,
    replicas: 1,
    ttlMs: TTL_MS,
    ...(hostId ? { hostId } : {}),
  });

  /** A host and its clean stop (hand-over written, then the membership entry deleted), as the service's shutdown does. */
  async function startStoppableHost(bucket: string, hostId: string): Promise<{ transport: NatsTransport; stop(): Promise<void> }> {
    const transport = await NatsTransport.connect(opts(bucket, hostId));
    const host = new ActorHost({ transport, sql: db.sql, definitions: [ipActor], caller: new ActorClient(transport), reminderPollMs: 0 });
    transport.attachHost(host);
    await host.start();
    opened.push(transport, { close: () => host.stop() }); // closed in reverse: the host stops first
    return { transport, stop: async () => (await host.stop(), await transport.close()) };
  }

  return {
    PARTITIONS,
    TTL_MS,
    spec,
    opened,
    /** The file's database (set once the beforeAll ran). */
    get db(): TestDatabase {
      return db;
    },
    startStoppableHost,
    startHost: async (bucket: string, hostId: string): Promise<NatsTransport> => (await startStoppableHost(bucket, hostId)).transport,

    /** A gateway: a transport that serves nothing, and its client. */
    async caller(bucket: string): Promise<{ client: ActorClient; gateway: NatsTransport }> {
      const gateway = await NatsTransport.connect(opts(bucket));
      opened.push(gateway);
      return { client: new ActorClient(gateway, { defaultTimeoutMs: 10_000 }), gateway };
    },

    /** `n` owners whose ip partition `owner` wins among `hosts`. */
    ownersOf(owner: string, hosts: string[], prefix: string, n: number): string[] {
      const out: string[] = [];
      for (let i = 0; out.length < n; i++) if (rendezvousOwner(ipActor.kind, partitionOf(`${prefix}-${i}`, PARTITIONS), hosts) === owner) out.push(`${prefix}-${i}`);
      return out;
    },

    /** Until each transport serves exactly the ip partitions of `ids` that placement among `hosts` gives it. */
    async settled(transports: Map<string, NatsTransport>, hosts: string[], ids: string[]): Promise<void> {
      const end = Date.now() + 15_000;
      const done = () =>
        ids.every((id) => {
          const p = partitionOf(id, PARTITIONS);
          const owner = rendezvousOwner(ipActor.kind, p, hosts);
          return [...transports].every(([h, t]) => (t.ownership()[ipActor.kind]?.includes(p) ?? false) === (h === owner));
        });
      while (!done()) {
        if (Date.now() > end) throw new Error("placement did not settle within 15 s");
        await Bun.sleep(20);
      }
    },

    /** One admit of `spec` for `owner`, with how long it took. */
    async timedAdmit(client: ActorClient, owner: string): Promise<{ ms: number; remaining: number }> {
      const t0 = performance.now();
      const r = await client.ask(ipActor, owner, "admit", { buckets: [spec] });
      return { ms: performance.now() - t0, remaining: r.rate.remaining };
    },
  };
}
