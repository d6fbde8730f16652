/**
 * Review R (session 17), R-6 (e7c8e41, A-3): the return terms an order records are read from `stores.policies` by the
 * hold statement, not taken from the catalog read whose policy version the state check compared with the preview. A
 * merchant's PUT /policies committing between the two (the payment turn's catalog read and its hold) is neither
 * refused (the hold statement does not compare `policy_version`) nor recorded as what the buyer approved: the order
 * is paid with the previewed session (30-day window approved) and records the new, shorter window, which the refund
 * rule then applies. Made deterministic by holding a SHARE lock on order_events (SELECTs pass, the hold's INSERT
 * waits, and in READ COMMITTED its snapshot is taken after the lock is granted).
 */
import { afterAll, beforeAll, expect, test } from "bun:test";
import { ALL_SCOPES, createKey, login, type TestKey } from "../helpers/agents.ts";
import { startServer, type TestServer } from "../helpers/server.ts";

const SHAMPOO = "78be202c-7531-5abc-af67-04c4e6b96b7a"; // demo-store DS-0053; demo-store: returns within 30 days
let srv: TestServer;
let key: TestKey;
let token: string;
beforeAll(async () => {
  srv = await startServer({ seed: true, config: { RATE_LIMITS_ENABLED: false } });
  key = await createKey(srv, { scopes: ALL_SCOPES });
  token = await login(srv);
}, 120_000);
afterAll(async () => {
  await srv?.stop();
});

async function waitForLockWait(): Promise<void> {
  for (let i = 0; i < 200; i++) {
    const [w] = await srv.db.sql<{ n: number }[]>`SELECT count(*)::int AS n FROM pg_locks l JOIN pg_class c ON c.oid = l.relation
      WHERE l.database = (SELECT oid FROM pg_database WHERE datname = current_database()) AND c.relname = 'order_events' AND NOT l.granted`;
    if (w!.n > 0) return;
    await Bun.sleep(25);
  }
  throw new Error("the checkout never waited for order_events");
}

test("R-6: a policy change committing between the payment's state check and its hold is recorded as the order's terms", async () => {
  const cart = await srv.json("/api/v1/agent/cart", { method: "POST", headers: key.headers, body: { items: [{ product_id: SHAMPOO, quantity: 1 }] } });
  expect(cart.status).toBe(201);
  const preview = await srv.json("/api/v1/agent/checkout/preview", { method: "POST", headers: key.headers, body: { cartId: cart.body.data.id } });
  expect(preview.status).toBe(200);
  const sessionId = preview.body.data.checkout_session_id;

  let release!: () => void;
  const released = new Promise<void>((r) => (release = r));
  let locked!: () => void;
  const isLocked = new Promise<void>((r) => (locked = r));
  const holder = srv.db.sql.begin(async (tx) => {
    await tx`LOCK TABLE order_events IN SHARE MODE`;
    locked();
    await released;
  });
  await isLocked;
  const paying = srv.json("/api/v1/agent/checkout", {
    method: "POST",
    headers: { ...key.headers, "idempotency-key": crypto.randomUUID() },
    body: { cartId: cart.body.data.id, checkout_session_id: sessionId, payment_method: "MOCK" },
  });
  await waitForLockWait(); // the payment passed its state check (policy version as previewed) and waits to insert its order
  const put = await srv.json("/api/v1/merchant/stores/demo-store/policies", {
    method: "PUT",
    headers: { authorization: `Bearer ${token}` },
    body: { acceptsReturns: true, returnWindowDays: 1 },
  });
  expect(put.status).toBe(200);
  release();
  await holder;
  const paid = await paying;
  if (paid.status !== 200) return; // refused as a changed policy: what the buyer approved is not overridden
  const orderId = paid.body.data.order_id;
  const [ev] = await srv.db.sql<{ p: { returnWindowDays: number | null } }[]>`
    SELECT data->'return_policy' AS p FROM order_events WHERE order_id = ${orderId} AND type = 'created'`;
  // the buyer previewed (and was charged under) the 30-day window
  expect(ev!.p.returnWindowDays).toBe(30);
}, 60_000);
