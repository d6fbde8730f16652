/**
 * An endpoint that stays down is disabled (docs/webhooks.md "Disabled endpoints"; review Session 14, Webhooks (W)).
 * Before, an endpoint that never answered again was probed once an hour for ever and every new event got a delivery
 * row (72 h pending, then 30 days dead). Now a failed attempt 5 days or more after the first failure of the streak
 * (no 2xx since) disables it: no delivery rows for new events, no probes, its deliveries kept for redelivery, shown in
 * the listing; the merchant enables it again, which resets the breaker and the streak and replays nothing.
 *
 * The clock is a ManualClock: the test jumps it and polls the reminders itself, as webhook-breaker-held-horizon does.
 */
import { afterAll, beforeAll, expect, setDefaultTimeout, test } from "bun:test";
import { ManualClock } from "../../actors/runtime/clock.ts";
import { webhookActor } from "../../actors/webhook/index.ts";
import { enqueueWebhookEvent } from "../../actors/webhook/outbox.ts";
import type { Sql } from "../../infra/db.ts";
import { setLogSink } from "../../infra/log.ts";
import { login, merchantLogin } from "../helpers/agents.ts";
import { useServer } from "../helpers/server.ts";

setDefaultTimeout(60_000);
const DAY = 86_400_000;
const SLUG = "greenleaf-living";
const OTHER = "northwind-outfitters";
const clock = new ManualClock(Date.now());
const srv = useServer({ config: { SECRET_KEY: "d".repeat(64), RATE_LIMITS_ENABLED: false, LOG_LEVEL: "warn" }, boot: { clock } });

/** One receiver; each path answers as the test says (default 503), and records the event ids it got. */
const modes = new Map<string, "ok" | "down">();
const got: { path: string; eventId: string }[] = [];
const receiver = Bun.serve({
  hostname: "127.0.0.1",
  port: 0,
  fetch: async (req) => {
    await req.text();
    const path = new URL(req.url).pathname;
    got.push({ path, eventId: req.headers.get("x-webhook-id") ?? "" });
    return modes.get(path) === "ok" ? new Response("ok") : new Response("down", { status: 503 });
  },
});
const hookUrl = (path: string) => `http://127.0.0.1:${receiver.port}${path}`;

const logs: { level: string; msg: string; [k: string]: unknown }[] = [];
let restoreLog: (() => void) | undefined;
beforeAll(() => {
  restoreLog = setLogSink((line) => void logs.push(JSON.parse(line)));
});
afterAll(() => {
  restoreLog?.();
  receiver.stop(true);
});

async function waitFor(what: string, fn: () => Promise<boolean>, timeoutMs = 15_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await fn())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await Bun.sleep(20);
  }
}

/** Commits an order.created event to the outbox of `slug`, as an order change does. Returns the event id. */
async function enqueue(slug: string): Promise<string> {
  const payload = { event: "order.created", timestamp: new Date(clock.now()).toISOString(), orderId: crypto.randomUUID(), merchantSlug: slug, totalAmount: 10, currency: "USD", status: "pending" };
  return srv.db.sql.begin((tx) => enqueueWebhookEvent(tx as unknown as Sql, { storeSlug: slug, kind: "order.created", payload }));
}

/** Session tokens are signed with the service clock: taken again after each jump. */
const tokens = { owner: "", other: "" };
async function relogin(): Promise<void> {
  tokens.owner = await login(srv, merchantLogin(SLUG));
  tokens.other = await login(srv, merchantLogin(OTHER));
}
const auth = (t: string) => ({ authorization: `Bearer ${t}` });

interface Endpoint {
  id: string;
  breaker: string;
  enabled: boolean;
  disabledAt: string | null;
  disabledReason: string | null;
  failingSince: string | null;
}
interface Delivery {
  id: string;
  eventId: string;
  status: string;
  attempts: number;
  lastError: string | null;
}

