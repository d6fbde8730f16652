/**
 * Review RF-1: a clean stop right after a placement change (a rolling restart) hands over what the ip activations
 * admitted, including messages still waiting out the placement hold: nothing is admitted twice across the hand-over.
 */
import { afterAll, beforeAll, expect, test } from "bun:test";
import { ActorClient } from "../../actors/runtime/client.ts";
import { ActorHost } from "../../actors/runtime/host.ts";
import { ipActor } from "../../actors/ip/index.ts";
import { lossyTransport } from "../../test/helpers/lossy-transport.ts";
import { createTestDatabase, type TestDatabase } from "../../test/helpers/db.ts";

let db: TestDatabase;
beforeAll(async () => { db = await createTestDatabase(); });
afterAll(async () => { await db?.drop(); });

const spec = { id: "rf-g", limit: 5, windowMs: 15 * 60_000 };
let n = 0;
const admit = (host: ActorHost, id: string) =>
  host.dispatch({ msgId: `rf-${n++}`, kind: "ip", id, type: "admit", body: { buckets: [spec] }, deadline: Date.now() + 5000, attempt: 1 } as never);

test("a clean stop during the placement hold hands over what the held activations admitted", async () => {
  const t1 = lossyTransport();
  const h1 = new ActorHost({ transport: t1, sql: db.sql, definitions: [ipActor], caller: new ActorClient(t1), reminderPollMs: 0 });
  await h1.start(); // start() is a placement change: new ip activations hold 0.5 s
  const pending = [1, 2, 3, 4, 5].map(() => admit(h1, "10.9.9.9"));
  await Bun.sleep(20);
  await h1.stop(); // SIGTERM right after a placement change
  const first = await Promise.all(pending);
  const rows = await db.sql`SELECT owner, bucket_id, used FROM rate_limit_buckets WHERE owner = '10.9.9.9'`;
  const t2 = lossyTransport();
  const h2 = new ActorHost({ transport: t2, sql: db.sql, definitions: [ipActor], caller: new ActorClient(t2), reminderPollMs: 0 });
  await h2.start();
  const second = await Promise.all([1, 2, 3, 4, 5].map(() => admit(h2, "10.9.9.9")));
  await h2.stop();
  const allowed = [...first, ...second].filter((r: any) => r.ok && r.value.allowed).length;
  expect(allowed).toBeLessThanOrEqual(5);
}, 30_000);
