/**
 * Audit Z-3: a webhook delivery sent again after its host was killed said `X-Webhook-Attempt: 1` a second time, and
 * the delivery list showed attempts 1 for two sends: the attempt was counted by the `record` turn, which a killed
 * host never runs. The claim now counts it, durably and before the send, so the resend after the lease is attempt 2.
 * Review RS: the claim's commit came after the send started (RS-2), and a lost 15th attempt (or one whose resend
 * falls past the 72 h horizon) was sent again, as attempt 16 (RS-1).
 *
 * The "kill": the first service stops while its attempt hangs at the receiver, so the attempt's outcome is never
 * recorded; a second service on the same database claims the delivery again once the lease (attempt timeout + 30 s,
 * on a ManualClock) has run out.
 */
import { afterAll, expect, setDefaultTimeout, test } from "bun:test";
import type { Server } from "bun";
import { ManualClock } from "../../actors/runtime/clock.ts";
import { enqueueWebhookEvent } from "../../actors/webhook/outbox.ts";
import { RETRY_HORIZON_MS, WEBHOOK_ATTEMPT_TIMEOUT_MS } from "../../actors/webhook/schedule.ts";
import { boot, type Running } from "../../gateway/boot.ts";
import type { Sql } from "../../infra/db.ts";
import { login } from "../helpers/agents.ts";
import { serverHandle, startServer, type TestServer } from "../helpers/server.ts";
import { waitFor } from "../helpers/wait.ts";

setDefaultTimeout(60_000);
const SECRET_KEY = "b".repeat(64);
const LEASE_MS = WEBHOOK_ATTEMPT_TIMEOUT_MS + 30_000;

interface CommittedRow {
  attempts: number;
  next_attempt_at: Date | null;
}

/**
 * Hangs every request while `hang` is set (the attempt in flight when its host dies), else answers 200. With `sql`
 * set, it reads the delivery's committed row (another connection) as each request arrives.
 */
class Receiver {
  hang = true;
  sql: Sql | undefined;
  received: Record<string, string>[] = [];
  committedAtReceipt: CommittedRow[] = [];
  readonly server: Server<undefined> = Bun.serve({
    hostname: "127.0.0.1",
    port: 0,
    idleTimeout: 0,
    fetch: async (req) => {
      await req.text();
      const headers = Object.fromEntries(req.headers);
      if (this.sql) {
        const [row] = await this.sql<CommittedRow[]>`
          SELECT attempts, next_attempt_at FROM webhook_deliveries WHERE event_id = ${headers["x-webhook-id"]!}`;
        this.committedAtReceipt.push(row!);
      }
      this.received.push(headers);
      if (this.hang) return new Promise<Response>(() => {});
      return new Response("ok");
    },
  });
  get url(): string {
    return `http://127.0.0.1:${this.server.port}/hooks`;
  }
}

interface DeliveryItem {
  eventId: string;
  status: string;
  attempts: number;
  lastAttemptAt: string | null;
  lastError: string | null;
  deliveredAt: string | null;
}

async function deliveries(srv: TestServer, token: string, endpointId: string): Promise<DeliveryItem[]> {
  const r = await srv.json(`/api/v1/merchant/stores/demo-store/webhooks/${endpointId}/deliveries`, { headers: { authorization: `Bearer ${token}` } });
  expect(r.status).toBe(200);
  expect(r.body.success).toBe(true);
  return r.body.data;
}

const receivers: Receiver[] = [];
const servers: TestServer[] = [];
const restarted: Running[] = [];
afterAll(async () => {
  for (const r of restarted) await r.stop();
  for (const s of servers) await s.stop();
  for (const r of receivers) r.server.stop(true);
});

/** A service on a ManualClock with one endpoint (order.created) at a fresh receiver. */
async function setUp() {
  const rx = new Receiver();
  receivers.push(rx);
  const clock = new ManualClock(Date.now());
  const first = await startServer({ config: { SECRET_KEY }, boot: { clock } });
  servers.push(first);
  const token = await login(first);
  const reg = await first.json("/api/v1/merchant/stores/demo-store/webhooks", {
    method: "POST",
    headers: { authorization: `Bearer ${token}` },
    body: { url: rx.url, events: ["order.created"] },
  });
  expect(reg.status).toBe(201);
  const endpointId = reg.body.data.id as string;
  /** Enqueues `n` order.created events in one transaction (one fan-out); returns their ids. */
  const enqueue = (n = 1) =>
    first.db.sql.begin(async (tx) => {
      const ids: string[] = [];
      for (let i = 0; i < n; i++) {
        ids.push(
          (await enqueueWebhookEvent(tx as unknown as Sql, {
            storeSlug: "demo-store",
            kind: "order.created",
            payload: { event: "order.created", timestamp: new Date(clock.now()).toISOString(), orderId: crypto.randomUUID(), merchantSlug: "demo-store" },
          })) as string,
        );
      }
      return ids;
    });
  /** The first service goes away with its attempts unanswered; a second one on the same database runs past the lease. */
  const restartPastLease = async (): Promise<TestServer> => {
    await first.running.stop();
    rx.hang = false;
    const second = await boot({ role: "start", env: {}, reminderPollMs: 200, clock, config: { ...first.running.config, PORT: 0 } });
    restarted.push(second);
    clock.advance(LEASE_MS + 1_000);
    await second.host!.pollReminders();
    return serverHandle(second, first.db);
  };
  return { rx, clock, first, token, endpointId, enqueue, restartPastLease };
}

