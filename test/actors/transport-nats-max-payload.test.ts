/**
 * Audit A3-1 (b): a message above the NATS server's max_payload can never be delivered, so the NATS transport
 * refuses it at once with the non-retryable 413 payload_too_large instead of a retryable transport error that
 * ActorClient resent until its deadline (60 s, then 503 "retry shortly"). A reply above it likewise: the caller
 * gets internal_error at once instead of waiting for a reply that cannot be sent. Shared single-node server
 * (NATS_URL or 127.0.0.1:4222), own membership bucket and kinds.
 */
import { afterAll, describe, expect, test } from "bun:test";
import { Kvm } from "@nats-io/kv";
import { Type as T } from "@sinclair/typebox";
import { ActorClient } from "../../actors/runtime/client.ts";
import { defineActor } from "../../actors/runtime/define-actor.ts";
import { ActorError } from "../../actors/runtime/errors.ts";
import { NatsTransport } from "../../actors/transport/nats.ts";
import { partitionOf, partitionSubject } from "../../actors/transport/placement.ts";

const NATS = process.env.TEST_NATS_URL ?? "nats://127.0.0.1:4222";
const run = Math.random().toString(36).slice(2, 8);
const bucket = `actor_hosts_maxpayload_${run}`;

afterAll(async () => {
  const t = await NatsTransport.connect({ servers: NATS });
  await (await new Kvm(t.nc).open(bucket)).destroy().catch(() => {});
  await t.close();
});

const def = (kind: string) =>
  defineActor({ kind, initialState: () => ({}), messages: { put: T.Object({ blob: T.String() }) }, handlers: { put: () => null } });

async function caught(p: Promise<unknown>): Promise<ActorError> {
  const err = await p.then(
    () => null,
    (e: unknown) => e,
  );
  expect(err).toBeInstanceOf(ActorError);
  return err as ActorError;
}

describe("messages over the NATS max_payload", () => {
  test("a request over max_payload is refused at once with 413 payload_too_large and is never published", async () => {
    const caller = await NatsTransport.connect({ servers: NATS, partitions: 16 });
    const listener = await NatsTransport.connect({ servers: NATS, partitions: 16 });
    try {
      const limit = caller.nc.info!.max_payload;
      expect(limit).toBeGreaterThan(0);
      const kind = `maxpayload-req-${run}`;
      let seen = 0;
      const sub = listener.nc.subscribe(partitionSubject(kind, partitionOf("big", 16)), {
        callback: (_e, m) => {
          seen++;
          m.respond("{}");
        },
      });
      await listener.nc.flush();
      const started = performance.now();
      const err = await caught(new ActorClient(caller).ask(def(kind), "big", "put", { blob: "x".repeat(limit) }, { timeoutMs: 10_000 }));
      const ms = performance.now() - started;
      expect(err.code).toBe("payload_too_large");
      expect(err.http).toBe(413);
      expect(err.message).toMatch(new RegExp(`^The request is too large to pass to the service's actors \\(\\d+ bytes; at most ${limit}\\)\\. Send it in smaller batches\\.$`));
      expect(err.details).toMatchObject({ limitBytes: limit });
      expect((err.details as { bytes: number }).bytes).toBeGreaterThan(limit);
      expect(ms).toBeLessThan(1000);
      await listener.nc.flush();
      expect(seen).toBe(0);
      sub.unsubscribe();
    } finally {
      await listener.close();
      await caller.close();
    }
  }, 20_000);

  test("a reply over max_payload is answered at once with internal_error, not waited for until the deadline", async () => {
    const host = await NatsTransport.connect({ servers: NATS, partitions: 16, bucket, replicas: 1, hostId: `maxpayload-${run}` });
    const caller = await NatsTransport.connect({ servers: NATS, partitions: 16 });
    try {
      const limit = host.nc.info!.max_payload;
      const kind = `maxpayload-reply-${run}`;
      await host.serve(kind, (env) => ({ ok: true as const, value: env.id === "big" ? "y".repeat(limit) : "small" }));
      const client = new ActorClient(caller);
      expect((await client.ask(def(kind), "small", "put", { blob: "" }, { timeoutMs: 10_000 })) as unknown).toBe("small");
      const started = performance.now();
      const err = await caught(client.ask(def(kind), "big", "put", { blob: "" }, { timeoutMs: 10_000 }));
      expect(err.code).toBe("internal_error");
      expect(performance.now() - started).toBeLessThan(2000);
    } finally {
      await caller.close();
      await host.close();
    }
  }, 30_000);
});
