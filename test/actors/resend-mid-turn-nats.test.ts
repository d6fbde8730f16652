/**
 * Review R2-F2, part 2, over real NATS (the shared server, NATS_URL or 127.0.0.1:4222; its own membership bucket and
 * kind): a payment turn checkpoints and waits in its outside call on host A; host B joins and takes the actor's
 * partition; the caller's resends (its attempts time out) reach B. The caller must get A's real answer, "completed",
 * not the "already in progress" B computed from the checkpointed state before pending markers (test/actors/
 * resend-mid-turn.test.ts covers the cases one by one on two hosts over a lossy in-process bus). And when A's
 * heartbeat stops mid-turn (killed, or cut off from NATS), its marker holds nothing back: B takes the partition when
 * the membership drops A, a few seconds, and answers the resend at once instead of after the marker's ~2 min.
 */
import { afterAll, beforeAll, expect, test } from "bun:test";
import { Kvm } from "@nats-io/kv";
import { Type as T } from "@sinclair/typebox";
import { ActorClient } from "../../actors/runtime/client.ts";
import { defineActor } from "../../actors/runtime/define-actor.ts";
import { ActorHost } from "../../actors/runtime/host.ts";
import { attachHost } from "../../actors/transport/index.ts";
import { NatsTransport, type NatsTransportOptions } from "../../actors/transport/nats.ts";
import { partitionOf, rendezvousOwner } from "../../actors/transport/placement.ts";
import { createTestDatabase, type TestDatabase } from "../helpers/db.ts";

const NATS = process.env.TEST_NATS_URL ?? "nats://127.0.0.1:4222";
const run = Math.random().toString(36).slice(2, 8);
const buckets: string[] = [];
const PARTITIONS = 16;
const TTL_MS = 3000;

/** The outside call of each actor's payment (by id): the test decides when it returns. */
type Resolvers = ReturnType<typeof Promise.withResolvers<void>>;
const gates = new Map<string, { reached: Resolvers; release: Resolvers }>();
function gate(id: string) {
  let g = gates.get(id);
  if (!g) gates.set(id, (g = { reached: Promise.withResolvers<void>(), release: Promise.withResolvers<void>() }));
  return g;
}
const runs = new Map<string, number>();

const payer = defineActor({
  kind: `rmt-nats-${run}`,
  initialState: () => ({ status: "new" as "new" | "paying" | "unknown" | "paid" }),
  messages: { pay: T.Object({}) },
  // as the cart's: a state loaded mid-payment is taken for a turn that died there
  async onActivate(ctx) {
    if (ctx.state.status === "paying") ctx.state.status = "unknown";
  },
  handlers: {
    async pay(ctx) {
      runs.set(ctx.id, (runs.get(ctx.id) ?? 0) + 1);
      if (ctx.state.status === "paid") return { outcome: "completed" };
      if (ctx.state.status !== "new") return { outcome: "already_in_progress" };
      ctx.state.status = "paying";
      await ctx.checkpoint();
      gate(ctx.id).reached.resolve();
      await gate(ctx.id).release.promise; // the outside call
      ctx.state.status = "paid";
      return { outcome: "completed" };
    },
  },
});

let db: TestDatabase;
const opened: { close(): Promise<unknown> }[] = [];

/** A membership bucket of the test's own (its hosts alone decide placement there). */
function newBucket(): string {
  const bucket = `actor_hosts_rmt_${run}_${buckets.length}`;
  buckets.push(bucket);
  return bucket;
}

function opts(bucket: string, hostId?: string): NatsTransportOptions {
  return { servers: NATS, bucket, partitions: PARTITIONS, replicas: 1, ttlMs: TTL_MS, ...(hostId ? { hostId } : {}) };
}

async function startHost(bucket: string, hostId: string): Promise<{ transport: NatsTransport; host: ActorHost }> {
  const transport = await NatsTransport.connect(opts(bucket, hostId));
  const host = new ActorHost({ transport, sql: db.sql, definitions: [payer], caller: new ActorClient(transport), reminderPollMs: 0 });
  attachHost(transport, host);
  await host.start();
  opened.push({ close: () => host.stop() }, transport);
  return { transport, host };
}

beforeAll(async () => {
  db = await createTestDatabase();
});
afterAll(async () => {
  for (const g of gates.values()) g.release.resolve();
  for (const o of opened.reverse()) await o.close().catch(() => {});
  const t = await NatsTransport.connect({ servers: NATS });
  for (const bucket of buckets) await (await new Kvm(t.nc).open(bucket)).destroy().catch(() => {});
  await t.close();
  await db.drop();
});

