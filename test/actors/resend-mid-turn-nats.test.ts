/**
 * Review R2-F2, part 2, over real NATS (the shared server, NATS_URL or 127.0.0.1:4222; its own membership bucket and
 * kind): a payment turn checkpoints and waits in its outside call on host A; host B joins and takes the actor's
 * partition; the caller's resends (its attempts time out) reach B. The caller must get A's real answer, "completed",
 * not the "already in progress" B computed from the checkpointed state before pending markers (test/actors/
 * resend-mid-turn.test.ts covers the cases one by one on two hosts over a lossy in-process bus).
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
const bucket = `actor_hosts_rmt_${run}`;
const PARTITIONS = 16;

const reached = Promise.withResolvers<void>();
const release = Promise.withResolvers<void>();
let runs = 0;

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
      runs++;
      if (ctx.state.status === "paid") return { outcome: "completed" };
      if (ctx.state.status !== "new") return { outcome: "already_in_progress" };
      ctx.state.status = "paying";
      await ctx.checkpoint();
      reached.resolve();
      await release.promise; // the outside call
      ctx.state.status = "paid";
      return { outcome: "completed" };
    },
  },
});

let db: TestDatabase;
const opened: { close(): Promise<unknown> }[] = [];

function opts(hostId?: string): NatsTransportOptions {
  return { servers: NATS, bucket, partitions: PARTITIONS, replicas: 1, ...(hostId ? { hostId } : {}) };
}

async function startHost(hostId: string): Promise<{ transport: NatsTransport; host: ActorHost }> {
  const transport = await NatsTransport.connect(opts(hostId));
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
  release.resolve();
  for (const o of opened.reverse()) await o.close().catch(() => {});
  const t = await NatsTransport.connect({ servers: NATS });
  await (await new Kvm(t.nc).open(bucket)).destroy().catch(() => {});
  await t.close();
  await db.drop();
});

test("a caller whose resends reach the new owner while the old one is in its outside call gets the old one's answer", async () => {
  const [hostA, hostB] = [`rmt-a-${run}`, `rmt-b-${run}`];
  // an actor whose partition moves to B when B joins
  let id = "";
  for (let i = 0; !id; i++) if (rendezvousOwner(payer.kind, partitionOf(`cart-${i}`, PARTITIONS), [hostA, hostB]) === hostB) id = `cart-${i}`;
  const a = await startHost(hostA);
  const gateway = await NatsTransport.connect(opts());
  opened.push(gateway);
  // each attempt waits 300 ms: while A is in its outside call they time out and the caller resends
  const client = new ActorClient(gateway, { defaultTimeoutMs: 15_000, attemptTimeoutMs: 300 });
  const answer = client.ask(payer, id, "pay", {});
  await reached.promise;
  const b = await startHost(hostB);
  const end = Date.now() + 5000;
  const p = partitionOf(id, PARTITIONS);
  while (Date.now() < end && !(b.transport.ownership()[payer.kind]?.includes(p) && !a.transport.ownership()[payer.kind]?.includes(p))) await Bun.sleep(20);
  expect(b.transport.ownership()[payer.kind]).toContain(p);
  await Bun.sleep(1500); // resends reach B meanwhile
  release.resolve();
  expect(await answer).toEqual({ outcome: "completed" });
  expect(runs).toBe(1);
  const rows = await db.sql<{ state: { status: string } }[]>`SELECT state FROM actor_state WHERE kind = ${payer.kind} AND id = ${id}`;
  expect(rows[0].state.status).toBe("paid");
}, 30_000);
