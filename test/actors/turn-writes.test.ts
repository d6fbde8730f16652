/**
 * How a turn reaches Postgres: its state, reminder changes and retry reply in one fenced statement, BEGIN and
 * COMMIT only around a turn's own writes, and no state read for an actor created under a fresh id — with the
 * fence still refusing every stale or mistaken write.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { Type as T } from "@sinclair/typebox";
import { ActorClient } from "../../actors/runtime/client.ts";
import { defineActor } from "../../actors/runtime/define-actor.ts";
import { fail } from "../../actors/runtime/errors.ts";
import { ActorHost, checkpointWith } from "../../actors/runtime/host.ts";
import { isWriteRefused } from "../../actors/runtime/state-write.ts";
import { InProcessTransport } from "../../actors/transport/in-process.ts";
import type { Transport } from "../../actors/transport/transport.ts";
import { createTestDatabase, type TestDatabase } from "../helpers/db.ts";
import { lossyTransport } from "../helpers/lossy-transport.ts";

const timer = defineActor({
  kind: "timer",
  initialState: () => ({ n: 0, created: false }),
  createdBy: ["create"],
  messages: {
    create: T.Object({ dryRun: T.Boolean() }),
    arm: T.Object({ at: T.Number() }),
    disarm: T.Object({}),
    armAndWrite: T.Object({ at: T.Number(), note: T.String() }),
    get: T.Object({}),
    bumpThenCheckpoint: T.Object({}),
    swap: T.Object({ at: T.Number() }),
    /** A note written in the state statement; `refuse`: its guard refuses after the insert ran. */
    noteRiding: T.Object({ at: T.Number(), note: T.String(), refuse: T.Boolean() }),
    ridingInTx: T.Object({}),
    /** A riding note whose statement also carries the turn's reply (finalReply). */
    noteRidingFinal: T.Object({ note: T.String() }),
  },
  handlers: {
    async bumpThenCheckpoint(ctx) {
      ctx.state.n += 1;
      await ctx.checkpoint(); // durable now; nothing changes after it
      return ctx.state.n;
    },
    async create(ctx, body) {
      if (ctx.state.created) throw fail("conflict", "exists");
      if (body.dryRun) return "would create";
      ctx.state.created = true;
      return "created";
    },
    async arm(ctx, body) {
      ctx.state.n += 1;
      await ctx.schedule("ring", body.at, { n: ctx.state.n });
      return ctx.state.n;
    },
    async disarm(ctx) {
      ctx.state.n += 1;
      await ctx.cancelReminder("ring");
      return ctx.state.n;
    },
    async armAndWrite(ctx, body) {
      const tx = await ctx.tx();
      await tx`INSERT INTO turn_notes (actor, note) VALUES (${ctx.id}, ${body.note})`;
      ctx.state.n += 1;
      await ctx.schedule("ring", body.at);
      return ctx.state.n;
    },
    async get(ctx) {
      return ctx.state;
    },
    async noteRiding(ctx, body) {
      const before = ctx.state.n;
      ctx.state.n += 1;
      await ctx.schedule("ring", body.at);
      const sql = ctx.sql;
      try {
        const row = await checkpointWith<{ written: string }>(ctx, {
          ctes: sql`ins AS (INSERT INTO turn_notes (actor, note) VALUES (${ctx.id}, ${body.note}) RETURNING note)`,
          select: sql`CASE WHEN ${body.refuse} THEN actor_write_refused('test') ELSE 1 END AS guard, (SELECT note FROM ins) AS written`,
        });
        return `wrote ${row.written}`;
      } catch (err) {
        if (!isWriteRefused(err)) throw err;
        // the general path, as a handler takes it after a refusal: undo what assumed the write, write otherwise
        ctx.state.n = before + 10;
        await ctx.cancelReminder("ring");
        const tx = await ctx.tx();
        await tx`INSERT INTO turn_notes (actor, note) VALUES (${ctx.id}, ${`fallback ${body.note}`})`;
        return "refused";
      }
    },
    async noteRidingFinal(ctx, body) {
      ctx.state.n += 1;
      const answer = `noted ${body.note}`;
      await checkpointWith(ctx, { ctes: ctx.sql`ins AS (INSERT INTO turn_notes (actor, note) VALUES (${ctx.id}, ${body.note}))`, select: ctx.sql`1 AS one` }, { finalReply: answer });
      return answer;
    },
    async ridingInTx(ctx) {
      const tx = await ctx.tx();
      await tx`INSERT INTO turn_notes (actor, note) VALUES (${ctx.id}, 'in tx')`;
      ctx.state.n += 1;
      try {
        await checkpointWith(ctx, { ctes: ctx.sql`nothing AS (SELECT 1)`, select: ctx.sql`1 AS one` });
        return "rode";
      } catch (err) {
        if (!isWriteRefused(err)) throw err;
        return "refused, general path"; // the turn goes on in its transaction
      }
    },
    async swap(ctx, body) {
      ctx.state.n += 1;
      await ctx.cancelReminder("ring");
      await ctx.schedule("buzz", body.at);
      return ctx.state.n;
    },
  },
  reminders: { async ring() {}, async buzz() {} },
});

