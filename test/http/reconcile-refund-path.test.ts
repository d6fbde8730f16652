/**
 * The reconciliation refund is an ordinary refund (review R1-2, R1-3, R1-4): one record per order, committed APPROVED
 * with the store's re-drive reminder and driven by the store's refund driver; the order is canceled and its hold
 * released only once the refund is REFUNDED, so a refusal by the processor leaves the capture resolvable (retry the
 * same record, or accept). An accepted capture of another amount than the total bounds the order's refunds.
 * In a multi-store checkout, one merchant's reconciliation refund with another merchant's leg unpaid ends the session
 * FAILED at once (review R5-3): the refunded order is canceled, so the session could never be paid again.
 */
import { beforeAll, describe, expect, test } from "bun:test";
import { ALL_SCOPES, createKey, login, type TestKey } from "../helpers/agents.ts";
import { useServer } from "../helpers/server.ts";

const SKILLET = "399d72f1-303c-5cf3-bc6a-5c82714b85d4"; // tracked stock, demo-store
const GREEN = "4ef5cf23-f828-5e3e-bd0b-833653bc4c5a"; // greenleaf-living
const srv = useServer({ seed: true });
let key: TestKey;
let owner: Record<string, string>;

beforeAll(async () => {
  key = await createKey(srv, { scopes: ALL_SCOPES, tier: "ENTERPRISE" });
  owner = { authorization: `Bearer ${await login(srv)}` }; // the demo store is the operator's
}, 120_000);

const base = "/api/v1/merchant/stores/demo-store/orders";
const reconcile = (orderId: string, action: "accept" | "refund") => srv.json(`${base}/${orderId}/reconcile`, { method: "POST", headers: owner, body: { action } });
const stock = async () => (await srv.db.sql<{ s: number; r: number }[]>`SELECT stock_quantity AS s, reserved_quantity AS r FROM products WHERE id = ${SKILLET}`)[0]!;
const orderRow = async (id: string) =>
  (await srv.db.sql<{ status: string; reconciliation: string | null; refunded_minor: number; total_minor: number; captured_minor: number | null }[]>`
    SELECT status, reconciliation, refunded_minor::int, total_minor::int, captured_minor::int FROM orders WHERE id = ${id}`)[0]!;
const refundsOf = async (orderId: string) => [
  ...(await srv.db.sql<{ id: string; status: string; amount_minor: number }[]>`SELECT id, status, amount_minor::int FROM order_refunds WHERE order_id = ${orderId} ORDER BY created_at`),
];
const ledger = async (intentId: string) =>
  (await srv.db.sql<{ amount_minor: number; refunded_minor: number }[]>`SELECT amount_minor::int, refunded_minor::int FROM sandbox_ledger_intents WHERE intent_id = ${intentId}`)[0]!;
const storeReminder = async () =>
  (await srv.db.sql<{ due_at: Date }[]>`SELECT due_at FROM actor_reminders WHERE kind = 'store' AND id = 'demo-store' AND name = 'refunds'`)[0];

/** A one-skillet checkout that ends escalated (409): the order and its processor intent. */
async function escalated(token: "tok_finalization_fails" | "tok_amount_mismatch") {
  const c = await srv.json("/api/v1/agent/cart", { method: "POST", headers: key.headers, body: { items: [{ product_id: SKILLET, quantity: 1 }] } });
  const cartId: string = c.body.data.id;
  const r = await srv.json("/api/v1/agent/checkout", { method: "POST", headers: key.headers, body: { cartId, payment_method: token, idempotency_key: crypto.randomUUID() } });
  expect(r.status).toBe(409);
  const [o] = await srv.db.sql<{ id: string; intent_id: string }[]>`SELECT id, intent_id FROM orders WHERE cart_id = ${cartId}`;
  return { cartId, orderId: o!.id, intentId: o!.intent_id };
}

/** The sandbox processor refuses any refund of this capture (exceeds_captured) until `allow`. */
const refuseRefunds = (intentId: string) => srv.db.sql`UPDATE sandbox_ledger_intents SET refunded_minor = amount_minor WHERE intent_id = ${intentId}`;
const allowRefunds = (intentId: string) => srv.db.sql`UPDATE sandbox_ledger_intents SET refunded_minor = 0 WHERE intent_id = ${intentId}`;

async function until(check: () => Promise<boolean>, ms = 10_000): Promise<void> {
  const end = Date.now() + ms;
  while (Date.now() < end) {
    if (await check()) return;
    await Bun.sleep(100);
  }
  throw new Error("timed out");
}

