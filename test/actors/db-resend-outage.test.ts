/**
 * A resend (attempt > 1) first looks its reply up in actor_inbox. When the database refused that lookup, the error
 * escaped the turn: the mailbox's drain loop rejected with nobody listening (an unhandled rejection, which ends a
 * Bun process: the uncaught ECONNREFUSED of a full-suite run), the caller got no answer until its deadline, and the
 * messages queued behind it waited for the next one to arrive. It is a 503 service_unavailable like any turn that
 * cannot reach the database, and the mailbox goes on.
 */
import { afterAll, beforeAll, expect, test } from "bun:test";
import { Type as T } from "@sinclair/typebox";
import { ActorClient } from "../../actors/runtime/client.ts";
import { defineActor } from "../../actors/runtime/define-actor.ts";
import { ActorHost } from "../../actors/runtime/host.ts";
import { InProcessTransport } from "../../actors/transport/in-process.ts";
import { connect, type Sql } from "../../infra/db.ts";
import { createTestDatabase, type TestDatabase } from "../helpers/db.ts";
import { PgProxy } from "../helpers/pg-proxy.ts";

const counter = defineActor({
  kind: "resend-counter",
  initialState: () => ({ n: 0 }),
  messages: { bump: T.Object({}) },
  handlers: {
    async bump(ctx) {
      ctx.state.n += 1;
      return ctx.state.n;
    },
  },
});

let db: TestDatabase;
let proxy: PgProxy;
let sql: Sql;
let host: ActorHost;
let client: ActorClient;
const escaped: unknown[] = [];
const onEscape = (err: unknown) => void escaped.push(err);

beforeAll(async () => {
  db = await createTestDatabase();
  proxy = await PgProxy.toTestServer();
  sql = connect(proxy.via(db.url), 2, { queryDeadlineMs: 2000 });
  const transport = new InProcessTransport();
  client = new ActorClient(transport, { defaultTimeoutMs: 6000 });
  host = new ActorHost({ transport, sql, definitions: [counter], caller: client, reminderPollMs: 0 });
  await host.start();
  process.on("unhandledRejection", onEscape);
  process.on("uncaughtException", onEscape);
}, 60_000);

afterAll(async () => {
  process.off("unhandledRejection", onEscape);
  process.off("uncaughtException", onEscape);
  await host.stop();
  await sql.end({ timeout: 1 }).catch(() => {});
  await proxy.down().catch(() => {});
  await db.drop();
}, 30_000);

test("a resend to a loaded actor while the database refuses connections answers service_unavailable, and the mailbox goes on", async () => {
  expect(await client.ask(counter, "c1", "bump", {})).toBe(1); // loaded and written
  await proxy.down();
  try {
    const t0 = performance.now();
    // a caller-named message is sent as a possible resend (attempt 2): its reply is looked up in the inbox first
    const answers = await Promise.all(
      ["m-1", "m-2", "m-3"].map((msgId) => client.ask(counter, "c1", "bump", {}, { msgId }).then(() => "answered", (e: { code?: string }) => e.code)),
    );
    expect(answers).toEqual(["service_unavailable", "service_unavailable", "service_unavailable"]);
    // answered as soon as the refusal is known, not at the caller's deadline
    expect(performance.now() - t0).toBeLessThan(4000);
    await Bun.sleep(50);
    expect(escaped).toEqual([]);
  } finally {
    await proxy.up();
  }
  // the database is back: the same message id now runs (nothing of it committed before)
  let reply: unknown;
  for (let i = 0; i < 40 && reply === undefined; i++) {
    reply = await client.ask(counter, "c1", "bump", {}, { msgId: "m-1" }).catch(() => undefined);
    if (reply === undefined) await Bun.sleep(250);
  }
  expect(reply).toBe(2);
  expect(escaped).toEqual([]);
}, 30_000);
