/**
 * An ip activation's stored-bucket load over a stalled database (a frozen server or a partition: open sockets, no
 * answer; test/helpers/pg-proxy.ts "stall") fails the activation within its timeout rather than hanging it (review
 * V-1). The server-side statement_timeout (LOAD_TIMEOUT_MS, 5 s) cannot fire on a server that does not answer, so the
 * load is bounded on the client side too (beginWithin), its wait for one of the two process-wide load slots has a
 * deadline, and a load that gives up frees its slot: later loads, even on a healthy connection, are not held up.
 * Production pool (infra/db.ts connect, query deadline 3 s here); the rows "may exist" because the host just started.
 * Found by reviewer V (session 14); fails on 72d6458..b0c23d5 (both tests: "no answer").
 */
import { afterAll, beforeAll, expect, test } from "bun:test";
import { ActorClient } from "../../actors/runtime/client.ts";
import { ActorHost } from "../../actors/runtime/host.ts";
import { ipActor } from "../../actors/ip/index.ts";
import { connect } from "../../infra/db.ts";
import { lossyTransport } from "../helpers/lossy-transport.ts";
import { createTestDatabase, type TestDatabase } from "../helpers/db.ts";
import { PgProxy } from "../helpers/pg-proxy.ts";

let db: TestDatabase;
let proxy: PgProxy;
beforeAll(async () => {
  db = await createTestDatabase();
  proxy = await PgProxy.toTestServer();
});
afterAll(async () => {
  proxy?.resume();
  await proxy?.down().catch(() => {});
  await db?.drop();
});

const spec = { id: "stall-g", limit: 5, windowMs: 15 * 60_000 };
const admit = (host: ActorHost, ip: string) =>
  host.dispatch({ msgId: `stall-${ip}`, kind: "ip", id: ip, type: "admit", body: { buckets: [spec] }, deadline: Date.now() + 10_000, attempt: 1 });

/** The reply, or "no answer" after `ms`. */
const within = <T>(p: Promise<T>, ms: number) => Promise.race([p, Bun.sleep(ms).then(() => "no answer" as const)]);

test("a load over a stalled database fails the activation with a 503 within its 5 s timeout, and a load on a healthy pool is not held up", async () => {
  const sql = connect(proxy.via(db.url), 4, { queryDeadlineMs: 3_000 });
  const healthy = connect(db.url, 4, { queryDeadlineMs: 3_000 });
  const t = lossyTransport();
  const host = new ActorHost({ transport: t, sql, definitions: [ipActor], caller: new ActorClient(t), reminderPollMs: 0 });
  await host.start(); // a placement change: every load reads
  const t2 = lossyTransport();
  const other = new ActorHost({ transport: t2, sql: healthy, definitions: [ipActor], caller: new ActorClient(t2), reminderPollMs: 0 });
  await other.start();
  try {
    // warm: a first activation loads (and leaves pooled connections open)
    expect(await within(admit(host, "10.1.0.1"), 5_000)).toMatchObject({ ok: true });
    expect(await within(admit(host, "10.1.0.2"), 5_000)).toMatchObject({ ok: true });
    // the pool's connections are open (as in any process that has served a while)
    await Promise.all([1, 2, 3, 4].map(() => sql`SELECT pg_sleep(0.1)`));
    proxy.stall();
    const t0 = performance.now();
    // two loads take the process's two load slots; the third waits for one, and its wait counts in its 5 s
    const stalled = [admit(host, "10.1.0.3"), admit(host, "10.1.0.4"), admit(host, "10.1.0.6")];
    // each load is bounded by LOAD_TIMEOUT_MS (5 s, its slot wait included) plus the client's grace (at most 1 s);
    // 15 s only marks "no answer"
    const timed = stalled.map((p) => p.then((r) => ({ r, ms: Math.round(performance.now() - t0) })));
    const answers = await Promise.all(timed.map((p) => within(p, 15_000)));
    // then a load on a healthy pool in the same process (the slots are per process): the stalled loads freed theirs
    const healthyAnswer = await within(admit(other, "10.1.0.5"), 3_000);
    console.log("stalled answers:", JSON.stringify(answers), "healthy pool's load:", JSON.stringify(healthyAnswer));
    for (const a of answers) {
      expect(a).not.toBe("no answer");
      const { r, ms } = a as { r: unknown; ms: number };
      // a give-up, nothing sent: the activation's 503 (activationFailed), retried by the caller
      expect(r).toMatchObject({ ok: false, error: { code: "service_unavailable" } });
      // LOAD_TIMEOUT_MS (5 s) plus the client's grace (at most 1 s), with slack for a busy machine
      expect(ms).toBeLessThan(9_000);
    }
    expect(healthyAnswer).toMatchObject({ ok: true });
  } finally {
    proxy.resume();
    await other.stop().catch(() => {});
    await host.stop().catch(() => {});
    await sql.end({ timeout: 1 }).catch(() => {});
    await healthy.end({ timeout: 1 }).catch(() => {});
  }
}, 60_000);

test("once the database answers again on new connections, a load is not held up by reads stuck on connections lost in the stall", async () => {
  const sql = connect(proxy.via(db.url), 6, { queryDeadlineMs: 3_000 });
  const t = lossyTransport();
  const host = new ActorHost({ transport: t, sql, definitions: [ipActor], caller: new ActorClient(t), reminderPollMs: 0 });
  await host.start(); // a placement change: every load reads
  try {
    expect(await within(admit(host, "10.3.0.1"), 5_000)).toMatchObject({ ok: true });
    await Promise.all([1, 2].map(() => sql`SELECT pg_sleep(0.1)`)); // two pooled connections open
    proxy.stall();
    const lost = [admit(host, "10.3.0.2"), admit(host, "10.3.0.3")]; // their reads go out on the two open connections
    await Bun.sleep(500);
    // the network comes back for new connections; the two stalled sockets stay silent (half-open: what a failover or
    // a dropped NAT entry leaves until TCP gives up, many minutes later)
    (proxy as unknown as { stalled: boolean }).stalled = false;
    // the database answers this pool again (a new connection)
    const one = await within(sql<{ one: number }[]>`SELECT 1 AS one`, 5_000);
    expect(one === "no answer" ? one : [...one]).toEqual([{ one: 1 }]);
    // a new owner's activation after that: its read would answer at once, but both load slots are taken for good
    const later = await within(admit(host, "10.3.0.4"), 12_000);
    console.log("new owner's admit once the database is back:", JSON.stringify(later));
    expect(later).toMatchObject({ ok: true });
    void lost;
  } finally {
    proxy.resume();
    await host.stop().catch(() => {});
    await sql.end({ timeout: 1 }).catch(() => {});
  }
}, 60_000);