async function register(slug: string, path: string): Promise<string> {
  const r = await srv.json(`/api/v1/merchant/stores/${slug}/webhooks`, { method: "POST", headers: auth(tokens.owner), body: { url: hookUrl(path), events: ["order.created"] } });
  expect(r.status).toBe(201);
  return r.body.data.id;
}
async function listed(id: string): Promise<Endpoint> {
  const r = await srv.json(`/api/v1/merchant/stores/${SLUG}/webhooks`, { headers: auth(tokens.owner) });
  expect(r.status).toBe(200);
  return (r.body.data as Endpoint[]).find((e) => e.id === id)!;
}
async function deliveries(id: string): Promise<Delivery[]> {
  const r = await srv.json(`/api/v1/merchant/stores/${SLUG}/webhooks/${id}/deliveries?limit=500`, { headers: auth(tokens.owner) });
  expect(r.status).toBe(200);
  return r.body.data;
}
const deliveryOf = async (id: string, eventId: string) => (await deliveries(id)).find((d) => d.eventId === eventId);
/** The outbox fan-out has handled the event (it has a delivery for every enabled endpoint subscribed to it). */
const dispatched = async (eventId: string) =>
  (await srv.db.sql`SELECT 1 FROM webhook_events WHERE id = ${eventId} AND webhook_event_dispatched(dispatched_at, fanout_xid)`).length === 1;

let down = ""; // the endpoint that stays down (greenleaf-living, /down)
let downFailingSince = 0;

test("an endpoint with no 2xx for 5 days since its first failure is disabled at its next failed attempt, and the listing shows it", async () => {
  await relogin();
  down = await register(SLUG, "/down");
  expect(await listed(down)).toMatchObject({ enabled: true, disabledAt: null, disabledReason: null, failingSince: null });

  // The first failure starts the streak.
  const first = await enqueue(SLUG);
  await waitFor("the first attempt failed", async () => (await deliveryOf(down, first))?.status === "failed");
  downFailingSince = clock.now();
  expect((await listed(down)).failingSince).toBe(new Date(downFailingSince).toISOString());

  // 4 days later a new event fails too (and the first one's retry, then dead at its 72 h horizon): still enabled.
  clock.advance(4 * DAY);
  await relogin();
  const second = await enqueue(SLUG);
  await waitFor("the attempts at 4 days failed", async () => {
    const [a, b] = [await deliveryOf(down, first), await deliveryOf(down, second)];
    return a?.status === "dead" && a.attempts === 2 && b?.status === "failed" && b.attempts === 1;
  });
  expect(await listed(down)).toMatchObject({ enabled: true, disabledAt: null, failingSince: new Date(downFailingSince).toISOString() });

  // 5 days and a minute after the first failure, the next failed attempt (the new event's retry) disables it.
  clock.advance(DAY + 60_000);
  await srv.running.host!.pollReminders();
  await relogin();
  await waitFor("the endpoint disabled", async () => (await listed(down)).enabled === false);
  const ep = await listed(down);
  expect(ep.disabledAt).toBe(new Date(clock.now()).toISOString());
  expect(ep.disabledReason).toBe(`No 2xx answer for 5 days: failing since ${new Date(downFailingSince).toISOString()}; last attempt: HTTP 503.`);
  expect(ep.failingSince).toBe(new Date(downFailingSince).toISOString());

  // Its open delivery is dead-lettered (kept for redelivery), and nothing is armed to probe it any more.
  const d = (await deliveryOf(down, second))!;
  expect(d.status).toBe("dead");
  expect(d.attempts).toBe(2);
  expect(d.lastError).toBe("HTTP 503; endpoint disabled; dead-lettered (disabled)");
  expect(await srv.db.sql`SELECT 1 FROM actor_reminders WHERE kind = 'webhook' AND id = ${down}`).toHaveLength(0);

  // A structured warning says so (with the host, never the URL's path or query).
  const warn = logs.find((l) => l.level === "warn" && l.msg.startsWith("webhook endpoint disabled") && l.endpointId === down);
  expect(warn).toMatchObject({ store: SLUG, host: `127.0.0.1:${receiver.port}`, failingSince: new Date(downFailingSince).toISOString(), lastStatusCode: 503, lastError: "HTTP 503" });
  expect(JSON.stringify(warn)).not.toContain("/down");
});

