/**
 * The NATS transport against the shared single-node server (NATS_URL or 127.0.0.1:4222): the transport contract,
 * placement on one node, durable event consumers and the createTransport factory. Every test uses its own
 * membership bucket, kinds, topics and stream, and removes them afterwards.
 */
import { afterAll, describe, expect, test } from "bun:test";
import { jetstreamManager } from "@nats-io/jetstream";
import { Kvm } from "@nats-io/kv";
import { NatsTransport, type NatsTransportOptions } from "../../actors/transport/nats.ts";
import { attachHost, createTransport } from "../../actors/transport/index.ts";
import { InProcessTransport } from "../../actors/transport/in-process.ts";
import { partitionOf } from "../../actors/transport/placement.ts";
import { ActorError } from "../../actors/runtime/errors.ts";
import { ActorClient } from "../../actors/runtime/client.ts";
import { defineActor } from "../../actors/runtime/define-actor.ts";
import { Type as T } from "@sinclair/typebox";
import { PgProxy } from "../helpers/pg-proxy.ts";
import { transportContract } from "./transport-contract.ts";

const NATS = process.env.TEST_NATS_URL ?? "nats://127.0.0.1:4222";
const run = Math.random().toString(36).slice(2, 8);
const buckets = new Set<string>();
const streams = new Set<string>();

function opts(extra: Partial<NatsTransportOptions> = {}): NatsTransportOptions {
  const bucket = `actor_hosts_test_${run}`;
  buckets.add(bucket);
  return { servers: NATS, bucket, partitions: 16, replicas: 1, ...extra };
}

afterAll(async () => {
  const t = await NatsTransport.connect({ servers: NATS });
  const kvm = new Kvm(t.nc);
  for (const b of buckets) await (await kvm.open(b)).destroy().catch(() => {});
  const jsm = await jetstreamManager(t.nc);
  for (const s of streams) await jsm.streams.delete(s).catch(() => {});
  await t.close();
});

transportContract("nats (single node)", async () => {
  // one process both serves and calls, through two connections, as a gateway and a host would
  const server = await NatsTransport.connect(opts({ hostId: `contract-${run}` }));
  const caller = await NatsTransport.connect(opts());
  const both = {
    name: "nats",
    nc: server.nc,
    request: caller.request.bind(caller),
    serve: server.serve.bind(server),
    publish: caller.publish.bind(caller),
    subscribe: server.subscribe.bind(server),
    close: async () => {
      await caller.close();
      await server.close();
    },
  };
  return { transport: both, cleanup: () => both.close() };
});

describe("NATS placement on one server", () => {
  test("a lone host owns every partition of the kinds it serves, and a gateway owns none", async () => {
    const host = await NatsTransport.connect(opts({ hostId: `solo-${run}` }));
    const gateway = await NatsTransport.connect(opts());
    await host.serve(`solo-kind-${run}`, async (env) => ({ ok: true, value: env.id }));
    expect(host.ownership()[`solo-kind-${run}`]).toEqual(Array.from({ length: 16 }, (_, i) => i));
    expect(gateway.ownership()).toEqual({});
    const reply = await gateway.request({ msgId: "m", kind: `solo-kind-${run}`, id: "abc", type: "x", body: {}, deadline: Date.now() + 1000, attempt: 1 }, 1000);
    expect(reply).toEqual({ ok: true, value: "abc" });
    await gateway.close();
    await host.close();
  });

  test("two hosts split the partitions, and when one leaves the other takes them all and the moved actors are deactivated", async () => {
    const kind = `pair-${run}`;
    const deactivated: string[] = [];
    const a = await NatsTransport.connect(opts({ hostId: `pair-a-${run}` }));
    const b = await NatsTransport.connect(opts({ hostId: `pair-b-${run}` }));
    const served = (who: string) => async () => ({ ok: true as const, value: who });
    a.attachHost({ deactivate: (pred) => { for (let i = 0; i < 200; i++) if (pred(kind, `id${i}`)) deactivated.push(`id${i}`); }, activationCount: () => 0 });
    await a.serve(kind, served("a"));
    expect(a.ownership()[kind]!.length).toBe(16);
    await b.serve(kind, served("b"));
    // a learns about b through the bucket watch
    const end = Date.now() + 3000;
    while (Date.now() < end && a.ownership()[kind]!.length + b.ownership()[kind]!.length !== 16) await Bun.sleep(20);
    const pa = a.ownership()[kind]!;
    const pb = b.ownership()[kind]!;
    expect(pa.length + pb.length).toBe(16);
    expect(pa.filter((p) => pb.includes(p))).toEqual([]);
    expect(pa.length).toBeGreaterThan(0);
    expect(pb.length).toBeGreaterThan(0);
    // a deactivated exactly the ids that live in partitions b took
    const expected = Array.from({ length: 200 }, (_, i) => `id${i}`).filter((id) => pb.includes(partitionOf(id, 16)));
    expect(deactivated.sort()).toEqual(expected.sort());
    await b.close(); // a clean leave deletes b's key: a takes over without waiting for the TTL
    const end2 = Date.now() + 2000;
    while (Date.now() < end2 && a.ownership()[kind]!.length !== 16) await Bun.sleep(20);
    expect(a.ownership()[kind]!.length).toBe(16);
    await a.close();
  });
});

