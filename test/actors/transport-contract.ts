/**
 * What every Transport must do, run against each implementation (transport-in-process.test.ts,
 * transport-nats.test.ts). Each test uses its own kind and topic names, so a shared NATS server is fine.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import type { ReplyEnvelope, RequestEnvelope } from "../../actors/runtime/envelope.ts";
import { ActorError } from "../../actors/runtime/errors.ts";
import type { Transport } from "../../actors/transport/transport.ts";

export interface TransportUnderTest {
  transport: Transport;
  cleanup: () => Promise<void>;
}

let seq = 0;
function uniq(prefix: string): string {
  return `${prefix}-${Date.now().toString(36)}-${(seq++).toString(36)}${Math.random().toString(36).slice(2, 6)}`;
}

function envelope(kind: string, id: string, body: unknown, type = "echo"): RequestEnvelope {
  return { msgId: crypto.randomUUID(), kind, id, type, body, deadline: Date.now() + 5000, attempt: 1 };
}

async function waitFor(pred: () => boolean, ms = 2000): Promise<boolean> {
  const end = Date.now() + ms;
  while (Date.now() < end) {
    if (pred()) return true;
    await Bun.sleep(10);
  }
  return pred();
}

export function transportContract(name: string, make: () => Promise<TransportUnderTest>): void {
  describe(`transport contract: ${name}`, () => {
    let t: TransportUnderTest;
    beforeAll(async () => {
      t = await make();
    });
    afterAll(async () => {
      await t?.cleanup();
    });

    test("a request reaches the server of its kind and the reply comes back", async () => {
      const kind = uniq("echo");
      await t.transport.serve(kind, async (env) => ({ ok: true, value: { id: env.id, type: env.type, body: env.body } }));
      const reply = await t.transport.request(envelope(kind, "a1", { n: 1 }), 2000);
      expect(reply).toEqual({ ok: true, value: { id: "a1", type: "echo", body: { n: 1 } } });
    });

    test("requests for many ids of one kind all arrive (whatever partition they fall in)", async () => {
      const kind = uniq("spread");
      await t.transport.serve(kind, async (env) => ({ ok: true, value: env.id }));
      const ids = Array.from({ length: 100 }, (_, i) => `id-${i}`);
      const replies = await Promise.all(ids.map((id) => t.transport.request(envelope(kind, id, {}), 2000)));
      expect(replies.map((r) => (r.ok ? r.value : null))).toEqual(ids);
    });

    test("structured JSON payloads survive the round trip unchanged", async () => {
      const kind = uniq("json");
      await t.transport.serve(kind, async (env) => ({ ok: true, value: env.body }));
      const body = {
        s: "héllo ✓ \u0000 \"quoted\"",
        n: 12345678901,
        f: -0.5,
        b: false,
        nil: null,
        list: [1, "two", { three: [3] }],
        nested: { deep: { deeper: { deepest: "x".repeat(2000) } } },
      };
      const reply = await t.transport.request(envelope(kind, "j1", body), 2000);
      expect(reply.ok).toBe(true);
      if (reply.ok) expect(reply.value).toEqual(body);
    });

    test("a caller cannot mutate what the server received (no shared objects)", async () => {
      const kind = uniq("clone");
      let seen: { list: number[] } | undefined;
      await t.transport.serve(kind, async (env) => {
        seen = env.body as { list: number[] };
        return { ok: true, value: seen };
      });
      const body = { list: [1, 2] };
      const reply = await t.transport.request(envelope(kind, "c1", body), 2000);
      body.list.push(3);
      expect(seen!.list).toEqual([1, 2]);
      if (reply.ok) (reply.value as { list: number[] }).list.push(9);
      expect(seen!.list).toEqual([1, 2]);
    });

    test("an error reply passes through with its code, message and details", async () => {
      const kind = uniq("err");
      await t.transport.serve(kind, async () => ({
        ok: false,
        error: new ActorError("CART_NOT_FOUND", "no such cart", { cartId: "c9", tried: [1, 2] }).toData(),
      }));
      const reply = await t.transport.request(envelope(kind, "e1", {}), 2000);
      expect(reply.ok).toBe(false);
      if (!reply.ok) {
        expect(reply.error).toEqual({ code: "CART_NOT_FOUND", message: "no such cart", details: { cartId: "c9", tried: [1, 2] } });
        const err = ActorError.fromData(reply.error);
        expect(err.code).toBe("CART_NOT_FOUND");
        expect(err.details).toEqual({ cartId: "c9", tried: [1, 2] });
      }
    });

    test("a kind nobody serves is actor_unavailable, quickly", async () => {
      const started = Date.now();
      const err = await t.transport.request(envelope(uniq("nobody"), "x", {}), 1500).catch((e) => e);
      expect(err).toBeInstanceOf(ActorError);
      expect((err as ActorError).code).toBe("actor_unavailable");
      expect(Date.now() - started).toBeLessThan(1500);
    });

    test("a server slower than the timeout is actor_unavailable after about the timeout", async () => {
      const kind = uniq("slow");
      await t.transport.serve(kind, async () => {
        await Bun.sleep(600);
        return { ok: true, value: "late" } as ReplyEnvelope;
      });
      const started = Date.now();
      const err = await t.transport.request(envelope(kind, "s1", {}), 150).catch((e) => e);
      const took = Date.now() - started;
      expect(err).toBeInstanceOf(ActorError);
      expect((err as ActorError).code).toBe("actor_unavailable");
      expect(took).toBeGreaterThanOrEqual(140);
      expect(took).toBeLessThan(550);
    });

    test("a published event reaches every subscriber of its topic, and only them", async () => {
      const topic = uniq("topic");
      const other = uniq("other");
      const a: unknown[] = [];
      const b: unknown[] = [];
      const c: unknown[] = [];
      const ua = t.transport.subscribe(topic, (e) => void a.push(e));
      const ub = t.transport.subscribe(topic, (e) => void b.push(e));
      const uc = t.transport.subscribe(other, (e) => void c.push(e));
      await settle(t.transport);
      await t.transport.publish(topic, { n: 1, tags: ["x"] });
      await t.transport.publish(topic, { n: 2, tags: [] });
      expect(await waitFor(() => a.length === 2 && b.length === 2)).toBe(true);
      expect(a).toEqual([{ n: 1, tags: ["x"] }, { n: 2, tags: [] }]);
      expect(b).toEqual(a);
      await Bun.sleep(50);
      expect(c).toEqual([]);
      ua();
      ub();
      uc();
    });

    test("after unsubscribing, a handler receives nothing more", async () => {
      const topic = uniq("unsub");
      const got: unknown[] = [];
      const keep: unknown[] = [];
      const stop = t.transport.subscribe(topic, (e) => void got.push(e));
      const stopKeep = t.transport.subscribe(topic, (e) => void keep.push(e));
      await settle(t.transport);
      await t.transport.publish(topic, 1);
      expect(await waitFor(() => got.length === 1 && keep.length === 1)).toBe(true);
      stop();
      await settle(t.transport);
      await t.transport.publish(topic, 2);
      expect(await waitFor(() => keep.length === 2)).toBe(true);
      await Bun.sleep(50);
      expect(got).toEqual([1]);
      stopKeep();
    });

    test("a handler that fails does not break delivery to the others", async () => {
      const topic = uniq("throws");
      const got: unknown[] = [];
      // async: the in-process bus does not catch a handler that throws synchronously (reported to its owner)
      const u1 = t.transport.subscribe(topic, async () => {
        throw new Error("boom");
      });
      const u2 = t.transport.subscribe(topic, (e) => void got.push(e));
      await settle(t.transport);
      await t.transport.publish(topic, "a");
      await t.transport.publish(topic, "b");
      expect(await waitFor(() => got.length === 2)).toBe(true);
      u1();
      u2();
    });
  });
}

/** Lets a subscription reach the server before publishing (a flush round trip over NATS; nothing in-process). */
async function settle(transport: Transport): Promise<void> {
  const nc = (transport as { nc?: { flush(): Promise<void> } }).nc;
  if (nc) await nc.flush();
}