test("a disabled endpoint gets no delivery rows for new events and is not probed", async () => {
  const before = await deliveries(down);
  const hits = got.length;
  const events = [await enqueue(SLUG), await enqueue(SLUG)];
  for (const e of events) await waitFor("the event fanned out", () => dispatched(e));
  clock.advance(2 * 3_600_000); // past any breaker cool-down: still nothing to probe
  await srv.running.host!.pollReminders();
  await Bun.sleep(300);
  await relogin();
  expect(await deliveries(down)).toEqual(before);
  expect(await srv.db.sql`SELECT 1 FROM webhook_deliveries WHERE endpoint_id = ${down} AND event_id IN ${srv.db.sql(events)}`).toHaveLength(0);
  expect(got.length).toBe(hits);
  expect((await listed(down)).enabled).toBe(false);
});

test("a delivery a fan-out made just before the disabling committed is dead-lettered by the endpoint's next turn, not sent", async () => {
  // What a fan-out that read the endpoint before the disabling committed leaves behind: a due delivery and a kick.
  const event = await enqueue(OTHER); // another store's event: fanned out to none of this store's endpoints
  await waitFor("the event fanned out", () => dispatched(event));
  const [row] = await srv.db.sql<{ id: string }[]>`
    INSERT INTO webhook_deliveries (event_id, endpoint_id, store_slug, next_attempt_at) VALUES (${event}, ${down}, ${SLUG}, ${new Date(clock.now())})
    RETURNING id::text`;
  const hits = got.length;
  const r = await srv.running.services.actors.ask(webhookActor, down, "deliverDue", {});
  expect(r.claimed).toBe(0);
  const d = (await deliveries(down)).find((x) => x.id === row!.id)!;
  expect(d).toMatchObject({ status: "dead", attempts: 0, lastError: "endpoint disabled; dead-lettered (disabled)" });
  expect(got.length).toBe(hits);
  expect(await srv.db.sql`SELECT 1 FROM actor_reminders WHERE kind = 'webhook' AND id = ${down}`).toHaveLength(0);
});

test("redelivering to a disabled endpoint is 409 conflict, and another merchant's enable is 404", async () => {
  const [dead] = await deliveries(down);
  const again = await srv.json(`/api/v1/merchant/stores/${SLUG}/webhooks/${down}/deliveries/${dead!.id}/redeliver`, { method: "POST", headers: auth(tokens.owner) });
  expect(again.status).toBe(409);
  expect(again.body.code).toBe("conflict");

  // Through the owner's store path: not theirs. Through their own store: no such endpoint there.
  const viaOwnerStore = await srv.json(`/api/v1/merchant/stores/${SLUG}/webhooks/${down}/enable`, { method: "POST", headers: auth(tokens.other) });
  expect(viaOwnerStore.status).toBe(404);
  expect(viaOwnerStore.body.code).toBe("store_not_found");
  const viaOwnStore = await srv.json(`/api/v1/merchant/stores/${OTHER}/webhooks/${down}/enable`, { method: "POST", headers: auth(tokens.other) });
  expect(viaOwnStore.status).toBe(404);
  expect(viaOwnStore.body.code).toBe("not_found");
  expect((await listed(down)).enabled).toBe(false);
});

test("enabling resets the breaker and the streak and delivers new events, not the ones made while disabled; redeliver works again", async () => {
  const missed = await enqueue(SLUG); // while disabled: never delivered, not even after enabling
  await waitFor("the missed event fanned out", () => dispatched(missed));
  modes.set("/down", "ok");
  const r = await srv.json(`/api/v1/merchant/stores/${SLUG}/webhooks/${down.toUpperCase()}/enable`, { method: "POST", headers: auth(tokens.owner) });
  expect(r.status).toBe(200);
  expect(r.body.data).toMatchObject({ id: down, enabled: true, disabledAt: null, disabledReason: null, failingSince: null, breaker: "closed" });
  // enabling an enabled endpoint answers it unchanged
  const twice = await srv.json(`/api/v1/merchant/stores/${SLUG}/webhooks/${down}/enable`, { method: "POST", headers: auth(tokens.owner) });
  expect(twice.status).toBe(200);
  expect(twice.body.data.enabled).toBe(true);

  const fresh = await enqueue(SLUG);
  await waitFor("the new event delivered", async () => (await deliveryOf(down, fresh))?.status === "delivered");
  expect(got.some((g) => g.eventId === fresh)).toBe(true);
  expect(got.some((g) => g.eventId === missed)).toBe(false);
  expect(await srv.db.sql`SELECT 1 FROM webhook_deliveries WHERE endpoint_id = ${down} AND event_id = ${missed}`).toHaveLength(0);

  // The delivery dead-lettered by the disabling can be sent again.
  const dead = (await deliveries(down)).find((d) => d.status === "dead")!;
  const again = await srv.json(`/api/v1/merchant/stores/${SLUG}/webhooks/${down}/deliveries/${dead.id}/redeliver`, { method: "POST", headers: auth(tokens.owner) });
  expect(again.status).toBe(202);
  await waitFor("the redelivery delivered", async () => (await deliveries(down)).find((d) => d.id === dead.id)!.status === "delivered");
});

