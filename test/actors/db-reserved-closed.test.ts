/**
 * A reserved postgres.js connection (a turn's transaction) whose socket closed under it, as when Postgres drops its
 * connections (audit D-1). postgres.js 3.4.9 left the reservation usable: its next statement went to execute() on a
 * null socket, whose batched write then threw `socket.write` on null from a setImmediate, an uncaught TypeError
 * no caller could catch, and the process guard ended the actor host. And once the pool had reopened that
 * connection for another caller, the stale reservation's ROLLBACK and release() reached the new owner's session.
 * patches/postgres@3.4.9.patch: a lost reservation rejects its statements with CONNECTION_CLOSED, its release()
 * leaves the connection to the pool, and a connection without a socket never writes.
 */
import { afterAll, beforeAll, expect, test } from "bun:test";
import { Type as T } from "@sinclair/typebox";
import type postgres from "postgres";
import { ActorClient } from "../../actors/runtime/client.ts";
import { defineActor } from "../../actors/runtime/define-actor.ts";
import { ActorHost } from "../../actors/runtime/host.ts";
import { InProcessTransport } from "../../actors/transport/in-process.ts";
import { connect, type Sql } from "../../infra/db.ts";
import { createTestDatabase, type TestDatabase } from "../helpers/db.ts";
import { PgProxy } from "../helpers/pg-proxy.ts";

let db: TestDatabase;
const escaped: unknown[] = [];
const onEscape = (err: unknown) => void escaped.push(err);

beforeAll(async () => {
  db = await createTestDatabase();
  await db.sql`CREATE TABLE reserved_notes (n int)`;
  process.on("unhandledRejection", onEscape);
  process.on("uncaughtException", onEscape);
}, 60_000);

afterAll(async () => {
  process.off("unhandledRejection", onEscape);
  process.off("uncaughtException", onEscape);
  await db?.drop();
}, 30_000);

/** A query's outcome within `ms`: its rows' first value, its error code, or "no answer" (a statement left hanging). */
function outcome(q: PromiseLike<unknown>, ms = 3000): Promise<unknown> {
  return Promise.race([
    Promise.resolve(q).then(
      (rows) => (rows as Record<string, unknown>[])[0] ?? "answered",
      (e: { code?: string }) => e.code ?? String(e),
    ),
    Bun.sleep(ms).then(() => "no answer"),
  ]);
}

/** The socket close reaches postgres.js a moment after the proxy dropped it. */
async function cut(proxy: PgProxy): Promise<void> {
  await proxy.down();
  await Bun.sleep(150);
}

test("a reserved connection whose socket closed rejects its next statement and its ROLLBACK with CONNECTION_CLOSED, and nothing escapes", async () => {
  const proxy = await PgProxy.toTestServer();
  const pool = connect(proxy.via(db.url), 1, { queryDeadlineMs: 0 });
  try {
    const conn = await pool.reserve();
    await conn`BEGIN`;
    await conn`SELECT 1`;
    await cut(proxy);
    const next = await outcome(conn`SELECT 2`);
    const rollback = await outcome(conn`ROLLBACK`);
    conn.release();
    await Bun.sleep(50);
    expect({ next, rollback, escaped }).toEqual({ next: "CONNECTION_CLOSED", rollback: "CONNECTION_CLOSED", escaped: [] });
    // the pool's only connection is not lost to the released reservation: it answers once Postgres is back
    await proxy.up();
    expect(await outcome(pool`SELECT 3 AS n`, 5000)).toEqual({ n: 3 });
  } finally {
    await pool.end({ timeout: 1 });
    await proxy.down().catch(() => {});
  }
}, 30_000);

test("a reserve() waiting for the pool's only connection gets it once that connection dropped and reopened", async () => {
  const proxy = await PgProxy.toTestServer();
  const pool = connect(proxy.via(db.url), 1, { queryDeadlineMs: 0 });
  try {
    const holder = await pool.reserve();
    await holder`SELECT 1`;
    const waiting = pool.reserve();
    await proxy.down(); // the holder's connection closes: the pool reopens it for the waiting reservation
    await proxy.up();
    const got = await outcome(waiting.then((conn) => conn`SELECT 5 AS n`.finally(() => conn.release())), 5000);
    holder.release();
    expect({ got, escaped }).toEqual({ got: { n: 5 }, escaped: [] });
  } finally {
    await pool.end({ timeout: 1 });
    await proxy.down().catch(() => {});
  }
}, 30_000);

test("a reserve() refused while Postgres is down does not take the pool's connection when Postgres is back", async () => {
  const proxy = await PgProxy.toTestServer();
  const pool = connect(proxy.via(db.url), 1, { queryDeadlineMs: 0 });
  try {
    await proxy.down();
    const refused = await outcome(pool.reserve());
    await Bun.sleep(1000); // the pool keeps trying to open its connection meanwhile
    await proxy.up();
    expect({ refused, answer: await outcome(pool`SELECT 6 AS n`, 8000), escaped }).toEqual({ refused: "ECONNREFUSED", answer: { n: 6 }, escaped: [] });
  } finally {
    await pool.end({ timeout: 1 });
    await proxy.down().catch(() => {});
  }
}, 30_000);

