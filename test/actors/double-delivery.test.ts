/**
 * Over NATS a message can reach two hosts: while a partition moves, the old and the new owner are both subscribed
 * for a moment, and each gets every message published then (first attempts included). The fence lets only one
 * write, and actor_inbox's key (kind, id, msg_id) refuses a second write of the same message. The host that comes
 * second must answer the first one's reply (the message's original result), not a 500: its caller may get that
 * answer first, and an internal_error is not retried (nats-node-failure test: one deposit of 22,658 was not
 * acknowledged, though it was applied once).
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { Type as T } from "@sinclair/typebox";
import { ActorClient } from "../../actors/runtime/client.ts";
import { defineActor } from "../../actors/runtime/define-actor.ts";
import type { RequestEnvelope } from "../../actors/runtime/envelope.ts";
import { ActorHost } from "../../actors/runtime/host.ts";
import { createTestDatabase, type TestDatabase } from "../helpers/db.ts";
import { lossyTransport } from "../helpers/lossy-transport.ts";

/** How often each deposit's handler ran, whichever host ran it (both hosts live in this process). */
const runs = new Map<string, number>();

const ledger = defineActor({
  kind: "dd-ledger",
  initialState: () => ({ refs: [] as string[], balance: 0 }),
  messages: { deposit: T.Object({ ref: T.String(), delayMs: T.Optional(T.Integer({ minimum: 0 })) }) },
  handlers: {
    async deposit(ctx, body) {
      runs.set(body.ref, (runs.get(body.ref) ?? 0) + 1);
      if (body.delayMs) await Bun.sleep(body.delayMs);
      ctx.state.refs.push(body.ref);
      ctx.state.balance += 1;
      return { balance: ctx.state.balance, ref: body.ref };
    },
  },
});

let db: TestDatabase;

async function startHost(): Promise<ActorHost> {
  const transport = lossyTransport();
  const host = new ActorHost({ transport, sql: db.sql, definitions: [ledger], caller: new ActorClient(transport), reminderPollMs: 0 });
  await host.start();
  return host;
}

function deposit(id: string, ref: string, delayMs?: number): RequestEnvelope {
  return { msgId: `msg-${ref}`, kind: ledger.kind, id, type: "deposit", body: delayMs ? { ref, delayMs } : { ref }, deadline: Date.now() + 5000, attempt: 1 };
}

async function stateOf(id: string): Promise<{ refs: string[]; balance: number }> {
  const rows = await db.sql<{ state: { refs: string[]; balance: number } }[]>`SELECT state FROM actor_state WHERE kind = ${ledger.kind} AND id = ${id}`;
  return rows[0].state;
}

beforeAll(async () => {
  db = await createTestDatabase();
});
afterAll(async () => {
  await db.drop();
});

describe("a first attempt delivered to two hosts", () => {
  test("is applied once, and the host that comes second answers the first one's reply", async () => {
    const [a, b] = [await startHost(), await startHost()];
    try {
      expect(await a.dispatch(deposit("acct-1", "seed"))).toEqual({ ok: true, value: { balance: 1, ref: "seed" } });
      const first = await a.dispatch(deposit("acct-1", "m1"));
      expect(first).toEqual({ ok: true, value: { balance: 2, ref: "m1" } });
      // host b activates the account after a's write: it reads the state that already holds m1
      const second = await b.dispatch(deposit("acct-1", "m1"));
      expect(second).toEqual(first);
      expect(await stateOf("acct-1")).toEqual({ refs: ["seed", "m1"], balance: 2 });
      // b's activation goes on: its next message writes on top of the current state
      expect(await b.dispatch(deposit("acct-1", "m2"))).toEqual({ ok: true, value: { balance: 3, ref: "m2" } });
    } finally {
      await a.stop();
      await b.stop();
    }
  });

  test("waiting behind a turn that meets the other host's write is answered from the inbox, its handler not run again", async () => {
    const [a, b] = [await startHost(), await startHost()];
    try {
      expect((await a.dispatch(deposit("acct-2", "seed2"))).ok).toBe(true); // a's activation is loaded
      // on a: a slow turn runs, and m3 waits in the mailbox behind it
      const slow = a.dispatch(deposit("acct-2", "slow", 300));
      await Bun.sleep(20);
      const onA = a.dispatch(deposit("acct-2", "m3"));
      // meanwhile b (the other owner) applies m3 first
      const onB = await b.dispatch(deposit("acct-2", "m3"));
      expect(onB).toEqual({ ok: true, value: { balance: 2, ref: "m3" } });
      // a's slow turn meets b's write (fenced: a retryable refusal), so m3 goes to a fresh activation of a
      const slowReply = await slow;
      expect(slowReply.ok ? "ok" : slowReply.error.code).toBe("actor_unavailable");
      expect(await onA).toEqual(onB);
      expect(runs.get("m3")).toBe(1);
      expect(await stateOf("acct-2")).toEqual({ refs: ["seed2", "m3"], balance: 2 });
    } finally {
      await a.stop();
      await b.stop();
    }
  });
});
