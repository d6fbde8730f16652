/**
 * Audit M-3: with no live actor host (every host stopped with SIGTERM leaves the bucket empty) `cluster status` counted
 * unowned partitions over the kinds the heartbeats name, i.e. none, printed no WARNING and exited 0, and a gateway's
 * health said `unownedPartitions: {}`. The service's kinds (ACTOR_KINDS) are now expected whatever the bucket holds,
 * and the CLI's exit code is 3 while any partition has no live owner. Runs on the shared NATS (TEST_NATS_URL or
 * 127.0.0.1:4222) in buckets of its own.
 */
import { afterAll, expect, test } from "bun:test";
import { connect, type NatsConnection } from "@nats-io/transport-node";
import { Kvm } from "@nats-io/kv";
import { actorDefinitions } from "../../actors/index.ts";
import { Membership } from "../../actors/transport/placement.ts";
import { ACTOR_KINDS, clusterStatus, clusterStatusExitCode, formatClusterStatus } from "../../infra/cluster-status.ts";

const NATS = process.env.TEST_NATS_URL ?? "nats://127.0.0.1:4222";
const tag = Math.random().toString(36).slice(2, 8);
const buckets: string[] = [];
let nc: NatsConnection | undefined;
afterAll(async () => {
  if (!nc) return;
  const kvm = new Kvm(nc);
  for (const b of buckets) await (await kvm.open(b).catch(() => undefined))?.destroy().catch(() => {});
  await nc.close();
});

test("ACTOR_KINDS are the kinds of actorDefinitions (the CLI and health expect them without loading the actors)", () => {
  expect([...ACTOR_KINDS].sort()).toEqual(actorDefinitions.map((d) => d.kind).sort());
});

test("no host ever started (no bucket): every partition of every kind is unowned, WARNING, exit code 3", async () => {
  nc ??= await connect({ servers: NATS });
  const status = await clusterStatus(NATS, { nc, bucket: `g_none_${tag}`, kinds: ACTOR_KINDS, partitions: 8 });
  expect(status.liveHosts).toBe(0);
  expect(status.unowned).toEqual(Object.fromEntries([...ACTOR_KINDS].sort().map((k) => [k, 8])));
  expect(formatClusterStatus(status)).toContain("WARNING: no live actor host");
  expect(clusterStatusExitCode(status)).toBe(3);
});

test("the only host leaves (SIGTERM deletes its entry): unowned counted against the service's kinds, exit 3; with it live, exit 0", async () => {
  nc ??= await connect({ servers: NATS });
  const bucket = `g_left_${tag}`;
  buckets.push(bucket);
  const member = new Membership({
    nc,
    hostId: "g-host-1",
    bucket,
    replicas: 1,
    onChange: () => {},
    beat: () => ({ kinds: [...ACTOR_KINDS], partitions: 8, activations: {}, owned: {}, startedAt: Date.now(), pid: process.pid, hostname: "test" }),
  });
  expect(member.isCurrent()).toBe(false); // not started: not a member (an actor host's /health says so)
  await member.start();
  expect(member.isCurrent()).toBe(true);
  const up = await clusterStatus(NATS, { nc, bucket, kinds: ACTOR_KINDS, partitions: 8 });
  expect(up.liveHosts).toBe(1);
  expect(up.unowned).toEqual({});
  expect(formatClusterStatus(up)).not.toContain("WARNING");
  expect(clusterStatusExitCode(up)).toBe(0);

  await member.stop(); // leaves the bucket, as a host stopped with SIGTERM does
  expect(member.isCurrent()).toBe(false);
  const down = await clusterStatus(NATS, { nc, bucket, kinds: ACTOR_KINDS, partitions: 8 });
  expect(down.liveHosts).toBe(0);
  expect(down.unowned.cart).toBe(8);
  expect(Object.keys(down.unowned).sort()).toEqual([...ACTOR_KINDS].sort());
  expect(formatClusterStatus(down)).toContain("WARNING: no live actor host");
  expect(formatClusterStatus(down)).toContain("WARNING: 8 partitions of cart have no live host");
  expect(clusterStatusExitCode(down)).toBe(3);
  // without the expected kinds (as the test harness's own actors call it) the heartbeats' kinds alone count, as before
  expect((await clusterStatus(NATS, { nc, bucket })).unowned).toEqual({});
}, 30_000);
