/**
 * An actor turn's log lines name the request its message serves (docs/operations.md, logs): the envelope carries the
 * request id the message was sent under (`requestId`), and the host runs the turn in that request's log scope, so
 * every line written during it — the handler's, the host's, a line of another logger (a payment rail's) and the turns
 * of the messages it sends — has `requestId`. A reminder turn and a message sent outside any request have none, even
 * when they run in a mailbox another request's message started. Over the in-process bus and over real NATS (the
 * shared server, NATS_URL or 127.0.0.1:4222, with a membership bucket and kinds of the test's own), where an
 * envelope's request id is untrusted input: one that is not a sane token is dropped.
 */
import { afterAll, afterEach, beforeAll, describe, expect, test } from "bun:test";
import { Kvm } from "@nats-io/kv";
import { Type as T } from "@sinclair/typebox";
import { ActorClient } from "../../actors/runtime/client.ts";
import { defineActor } from "../../actors/runtime/define-actor.ts";
import { REMINDER_PREFIX } from "../../actors/runtime/envelope.ts";
import { ActorHost } from "../../actors/runtime/host.ts";
import { LeftoverMarkers } from "../../actors/runtime/leftover-markers.ts";
import { attachHost } from "../../actors/transport/index.ts";
import { InProcessTransport } from "../../actors/transport/in-process.ts";
import { NatsTransport, type NatsTransportOptions } from "../../actors/transport/nats.ts";
import { partitionOf, partitionSubject } from "../../actors/transport/placement.ts";
import { inRequest, log as rootLog, setLogLevel, setLogSink } from "../../infra/log.ts";
import { createTestDatabase, type TestDatabase } from "../helpers/db.ts";

const NATS = process.env.TEST_NATS_URL ?? "nats://127.0.0.1:4222";
const run = Math.random().toString(36).slice(2, 8);
const PARTITIONS = 8;

/** A logger of its own, as a payment rail has (made once, outside any turn). */
const railLog = rootLog.child({ component: "probe-rail" });

/** The helper actor a probe turn asks (its own turn, its own line). */
const helper = defineActor({
  kind: `rid-helper-${run}`,
  initialState: () => ({ n: 0 }),
  messages: { echo: T.Object({ tag: T.String() }) },
  handlers: {
    async echo(ctx, body) {
      ctx.state.n += 1;
      ctx.log.info("helper turn", { tag: body.tag });
      return body.tag;
    },
  },
});

const probe = defineActor({
  kind: `rid-probe-${run}`,
  initialState: () => ({ n: 0 }),
  messages: {
    note: T.Object({ tag: T.String(), waitMs: T.Integer(), askHelper: T.Boolean() }),
    peek: T.Object({ tag: T.String() }),
    boom: T.Object({ tag: T.String() }),
    remind: T.Object({ at: T.Number() }),
  },
  reentrant: ["peek"],
  handlers: {
    async note(ctx, body) {
      ctx.log.info("probe turn started", { tag: body.tag });
      await Bun.sleep(body.waitMs);
      ctx.state.n += 1;
      railLog.warn("probe rail line", { tag: body.tag });
      if (body.askHelper) await ctx.ask(helper, `h-${ctx.id}`, "echo", { tag: body.tag });
      ctx.log.info("probe turn ended", { tag: body.tag });
      return body.tag;
    },
    peek(ctx, body) {
      ctx.log.info("probe read", { tag: body.tag });
      return ctx.state.n;
    },
    async boom(_ctx, body) {
      throw new Error(`probe failure ${body.tag}`);
    },
    async remind(ctx, body) {
      await ctx.schedule("ping", body.at, {});
      return null;
    },
  },
  reminders: {
    async ping(ctx) {
      ctx.log.info("probe reminder", {});
      ctx.state.n += 1;
    },
  },
});

let db: TestDatabase;
const lines: Record<string, unknown>[] = [];
let restore: () => void = () => {};

beforeAll(async () => {
  db = await createTestDatabase();
  restore = setLogSink((line) => void lines.push(JSON.parse(line)));
  // the level is process-wide and a service booted by an earlier test file may have left it at "error"
  setLogLevel("info");
});
afterAll(async () => {
  restore();
  setLogLevel("error"); // what the test services run at (test/helpers/server.ts)
  await db?.drop();
});
afterEach(() => void (lines.length = 0));

/** The lines whose message is `msg` and whose `tag` field is `tag`. */
const linesOf = (msg: string, tag?: string) => lines.filter((l) => l.msg === msg && (tag === undefined || l.tag === tag));

