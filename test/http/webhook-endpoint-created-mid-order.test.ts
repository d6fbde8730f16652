/**
 * Review X (session 15), finding X-1: migration 0099's trigger decided "this store has no endpoint" when an order's
 * outbox event was inserted, not when the order committed. An endpoint created (POST …/webhooks answered 201) between
 * the insert and the order's commit never got that order's event, though the change committed after the endpoint
 * existed (docs/webhooks.md "Delivery"). Since 0100 the trigger takes register's per-store lock in its shared,
 * non-waiting form: an order that found no endpoint makes a creation wait for its commit, and an order that meets a
 * creation in progress leaves its event to the fan-out (and does not wait). The order's transaction is staged as the
 * store's commerce statements write it: the outbox row inserted, the commit a moment later.
 */
import { expect, test } from "bun:test";
import type { Sql } from "../../infra/db.ts";
import { enqueueWebhookEvent } from "../../actors/webhook/outbox.ts";
import { login, merchantLogin } from "../helpers/agents.ts";
import { useServer } from "../helpers/server.ts";

const SLUG = "greenleaf-living";
/** actors/webhook/index.ts WEBHOOK_CAP_LOCK: the first key of the per-store lock `register` holds to its commit. */
const WEBHOOK_CAP_LOCK = 0x5eb0;
const srv = useServer({ config: { SECRET_KEY: "d".repeat(64), RATE_LIMITS_ENABLED: false, LOG_LEVEL: "warn", ALLOW_PRIVATE_URLS: true } });

type Answer = { status: number; body: { data?: { id?: string } } };

async function liveEndpoints(): Promise<number> {
  const [{ n }] = await srv.db.sql<{ n: number }[]>`SELECT count(*)::int AS n FROM webhook_endpoints WHERE store_slug = ${SLUG} AND deleted_at IS NULL`;
  return n;
}

function createEndpoint(token: string): { answer: Promise<Answer>; answered: () => boolean } {
  let done = false;
  const answer = srv
    .json(`/api/v1/merchant/stores/${SLUG}/webhooks`, { method: "POST", headers: { authorization: `Bearer ${token}` }, body: { url: "http://127.0.0.1:9/hook", events: ["order.created"] } })
    .then((r) => r as Answer)
    .finally(() => (done = true));
  return { answer, answered: () => done };
}

async function openOrder(order: Sql): Promise<string> {
  await order`BEGIN`;
  return enqueueWebhookEvent(order, {
    storeSlug: SLUG,
    kind: "order.created",
    payload: { event: "order.created", timestamp: new Date().toISOString(), orderId: crypto.randomUUID(), merchantSlug: SLUG, totalAmount: 1000, currency: "USD", status: "pending" },
  });
}

/** The endpoints the event was fanned out to, once the fan-out (every 200 ms) has seen it. */
async function deliveredTo(eventId: string): Promise<string[]> {
  const deadline = Date.now() + 5_000;
  while ((await srv.db.sql`SELECT 1 FROM webhook_events WHERE id = ${eventId} AND webhook_event_dispatched(dispatched_at, fanout_xid)`).length === 0 && Date.now() < deadline) await Bun.sleep(50);
  await Bun.sleep(300);
  const rows = await srv.db.sql<{ endpoint_id: string }[]>`SELECT endpoint_id::text FROM webhook_deliveries WHERE event_id = ${eventId}`;
  return rows.map((d) => d.endpoint_id);
}

/** Back to the pool with no transaction open, also when an expectation failed mid-transaction (a no-op after COMMIT). */
async function end(conn: Awaited<ReturnType<Sql["reserve"]>>): Promise<void> {
  await conn`ROLLBACK`.catch(() => {});
  conn.release();
}

const removeAll = () => srv.db.sql`UPDATE webhook_endpoints SET deleted_at = now() WHERE store_slug = ${SLUG} AND deleted_at IS NULL`;

test("an endpoint created while an order that found no endpoint is open is answered only after the order commits, and is owed nothing", async () => {
  await removeAll();
  const token = await login(srv, merchantLogin(SLUG));
  const order = await srv.db.sql.reserve();
  let eventId = "";
  let creation: ReturnType<typeof createEndpoint>;
  try {
    eventId = await openOrder(order as unknown as Sql);
    creation = createEndpoint(token);
    await Bun.sleep(1_000);
    // the creation waits for the order (before 0100 it was answered 201 at once, and the event was lost to it)
    expect(creation.answered()).toBe(false);
    expect(await liveEndpoints()).toBe(0);
    await order`COMMIT`;
  } finally {
    await end(order);
  }
  const created = await creation.answer;
  expect(created.status).toBe(201);
  expect(await deliveredTo(eventId)).toEqual([]);
}, 60_000);

test("an order that meets an endpoint creation in progress does not wait for it, and the endpoint answered 201 before the order commits gets the order's event", async () => {
  await removeAll();
  const token = await login(srv, merchantLogin(SLUG));
  // Another creation of the store holding register's lock (as a turn does, to its commit) keeps ours in progress:
  // queued behind it, as a creation is while it counts the store's endpoints.
  const other = await srv.db.sql.reserve();
  const order = await srv.db.sql.reserve();
  let eventId = "";
  let created: Answer;
  try {
    await other`BEGIN`;
    await other`SELECT pg_advisory_xact_lock(${WEBHOOK_CAP_LOCK}, hashtext(${SLUG}))`;
    const creation = createEndpoint(token);
    await Bun.sleep(300);
    expect(creation.answered()).toBe(false);
    const t0 = Date.now();
    eventId = await openOrder(order as unknown as Sql);
    expect(Date.now() - t0).toBeLessThan(1_000);
    await other`COMMIT`;
    created = await creation.answer;
    expect(created.status).toBe(201);
    // answered while the order is still open: the order's change commits after the endpoint existed
    await order`COMMIT`;
  } finally {
    await end(other);
    await end(order);
  }
  expect(await deliveredTo(eventId)).toEqual([created.body.data!.id!]);
}, 60_000);
