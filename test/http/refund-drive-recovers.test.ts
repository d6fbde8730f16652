/**
 * A refund the processor paid is never dropped (audit K-1): when the drive's rail call answers `refunded` but the
 * record is no longer APPROVED by the time the drive records it (here: marked FAILED meanwhile, as a stale drive's
 * refusal under an older processor key did), the drive still records it: REFUNDED, the order's refunded_minor counts
 * it, and a `refund_recovered` event names the status it was corrected from. The interleaving is made deterministic:
 * a test transaction holds the processor's intent row, so the approve's rail call waits on it after APPROVED was
 * committed; the record is moved in that transaction, then the row is let go.
 */
import { afterAll, beforeAll, expect, test } from "bun:test";
import { ALL_SCOPES, createKey, login, type TestKey } from "../helpers/agents.ts";
import { startServer, type TestServer } from "../helpers/server.ts";

const BOARD = "5befd987-79cd-540c-8a5d-2ba5a30aed41"; // untracked stock, demo-store
let srv: TestServer;
let key: TestKey;
let owner: Record<string, string>;

beforeAll(async () => {
  srv = await startServer({ seed: true, config: { RATE_LIMITS_ENABLED: false } });
  key = await createKey(srv, { scopes: ALL_SCOPES });
  owner = { authorization: `Bearer ${await login(srv)}` };
}, 120_000);
afterAll(async () => {
  await srv?.stop();
});

test("a refund the processor paid while its record was moved off APPROVED is recorded REFUNDED and counted by the order", async () => {
  const c = await srv.json("/api/v1/agent/cart", { method: "POST", headers: key.headers, body: { items: [{ product_id: BOARD, quantity: 1 }] } });
  const cartId: string = c.body.data.id;
  const paid = await srv.json("/api/v1/agent/checkout", { method: "POST", headers: key.headers, body: { cartId, payment_method: "MOCK", idempotency_key: crypto.randomUUID() } });
  expect(paid.status).toBe(200);
  const [o] = await srv.db.sql<{ id: string; intent_id: string; total_minor: number }[]>`SELECT id, intent_id, total_minor::int FROM orders WHERE cart_id = ${cartId}`;
  const asked = await srv.json(`/api/v1/agent/orders/${o!.id}/refund`, { method: "POST", headers: key.headers, body: { amount: 500 } });
  expect(asked.status).toBe(201);
  const refundId: string = asked.body.data.refund_id;

  const lock = await srv.db.sql.reserve();
  let approved;
  try {
    await lock`BEGIN`;
    await lock`SELECT intent_id FROM sandbox_ledger_intents WHERE intent_id = ${o!.intent_id} FOR UPDATE`;
    const approving = srv.json(`/api/v1/merchant/stores/demo-store/refunds/${refundId}/approve`, { method: "POST", headers: owner, body: {} });
    let waiting = false;
    for (let i = 0; i < 1_000 && !waiting; i++) {
      const [w] = await srv.db.sql<{ n: number }[]>`
        SELECT count(*)::int AS n FROM pg_stat_activity WHERE wait_event_type = 'Lock' AND pid <> pg_backend_pid() AND query ILIKE '%sandbox_ledger%'`;
      waiting = w!.n > 0;
      if (!waiting) await Bun.sleep(10);
    }
    expect(waiting).toBe(true);
    // APPROVED was committed before the processor was called; the record is moved off it while the rail waits.
    const moved = await lock`UPDATE order_refunds SET status = 'FAILED', failure = 'stale_refusal' WHERE id = ${refundId} AND status = 'APPROVED'`;
    expect(moved.count).toBe(1);
    await lock`COMMIT`;
    approved = await approving;
  } finally {
    lock.release();
  }
  expect(approved.status).toBe(200);
  expect(approved.body.data).toMatchObject({ refund_id: refundId, status: "REFUNDED", amount_minor: 500 });
  const [r] = await srv.db.sql<{ status: string; failure: string | null }[]>`SELECT status, failure FROM order_refunds WHERE id = ${refundId}`;
  expect(r).toEqual({ status: "REFUNDED", failure: null });
  const [after] = await srv.db.sql<{ status: string; refunded_minor: number }[]>`SELECT status, refunded_minor::int FROM orders WHERE id = ${o!.id}`;
  expect(after).toEqual({ status: "paid", refunded_minor: 500 }); // a partial refund keeps the status (its event is in the history)
  const [led] = await srv.db.sql<{ refunded_minor: number }[]>`SELECT refunded_minor::int FROM sandbox_ledger_intents WHERE intent_id = ${o!.intent_id}`;
  expect(led!.refunded_minor).toBe(500);
  const ev = await srv.db.sql<{ data: { refund_id: string; was: string } }[]>`SELECT data FROM order_events WHERE order_id = ${o!.id} AND type = 'refund_recovered'`;
  expect(ev.map((e) => ({ refund_id: e.data.refund_id, was: e.data.was }))).toEqual([{ refund_id: refundId, was: "FAILED" }]);
}, 60_000);
