/**
 * Auditor D (LOW): a merchant's money decisions are not safe to repeat. The merchant API has no idempotency key, so
 * the only way to recover from a lost answer (a gateway or actor host killed after the turn committed, a timeout, a
 * double click in an integration) is to send the same request again; that repeat is answered 409 `conflict` ("approve
 * is not allowed on a REFUNDED refund", "cancel is not allowed on a canceled order") although the first request did
 * exactly what was asked. The agent's repeated cancel was made idempotent for this reason (review RC-3,
 * docs/checkout.md "A repeated agent cancel is idempotent"); the merchant's approve and cancel were not. These tests
 * state the expected answer (the same result again) and fail today.
 */
import { beforeAll, expect, test } from "bun:test";
import { ALL_SCOPES, createKey, placeOrder, type TestKey } from "../helpers/agents.ts";
import { useServer } from "../helpers/server.ts";

const BOARD = "5befd987-79cd-540c-8a5d-2ba5a30aed41"; // untracked, demo-store
const srv = useServer({ seed: true, config: { RATE_LIMITS_ENABLED: false }, admin: true });
let key: TestKey;
beforeAll(async () => {
  key = await createKey(srv, { scopes: ALL_SCOPES });
}, 120_000);
const merchant = (path: string, body: unknown = {}) =>
  srv.json(`/api/v1/merchant/stores/demo-store${path}`, { method: "POST", headers: { authorization: `Bearer ${srv.admin}` }, body });

test("a merchant's repeated approve of a refund it approved answers the refund (REFUNDED), not 409", async () => {
  const orderId = await placeOrder(srv, key, BOARD, "tok_approve");
  const asked = await srv.json(`/api/v1/agent/orders/${orderId}/refund`, { method: "POST", headers: key.headers, body: { amount: 500 } });
  expect(asked.status).toBe(201);
  const refundId = asked.body.data.refund_id as string;
  const first = await merchant(`/refunds/${refundId}/approve`);
  expect(first.status).toBe(200);
  expect(first.body.data.status).toBe("REFUNDED");
  // the answer was lost; the merchant's client sends the same request again
  const repeat = await merchant(`/refunds/${refundId}/approve`);
  expect({ status: repeat.status, refund: repeat.body.data?.status ?? repeat.body.error }).toEqual({ status: 200, refund: "REFUNDED" });
  const [{ n }] = await srv.db.sql<{ n: number }[]>`SELECT count(*)::int AS n FROM order_refunds WHERE order_id = ${orderId} AND status = 'REFUNDED'`;
  expect(n).toBe(1);
});

test("two concurrent approves of one refund (a double click) both answer the refund", async () => {
  const orderId = await placeOrder(srv, key, BOARD, "tok_approve");
  const asked = await srv.json(`/api/v1/agent/orders/${orderId}/refund`, { method: "POST", headers: key.headers, body: { amount: 500 } });
  const refundId = asked.body.data.refund_id as string;
  const both = await Promise.all([merchant(`/refunds/${refundId}/approve`), merchant(`/refunds/${refundId}/approve`)]);
  expect(both.map((r) => r.status)).toEqual([200, 200]);
});

test("a merchant's repeated cancel of a paid order it canceled answers the cancel with its refund, not 409", async () => {
  const orderId = await placeOrder(srv, key, BOARD, "tok_approve");
  const first = await merchant(`/orders/${orderId}/status`, { status: "canceled" });
  expect(first.status).toBe(200);
  expect(first.body.data).toMatchObject({ status: "canceled", refund: { status: "REFUNDED" } });
  const repeat = await merchant(`/orders/${orderId}/status`, { status: "canceled" });
  expect({ status: repeat.status, body: repeat.status === 200 ? repeat.body.data : repeat.body.error }).toEqual({ status: 200, body: first.body.data });
});

// ----- engineer C: the fix's other sites and its limits -----

