/**
 * A turn's writes wait for the database however long it takes, whichever way they are sent (a riding statement, the
 * general path's transaction): a turn never answers an error for a write that then commits. The pool's 15 s query
 * deadline (infra/db.ts) is for reads outside turns (review J of the riding checkout statement).
 */
import { afterAll, beforeAll, expect, test } from "bun:test";
import { Type as T } from "@sinclair/typebox";
import { ActorClient } from "../../actors/runtime/client.ts";
import { defineActor } from "../../actors/runtime/define-actor.ts";
import { ActorHost, checkpointWith } from "../../actors/runtime/host.ts";
import { InProcessTransport } from "../../actors/transport/in-process.ts";
import { connect, type Sql } from "../../infra/db.ts";
import { createTestDatabase, type TestDatabase } from "../helpers/db.ts";

const acct = defineActor({
  kind: "acct",
  initialState: () => ({ n: 0, phase: "ready" }),
  messages: { init: T.Object({}), riding: T.Object({ note: T.String() }), general: T.Object({ note: T.String() }), get: T.Object({}) },
  handlers: {
    async init(ctx) {
      ctx.state.n += 1;
      return ctx.state.n;
    },
    async get(ctx) {
      return ctx.state;
    },
    // like beginOneLegRiding: the hold (a note) rides in the statement that commits phase = in_progress + the timer
    async riding(ctx, body) {
      ctx.state.phase = "in_progress";
      await ctx.schedule("tick", Date.now() + 120_000);
      await checkpointWith(ctx, { ctes: ctx.sql`ins AS (INSERT INTO notes (actor, note) VALUES (${ctx.id}, ${body.note}))`, select: ctx.sql`1 AS leg_ok` });
      return "charged";
    },
    // the old path: ctx.tx() + statement, then the state with COMMIT
    async general(ctx, body) {
      const tx = await ctx.tx();
      await tx`INSERT INTO notes (actor, note) VALUES (${ctx.id}, ${body.note})`;
      ctx.state.phase = "in_progress";
      await ctx.schedule("tick", Date.now() + 120_000);
      await ctx.checkpoint();
      return "charged";
    },
  },
  reminders: { async tick() {} },
});

let db: TestDatabase;
let sql: Sql;
beforeAll(async () => {
  db = await createTestDatabase();
  await db.sql`CREATE TABLE notes (actor text, note text)`;
  sql = connect(db.url, 10, { queryDeadlineMs: 400 });
}, 60_000);
afterAll(async () => {
  await sql.end({ timeout: 1 });
  await db.drop();
});

function startHost() {
  const transport = new InProcessTransport();
  const client = new ActorClient(transport, { defaultTimeoutMs: 10_000 });
  const host = new ActorHost({ transport, sql, definitions: [acct], caller: client, reminderPollMs: 0 });
  return { client, host, transport };
}

/** Holds the actor's state row locked for `ms` (another session, e.g. a vacuum/DDL/long reader holding a lock). */
async function lockRowFor(id: string, ms: number): Promise<void> {
  const conn = await db.sql.reserve();
  await conn`BEGIN`;
  await conn`SELECT 1 FROM actor_state WHERE kind = 'acct' AND id = ${id} FOR UPDATE`;
  setTimeout(async () => {
    await conn`COMMIT`;
    conn.release();
  }, ms);
}

async function ask(transport: InProcessTransport, id: string, type: string, body: unknown) {
  return transport.request({ msgId: crypto.randomUUID(), kind: "acct", id, type, body, deadline: Date.now() + 10_000, attempt: 1 }, 10_000);
}

for (const type of ["general", "riding"] as const) {
  test(`${type}: a turn write held up past the pool's query deadline waits, commits and answers success`, async () => {
    const { client, host, transport } = startHost();
    await host.start();
    const id = `a-${type}`;
    await client.ask(acct, id, "init", {});
    await lockRowFor(id, 1_000);
    const reply = await ask(transport, id, type, { note: "hold" });
    await Bun.sleep(1_500); // the lock is gone; whatever was sent has finished
    const notes = (await db.sql`SELECT note FROM notes WHERE actor = ${id}`).map((r) => r.note);
    const [row] = await db.sql<{ version: number; state: { phase: string } }[]>`SELECT version, state FROM actor_state WHERE kind = 'acct' AND id = ${id}`;
    const reminders = await db.sql`SELECT name FROM actor_reminders WHERE kind = 'acct' AND id = ${id}`;
    const mem = await ask(transport, id, "get", {});
    expect(mem.ok).toBe(true);
    // it waited for the lock and committed, and says so
    expect(reply).toMatchObject({ ok: true, value: "charged" });
    expect(notes).toEqual(["hold"]);
    expect(row!.state.phase).toBe("in_progress");
    expect(reminders.length).toBe(1);
    await host.stop();
  }, 20_000);
}
