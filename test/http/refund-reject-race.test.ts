/**
 * A merchant's reject of a FAILED reconciliation refund racing the retry of that refund (audit K-1, K-2): the reject
 * takes the order row first and then moves the refund only from the status it read, so it either wins (the record
 * REJECTED before the retry reads it; the retry then opens a new record and refunds) or loses (409 conflict with the
 * refund's current status). Before, the reject overwrote a refund the processor had already paid (record REJECTED,
 * order not counting it, the capture then acceptable as paid), or deadlocked with the retry (503).
 */
import { afterAll, beforeAll, expect, test } from "bun:test";
import { ALL_SCOPES, createKey, login, type TestKey } from "../helpers/agents.ts";
import { startServer, type TestServer } from "../helpers/server.ts";

const SKILLET = "399d72f1-303c-5cf3-bc6a-5c82714b85d4"; // tracked stock, demo-store
let srv: TestServer;
let key: TestKey;
let owner: Record<string, string>;

beforeAll(async () => {
  srv = await startServer({ seed: true, config: { RATE_LIMITS_ENABLED: false } });
  key = await createKey(srv, { scopes: ALL_SCOPES, tier: "ENTERPRISE" });
  owner = { authorization: `Bearer ${await login(srv)}` }; // the demo store is the operator's
  await srv.db.sql`UPDATE products SET stock_quantity = 1000, reserved_quantity = 0, in_stock = true WHERE id = ${SKILLET}`;
}, 120_000);
afterAll(async () => {
  await srv?.stop();
});

type Res = { status: number; body: any };
const reconcile = (orderId: string): Promise<Res> =>
  srv.json(`/api/v1/merchant/stores/demo-store/orders/${orderId}/reconcile`, { method: "POST", headers: owner, body: { action: "refund" } });
const reject = (refundId: string): Promise<Res> => srv.json(`/api/v1/merchant/stores/demo-store/refunds/${refundId}/reject`, { method: "POST", headers: owner, body: {} });

test("a reject racing the retry of a refused reconciliation refund never loses a refund the processor paid, and never deadlocks", async () => {
  const ROUNDS = 30;
  const outcomes: string[] = [];
  const orders: string[] = [];
  for (let round = 0; round < ROUNDS; round++) {
    const c = await srv.json("/api/v1/agent/cart", { method: "POST", headers: key.headers, body: { items: [{ product_id: SKILLET, quantity: 1 }] } });
    const cartId: string = c.body.data.id;
    const r = await srv.json("/api/v1/agent/checkout", { method: "POST", headers: key.headers, body: { cartId, payment_method: "tok_amount_mismatch", idempotency_key: crypto.randomUUID() } });
    expect(r.status).toBe(409);
    const [o] = await srv.db.sql<{ id: string; intent_id: string }[]>`SELECT id, intent_id FROM orders WHERE cart_id = ${cartId}`;
    orders.push(o!.id);
    // The processor refuses the first reconciliation refund: the record is FAILED.
    await srv.db.sql`UPDATE sandbox_ledger_intents SET refunded_minor = amount_minor WHERE intent_id = ${o!.intent_id}`;
    const first = await reconcile(o!.id);
    await srv.db.sql`UPDATE sandbox_ledger_intents SET refunded_minor = 0 WHERE intent_id = ${o!.intent_id}`;
    expect(first.status).toBe(502);
    const refundId: string = first.body.details.refund_id;
    const [retry, rej] = await Promise.all([reconcile(o!.id), Bun.sleep(round % 7).then(() => reject(refundId))]);
    const [rec] = await srv.db.sql<{ status: string }[]>`SELECT status FROM order_refunds WHERE id = ${refundId}`;
    // The reject either won (REJECTED; the retry opened a new record and refunded it) or lost with the current status.
    const rejLine = rej.status === 200 ? `200 ${rej.body.data.status}` : `${rej.status} ${rej.body.code} ${rej.body.details?.status}`;
    outcomes.push(`retry ${retry.status} ${retry.body.data?.refund?.status ?? retry.body.code} | reject ${rejLine} | record ${rec!.status}`);
  }
  const allowed = new Set([
    "retry 200 REFUNDED | reject 200 REJECTED | record REJECTED",
    "retry 200 REFUNDED | reject 409 conflict APPROVED | record REFUNDED",
    "retry 200 REFUNDED | reject 409 conflict REFUNDED | record REFUNDED",
  ]);
  expect(outcomes.filter((x) => !allowed.has(x))).toEqual([]);
  // Money: what the processor paid back == the REFUNDED records == what the order counts, for every order.
  const rows = await srv.db.sql<{ id: string; status: string; reconciliation: string | null; order_refunded: number; records: number; processor: number }[]>`
    SELECT o.id, o.status, o.reconciliation, o.refunded_minor::int AS order_refunded,
      (SELECT COALESCE(sum(amount_minor), 0)::int FROM order_refunds r WHERE r.order_id = o.id AND r.status = 'REFUNDED') AS records,
      i.refunded_minor::int AS processor
    FROM orders o JOIN sandbox_ledger_intents i ON i.intent_id = o.intent_id WHERE o.id IN ${srv.db.sql(orders)}`;
  expect(rows.length).toBe(ROUNDS);
  for (const x of rows) {
    expect({ id: x.id, status: x.status, reconciliation: x.reconciliation, records: x.records, order: x.order_refunded }).toEqual({
      id: x.id,
      status: "canceled",
      reconciliation: null,
      records: x.processor,
      order: x.processor,
    });
    expect(x.processor).toBeGreaterThan(0);
  }
}, 180_000);
