import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { Type as T } from "@sinclair/typebox";
import { defineActor } from "../../actors/runtime/define-actor.ts";
import { ActorHost } from "../../actors/runtime/host.ts";
import { ActorClient } from "../../actors/runtime/client.ts";
import { ManualClock } from "../../actors/runtime/clock.ts";
import { fail, ActorError } from "../../actors/runtime/errors.ts";
import { InProcessTransport } from "../../actors/transport/in-process.ts";
import { createTestDatabase, type TestDatabase } from "../helpers/db.ts";

const fired: string[] = [];

const counter = defineActor({
  kind: "counter",
  initialState: () => ({ n: 0, log: [] as string[] }),
  messages: {
    inc: T.Object({ by: T.Integer() }),
    slowAppend: T.Object({ tag: T.String(), waitMs: T.Integer() }),
    get: T.Object({}),
    writeRow: T.Object({ note: T.String(), thenFail: T.Boolean() }),
    remind: T.Object({ at: T.Number() }),
  },
  handlers: {
    async inc(ctx, body) {
      const before = ctx.state.n;
      await Bun.sleep(0); // an await inside the turn: another message must not slip in here
      ctx.state.n = before + body.by;
      return ctx.state.n;
    },
    async slowAppend(ctx, body) {
      ctx.state.log.push(`${body.tag}:start`);
      await Bun.sleep(body.waitMs);
      ctx.state.log.push(`${body.tag}:end`);
      return ctx.state.log.length;
    },
    async get(ctx) {
      return ctx.state;
    },
    async writeRow(ctx, body) {
      const tx = await ctx.tx();
      await tx`INSERT INTO runtime_notes (actor, note) VALUES (${ctx.id}, ${body.note})`;
      ctx.state.n += 100;
      if (body.thenFail) throw fail("conflict", "refused after writing");
      return "written";
    },
    async remind(ctx, body) {
      await ctx.schedule("ping", body.at, { who: ctx.id });
      return "scheduled";
    },
  },
  reminders: {
    async ping(ctx, payload) {
      fired.push(`${ctx.id}:${(payload as { who: string }).who}`);
      ctx.state.n += 1;
    },
  },
});

let db: TestDatabase;

function startHost(opts: { idleMs?: number; clock?: ManualClock } = {}) {
  const transport = new InProcessTransport();
  const client = new ActorClient(transport);
  const host = new ActorHost({ transport, sql: db.sql, definitions: [counter], caller: client, reminderPollMs: 0, ...opts });
  return { transport, client, host };
}

beforeAll(async () => {
  db = await createTestDatabase();
  await db.sql`CREATE TABLE runtime_notes (actor text, note text)`;
});
afterAll(async () => {
  await db.drop();
});

describe("the actor mailbox", () => {
  test("1,000 concurrent increments to one actor give exactly 1,000", async () => {
    const { client, host } = startHost();
    await host.start();
    await Promise.all(Array.from({ length: 1000 }, () => client.ask(counter, "c1", "inc", { by: 1 }, { timeoutMs: 30_000 })));
    const state = await client.ask(counter, "c1", "get", {});
    expect(state.n).toBe(1000);
    const [row] = await db.sql<{ state: { n: number } }[]>`SELECT state FROM actor_state WHERE kind = 'counter' AND id = 'c1'`;
    expect(row.state.n).toBe(1000);
    await host.stop();
  });

  test("two messages never interleave across an await", async () => {
    const { client, host } = startHost();
    await host.start();
    await Promise.all([
      client.ask(counter, "c2", "slowAppend", { tag: "a", waitMs: 30 }),
      client.ask(counter, "c2", "slowAppend", { tag: "b", waitMs: 1 }),
    ]);
    const state = await client.ask(counter, "c2", "get", {});
    expect(state.log).toEqual(["a:start", "a:end", "b:start", "b:end"]);
    await host.stop();
  });

  test("a message whose body breaks the schema is refused with INVALID_ARGUMENT", async () => {
    const { client, host } = startHost();
    await host.start();
    const err = await client.ask(counter, "c3", "inc", { by: "x" as unknown as number }).catch((e) => e);
    expect(err).toBeInstanceOf(ActorError);
    expect(err.code).toBe("INVALID_ARGUMENT");
    await host.stop();
  });
});