let db: TestDatabase;

function startHost(transport: Transport = new InProcessTransport()) {
  const client = new ActorClient(transport, { defaultTimeoutMs: 5000 });
  const host = new ActorHost({ transport, sql: db.sql, definitions: [timer], caller: client, reminderPollMs: 0 });
  return { transport, client, host };
}

/** The statements the pool sends while `fn` runs. */
async function statementsOf(fn: () => Promise<unknown>): Promise<string[]> {
  const seen: string[] = [];
  db.sql.options.debug = (_conn: number, text: string) => void seen.push(text.replace(/\s+/g, " ").trim());
  try {
    await fn();
  } finally {
    db.sql.options.debug = false;
  }
  return seen;
}

async function reminderOf(id: string) {
  const rows = await db.sql<{ due_at: Date; payload: unknown }[]>`SELECT due_at, payload FROM actor_reminders WHERE kind = 'timer' AND id = ${id}`;
  return rows[0];
}

async function rowOf(id: string) {
  const rows = await db.sql<{ version: number; state: { n: number; created: boolean } }[]>`SELECT version, state FROM actor_state WHERE kind = 'timer' AND id = ${id}`;
  return rows[0];
}

beforeAll(async () => {
  db = await createTestDatabase();
  await db.sql`CREATE TABLE turn_notes (actor text, note text)`;
});
afterAll(async () => {
  await db.drop();
});

