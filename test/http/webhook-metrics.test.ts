/**
 * Webhook observability on /metrics (docs/webhooks.md "Fan-out lag", docs/operations.md "Metrics and checks to
 * watch"). Review of session 16 left it open: the fan-out waits for the oldest writing transaction of the database, so
 * a session idle in a transaction after a write holds every webhook back, and nothing showed it. Now:
 * - `webhook_fanout_waiting_events` / `webhook_fanout_lag_seconds`: committed events the fan-out has not reached, and
 *   the age of the oldest (0 when none);
 * - `webhook_deliveries_due` / `webhook_delivery_lag_seconds`: deliveries due and not yet attempted;
 * - `webhook_delivery_attempts_total{outcome}` and `webhook_delivery_attempt_duration_seconds`: attempts made.
 */
import { afterAll, beforeAll, expect, test } from "bun:test";
import { enqueueWebhookEvent } from "../../actors/webhook/outbox.ts";
import { webhookBacklog } from "../../actors/webhook/dispatcher.ts";
import { login } from "../helpers/agents.ts";
import { startServer, type TestServer } from "../helpers/server.ts";
import { waitFor } from "../helpers/wait.ts";

let srv: TestServer;
let failNext = 0; // the receiver answers 500 this many times, then 204
const received: string[] = [];
const receiver = Bun.serve({
  port: 0,
  hostname: "127.0.0.1",
  fetch: async (req) => {
    const body = (await req.json()) as { orderId?: string };
    received.push(String(body.orderId));
    if (failNext > 0) {
      failNext--;
      return new Response("no", { status: 500 });
    }
    return new Response(null, { status: 204 });
  },
});

beforeAll(async () => {
  srv = await startServer({ config: { RETENTION_INTERVAL_MS: 0, ALLOW_PRIVATE_URLS: true } });
  const ep = await srv.json("/api/v1/merchant/stores/demo-store/webhooks", {
    method: "POST",
    headers: { authorization: `Bearer ${await login(srv)}` },
    body: { url: `http://127.0.0.1:${receiver.port}/hooks`, events: ["order.created"] },
  });
  expect(ep.status).toBe(201);
}, 60_000);
afterAll(async () => {
  receiver.stop(true);
  await srv?.stop();
});

const event = (orderId: string) =>
  enqueueWebhookEvent(srv.db.sql, {
    storeSlug: "demo-store",
    kind: "order.created",
    payload: { event: "order.created", timestamp: new Date().toISOString(), orderId, merchantSlug: "demo-store", totalAmount: 10, currency: "USD", status: "pending" },
  });

/** The value of an unlabelled series, or of the one with the given label text; undefined when absent. */
async function metric(name: string, labels = ""): Promise<number | undefined> {
  const text = await (await srv.fetch("/metrics")).text();
  const line = text.split("\n").find((l) => l.startsWith(`${name}${labels} `));
  return line === undefined ? undefined : Number(line.slice(line.lastIndexOf(" ") + 1));
}

test("a transaction left open after a write holds webhooks back, and /metrics shows the waiting events and their age until it ends", async () => {
  await waitFor("an idle backlog reads zero", async () => (await metric("webhook_fanout_waiting_events")) === 0);
  expect(await metric("webhook_fanout_lag_seconds")).toBe(0);

  const blocker = await srv.db.sql.reserve();
  const orderId = crypto.randomUUID();
  try {
    await blocker`BEGIN`;
    await blocker`SELECT pg_current_xact_id()`; // an id of this database, as a session idle in transaction after a write
    await event(orderId);
    await Bun.sleep(1_500); // seven fan-out ticks: the event stays behind the open transaction
    expect(received).not.toContain(orderId);
    expect(await metric("webhook_fanout_waiting_events")).toBe(1);
    expect(await metric("webhook_fanout_lag_seconds")).toBeGreaterThanOrEqual(1);
  } finally {
    await blocker`ROLLBACK`.catch(() => {});
    blocker.release();
  }
  await waitFor("the event delivered once the transaction ended", () => received.includes(orderId));
  await waitFor("the backlog back to zero", async () => (await metric("webhook_fanout_waiting_events")) === 0);
  expect(await metric("webhook_fanout_lag_seconds")).toBe(0);
}, 60_000);

test("delivery attempts are counted by outcome: a 500 as failed, a 2xx as delivered", async () => {
  const before = {
    delivered: (await metric("webhook_delivery_attempts_total", '{outcome="delivered"}')) ?? 0,
    failed: (await metric("webhook_delivery_attempts_total", '{outcome="failed"}')) ?? 0,
    timed: (await metric("webhook_delivery_attempt_duration_seconds_count")) ?? 0,
  };
  failNext = 1;
  const orderId = crypto.randomUUID();
  await event(orderId);
  await waitFor("the first attempt answered 500", () => received.includes(orderId));
  await waitFor("the failed attempt counted", async () => (await metric("webhook_delivery_attempts_total", '{outcome="failed"}')) === before.failed + 1);
  const ok = crypto.randomUUID();
  await event(ok);
  await waitFor("the next event delivered", () => received.includes(ok));
  await waitFor("the delivered attempt counted", async () => (await metric("webhook_delivery_attempts_total", '{outcome="delivered"}')) === before.delivered + 1);
  expect(await metric("webhook_delivery_attempt_duration_seconds_count")).toBe(before.timed + 2);
}, 60_000);

test("the delivery backlog counts deliveries due and not attempted, and how long the longest has waited", async () => {
  // a delivery of an endpoint no actor is asked to work on (no reminder): due since 90 s before `now`
  const [ep] = await srv.db.sql<{ id: string }[]>`
    INSERT INTO webhook_endpoints (id, store_slug, url, events, secret_sealed)
    VALUES (${crypto.randomUUID()}, 'demo-store', 'https://example.com/h', ${["order.created"]}, 'x') RETURNING id`;
  const [ev] = await srv.db.sql<{ id: string }[]>`
    INSERT INTO webhook_events (store_slug, kind, payload, dispatched_at) VALUES ('demo-store', 'order.created', '{}', now()) RETURNING id`;
  const now = Date.now();
  await srv.db.sql`INSERT INTO webhook_deliveries (event_id, endpoint_id, store_slug, next_attempt_at)
    VALUES (${ev!.id}, ${ep!.id}, 'demo-store', ${new Date(now - 90_000)})`;
  try {
    const b = await webhookBacklog(srv.db.sql, now);
    expect(b.deliveriesDue).toBe(1);
    expect(b.deliveryLagSeconds).toBeCloseTo(90, 3);
    // not yet due: not counted
    expect((await webhookBacklog(srv.db.sql, now - 91_000)).deliveriesDue).toBe(0);
  } finally {
    await srv.db.sql`DELETE FROM webhook_deliveries WHERE endpoint_id = ${ep!.id}`;
    await srv.db.sql`DELETE FROM webhook_endpoints WHERE id = ${ep!.id}`;
  }
}, 60_000);
