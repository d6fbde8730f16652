/**
 * Webhooks end to end: a real receiver (Bun.serve on loopback), events committed to the outbox the way order
 * changes commit them, and every delivery checked with Stripe's own verifier. Time is a ManualClock so the
 * retry schedule, the circuit breaker and the 72 h horizon can be walked without waiting.
 */
import { afterAll, beforeAll, describe, expect, setDefaultTimeout, test } from "bun:test";
import Stripe from "stripe";
import type { Server } from "bun";
import { ManualClock } from "../../actors/runtime/clock.ts";
import { enqueueWebhookEvent, type WebhookEventKind } from "../../actors/webhook/outbox.ts";
import { MAX_ATTEMPTS, MIN_RETRY_DELAY_MS, RETRY_HORIZON_MS, retryCeilingMs } from "../../actors/webhook/schedule.ts";
import { verifyWebhook } from "../../actors/webhook/signature.ts";
import { EXTRAS_ATTEMPT_TIMEOUT_MS } from "../../actors/webhook/dispatcher.ts";
import { boot, type Running } from "../../gateway/boot.ts";
import type { Sql } from "../../infra/db.ts";
import { login, merchantLogin } from "../helpers/agents.ts";
import { startServer, type TestServer } from "../helpers/server.ts";

setDefaultTimeout(60_000);
const stripe = new Stripe("sk_test_x");
const SECRET_KEY = "a".repeat(64);
const HOUR = 3600_000;

interface Received {
  headers: Record<string, string>;
  body: string;
  path: string;
  /** The service clock (ManualClock) when the request arrived, in Unix seconds: what the tolerance is judged by. */
  atSec: number;
}

/** A webhook receiver on loopback whose behaviour the test switches: answer 200, 500, a redirect, or hang. */
class Receiver {
  server?: Server<undefined>;
  port = 0;
  mode: "ok" | "fail" | "redirect" | "hang" = "ok";
  received: Received[] = [];

  start(): this {
    this.server = Bun.serve({
      hostname: "127.0.0.1",
      port: this.port,
      idleTimeout: 0,
      fetch: async (req) => {
        const body = await req.text();
        const path = new URL(req.url).pathname;
        this.received.push({ headers: Object.fromEntries(req.headers), body, path, atSec: Math.floor(clock.now() / 1000) });
        if (this.mode === "hang") return new Promise<Response>(() => {});
        if (this.mode === "fail") return new Response("boom", { status: 500 });
        if (this.mode === "redirect") return new Response(null, { status: 302, headers: { location: "/elsewhere" } });
        return new Response("ok");
      },
    });
    this.port = this.server.port!;
    return this;
  }
  stop(): void {
    this.server?.stop(true);
    this.server = undefined;
  }
  get url(): string {
    return `http://127.0.0.1:${this.port}/hooks`;
  }
  ids(): string[] {
    return this.received.map((r) => r.headers["x-webhook-id"]!);
  }
}

async function waitFor<T>(what: string, fn: () => Promise<T | undefined | false> | T | undefined | false, timeoutMs = 10_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const v = await fn();
    if (v) return v;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await Bun.sleep(25);
  }
}

function orderCreated(slug: string, n: number, at: Date) {
  return {
    event: "order.created",
    timestamp: at.toISOString(),
    orderId: crypto.randomUUID(),
    merchantSlug: slug,
    totalAmount: 10 + n + 0.99,
    currency: "USD",
    status: "pending",
  };
}

async function enqueue(sql: Sql, storeSlug: string, kind: WebhookEventKind, payload: Record<string, unknown>): Promise<string> {
  return (await sql.begin((tx) => enqueueWebhookEvent(tx as unknown as Sql, { storeSlug, kind, payload }))) as string;
}