describe("in-process", () => {
  let transport: InProcessTransport;
  let client: ActorClient;
  let host: ActorHost;

  beforeAll(async () => {
    transport = new InProcessTransport();
    client = new ActorClient(transport);
    host = new ActorHost({ transport, sql: db.sql, definitions: [probe, helper], caller: client, reminderPollMs: 0 });
    await host.start();
  });
  afterAll(async () => {
    await host.stop();
    await transport.close();
  });

  test("every line of a turn names the request its message was sent under: the handler's, another logger's, and the turn it asks", async () => {
    const requestId = "trace-inproc-0001";
    expect(await inRequest(requestId, () => client.ask(probe, "p1", "note", { tag: "a", waitMs: 5, askHelper: true }))).toBe("a");
    for (const msg of ["probe turn started", "probe rail line", "helper turn", "probe turn ended"]) {
      const found = linesOf(msg, "a");
      expect(found.length).toBe(1);
      expect(found[0]!.requestId).toBe(requestId);
    }
    expect(linesOf("probe turn ended", "a")[0]).toMatchObject({ actor: `${probe.kind}/p1` });
  });

  test("the host's own line of a failed turn names the request", async () => {
    const requestId = "trace-inproc-boom-0001";
    const err = await inRequest(requestId, () => client.ask(probe, "p2", "boom", { tag: "b" })).catch((e: unknown) => e);
    expect((err as { code?: string }).code).toBe("internal_error");
    const [line, ...more] = linesOf("actor turn failed");
    expect(more).toEqual([]);
    expect(line).toMatchObject({ level: "error", kind: probe.kind, id: "p2", requestId });
  });

  test("a read-only turn's lines name its own request, not the previous reader's", async () => {
    await inRequest("trace-inproc-read-0001", () => client.ask(probe, "p3", "peek", { tag: "r1" }));
    await inRequest("trace-inproc-read-0002", () => client.ask(probe, "p3", "peek", { tag: "r2" }));
    await client.ask(probe, "p3", "peek", { tag: "r3" });
    expect(linesOf("probe read", "r1")[0]!.requestId).toBe("trace-inproc-read-0001");
    expect(linesOf("probe read", "r2")[0]!.requestId).toBe("trace-inproc-read-0002");
    expect(linesOf("probe read", "r3")[0]).not.toHaveProperty("requestId");
  });

  test("turns queued behind another request's turn run in their own request's scope", async () => {
    // the first message starts the activation's mailbox in its request's scope; the two behind it wait there
    const first = inRequest("trace-queue-first-01", () => client.ask(probe, "p4", "note", { tag: "q1", waitMs: 80, askHelper: true }));
    await Bun.sleep(10);
    const second = inRequest("trace-queue-second-1", () => client.ask(probe, "p4", "note", { tag: "q2", waitMs: 0, askHelper: true }));
    const third = client.ask(probe, "p4", "note", { tag: "q3", waitMs: 0, askHelper: true });
    expect(await Promise.all([first, second, third])).toEqual(["q1", "q2", "q3"]);
    for (const msg of ["probe turn started", "probe rail line", "helper turn", "probe turn ended"]) {
      expect(linesOf(msg, "q1")[0]!.requestId).toBe("trace-queue-first-01");
      expect(linesOf(msg, "q2")[0]!.requestId).toBe("trace-queue-second-1");
      expect(linesOf(msg, "q3")[0]).not.toHaveProperty("requestId");
    }
  });

  test("a reminder turn queued behind a request's turn names no request", async () => {
    await client.ask(probe, "p5", "remind", { at: Date.now() - 1000 });
    const busy = inRequest("trace-before-reminder", () => client.ask(probe, "p5", "note", { tag: "rm", waitMs: 80, askHelper: false }));
    await Bun.sleep(10);
    expect(await host.pollReminders()).toBe(1); // its turn waits behind the request's in the mailbox
    expect(await busy).toBe("rm");
    const end = Date.now() + 2000;
    while (linesOf("probe reminder").length === 0 && Date.now() < end) await Bun.sleep(10);
    const [line, ...more] = linesOf("probe reminder");
    expect(more).toEqual([]);
    expect(line).toMatchObject({ actor: `${probe.kind}/p5` });
    expect(line).not.toHaveProperty("requestId");
    expect(linesOf("probe turn ended", "rm")[0]!.requestId).toBe("trace-before-reminder");
  });
});

test("the retries of a failed turn's leftover marker are host-wide work: their lines name no request", async () => {
  // a turn in a request's scope leaves the first marker (host.ts dropMarker); the list's timer serves every marker
  const markers = new LeftoverMarkers(db.sql, rootLog.child({ component: "probe-host" }), { now: () => Date.now() }, { baseMs: 10 });
  inRequest("trace-left-marker-01", () => markers.add({ kind: probe.kind, id: "lm", msgId: "m", token: "h/t", until: Date.now() + 60_000 }));
  const end = Date.now() + 3000;
  while (markers.size > 0 && Date.now() < end) await Bun.sleep(10);
  markers.stop();
  const [line, ...more] = lines.filter((l) => l.msg === "deleted failed turns' pending markers once the database answered" && l.component === "probe-host");
  expect(more).toEqual([]);
  expect(line).toMatchObject({ count: 1 });
  expect(line).not.toHaveProperty("requestId");
});

