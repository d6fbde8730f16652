/**
 * A clean stop returns only once its hand-over is written, however long the write takes: the transport leaves the
 * membership after `stop()`, and only then does the next owner take the partitions and load. The stop used to go on
 * after 2 s, so a slower write (a loaded database) landed after the next owner had loaded, which then counted the
 * window again. The table is locked against writes here (reads pass), so the write takes as long as the test says.
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

const spec = { id: "sw-g", limit: 5, windowMs: 15 * 60_000 };
let n = 0;
const admit = (host: ActorHost) =>
  host.dispatch({ msgId: `sw-${n++}`, kind: "ip", id: "10.5.5.5", type: "admit", body: { buckets: [spec] }, deadline: Date.now() + 10_000, attempt: 1 });
const allowed = (replies: readonly unknown[]) => replies.filter((r) => (r as { ok: boolean; value?: { allowed?: boolean } }).value?.allowed === true).length;

function host(): ActorHost {
  const t = lossyTransport();
  return new ActorHost({ transport: t, sql: db.sql, definitions: [ipActor], caller: new ActorClient(t), reminderPollMs: 0 });
}

test("a stop whose hand-over write waits three seconds on a lock returns only once it is written, and the next owner admits nothing more", async () => {
  const first = host();
  await first.start();
  const before = await Promise.all(Array.from({ length: spec.limit }, () => admit(first)));
  expect(allowed(before)).toBe(spec.limit);
  const locker = postgres(db.url, { max: 1 });
  const next = host();
  let after: unknown[];
  try {
    const lockTaken = Promise.withResolvers<void>();
    const release = Promise.withResolvers<void>();
    const locked = locker.begin(async (tx) => {
      await tx`LOCK TABLE rate_limit_buckets IN EXCLUSIVE MODE`; // writes wait, reads do not
      lockTaken.resolve();
      await release.promise;
    });
    await lockTaken.promise;
    setTimeout(() => release.resolve(), 3_000);
    await first.stop(); // SIGTERM: the transport leaves right after this, and the next owner takes over
    await next.start();
    after = await Promise.all(Array.from({ length: spec.limit }, () => admit(next)));
    await locked;
  } finally {
    await locker.end();
    await next.stop();
  }
  expect(allowed(after)).toBe(0);
}, 30_000);