const clock = new ManualClock(Date.now());
let srv: TestServer;
let adminToken = "";
let adminTokenAt = 0;
/** Session tokens expire on the (manual) clock: log in again once it has moved on. */
let admin = "";
async function freshAdmin(): Promise<string> {
  if (!adminToken || Math.abs(clock.now() - adminTokenAt) > 10 * 60_000) {
    adminToken = await login(srv);
    adminTokenAt = clock.now();
  }
  return (admin = adminToken);
}
const receivers: Receiver[] = [];
const receiver = () => {
  const r = new Receiver().start();
  receivers.push(r);
  return r;
};
const auth = (token: string) => ({ authorization: `Bearer ${token}` });
const clockSec = () => Math.floor(clock.now() / 1000);

async function register(slug: string, url: string, events: string[] = ["order.created", "order.status_changed", "checkout.abandoned"], token?: string) {
  token ??= await freshAdmin();
  const r = await srv.json(`/api/v1/merchant/stores/${slug}/webhooks`, { method: "POST", headers: auth(token), body: { url, events } });
  expect(r.status).toBe(201);
  return r.body.data as { id: string; secret: string; url: string; events: string[] };
}

async function deliveries(slug: string, endpointId: string) {
  const r = await srv.json(`/api/v1/merchant/stores/${slug}/webhooks/${endpointId}/deliveries?limit=500`, { headers: auth(await freshAdmin()) });
  expect(r.status).toBe(200);
  return r.body.data as {
    id: string;
    eventId: string;
    status: string;
    attempts: number;
    nextAttemptAt: string | null;
    lastStatusCode: number | null;
    lastError: string | null;
  }[];
}

beforeAll(async () => {
  srv = await startServer({ config: { SECRET_KEY, RATE_LIMITS_ENABLED: false }, boot: { clock } });
  await freshAdmin();
});

afterAll(async () => {
  for (const r of receivers) r.stop();
  await srv?.stop();
});

describe("registration", () => {
  test("a store owner registers an endpoint and sees its secret once", async () => {
    const owner = await login(srv, merchantLogin("northwind-outfitters"));
    const r = await srv.json("/api/v1/merchant/stores/northwind-outfitters/webhooks", {
      method: "POST",
      headers: auth(owner),
      body: { url: "http://127.0.0.1:9/hooks", events: ["order.created"] },
    });
    expect(r.status).toBe(201);
    expect(r.body.success).toBe(true);
    expect(r.body.data).toMatchObject({ url: "http://127.0.0.1:9/hooks", events: ["order.created"], storeSlug: "northwind-outfitters", breaker: "closed" });
    expect(r.body.data.secret).toMatch(/^whsec_[0-9A-Za-z]{43}$/);

    const list = await srv.json("/api/v1/merchant/stores/northwind-outfitters/webhooks", { headers: auth(owner) });
    expect(list.status).toBe(200);
    expect(list.body.data.map((e: { id: string }) => e.id)).toEqual([r.body.data.id]);
    expect(JSON.stringify(list.body)).not.toContain("whsec_");

    // stored sealed, never in clear
    const [row] = await srv.db.sql<{ secret_sealed: string }[]>`SELECT secret_sealed FROM webhook_endpoints WHERE id = ${r.body.data.id}`;
    expect(row!.secret_sealed.startsWith("v1.")).toBe(true);
    expect(row!.secret_sealed).not.toContain(r.body.data.secret);
    const like = "%" + r.body.data.secret + "%";
    const leaked = await srv.db.sql`SELECT 1 FROM actor_state WHERE state::text LIKE ${like}
                                    UNION ALL SELECT 1 FROM actor_inbox WHERE reply::text LIKE ${like}`;
    expect(leaked.length).toBe(0);

    const del = await srv.json(`/api/v1/merchant/stores/northwind-outfitters/webhooks/${r.body.data.id}`, { method: "DELETE", headers: auth(owner) });
    expect(del.status).toBe(200);
    const again = await srv.json(`/api/v1/merchant/stores/northwind-outfitters/webhooks/${r.body.data.id}`, { method: "DELETE", headers: auth(owner) });
    expect(again.status).toBe(404);
    expect(again.body).toMatchObject({ success: false, code: "not_found" });
    const empty = await srv.json("/api/v1/merchant/stores/northwind-outfitters/webhooks", { headers: auth(owner) });
    expect(empty.body.data).toEqual([]);
  });

  test("another merchant gets 404 store_not_found and no token gets 401", async () => {
    const other = await login(srv, merchantLogin("greenleaf-living"));
    const r = await srv.json("/api/v1/merchant/stores/northwind-outfitters/webhooks", {
      method: "POST",
      headers: auth(other),
      body: { url: "http://127.0.0.1:9/hooks", events: ["order.created"] },
    });
    expect(r.status).toBe(404);
    expect(r.body).toMatchObject({ success: false, code: "store_not_found" });
    const list = await srv.json("/api/v1/merchant/stores/northwind-outfitters/webhooks", { headers: auth(other) });
    expect(list.status).toBe(404);
    expect(list.body.code).toBe("store_not_found");
    const anon = await srv.json("/api/v1/merchant/stores/northwind-outfitters/webhooks");
    expect(anon.status).toBe(401);
    expect(anon.body.code).toBe("unauthorized");
  });

  test("an unknown event kind or a non-http URL is refused with 400 validation_error", async () => {
    const bad = await srv.json("/api/v1/merchant/stores/demo-store/webhooks", {
      method: "POST",
      headers: auth(admin),
      body: { url: "http://127.0.0.1:9/hooks", events: ["order.deleted"] },
    });
    expect(bad.status).toBe(400);
    expect(bad.body.code).toBe("validation_error");
    const ftp = await srv.json("/api/v1/merchant/stores/demo-store/webhooks", {
      method: "POST",
      headers: auth(admin),
      body: { url: "ftp://127.0.0.1/hooks", events: ["order.created"] },
    });
    expect(ftp.status).toBe(400);
    expect(ftp.body).toMatchObject({ code: "validation_error", details: { reason: "scheme" } });
  });
});

