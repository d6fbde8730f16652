/**
 * Review R2-F2, part 2: over NATS a turn that checkpointed mid-turn (`ctx.checkpoint()` before an outside call, as the
 * cart's payment leg does) may still be running on host A when its partition moves to host B. The caller's resend of
 * the same message reaches B. B must not answer it from the half-finished turn's state ("already in progress",
 * reaching the caller before A's real "completed"), nor let its activation take the live turn for a dead one (the
 * cart's onActivate marks such a session SETTLEMENT_UNKNOWN, a write that fences out A's real result). The
 * checkpoint leaves a pending marker in actor_inbox: until it expires, a resend answers the retryable
 * actor_unavailable and no other activation loads the actor; A's reply replaces the marker, A's failure deletes it.
 * The marker names A: once A leaves the membership (killed: its heartbeat stops) it holds nothing back, and the
 * resend runs the handler at once (its onActivate reconciles), as before markers.
 *
 * Two ActorHosts in this process on one Postgres, each on its own in-process bus marked lossy (NATS can lose a reply)
 * with a membership the test controls (`members`): a test hands each attempt to the host it chooses, as a partition
 * move would.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { Type as T } from "@sinclair/typebox";
import { ActorClient } from "../../actors/runtime/client.ts";
import type { Clock } from "../../actors/runtime/clock.ts";
import { defineActor } from "../../actors/runtime/define-actor.ts";
import type { ReplyEnvelope, RequestEnvelope } from "../../actors/runtime/envelope.ts";
import { ActorError, fail } from "../../actors/runtime/errors.ts";
import { ActorHost, checkpointWith } from "../../actors/runtime/host.ts";
import { isWriteRefused } from "../../actors/runtime/state-write.ts";
import { InProcessTransport } from "../../actors/transport/in-process.ts";
import { MemberView, type HostBeat } from "../../actors/transport/placement.ts";
import type { HostMembership, Transport } from "../../actors/transport/transport.ts";
import type { LogFields, Logger } from "../../infra/log.ts";
import { createTestDatabase, type TestDatabase } from "../helpers/db.ts";

/** The outside call of each payment (by ref): the test decides when it returns. */
type Resolvers = ReturnType<typeof Promise.withResolvers<void>>;
const gates = new Map<string, { reached: Resolvers; release: Resolvers }>();
function gate(ref: string) {
  let g = gates.get(ref);
  if (!g) gates.set(ref, (g = { reached: Promise.withResolvers<void>(), release: Promise.withResolvers<void>() }));
  return g;
}
/** How often the payment handler ran per ref, on whichever host. */
const runs = new Map<string, number>();

type PayState = { status: "new" | "paying" | "unknown" | "paid"; note?: string };