test("a delivery claimed but never recorded (its host killed) is sent again after the lease as attempt 2, and listed with 2 attempts", async () => {
  const { rx, clock, first, token, endpointId, enqueue, restartPastLease } = await setUp();
  const [eventId] = await enqueue();

  await waitFor("the first attempt", () => rx.received.length === 1);
  expect(rx.received[0]).toMatchObject({ "x-webhook-id": eventId, "x-webhook-attempt": "1" });
  // while it is in flight the list already counts it
  const inFlight = await deliveries(first, token, endpointId);
  expect(inFlight).toHaveLength(1);
  expect(inFlight[0]).toMatchObject({ eventId, status: "pending", attempts: 1, lastAttemptAt: new Date(clock.now()).toISOString(), deliveredAt: null });

  // the host goes away with the attempt unanswered: its outcome is never recorded
  const srv2 = await restartPastLease();
  await waitFor("the resend after the lease", () => rx.received.length === 2);
  expect(rx.received[1]).toMatchObject({ "x-webhook-id": eventId, "x-webhook-attempt": "2" });
  const done = await waitFor("the resend recorded", async () => {
    const list = await deliveries(srv2, await login(srv2), endpointId);
    return list[0]?.status === "delivered" ? list : undefined;
  });
  expect(done).toHaveLength(1);
  expect(done[0]).toMatchObject({ eventId, status: "delivered", attempts: 2 });
  const log = await first.db.sql<{ attempt: number; status_code: number | null }[]>`
    SELECT a.attempt, a.status_code FROM webhook_delivery_attempts a JOIN webhook_deliveries d ON d.id = a.delivery_id
    WHERE d.event_id = ${eventId!} ORDER BY a.attempt`;
  // the killed attempt left no outcome to log; the resend is logged under its own number
  expect([...log]).toEqual([{ attempt: 2, status_code: 200 }]);
});

test("an attempt reaches the receiver only after its claim has committed: another connection already sees it counted and leased", async () => {
  const { rx, clock, first, enqueue } = await setUp();
  rx.sql = first.db.sql;
  rx.hang = false;
  const [eventId] = await enqueue();
  await waitFor("the first attempt", () => rx.received.length === 1);
  expect(rx.received[0]).toMatchObject({ "x-webhook-id": eventId, "x-webhook-attempt": "1" });
  expect(rx.committedAtReceipt).toHaveLength(1);
  expect(rx.committedAtReceipt[0]!.attempts).toBe(1);
  expect(rx.committedAtReceipt[0]!.next_attempt_at?.getTime()).toBe(clock.now() + LEASE_MS);
});

test("a lost 15th attempt, and a lost attempt whose resend would fall past the 72 h horizon, are dead-lettered after the lease instead of sent again", async () => {
  const { rx, clock, first, endpointId, enqueue, restartPastLease } = await setUp();
  const [atCap, pastHorizon] = await enqueue(2);
  await waitFor("both first attempts", () => rx.received.length === 2);
  const claimedAt = clock.now();
  // as if attempts 1..14 of the one had failed before, and the other's first attempt had been 72 h before this claim
  await first.db.sql`UPDATE webhook_deliveries SET attempts = 15, status = 'failed' WHERE event_id = ${atCap!}`;
  await first.db.sql`
    UPDATE webhook_deliveries SET attempts = 9, status = 'failed', first_attempt_at = ${new Date(claimedAt - RETRY_HORIZON_MS)}
    WHERE event_id = ${pastHorizon!}`;

  const srv2 = await restartPastLease();
  const list = await waitFor("both dead-lettered", async () => {
    const l = await deliveries(srv2, await login(srv2), endpointId);
    return l.every((d) => d.status === "dead") ? l : undefined;
  });
  const byEvent = new Map(list.map((d) => [d.eventId, d]));
  expect(byEvent.get(atCap!)).toMatchObject({ status: "dead", attempts: 15, lastError: "outcome of attempt 15 lost; dead-lettered (max_attempts)", deliveredAt: null });
  expect(byEvent.get(pastHorizon!)).toMatchObject({
    status: "dead",
    attempts: 9,
    lastError: "not due again within 72 h of the first attempt; dead-lettered (horizon)",
    deliveredAt: null,
  });
  // nothing was sent again (the same turn that dead-lettered them claimed nothing), and no reminder is left armed
  await srv2.running.host!.pollReminders();
  await Bun.sleep(300);
  expect(rx.received).toHaveLength(2);
  const [open] = await first.db.sql<{ n: number }[]>`
    SELECT count(*)::int AS n FROM webhook_deliveries WHERE status IN ('pending', 'failed')`;
  expect(open!.n).toBe(0);
});
