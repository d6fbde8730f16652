/**
 * Review X, finding X-3 (session 15): a webhook endpoint's failure streak was never ended by silence. An endpoint is
 * disabled by "a failed attempt 5 days or more after the first failure of its streak (no 2xx since)"; a weekend
 * outage (whose deliveries die at the 72 h horizon), then days of a working but idle receiver, then ONE transient
 * failure disabled the endpoint: its retry, which would have been delivered, was dead-lettered, and every later event
 * dropped. Now a new event's first attempt that fails after the endpoint was owed nothing for STREAK_QUIET_MS (6 h)
 * starts a new streak (actors/webhook/schedule.ts); test/http/webhook-endpoint-disabled.test.ts keeps the case of a
 * receiver really down for 5 days with a delivery open throughout.
 */
import { afterAll, expect, setDefaultTimeout, test } from "bun:test";
import { ManualClock } from "../../actors/runtime/clock.ts";
import { enqueueWebhookEvent } from "../../actors/webhook/outbox.ts";
import type { Sql } from "../../infra/db.ts";
import { login, merchantLogin } from "../helpers/agents.ts";
import { useServer } from "../helpers/server.ts";

setDefaultTimeout(90_000);
const DAY = 86_400_000;
const SLUG = "greenleaf-living";
const clock = new ManualClock(Date.now());
const srv = useServer({ config: { SECRET_KEY: "d".repeat(64), RATE_LIMITS_ENABLED: false, LOG_LEVEL: "warn" }, boot: { clock } });

let mode: "ok" | "down" = "down";
const receiver = Bun.serve({
  hostname: "127.0.0.1",
  port: 0,
  fetch: async (req) => {
    await req.text();
    return mode === "ok" ? new Response("ok") : new Response("down", { status: 503 });
  },
});
afterAll(() => receiver.stop(true));

async function waitFor(what: string, fn: () => Promise<boolean>, timeoutMs = 15_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await fn())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await Bun.sleep(20);
  }
}
async function enqueue(): Promise<string> {
  const payload = { event: "order.created", timestamp: new Date(clock.now()).toISOString(), orderId: crypto.randomUUID(), merchantSlug: SLUG, totalAmount: 10, currency: "USD", status: "pending" };
  return srv.db.sql.begin((tx) => enqueueWebhookEvent(tx as unknown as Sql, { storeSlug: SLUG, kind: "order.created", payload }));
}
let token = "";
let firstEndpoint = "";
const auth = () => ({ authorization: `Bearer ${token}` });
async function delivery(id: string, eventId: string): Promise<{ status: string; attempts: number } | undefined> {
  const r = await srv.json(`/api/v1/merchant/stores/${SLUG}/webhooks/${id}/deliveries?limit=500`, { headers: auth() });
  return (r.body.data as { eventId: string; status: string; attempts: number }[]).find((d) => d.eventId === eventId);
}
async function endpoint(id: string): Promise<{ enabled: boolean; failingSince: string | null }> {
  const r = await srv.json(`/api/v1/merchant/stores/${SLUG}/webhooks`, { headers: auth() });
  return (r.body.data as { id: string; enabled: boolean; failingSince: string | null }[]).find((e) => e.id === id)!;
}

test("a weekend outage, two idle days with the receiver back, then one transient failure does not disable the endpoint", async () => {
  token = await login(srv, merchantLogin(SLUG));
  const r = await srv.json(`/api/v1/merchant/stores/${SLUG}/webhooks`, {
    method: "POST",
    headers: auth(),
    body: { url: `http://127.0.0.1:${receiver.port}/hook`, events: ["order.created"] },
  });
  expect(r.status).toBe(201);
  const id: string = r.body.data.id;
  firstEndpoint = id;

  // Friday: the receiver is down; the event's attempts fail until its 72 h horizon, then it is dead-lettered.
  const friday = await enqueue();
  await waitFor("the first attempt failed", async () => (await delivery(id, friday))?.status === "failed");
  clock.advance(3 * DAY + 60_000);
  await srv.running.host!.pollReminders();
  token = await login(srv, merchantLogin(SLUG)); // session tokens are signed with the service clock
  await waitFor("the outage's delivery dead-lettered", async () => (await delivery(id, friday))?.status === "dead");

  // Monday: the receiver is back, but the store has no orders for two days (nothing is sent, nothing probes it).
  mode = "ok";
  clock.advance(2 * DAY);
  token = await login(srv, merchantLogin(SLUG));

  // Wednesday: one order; its first attempt meets a transient 503, its retry would succeed.
  mode = "down";
  const wednesday = await enqueue();
  await waitFor("the attempt's outcome recorded", async () => ["failed", "dead"].includes((await delivery(id, wednesday))?.status ?? ""));
  mode = "ok";
  // the endpoint worked on Monday and would answer the retry: disabling it here drops every later event
  expect((await endpoint(id)).enabled).toBe(true);
  expect((await delivery(id, wednesday))?.status).toBe("failed");
});

test("a receiver still down after less than 6 h of quiet keeps its streak and is disabled 5 days into it", async () => {
  token = await login(srv, merchantLogin(SLUG));
  // one endpoint in the store: the first test's endpoint would otherwise get these events too
  expect((await srv.json(`/api/v1/merchant/stores/${SLUG}/webhooks/${firstEndpoint}`, { method: "DELETE", headers: auth() })).status).toBe(200);
  const r = await srv.json(`/api/v1/merchant/stores/${SLUG}/webhooks`, {
    method: "POST",
    headers: auth(),
    body: { url: `http://127.0.0.1:${receiver.port}/down`, events: ["order.created"] },
  });
  expect(r.status).toBe(201);
  const id: string = r.body.data.id;
  mode = "down";

  const first = await enqueue();
  await waitFor("the first attempt failed", async () => (await delivery(id, first))?.status === "failed");
  const streakStart = new Date(clock.now()).toISOString();
  clock.advance(3 * DAY + 60_000);
  await srv.running.host!.pollReminders();
  token = await login(srv, merchantLogin(SLUG));
  await waitFor("the first delivery dead-lettered", async () => (await delivery(id, first))?.status === "dead");

  // 5 h without anything owed to it (under STREAK_QUIET_MS): the next event's failure continues the streak.
  clock.advance(5 * 3_600_000);
  token = await login(srv, merchantLogin(SLUG));
  const second = await enqueue();
  await waitFor("the next event's first attempt failed", async () => (await delivery(id, second))?.status === "failed");
  expect(await endpoint(id)).toMatchObject({ enabled: true, failingSince: streakStart });

  // Its retry, 5 days and more into the streak, fails too: the endpoint is disabled.
  clock.advance(2 * DAY);
  await srv.running.host!.pollReminders();
  token = await login(srv, merchantLogin(SLUG));
  await waitFor("the endpoint disabled", async () => !(await endpoint(id)).enabled);
  expect(await endpoint(id)).toMatchObject({ enabled: false, failingSince: streakStart });
  expect((await delivery(id, second))?.status).toBe("dead");
});