const payer = defineActor({
  kind: "rmt-payer",
  initialState: (): PayState => ({ status: "new" }),
  messages: {
    /** `reconcile`: a run that finds the payment's outcome unknown (its first run died) settles it and answers. */
    pay: T.Object({ ref: T.String(), decline: T.Optional(T.Boolean()), reconcile: T.Optional(T.Boolean()) }),
    /** The same, its checkpoint riding a write of its own (checkpointWith); `refuse`: that write's guard refuses. */
    payRiding: T.Object({ ref: T.String(), refuse: T.Boolean() }),
    get: T.Object({}),
  },
  reentrant: ["get"],
  // as the cart's: a state loaded mid-payment is taken for a turn that died there (money may have moved)
  async onActivate(ctx) {
    if (ctx.state.status === "paying") ctx.state.status = "unknown";
  },
  handlers: {
    async pay(ctx, body) {
      runs.set(body.ref, (runs.get(body.ref) ?? 0) + 1);
      if (ctx.state.status === "paid") return { outcome: "completed" };
      if (ctx.state.status === "unknown" && body.reconcile) {
        ctx.state.status = "paid";
        return { outcome: "reconciled" };
      }
      if (ctx.state.status !== "new") return { outcome: "already_in_progress" };
      ctx.state.status = "paying";
      await ctx.checkpoint(); // the intent is durable before the outside call
      const g = gate(body.ref);
      g.reached.resolve();
      await g.release.promise;
      if (body.decline) throw fail("PAYMENT_DECLINED", "declined");
      ctx.state.status = "paid";
      return { outcome: "completed" };
    },
    async payRiding(ctx, body) {
      runs.set(body.ref, (runs.get(body.ref) ?? 0) + 1);
      if (ctx.state.status !== "new") return { outcome: "already_in_progress" };
      ctx.state.status = "paying";
      try {
        await checkpointWith(ctx, { ctes: ctx.sql`intent AS (SELECT ${body.ref}::text AS ref)`, select: ctx.sql`CASE WHEN ${body.refuse} THEN actor_write_refused('test') ELSE 1 END AS guard` });
      } catch (err) {
        if (!isWriteRefused(err)) throw err;
        ctx.state.note = "refused, general path"; // nothing of the statement was written: no marker either
        await ctx.checkpoint();
      }
      const g = gate(body.ref);
      g.reached.resolve();
      await g.release.promise;
      ctx.state.status = "paid";
      const answer = { outcome: "completed" };
      await checkpointWith(ctx, { ctes: ctx.sql`done AS (SELECT 1 AS one)`, select: ctx.sql`1 AS one` }, { finalReply: answer });
      return answer;
    },
    async get(ctx) {
      return ctx.state;
    },
  },
});

let db: TestDatabase;
const hosts: ActorHost[] = [];

/** The hosts alive in the membership every lossy transport below shares (a host leaves it when it "dies"). */
const members = new Set<string>();
let hostSeq = 0;

/**
 * The in-process bus standing in for NATS, which can lose a reply; `self`: its host's id in `members`, or in the
 * membership `isLive` answers for.
 */
function lossyTransport(self = `host-${++hostSeq}`, isLive: HostMembership["isLive"] = (hostId) => members.has(hostId)): Transport {
  const t = new InProcessTransport();
  members.add(self);
  return {
    name: "in-process, lossy",
    lossless: false,
    hosts: { self, isLive },
    request: (env, timeoutMs) => t.request(env, timeoutMs),
    serve: (kind, handler) => t.serve(kind, handler),
    publish: (topic, event) => t.publish(topic, event),
    subscribe: (topic, handler) => t.subscribe(topic, handler),
    close: () => t.close(),
  };
}

async function startHost(transport: Transport = lossyTransport(), more: { wallClock?: Clock; log?: Logger } = {}): Promise<ActorHost> {
  const host = new ActorHost({ transport, sql: db.sql, definitions: [payer], caller: new ActorClient(transport), reminderPollMs: 0, ...more });
  await host.start();
  hosts.push(host);
  return host;
}

function envelope(id: string, body: RequestEnvelope["body"], type = "pay"): Omit<RequestEnvelope, "attempt"> {
  return { msgId: `msg-${id}`, kind: payer.kind, id, type, body, deadline: Date.now() + 10_000 };
}

/** How many seconds the message's inbox row is kept (and its marker live), by the database's clock. */
async function secondsLeftOf(id: string): Promise<{ pending: number | null; expires: number }> {
  const [row] = await db.sql<{ pending: number | null; expires: number }[]>`
    SELECT extract(epoch FROM pending_until - now())::float8 AS pending, extract(epoch FROM expires_at - now())::float8 AS expires
    FROM actor_inbox WHERE kind = ${payer.kind} AND id = ${id}`;
  return row;
}

/** The message's inbox row: its reply, or a marker (no reply, its run's token, live until its time passes). */
async function inboxOf(id: string): Promise<{ reply: ReplyEnvelope | null; pending_turn: string | null; live: boolean | null }[]> {
  const rows = await db.sql<{ reply: ReplyEnvelope | null; pending_turn: string | null; live: boolean | null }[]>`
    SELECT reply, pending_turn, pending_until > now() AS live FROM actor_inbox WHERE kind = ${payer.kind} AND id = ${id}`;
  return [...rows];
}