describe("a reconciliation refund the processor refuses", () => {
  test("leaves the order pending and flagged with its hold, keeps one refund record however often it is retried, and the capture can still be accepted", async () => {
    const before = await stock();
    const e = await escalated("tok_finalization_fails");
    await refuseRefunds(e.intentId);
    const ids = new Set<string>();
    for (let i = 0; i < 3; i++) {
      const r = await reconcile(e.orderId, "refund");
      expect(r.status).toBe(502);
      expect(r.body).toMatchObject({ code: "UPSTREAM_ERROR", details: { order_id: e.orderId, refund_status: "FAILED", reason: "exceeds_captured" } });
      ids.add(r.body.details.refund_id);
    }
    expect(ids.size).toBe(1);
    expect(await refundsOf(e.orderId)).toEqual([expect.objectContaining({ id: [...ids][0], status: "FAILED" })]);
    expect(await orderRow(e.orderId)).toMatchObject({ status: "pending", reconciliation: "finalization_failed" });
    expect((await stock()).r).toBe(before.r + 1);

    const a = await reconcile(e.orderId, "accept");
    expect(a.status).toBe(200);
    expect(a.body.data).toMatchObject({ order_status: "paid", checkout_status: "COMPLETED" });
    expect(await stock()).toEqual({ s: before.s - 1, r: before.r });
  });

  test("once the processor takes it, a retry refunds through the same record: order canceled, hold released, capture returned once", async () => {
    const before = await stock();
    const e = await escalated("tok_finalization_fails");
    await refuseRefunds(e.intentId);
    const refused = await reconcile(e.orderId, "refund");
    expect(refused.status).toBe(502);
    await allowRefunds(e.intentId);

    const r = await reconcile(e.orderId, "refund");
    expect(r.status).toBe(200);
    expect(r.body.data).toMatchObject({ order_status: "canceled", reconciliation: null, checkout_status: "CANCELED", cart_status: "OPEN" });
    expect(r.body.data.refund).toMatchObject({ refund_id: refused.body.details.refund_id, status: "REFUNDED" });
    const l = await ledger(e.intentId);
    expect(l.refunded_minor).toBe(l.amount_minor);
    expect(await refundsOf(e.orderId)).toEqual([{ id: refused.body.details.refund_id, status: "REFUNDED", amount_minor: l.amount_minor }]);
    expect(await orderRow(e.orderId)).toMatchObject({ status: "canceled", refunded_minor: l.amount_minor });
    expect(await stock()).toEqual(before);
    // The same history as a merchant's cancel of a paid order: the cancel, then the refund's move with its id.
    const events = await srv.db.sql<{ type: string; from_status: string | null; to_status: string | null; data: { refund_id?: string } }[]>`
      SELECT type, from_status, to_status, data FROM order_events WHERE order_id = ${e.orderId} AND type IN ('cancel', 'refund_full') ORDER BY id`;
    expect(events.map((v) => [v.type, v.from_status, v.to_status])).toEqual([
      ["cancel", "pending", "canceled"],
      ["refund_full", "canceled", "canceled"],
    ]);
    expect(events[1]!.data.refund_id).toBe(refused.body.details.refund_id);
  });
});

describe("a reconciliation refund is driven like any other refund", () => {
  test("it is committed with the store's re-drive reminder, which finishes it after a fault; the merchant's next call then cancels the order", async () => {
    const e = await escalated("tok_finalization_fails");
    await srv.db.sql`DELETE FROM actor_reminders WHERE kind = 'store' AND id = 'demo-store' AND name = 'refunds'`;
    await srv.db.sql.unsafe(`CREATE OR REPLACE FUNCTION m_test_fail_refunded() RETURNS trigger LANGUAGE plpgsql AS $$
        BEGIN RAISE EXCEPTION 'injected fault after the processor refunded'; END $$;
      CREATE TRIGGER m_test_fail_refunded BEFORE UPDATE ON order_refunds FOR EACH ROW WHEN (NEW.status = 'REFUNDED') EXECUTE FUNCTION m_test_fail_refunded();`);
    try {
      expect((await reconcile(e.orderId, "refund")).status).toBe(500);
    } finally {
      await srv.db.sql.unsafe(`DROP TRIGGER m_test_fail_refunded ON order_refunds`);
    }
    const [r] = await refundsOf(e.orderId);
    expect(r!.status).toBe("APPROVED");
    expect(await storeReminder()).toBeDefined();
    expect(await orderRow(e.orderId)).toMatchObject({ status: "pending", reconciliation: "finalization_failed" });

    await srv.db.sql`UPDATE actor_reminders SET due_at = now() WHERE kind = 'store' AND id = 'demo-store' AND name = 'refunds'`;
    await until(async () => (await refundsOf(e.orderId))[0]!.status === "REFUNDED");
    const l = await ledger(e.intentId);
    expect(l.refunded_minor).toBe(l.amount_minor);

    const done = await reconcile(e.orderId, "refund");
    expect(done.status).toBe(200);
    expect(done.body.data).toMatchObject({ order_status: "canceled", checkout_status: "CANCELED", refund: { refund_id: r!.id, status: "REFUNDED" } });
    expect(await refundsOf(e.orderId)).toHaveLength(1);
    const [records] = await srv.db.sql<{ n: number }[]>`SELECT count(*)::int AS n FROM sandbox_ledger_refunds WHERE refund_id = ${r!.id}`;
    expect(records!.n).toBe(1);
    expect((await ledger(e.intentId)).refunded_minor).toBe(l.amount_minor);
  });
});

