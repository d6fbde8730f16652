/**
 * The race of a cancel against the payment that completes a pending order (audit A1 M1), made deterministic for the
 * REST and MCP tests: the buyer has approved the payment at the link, a test transaction holds the order row, and
 * the completion's settle waits on it while the cancel reads the order pending and queues behind the completion.
 */
import { expect } from "bun:test";
import type { TestKey } from "./agents.ts";
import type { TestServer } from "./server.ts";

type Answer = { status: number; body: any };

/** A pending order whose buyer has approved the payment at the link: `retry` (the next checkout call) completes it. */
export async function approvedPendingOrder(srv: TestServer, key: TestKey, productId: string): Promise<{ orderId: string; retry: () => Promise<Answer> }> {
  const checkout = (body: Record<string, unknown>) => srv.json("/api/v1/agent/checkout", { method: "POST", headers: key.headers, body });
  const c = await srv.json("/api/v1/agent/cart", { method: "POST", headers: key.headers, body: { items: [{ product_id: productId, quantity: 1 }] } });
  expect(c.status).toBe(201);
  const cartId = c.body.data.id as string;
  const idem = crypto.randomUUID();
  const w = await checkout({ cartId, payment_method: "tok_needs_approval", idempotency_key: idem });
  expect(w.status).toBe(202);
  const [o] = await srv.db.sql<{ id: string; status: string }[]>`SELECT id, status FROM orders WHERE cart_id = ${cartId}`;
  expect(o!.status).toBe("pending");
  expect((await fetch(`${w.body.details.approval_url}/approve`, { method: "POST" })).status).toBe(200);
  const sid = w.body.details.checkout_session_id as string;
  return { orderId: o!.id, retry: () => checkout({ cartId, checkout_session_id: sid, idempotency_key: idem }) };
}

/**
 * Holds the order row in `lock`'s open transaction, starts the completion (`retry`) and returns once its settle waits
 * on the row, with the completion still running (`paying`: wrapped, so awaiting this does not wait for it). The caller
 * commits `lock` to let the completion go on.
 */
export async function paymentWaitingOnOrder(srv: TestServer, lock: Awaited<ReturnType<TestServer["db"]["sql"]["reserve"]>>, orderId: string, retry: () => Promise<Answer>): Promise<{ paying: Promise<Answer> }> {
  await lock`BEGIN`;
  await lock`SELECT id FROM orders WHERE id = ${orderId} FOR UPDATE`;
  const paying = retry();
  let waiting = false;
  for (let i = 0; i < 1_000 && !waiting; i++) {
    const [w] = await srv.db.sql<{ n: number }[]>`
      SELECT count(*)::int AS n FROM pg_stat_activity WHERE wait_event_type = 'Lock' AND pid <> pg_backend_pid() AND query ILIKE '%orders%'`;
    waiting = w!.n > 0;
    if (!waiting) await Bun.sleep(10);
  }
  expect(waiting).toBe(true);
  return { paying };
}