describe("delivery", () => {
  test("every event kind reaches the receiver signed so that Stripe's verifier accepts it", async () => {
    const rx = receiver();
    const ep = await register("demo-store", rx.url);
    const onlyCreated = receiver();
    await register("demo-store", onlyCreated.url, ["order.created"]);
    const at = new Date(clock.now());
    const created = orderCreated("demo-store", 1, at);
    const changed = {
      event: "order.status_changed",
      timestamp: at.toISOString(),
      orderId: created.orderId,
      merchantSlug: "demo-store",
      fromStatus: "pending",
      toStatus: "paid",
      totalAmount: created.totalAmount,
      currency: "USD",
    };
    const abandoned = {
      event: "checkout.abandoned",
      timestamp: at.toISOString(),
      checkoutSessionId: crypto.randomUUID(),
      cartId: crypto.randomUUID(),
      merchantSlugs: ["demo-store"],
      totalAmount: 25.5,
      currency: "USD",
      status: "expired",
    };
    const ids = [
      await enqueue(srv.db.sql, "demo-store", "order.created", created),
      await enqueue(srv.db.sql, "demo-store", "order.status_changed", changed),
      await enqueue(srv.db.sql, "demo-store", "checkout.abandoned", abandoned),
    ];
    await waitFor("three deliveries", () => rx.received.length >= 3);
    await waitFor("one delivery to the order.created-only endpoint", () => onlyCreated.received.length >= 1);
    await Bun.sleep(300);
    expect(onlyCreated.ids()).toEqual([ids[0]!]);
    expect(rx.received.length).toBe(3);

    const expected = new Map<string, Record<string, unknown>>([
      [ids[0]!, created],
      [ids[1]!, changed],
      [ids[2]!, abandoned],
    ]);
    for (const r of rx.received) {
      const id = r.headers["x-webhook-id"]!;
      const payload = expected.get(id)!;
      expect(payload).toBeDefined();
      const event = (await stripe.webhooks.constructEventAsync(r.body, r.headers["x-webhook-signature"]!, ep.secret, 300, undefined, clockSec())) as unknown;
      expect(event).toEqual(payload);
      expect(Object.keys(JSON.parse(r.body)).sort()).toEqual(Object.keys(payload).sort());
      expect(r.headers["x-webhook-signature"]).toMatch(/^t=\d+,v1=[0-9a-f]{64}$/);
      expect(r.headers["x-webhook-event"]).toBe(payload.event as string);
      expect(r.headers["x-webhook-attempt"]).toBe("1");
      expect(r.headers["content-type"]).toBe("application/json");
      expect(r.headers["user-agent"]).toContain("AgentCommerceService-Webhooks");
      expect(r.path).toBe("/hooks");
      // a wrong secret is refused by the same verifier
      await expect(stripe.webhooks.constructEventAsync(r.body, r.headers["x-webhook-signature"]!, "whsec_wrong", 300, undefined, clockSec())).rejects.toThrow();
    }
    const ds = await deliveries("demo-store", ep.id);
    expect(ds.map((d) => [d.status, d.attempts, d.lastStatusCode]).sort()).toEqual([
      ["delivered", 1, 200],
      ["delivered", 1, 200],
      ["delivered", 1, 200],
    ]);
    // the outbox rows are dispatched (below the fan-out's watermark, migration 0101)
    const open = await srv.db.sql`SELECT 1 FROM webhook_events WHERE id IN ${srv.db.sql(ids)} AND NOT webhook_event_dispatched(dispatched_at, fanout_xid)`;
    expect(open.length).toBe(0);
  });

  test("a hanging receiver does not delay another endpoint of the same store", async () => {
    srv.running.services.extras.set(EXTRAS_ATTEMPT_TIMEOUT_MS, 3000);
    try {
      const slow = receiver();
      slow.mode = "hang";
      await register("summit-sports-co", slow.url);
      const fast = receiver();
      await register("summit-sports-co", fast.url);
      const started = Date.now();
      const id = await enqueue(srv.db.sql, "summit-sports-co", "order.created", orderCreated("summit-sports-co", 1, new Date(clock.now())));
      await waitFor("the healthy endpoint's delivery", () => fast.received.length === 1, 2500);
      expect(Date.now() - started).toBeLessThan(2500);
      expect(fast.ids()).toEqual([id]);
      await waitFor("the hanging attempt to time out", async () => {
        const [row] = await srv.db.sql<{ status: string; last_error: string | null }[]>`
          SELECT d.status, d.last_error FROM webhook_deliveries d JOIN webhook_endpoints e ON e.id = d.endpoint_id
          WHERE d.event_id = ${id} AND e.url = ${slow.url}`;
        return row?.status === "failed" ? row : undefined;
      });
      const [row] = await srv.db.sql<{ last_error: string }[]>`
        SELECT d.last_error FROM webhook_deliveries d JOIN webhook_endpoints e ON e.id = d.endpoint_id WHERE d.event_id = ${id} AND e.url = ${slow.url}`;
      expect(row!.last_error).toBe("timeout after 3000 ms");
    } finally {
      srv.running.services.extras.delete(EXTRAS_ATTEMPT_TIMEOUT_MS);
    }
  });

  test("a receiver that is down for a while and comes back receives every event, none lost", async () => {
    const rx = receiver();
    const ep = await register("greenleaf-living", rx.url, ["order.created"]);
    rx.stop(); // connection refused from now on
    const ids: string[] = [];
    for (let i = 0; i < 25; i++) ids.push(await enqueue(srv.db.sql, "greenleaf-living", "order.created", orderCreated("greenleaf-living", i, new Date(clock.now()))));
    // wait for the attempts themselves (at least 5 failures open the breaker), not only for deferred rows: the
    // manual clock may lag the database clock, so a fresh delivery can look "deferred" before any attempt
    await waitFor("the breaker's first failures, and every delivery tried or deferred", async () => {
      const ds = await deliveries("greenleaf-living", ep.id);
      return (
        ds.length === 25 &&
        ds.filter((d) => d.status === "failed").length >= 5 &&
        ds.every((d) => d.status === "failed" || (d.status === "pending" && d.nextAttemptAt! > new Date(clock.now()).toISOString()))
      );
    });
    let ds = await deliveries("greenleaf-living", ep.id);
    expect(ds.filter((d) => d.status === "failed").length).toBeGreaterThanOrEqual(5);
    expect(ds.every((d) => d.lastError === null || d.lastError.length > 0)).toBe(true);
    // the breaker opened after 5 consecutive failures: the rest wait without using up attempts
    const [ep1] = (await srv.json(`/api/v1/merchant/stores/greenleaf-living/webhooks`, { headers: auth(await freshAdmin()) })).body.data;
    expect(ep1.breaker).toBe("open");

    rx.start(); // back on the same port
    for (let step = 0; step < 20 && rx.received.length < 25; step++) {
      clock.advance(10 * 60_000);
      await srv.running.host!.pollReminders();
      await Bun.sleep(100);
    }
    await waitFor("all 25 events", () => new Set(rx.ids()).size === 25);
    expect(new Set(rx.ids())).toEqual(new Set(ids));
    // duplicates, if any, carry the same event id and the same body
    const bodies = new Map<string, string>();
    for (const r of rx.received) {
      const id = r.headers["x-webhook-id"]!;
      if (bodies.has(id)) expect(r.body).toBe(bodies.get(id)!);
      bodies.set(id, r.body);
      // the manual clock jumps 10 minutes between polls: an attempt signed just before a jump can arrive after it
      // (seen on a loaded CI machine), so the signature's time is checked against one step's distance
      expect(verifyWebhook(r.headers["x-webhook-signature"], r.body, ep.secret, { now: r.atSec, toleranceSec: 10 * 60 + 60 }).ok).toBe(true);
    }
    // the receiver sees a request before the deliverer records its answer: wait for the rows, not only the requests
    // (an attempt whose answer came after its timeout on a loaded machine is retried at a later step)
    await waitFor("every delivery recorded as delivered", async () => {
      if ((await deliveries("greenleaf-living", ep.id)).every((d) => d.status === "delivered")) return true;
      clock.advance(10 * 60_000);
      await srv.running.host!.pollReminders();
      return false;
    });
    ds = await deliveries("greenleaf-living", ep.id);
    expect(ds.every((d) => d.status === "delivered")).toBe(true);
  });

  test("a receiver that answers 500 is retried on the documented schedule and dead-lettered at the end", async () => {
    const rx = receiver();
    rx.mode = "fail";
    const ep = await register("maple-pine-home", rx.url, ["order.created"]);
    const eventId = await enqueue(srv.db.sql, "maple-pine-home", "order.created", orderCreated("maple-pine-home", 1, new Date(clock.now())));
    await waitFor("the first attempt", () => rx.received.length === 1);
    let d = (await waitFor("the failure to be recorded", async () => {
      const ds = await deliveries("maple-pine-home", ep.id);
      return ds[0]?.status === "failed" ? ds : undefined;
    }))[0]!;
    expect(d).toMatchObject({ eventId, attempts: 1, lastStatusCode: 500, lastError: "HTTP 500" });
    const firstAttempt = clock.now();
    for (let guard = 0; guard < 60 && d.status !== "dead"; guard++) {
      const before = d;
      clock.set(Math.max(clock.now(), Date.parse(before.nextAttemptAt!)));
      await srv.running.host!.pollReminders();
      d = (await waitFor("the next attempt or deferral", async () => {
        const [x] = await deliveries("maple-pine-home", ep.id);
        return x && (x.attempts !== before.attempts || x.nextAttemptAt !== before.nextAttemptAt || x.status !== before.status) ? [x] : undefined;
      }))[0]!;
    }
    expect(d.status).toBe("dead");
    expect(d.nextAttemptAt).toBeNull();
    expect(d.lastError).toContain("dead-lettered");
    expect(d.attempts).toBeLessThanOrEqual(MAX_ATTEMPTS);
    expect(d.attempts).toBeGreaterThanOrEqual(5);
    // the receiver saw exactly the recorded attempts, numbered, all with the same event id
    expect(rx.received.length).toBe(d.attempts);
    expect(rx.received.map((r) => r.headers["x-webhook-attempt"])).toEqual(Array.from({ length: d.attempts }, (_, i) => String(i + 1)));
    expect(new Set(rx.ids())).toEqual(new Set([eventId]));
    // spacing: retry n waits at least 5 s and at most its ceiling (or the breaker's cool-down, at most 1 h)
    const ts = rx.received.map((r) => Number(/t=(\d+)/.exec(r.headers["x-webhook-signature"]!)![1]) * 1000);
    for (let n = 1; n < ts.length; n++) {
      const gap = ts[n]! - ts[n - 1]!;
      expect(gap).toBeGreaterThanOrEqual(MIN_RETRY_DELAY_MS - 1000);
      expect(gap).toBeLessThanOrEqual(Math.max(retryCeilingMs(n), HOUR) + 1000);
    }
    expect(ts.at(-1)! - firstAttempt).toBeLessThanOrEqual(RETRY_HORIZON_MS);

    // redelivery: the receiver is fixed, the merchant replays the dead letter
    rx.mode = "ok";
    const r = await srv.json(`/api/v1/merchant/stores/maple-pine-home/webhooks/${ep.id}/deliveries/${d.id}/redeliver`, { method: "POST", headers: auth(await freshAdmin()) });
    expect(r.status).toBe(202);
    expect(r.body.data).toMatchObject({ id: d.id, eventId, status: "pending", attempts: 0 });
    // no longer finished: its death's time must not age the redelivery (review T-2; read before the reminder sends it)
    const [row] = await srv.db.sql<{ status: string; finished: boolean }[]>`SELECT status, finished_at IS NOT NULL AS finished FROM webhook_deliveries WHERE id = ${d.id}`;
    if (row!.status === "pending") expect(row!.finished).toBe(false);
    await waitFor("the redelivery", () => rx.received.length === d.attempts + 1);
    const last = rx.received.at(-1)!;
    expect(last.headers["x-webhook-id"]).toBe(eventId);
    expect(last.headers["x-webhook-attempt"]).toBe("1");
    expect(verifyWebhook(last.headers["x-webhook-signature"], last.body, ep.secret, { now: clockSec() }).ok).toBe(true);
    const [after] = await waitFor("delivered", async () => {
      const ds = await deliveries("maple-pine-home", ep.id);
      return ds[0]?.status === "delivered" ? ds : undefined;
    });
    expect(after).toMatchObject({ status: "delivered", attempts: 1, lastStatusCode: 200 });
  });

  test("a receiver that hangs is timed out per attempt, retried and dead-lettered", async () => {
    await freshAdmin();
    srv.running.services.extras.set(EXTRAS_ATTEMPT_TIMEOUT_MS, 200);
    try {
      const rx = receiver();
      rx.mode = "hang";
      const ep = await register("cozy-paws-supply", rx.url, ["order.created"]);
      await enqueue(srv.db.sql, "cozy-paws-supply", "order.created", orderCreated("cozy-paws-supply", 1, new Date(clock.now())));
      let d = (await waitFor("the first timeout", async () => {
        const ds = await deliveries("cozy-paws-supply", ep.id);
        return ds[0]?.status === "failed" ? ds : undefined;
      }))[0]!;
      expect(d.lastError).toBe("timeout after 200 ms");
      expect(d.lastStatusCode).toBeNull();
      for (let guard = 0; guard < 60 && d.status !== "dead"; guard++) {
        const before = d;
        clock.set(Math.max(clock.now(), Date.parse(before.nextAttemptAt!)));
        await srv.running.host!.pollReminders();
        d = (await waitFor("the next attempt or deferral", async () => {
          const [x] = await deliveries("cozy-paws-supply", ep.id);
          return x && (x.attempts !== before.attempts || x.nextAttemptAt !== before.nextAttemptAt || x.status !== before.status) ? [x] : undefined;
        }))[0]!;
      }
      expect(d.status).toBe("dead");
      // at least once: every recorded attempt reached the receiver. A jump of the manual clock can expire a lease
      // while the previous 200 ms attempt is still in flight, so an attempt may arrive twice (never with real
      // time: the lease outlasts the attempt timeout) — duplicates carry the same event id.
      expect(rx.received.length).toBeGreaterThanOrEqual(d.attempts);
      expect(new Set(rx.received.map((r) => r.headers["x-webhook-id"])).size).toBe(1);
    } finally {
      srv.running.services.extras.delete(EXTRAS_ATTEMPT_TIMEOUT_MS);
    }
  });

  test("a redirect is a failed attempt and is not followed", async () => {
    const rx = receiver();
    rx.mode = "redirect";
    const ep = await register("pixel-play-games", rx.url, ["order.created"]);
    await enqueue(srv.db.sql, "pixel-play-games", "order.created", orderCreated("pixel-play-games", 1, new Date(clock.now())));
    const [d] = await waitFor("the failed attempt", async () => {
      const ds = await deliveries("pixel-play-games", ep.id);
      return ds[0]?.status === "failed" ? ds : undefined;
    });
    expect(d).toMatchObject({ lastStatusCode: 302, lastError: "redirect not followed" });
    expect(rx.received.map((r) => r.path)).toEqual(["/hooks"]);
  });

  test("after a secret rotation both secrets sign until the overlap ends, then only the new one", async () => {
    const rx = receiver();
    const ep = await register("harbour-lane-uk", rx.url, ["order.created"]);
    const rot = await srv.json(`/api/v1/merchant/stores/harbour-lane-uk/webhooks/${ep.id}/rotate-secret`, {
      method: "POST",
      headers: auth(await freshAdmin()),
      body: {},
    });
    expect(rot.status).toBe(200);
    const fresh = rot.body.data.secret as string;
    expect(fresh).toMatch(/^whsec_/);
    expect(fresh).not.toBe(ep.secret);
    expect(Date.parse(rot.body.data.previousSecretExpiresAt) - clock.now()).toBe(24 * HOUR);
    await enqueue(srv.db.sql, "harbour-lane-uk", "order.created", orderCreated("harbour-lane-uk", 1, new Date(clock.now())));
    await waitFor("delivery during the overlap", () => rx.received.length === 1);
    const during = rx.received[0]!;
    expect(during.headers["x-webhook-signature"]).toMatch(/^t=\d+,v1=[0-9a-f]{64},v1=[0-9a-f]{64}$/);
    await stripe.webhooks.constructEventAsync(during.body, during.headers["x-webhook-signature"]!, ep.secret, 300, undefined, clockSec());
    await stripe.webhooks.constructEventAsync(during.body, during.headers["x-webhook-signature"]!, fresh, 300, undefined, clockSec());

    clock.advance(24 * HOUR + 1000);
    await enqueue(srv.db.sql, "harbour-lane-uk", "order.created", orderCreated("harbour-lane-uk", 2, new Date(clock.now())));
    await waitFor("delivery after the overlap", () => rx.received.length === 2);
    const after = rx.received[1]!;
    expect(after.headers["x-webhook-signature"]).toMatch(/^t=\d+,v1=[0-9a-f]{64}$/);
    expect(verifyWebhook(after.headers["x-webhook-signature"], after.body, fresh, { now: clockSec() }).ok).toBe(true);
    expect(verifyWebhook(after.headers["x-webhook-signature"], after.body, ep.secret, { now: clockSec() })).toEqual({ ok: false, reason: "no_matching_signature" });
  });

  test("a deleted endpoint receives nothing more and its open deliveries are dead-lettered", async () => {
    await freshAdmin();
    const rx = receiver();
    rx.mode = "fail";
    const ep = await register("brightside-electronics", rx.url, ["order.created"]);
    await enqueue(srv.db.sql, "brightside-electronics", "order.created", orderCreated("brightside-electronics", 1, new Date(clock.now())));
    await waitFor("the failed attempt", async () => (await deliveries("brightside-electronics", ep.id))[0]?.status === "failed");
    const del = await srv.json(`/api/v1/merchant/stores/brightside-electronics/webhooks/${ep.id}`, { method: "DELETE", headers: auth(await freshAdmin()) });
    expect(del.status).toBe(200);
    const [row] = await srv.db.sql<{ status: string; last_error: string }[]>`SELECT status, last_error FROM webhook_deliveries WHERE endpoint_id = ${ep.id}`;
    expect(row).toEqual({ status: "dead", last_error: "endpoint deleted" });
    await enqueue(srv.db.sql, "brightside-electronics", "order.created", orderCreated("brightside-electronics", 2, new Date(clock.now())));
    clock.advance(HOUR);
    await srv.running.host!.pollReminders();
    await Bun.sleep(500);
    expect(rx.received.length).toBe(1);
    const listed = await srv.json(`/api/v1/merchant/stores/brightside-electronics/webhooks/${ep.id}/deliveries`, { headers: auth(await freshAdmin()) });
    expect(listed.status).toBe(404);
    expect(listed.body.code).toBe("not_found");
  });
});