test("an endpoint that answers 2xx once within the period stays enabled, its streak restarting at the next failure", async () => {
  await relogin();
  const flaky = await register(SLUG, "/flaky");
  modes.set("/down", "ok"); // the other endpoint of the store answers; only /flaky matters here
  const first = await enqueue(SLUG);
  await waitFor("the first attempt failed", async () => (await deliveryOf(flaky, first))?.status === "failed");
  const streakStart = clock.now();
  expect((await listed(flaky)).failingSince).toBe(new Date(streakStart).toISOString());

  // 2 days in, the receiver answers once: the retry is delivered and the streak ends.
  clock.advance(2 * DAY);
  modes.set("/flaky", "ok");
  await srv.running.host!.pollReminders();
  await relogin();
  await waitFor("the retry delivered", async () => (await deliveryOf(flaky, first))?.status === "delivered");
  expect((await listed(flaky)).failingSince).toBeNull();

  // Down again: a new streak starts at the next failure.
  modes.set("/flaky", "down");
  const second = await enqueue(SLUG);
  await waitFor("the next event failed", async () => (await deliveryOf(flaky, second))?.status === "failed");
  const secondStreak = clock.now();

  // 5 days and a minute after the FIRST failure (3 days into the new streak) a failed attempt keeps it enabled.
  clock.advance(3 * DAY + 60_000);
  await srv.running.host!.pollReminders();
  await relogin();
  // (the retry's outcome recorded: 3 days after its first attempt, past the 72 h horizon, it is dead-lettered)
  await waitFor("the retry failed", async () => {
    const d = await deliveryOf(flaky, second);
    return d?.attempts === 2 && d.status === "dead";
  });
  expect((await deliveryOf(flaky, second))!.lastError).toBe("HTTP 503; dead-lettered (horizon)");
  expect(await listed(flaky)).toMatchObject({ enabled: true, disabledAt: null, disabledReason: null, failingSince: new Date(secondStreak).toISOString() });
});

test("the merchant can disable an endpoint: its open deliveries are dead-lettered and new events get none until it is enabled", async () => {
  const manual = await register(SLUG, "/manual");
  modes.set("/manual", "down");
  const open = await enqueue(SLUG);
  await waitFor("the attempt failed", async () => (await deliveryOf(manual, open))?.status === "failed");
  const off = await srv.json(`/api/v1/merchant/stores/${SLUG}/webhooks/${manual}/disable`, { method: "POST", headers: auth(tokens.owner) });
  expect(off.status).toBe(200);
  expect(off.body.data).toMatchObject({ enabled: false, disabledAt: new Date(clock.now()).toISOString(), disabledReason: "Disabled by the merchant." });
  expect((await deliveryOf(manual, open))!).toMatchObject({ status: "dead", lastError: "HTTP 503; endpoint disabled; dead-lettered (disabled)" });
  const skipped = await enqueue(SLUG);
  await waitFor("the event fanned out", () => dispatched(skipped));
  expect(await deliveryOf(manual, skipped)).toBeUndefined();
  const on = await srv.json(`/api/v1/merchant/stores/${SLUG}/webhooks/${manual}/enable`, { method: "POST", headers: auth(tokens.owner) });
  expect(on.status).toBe(200);
  expect(on.body.data.enabled).toBe(true);
});
