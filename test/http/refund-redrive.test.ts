/**
 * A refund left APPROVED (audit D3): the processor refunded, then our write failed (injected: a trigger refuses the
 * REFUNDED update once, standing in for a crash or a lost connection at that point). The merchant's approve drives it
 * again, and so does the store's `refunds` reminder; either way the processor refunds exactly once.
 */
import { beforeAll, describe, expect, test } from "bun:test";
import { ALL_SCOPES, createKey, placeOrder, type TestKey } from "../helpers/agents.ts";
import { useServer } from "../helpers/server.ts";

const BOARD = "5befd987-79cd-540c-8a5d-2ba5a30aed41"; // untracked, demo-store
const srv = useServer({ seed: true, admin: true });
let key: TestKey;

beforeAll(async () => {
  key = await createKey(srv, { scopes: ALL_SCOPES });
}, 120_000);

const propose = (orderId: string, body: unknown) => srv.json(`/api/v1/agent/orders/${orderId}/refund`, { method: "POST", headers: key.headers, body });
const decide = (id: string, d: "approve" | "reject") =>
  srv.json(`/api/v1/merchant/stores/demo-store/refunds/${id}/${d}`, { method: "POST", headers: { authorization: `Bearer ${srv.admin}` } });

async function failRefundedWriteOnce<T>(run: () => Promise<T>): Promise<T> {
  await srv.db.sql.unsafe(`CREATE OR REPLACE FUNCTION f_test_fail_refunded() RETURNS trigger LANGUAGE plpgsql AS $$
      BEGIN RAISE EXCEPTION 'injected fault after the processor refunded'; END $$;
    CREATE TRIGGER f_test_fail_refunded BEFORE UPDATE ON order_refunds FOR EACH ROW WHEN (NEW.status = 'REFUNDED') EXECUTE FUNCTION f_test_fail_refunded();`);
  try {
    return await run();
  } finally {
    await srv.db.sql.unsafe(`DROP TRIGGER f_test_fail_refunded ON order_refunds`);
  }
}

const refundRow = async (id: string) => (await srv.db.sql<{ status: string }[]>`SELECT status FROM order_refunds WHERE id = ${id}`)[0];
const processor = async (orderId: string, refundId: string) => {
  const [l] = await srv.db.sql<{ refunded_minor: number }[]>`
    SELECT l.refunded_minor FROM sandbox_ledger_intents l JOIN orders o ON o.capture_ref = l.capture_ref WHERE o.id = ${orderId}`;
  const [r] = await srv.db.sql<{ n: number }[]>`SELECT count(*)::int AS n FROM sandbox_ledger_refunds WHERE refund_id = ${refundId}`;
  return { refundedMinor: l.refunded_minor, records: r.n };
};
const reminder = async () =>
  (await srv.db.sql<{ due_at: Date }[]>`SELECT due_at FROM actor_reminders WHERE kind = 'store' AND id = 'demo-store' AND name = 'refunds'`)[0];

async function until(check: () => Promise<boolean>, ms = 10_000): Promise<void> {
  const end = Date.now() + ms;
  while (Date.now() < end) {
    if (await check()) return;
    await Bun.sleep(100);
  }
  throw new Error("timed out");
}

