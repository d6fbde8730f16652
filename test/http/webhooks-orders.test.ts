/**
 * Orders placed through the real checkout reach a real receiver as signed webhooks: every delivery verified with
 * Stripe's own verifier, the payload fields checked against the orders the checkout returned.
 */
import { afterAll, beforeAll, expect, setDefaultTimeout, test } from "bun:test";
import Stripe from "stripe";
import { ALL_SCOPES, createKey, login, type TestKey } from "../helpers/agents.ts";
import { startServer, type TestServer } from "../helpers/server.ts";

setDefaultTimeout(120_000);
const stripe = new Stripe("sk_test_x");
const BOARD = "5befd987-79cd-540c-8a5d-2ba5a30aed41"; // DS-0011, 26.95, demo-store, untracked stock

let srv: TestServer;
let key: TestKey;
let rx: ReturnType<typeof Bun.serve>;
const received: { headers: Record<string, string>; body: string }[] = [];

beforeAll(async () => {
  srv = await startServer({ seed: true, config: { RATE_LIMITS_ENABLED: false } });
  key = await createKey(srv, { scopes: ALL_SCOPES });
  rx = Bun.serve({
    hostname: "127.0.0.1",
    port: 0,
    async fetch(req) {
      received.push({ headers: Object.fromEntries(req.headers), body: await req.text() });
      return new Response(null, { status: 204 });
    },
  });
});

afterAll(async () => {
  rx?.stop(true);
  await srv?.stop();
});

test("orders placed through checkout are delivered signed, verifiable by Stripe, with the spec payload", async () => {
  const token = await login(srv); // the admin owns demo-store
  const reg = await srv.json("/api/v1/merchant/stores/demo-store/webhooks", {
    method: "POST",
    headers: { authorization: `Bearer ${token}` },
    body: { url: `http://127.0.0.1:${rx.port}/hooks`, events: ["order.created", "order.status_changed"] },
  });
  expect(reg.status).toBe(201);
  const secret = reg.body.data.secret as string;

  const orders = new Map<string, number>();
  for (let i = 1; i <= 4; i++) {
    const cart = await srv.json("/api/v1/agent/cart", { method: "POST", headers: key.headers, body: { items: [{ product_id: BOARD, quantity: i }] } });
    expect(cart.status).toBe(201);
    const co = await srv.json("/api/v1/agent/checkout", { method: "POST", headers: key.headers, body: { cartId: cart.body.data.id, payment_method: "MOCK" } });
    expect(co.status).toBe(200);
    expect(co.body.data.status).toBe("COMPLETED");
    orders.set(co.body.data.order_id, co.body.data.total_minor / 100);
  }

  // each order: order.created (pending) and order.status_changed (pending → paid)
  const deadline = Date.now() + 15_000;
  while (new Set(received.map((r) => r.headers["x-webhook-id"])).size < 2 * orders.size && Date.now() < deadline) await Bun.sleep(50);
  const byId = new Map(received.map((r) => [r.headers["x-webhook-id"]!, r]));
  expect(byId.size).toBe(2 * orders.size);

  const seen = new Map<string, string[]>();
  for (const r of byId.values()) {
    const event = (await stripe.webhooks.constructEventAsync(r.body, r.headers["x-webhook-signature"]!, secret)) as unknown as Record<string, unknown>;
    expect(r.headers["x-webhook-event"]).toBe(event.event as string);
    const orderId = event.orderId as string;
    expect(orders.has(orderId)).toBe(true);
    expect(event.merchantSlug).toBe("demo-store");
    expect(event.currency).toBe("USD");
    expect(event.totalAmount).toBe(orders.get(orderId)!);
    expect(event.timestamp as string).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/);
    if (event.event === "order.created") {
      expect(Object.keys(event).sort()).toEqual(["currency", "event", "merchantSlug", "orderId", "status", "timestamp", "totalAmount"]);
      expect(event.status).toBe("pending");
    } else {
      expect(event.event).toBe("order.status_changed");
      expect(Object.keys(event).sort()).toEqual(["currency", "event", "fromStatus", "merchantSlug", "orderId", "timestamp", "toStatus", "totalAmount"]);
      expect([event.fromStatus, event.toStatus]).toEqual(["pending", "paid"]);
    }
    seen.set(orderId, [...(seen.get(orderId) ?? []), event.event as string].sort());
  }
  for (const id of orders.keys()) expect(seen.get(id)).toEqual(["order.created", "order.status_changed"]);
});