test("a statement of an sql.begin() transaction whose connection dropped rejects with CONNECTION_CLOSED, and nothing escapes", async () => {
  const proxy = await PgProxy.toTestServer();
  const pool = connect(proxy.via(db.url), 1, { queryDeadlineMs: 0 });
  const late = Promise.withResolvers<unknown>();
  try {
    const ended = await outcome(
      pool.begin(async (tx) => {
        await tx`SELECT 1`;
        await cut(proxy);
        // the transaction's promise rejects with the close; its callback still runs on
        late.resolve(await outcome(tx`SELECT 2`));
      }),
    );
    const lateOutcome = await Promise.race([late.promise, Bun.sleep(4000).then(() => "no answer")]);
    await Bun.sleep(50);
    await proxy.up();
    expect({ ended, late: lateOutcome, escaped, answer: await outcome(pool`SELECT 7 AS n`, 5000) }).toEqual({ ended: "CONNECTION_CLOSED", late: "CONNECTION_CLOSED", escaped: [], answer: { n: 7 } });
  } finally {
    await pool.end({ timeout: 1 });
    await proxy.down().catch(() => {});
  }
}, 30_000);

test("a lost reservation's ROLLBACK and release() do not reach the session the pool reopened that connection for", async () => {
  const proxy = await PgProxy.toTestServer();
  const pool = connect(proxy.via(db.url), 1, { queryDeadlineMs: 0 });
  let other: postgres.ReservedSql | undefined;
  try {
    const stale = await pool.reserve();
    await stale`BEGIN`;
    await stale`SELECT 1`;
    // another turn waits for the pool's only connection; the pool reopens the dropped one for it
    const waiting = pool.reserve();
    await proxy.down();
    await proxy.up();
    other = await waiting;
    await other`BEGIN`;
    await other`INSERT INTO reserved_notes VALUES (1)`;
    // the stale turn now rolls back and releases, as Turn.rollback() does after its statement failed
    const rollback = await outcome(stale`ROLLBACK`);
    stale.release();
    // with the connection still reserved by `other`, a pool query waits for it instead of running in its transaction
    const poolQuery = pool`SELECT 4 AS n`;
    const early = await outcome(poolQuery, 300);
    await other`COMMIT`;
    other.release();
    other = undefined;
    const late = await outcome(poolQuery, 5000);
    const [{ count }] = await db.sql<{ count: number }[]>`SELECT count(*)::int AS count FROM reserved_notes WHERE n = 1`;
    expect({ rollback, early, late, committed: count, escaped }).toEqual({
      rollback: "CONNECTION_CLOSED",
      early: "no answer",
      late: { n: 4 },
      committed: 1,
      escaped: [],
    });
  } finally {
    other?.release();
    await pool.end({ timeout: 1 });
    await proxy.down().catch(() => {});
  }
}, 30_000);

// The turn-level case: a handler's transaction loses its connection between two statements; the turn fails and its
// rollback (ROLLBACK on the turn's reserved connection) runs on the closed connection.
let turnProxy: PgProxy | undefined;
let turnSql: Sql | undefined;
const noter = defineActor({
  kind: "reserved-noter",
  initialState: () => ({ notes: 0 }),
  messages: { note: T.Object({ cut: T.Boolean() }) },
  handlers: {
    async note(ctx, body) {
      const tx = await ctx.tx();
      await tx`INSERT INTO reserved_notes VALUES (2)`;
      if (body.cut && turnProxy) await cut(turnProxy);
      await tx`INSERT INTO reserved_notes VALUES (3)`;
      ctx.state.notes += 1;
      return ctx.state.notes;
    },
  },
});

test("a turn whose transaction's connection dropped mid-turn answers service_unavailable, and the host goes on once Postgres is back", async () => {
  turnProxy = await PgProxy.toTestServer();
  turnSql = connect(turnProxy.via(db.url), 2, { queryDeadlineMs: 2000 });
  const transport = new InProcessTransport();
  const client = new ActorClient(transport, { defaultTimeoutMs: 8000 });
  const host = new ActorHost({ transport, sql: turnSql, definitions: [noter], caller: client, reminderPollMs: 0 });
  await host.start();
  try {
    const answer = await client.ask(noter, "n1", "note", { cut: true }).then(
      () => "answered",
      (e: { code?: string }) => e.code,
    );
    await Bun.sleep(100);
    expect({ answer, escaped }).toEqual({ answer: "service_unavailable", escaped: [] });
    await turnProxy.up();
    let reply: unknown;
    for (let i = 0; i < 40 && reply === undefined; i++) {
      reply = await client.ask(noter, "n1", "note", { cut: false }).catch(() => undefined);
      if (reply === undefined) await Bun.sleep(250);
    }
    const [{ count }] = await db.sql<{ count: number }[]>`SELECT count(*)::int AS count FROM reserved_notes WHERE n IN (2, 3)`;
    // the cut turn's first insert was rolled back with its transaction; the later turn wrote both of its own
    expect({ reply, count, escaped }).toEqual({ reply: 1, count: 2, escaped: [] });
  } finally {
    await host.stop();
    await turnSql.end({ timeout: 1 }).catch(() => {});
    await turnProxy.down().catch(() => {});
  }
}, 60_000);
