/**
 * A new actor's first turn (`createdBy`, e.g. a new cart) runs on a presumed-empty state and inserts its row. When the
 * connection drops after that insert went out, it may have committed without its acknowledgement reaching us. Since
 * b645ac0 the turn answered 503 service_unavailable at once; the client does not retry a 503, and an HTTP client
 * then retried without an idempotency key and created a second cart while the first existed (review R2-F5). Only a
 * failure that certainly sent nothing (a refused connection) still answers 503 at once; a write in doubt is settled
 * by reading the row, and the client's resend (same message id) gets the committed reply from actor_inbox.
 * Likewise an actor whose load lost its connection (a failover, a proxy restart) is retried once on another
 * connection instead of answering 503 at once.
 */
import { afterAll, beforeAll, expect, test } from "bun:test";
import { Type as T } from "@sinclair/typebox";
import { ActorClient } from "../../actors/runtime/client.ts";
import { defineActor } from "../../actors/runtime/define-actor.ts";
import { ActorError } from "../../actors/runtime/errors.ts";
import { ActorHost } from "../../actors/runtime/host.ts";
import { InProcessTransport } from "../../actors/transport/in-process.ts";
import { connect, type Sql } from "../../infra/db.ts";
import { createTestDatabase, type TestDatabase } from "../helpers/db.ts";
import { PgProxy } from "../helpers/pg-proxy.ts";

/** How often `create` ran per id, whichever activation ran it. */
const runs = new Map<string, number>();

const account = defineActor({
  kind: "lost-ack-account",
  initialState: () => ({ name: null as string | null }),
  createdBy: ["create"],
  messages: { create: T.Object({ name: T.String() }), rename: T.Object({ name: T.String() }) },
  handlers: {
    async rename(ctx, body) {
      if (ctx.state.name === null) throw new ActorError("not_found", "No such account.");
      ctx.state.name = body.name;
      return { id: ctx.id, name: body.name };
    },
    async create(ctx, body) {
      runs.set(ctx.id, (runs.get(ctx.id) ?? 0) + 1);
      if (ctx.state.name !== null) throw new ActorError("conflict", "An account with this id exists.");
      ctx.state.name = body.name;
      return { id: ctx.id, name: body.name };
    },
  },
});

let db: TestDatabase;
let proxy: PgProxy;
let sql: Sql;
let host: ActorHost;
let client: ActorClient;

beforeAll(async () => {
  db = await createTestDatabase();
  proxy = await PgProxy.toTestServer();
  sql = connect(proxy.via(db.url), 2, { queryDeadlineMs: 2000 });
  const transport = new InProcessTransport(); // lossless: a first attempt keeps no reply unless it must
  client = new ActorClient(transport, { defaultTimeoutMs: 6000 });
  host = new ActorHost({ transport, sql, definitions: [account], caller: client, reminderPollMs: 0 });
  await host.start();
}, 60_000);

afterAll(async () => {
  await host.stop();
  await sql.end({ timeout: 1 }).catch(() => {});
  await proxy.down().catch(() => {});
  await db.drop();
}, 30_000);

test("a new actor whose insert committed but whose acknowledgement was lost answers its committed reply, once, not 503", async () => {
  // the name travels in the insert's Bind message (its parameters), which runs it: cut right after that
  const lost = proxy.loseReplyAfter("first-lost-ack");
  const reply = await client.ask(account, "acct-1", "create", { name: "first-lost-ack" });
  await lost; // the insert's connection really was cut
  expect(reply).toEqual({ id: "acct-1", name: "first-lost-ack" });
  expect(runs.get("acct-1")).toBe(1); // the resend read the inbox; `create` did not run again
  const rows = await db.sql<{ version: number; state: { name: string } }[]>`SELECT version, state FROM actor_state WHERE kind = ${account.kind} AND id = 'acct-1'`;
  expect(rows.map((r) => [Number(r.version), r.state.name])).toEqual([[1, "first-lost-ack"]]);
}, 30_000);

test("a new actor whose database refuses connections still answers 503 service_unavailable at once, having created nothing", async () => {
  await proxy.down();
  await Bun.sleep(100); // the pool has seen its connections close: the next query connects, and is refused
  try {
    const t0 = performance.now();
    const err = await client.ask(account, "acct-2", "create", { name: "second" }).then(
      () => undefined,
      (e: ActorError) => e,
    );
    expect(err?.code).toBe("service_unavailable");
    expect(performance.now() - t0).toBeLessThan(2000); // not the client's retries until its 6 s deadline
  } finally {
    await proxy.up();
  }
  const rows = await db.sql`SELECT 1 FROM actor_state WHERE kind = ${account.kind} AND id = 'acct-2'`;
  expect(rows.length).toBe(0);
}, 30_000);

test("an actor whose load loses its connection is loaded again at once on another connection, not answered 503", async () => {
  await db.sql`INSERT INTO actor_state (kind, id, version, state) VALUES (${account.kind}, 'acct-load-1', 1, ${JSON.stringify({ name: "before" })}::text::jsonb)`;
  // the id travels in the load's Bind message: the SELECT runs, its rows never arrive
  const lost = proxy.loseReplyAfter("acct-load-1");
  const reply = await client.ask(account, "acct-load-1", "rename", { name: "after" });
  await lost;
  expect(reply).toEqual({ id: "acct-load-1", name: "after" });
  const rows = await db.sql<{ version: number; state: { name: string } }[]>`SELECT version, state FROM actor_state WHERE kind = ${account.kind} AND id = 'acct-load-1'`;
  expect(rows.map((r) => [Number(r.version), r.state.name])).toEqual([[2, "after"]]);
}, 30_000);