async function statusOf(id: string): Promise<string> {
  const rows = await db.sql<{ state: PayState }[]>`SELECT state FROM actor_state WHERE kind = ${payer.kind} AND id = ${id}`;
  return rows[0].state.status;
}

function codeOf(reply: ReplyEnvelope): string {
  return reply.ok ? `ok ${JSON.stringify(reply.value)}` : reply.error.code;
}

beforeAll(async () => {
  db = await createTestDatabase();
});
afterAll(async () => {
  for (const g of gates.values()) g.release.resolve();
  for (const h of hosts) await h.stop();
  await db.drop();
});

describe("a resend that reaches another host while the first run is in its outside call", () => {
  test("is answered actor_unavailable, not from the half-finished state, and then gets the first run's reply", async () => {
    const [a, b] = [await startHost(), await startHost()];
    const env = envelope("p1", { ref: "p1" });
    const first = a.dispatch({ ...env, attempt: 1 });
    await gate("p1").reached.promise;
    expect(await inboxOf("p1")).toEqual([{ reply: null, pending_turn: expect.any(String), live: true }]);
    // the partition moved: the caller's resend reaches B, which has no activation and no reply for it
    expect(codeOf(await b.dispatch({ ...env, attempt: 2 }))).toBe("actor_unavailable");
    expect(runs.get("p1")).toBe(1);
    // B's activation did not load the checkpointed state (its onActivate would have marked it unknown)
    expect(await statusOf("p1")).toBe("paying");
    gate("p1").release.resolve();
    expect(codeOf(await first)).toBe('ok {"outcome":"completed"}');
    // the reply replaced the marker; the next resend gets it
    expect(await inboxOf("p1")).toEqual([{ reply: { ok: true, value: { outcome: "completed" } }, pending_turn: null, live: null }]);
    expect(codeOf(await b.dispatch({ ...env, attempt: 3 }))).toBe('ok {"outcome":"completed"}');
    expect(runs.get("p1")).toBe(1);
    expect(await statusOf("p1")).toBe("paid");
  });

  test("whose host already holds the actor's activation is answered actor_unavailable without running the handler", async () => {
    const [a, b] = [await startHost(), await startHost()];
    const env = envelope("p2", { ref: "p2" });
    await b.dispatch({ ...env, type: "get", body: {}, msgId: "read-p2", attempt: 1 }); // B loaded the actor before the move
    const first = a.dispatch({ ...env, attempt: 1 });
    await gate("p2").reached.promise;
    expect(codeOf(await b.dispatch({ ...env, attempt: 2 }))).toBe("actor_unavailable");
    expect(runs.get("p2")).toBe(1);
    gate("p2").release.resolve();
    expect(codeOf(await first)).toBe('ok {"outcome":"completed"}');
    expect(codeOf(await b.dispatch({ ...env, attempt: 3 }))).toBe('ok {"outcome":"completed"}');
  });

  test("leaves the caller with the first run's answer, completed, when A's reply to the first attempt is lost", async () => {
    const [a, b] = [await startHost(), await startHost()];
    // attempt 1 reaches A, whose reply never arrives (the partition moved); every resend reaches B
    const moving: Transport = {
      name: "moving partition",
      lossless: false,
      request: (env, timeoutMs) => {
        if (env.attempt > 1) return b.dispatch(env);
        void a.dispatch(env);
        return Bun.sleep(timeoutMs).then(() => Promise.reject(new ActorError("actor_unavailable", "timeout")));
      },
      serve: async () => {},
      publish: async () => {},
      subscribe: () => () => {},
      close: async () => {},
    };
    const client = new ActorClient(moving, { defaultTimeoutMs: 8000, attemptTimeoutMs: 200 });
    const answer = client.ask(payer, "p3", "pay", { ref: "p3" });
    await gate("p3").reached.promise;
    await Bun.sleep(600); // several resends reach B meanwhile
    gate("p3").release.resolve();
    expect(await answer).toEqual({ outcome: "completed" });
    expect(runs.get("p3")).toBe(1);
  });

  test("with a riding checkpoint (checkpointWith) is held back too, and the riding final reply replaces the marker", async () => {
    const [a, b] = [await startHost(), await startHost()];
    const env = envelope("p4", { ref: "p4", refuse: false }, "payRiding");
    const first = a.dispatch({ ...env, attempt: 1 });
    await gate("p4").reached.promise;
    expect(await inboxOf("p4")).toEqual([{ reply: null, pending_turn: expect.any(String), live: true }]);
    expect(codeOf(await b.dispatch({ ...env, attempt: 2 }))).toBe("actor_unavailable");
    gate("p4").release.resolve();
    expect(codeOf(await first)).toBe('ok {"outcome":"completed"}');
    expect(await inboxOf("p4")).toEqual([{ reply: { ok: true, value: { outcome: "completed" } }, pending_turn: null, live: null }]);
    expect(codeOf(await b.dispatch({ ...env, attempt: 3 }))).toBe('ok {"outcome":"completed"}');
  });

  test("a riding write refused by its guard leaves no marker, and the general path's checkpoint leaves one", async () => {
    const a = await startHost();
    const env = envelope("p5", { ref: "p5", refuse: true }, "payRiding");
    const first = a.dispatch({ ...env, attempt: 1 });
    await gate("p5").reached.promise;
    const rows = await inboxOf("p5");
    expect(rows).toEqual([{ reply: null, pending_turn: expect.any(String), live: true }]);
    gate("p5").release.resolve();
    expect(codeOf(await first)).toBe('ok {"outcome":"completed"}');
  });
});