describe("a partition owned by two hosts at once (a move in progress)", () => {
  test("each message reaches exactly one of the two owners, so the caller gets one reply per message", async () => {
    const kind = `both-${run}`;
    // Two hosts with their own membership buckets: each sees only itself and owns every partition, as the old and
    // the new owner both do for a moment while a partition moves.
    const a = await NatsTransport.connect(opts({ hostId: `both-a-${run}`, bucket: `actor_hosts_test_${run}_a` }));
    const b = await NatsTransport.connect(opts({ hostId: `both-b-${run}`, bucket: `actor_hosts_test_${run}_b` }));
    buckets.add(`actor_hosts_test_${run}_a`).add(`actor_hosts_test_${run}_b`);
    const gateway = await NatsTransport.connect(opts());
    const runs: string[] = [];
    const served = (who: string) => async (env: { msgId: string }) => {
      runs.push(env.msgId);
      await Bun.sleep(who === "a" ? 5 : 40); // whoever runs it, a second run would be the other host's
      return { ok: true as const, value: who };
    };
    try {
      await a.serve(kind, served("a"));
      await b.serve(kind, served("b"));
      expect(a.ownership()[kind]!.length).toBe(16);
      expect(b.ownership()[kind]!.length).toBe(16);
      const msgIds = Array.from({ length: 40 }, (_, i) => `m-${i}`);
      const replies = await Promise.all(
        msgIds.map((msgId, i) => gateway.request({ msgId, kind, id: `id${i}`, type: "x", body: {}, deadline: Date.now() + 5000, attempt: 1 }, 3000)),
      );
      expect(replies.every((r) => r.ok)).toBe(true);
      await Bun.sleep(100); // a second delivery would have run by now
      expect(runs.sort()).toEqual([...msgIds].sort());
    } finally {
      await gateway.close();
      await a.close();
      await b.close();
    }
  });
});