describe("durable state", () => {
  test("a failed turn rolls back its writes and its state", async () => {
    const { client, host } = startHost();
    await host.start();
    const err = await client.ask(counter, "c4", "writeRow", { note: "x", thenFail: true }).catch((e) => e);
    expect(err.code).toBe("conflict");
    expect((await db.sql`SELECT * FROM runtime_notes WHERE actor = 'c4'`).length).toBe(0);
    expect((await client.ask(counter, "c4", "get", {})).n).toBe(0);
    expect(await client.ask(counter, "c4", "writeRow", { note: "y", thenFail: false })).toBe("written");
    expect((await db.sql`SELECT * FROM runtime_notes WHERE actor = 'c4'`).length).toBe(1);
    await host.stop();
  });

  test("a stale-version write is refused (fencing) and the caller sees the newer state after a retry", async () => {
    const a = startHost();
    await a.host.start();
    await a.client.ask(counter, "c5", "inc", { by: 1 });
    // another host takes the actor over and writes version 2
    const b = startHost();
    await b.host.start();
    await b.client.ask(counter, "c5", "inc", { by: 10 });
    // host a still has version 1 in memory: its write must be refused, and after the refusal it reloads
    const reply = await a.transport.request(
      { msgId: crypto.randomUUID(), kind: "counter", id: "c5", type: "inc", body: { by: 5 }, deadline: Date.now() + 1000, attempt: 1 },
      1000,
    );
    expect(reply.ok).toBe(false);
    if (!reply.ok) expect(reply.error.code).toBe("actor_unavailable");
    expect(await a.client.ask(counter, "c5", "inc", { by: 5 })).toBe(16);
    const [row] = await db.sql<{ version: number; state: { n: number } }[]>`SELECT version, state FROM actor_state WHERE id = 'c5'`;
    expect(row.state.n).toBe(16);
    expect(Number(row.version)).toBe(3);
    await a.host.stop();
    await b.host.stop();
  });

  test("a retried message with the same id is applied once", async () => {
    const { client, host } = startHost();
    await host.start();
    const msgId = crypto.randomUUID();
    const first = await client.ask(counter, "c6", "inc", { by: 7 }, { msgId });
    const again = await client.ask(counter, "c6", "inc", { by: 7 }, { msgId });
    expect(first).toBe(7);
    expect(again).toBe(7);
    expect((await client.ask(counter, "c6", "get", {})).n).toBe(7);
    await host.stop();
  });

  test("a resend that reaches a new host after 300 other writes is still applied once", async () => {
    const a = startHost();
    await a.host.start();
    const msgId = crypto.randomUUID();
    expect(await a.client.ask(counter, "c8", "inc", { by: 1000 }, { msgId })).toBe(1000);
    for (let i = 0; i < 300; i++) await a.client.ask(counter, "c8", "inc", { by: 1 });
    await a.host.stop();
    // the reply was "lost"; the caller resends the same message to the new owner
    const b = startHost();
    await b.host.start();
    expect(await b.client.ask(counter, "c8", "inc", { by: 1000 }, { msgId })).toBe(1000);
    expect((await b.client.ask(counter, "c8", "get", {})).n).toBe(1300);
    await b.host.stop();
  });

  test("expired inbox rows are swept", async () => {
    await db.sql`INSERT INTO actor_inbox (kind, id, msg_id, reply, expires_at) VALUES ('counter', 'old', 'm-old', '{"ok":true,"value":1}', now() - interval '1 minute')`;
    const { host } = startHost();
    expect(await host.sweepInbox(true)).toBeGreaterThanOrEqual(1);
    expect((await db.sql`SELECT 1 FROM actor_inbox WHERE msg_id = 'm-old'`).length).toBe(0);
  });

  test("an idle activation is passivated and its state reloads from Postgres", async () => {
    const { client, host } = startHost({ idleMs: 100 });
    await host.start();
    await client.ask(counter, "c7", "inc", { by: 3 });
    expect(host.activationCount("counter")).toBe(1);
    await Bun.sleep(300);
    expect(host.activationCount("counter")).toBe(0);
    expect((await client.ask(counter, "c7", "get", {})).n).toBe(3);
    await host.stop();
  });
});