const decide = (refundId: string, d: "approve" | "reject") => merchant(`/refunds/${refundId}/${d}`);
const history = async (orderId: string) =>
  (await srv.db.sql<{ type: string }[]>`SELECT type FROM order_events WHERE order_id = ${orderId} ORDER BY id`).map((e) => e.type);
const statusEvents = async (orderId: string) =>
  (await srv.db.sql<{ n: number }[]>`SELECT count(*)::int AS n FROM webhook_events WHERE kind = 'order.status_changed' AND payload->>'orderId' = ${orderId}`)[0]!.n;
const processorRefunded = async (orderId: string) =>
  (await srv.db.sql<{ refunded_minor: number }[]>`
    SELECT l.refunded_minor::int FROM sandbox_ledger_intents l JOIN orders o ON o.capture_ref = l.capture_ref WHERE o.id = ${orderId}`)[0]!.refunded_minor;

/** Runs `run` while the REFUNDED write of a refund fails once (as if the process died after the processor answered). */
async function failRefundedWrite<T>(run: () => Promise<T>): Promise<T> {
  await srv.db.sql.unsafe(`CREATE OR REPLACE FUNCTION f_test_c_fail_refunded() RETURNS trigger LANGUAGE plpgsql AS $$
      BEGIN RAISE EXCEPTION 'injected fault after the processor refunded'; END $$;
    CREATE TRIGGER f_test_c_fail_refunded BEFORE UPDATE ON order_refunds FOR EACH ROW WHEN (NEW.status = 'REFUNDED') EXECUTE FUNCTION f_test_c_fail_refunded();`);
  try {
    return await run();
  } finally {
    await srv.db.sql.unsafe(`DROP TRIGGER f_test_c_fail_refunded ON order_refunds`);
  }
}

test("a merchant's repeated cancel whose first call died before the refund was recorded drives the refund to REFUNDED and answers it", async () => {
  const orderId = await placeOrder(srv, key, BOARD, "tok_approve");
  const first = await failRefundedWrite(() => merchant(`/orders/${orderId}/status`, { status: "canceled" }));
  expect(first.status).toBe(500);
  const [stuck] = await srv.db.sql<{ id: string; status: string; amount_minor: number }[]>`
    SELECT id, status, amount_minor::int FROM order_refunds WHERE order_id = ${orderId}`;
  expect(stuck!.status).toBe("APPROVED");
  const repeat = await merchant(`/orders/${orderId}/status`, { status: "canceled" });
  expect(repeat.status).toBe(200);
  expect(repeat.body.data).toMatchObject({ order_id: orderId, status: "canceled", refund: { refund_id: stuck!.id, status: "REFUNDED", amount_minor: stuck!.amount_minor } });
  const [o] = await srv.db.sql<{ status: string; refunded_minor: number; total_minor: number }[]>`
    SELECT status, refunded_minor::int, total_minor::int FROM orders WHERE id = ${orderId}`;
  expect(o!.refunded_minor).toBe(o!.total_minor);
  expect(await processorRefunded(orderId)).toBe(o!.total_minor);
  expect((await history(orderId)).filter((t) => t === "cancel")).toEqual(["cancel"]);
});

test("a merchant's repeated fulfil, ship and deliver answer 200 with the order's status, without a second history row or webhook event", async () => {
  const orderId = await placeOrder(srv, key, BOARD, "tok_approve");
  for (const status of ["fulfilled", "shipped", "delivered"]) {
    const first = await merchant(`/orders/${orderId}/status`, { status });
    expect(first.status).toBe(200);
    const before = { events: await history(orderId), webhooks: await statusEvents(orderId) };
    const repeat = await merchant(`/orders/${orderId}/status`, { status });
    expect({ status: repeat.status, body: repeat.body }).toEqual({ status: 200, body: first.body });
    expect({ events: await history(orderId), webhooks: await statusEvents(orderId) }).toEqual(before);
  }
  // a move the order is past is still refused
  const back = await merchant(`/orders/${orderId}/status`, { status: "shipped" });
  expect({ status: back.status, code: back.body.code, details: back.body.details }).toMatchObject({ status: 409, code: "conflict", details: { status: "delivered", event: "ship" } });
});

