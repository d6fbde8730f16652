/**
 * Audit Z-3: a webhook delivery sent again after its host was killed said `X-Webhook-Attempt: 1` a second time, and
 * the delivery list showed attempts 1 for two sends: the attempt was counted by the `record` turn, which a killed
 * host never runs. The claim now counts it, durably and before the send, so the resend after the lease is attempt 2.
 *
 * The "kill": the first service stops while its attempt hangs at the receiver, so the attempt's outcome is never
 * recorded; a second service on the same database claims the delivery again once the lease (attempt timeout + 30 s,
 * on a ManualClock) has run out.
 */
import { afterAll, expect, setDefaultTimeout, test } from "bun:test";
import type { Server } from "bun";
import { ManualClock } from "../../actors/runtime/clock.ts";
import { enqueueWebhookEvent } from "../../actors/webhook/outbox.ts";
import { WEBHOOK_ATTEMPT_TIMEOUT_MS } from "../../actors/webhook/schedule.ts";
import { boot, type Running } from "../../gateway/boot.ts";
import type { Sql } from "../../infra/db.ts";
import { login } from "../helpers/agents.ts";
import { serverHandle, startServer, type TestServer } from "../helpers/server.ts";
import { waitFor } from "../helpers/wait.ts";

setDefaultTimeout(60_000);
const SECRET_KEY = "b".repeat(64);

/** Hangs every request while `hang` is set (the attempt in flight when its host dies), else answers 200. */
class Receiver {
  hang = true;
  received: Record<string, string>[] = [];
  readonly server: Server<undefined> = Bun.serve({
    hostname: "127.0.0.1",
    port: 0,
    idleTimeout: 0,
    fetch: async (req) => {
      await req.text();
      this.received.push(Object.fromEntries(req.headers));
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
  deliveredAt: string | null;
}

async function deliveries(srv: TestServer, token: string, endpointId: string): Promise<DeliveryItem[]> {
  const r = await srv.json(`/api/v1/merchant/stores/demo-store/webhooks/${endpointId}/deliveries`, { headers: { authorization: `Bearer ${token}` } });
  expect(r.status).toBe(200);
  expect(r.body.success).toBe(true);
  return r.body.data;
}

const rx = new Receiver();
let first: TestServer | undefined;
let second: Running | undefined;
afterAll(async () => {
  await second?.stop();
  await first?.db.drop();
  rx.server.stop(true);
});

test("a delivery claimed but never recorded (its host killed) is sent again after the lease as attempt 2, and listed with 2 attempts", async () => {
  const clock = new ManualClock(Date.now());
  first = await startServer({ config: { SECRET_KEY }, boot: { clock } });
  const token = await login(first);
  const reg = await first.json("/api/v1/merchant/stores/demo-store/webhooks", {
    method: "POST",
    headers: { authorization: `Bearer ${token}` },
    body: { url: rx.url, events: ["order.created"] },
  });
  expect(reg.status).toBe(201);
  const endpointId = reg.body.data.id as string;
  const eventId = (await first.db.sql.begin((tx) =>
    enqueueWebhookEvent(tx as unknown as Sql, {
      storeSlug: "demo-store",
      kind: "order.created",
      payload: { event: "order.created", timestamp: new Date(clock.now()).toISOString(), orderId: crypto.randomUUID(), merchantSlug: "demo-store" },
    }),
  )) as string;

  await waitFor("the first attempt", () => rx.received.length === 1);
  expect(rx.received[0]).toMatchObject({ "x-webhook-id": eventId, "x-webhook-attempt": "1" });
  // while it is in flight the list already counts it
  const inFlight = await deliveries(first, token, endpointId);
  expect(inFlight).toHaveLength(1);
  expect(inFlight[0]).toMatchObject({ eventId, status: "pending", attempts: 1, lastAttemptAt: new Date(clock.now()).toISOString(), deliveredAt: null });

  // the host goes away with the attempt unanswered: its outcome is never recorded
  await first.running.stop();
  rx.hang = false;
  second = await boot({ role: "start", env: {}, reminderPollMs: 200, clock, config: { ...first.running.config, PORT: 0 } });
  const srv2 = serverHandle(second, first.db);
  clock.advance(WEBHOOK_ATTEMPT_TIMEOUT_MS + 30_000 + 1_000);
  await second.host!.pollReminders();

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
    WHERE d.event_id = ${eventId} ORDER BY a.attempt`;
  // the killed attempt left no outcome to log; the resend is logged under its own number
  expect([...log]).toEqual([{ attempt: 2, status_code: 200 }]);
});