describe("a partition moving or a host leaving while requests are in flight", () => {
  const ATTEMPT_MS = 3000;

  /**
   * Requests sent through ActorClient (3 s per attempt, as in production) at a steady rate until stopped, whether or
   * not earlier ones have been answered (callers blocked on a held host would otherwise stop sending). A request its
   * host drops unanswered takes at least one attempt timeout; one answered with the retryable actor_unavailable is
   * retried at once.
   */
  function streamRequests(gateway: NatsTransport, kind: string, everyMs = 2) {
    const client = new ActorClient(gateway, { attemptTimeoutMs: ATTEMPT_MS, defaultTimeoutMs: 10_000 });
    const def = defineActor({ kind, initialState: () => ({}), messages: { x: T.Object({}) }, handlers: { x: () => null } });
    const durations: number[] = [];
    const failures: string[] = [];
    const inFlight = new Set<Promise<void>>();
    let n = 0;
    const timer = setInterval(() => {
      const t0 = performance.now();
      const p: Promise<void> = client.ask(def, `id-${n++}`, "x", {}).then(
        () => void durations.push(performance.now() - t0),
        (e) => void failures.push(String(e)),
      );
      inFlight.add(p);
      void p.then(() => inFlight.delete(p));
    }, everyMs);
    return {
      async stop() {
        clearInterval(timer);
        await Promise.all(inFlight);
        return { slowest: Math.max(...durations), answered: durations.length, failures };
      },
    };
  }

  /** A TCP proxy in front of the NATS server, so a test can hold what one host sends or receives. */
  async function natsProxy(): Promise<{ proxy: PgProxy; url: string }> {
    const u = new URL(NATS);
    const proxy = new PgProxy({ host: u.hostname, port: Number(u.port || 4222) });
    await proxy.start();
    return { proxy, url: `nats://127.0.0.1:${proxy.port}` };
  }

  const served = async (env: { id: string }) => ({ ok: true as const, value: env.id });

  test("when a second host takes partitions over, requests the old owner got after the move are answered well under the attempt timeout", async () => {
    const kind = `move-${run}`;
    const { proxy, url } = await natsProxy();
    const a = await NatsTransport.connect(opts({ hostId: `move-a-${run}`, servers: url }));
    const b = await NatsTransport.connect(opts({ hostId: `move-b-${run}` }));
    const gateway = await NatsTransport.connect(opts());
    try {
      await a.serve(kind, served);
      expect(a.ownership()[kind]!.length).toBe(16);
      const load = streamRequests(gateway, kind);
      await Bun.sleep(200);
      // The old owner's UNSUBs (and its replies) are late to reach the server: meanwhile the server still gives it
      // a share of the moved partitions' messages, which it must answer rather than drop.
      const heldAt = performance.now();
      proxy.stallToServer();
      await b.serve(kind, served);
      const end = Date.now() + 3000;
      while (Date.now() < end && a.ownership()[kind]!.length === 16) await Bun.sleep(10);
      expect(a.ownership()[kind]!.length).toBeLessThan(16);
      await Bun.sleep(300);
      proxy.resume();
      const heldMs = performance.now() - heldAt;
      await Bun.sleep(500);
      const { slowest, answered, failures } = await load.stop();
      expect(failures).toEqual([]);
      expect(answered).toBeGreaterThan(100);
      // nothing waited out an attempt timeout: the slowest answer is the hold (its replies were held too) and a retry
      expect(slowest).toBeLessThan(Math.min(ATTEMPT_MS, heldMs + 1000));
    } finally {
      proxy.resume();
      await gateway.close();
      await b.close();
      await a.close();
      await proxy.down();
    }
  }, 30_000);

  test("when a host leaves, requests routed to it before the others took over are answered well under the attempt timeout", async () => {
    const kind = `leave-${run}`;
    const { proxy, url } = await natsProxy();
    const a = await NatsTransport.connect(opts({ hostId: `leave-a-${run}` }));
    const b = await NatsTransport.connect(opts({ hostId: `leave-b-${run}`, servers: url }));
    const gateway = await NatsTransport.connect(opts());
    try {
      await a.serve(kind, served);
      await b.serve(kind, served);
      const end = Date.now() + 3000;
      while (Date.now() < end && a.ownership()[kind]!.length !== 16 - b.ownership()[kind]!.length) await Bun.sleep(10);
      expect(b.ownership()[kind]!.length).toBeGreaterThan(0);
      const load = streamRequests(gateway, kind);
      await Bun.sleep(200);
      // b's link is slow both ways while it stops: messages for its partitions keep arriving until its leave (and
      // any UNSUB) reaches the server, and must be answered, not dropped.
      const heldAt = performance.now();
      proxy.stall();
      const closing = b.close();
      await Bun.sleep(300);
      proxy.resume();
      const heldMs = performance.now() - heldAt;
      await closing;
      await Bun.sleep(500);
      const { slowest, answered, failures } = await load.stop();
      expect(failures).toEqual([]);
      expect(answered).toBeGreaterThan(100);
      expect(slowest).toBeLessThan(Math.min(ATTEMPT_MS, heldMs + 1000));
      expect(a.ownership()[kind]!.length).toBe(16);
    } finally {
      proxy.resume();
      await gateway.close();
      await b.close();
      await a.close();
      await proxy.down();
    }
  }, 30_000);
});