describe("durable reminders", () => {
  test("a reminder scheduled before a restart fires after it", async () => {
    const clock = new ManualClock(Date.parse("2026-01-01T00:00:00Z"));
    const first = startHost({ clock });
    await first.host.start();
    await first.client.ask(counter, "r1", "remind", { at: clock.now() + 60_000 });
    expect(await first.host.pollReminders()).toBe(0);
    await first.host.stop(); // the process "restarts": nothing in memory survives

    const second = startHost({ clock });
    await second.host.start();
    clock.advance(61_000);
    expect(await second.host.pollReminders()).toBe(1);
    expect(fired).toContain("r1:r1");
    expect((await second.client.ask(counter, "r1", "get", {})).n).toBe(1);
    // a one-shot reminder is deleted after it ran
    expect((await db.sql`SELECT * FROM actor_reminders WHERE id = 'r1'`).length).toBe(0);
    await second.host.stop();
  });
});

describe("runtime edge cases", () => {
  const flaky = defineActor({
    kind: "flaky",
    initialState: () => ({ tries: 0 }),
    async onActivate(ctx) {
      const tx = await ctx.tx();
      await tx`INSERT INTO runtime_notes (actor, note) VALUES (${ctx.id}, 'activate')`;
      if (ctx.id.startsWith("bad")) throw new Error("cannot load");
    },
    messages: { ping: T.Object({}), later: T.Object({}) },
    handlers: {
      async ping() {
        return "pong";
      },
      async later(ctx) {
        await ctx.schedule("tick", ctx.now() + 1000);
        return "ok";
      },
    },
    reminders: { async tick() {} },
  });

  test("an activation that fails to load answers actor_unavailable, writes nothing and keeps no connection", async () => {
    const transport = new InProcessTransport();
    const client = new ActorClient(transport, { defaultTimeoutMs: 300 });
    const host = new ActorHost({ transport, sql: db.sql, definitions: [flaky], caller: client, reminderPollMs: 0 });
    await host.start();
    for (let i = 0; i < 15; i++) {
      const err = await client.ask(flaky, "bad-1", "ping", {}).catch((e) => e);
      expect(err.code).toBe("actor_unavailable");
    }
    expect((await db.sql`SELECT * FROM runtime_notes WHERE actor = 'bad-1'`).length).toBe(0);
    // the pool (10 connections) is not exhausted by the failed activations
    expect(await client.ask(flaky, "good-1", "ping", {})).toBe("pong");
    await host.stop();
  });

  test("a read-only message after a failed load answers actor_unavailable and the next message loads again", async () => {
    let failNext = true;
    const once = defineActor({
      kind: "flaky-once",
      persistence: "memory",
      initialState: () => ({ loaded: true }),
      async onActivate() {
        if (failNext) {
          failNext = false;
          throw new Error("transient");
        }
      },
      messages: { look: T.Object({}) },
      handlers: {
        look(ctx) {
          return ctx.state.loaded;
        },
      },
      reentrant: ["look"],
    });
    const transport = new InProcessTransport();
    // one attempt only: the client would otherwise retry actor_unavailable itself and hide the first answer
    const client = new ActorClient(transport, { defaultTimeoutMs: 300 });
    const host = new ActorHost({ transport, sql: db.sql, definitions: [once], caller: client, reminderPollMs: 0 });
    await host.start();
    const reply = await host.dispatch({ msgId: crypto.randomUUID(), kind: "flaky-once", id: "o1", type: "look", body: {}, deadline: Date.now() + 5000, attempt: 1 });
    expect(reply.ok).toBe(false);
    expect(!reply.ok && reply.error.code).toBe("actor_unavailable");
    expect(await client.ask(once, "o1", "look", {})).toBe(true);
    await host.stop();
  });

  test("a reminder scheduled without a payload is stored", async () => {
    const transport = new InProcessTransport();
    const client = new ActorClient(transport);
    const host = new ActorHost({ transport, sql: db.sql, definitions: [flaky], caller: client, reminderPollMs: 0 });
    await host.start();
    expect(await client.ask(flaky, "good-2", "later", {})).toBe("ok");
    const rows = await db.sql<{ payload: unknown }[]>`SELECT payload FROM actor_reminders WHERE id = 'good-2'`;
    expect(rows.length).toBe(1);
    expect(rows[0].payload).toBeNull();
    await host.stop();
  });
});