test("a merchant's repeated reject answers the REJECTED refund; an approve of a rejected refund and a reject of a refunded one stay 409", async () => {
  const orderId = await placeOrder(srv, key, BOARD, "tok_approve");
  const a = await srv.json(`/api/v1/agent/orders/${orderId}/refund`, { method: "POST", headers: key.headers, body: { amount: 300 } });
  const b = await srv.json(`/api/v1/agent/orders/${orderId}/refund`, { method: "POST", headers: key.headers, body: { amount: 400 } });
  const rejected = await decide(a.body.data.refund_id, "reject");
  expect(rejected.status).toBe(200);
  expect(rejected.body.data.status).toBe("REJECTED");
  const again = await decide(a.body.data.refund_id, "reject");
  expect({ status: again.status, body: again.body }).toEqual({ status: 200, body: rejected.body });
  const approveRejected = await decide(a.body.data.refund_id, "approve");
  expect({ status: approveRejected.status, code: approveRejected.body.code, details: approveRejected.body.details }).toEqual({
    status: 409,
    code: "conflict",
    details: { status: "REJECTED", event: "approve" },
  });
  expect((await decide(b.body.data.refund_id, "approve")).body.data.status).toBe("REFUNDED");
  const rejectRefunded = await decide(b.body.data.refund_id, "reject");
  expect({ status: rejectRefunded.status, code: rejectRefunded.body.code, details: rejectRefunded.body.details }).toEqual({
    status: 409,
    code: "conflict",
    details: { status: "REFUNDED", event: "reject" },
  });
  expect(await processorRefunded(orderId)).toBe(400);
});

test("a reject of a request the merchant's cancel superseded stays 409: the merchant did not reject it", async () => {
  const orderId = await placeOrder(srv, key, BOARD, "tok_approve");
  const open = await srv.json(`/api/v1/agent/orders/${orderId}/refund`, { method: "POST", headers: key.headers, body: { amount: 300 } });
  expect((await merchant(`/orders/${orderId}/status`, { status: "canceled" })).status).toBe(200);
  const r = await decide(open.body.data.refund_id, "reject");
  expect({ status: r.status, code: r.body.code, details: r.body.details }).toEqual({ status: 409, code: "conflict", details: { status: "REJECTED", event: "reject" } });
});

test("a merchant's fulfil of an order it canceled stays 409 conflict", async () => {
  const orderId = await placeOrder(srv, key, BOARD, "tok_approve");
  expect((await merchant(`/orders/${orderId}/status`, { status: "canceled" })).status).toBe(200);
  const r = await merchant(`/orders/${orderId}/status`, { status: "fulfilled" });
  expect({ status: r.status, code: r.body.code }).toEqual({ status: 409, code: "conflict" });
});

test("a merchant's cancel of a pending order the agent canceled stays 409 conflict: the merchant did not cancel it", async () => {
  const c = await srv.json("/api/v1/agent/cart", { method: "POST", headers: key.headers, body: { items: [{ product_id: BOARD, quantity: 1 }] } });
  const w = await srv.json("/api/v1/agent/checkout", {
    method: "POST",
    headers: key.headers,
    body: { cartId: c.body.data.id, payment_method: "tok_needs_approval", idempotency_key: crypto.randomUUID() },
  });
  expect(w.status).toBe(202);
  const [o] = await srv.db.sql<{ id: string }[]>`SELECT id FROM orders WHERE cart_id = ${c.body.data.id} AND status = 'pending'`;
  const agent = await srv.json(`/api/v1/agent/orders/${o!.id}/cancel`, { method: "POST", headers: key.headers, body: {} });
  expect(agent.status).toBe(200);
  const r = await merchant(`/orders/${o!.id}/status`, { status: "canceled" });
  expect({ status: r.status, code: r.body.code, details: r.body.details }).toEqual({
    status: 409,
    code: "conflict",
    details: { status: "canceled", event: "cancel", actor: "merchant" },
  });
});