describe("an x402 capture waiting for reconciliation", () => {
  test("refunded is canceled as the merchant's to pay back (refund_by_merchant), with no refund record and no rail call (x402 rail label injected)", async () => {
    const before = await stock();
    const e = await escalated("tok_finalization_fails");
    // Stands in for a capture over x402 (the devnet is not part of this suite): only the rail label differs.
    await srv.db.sql`UPDATE orders SET payment_rail = 'x402' WHERE id = ${e.orderId}`;
    const r = await reconcile(e.orderId, "refund");
    expect(r.status).toBe(200);
    expect(r.body.data).toMatchObject({ order_status: "canceled", refund: null, refund_by_merchant: true, reconciliation: null, checkout_status: "CANCELED" });
    expect(await refundsOf(e.orderId)).toEqual([]);
    expect((await ledger(e.intentId)).refunded_minor).toBe(0);
    expect(await stock()).toEqual(before);
  });
});

describe("an over-capture the merchant accepts", () => {
  test("records what was captured, and canceling the order later refunds all of it, not only the total", async () => {
    const e = await escalated("tok_amount_mismatch");
    const captured = (await ledger(e.intentId)).amount_minor;
    const total = (await orderRow(e.orderId)).total_minor;
    expect(captured).toBeGreaterThan(total);
    const a = await reconcile(e.orderId, "accept");
    expect(a.status).toBe(200);
    expect(await orderRow(e.orderId)).toMatchObject({ status: "paid", captured_minor: captured });

    const m = await srv.json(`${base}/${e.orderId}/status`, { method: "POST", headers: owner, body: { status: "canceled" } });
    expect(m.status).toBe(200);
    expect(m.body.data.refund).toMatchObject({ status: "REFUNDED", amount_minor: captured });
    expect(await ledger(e.intentId)).toEqual({ amount_minor: captured, refunded_minor: captured });
    expect(await orderRow(e.orderId)).toMatchObject({ status: "canceled", refunded_minor: captured });
  });

  test("refunded on reconciliation instead, returns the whole capture and records it", async () => {
    const e = await escalated("tok_amount_mismatch");
    const captured = (await ledger(e.intentId)).amount_minor;
    const r = await reconcile(e.orderId, "refund");
    expect(r.status).toBe(200);
    expect(r.body.data.refund).toMatchObject({ status: "REFUNDED", amount_minor: captured });
    expect(await orderRow(e.orderId)).toMatchObject({ status: "canceled", captured_minor: captured, refunded_minor: captured });
  });
});

describe("a reconciliation refund in a multi-store checkout", () => {
  test("cancels the refunding merchant's order, and with another merchant's leg unpaid ends the session FAILED at once (it could never be paid again): the other order is canceled with its reason and its hold released", async () => {
    const c = await srv.json("/api/v1/agent/cart", {
      method: "POST",
      headers: key.headers,
      body: { items: [{ product_id: SKILLET, quantity: 1 }, { product_id: GREEN, quantity: 1 }] },
    });
    const cartId: string = c.body.data.id;
    const r = await srv.json("/api/v1/agent/checkout", {
      method: "POST",
      headers: key.headers,
      body: { cartId, idempotency_key: crypto.randomUUID(), payment_methods: { "demo-store": "tok_finalization_fails", "greenleaf-living": "tok_decline" } },
    });
    expect(r.status).toBe(409);
    const orders = await srv.db.sql<{ id: string; store_slug: string; status: string }[]>`SELECT id, store_slug, status FROM orders WHERE cart_id = ${cartId}`;
    const demo = orders.find((o) => o.store_slug === "demo-store")!;
    const green = orders.find((o) => o.store_slug === "greenleaf-living")!;
    expect(green.status).toBe("pending");

    const x = await reconcile(demo.id, "refund");
    expect(x.status).toBe(200);
    // Review R5-3 (superseding R1-1's "stays READY_FOR_PAYMENT" here): the refunded store's order is canceled and a
    // session's order ids are fixed, so no attempt of this session could pay; it fails now instead of on that attempt.
    expect(x.body.data).toMatchObject({ order_status: "canceled", checkout_status: "FAILED", cart_status: "OPEN" });
    expect((await orderRow(green.id)).status).toBe("canceled");
    const [ev] = await srv.db.sql<{ reason: string }[]>`SELECT data->>'reason' AS reason FROM order_events WHERE order_id = ${green.id} AND type = 'cancel'`;
    expect(ev!.reason).toBe("checkout_failed_merchant_refunded");
    const [t] = await srv.db.sql<{ n: number }[]>`SELECT count(*)::int AS n FROM actor_reminders WHERE kind = 'cart' AND id = ${cartId} AND name = 'session'`;
    expect(t!.n).toBe(0);
  });
});
