/**
 * A cancel that loses the race to the payment (audit A1 M1): the order is read `pending`, then the buyer's approved
 * payment completes the session before the cancel reaches the cart, so the cart answers SESSION_INACTIVE and the
 * store finds the order paid. The race is made deterministic: a test transaction holds the order row, so the
 * completion's settle waits on it while the cancel reads the order pending and queues behind the completion's turn;
 * then the row is let go.
 * - the agent's cancel is 409 ORDER_NOT_CANCELLABLE with details.status paid and the refund route (docs/checkout.md
 *   "Agent cancels"), not 200 with status paid;
 * - the merchant's cancel falls through to the cancel of a paid order: canceled, the capture refunded.
 */
import { beforeAll, describe, expect, test } from "bun:test";
import { ALL_SCOPES, createKey, type TestKey } from "../helpers/agents.ts";
import { approvedPendingOrder as approvedPendingOrderOf, paymentWaitingOnOrder } from "../helpers/cancel-race.ts";
import { useServer } from "../helpers/server.ts";

const BOARD = "5befd987-79cd-540c-8a5d-2ba5a30aed41"; // DS-0011, untracked stock, demo-store
const srv = useServer({ seed: true, config: { RATE_LIMITS_ENABLED: false }, admin: true });
let key: TestKey;

beforeAll(async () => {
  key = await createKey(srv, { scopes: ALL_SCOPES });
}, 120_000);

const approvedPendingOrder = () => approvedPendingOrderOf(srv, key, BOARD);

/**
 * Runs `cancel` after the order was read pending and while the completion (`retry`) waits to write the order paid;
 * the completion goes on once the cancel is queued behind it. Returns both answers.
 */
async function cancelBehindPayment(orderId: string, retry: () => Promise<{ status: number; body: any }>, cancel: () => Promise<{ status: number; body: any }>) {
  const lock = await srv.db.sql.reserve();
  try {
    const { paying } = await paymentWaitingOnOrder(srv, lock, orderId, retry);
    const canceling = cancel();
    // the cancel reads the order (pending: a plain read is not blocked by the row lock) and queues behind the completion's cart turn
    await Bun.sleep(400);
    await lock`COMMIT`;
    return { paid: await paying, canceled: await canceling };
  } finally {
    lock.release();
  }
}

describe("a cancel that loses the race to the payment", () => {
  test("the agent's cancel is 409 ORDER_NOT_CANCELLABLE with details.status paid and the refund route, and the order stays paid", async () => {
    const { orderId, retry } = await approvedPendingOrder();
    const { paid, canceled } = await cancelBehindPayment(orderId, retry, () =>
      srv.json(`/api/v1/agent/orders/${orderId}/cancel`, { method: "POST", headers: key.headers, body: {} }),
    );
    expect(paid.status).toBe(200);
    expect(paid.body.data.status).toBe("COMPLETED");
    expect(canceled.status).toBe(409);
    expect(canceled.body).toMatchObject({
      success: false,
      code: "ORDER_NOT_CANCELLABLE",
      details: { status: "paid", order_id: orderId, refund_route: `POST /api/v1/agent/orders/${orderId}/refund` },
    });
    const [o] = await srv.db.sql<{ status: string; refunded_minor: number }[]>`SELECT status, refunded_minor FROM orders WHERE id = ${orderId}`;
    expect(o).toEqual({ status: "paid", refunded_minor: 0 });
    expect(await srv.db.sql`SELECT id FROM order_refunds WHERE order_id = ${orderId}`).toHaveLength(0);
  }, 60_000);

  test("the merchant's cancel becomes the cancel of the paid order: 200 canceled with its refund, the capture refunded", async () => {
    const { orderId, retry } = await approvedPendingOrder();
    const { paid, canceled } = await cancelBehindPayment(orderId, retry, () =>
      srv.json(`/api/v1/merchant/stores/demo-store/orders/${orderId}/status`, { method: "POST", headers: { authorization: `Bearer ${srv.admin}` }, body: { status: "canceled" } }),
    );
    expect(paid.status).toBe(200);
    expect(paid.body.data.status).toBe("COMPLETED");
    expect(canceled.status).toBe(200);
    expect(canceled.body.success).toBe(true);
    expect(canceled.body.data).toMatchObject({ order_id: orderId, status: "canceled", refund: { status: "REFUNDED" } });
    const [o] = await srv.db.sql<{ status: string; total_minor: number; refunded_minor: number; intent_id: string }[]>`
      SELECT status, total_minor, refunded_minor, intent_id FROM orders WHERE id = ${orderId}`;
    expect(o!.status).toBe("canceled");
    expect(Number(o!.refunded_minor)).toBe(Number(o!.total_minor));
    const [ledger] = await srv.db.sql<{ state: string; refunded_minor: number }[]>`SELECT state, refunded_minor FROM sandbox_ledger_intents WHERE intent_id = ${o!.intent_id}`;
    expect(Number(ledger!.refunded_minor)).toBe(Number(o!.total_minor));
  }, 60_000);
});