describe("one statement per turn", () => {
  test("a turn that changes its state and schedules a reminder writes both in one statement", async () => {
    const { client, host } = startHost();
    await host.start();
    await client.ask(timer, "t1", "get", {}); // activated: the next turn's only work is its write
    const at = Date.parse("2030-01-01T00:00:00Z");
    const sent = await statementsOf(() => client.ask(timer, "t1", "arm", { at }));
    expect(sent.length).toBe(1);
    expect(sent[0]).toContain("actor_reminders");
    expect((await reminderOf("t1")).due_at.getTime()).toBe(at);
    expect((await reminderOf("t1")).payload).toEqual({ n: 1 });
    expect((await rowOf("t1")).state.n).toBe(1);
    await host.stop();
  });

  test("a turn that cancels a reminder deletes it in the state's statement", async () => {
    const { client, host } = startHost();
    await host.start();
    await client.ask(timer, "t2", "arm", { at: Date.parse("2030-01-01T00:00:00Z") });
    const sent = await statementsOf(() => client.ask(timer, "t2", "disarm", {}));
    expect(sent.length).toBe(1);
    expect(sent[0]).not.toContain("INSERT INTO actor_reminders");
    expect(await reminderOf("t2")).toBeUndefined();
    expect((await rowOf("t2")).state.n).toBe(2);
    await host.stop();
  });

  test("a turn that cancels one reminder and sets another does both in the state's statement; one that only sets deletes nothing", async () => {
    const { client, host } = startHost();
    await host.start();
    const at = Date.parse("2031-01-01T00:00:00Z");
    const armed = await statementsOf(() => client.ask(timer, "t2b", "arm", { at }));
    expect(armed.join(" ")).not.toContain("DELETE FROM actor_reminders");
    const sent = await statementsOf(() => client.ask(timer, "t2b", "swap", { at: at + 1000 }));
    expect(sent.length).toBe(1);
    expect(sent[0]).toContain("DELETE FROM actor_reminders");
    expect(sent[0]).toContain("INSERT INTO actor_reminders");
    const rows = await db.sql<{ name: string; due_at: Date }[]>`SELECT name, due_at FROM actor_reminders WHERE kind = 'timer' AND id = 't2b'`;
    expect(rows.map((r) => [r.name, r.due_at.getTime()])).toEqual([["buzz", at + 1000]]);
    expect((await rowOf("t2b")).state.n).toBe(2);
    await host.stop();
  });

  test("a stale version writes neither the state nor the reminder nor the reply", async () => {
    // lossy: a transport over which replies are kept for resends, so a missing reply row means something
    const a = startHost(lossyTransport());
    await a.host.start();
    await a.client.ask(timer, "t3", "arm", { at: Date.parse("2030-01-01T00:00:00Z") });
    // another host takes the actor over and writes version 2 (its reminder moves to 2031)
    const b = startHost(lossyTransport());
    await b.host.start();
    await b.client.ask(timer, "t3", "arm", { at: Date.parse("2031-01-01T00:00:00Z") });
    const msgId = crypto.randomUUID();
    const reply = await a.transport.request(
      { msgId, kind: "timer", id: "t3", type: "arm", body: { at: Date.parse("2040-01-01T00:00:00Z") }, deadline: Date.now() + 1000, attempt: 1 },
      1000,
    );
    expect(reply.ok ? "ok" : reply.error.code).toBe("actor_unavailable");
    expect(Number((await rowOf("t3")).version)).toBe(2);
    expect((await reminderOf("t3")).due_at.toISOString()).toBe("2031-01-01T00:00:00.000Z");
    expect((await db.sql`SELECT 1 FROM actor_inbox WHERE msg_id = ${msgId}`).length).toBe(0);
    await a.host.stop();
    await b.host.stop();
  });

  test("a turn with its own writes commits them with its state and reminder, and a stale version rolls all back", async () => {
    const a = startHost();
    await a.host.start();
    const sent = await statementsOf(() => a.client.ask(timer, "t4", "armAndWrite", { at: Date.parse("2030-01-01T00:00:00Z"), note: "first" }));
    expect(sent.filter((s) => s === "BEGIN" || s === "COMMIT")).toEqual(["BEGIN", "COMMIT"]);
    expect((await db.sql`SELECT note FROM turn_notes WHERE actor = 't4'`).map((r) => r.note)).toEqual(["first"]);
    expect(await reminderOf("t4")).toBeDefined();

    const b = startHost();
    await b.host.start();
    await b.client.ask(timer, "t4", "disarm", {});
    const reply = await a.transport.request(
      { msgId: crypto.randomUUID(), kind: "timer", id: "t4", type: "armAndWrite", body: { at: Date.parse("2040-01-01T00:00:00Z"), note: "stale" }, deadline: Date.now() + 1000, attempt: 1 },
      1000,
    );
    expect(reply.ok ? "ok" : reply.error.code).toBe("actor_unavailable");
    expect((await db.sql`SELECT note FROM turn_notes WHERE actor = 't4'`).map((r) => r.note)).toEqual(["first"]);
    expect(await reminderOf("t4")).toBeUndefined();
    // the pool got its connection back: the retry of the same work goes through on the reloaded state
    expect(await a.client.ask(timer, "t4", "armAndWrite", { at: Date.parse("2040-01-01T00:00:00Z"), note: "again" })).toBe(3);
    await a.host.stop();
    await b.host.stop();
  });
});

describe("actors created under a fresh id", () => {
  test("creating one costs a single statement and no read", async () => {
    const { client, host } = startHost();
    await host.start();
    const sent = await statementsOf(() => client.ask(timer, "new-1", "create", { dryRun: false }));
    expect(sent.length).toBe(1);
    expect(sent[0]).toContain("INSERT INTO actor_state");
    expect((await rowOf("new-1")).state.created).toBe(true);
    await host.stop();
  });

  test("a create for an id that exists never overwrites it: the caller gets the answer from the real state", async () => {
    await db.sql`INSERT INTO actor_state (kind, id, version, state) VALUES ('timer', 'taken-1', 5, ${JSON.stringify({ n: 42, created: true })}::text::jsonb)`;
    const { client, host } = startHost();
    await host.start();
    const err = await client.ask(timer, "taken-1", "create", { dryRun: false }).catch((e) => e);
    expect(err.code).toBe("conflict");
    const row = await rowOf("taken-1");
    expect(Number(row.version)).toBe(5);
    expect(row.state).toEqual({ n: 42, created: true });
    await host.stop();
  });

  test("a create that writes nothing for an id that exists answers from the real state too", async () => {
    await db.sql`INSERT INTO actor_state (kind, id, version, state) VALUES ('timer', 'taken-2', 3, ${JSON.stringify({ n: 7, created: true })}::text::jsonb)`;
    const { client, host } = startHost();
    await host.start();
    const err = await client.ask(timer, "taken-2", "create", { dryRun: true }).catch((e) => e);
    expect(err.code).toBe("conflict");
    expect(Number((await rowOf("taken-2")).version)).toBe(3);
    await host.stop();
  });

  test("other messages to a new id still read its state first", async () => {
    await db.sql`INSERT INTO actor_state (kind, id, version, state) VALUES ('timer', 'taken-3', 2, ${JSON.stringify({ n: 9, created: true })}::text::jsonb)`;
    const { client, host } = startHost();
    await host.start();
    expect((await client.ask(timer, "taken-3", "get", {})).n).toBe(9);
    await host.stop();
  });
});