describe("a pending marker", () => {
  test("is taken back when the first run fails after its checkpoint: a resend runs the handler at once", async () => {
    const [a, b] = [await startHost(), await startHost()];
    const env = envelope("f1", { ref: "f1", decline: true });
    const first = a.dispatch({ ...env, attempt: 1 });
    await gate("f1").reached.promise;
    gate("f1").release.resolve();
    expect(codeOf(await first)).toBe("PAYMENT_DECLINED");
    expect(await inboxOf("f1")).toHaveLength(0);
    // as before markers: the resend runs on the checkpointed state (the handler resumes from its checkpoint)
    expect(codeOf(await b.dispatch({ ...env, attempt: 2 }))).toBe('ok {"outcome":"already_in_progress"}');
    expect(runs.get("f1")).toBe(2);
  });

  test("whose time has passed (its host died mid-turn) holds nothing back, and the first run's late write is fenced out", async () => {
    const [a, b] = [await startHost(), await startHost()];
    const env = envelope("d1", { ref: "d1" });
    const first = a.dispatch({ ...env, attempt: 1 });
    await gate("d1").reached.promise;
    // the marker's time passes (its caller's deadline and the skew margin)
    await db.sql`UPDATE actor_inbox SET pending_until = now() - interval '1 second', expires_at = now() - interval '1 second' WHERE kind = ${payer.kind} AND id = 'd1'`;
    // B loads the actor (its onActivate takes the turn for dead) and the resend runs the handler
    expect(codeOf(await b.dispatch({ ...env, attempt: 2 }))).toBe('ok {"outcome":"already_in_progress"}');
    expect(await statusOf("d1")).toBe("unknown");
    gate("d1").release.resolve();
    expect(codeOf(await first)).toBe("actor_unavailable"); // fenced: B wrote since
    expect(await statusOf("d1")).toBe("unknown");
  });

  test("is kept by the inbox sweep until its time has passed", async () => {
    const a = await startHost();
    const env = envelope("s1", { ref: "s1" });
    const first = a.dispatch({ ...env, attempt: 1 });
    await gate("s1").reached.promise;
    await a.sweepInbox(true);
    expect(await inboxOf("s1")).toHaveLength(1);
    await db.sql`UPDATE actor_inbox SET pending_until = now() - interval '1 second', expires_at = now() - interval '1 second' WHERE kind = ${payer.kind} AND id = 's1'`;
    await a.sweepInbox(true);
    expect(await inboxOf("s1")).toHaveLength(0);
    gate("s1").release.resolve();
    // the run's reply is written even though its marker is gone
    expect(codeOf(await first)).toBe('ok {"outcome":"completed"}');
    expect(await inboxOf("s1")).toEqual([{ reply: { ok: true, value: { outcome: "completed" } }, pending_turn: null, live: null }]);
  });

  test("of a resend that reaches the first run's own host waits in its mailbox and gets the run's reply", async () => {
    const a = await startHost();
    const env = envelope("o1", { ref: "o1" });
    const first = a.dispatch({ ...env, attempt: 1 });
    await gate("o1").reached.promise;
    const resend = a.dispatch({ ...env, attempt: 2 });
    gate("o1").release.resolve();
    expect(codeOf(await first)).toBe('ok {"outcome":"completed"}');
    expect(codeOf(await resend)).toBe('ok {"outcome":"completed"}');
    expect(runs.get("o1")).toBe(1);
  });
});

