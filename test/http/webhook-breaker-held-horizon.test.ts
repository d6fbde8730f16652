/**
 * Deliveries the circuit breaker holds back are dead-lettered at the 72 h horizon like any other, counted from when
 * they were first due. Audit M-3: the horizon counted only from a delivery's first attempt, and one made while the
 * breaker was open never had an attempt (one probe per cool-down goes out), so it stayed `pending` for ever: an
 * endpoint that stayed down kept every event beyond one probe an hour, retention never deleted them, each cool-down
 * rewrote the whole backlog, and a receiver back weeks later got weeks-old events at once.
 *
 * The clock is a ManualClock: the test jumps it past the breaker's reopen times and polls the reminders itself.
 */
import { afterAll, beforeAll, expect, setDefaultTimeout, test } from "bun:test";
import { ManualClock } from "../../actors/runtime/clock.ts";
import { enqueueWebhookEvent } from "../../actors/webhook/outbox.ts";
import type { BreakerState } from "../../actors/webhook/schedule.ts";
import type { Sql } from "../../infra/db.ts";
import { login } from "../helpers/agents.ts";
import { startServer, type TestServer } from "../helpers/server.ts";

setDefaultTimeout(60_000);
const SLUG = "greenleaf-living";
const HOUR = 3_600_000;
const clock = new ManualClock(Date.now());
let srv: TestServer;
let token = "";
let hits = 0;
const receiver = Bun.serve({
  hostname: "127.0.0.1",
  port: 0,
  fetch: async (req) => {
    await req.text();
    hits++;
    return new Response("down", { status: 503 });
  },
});

beforeAll(async () => {
  srv = await startServer({ config: { SECRET_KEY: "c".repeat(64), RATE_LIMITS_ENABLED: false }, boot: { clock } });
  token = await login(srv);
}, 120_000);
afterAll(async () => {
  receiver.stop(true);
  await srv?.stop();
});

async function waitFor(what: string, fn: () => Promise<boolean>, timeoutMs = 15_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await fn())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await Bun.sleep(20);
  }
}

async function enqueue(): Promise<void> {
  const payload = { event: "order.created", timestamp: new Date(clock.now()).toISOString(), orderId: crypto.randomUUID(), merchantSlug: SLUG, totalAmount: 10, currency: "USD", status: "pending" };
  await srv.db.sql.begin((tx) => enqueueWebhookEvent(tx as unknown as Sql, { storeSlug: SLUG, kind: "order.created", payload }));
}

interface Delivery {
  id: string;
  status: string;
  attempts: number;
  nextAttemptAt: string | null;
  lastError: string | null;
}

test("deliveries held by an open breaker are dead-lettered at the 72 h horizon, listed, and can be redelivered", async () => {
  // the session token is signed with the service clock: it is taken again after each jump of the clock
  const auth = () => ({ authorization: `Bearer ${token}` });
  const created = await srv.json(`/api/v1/merchant/stores/${SLUG}/webhooks`, {
    method: "POST",
    headers: auth(),
    body: { url: `http://127.0.0.1:${receiver.port}/hooks`, events: ["order.created"] },
  });
  expect(created.status).toBe(201);
  const ep: string = created.body.data.id;
  const list = async (status?: string): Promise<Delivery[]> => {
    const r = await srv.json(`/api/v1/merchant/stores/${SLUG}/webhooks/${ep}/deliveries?limit=500${status ? `&status=${status}` : ""}`, { headers: auth() });
    expect(r.status).toBe(200);
    return r.body.data;
  };
  const breaker = async () =>
    (await srv.db.sql<{ b: BreakerState }[]>`SELECT breaker AS b FROM webhook_endpoints WHERE id = ${ep}`)[0]!.b;
  /** The breaker reopened by a probe that failed at the clock's present time (its `record` turn committed). */
  const reopenedNow = async () => {
    const b = await breaker();
    return b.status === "open" && b.openedAt === clock.now();
  };

  // Five failed first attempts open the breaker.
  for (let i = 0; i < 5; i++) await enqueue();
  await waitFor("the breaker open", reopenedNow);
  // Three events arrive while the endpoint is down: held, never attempted.
  for (let i = 0; i < 3; i++) await enqueue();
  await waitFor("three held deliveries", async () => {
    const held = (await list()).filter((d) => d.attempts === 0 && d.status === "pending" && Date.parse(d.nextAttemptAt!) > clock.now());
    return held.length === 3;
  });

  // 71 h later a probe fails: everything is still inside its 72 h and waits for the next reopen.
  clock.advance(71 * HOUR);
  const before = hits;
  await srv.running.host!.pollReminders();
  await waitFor("the probe at 71 h", async () => hits > before && (await reopenedNow()));
  token = await login(srv);
  expect((await list()).filter((d) => d.status === "dead")).toEqual([]);

  // 73 h: the next probe fails, and what the breaker would hold past the horizon is dead-lettered.
  clock.advance(2 * HOUR);
  await srv.running.host!.pollReminders();
  await waitFor("the probe at 73 h", async () => await reopenedNow());
  token = await login(srv);
  const all = await list();
  expect(all.map((d) => d.status)).toEqual(Array(8).fill("dead"));
  const neverTried = all.filter((d) => d.attempts === 0);
  expect(neverTried.length).toBe(3);
  for (const d of neverTried) {
    expect(d.nextAttemptAt).toBeNull();
    expect(d.lastError).toBe("never attempted within 72 h: the endpoint's circuit breaker stayed open; dead-lettered (horizon)");
  }
  expect((await list("dead")).length).toBe(8);
  // nothing left to hold: the endpoint's reminder is gone, so no cool-down rewrites a backlog any more
  const reminders = await srv.db.sql`SELECT 1 FROM actor_reminders WHERE kind = 'webhook' AND id = ${ep}`;
  expect(reminders.length).toBe(0);

  // A dead-lettered held delivery can be sent again: a fresh cycle, due now, not dead-lettered by its old hold.
  const sentBefore = hits;
  const again = await srv.json(`/api/v1/merchant/stores/${SLUG}/webhooks/${ep}/deliveries/${neverTried[0]!.id}/redeliver`, { method: "POST", headers: auth() });
  expect(again.status).toBe(202);
  expect(again.body.data.status).toBe("pending");
  await waitFor("the redelivery attempted", async () => hits > sentBefore && (await list()).find((d) => d.id === neverTried[0]!.id)!.status === "failed");
});