/** An actor id whose partition `owner` wins among `hosts`. */
function idOwnedBy(owner: string, hosts: string[], prefix: string): string {
  for (let i = 0; ; i++) if (rendezvousOwner(payer.kind, partitionOf(`${prefix}-${i}`, PARTITIONS), hosts) === owner) return `${prefix}-${i}`;
}

async function statusOf(id: string): Promise<string> {
  const rows = await db.sql<{ state: { status: string } }[]>`SELECT state FROM actor_state WHERE kind = ${payer.kind} AND id = ${id}`;
  return rows[0].state.status;
}

test("a caller whose resends reach the new owner while the old one is in its outside call gets the old one's answer", async () => {
  const bucket = newBucket();
  const [hostA, hostB] = [`rmt-a-${run}`, `rmt-b-${run}`];
  // an actor whose partition moves to B when B joins
  const id = idOwnedBy(hostB, [hostA, hostB], "cart");
  const a = await startHost(bucket, hostA);
  const gateway = await NatsTransport.connect(opts(bucket));
  opened.push(gateway);
  // each attempt waits 300 ms: while A is in its outside call they time out and the caller resends
  const client = new ActorClient(gateway, { defaultTimeoutMs: 15_000, attemptTimeoutMs: 300 });
  const answer = client.ask(payer, id, "pay", {});
  await gate(id).reached.promise;
  const b = await startHost(bucket, hostB);
  const end = Date.now() + 5000;
  const p = partitionOf(id, PARTITIONS);
  while (Date.now() < end && !(b.transport.ownership()[payer.kind]?.includes(p) && !a.transport.ownership()[payer.kind]?.includes(p))) await Bun.sleep(20);
  expect(b.transport.ownership()[payer.kind]).toContain(p);
  await Bun.sleep(1500); // resends reach B meanwhile
  gate(id).release.resolve();
  expect(await answer).toEqual({ outcome: "completed" });
  expect(runs.get(id)).toBe(1);
  expect(await statusOf(id)).toBe("paid");
  // partition subjects are shared by every bucket: hosts left serving would take the next test's messages
  for (const h of [a, b]) {
    await h.host.stop();
    await h.transport.close();
  }
}, 30_000);

test("when the old owner's heartbeat stops mid-turn, the new owner answers the caller's resend within seconds", async () => {
  const bucket = newBucket();
  const [hostA, hostB] = [`rmt-c-${run}`, `rmt-d-${run}`];
  const id = idOwnedBy(hostA, [hostA, hostB], "cart-dead");
  const a = await startHost(bucket, hostA);
  const b = await startHost(bucket, hostB);
  const gateway = await NatsTransport.connect(opts(bucket));
  opened.push(gateway);
  const client = new ActorClient(gateway, { defaultTimeoutMs: 20_000, attemptTimeoutMs: 300 });
  const answer = client.ask(payer, id, "pay", {});
  await gate(id).reached.promise;
  // A drops off NATS without leaving the bucket (as a killed process, or one cut off from NATS): its heartbeat stops,
  // and its turn is still in its outside call. Its marker is live for the caller's deadline + 120 s.
  const stoppedAt = Date.now();
  await a.transport.nc.close();
  // B takes the partition once A's last heartbeat is TTL_MS old, loads the actor (its onActivate takes the payment
  // for dead: "unknown") and runs the resend: what the caller gets when a host dies mid-payment (the cart reconciles)
  expect(await answer).toEqual({ outcome: "already_in_progress" });
  const waitedMs = Date.now() - stoppedAt;
  expect(waitedMs).toBeLessThan(TTL_MS + 7000);
  expect(b.transport.ownership()[payer.kind]).toContain(partitionOf(id, PARTITIONS));
  expect(runs.get(id)).toBe(2);
  expect(await statusOf(id)).toBe("unknown");
  // A was alive after all: its final write fails the version fence (B's activation wrote), the state stands
  gate(id).release.resolve();
  const end = Date.now() + 5000;
  while (Date.now() < end && (await db.sql`SELECT 1 FROM actor_inbox WHERE kind = ${payer.kind} AND id = ${id}`).length) await Bun.sleep(50);
  expect(await db.sql`SELECT 1 FROM actor_inbox WHERE kind = ${payer.kind} AND id = ${id}`).toHaveLength(0); // its failed run took its marker back
  expect(await statusOf(id)).toBe("unknown");
  console.log(`[resend-mid-turn-nats] answered ${waitedMs} ms after the old owner's heartbeat stopped (marker live for ~135 s)`);
}, 40_000);
