/**
 * A turn starts from the state text the previous turn wrote (host.ts `Activation.stateJson`) instead of printing the
 * state again: these pin down that every change still reaches the state row, that a turn changing nothing still
 * writes nothing, and that a failed turn or a reentrant handler's change in memory is handled as before.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { Type as T } from "@sinclair/typebox";
import { defineActor } from "../../actors/runtime/define-actor.ts";
import { ActorHost } from "../../actors/runtime/host.ts";
import { ActorClient } from "../../actors/runtime/client.ts";
import { fail } from "../../actors/runtime/errors.ts";
import { InProcessTransport } from "../../actors/transport/in-process.ts";
import { createTestDatabase, type TestDatabase } from "../helpers/db.ts";

const nested = defineActor({
  kind: "nested",
  initialState: () => ({ a: { b: { c: 0 } }, list: [] as number[] }),
  messages: {
    set: T.Object({ c: T.Integer() }),
    push: T.Object({ x: T.Integer() }),
    noop: T.Object({}),
    setThenFail: T.Object({ c: T.Integer() }),
    get: T.Object({}),
    peekAndTouch: T.Object({ c: T.Integer() }),
  },
  reentrant: ["get", "peekAndTouch"],
  handlers: {
    async set(ctx, body) {
      ctx.state.a.b.c = body.c; // in place, deep inside the state
      return ctx.state.a.b.c;
    },
    async push(ctx, body) {
      await Bun.sleep(0);
      ctx.state.list.push(body.x);
      return ctx.state.list.length;
    },
    async noop(ctx) {
      return ctx.state.a.b.c;
    },
    async setThenFail(ctx, body) {
      ctx.state.a.b.c = body.c;
      ctx.state.list.push(-1);
      throw fail("conflict", "refused after changing the state");
    },
    async get(ctx) {
      return ctx.state;
    },
    // a reentrant handler that (wrongly) changes the state in memory: never written by itself
    async peekAndTouch(ctx, body) {
      ctx.state.a.b.c = body.c;
      return ctx.state.a.b.c;
    },
  },
});

let db: TestDatabase;

function startHost() {
  const transport = new InProcessTransport();
  const client = new ActorClient(transport);
  const host = new ActorHost({ transport, sql: db.sql, definitions: [nested], caller: client, reminderPollMs: 0 });
  return { client, host };
}

async function row(id: string): Promise<{ version: number; state: { a: { b: { c: number } }; list: number[] } } | undefined> {
  const [r] = await db.sql<{ version: number; state: { a: { b: { c: number } }; list: number[] } }[]>`
    SELECT version, state FROM actor_state WHERE kind = 'nested' AND id = ${id}`;
  return r ? { version: Number(r.version), state: r.state } : undefined;
}

beforeAll(async () => {
  db = await createTestDatabase();
});
afterAll(async () => {
  await db.drop();
});

describe("a turn's state snapshot taken from the previous turn's written text", () => {
  test("every turn's in-place change of nested state reaches the state row, and a turn that changes nothing writes none", async () => {
    const { client, host } = startHost();
    await host.start();
    expect(await client.ask(nested, "n1", "set", { c: 1 })).toBe(1);
    expect(await row("n1")).toEqual({ version: 1, state: { a: { b: { c: 1 } }, list: [] } });
    expect(await client.ask(nested, "n1", "set", { c: 2 })).toBe(2);
    expect(await row("n1")).toEqual({ version: 2, state: { a: { b: { c: 2 } }, list: [] } });
    expect(await client.ask(nested, "n1", "noop", {})).toBe(2);
    expect(await client.ask(nested, "n1", "set", { c: 2 })).toBe(2);
    expect(await row("n1")).toEqual({ version: 2, state: { a: { b: { c: 2 } }, list: [] } });
    expect(await client.ask(nested, "n1", "push", { x: 7 })).toBe(1);
    expect(await client.ask(nested, "n1", "set", { c: 3 })).toBe(3);
    expect(await row("n1")).toEqual({ version: 4, state: { a: { b: { c: 3 } }, list: [7] } });
    await host.stop();
  });

  test("a failed turn's change is rolled back, and the turns after it write from the committed state", async () => {
    const { client, host } = startHost();
    await host.start();
    expect(await client.ask(nested, "n2", "set", { c: 5 })).toBe(5);
    const err = await client.ask(nested, "n2", "setThenFail", { c: 6 }).catch((e) => e);
    expect(err.code).toBe("conflict");
    expect(await client.ask(nested, "n2", "get", {})).toEqual({ a: { b: { c: 5 } }, list: [] });
    expect(await client.ask(nested, "n2", "noop", {})).toBe(5);
    expect(await row("n2")).toEqual({ version: 1, state: { a: { b: { c: 5 } }, list: [] } });
    expect(await client.ask(nested, "n2", "set", { c: 6 })).toBe(6);
    expect(await row("n2")).toEqual({ version: 2, state: { a: { b: { c: 6 } }, list: [] } });
    await host.stop();
  });

  test("a reentrant handler's change of the state in memory is not written by a later turn that changes nothing", async () => {
    const { client, host } = startHost();
    await host.start();
    expect(await client.ask(nested, "n3", "set", { c: 1 })).toBe(1);
    expect(await client.ask(nested, "n3", "peekAndTouch", { c: 9 })).toBe(9);
    expect(await client.ask(nested, "n3", "noop", {})).toBe(9);
    expect(await row("n3")).toEqual({ version: 1, state: { a: { b: { c: 1 } }, list: [] } });
    // a later change writes the whole state as the turn found it, as before
    expect(await client.ask(nested, "n3", "push", { x: 1 })).toBe(1);
    expect(await row("n3")).toEqual({ version: 2, state: { a: { b: { c: 9 } }, list: [1] } });
    await host.stop();
  });

  test("a passivated activation's next turn prints the state it loaded and writes only a change", async () => {
    const { client, host } = startHost();
    await host.start();
    expect(await client.ask(nested, "n4", "set", { c: 4 })).toBe(4);
    await host.stop();
    const second = startHost();
    await second.host.start();
    expect(await second.client.ask(nested, "n4", "noop", {})).toBe(4);
    expect(await row("n4")).toEqual({ version: 1, state: { a: { b: { c: 4 } }, list: [] } });
    expect(await second.client.ask(nested, "n4", "set", { c: 8 })).toBe(8);
    expect(await row("n4")).toEqual({ version: 2, state: { a: { b: { c: 8 } }, list: [] } });
    await second.host.stop();
  });
});
