/**
 * An ip activation serves only once its read of the stored buckets has answered, however slow that read is. It used
 * to start with empty buckets once the read had taken 0.5 s: on a loaded machine the joiner of a moved partition
 * then admitted the limit again before a re-read merged the row (CI at load 14: 500 per 15 min let 790 through a
 * rolling restart, test/distributed/rate-limit-restart-traffic.test.ts). The table is locked against reads here, so
 * the read takes as long as the test says, deterministically.
 */
import { afterAll, beforeAll, expect, test } from "bun:test";
import postgres from "postgres";
import { ActorClient } from "../../actors/runtime/client.ts";
import { ActorHost } from "../../actors/runtime/host.ts";
import { ipActor } from "../../actors/ip/index.ts";
import { lossyTransport } from "../../test/helpers/lossy-transport.ts";
import { createTestDatabase, type TestDatabase } from "../../test/helpers/db.ts";

let db: TestDatabase;
beforeAll(async () => {
  db = await createTestDatabase();
});
afterAll(async () => {
  await db?.drop();
});

const spec = { id: "sl-g", limit: 5, windowMs: 15 * 60_000 };

test("an activation whose stored-bucket read takes three times the old half-second budget admits from the stored count, not from empty", async () => {
  const now = Date.now();
  // a previous owner handed over a full bucket
  await db.sql`INSERT INTO rate_limit_buckets (owner, bucket_id, window_start, window_end, used, durable)
    VALUES ('10.6.6.6', ${spec.id}, ${now}, ${now + spec.windowMs}, ${spec.limit}, false)`;
  const t = lossyTransport();
  const host = new ActorHost({ transport: t, sql: db.sql, definitions: [ipActor], caller: new ActorClient(t), reminderPollMs: 0 });
  await host.start(); // a placement change: the activation's load reads the table
  const locker = postgres(db.url, { max: 1 });
  try {
    const lockTaken = Promise.withResolvers<void>();
    const release = Promise.withResolvers<void>();
    const locked = locker.begin(async (tx) => {
      await tx`LOCK TABLE rate_limit_buckets IN ACCESS EXCLUSIVE MODE`; // reads wait too
      lockTaken.resolve();
      await release.promise;
    });
    await lockTaken.promise;
    const reply = host.dispatch({ msgId: "sl-1", kind: "ip", id: "10.6.6.6", type: "admit", body: { buckets: [spec] }, deadline: Date.now() + 10_000, attempt: 1 });
    await Bun.sleep(1_500);
    release.resolve();
    await locked;
    expect(await reply).toEqual({ ok: true, value: { allowed: false, rate: { limit: spec.limit, remaining: 0, reset: Math.ceil((now + spec.windowMs) / 1000), retryAfter: expect.any(Number) }, consumedAt: expect.any(Number) } });
  } finally {
    await locker.end();
    await host.stop();
  }
}, 30_000);