describe("a pending marker whose host left the membership (killed: its heartbeat stopped)", () => {
  test("holds nothing back: the resend runs the handler at once, and the first run's late write is fenced out", async () => {
    const [a, b] = [await startHost(lossyTransport("k1-a")), await startHost()];
    const env = envelope("k1", { ref: "k1" });
    const first = a.dispatch({ ...env, attempt: 1 });
    await gate("k1").reached.promise;
    // while A is a member its marker holds B's load back, reads included
    expect(codeOf(await b.dispatch({ ...env, type: "get", body: {}, msgId: "read-k1", attempt: 1 }))).toBe("actor_unavailable");
    members.delete("k1-a");
    const started = performance.now();
    // B loads the actor (its onActivate takes the turn for dead) and the resend runs the handler, at once
    expect(codeOf(await b.dispatch({ ...env, attempt: 2 }))).toBe('ok {"outcome":"already_in_progress"}');
    expect(performance.now() - started).toBeLessThan(2000); // the marker itself is live for another ~130 s
    expect(await inboxOf("k1")).toEqual([{ reply: null, pending_turn: expect.stringMatching(/^k1-a\//), live: true }]);
    expect(await statusOf("k1")).toBe("unknown");
    expect(runs.get("k1")).toBe(2);
    // A was alive after all (cut off from the others): its final write fails the version fence, the caller's answer
    // stays B's, and the state B's activation wrote stands
    gate("k1").release.resolve();
    expect(codeOf(await first)).toBe("actor_unavailable");
    expect(await statusOf("k1")).toBe("unknown");
    expect(await inboxOf("k1")).toHaveLength(0); // A's failed run took its marker back
  });

  test("is replaced by the reply of the run that took over, which a later resend gets", async () => {
    const [a, b] = [await startHost(lossyTransport("k2-a")), await startHost()];
    const env = envelope("k2", { ref: "k2", reconcile: true });
    const first = a.dispatch({ ...env, attempt: 1 });
    await gate("k2").reached.promise;
    members.delete("k2-a");
    // the run on B settles the payment and writes its reply over A's marker, whose time has not passed
    expect(codeOf(await b.dispatch({ ...env, attempt: 2 }))).toBe('ok {"outcome":"reconciled"}');
    expect(await inboxOf("k2")).toEqual([{ reply: { ok: true, value: { outcome: "reconciled" } }, pending_turn: null, live: null }]);
    gate("k2").release.resolve();
    expect(codeOf(await first)).toBe("actor_unavailable"); // fenced
    expect(codeOf(await b.dispatch({ ...env, attempt: 3 }))).toBe('ok {"outcome":"reconciled"}');
    expect(runs.get("k2")).toBe(2);
    expect(await statusOf("k2")).toBe("paid");
  });

  test("of a host back under the same id whose run is gone holds nothing back on that host", async () => {
    // the first process of "k3-a" checkpointed and died; a new process with the same host id serves the actor
    const gone = await startHost(lossyTransport("k3-a"));
    const env = envelope("k3", { ref: "k3" });
    void gone.dispatch({ ...env, attempt: 1 });
    await gate("k3").reached.promise;
    const again = await startHost(lossyTransport("k3-a"));
    expect(codeOf(await again.dispatch({ ...env, attempt: 2 }))).toBe('ok {"outcome":"already_in_progress"}');
    expect(await statusOf("k3")).toBe("unknown");
  });
});

describe("over the lossless in-process bus", () => {
  test("a mid-turn checkpoint writes no marker: no statement of the turn or its activation touches actor_inbox", async () => {
    const host = await startHost(new InProcessTransport());
    const seen: string[] = [];
    db.sql.options.debug = (_conn: number, text: string) => void seen.push(text.replace(/\s+/g, " ").trim());
    try {
      const first = host.dispatch({ ...envelope("l1", { ref: "l1" }), attempt: 1 });
      await gate("l1").reached.promise;
      expect(await inboxOf("l1")).toHaveLength(0);
      gate("l1").release.resolve();
      expect(codeOf(await first)).toBe('ok {"outcome":"completed"}');
    } finally {
      db.sql.options.debug = false;
    }
    const turn = seen.filter((s) => !s.includes("FROM actor_inbox WHERE kind = $1 AND id = $2")); // inboxOf, the test's own read
    expect(turn.filter((s) => s.includes("actor_inbox"))).toEqual([]);
    // the load, the checkpoint's state statement and the final one: as before markers
    expect(turn).toHaveLength(3);
  });
});

describe("a pending marker's host, right after a JetStream stall longer than the TTL (review R2, G-1)", () => {
  /** A heartbeat as Membership writes it. */
  const beat = (hostId: string): HostBeat => ({ hostId, kinds: [payer.kind], partitions: 64, ttlMs: 3000, activations: {}, owned: {}, startedAt: 0, pid: 1, hostname: "h" });

  test("is not taken for dead while its retried beat has not landed yet: the resend waits for the first run's answer", async () => {
    // B's view of the membership bucket, fed as the watch would; the marker's liveness is what NatsTransport asks of it
    const view = new MemberView(3000);
    const t0 = 1_000_000;
    view.put("st-a", t0, beat("st-a"));
    view.put("st-b", t0, beat("st-b"));
    const a = await startHost(lossyTransport("st-a"));
    const b = await startHost(lossyTransport("st-b", (hostId) => !view.isGone(hostId)));
    const env = envelope("st1", { ref: "st1" });
    const first = a.dispatch({ ...env, attempt: 1 });
    await gate("st1").reached.promise;
    // JetStream stalls 4 s (a leader election); B's retried beat lands first, A's some 200 ms later
    view.put("st-b", t0 + 4000, beat("st-b"));
    expect(view.isLive("st-a")).toBe(false); // placement's view of the moment: A looks dead
    expect(codeOf(await b.dispatch({ ...env, attempt: 2 }))).toBe("actor_unavailable");
    expect(codeOf(await b.dispatch({ ...env, type: "get", body: {}, msgId: "read-st1", attempt: 1 }))).toBe("actor_unavailable");
    expect(runs.get("st1")).toBe(1);
    expect(await statusOf("st1")).toBe("paying"); // B's onActivate did not take the live turn for a dead one
    view.put("st-b", t0 + 4100, beat("st-b"));
    view.put("st-a", t0 + 4200, beat("st-a"));
    gate("st1").release.resolve();
    expect(codeOf(await first)).toBe('ok {"outcome":"completed"}');
    expect(codeOf(await b.dispatch({ ...env, attempt: 3 }))).toBe('ok {"outcome":"completed"}');
    expect(runs.get("st1")).toBe(1);
  });

  test("is taken for dead once others' beats kept landing for the grace period without its own", async () => {
    const view = new MemberView(3000);
    const t0 = 2_000_000;
    view.put("sg-a", t0, beat("sg-a"));
    view.put("sg-b", t0, beat("sg-b"));
    const a = await startHost(lossyTransport("sg-a"));
    const b = await startHost(lossyTransport("sg-b", (hostId) => !view.isGone(hostId)));
    const env = envelope("sg1", { ref: "sg1" });
    void a.dispatch({ ...env, attempt: 1 });
    await gate("sg1").reached.promise;
    view.put("sg-b", t0 + 4000, beat("sg-b")); // A past its TTL from here
    view.put("sg-b", t0 + 5000, beat("sg-b"));
    expect(codeOf(await b.dispatch({ ...env, attempt: 2 }))).toBe("actor_unavailable");
    view.put("sg-b", t0 + 6000, beat("sg-b")); // 2 s (the grace of a 1 s heartbeat) of B's beats, none of A's
    expect(codeOf(await b.dispatch({ ...env, attempt: 3 }))).toBe('ok {"outcome":"already_in_progress"}');
    expect(await statusOf("sg1")).toBe("unknown");
    gate("sg1").release.resolve();
  });
});

describe("a marker's and a reply's time left, from a host whose clock is off the database's (review R2, G-2)", () => {
  const TEN_MINUTES = 10 * 60_000;
  /** The host's clock, and its caller's (the same machine): `skewMs` off the database's. */
  const skewed = (skewMs: number): Clock => ({ now: () => Date.now() + skewMs });

  for (const [name, skewMs] of [
    ["behind", -TEN_MINUTES],
    ["ahead", TEN_MINUTES],
  ] as const) {
    test(`is the caller's time left plus the 120 s margin by the database's clock, with the host's clock 10 min ${name}`, async () => {
      const id = `sk-${name}`;
      const clock = skewed(skewMs);
      const a = await startHost(lossyTransport(), { wallClock: clock });
      const b = await startHost();
      const env = { ...envelope(id, { ref: id }), deadline: clock.now() + 10_000 };
      const first = a.dispatch({ ...env, attempt: 1 });
      await gate(id).reached.promise;
      const marker = await secondsLeftOf(id);
      expect(marker.pending).toBeGreaterThan(125);
      expect(marker.pending).toBeLessThanOrEqual(130.5);
      expect(marker.expires).toBeCloseTo(marker.pending!, 0);
      // the marker protects the turn: B's resend waits for A's answer
      expect(codeOf(await b.dispatch({ ...env, attempt: 2 }))).toBe("actor_unavailable");
      expect(runs.get(id)).toBe(1);
      gate(id).release.resolve();
      expect(codeOf(await first)).toBe('ok {"outcome":"completed"}');
      const reply = await secondsLeftOf(id);
      expect(reply.pending).toBeNull();
      expect(reply.expires).toBeGreaterThan(120);
      expect(reply.expires).toBeLessThanOrEqual(130.5);
      expect(codeOf(await b.dispatch({ ...env, attempt: 3 }))).toBe('ok {"outcome":"completed"}');
    });
  }
});

describe("the answer to a caller held back by a live marker (review R2, G-3)", () => {
  test("names no host: the marker's host goes to the log", async () => {
    const lines: { msg: string; fields?: LogFields }[] = [];
    const at = () => (msg: string, fields?: LogFields) => void lines.push({ msg, fields });
    const log: Logger = { debug: at(), info: at(), warn: at(), error: at(), child: () => log };
    const a = await startHost(lossyTransport("nh-a-secret-host-4242"));
    const b = await startHost(lossyTransport(), { log });
    const env = envelope("nh1", { ref: "nh1" });
    const first = a.dispatch({ ...env, attempt: 1 });
    await gate("nh1").reached.promise;
    const load = await b.dispatch({ ...env, type: "get", body: {}, msgId: "read-nh1", attempt: 1 });
    const resend = await b.dispatch({ ...env, attempt: 2 });
    for (const reply of [load, resend]) {
      expect(reply).toEqual({ ok: false, error: expect.objectContaining({ code: "actor_unavailable", message: "An earlier request for this resource is still being processed; retry shortly." }) });
    }
    expect(lines.find((l) => l.fields?.markerHost === "nh-a-secret-host-4242")).toBeDefined();
    gate("nh1").release.resolve();
    expect(codeOf(await first)).toBe('ok {"outcome":"completed"}');
  });
});
