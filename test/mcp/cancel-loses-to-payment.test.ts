/**
 * MCP cancel_order that loses the race to the payment (audit A1 M1, as REST in test/http/cancel-loses-to-payment.test.ts):
 * the human approves the cancel of a pending order; meanwhile the buyer's approved payment completes the session, so
 * the cart refuses the cancel (SESSION_INACTIVE) and the store finds the order paid. The tool must answer REST's 409
 * ORDER_NOT_CANCELLABLE as a tool error (details.status paid, the refund asked for with onx_create_return), not success
 * with status "paid". The race is made deterministic: when the human is asked, a test transaction holds the order row
 * and the completion's settle waits on it; the approved cancel reads the order pending and queues behind the
 * completion's cart turn; then the row is let go.
 */
import { afterAll, beforeAll, expect, test } from "bun:test";
import { ALL_SCOPES, createKey, type TestKey } from "../helpers/agents.ts";
import { approvedPendingOrder as approvedPendingOrderOf, paymentWaitingOnOrder } from "../helpers/cancel-race.ts";
import { startServer, type TestServer } from "../helpers/server.ts";
import { accept, connect, errorOf, structured, type Connected } from "./helpers.ts";

const BOARD = "5befd987-79cd-540c-8a5d-2ba5a30aed41"; // DS-0011, untracked stock, demo-store
let srv: TestServer;
let key: TestKey;
let agent: Connected;
/** Runs when the human is asked, before the answer (accept) goes back. */
let whenAsked: (() => Promise<void>) | null = null;

beforeAll(async () => {
  srv = await startServer({ seed: true, config: { RATE_LIMITS_ENABLED: false } });
  key = await createKey(srv, { scopes: ALL_SCOPES, tier: "ENTERPRISE" });
  agent = await connect(srv, {
    headers: key.headers,
    elicit: async () => {
      const hook = whenAsked;
      whenAsked = null;
      if (hook) await hook();
      return accept();
    },
  });
}, 120_000);
afterAll(async () => {
  await agent?.close();
  await srv?.stop();
});

const checkout = (body: Record<string, unknown>) => srv.json("/api/v1/agent/checkout", { method: "POST", headers: key.headers, body });
const approvedPendingOrder = () => approvedPendingOrderOf(srv, key, BOARD);

test("cancel_order approved while the payment completes is the tool error ORDER_NOT_CANCELLABLE (status paid, onx_create_return), and the order stays paid", async () => {
  const { orderId, retry } = await approvedPendingOrder();
  const lock = await srv.db.sql.reserve();
  let paying: Promise<{ status: number; body: any }> | undefined;
  let asked!: () => void;
  const askedNow = new Promise<void>((r) => (asked = r));
  whenAsked = async () => {
    // The summary read the order pending (a question is asked only for a cancellable order). Now the payment runs
    // and its settle waits on the order row.
    ({ paying } = await paymentWaitingOnOrder(srv, lock, orderId, retry));
    asked();
  };
  try {
    const canceling = agent.call("cancel_order", { order_id: orderId, reason: "changed my mind" });
    await askedNow;
    // the approved cancel reads the order (pending: a plain read is not blocked by the row lock) and queues behind the completion's cart turn
    await Bun.sleep(400);
    await lock`COMMIT`;
    const paid = await paying!;
    const canceled = await canceling;
    expect(paid.status).toBe(200);
    expect(paid.body.data.status).toBe("COMPLETED");

    const e = errorOf(canceled);
    expect(e).toMatchObject({
      code: "ORDER_NOT_CANCELLABLE",
      remedy: "human_decides",
      retryable: false,
      details: { status: "paid", order_id: orderId, refund_tool: "onx_create_return" },
    });
    expect(e.message).toBe("The order is paid; an agent may cancel only pending orders. To get the money back, request a refund with onx_create_return (the merchant approves it).");
    // the answer a cancel that reads the order paid first gets (before the human is asked)
    const again = errorOf(await agent.call("cancel_order", { order_id: orderId }));
    expect({ code: again.code, message: again.message, details: again.details }).toEqual({ code: e.code, message: e.message, details: e.details });
  } finally {
    lock.release();
  }
  const [o] = await srv.db.sql<{ status: string; refunded_minor: number }[]>`SELECT status, refunded_minor::int AS refunded_minor FROM orders WHERE id = ${orderId}`;
  expect(o).toEqual({ status: "paid", refunded_minor: 0 });
  expect(await srv.db.sql`SELECT id FROM order_refunds WHERE order_id = ${orderId}`).toHaveLength(0);
}, 60_000);

test("a pending order canceled over MCP without a race is still canceled (the shared cancel's success)", async () => {
  const c = await srv.json("/api/v1/agent/cart", { method: "POST", headers: key.headers, body: { items: [{ product_id: BOARD, quantity: 1 }] } });
  const w = await checkout({ cartId: c.body.data.id, payment_method: "tok_needs_approval", idempotency_key: crypto.randomUUID() });
  expect(w.status).toBe(202);
  const [o] = await srv.db.sql<{ id: string }[]>`SELECT id FROM orders WHERE cart_id = ${c.body.data.id}`;
  const r = await agent.call("cancel_order", { order_id: o!.id });
  expect(r.isError).toBeFalsy();
  expect(structured(r)).toEqual({ order_id: o!.id, status: "canceled" });
  const [row] = await srv.db.sql`SELECT status FROM orders WHERE id = ${o!.id}`;
  expect(row).toEqual({ status: "canceled" });
}, 60_000);
