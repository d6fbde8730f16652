/**
 * Migration 0101: the webhook fan-out reads a watermark over the writing transactions' ids (guarded by the oldest
 * transaction still running) instead of marking each event dispatched. An event whose transaction commits after a
 * later one's is fanned out when it commits, never skipped (the outbox gap), and each event reaches an endpoint once;
 * an event row is written once and never updated. Transaction ids are cluster-wide: a transaction of another database
 * does not hold this database's events back.
 */
import { afterAll, beforeAll, expect, test } from "bun:test";
import type { Sql } from "../../infra/db.ts";
import { enqueueWebhookEvent } from "../../actors/webhook/outbox.ts";
import { ALL_SCOPES, createKey, login, placeOrder, type TestKey } from "../helpers/agents.ts";
import { startServer, type TestServer } from "../helpers/server.ts";
import { createTestDatabase } from "../helpers/db.ts";
import { waitFor } from "../helpers/wait.ts";

const BOARD = "5befd987-79cd-540c-8a5d-2ba5a30aed41"; // demo-store (owned by the admin)
let srv: TestServer;
let key: TestKey;
const received: string[] = []; // the orderId of every delivery the receiver got
const receiver = Bun.serve({
  port: 0,
  hostname: "127.0.0.1",
  fetch: async (req) => {
    const body = (await req.json()) as { orderId?: string; data?: { orderId?: string } };
    received.push(String(body.orderId ?? body.data?.orderId ?? JSON.stringify(body)));
    return new Response(null, { status: 204 });
  },
});

beforeAll(async () => {
  srv = await startServer({ config: { RETENTION_INTERVAL_MS: 0, ALLOW_PRIVATE_URLS: true } });
  key = await createKey(srv, { scopes: ALL_SCOPES });
  const ep = await srv.json("/api/v1/merchant/stores/demo-store/webhooks", {
    method: "POST",
    headers: { authorization: `Bearer ${await login(srv)}` },
    body: { url: `http://127.0.0.1:${receiver.port}/hooks`, events: ["order.created", "order.status_changed"] },
  });
  expect(ep.status).toBe(201);
  // every update of an event row (observation only)
  await srv.db.sql.unsafe(`
    CREATE TABLE test_event_updates (event_id uuid);
    CREATE FUNCTION test_log_event_update() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN INSERT INTO test_event_updates VALUES (NEW.id); RETURN NEW; END $$;
    CREATE TRIGGER test_log_event_update AFTER UPDATE ON webhook_events FOR EACH ROW EXECUTE FUNCTION test_log_event_update();`);
}, 60_000);
afterAll(async () => {
  receiver.stop(true);
  await srv?.stop();
});

const event = (sql: Sql, orderId: string) =>
  enqueueWebhookEvent(sql, {
    storeSlug: "demo-store",
    kind: "order.created",
    payload: { event: "order.created", timestamp: new Date().toISOString(), orderId, merchantSlug: "demo-store", totalAmount: 10, currency: "USD", status: "pending" },
  });
const deliveriesOf = async (eventId: string) => (await srv.db.sql<{ n: number }[]>`SELECT count(*)::int AS n FROM webhook_deliveries WHERE event_id = ${eventId}`)[0]!.n;
const times = (orderId: string) => received.filter((r) => r === orderId).length;

test("an event whose transaction commits after a later event's is fanned out once it commits, not skipped, and each reaches the endpoint once", async () => {
  const early = crypto.randomUUID();
  const late = crypto.randomUUID();
  const conn = await srv.db.sql.reserve();
  let earlyId = "";
  try {
    // the early event's transaction takes its id first and stays open while a later transaction's event commits
    await conn`BEGIN`;
    earlyId = await event(conn as unknown as Sql, early);
    const lateId = await event(srv.db.sql, late);
    await Bun.sleep(1_000); // five fan-out ticks
    // a cursor over commit order would have passed the early event by now; the watermark waits for its transaction
    expect(await deliveriesOf(lateId)).toBe(0);
    await conn`COMMIT`;
    await waitFor("both delivered", () => times(early) === 1 && times(late) === 1);
    expect([await deliveriesOf(earlyId), await deliveriesOf(lateId)]).toEqual([1, 1]);
  } finally {
    await conn`ROLLBACK`.catch(() => {});
    conn.release();
  }
  await Bun.sleep(1_000);
  expect([times(early), times(late)]).toEqual([1, 1]);
}, 60_000);

test("a transaction open in another database of the cluster does not hold this database's events back", async () => {
  const other = await createTestDatabase({ migrate: false });
  const conn = await other.sql.reserve();
  try {
    await conn`BEGIN`;
    await conn`SELECT pg_current_xact_id()`; // holds a transaction id, as a CREATE DATABASE or a long write would
    const orderId = crypto.randomUUID();
    await event(srv.db.sql, orderId);
    await waitFor("the event delivered while the other database's transaction is open", () => times(orderId) === 1, 5_000);
  } finally {
    await conn`ROLLBACK`.catch(() => {});
    conn.release();
    await other.drop();
  }
}, 60_000);

test("an event of a transaction that rolled back is never fanned out and holds no later event back", async () => {
  const gone = crypto.randomUUID();
  const after = crypto.randomUUID();
  await srv.db.sql
    .begin(async (tx) => {
      await event(tx as unknown as Sql, gone);
      throw new Error("rolled back");
    })
    .catch(() => {});
  await event(srv.db.sql, after);
  await waitFor("the later event delivered", () => times(after) === 1);
  expect(times(gone)).toBe(0);
}, 60_000);

test("a checkout at a store with an endpoint writes its events once and never updates them, and both are delivered", async () => {
  const orderId = await placeOrder(srv, key, BOARD);
  await waitFor("both events delivered", () => times(orderId) === 2);
  const [{ n }] = await srv.db.sql<{ n: number }[]>`
    SELECT count(*)::int AS n FROM test_event_updates u JOIN webhook_events e ON e.id = u.event_id WHERE e.payload->>'orderId' = ${orderId}`;
  expect(n).toBe(0);
  const [{ d }] = await srv.db.sql<{ d: number }[]>`SELECT count(*)::int AS d FROM webhook_deliveries d JOIN webhook_events e ON e.id = d.event_id WHERE e.payload->>'orderId' = ${orderId}`;
  expect(d).toBe(2);
}, 60_000);