test("the OpenAPI document says that the merchant's status move and refund decision are safe to repeat, and which repeats stay 409", async () => {
  const r = await srv.json("/api/v1/openapi.json");
  expect(r.status).toBe(200);
  const move = r.body.paths["/api/v1/merchant/stores/{slug}/orders/{id}/status"].post;
  const decision = r.body.paths["/api/v1/merchant/stores/{slug}/refunds/{id}/{decision}"].post;
  expect(move.description).toStartWith("canceled on a pending agent order cancels its checkout session");
  expect(move.description).toContain("Safe to repeat: a move to the status the order already has, when the merchant's own move put it there, answers 200");
  expect(move.description).toContain("stay 409 conflict");
  expect(move.responses["200"].description).toContain("for a repeat of the merchant's own move");
  expect(decision.description).toContain("Safe to repeat: approve of a REFUNDED refund and reject of a refund a merchant rejected answer 200");
  expect(decision.description).toContain("stays 409 conflict with details.status");
});

test("two concurrent cancels of one paid order (a double click) both answer the cancel with the one refund", async () => {
  const orderId = await placeOrder(srv, key, BOARD, "tok_approve");
  const both = await Promise.all([merchant(`/orders/${orderId}/status`, { status: "canceled" }), merchant(`/orders/${orderId}/status`, { status: "canceled" })]);
  expect(both.map((r) => r.status)).toEqual([200, 200]);
  expect(both[0]!.body).toEqual(both[1]!.body);
  expect(both[0]!.body.data).toMatchObject({ order_id: orderId, status: "canceled", refund: { status: "REFUNDED" } });
  const [{ n }] = await srv.db.sql<{ n: number }[]>`SELECT count(*)::int AS n FROM order_refunds WHERE order_id = ${orderId}`;
  expect(n).toBe(1);
  expect((await history(orderId)).filter((t) => t === "cancel")).toEqual(["cancel"]);
});

test("a merchant's repeated cancel of a pending agent order it canceled through the buyer's checkout answers 200 canceled again", async () => {
  const c = await srv.json("/api/v1/agent/cart", { method: "POST", headers: key.headers, body: { items: [{ product_id: BOARD, quantity: 1 }] } });
  const w = await srv.json("/api/v1/agent/checkout", {
    method: "POST",
    headers: key.headers,
    body: { cartId: c.body.data.id, payment_method: "tok_needs_approval", idempotency_key: crypto.randomUUID() },
  });
  expect(w.status).toBe(202);
  const [o] = await srv.db.sql<{ id: string }[]>`SELECT id FROM orders WHERE cart_id = ${c.body.data.id} AND status = 'pending'`;
  const first = await merchant(`/orders/${o!.id}/status`, { status: "canceled" });
  expect(first.status).toBe(200);
  expect(first.body.data).toEqual({ order_id: o!.id, status: "canceled" });
  const repeat = await merchant(`/orders/${o!.id}/status`, { status: "canceled" });
  expect({ status: repeat.status, body: repeat.body }).toEqual({ status: 200, body: first.body });
  expect((await history(o!.id)).filter((t) => t === "cancel")).toEqual(["cancel"]);
  // the agent's cancel still tells that it did not cancel it
  const agent = await srv.json(`/api/v1/agent/orders/${o!.id}/cancel`, { method: "POST", headers: key.headers, body: {} });
  expect({ status: agent.status, code: agent.body.code }).toEqual({ status: 409, code: "ORDER_NOT_CANCELLABLE" });
});
