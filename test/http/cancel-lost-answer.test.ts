/**
 * The agent's cancel reports success only when it canceled the order (audit K-3). Made deterministic as in
 * cancel-loses-to-payment.test.ts: a test transaction holds the order row, so the completion of the buyer's approved
 * payment waits on it; the merchant's cancel and then the agent's cancel read the order pending and queue behind
 * the completion. Once the row is let go the order is paid, the merchant's cancel cancels it and refunds the capture,
 * and the agent's cancel finds it canceled by someone else. Before, the agent was answered 200
 * `{status: canceled, refund: null}` for an order that was charged and refunded.
 */
import { beforeAll, expect, test } from "bun:test";
import { ALL_SCOPES, createKey, type TestKey } from "../helpers/agents.ts";
import { approvedPendingOrder, paymentWaitingOnOrder } from "../helpers/cancel-race.ts";
import { useServer } from "../helpers/server.ts";

const BOARD = "5befd987-79cd-540c-8a5d-2ba5a30aed41"; // DS-0011, untracked stock, demo-store
const srv = useServer({ seed: true, config: { RATE_LIMITS_ENABLED: false }, admin: true });
let key: TestKey;

beforeAll(async () => {
  key = await createKey(srv, { scopes: ALL_SCOPES });
}, 120_000);

test("an agent's cancel that lost to the payment and to the merchant's cancel is 409 ORDER_NOT_CANCELLABLE with status canceled, not 200 with refund null", async () => {
  const { orderId, retry } = await approvedPendingOrder(srv, key, BOARD);
  const lock = await srv.db.sql.reserve();
  let paid, merchant, agent;
  try {
    const { paying } = await paymentWaitingOnOrder(srv, lock, orderId, retry);
    const merchantCanceling = srv.json(`/api/v1/merchant/stores/demo-store/orders/${orderId}/status`, {
      method: "POST",
      headers: { authorization: `Bearer ${srv.admin}` },
      body: { status: "canceled" },
    });
    await Bun.sleep(300);
    const agentCanceling = srv.json(`/api/v1/agent/orders/${orderId}/cancel`, { method: "POST", headers: key.headers, body: {} });
    await Bun.sleep(400);
    await lock`COMMIT`;
    [paid, merchant, agent] = await Promise.all([paying, merchantCanceling, agentCanceling]);
  } finally {
    lock.release();
  }
  expect(paid.status).toBe(200);
  expect(paid.body.data.status).toBe("COMPLETED");
  expect(merchant.status).toBe(200);
  expect(merchant.body.data).toMatchObject({ order_id: orderId, status: "canceled", refund: { status: "REFUNDED" } });
  expect(agent.status).toBe(409);
  expect(agent.body).toMatchObject({ success: false, code: "ORDER_NOT_CANCELLABLE", details: { status: "canceled", order_id: orderId } });
  const [o] = await srv.db.sql<{ status: string; total_minor: number; refunded_minor: number }[]>`SELECT status, total_minor::int, refunded_minor::int FROM orders WHERE id = ${orderId}`;
  expect(o!.status).toBe("canceled");
  expect(o!.refunded_minor).toBe(o!.total_minor);
}, 60_000);
