/**
 * Over NATS a moved partition of the rate-limit kinds is served by its new owner only once every other live host has
 * released it, its hand-over written (actors/transport/nats.ts `acquire`, session 14). The timed backstop from before
 * that (a 0.5 s hold before each new ip/agent activation's load after a placement change, re-reads at 1 s and 3 s)
 * still ran on top of it: the first requests of every new activation, on the joiner and on the host that stayed,
 * waited half a second after each change. It runs now only for a move no release covered: while a host that does not
 * answer releases (an older version, mid rolling upgrade) is live. Two hosts and a caller over a private nats-server
 * (the real `ip` kind's subjects, kept off the shared server), each test with its own membership bucket.
 */
import { afterAll, afterEach, beforeAll, expect, test } from "bun:test";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { Subprocess } from "bun";
import { Kvm } from "@nats-io/kv";
import { ActorClient } from "../../actors/runtime/client.ts";
import { ActorHost } from "../../actors/runtime/host.ts";
import { ipActor } from "../../actors/ip/index.ts";
import { NatsTransport, type NatsTransportOptions } from "../../actors/transport/nats.ts";
import { partitionOf, rendezvousOwner } from "../../actors/transport/placement.ts";
import { startSingleNats } from "../helpers/deployment.ts";
import { createTestDatabase, type TestDatabase } from "../helpers/db.ts";

const PARTITIONS = 16;
const TTL_MS = 3000;
const spec = { id: "mnh-g", limit: 50, windowMs: 15 * 60_000 };

let db: TestDatabase;
let dir: string;
let nats: { url: string; proc: Subprocess };
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

function opts(bucket: string, hostId?: string): NatsTransportOptions {
  return { servers: nats.url, bucket, partitions: PARTITIONS, replicas: 1, ttlMs: TTL_MS, ...(hostId ? { hostId } : {}) };
}

async function startHost(bucket: string, hostId: string): Promise<NatsTransport> {
  const transport = await NatsTransport.connect(opts(bucket, hostId));
  const host = new ActorHost({ transport, sql: db.sql, definitions: [ipActor], caller: new ActorClient(transport), reminderPollMs: 0 });
  transport.attachHost(host);
  await host.start();
  opened.push(transport, { close: () => host.stop() }); // closed in reverse: the host stops first
  return transport;
}

/** A gateway: a transport that serves nothing, and its client. */
async function caller(bucket: string): Promise<{ client: ActorClient; gateway: NatsTransport }> {
  const gateway = await NatsTransport.connect(opts(bucket));
  opened.push(gateway);
  return { client: new ActorClient(gateway, { defaultTimeoutMs: 10_000 }), gateway };
}

/** `n` owners whose ip partition `owner` wins among `hosts`. */
function ownersOf(owner: string, hosts: string[], prefix: string, n: number): string[] {
  const out: string[] = [];
  for (let i = 0; out.length < n; i++) if (rendezvousOwner(ipActor.kind, partitionOf(`${prefix}-${i}`, PARTITIONS), hosts) === owner) out.push(`${prefix}-${i}`);
  return out;
}

/** Until each transport serves exactly the ip partitions of `ids` that placement among `hosts` gives it. */
async function settled(transports: Map<string, NatsTransport>, hosts: string[], ids: string[]): Promise<void> {
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
}

/** One admit of `spec` for `owner`, with how long it took. */
async function timedAdmit(client: ActorClient, owner: string): Promise<{ ms: number; remaining: number }> {
  const t0 = performance.now();
  const r = await client.ask(ipActor, owner, "admit", { buckets: [spec] });
  return { ms: performance.now() - t0, remaining: r.rate.remaining };
}

test("after a host joins, the first requests of new ip activations on the joiner and on the host that stayed answer without a half-second hold", async () => {
  const bucket = `actor_hosts_mnh_1`;
  const [a, b] = ["mnh-a", "mnh-b"];
  const ta = await startHost(bucket, a);
  const { client } = await caller(bucket);
  const tb = await startHost(bucket, b); // partitions move from a to b, released by a
  const moved = ownersOf(b, [a, b], "moved", 8);
  const kept = ownersOf(a, [a, b], "kept", 8);
  await settled(new Map([[a, ta], [b, tb]]), [a, b], [...moved, ...kept]);
  // each a new activation right after the change (its load reads: rows may have been handed over)
  const first = await Promise.all([...moved.slice(0, 4), ...kept.slice(0, 4)].map((o) => timedAdmit(client, o)));
  // the same again (new activations, loads that read) once a hold would be over: what such a request costs here
  const then = await Promise.all([...moved.slice(4), ...kept.slice(4)].map((o) => timedAdmit(client, o)));
  expect([...first, ...then].map((x) => x.remaining)).toEqual(Array(16).fill(spec.limit - 1));
  const fastest = (xs: { ms: number }[]) => Math.min(...xs.map((x) => x.ms));
  const extra = (from: number) => Math.round(fastest(first.slice(from, from + 4)) - fastest(then.slice(from, from + 4)));
  // before: every first one waited the 0.5 s hold before its load (a's too: it saw the live hosts change)
  expect({ joiner: extra(0) < 300, stayed: extra(4) < 300 }).toEqual({ joiner: true, stayed: true });
}, 60_000);

test("while a live host does not answer releases (a rolling upgrade), a joiner still re-reads at 1 s and 3 s and folds in a hand-over that landed after its load", async () => {
  const bucket = `actor_hosts_mnh_2`;
  const [a, b, legacy] = ["mnh2-a", "mnh2-b", "mnh2-legacy"];
  const ta = await startHost(bucket, a);
  const { client, gateway } = await caller(bucket);
  // an older host's heartbeat: serves ip, no `releases` (it would not answer; nothing routed to it is asked here)
  const kv = await new Kvm(gateway.nc).open(bucket);
  const beat = () =>
    kv.put(legacy, JSON.stringify({ hostId: legacy, kinds: [ipActor.kind], partitions: PARTITIONS, ttlMs: TTL_MS, activations: {}, owned: {}, startedAt: Date.now(), pid: 1, hostname: "legacy" }));
  await beat();
  const beating = setInterval(() => void beat().catch(() => {}), 500);
  opened.push({ close: async () => clearInterval(beating) });
  const owner = ownersOf(b, [a, b, legacy], "late", 1)[0]!;
  await settled(new Map([[a, ta]]), [a, legacy], [owner]);
  const tb = await startHost(bucket, b);
  await settled(new Map([[a, ta], [b, tb]]), [a, b, legacy], [owner]);
  expect((await timedAdmit(client, owner)).remaining).toBe(spec.limit - 1);
  // the older host's hand-over lands only now, after b loaded: 3 units in a window begun a second earlier
  const start = Date.now() - 1000;
  await db.sql`INSERT INTO rate_limit_buckets (owner, bucket_id, window_start, window_end, used, durable)
    VALUES (${owner}, ${spec.id}, ${start}, ${start + spec.windowMs}, 3, false)`;
  await Bun.sleep(3_500); // past the last re-read (3 s after the move)
  expect((await timedAdmit(client, owner)).remaining).toBe(spec.limit - 5);
}, 60_000);