const reader = defineActor({
  kind: "reader",
  persistence: "memory",
  initialState: () => ({}),
  messages: {
    peek: T.Object({}),
    slowPeek: T.Object({ waitMs: T.Integer() }),
    refuse: T.Object({}),
    write: T.Object({ how: T.String() }),
  },
  handlers: {
    // no async: answered without a promise hop
    peek(ctx) {
      const seen = ((ctx.memory.get("seen") as number | undefined) ?? 0) + 1;
      ctx.memory.set("seen", seen);
      return { seen, msgId: ctx.msgId, list: ctx.memory.get("list") ?? (ctx.memory.set("list", ["kept"]), ["kept"]) };
    },
    async slowPeek(ctx, body) {
      const before = ctx.msgId;
      await Bun.sleep(body.waitMs);
      return { before, after: ctx.msgId };
    },
    refuse() {
      throw fail("not_found", "nothing here");
    },
    async write(ctx, body) {
      if (body.how === "tx") await ctx.tx();
      else if (body.how === "checkpoint") await ctx.checkpoint();
      else await ctx.schedule("x", Date.now());
      return "wrote";
    },
  },
  reentrant: ["peek", "slowPeek", "refuse", "write"],
});

describe("read-only turns", () => {
  const env = (type: string, body: unknown, msgId: string = crypto.randomUUID()) => ({ msgId, kind: "reader", id: "r1", type, body, deadline: Date.now() + 5000, attempt: 1 });

  test("a read-only handler that does not await is answered synchronously once the activation is loaded", async () => {
    const transport = new InProcessTransport();
    const host = new ActorHost({ transport, sql: db.sql, definitions: [reader], caller: new ActorClient(transport), reminderPollMs: 0 });
    const first = host.receive(env("peek", {}));
    expect(first).toBeInstanceOf(Promise); // the activation is still loading
    expect(await first).toMatchObject({ ok: true, value: { seen: 1 } });
    const second = host.receive(env("peek", {}, "m-2"));
    expect(second).not.toBeInstanceOf(Promise);
    expect(second).toEqual({ ok: true, value: { seen: 2, msgId: "m-2", list: ["kept"] } });
    const refused = host.receive(env("refuse", {}));
    expect(refused).not.toBeInstanceOf(Promise);
    expect(refused).toMatchObject({ ok: false, error: { code: "not_found" } });
    await host.stop();
  });

  test("a synchronous reply still reaches the caller as a copy (the actor's memory cannot be changed through it)", async () => {
    const transport = new InProcessTransport();
    const client = new ActorClient(transport);
    const host = new ActorHost({ transport, sql: db.sql, definitions: [reader], caller: client, reminderPollMs: 0 });
    await host.start();
    const a = await client.ask(reader, "r2", "peek", {});
    (a.list as string[]).push("injected");
    const b = await client.ask(reader, "r2", "peek", {});
    expect(b.list).toEqual(["kept"]);
    expect(b.seen).toBe(2);
    await expect(client.ask(reader, "r2", "refuse", {})).rejects.toMatchObject({ code: "not_found" });
    await host.stop();
  });

  test("read-only turns running at once each keep their own msgId across an await", async () => {
    const transport = new InProcessTransport();
    const client = new ActorClient(transport);
    const host = new ActorHost({ transport, sql: db.sql, definitions: [reader], caller: client, reminderPollMs: 0 });
    await host.start();
    const ids = Array.from({ length: 20 }, (_, i) => `slow-${i}`);
    const replies = await Promise.all(ids.map((msgId, i) => client.ask(reader, "r3", "slowPeek", { waitMs: 20 - i }, { msgId })));
    replies.forEach((r, i) => expect(r).toEqual({ before: ids[i]!, after: ids[i]! }));
    await host.stop();
  });

  test("a read-only turn cannot write: a transaction, a checkpoint or a reminder is refused", async () => {
    const transport = new InProcessTransport();
    const client = new ActorClient(transport);
    const host = new ActorHost({ transport, sql: db.sql, definitions: [reader], caller: client, reminderPollMs: 0 });
    await host.start();
    for (const how of ["tx", "checkpoint", "schedule"]) {
      await expect(client.ask(reader, "r4", "write", { how })).rejects.toMatchObject({ code: "internal_error" });
    }
    await host.stop();
  });
});
