/**
 * Review RF-2: the placement hold is bounded by its own length, so a wall clock stepped back after a placement change
 * does not stall new ip/agent activations until the caller's deadline.
 */
import { afterAll, beforeAll, expect, setSystemTime, test } from "bun:test";
import { ActorClient } from "../../actors/runtime/client.ts";
import { ActorHost } from "../../actors/runtime/host.ts";
import { ipActor } from "../../actors/ip/index.ts";
import { lossyTransport } from "../../test/helpers/lossy-transport.ts";
import { createTestDatabase, type TestDatabase } from "../../test/helpers/db.ts";

let db: TestDatabase;
beforeAll(async () => { db = await createTestDatabase(); });
afterAll(async () => { setSystemTime(); await db?.drop(); });

test("a wall-clock step back after a placement change does not stall new ip activations", async () => {
  const t1 = lossyTransport();
  const h1 = new ActorHost({ transport: t1, sql: db.sql, definitions: [ipActor], caller: new ActorClient(t1), reminderPollMs: 0 });
  await h1.start(); // placement change: holdUntil = Date.now() + 500
  setSystemTime(new Date(Date.now() - 8_000)); // NTP steps the clock back 8 s
  const t0 = performance.now();
  const reply = await Promise.race([
    h1.dispatch({ msgId: "rf-c1", kind: "ip", id: "10.7.7.7", type: "admit", body: { buckets: [{ id: "g", limit: 5, windowMs: 60_000 }] }, deadline: Date.now() + 20_000, attempt: 1 } as never),
    Bun.sleep(3_000).then(() => "no answer in 3 s"),
  ]);
  setSystemTime();
  await h1.stop();
  expect(performance.now() - t0).toBeLessThan(1_000);
}, 30_000);