describe("a refund left APPROVED is driven again", () => {
  test("the merchant's second approve drives the stuck refund to REFUNDED, and the processor refunded it once", async () => {
    const orderId = await placeOrder(srv, key, BOARD, "tok_approve");
    const p = await propose(orderId, { amount: 500, reason: "scratched" });
    expect(p.status).toBe(201);
    const refundId = p.body.data.refund_id;
    const first = await failRefundedWriteOnce(() => decide(refundId, "approve"));
    expect(first.status).toBe(500);
    expect((await refundRow(refundId)).status).toBe("APPROVED");
    expect(await reminder()).toBeDefined();
    expect(await processor(orderId, refundId)).toEqual({ refundedMinor: 500, records: 1 });

    const again = await decide(refundId, "approve");
    expect(again.status).toBe(200);
    expect(again.body.data).toMatchObject({ refund_id: refundId, status: "REFUNDED", amount_minor: 500 });
    const [o] = await srv.db.sql<{ status: string; refunded_minor: number }[]>`SELECT status, refunded_minor FROM orders WHERE id = ${orderId}`;
    expect(o).toEqual({ status: "paid", refunded_minor: 500 }); // a partial refund keeps the fulfilment status (audit A1 M3)
    expect(await processor(orderId, refundId)).toEqual({ refundedMinor: 500, records: 1 });
    // Nothing is left APPROVED: the reminder is gone with the turn that settled the refund.
    expect(await reminder()).toBeUndefined();
    // A third approve (the merchant's client retrying again) answers the refund as it is (audit D-1), moving nothing.
    const third = await decide(refundId, "approve");
    expect({ status: third.status, body: third.body }).toEqual({ status: 200, body: again.body });
    expect(await processor(orderId, refundId)).toEqual({ refundedMinor: 500, records: 1 });
  });

  test("without anyone asking, the store's refunds reminder drives the stuck refund to REFUNDED once", async () => {
    const orderId = await placeOrder(srv, key, BOARD, "tok_approve");
    const p = await propose(orderId, { amount: 700 });
    const refundId = p.body.data.refund_id;
    expect((await failRefundedWriteOnce(() => decide(refundId, "approve"))).status).toBe(500);
    expect((await refundRow(refundId)).status).toBe("APPROVED");
    // Brought forward instead of waiting the first 30 s.
    await srv.db.sql`UPDATE actor_reminders SET due_at = now() WHERE kind = 'store' AND id = 'demo-store' AND name = 'refunds'`;
    await until(async () => (await refundRow(refundId)).status === "REFUNDED");
    const [o] = await srv.db.sql<{ refunded_minor: number }[]>`SELECT refunded_minor FROM orders WHERE id = ${orderId}`;
    expect(o.refunded_minor).toBe(700);
    expect(await processor(orderId, refundId)).toEqual({ refundedMinor: 700, records: 1 });
    await until(async () => (await reminder()) === undefined);
  });

  test("the merchant's cancel of a paid order whose refund write failed ends canceled and REFUNDED through the reminder", async () => {
    const orderId = await placeOrder(srv, key, BOARD, "tok_approve");
    // The merchant's cancel: an agent's cancel of a paid order moves no money (409 ORDER_NOT_CANCELLABLE).
    const c = await failRefundedWriteOnce(() =>
      srv.json(`/api/v1/merchant/stores/demo-store/orders/${orderId}/status`, { method: "POST", headers: { authorization: `Bearer ${srv.admin}` }, body: { status: "canceled" } }),
    );
    expect(c.status).toBe(500);
    const [o] = await srv.db.sql<{ status: string; total_minor: number }[]>`SELECT status, total_minor FROM orders WHERE id = ${orderId}`;
    expect(o.status).toBe("canceled");
    const [r] = await srv.db.sql<{ id: string; status: string }[]>`SELECT id, status FROM order_refunds WHERE order_id = ${orderId}`;
    expect(r.status).toBe("APPROVED");
    await srv.db.sql`UPDATE actor_reminders SET due_at = now() WHERE kind = 'store' AND id = 'demo-store' AND name = 'refunds'`;
    await until(async () => (await refundRow(r.id)).status === "REFUNDED");
    const [after] = await srv.db.sql<{ status: string; refunded_minor: number }[]>`SELECT status, refunded_minor FROM orders WHERE id = ${orderId}`;
    expect(after).toEqual({ status: "canceled", refunded_minor: Number(o.total_minor) });
    expect(await processor(orderId, r.id)).toEqual({ refundedMinor: Number(o.total_minor), records: 1 });
  });

  test("a fault inside the processor's own refund write leaves nothing half-done there: the second approve refunds once", async () => {
    const orderId = await placeOrder(srv, key, BOARD, "tok_approve");
    const p = await propose(orderId, { amount: 400 });
    const refundId = p.body.data.refund_id;
    // The sandbox processor's refund record cannot be written once (a crash of the processor mid-refund).
    await srv.db.sql.unsafe(`CREATE OR REPLACE FUNCTION f_test_fail_ledger() RETURNS trigger LANGUAGE plpgsql AS $$
        BEGIN RAISE EXCEPTION 'injected processor fault'; END $$;
      CREATE TRIGGER f_test_fail_ledger BEFORE INSERT ON sandbox_ledger_refunds FOR EACH ROW EXECUTE FUNCTION f_test_fail_ledger();`);
    let first: Awaited<ReturnType<typeof decide>>;
    try {
      first = await decide(refundId, "approve");
    } finally {
      await srv.db.sql.unsafe(`DROP TRIGGER f_test_fail_ledger ON sandbox_ledger_refunds`);
    }
    expect(first.status).toBe(500);
    expect((await refundRow(refundId)).status).toBe("APPROVED");
    const again = await decide(refundId, "approve");
    expect(again.body.data.status).toBe("REFUNDED");
    expect(await processor(orderId, refundId)).toEqual({ refundedMinor: 400, records: 1 });
  });

  test("approving other refunds does not push back the re-drive of a stuck one, nor reset its backoff", async () => {
    const stuckOrder = await placeOrder(srv, key, BOARD, "tok_approve");
    const stuck = (await propose(stuckOrder, { amount: 200 })).body.data.refund_id;
    expect((await failRefundedWriteOnce(() => decide(stuck, "approve"))).status).toBe(500);
    const armed = (await reminder())!.due_at.getTime();
    // A busy store: more approvals after the stuck one, each of which used to move the reminder 30 s out again.
    for (let i = 0; i < 2; i++) {
      await Bun.sleep(1_100);
      const other = await placeOrder(srv, key, BOARD, "tok_approve");
      const p = await propose(other, { amount: 100 });
      expect((await decide(p.body.data.refund_id, "approve")).body.data.status).toBe("REFUNDED");
      expect((await reminder())!.due_at.getTime()).toBe(armed);
    }
    // A reminder backed off (attempt 4, due later) is brought forward by a new approval, its backoff kept.
    await srv.db.sql`UPDATE actor_reminders SET due_at = now() + interval '10 minutes', payload = '{"attempt": 4}'::jsonb
      WHERE kind = 'store' AND id = 'demo-store' AND name = 'refunds'`;
    const other = await placeOrder(srv, key, BOARD, "tok_approve");
    await decide((await propose(other, { amount: 100 })).body.data.refund_id, "approve");
    const [after] = await srv.db.sql<{ due_at: Date; payload: { attempt: number } }[]>`SELECT due_at, payload FROM actor_reminders
      WHERE kind = 'store' AND id = 'demo-store' AND name = 'refunds'`;
    expect(after!.due_at.getTime()).toBeLessThanOrEqual(Date.now() + 31_000);
    expect(after!.payload.attempt).toBe(4);
    // The stuck refund is driven by that reminder.
    await srv.db.sql`UPDATE actor_reminders SET due_at = now() WHERE kind = 'store' AND id = 'demo-store' AND name = 'refunds'`;
    await until(async () => (await refundRow(stuck)).status === "REFUNDED");
  });

  test("a FAILED refund the merchant retries is asked of the processor again under a new key, so it can succeed", async () => {
    const orderId = await placeOrder(srv, key, BOARD, "tok_approve");
    const p = await propose(orderId, { amount: 250 });
    const refundId = p.body.data.refund_id;
    const [o] = await srv.db.sql<{ capture_ref: string }[]>`SELECT capture_ref FROM orders WHERE id = ${orderId}`;
    // The processor refuses this refund once (nothing left to refund on the capture), then has it back.
    await srv.db.sql`UPDATE sandbox_ledger_intents SET refunded_minor = amount_minor WHERE capture_ref = ${o!.capture_ref}`;
    expect((await decide(refundId, "approve")).body.data.status).toBe("FAILED");
    await srv.db.sql`UPDATE sandbox_ledger_intents SET refunded_minor = 0 WHERE capture_ref = ${o!.capture_ref}`;
    const retry = await decide(refundId, "approve");
    expect(retry.status).toBe(200);
    expect(retry.body.data).toMatchObject({ refund_id: refundId, status: "REFUNDED" });
    const [l] = await srv.db.sql<{ refunded_minor: number }[]>`SELECT refunded_minor::int FROM sandbox_ledger_intents WHERE capture_ref = ${o!.capture_ref}`;
    expect(l!.refunded_minor).toBe(250);
  });

  test("a refund that fails at the rail is FAILED, not APPROVED, and leaves no reminder behind", async () => {
    const orderId = await placeOrder(srv, key, BOARD, "tok_approve");
    const p = await propose(orderId, { amount: 300 });
    // The processor no longer knows the capture: the rail answers failed (unknown_capture).
    await srv.db.sql`UPDATE orders SET capture_ref = 'cap_unknown' WHERE id = ${orderId}`;
    const a = await decide(p.body.data.refund_id, "approve");
    expect(a.status).toBe(200);
    expect(a.body.data.status).toBe("FAILED");
    expect(await reminder()).toBeUndefined();
  });
});