describe("a malformed envelope", () => {
  test("with a deadline that is not a time is refused before any turn runs, and nothing of the turn is written", async () => {
    const { host } = startHost();
    await host.start();
    for (const bad of [{ deadline: Number.NaN, attempt: 1 }, { deadline: Date.now() + 5000, attempt: 0 }, { deadline: "soon" as unknown as number, attempt: 1 }]) {
      const reply = await host.dispatch({ msgId: crypto.randomUUID(), kind: "timer", id: "malformed", type: "armAndWrite", body: { at: Date.now() + 60_000, note: "x" }, ...bad });
      expect(reply.ok).toBe(false);
      if (!reply.ok) expect(reply.error.code).toBe("INVALID_ARGUMENT");
    }
    expect(await rowOf("malformed")).toBeUndefined();
    expect(await reminderOf("malformed")).toBeUndefined();
    expect(await db.sql`SELECT 1 FROM turn_notes WHERE actor = 'malformed'`).toHaveLength(0);
    await host.stop();
  });
});

describe("the reply for resends", () => {
  test("is not written over a lossless transport (no caller can resend after a committed turn), and is over a lossy one", async () => {
    const lossless = startHost();
    await lossless.host.start();
    const quiet = await statementsOf(() => lossless.client.ask(timer, "r1", "arm", { at: Date.parse("2030-01-01T00:00:00Z") }));
    expect(quiet.join(" ")).not.toContain("actor_inbox");
    expect(await db.sql`SELECT 1 FROM actor_inbox WHERE kind = 'timer' AND id = 'r1'`).toHaveLength(0);
    await lossless.host.stop();
    const lossy = startHost(lossyTransport());
    await lossy.host.start();
    await lossy.client.ask(timer, "r2", "arm", { at: Date.parse("2030-01-01T00:00:00Z") });
    expect(await db.sql`SELECT 1 FROM actor_inbox WHERE kind = 'timer' AND id = 'r2'`).toHaveLength(1);
    await lossy.host.stop();
  });
});

describe("a turn whose changes were all committed by a checkpoint", () => {
  test("still leaves its reply for a resend, which answers it without running the handler again", async () => {
    const first = startHost(lossyTransport());
    await first.host.start();
    const msgId = crypto.randomUUID();
    const envelope = { msgId, kind: "timer", id: "ckpt", type: "bumpThenCheckpoint", body: {}, deadline: Date.now() + 5000 };
    const reply = await first.host.dispatch({ ...envelope, attempt: 1 });
    expect(reply).toEqual({ ok: true, value: 1 });
    await first.host.stop();
    // another host (no memory of the reply) gets the resend
    const second = startHost(lossyTransport());
    await second.host.start();
    expect(await second.host.dispatch({ ...envelope, attempt: 2 })).toEqual({ ok: true, value: 1 });
    expect((await rowOf("ckpt")).state.n).toBe(1);
    await second.host.stop();
  });
});

