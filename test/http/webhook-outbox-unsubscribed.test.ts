/**
 * Migration 0099: an outbox event of a store without a webhook endpoint is inserted dispatched, so the fan-out never
 * updates it (that update is never HOT: `dispatched_at` is in the predicate of webhook_events_undispatched). A store
 * with an endpoint still gets its events fanned out and delivered. Whether a row was updated since its insert: its
 * xmin is then no longer the transaction's that wrote the order (the order's `created` event row, never updated).
 * Since migration 0101 the fan-out updates no event at all (it reads a watermark): a subscribed store's event too.
 */
import { afterAll, beforeAll, expect, test } from "bun:test";
import { ALL_SCOPES, createKey, login, placeOrder, type TestKey } from "../helpers/agents.ts";
import { startServer, type TestServer } from "../helpers/server.ts";
import { waitFor } from "../helpers/wait.ts";

const BOARD = "5befd987-79cd-540c-8a5d-2ba5a30aed41"; // DS-0011, demo-store (owned by the admin)

let srv: TestServer;
let key: TestKey;
beforeAll(async () => {
  srv = await startServer({ config: { RETENTION_INTERVAL_MS: 0 } });
  key = await createKey(srv, { scopes: ALL_SCOPES });
}, 60_000);
afterAll(async () => {
  await srv?.stop();
});

type EventRow = { kind: string; dispatched: boolean; written_with_order: boolean; deliveries: number };
const eventsOf = (orderId: string) =>
  srv.db.sql<EventRow[]>`
    SELECT e.kind, webhook_event_dispatched(e.dispatched_at, e.fanout_xid) AS dispatched,
      e.xmin::text = (SELECT oe.xmin::text FROM order_events oe WHERE oe.order_id = ${orderId}::uuid AND oe.type = 'created') AS written_with_order,
      (SELECT count(*)::int FROM webhook_deliveries d WHERE d.event_id = e.id) AS deliveries
    FROM webhook_events e WHERE e.payload::text LIKE ${`%${orderId}%`} ORDER BY e.kind`;

test("a store without an endpoint gets its order's events written dispatched, never updated by the fan-out; once it has one, its events are fanned out and delivered", async () => {
  const without = await placeOrder(srv, key, BOARD);
  const first = [...(await eventsOf(without))];
  expect(first).toEqual([
    { kind: "order.created", dispatched: true, written_with_order: true, deliveries: 0 },
    { kind: "order.status_changed", dispatched: true, written_with_order: false, deliveries: 0 },
  ]);
  // the paid move's event is written by the settle's transaction, not the order's; the fan-out's ticks in the
  // meantime find nothing to do: no row of the order is undispatched at any time
  const [{ n }] = await srv.db.sql<{ n: number }[]>`SELECT count(*)::int AS n FROM webhook_events WHERE NOT webhook_event_dispatched(dispatched_at, fanout_xid)`;
  expect(n).toBe(0);

  const received: unknown[] = [];
  const receiver = Bun.serve({ port: 0, hostname: "127.0.0.1", fetch: async (req) => (received.push(await req.json()), new Response(null, { status: 204 })) });
  try {
    const token = await login(srv);
    const ep = await srv.json("/api/v1/merchant/stores/demo-store/webhooks", {
      method: "POST",
      headers: { authorization: `Bearer ${token}` },
      body: { url: `http://127.0.0.1:${receiver.port}/hooks`, events: ["order.created"] },
    });
    expect(ep.status).toBe(201);
    const withEndpoint = await placeOrder(srv, key, BOARD);
    await waitFor("the events fanned out", async () => (await eventsOf(withEndpoint)).every((e) => e.dispatched));
    const rows = await eventsOf(withEndpoint);
    expect(rows.map((e) => [e.kind, e.dispatched, e.deliveries])).toEqual([
      ["order.created", true, 1],
      ["order.status_changed", true, 0],
    ]);
    // never updated either: the fan-out reads a watermark over the writing transactions (migration 0101), it marks nothing
    expect(rows[0]!.written_with_order).toBe(true);
    await waitFor("the delivery received", () => received.some((b) => JSON.stringify(b).includes(withEndpoint)));
    // the earlier order's events were dispatched before the endpoint existed: not delivered to it
    expect(received.some((b) => JSON.stringify(b).includes(without))).toBe(false);
  } finally {
    receiver.stop(true);
  }
}, 60_000);
