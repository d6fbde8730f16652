/**
 * Review R6 LOW-3: a request that ends in 503 actor_unavailable tells its caller only a fixed text, so the runtime
 * must log once, when ActorClient gives up, which actor and message it was, how often it was tried and why the last
 * try failed (nobody listening vs nobody answering in time), without the message body. Real NATS (NATS_URL or
 * 127.0.0.1:4222) for the transport's reasons, the in-process bus for a host's own refusal and a stuck turn.
 */
import { afterAll, afterEach, beforeAll, describe, expect, test } from "bun:test";
import { Type as T } from "@sinclair/typebox";
import { ActorClient } from "../../actors/runtime/client.ts";
import { defineActor } from "../../actors/runtime/define-actor.ts";
import { ActorError } from "../../actors/runtime/errors.ts";
import { NO_ANSWER_TEXT, UNAVAILABLE_TEXT } from "../../actors/runtime/unavailable-text.ts";
import { InProcessTransport } from "../../actors/transport/in-process.ts";
import { NatsTransport } from "../../actors/transport/nats.ts";
import { partitionOf, partitionSubject } from "../../actors/transport/placement.ts";
import { setLogLevel, setLogSink } from "../../infra/log.ts";

const NATS = process.env.TEST_NATS_URL ?? "nats://127.0.0.1:4222";
const BODY_MARK = "body-must-not-be-logged-7f3a";
const run = Math.random().toString(36).slice(2, 8);
const lines: Record<string, unknown>[] = [];
let restore: () => void = () => {};

beforeAll(() => {
  restore = setLogSink((line) => void lines.push(JSON.parse(line)));
  // the level is process-wide and a service booted by an earlier test file may have left it at "error"
  setLogLevel("info");
});
afterAll(() => {
  restore();
  setLogLevel("error"); // what the test services run at (test/helpers/server.ts)
});
afterEach(() => void (lines.length = 0));

const defOf = (kind: string) => defineActor({ kind, initialState: () => ({}), messages: { poke: T.Object({ note: T.String() }) }, handlers: { poke: () => null } });

/** Asks once and returns the thrown error (it must throw). */
async function failedAsk(client: ActorClient, kind: string, id: string): Promise<ActorError> {
  const err = await client.ask(defOf(kind), id, "poke", { note: BODY_MARK }, { timeoutMs: 400 }).then(
    () => null,
    (e: unknown) => e,
  );
  expect(err).toBeInstanceOf(ActorError);
  return err as ActorError;
}

const gaveUp = () => lines.filter((l) => l.msg === "actor request gave up: no answer before its deadline");

describe("ActorClient logs once when it gives up", () => {
  test("nobody serving the partition (NATS): one warn line with kind, id, type, attempts, subject and no_responders", async () => {
    const caller = await NatsTransport.connect({ servers: NATS, partitions: 16 });
    try {
      const kind = `giveup-nr-${run}`;
      const err = await failedAsk(new ActorClient(caller, { attemptTimeoutMs: 100 }), kind, "cart-1");
      expect(err.code).toBe("actor_unavailable");
      expect(err.toData()).toEqual({ code: "actor_unavailable", message: NO_ANSWER_TEXT }); // the caller's text is unchanged
      const [line, ...more] = gaveUp();
      expect(more).toEqual([]);
      expect(line).toMatchObject({ level: "warn", component: "actor-client", kind, id: "cart-1", type: "poke", reason: "no_responders" });
      expect(line!.subject).toBe(partitionSubject(kind, partitionOf("cart-1", 16)));
      expect(line!.attempts as number).toBeGreaterThan(1);
      expect(String(line!.lastError)).toContain("no responders");
      expect(JSON.stringify(lines)).not.toContain(BODY_MARK);
    } finally {
      await caller.close();
    }
  }, 20_000);

  test("a subscriber that never answers (NATS): the reason is timeout", async () => {
    const caller = await NatsTransport.connect({ servers: NATS, partitions: 16 });
    const stuck = await NatsTransport.connect({ servers: NATS, partitions: 16 });
    try {
      const kind = `giveup-to-${run}`;
      const sub = stuck.nc.subscribe(partitionSubject(kind, partitionOf("cart-2", 16)));
      await stuck.nc.flush();
      const err = await failedAsk(new ActorClient(caller, { attemptTimeoutMs: 100 }), kind, "cart-2");
      expect(err.toData()).toEqual({ code: "actor_unavailable", message: NO_ANSWER_TEXT });
      const [line, ...more] = gaveUp();
      expect(more).toEqual([]);
      expect(line).toMatchObject({ level: "warn", kind, id: "cart-2", type: "poke", reason: "timeout" });
      expect(String(line!.lastError)).toContain("TimeoutError");
      expect(JSON.stringify(lines)).not.toContain(BODY_MARK);
      sub.unsubscribe();
    } finally {
      await stuck.close();
      await caller.close();
    }
  }, 20_000);

  test("a host that answers it cannot run the message (in-process): host_unavailable with its fixed text", async () => {
    const bus = new InProcessTransport();
    const kind = `giveup-host-${run}`;
    await bus.serve(kind, async () => ({ ok: false, error: { code: "actor_unavailable", message: UNAVAILABLE_TEXT } }));
    const err = await failedAsk(new ActorClient(bus), kind, "a-3");
    expect(err.code).toBe("actor_unavailable");
    expect(gaveUp()).toEqual([expect.objectContaining({ kind, id: "a-3", type: "poke", reason: "host_unavailable", lastError: UNAVAILABLE_TEXT })]);
    expect(JSON.stringify(lines)).not.toContain(BODY_MARK);
    await bus.close();
  }, 20_000);

  test("a turn that never ends (in-process): timeout, and a refusal by the handler logs nothing", async () => {
    const bus = new InProcessTransport();
    const kind = `giveup-stuck-${run}`;
    await bus.serve(kind, (env) => (env.id === "refused" ? { ok: false, error: { code: "CART_NOT_FOUND", message: "no" } } : new Promise(() => {})));
    const err = await failedAsk(new ActorClient(bus), kind, "a-4");
    expect(err.toData()).toEqual({ code: "actor_unavailable", message: NO_ANSWER_TEXT });
    expect(gaveUp()).toEqual([expect.objectContaining({ kind, id: "a-4", attempts: 1, reason: "timeout" })]);
    lines.length = 0;
    const refused = await failedAsk(new ActorClient(bus), kind, "refused");
    expect(refused.code).toBe("CART_NOT_FOUND");
    expect(gaveUp()).toEqual([]);
    await bus.close();
  }, 20_000);
});
