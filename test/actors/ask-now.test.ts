/**
 * `askNow` (a reply ready at once comes back as a value) and immutable messages (passed by reference on the
 * in-process bus, checked under test: JSON-stable and deep-frozen). docs/decisions.md, "Immutable messages".
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { Type as T } from "@sinclair/typebox";
import { defineActor } from "../../actors/runtime/define-actor.ts";
import { ActorHost } from "../../actors/runtime/host.ts";
import { ActorClient } from "../../actors/runtime/client.ts";
import { ActorError, fail } from "../../actors/runtime/errors.ts";
import { InProcessTransport } from "../../actors/transport/in-process.ts";
import { checkImmutable } from "../../actors/transport/immutable.ts";
import { createTestDatabase, type TestDatabase } from "../helpers/db.ts";

let received: unknown = null;

const gauge = defineActor({
  kind: "gauge",
  persistence: "memory",
  initialState: () => ({ tags: ["a", "b"] as string[] }),
  messages: {
    read: T.Object({ note: T.Any() }),
    readCopied: T.Object({ note: T.Any() }),
    leak: T.Object({}),
    refuse: T.Object({}),
    slow: T.Object({}),
  },
  handlers: {
    read(_ctx, body) {
      received = body;
      return { at: 1, list: [1, 2] };
    },
    readCopied(_ctx, body) {
      received = body;
      return { at: 1, list: [1, 2] };
    },
    // breaks the immutable contract: hands out the actor's own state array
    leak(ctx) {
      return { tags: ctx.state.tags };
    },
    refuse() {
      throw fail("not_found", "nothing here");
    },
    async slow() {
      await Bun.sleep(5);
      return "late";
    },
  },
  reentrant: ["read", "readCopied", "leak", "refuse", "slow"],
  immutable: ["read", "leak", "refuse"],
});

let db: TestDatabase;
let host: ActorHost;
let client: ActorClient;

beforeAll(async () => {
  db = await createTestDatabase();
  const transport = new InProcessTransport();
  client = new ActorClient(transport);
  host = new ActorHost({ transport, sql: db.sql, definitions: [gauge], caller: client, reminderPollMs: 0 });
  await host.start();
}, 60_000);
afterAll(async () => {
  await host.stop();
  await db.drop();
});

describe("askNow", () => {
  test("a read-only message to a loaded activation is answered as a value, not a promise", async () => {
    const first = client.askNow(gauge, "g1", "read", { note: "x" });
    expect(first).toBeInstanceOf(Promise); // the activation loads first
    expect(await first).toEqual({ at: 1, list: [1, 2] });
    const second = client.askNow(gauge, "g1", "read", { note: "y" });
    expect(second).not.toBeInstanceOf(Promise);
    expect(second).toEqual({ at: 1, list: [1, 2] });
  });

  test("a refusal ready at once is thrown at once, as the handler's ActorError", async () => {
    await client.ask(gauge, "g2", "read", { note: 1 });
    let thrown: unknown;
    try {
      client.askNow(gauge, "g2", "refuse", {});
    } catch (err) {
      thrown = err;
    }
    expect(thrown).toBeInstanceOf(ActorError);
    expect((thrown as ActorError).code).toBe("not_found");
  });

  test("a handler that awaits is still answered through a promise", async () => {
    await client.ask(gauge, "g3", "read", { note: 1 });
    const r = client.askNow(gauge, "g3", "slow", {});
    expect(r).toBeInstanceOf(Promise);
    expect(await r).toBe("late");
  });
});

describe("immutable messages on the in-process bus", () => {
  test("the body of an immutable message reaches the handler as the caller's own object, frozen under test", async () => {
    await client.ask(gauge, "g4", "read", { note: 1 });
    const body = { note: { deep: [1] } };
    client.askNow(gauge, "g4", "read", body);
    expect(received).toBe(body);
    expect(Object.isFrozen(body)).toBe(true);
    expect(Object.isFrozen(body.note.deep)).toBe(true);
  });

  test("any other message is still copied", async () => {
    const body = { note: { deep: [1] } };
    await client.ask(gauge, "g4", "readCopied", body);
    expect(received).not.toBe(body);
    expect(received).toEqual(body);
    expect(Object.isFrozen(body)).toBe(false);
  });

  test("a body that would not survive JSON (a Date) is refused under test instead of working only in-process", async () => {
    await client.ask(gauge, "g5", "read", { note: 1 });
    await expect(client.ask(gauge, "g5", "read", { note: new Date() })).rejects.toThrow(/JSON/);
  });

  test("a handler that hands out its own state through an immutable reply is caught under test: the state is frozen and changing it throws", async () => {
    const r = await client.ask(gauge, "g6", "leak", {});
    expect(Object.isFrozen(r.tags)).toBe(true);
    expect(() => (r.tags as string[]).push("c")).toThrow(TypeError);
  });

  test("checkImmutable accepts plain JSON data and refuses what JSON would change", () => {
    expect(checkImmutable({ a: 1, b: ["x", null], c: { d: true } })).toEqual({ a: 1, b: ["x", null], c: { d: true } });
    for (const bad of [{ a: undefined }, { n: NaN }, { z: -0 }, { m: new Map() }, { d: new Date(0) }, [1, undefined]]) {
      expect(() => checkImmutable(bad)).toThrow(TypeError);
    }
    class Shaped {
      a = 1;
    }
    expect(() => checkImmutable({ s: new Shaped() })).toThrow(TypeError);
  });
});