describe("restarts", () => {
  test("events committed while no process runs, and retries pending at a crash, are delivered after a restart", async () => {
    const restartClock = new ManualClock(Date.now());
    const first = await startServer({ config: { SECRET_KEY }, boot: { clock: restartClock } });
    let second: Running | undefined;
    const rx = new Receiver().start();
    receivers.push(rx);
    try {
      const token = await login(first);
      const reg = await first.json("/api/v1/merchant/stores/demo-store/webhooks", {
        method: "POST",
        headers: auth(token),
        body: { url: rx.url, events: ["order.created"] },
      });
      expect(reg.status).toBe(201);
      const secret = reg.body.data.secret as string;
      rx.mode = "fail";
      const retried = await enqueue(first.db.sql, "demo-store", "order.created", orderCreated("demo-store", 1, new Date(restartClock.now())));
      await waitFor("a failed attempt", async () => {
        const [r] = await first.db.sql<{ status: string }[]>`SELECT status FROM webhook_deliveries WHERE event_id = ${retried}`;
        return r?.status === "failed";
      });
      // the process goes away (nothing in memory survives); meanwhile an order change commits its event
      await first.running.stop();
      const orphan = await enqueue(first.db.sql, "demo-store", "order.created", orderCreated("demo-store", 2, new Date(restartClock.now())));
      rx.mode = "ok";

      second = await boot({
        role: "start",
        env: {},
        reminderPollMs: 200,
        clock: restartClock,
        config: { ...first.running.config, PORT: 0 },
      });
      await waitFor("the orphaned outbox event", () => rx.ids().includes(orphan));
      restartClock.advance(2 * 60_000);
      await second.host!.pollReminders();
      await waitFor("the retried event", () => rx.ids().includes(retried));
      for (const r of rx.received.filter((x) => x.headers["x-webhook-id"] !== retried || x.headers["x-webhook-attempt"] === "2")) {
        expect(verifyWebhook(r.headers["x-webhook-signature"], r.body, secret, { now: Math.floor(restartClock.now() / 1000) }).ok).toBe(true);
      }
      const rows = await waitFor("both deliveries recorded", async () => {
        const rs = await first.db.sql<{ event_id: string; status: string; attempts: number }[]>`
          SELECT event_id, status, attempts FROM webhook_deliveries WHERE event_id IN ${first.db.sql([retried, orphan])}`;
        return rs.every((r) => r.status === "delivered") ? rs : undefined;
      });
      expect(Object.fromEntries(rows.map((r) => [r.event_id, [r.status, r.attempts]]))).toEqual({
        [retried]: ["delivered", 2],
        [orphan]: ["delivered", 1],
      });
    } finally {
      await second?.stop();
      await first.db.drop();
    }
  });
});