describe("a turn's own write riding in its state statement (checkpointWith)", () => {
  const notesOf = async (id: string) => (await db.sql<{ note: string }[]>`SELECT note FROM turn_notes WHERE actor = ${id} ORDER BY note`).map((r) => r.note);

  test("is one autocommit statement with the state and the reminder: no BEGIN, no COMMIT", async () => {
    const { client, host } = startHost();
    await host.start();
    await client.ask(timer, "rw1", "disarm", {}); // the row exists: the riding turn updates it
    const at = Date.parse("2030-01-01T00:00:00Z");
    const sent = await statementsOf(() => client.ask(timer, "rw1", "noteRiding", { at, note: "a", refuse: false }));
    expect(sent.length).toBe(1);
    expect(sent[0]).toContain("INSERT INTO turn_notes");
    expect(sent[0]).toContain("UPDATE actor_state");
    expect(sent[0]).toContain("INSERT INTO actor_reminders");
    expect(await notesOf("rw1")).toEqual(["a"]);
    expect((await rowOf("rw1")).state.n).toBe(2);
    expect((await reminderOf("rw1")).due_at.getTime()).toBe(at);
    await host.stop();
  });

  test("whose guard refuses writes nothing of the statement (its rows, the state, the reminder), and the turn goes on", async () => {
    const { client, host } = startHost();
    await host.start();
    await client.ask(timer, "rw2", "noteRiding", { at: Date.parse("2030-01-01T00:00:00Z"), note: "first", refuse: false });
    expect(await client.ask(timer, "rw2", "noteRiding", { at: Date.parse("2040-01-01T00:00:00Z"), note: "second", refuse: true })).toBe("refused");
    // the insert of "second" ran before the guard refused: rolled back with the state; the general path wrote
    expect(await notesOf("rw2")).toEqual(["fallback second", "first"]);
    const row = await rowOf("rw2");
    expect(row.state.n).toBe(11);
    expect(Number(row.version)).toBe(2); // one write per turn: the refused statement wrote no version
    expect(await reminderOf("rw2")).toBeUndefined();
    // the activation's version still matches the row: the next turn writes
    expect(await client.ask(timer, "rw2", "noteRiding", { at: Date.parse("2030-01-01T00:00:00Z"), note: "third", refuse: false })).toBe("wrote third");
    expect((await rowOf("rw2")).state.n).toBe(12);
    await host.stop();
  });

  test("on a stale version writes nothing and answers actor_unavailable", async () => {
    const a = startHost();
    await a.host.start();
    await a.client.ask(timer, "rw3", "noteRiding", { at: Date.parse("2030-01-01T00:00:00Z"), note: "a1", refuse: false });
    const b = startHost();
    await b.host.start();
    await b.client.ask(timer, "rw3", "disarm", {});
    const reply = await a.transport.request(
      { msgId: crypto.randomUUID(), kind: "timer", id: "rw3", type: "noteRiding", body: { at: Date.parse("2040-01-01T00:00:00Z"), note: "stale", refuse: false }, deadline: Date.now() + 1000, attempt: 1 },
      1000,
    );
    expect(reply.ok ? "ok" : reply.error.code).toBe("actor_unavailable");
    expect(await notesOf("rw3")).toEqual(["a1"]);
    expect(Number((await rowOf("rw3")).version)).toBe(2);
    expect(await reminderOf("rw3")).toBeUndefined();
    await a.host.stop();
    await b.host.stop();
  });

  test("with the turn's final reply carries it too: one statement over a lossy transport, and a resend answers from it", async () => {
    const first = startHost(lossyTransport());
    await first.host.start();
    await first.client.ask(timer, "rw5", "disarm", {});
    const msgId = crypto.randomUUID();
    const envelope = { msgId, kind: "timer", id: "rw5", type: "noteRidingFinal", body: { note: "once" }, deadline: Date.now() + 5000 };
    let reply: unknown;
    const sent = await statementsOf(async () => (reply = await first.host.dispatch({ ...envelope, attempt: 1 })));
    expect(reply).toEqual({ ok: true, value: "noted once" });
    expect(sent.length).toBe(1);
    expect(sent[0]).toContain("INSERT INTO actor_inbox");
    await first.host.stop();
    // another host (no memory of the reply) gets the resend: answered from actor_inbox, the handler not run again
    const second = startHost(lossyTransport());
    await second.host.start();
    expect(await second.host.dispatch({ ...envelope, attempt: 2 })).toEqual({ ok: true, value: "noted once" });
    expect(await notesOf("rw5")).toEqual(["once"]);
    expect((await rowOf("rw5")).state.n).toBe(2);
    await second.host.stop();
  });

  test("with a transaction open it answers a refusal without sending anything, and the turn goes on in its transaction", async () => {
    const { client, host } = startHost();
    await host.start();
    expect(await client.ask(timer, "rw4", "ridingInTx", {})).toBe("refused, general path");
    expect(await notesOf("rw4")).toEqual(["in tx"]);
    expect((await rowOf("rw4")).state.n).toBe(1);
    await host.stop();
  });
});
