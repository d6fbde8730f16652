/**
 * Audit A2 MED-5: when the circuit breaker's probe succeeds, the deliveries it held back go out at once, oldest
 * first. Before the fix, a turn that ran while the probe was out pushed them to the probe's "presumed lost" time
 * (one more cool-down: 5 min, up to 1 h) and the success closed the breaker without pulling them back, so the
 * endpoint showed `closed` while its backlog waited and newer events overtook it.
 *
 * The clock is a ManualClock and stays still once the probe is out: everything the test then expects must happen
 * without time passing, which is exactly what "due now" means.
 */
import { afterAll, beforeAll, describe, expect, setDefaultTimeout, test } from "bun:test";
import type { Server } from "bun";
import { ManualClock } from "../../actors/runtime/clock.ts";
import { webhookActor } from "../../actors/webhook/index.ts";
import { enqueueWebhookEvent } from "../../actors/webhook/outbox.ts";
import { DEFAULT_BREAKER } from "../../actors/webhook/schedule.ts";
import type { Sql } from "../../infra/db.ts";
import { login } from "../helpers/agents.ts";
import { startServer, type TestServer } from "../helpers/server.ts";

setDefaultTimeout(60_000);
const SLUG = "greenleaf-living";
const clock = new ManualClock(Date.now());
let srv: TestServer;
let token = "";

/** A receiver that fails, or holds each request until the test opens the gate and then answers 200. */
class GatedReceiver {
  server?: Server<undefined>;
  mode: "fail" | "gate" = "fail";
  received: string[] = [];
  private open!: () => void;
  private gate = new Promise<void>((r) => (this.open = r));

  start(): this {
    this.server = Bun.serve({
      hostname: "127.0.0.1",
      port: 0,
      idleTimeout: 0,
      fetch: async (req) => {
        await req.text();
        this.received.push(req.headers.get("x-webhook-id")!);
        if (this.mode === "fail") return new Response("boom", { status: 500 });
        await this.gate;
        return new Response("ok");
      },
    });
    return this;
  }
  release(): void {
    this.open();
  }
  get url(): string {
    return `http://127.0.0.1:${this.server!.port}/hooks`;
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

interface Delivery {
  eventId: string;
  status: string;
  attempts: number;
  nextAttemptAt: string | null;
}
const auth = () => ({ authorization: `Bearer ${token}` });
async function deliveries(endpointId: string): Promise<Delivery[]> {
  const r = await srv.json(`/api/v1/merchant/stores/${SLUG}/webhooks/${endpointId}/deliveries?limit=500`, { headers: auth() });
  expect(r.status).toBe(200);
  return r.body.data;
}
async function breakerOf(endpointId: string): Promise<string> {
  const r = await srv.json(`/api/v1/merchant/stores/${SLUG}/webhooks`, { headers: auth() });
  return r.body.data.find((e: { id: string }) => e.id === endpointId).breaker;
}
async function enqueue(sql: Sql, n: number): Promise<string> {
  const payload = { event: "order.created", timestamp: new Date(clock.now()).toISOString(), orderId: crypto.randomUUID(), merchantSlug: SLUG, totalAmount: 10 + n, currency: "USD", status: "pending" };
  return (await sql.begin((tx) => enqueueWebhookEvent(tx as unknown as Sql, { storeSlug: SLUG, kind: "order.created", payload }))) as string;
}

const rx = new GatedReceiver();
beforeAll(async () => {
  srv = await startServer({ config: { SECRET_KEY: "b".repeat(64), RATE_LIMITS_ENABLED: false }, boot: { clock } });
  token = await login(srv);
  rx.start();
}, 120_000);
afterAll(async () => {
  rx.release();
  rx.server?.stop(true);
  await srv?.stop();
});

describe("a circuit breaker whose probe succeeds", () => {
  test("sends what it held back at once, without waiting another cool-down", async () => {
    const r = await srv.json(`/api/v1/merchant/stores/${SLUG}/webhooks`, { method: "POST", headers: auth(), body: { url: rx.url, events: ["order.created"] } });
    expect(r.status).toBe(201);
    const ep = r.body.data as { id: string };

    // Six events fail: the breaker opens after five, and everything waits for the reopen time.
    const events: string[] = [];
    for (let i = 0; i < 6; i++) events.push(await enqueue(srv.db.sql, i));
    await waitFor("six failed attempts", async () => (await deliveries(ep.id)).filter((d) => d.status === "failed").length === 6);
    expect(await breakerOf(ep.id)).toBe("open");

    // The cool-down passes; the receiver works again but holds the probe until the test lets it answer.
    rx.mode = "gate";
    clock.advance(DEFAULT_BREAKER.cooldownMs + 1000);
    await srv.running.host!.pollReminders();
    await waitFor("the probe", () => rx.received.length === 7);
    const probe = rx.received[6]!;

    // A turn that runs while the probe is out pushes the rest to the time the probe would be presumed lost.
    const probeOutAt = clock.now();
    await srv.running.services.actors.ask(webhookActor, ep.id, "deliverDue", {});
    await waitFor("the backlog pushed behind the probe", async () =>
      (await deliveries(ep.id)).filter((d) => d.eventId !== probe).every((d) => d.nextAttemptAt !== null && Date.parse(d.nextAttemptAt) > probeOutAt),
    );

    // The probe succeeds: the breaker closes and the five others go out now, on a clock that does not move.
    rx.release();
    await waitFor("every delivery delivered", async () => (await deliveries(ep.id)).every((d) => d.status === "delivered"), 15_000);
    expect(clock.now()).toBe(probeOutAt);
    expect(await breakerOf(ep.id)).toBe("closed");
    expect(new Set(rx.received.slice(7))).toEqual(new Set(events.filter((e) => e !== probe)));
    const ds = await deliveries(ep.id);
    expect(ds.every((d) => d.attempts === 2)).toBe(true);

  });
});