describe("retries reaching the same host", () => {
  test("a retried msgId gets the remembered reply without running again; an actor_unavailable reply is not remembered", async () => {
    const kind = `once-${run}`;
    const host = await NatsTransport.connect(opts({ hostId: `once-${run}` }));
    const gateway = await NatsTransport.connect(opts());
    const calls = new Map<string, number>();
    await host.serve(kind, async (env) => {
      calls.set(env.id, (calls.get(env.id) ?? 0) + 1);
      if (env.id === "busy") return { ok: false, error: { code: "actor_unavailable", message: "moved" } };
      await Bun.sleep(50);
      return { ok: true, value: calls.get(env.id) };
    });
    const env = (id: string) => ({ msgId: `m-${id}`, kind, id, type: "x", body: {}, deadline: Date.now() + 5000, attempt: 1 });
    // two attempts while the first is still running join it, a later one is answered from memory
    const [r1, r2] = await Promise.all([gateway.request(env("w"), 1000), gateway.request({ ...env("w"), attempt: 2 }, 1000)]);
    const r3 = await gateway.request({ ...env("w"), attempt: 3 }, 1000);
    expect([r1, r2, r3]).toEqual([{ ok: true, value: 1 }, { ok: true, value: 1 }, { ok: true, value: 1 }]);
    expect(calls.get("w")).toBe(1);
    await gateway.request(env("busy"), 1000);
    await gateway.request(env("busy"), 1000);
    expect(calls.get("busy")).toBe(2);
    await gateway.close();
    await host.close();
  });
});

describe("durable event consumers", () => {
  test("an event published while the durable subscriber was down is delivered when it comes back", async () => {
    const stream = `ACTOR_EVENTS_TEST_${run}`;
    streams.add(stream);
    const topic = `durable-${run}`;
    const t = await NatsTransport.connect(opts({ eventsStream: stream }));
    const got: unknown[] = [];
    const stop = await t.subscribeDurable(topic, `indexer-${run}`, (e) => void got.push(e));
    await t.publish(topic, { n: 1 });
    for (let i = 0; i < 100 && got.length < 1; i++) await Bun.sleep(20);
    expect(got).toEqual([{ n: 1 }]);
    await stop();
    await t.publish(topic, { n: 2 }); // nobody listening: the stream keeps it
    await t.publish(topic, { n: 3 });
    await t.nc.flush();
    await Bun.sleep(100);
    expect(got).toEqual([{ n: 1 }]);
    const stop2 = await t.subscribeDurable(topic, `indexer-${run}`, (e) => void got.push(e));
    for (let i = 0; i < 100 && got.length < 3; i++) await Bun.sleep(20);
    expect(got).toEqual([{ n: 1 }, { n: 2 }, { n: 3 }]);
    await stop2();
    await t.close();
  });

  test("an event whose handler throws is delivered again", async () => {
    const stream = `ACTOR_EVENTS_TEST_${run}`;
    streams.add(stream);
    const topic = `retry-${run}`;
    const t = await NatsTransport.connect(opts({ eventsStream: stream }));
    let calls = 0;
    const stop = await t.subscribeDurable(topic, `flaky-${run}`, () => {
      calls++;
      if (calls === 1) throw new Error("index not ready");
    });
    await t.publish(topic, { n: 1 });
    for (let i = 0; i < 150 && calls < 2; i++) await Bun.sleep(20);
    expect(calls).toBe(2);
    await stop();
    await t.close();
  });
});

describe("createTransport", () => {
  test("without NATS_URL it is the in-process bus", async () => {
    const t = await createTransport({ NATS_URL: "", ACTOR_PARTITIONS: 64 });
    expect(t).toBeInstanceOf(InProcessTransport);
    attachHost(t, { deactivate: () => {}, activationCount: () => 0 }); // a no-op, not an error
    await t.close();
  });

  test("with NATS_URL it is a connected NATS transport using ACTOR_PARTITIONS", async () => {
    const t = await createTransport({ NATS_URL: NATS, ACTOR_PARTITIONS: 8 });
    expect(t).toBeInstanceOf(NatsTransport);
    expect((t as NatsTransport).partitions).toBe(8);
    const err = await t
      .request({ msgId: "m", kind: `none-${run}`, id: "x", type: "t", body: {}, deadline: Date.now() + 500, attempt: 1 }, 500)
      .catch((e) => e);
    expect(err).toBeInstanceOf(ActorError);
    expect(err.code).toBe("actor_unavailable");
    await t.close();
  });
});