describe("over NATS", () => {
  const bucket = `actor_hosts_rid_${run}`;
  const opts = (hostId?: string): NatsTransportOptions => ({ servers: NATS, bucket, partitions: PARTITIONS, replicas: 1, ...(hostId ? { hostId } : {}) });
  let hostTransport: NatsTransport;
  let callerTransport: NatsTransport;
  let host: ActorHost;
  let client: ActorClient;

  beforeAll(async () => {
    hostTransport = await NatsTransport.connect(opts(`rid-host-${run}`));
    host = new ActorHost({ transport: hostTransport, sql: db.sql, definitions: [probe, helper], caller: new ActorClient(hostTransport), reminderPollMs: 0 });
    attachHost(hostTransport, host);
    await host.start();
    callerTransport = await NatsTransport.connect(opts());
    client = new ActorClient(callerTransport, { defaultTimeoutMs: 10_000 });
    // the host owns every partition once placement has settled
    const end = Date.now() + 10_000;
    while ((hostTransport.ownership()[probe.kind]?.length ?? 0) < PARTITIONS && Date.now() < end) await Bun.sleep(20);
    expect(hostTransport.ownership()[probe.kind]?.length).toBe(PARTITIONS);
  }, 30_000);
  afterAll(async () => {
    await host?.stop();
    await hostTransport?.close();
    await callerTransport?.close();
    const t = await NatsTransport.connect({ servers: NATS });
    await (await new Kvm(t.nc).open(bucket)).destroy().catch(() => {});
    await t.close();
  }, 30_000);

  test("the envelope carries the request id to the host: its turn's lines and the turn it asks name it", async () => {
    const requestId = "trace-nats-0001";
    expect(await inRequest(requestId, () => client.ask(probe, "n1", "note", { tag: "n", waitMs: 0, askHelper: true }))).toBe("n");
    for (const msg of ["probe turn started", "probe rail line", "helper turn", "probe turn ended"]) {
      const found = linesOf(msg, "n");
      expect(found.length).toBe(1);
      expect(found[0]!.requestId).toBe(requestId);
    }
    const err = await inRequest("trace-nats-boom-0001", () => client.ask(probe, "n2", "boom", { tag: "nb" })).catch((e: unknown) => e);
    expect((err as { code?: string }).code).toBe("internal_error");
    expect(linesOf("actor turn failed")).toEqual([expect.objectContaining({ id: "n2", requestId: "trace-nats-boom-0001" })]);
  }, 20_000);

  test("a request id in an envelope that is not a sane token is dropped; a sane one sent raw is kept", async () => {
    const subject = partitionSubject(probe.kind, partitionOf("n3", PARTITIONS));
    const send = async (tag: string, requestId: unknown) => {
      const env = { msgId: crypto.randomUUID(), kind: probe.kind, id: "n3", type: "peek", body: { tag }, deadline: Date.now() + 5000, attempt: 1, requestId };
      const reply = await callerTransport.nc.request(subject, JSON.stringify(env), { timeout: 5000 });
      expect(JSON.parse(new TextDecoder().decode(reply.data))).toEqual({ ok: true, value: expect.any(Number) });
    };
    await send("bad1", "has spaces and \"quotes\" in it");
    await send("bad2", "short");
    await send("bad3", { not: "a string" });
    await send("bad4", "x".repeat(129));
    await send("good", "raw-sane-id-0001");
    for (const tag of ["bad1", "bad2", "bad3", "bad4"]) {
      const [line, ...more] = linesOf("probe read", tag);
      expect(more).toEqual([]);
      expect(line).not.toHaveProperty("requestId");
    }
    expect(linesOf("probe read", "good")[0]!.requestId).toBe("raw-sane-id-0001");
  }, 20_000);

  test("a reminder envelope names no request", async () => {
    // what pollReminders sends (host.ts): no requestId field
    const env = { msgId: `reminder:${run}`, kind: probe.kind, id: "n4", type: `${REMINDER_PREFIX}ping`, body: { payload: {}, due: new Date().toISOString() }, deadline: Date.now() + 5000, attempt: 1 };
    const reply = await inRequest("trace-sender-scope-1", () => callerTransport.request(env, 5000));
    expect(reply.ok).toBe(true);
    const [line] = linesOf("probe reminder");
    expect(line).toMatchObject({ actor: `${probe.kind}/n4` });
    expect(line).not.toHaveProperty("requestId");
  }, 20_000);
});
