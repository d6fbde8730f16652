/**
 * A deadlock (40P01) or serialization failure (40001) in a turn is not an outage: two concurrent turns took rows in
 * different orders, a lock-order bug (docs/checkout.md "Lock order"). The caller still gets the retryable 503 (the
 * turn's writes rolled back; it is never re-run by the runtime), but the host counts it in
 * actor_lock_conflicts_total and logs it as an error, so a regression shows (audit K-2; before, it was the warning
 * "database unavailable").
 */
import { afterAll, beforeAll, expect, test } from "bun:test";
import { Type as T } from "@sinclair/typebox";
import { ActorClient } from "../../actors/runtime/client.ts";
import { defineActor } from "../../actors/runtime/define-actor.ts";
import { ActorHost } from "../../actors/runtime/host.ts";
import { InProcessTransport } from "../../actors/transport/in-process.ts";
import { registry } from "../../infra/metrics.ts";
import { createTestDatabase, type TestDatabase } from "../helpers/db.ts";

const clash = defineActor({
  kind: "lock-clash",
  initialState: () => ({ n: 0 }),
  messages: { clash: T.Object({ code: T.String() }) },
  handlers: {
    async clash(ctx, { code }) {
      ctx.state.n += 1;
      await ctx.sql.unsafe(`DO $$ BEGIN RAISE EXCEPTION 'simulated' USING ERRCODE = '${code}'; END $$`);
      return ctx.state.n;
    },
  },
});

let db: TestDatabase;
let host: ActorHost;
let client: ActorClient;

beforeAll(async () => {
  db = await createTestDatabase();
  const transport = new InProcessTransport();
  client = new ActorClient(transport, { defaultTimeoutMs: 6000 });
  host = new ActorHost({ transport, sql: db.sql, definitions: [clash], caller: client, reminderPollMs: 0 });
  await host.start();
}, 60_000);

afterAll(async () => {
  await host.stop();
  await db.drop();
}, 30_000);

async function conflicts(sqlstate: string): Promise<number> {
  const metric = await registry.getSingleMetric("actor_lock_conflicts_total")?.get();
  return metric?.values.find((v) => v.labels.kind === "lock-clash" && v.labels.sqlstate === sqlstate)?.value ?? 0;
}

test("a started host shows its kinds' conflict series at 0 before any conflict, so an alert reads zero, not no data (session 22, helper B)", async () => {
  const text = await registry.metrics();
  expect(text).toContain('actor_fencing_conflicts_total{kind="lock-clash"} 0');
  for (const code of ["40P01", "40001"]) expect(text).toMatch(new RegExp(`actor_lock_conflicts_total\\{kind="lock-clash",sqlstate="${code}"\\} \\d+`));
});

test("a deadlock or serialization failure in a turn answers the retryable 503 and is counted as a lock conflict", async () => {
  for (const code of ["40P01", "40001"]) {
    const before = await conflicts(code);
    const answer = await client.ask(clash, "a", "clash", { code }).then(() => "answered", (e: { code?: string }) => e.code);
    expect(answer).toBe("service_unavailable");
    expect(await conflicts(code)).toBe(before + 1);
  }
});

test("a connection failure is still an outage, not a lock conflict", async () => {
  const before = await conflicts("08006");
  const answer = await client.ask(clash, "b", "clash", { code: "08006" }).then(() => "answered", (e: { code?: string }) => e.code);
  expect(answer).toBe("service_unavailable");
  expect(await conflicts("08006")).toBe(before);
});
