/**
 * Review R4-1: an attempt refused on a multi-store session where one store is already paid (the resume's new attempt
 * for the store that had rolled back, or an ordinary retry after a partly captured rollback). The refusal says what was
 * paid (`partially_captured`, `captured_merchant_slugs`, `completed_store_ids`, `order_ids`, `stores`), the session stays
 * READY_FOR_PAYMENT for the other store (the same key answers the same refusal; a new preview then the same key pays the
 * rest), and the paid store is never charged twice. Through HTTP against the real server.
 */
import { beforeAll, describe, expect, test } from "bun:test";
import { deriveIntentId } from "../../actors/payments/rail.ts";
import { ALL_SCOPES, createKey, type TestKey } from "../helpers/agents.ts";
import { GREEN } from "../helpers/partly-paid.ts";
import { DEMO, LEAF, TRACKED_BOARD as BOARD, ledger as storeLedger, twoStoreSession, type Attempt, type Res } from "../helpers/two-store-session.ts";
import { useServer } from "../helpers/server.ts";
import { approvalLink, decideAt } from "../helpers/sandbox-approval.ts";

const srv = useServer({ seed: true });
let key: TestKey;

beforeAll(async () => {
  key = await createKey(srv, { scopes: ALL_SCOPES, tier: "ENTERPRISE" });
}, 120_000);

/** Another buyer takes demo-store's last units of the board. */
async function soldOut(): Promise<void> {
  await srv.db.sql`UPDATE products SET stock_quantity = reserved_quantity WHERE id = ${BOARD}`;
}
async function restocked(): Promise<void> {
  await srv.db.sql`UPDATE products SET stock_quantity = reserved_quantity + 10 WHERE id = ${BOARD}`;
}

async function orders(cartId: string): Promise<Record<string, { id: string; status: string; capture_ref: string | null }>> {
  const rows = await srv.db.sql<{ id: string; store_slug: string; status: string; capture_ref: string | null }[]>`SELECT id, store_slug, status, capture_ref FROM orders WHERE cart_id = ${cartId}`;
  return Object.fromEntries(rows.map((r) => [r.store_slug, { id: r.id, status: r.status, capture_ref: r.capture_ref }]));
}

/** The processor's intents of one store's attempts 1..3 in this session. */
const ledger = (a: Attempt, store: string) => storeLedger(srv, a, store);

async function sessionStatus(cartId: string): Promise<unknown> {
  const r = await srv.json(`/api/v1/agent/cart/${cartId}`, { headers: key.headers });
  expect(r.status).toBe(200);
  return r.body.data.checkout_status;
}

/** The refusal names the paid store, its order and every leg, and the session that waits for the other store. */
function expectPaidSaid(r: Res, a: Attempt, leafOrderId: string): void {
  expect(r.status).toBe(409);
  expect(r.body.code).toBe("STATE_EXECUTION_BLOCKED");
  expect(r.body.details).toMatchObject({
    reasons: [{ code: "out_of_stock", store_id: DEMO }],
    checkout_session_id: a.sid,
    checkout_status: "READY_FOR_PAYMENT",
    partially_captured: true,
    captured_merchant_slugs: [LEAF],
    completed_store_ids: [LEAF],
    order_ids: [leafOrderId],
  });
  expect(r.body.details.stores).toEqual(
    expect.arrayContaining([
      { store_id: LEAF, status: "captured", outcome: "captured" },
      expect.objectContaining({ store_id: DEMO, status: "unpaid" }),
    ]),
  );
  expect(r.body.error).toContain("greenleaf-living was paid and stays paid");
  expect(r.body.error).toContain("preview the cart again");
}

describe("an attempt refused after another store of the checkout was paid", () => {
  test("the resume that captures the approved store and then finds the declined store sold out answers 409 STATE_EXECUTION_BLOCKED saying the approved store was paid, and the same key answers the same", async () => {
    const a = await twoStoreSession(srv, key);
    const first = await a.pay({ [DEMO]: "tok_decline", [LEAF]: "tok_needs_approval" });
    expect(first.status).toBe(202);
    await soldOut();
    const ap = await decideAt(srv, approvalLink(first, LEAF), "approve");
    expect(ap.status).toBe(200);

    const r = await a.pay({ [DEMO]: "tok_approve", [LEAF]: "tok_needs_approval" });
    const o = await orders(a.cartId);
    expect(o[LEAF]).toMatchObject({ status: "paid" });
    expectPaidSaid(r, a, o[LEAF]!.id);
    expect(await sessionStatus(a.cartId)).toBe("READY_FOR_PAYMENT");

    // A retry of the lost answer: the same refusal, nothing charged.
    const again = await a.pay({ [DEMO]: "tok_approve", [LEAF]: "tok_needs_approval" });
    expect(again.status).toBe(409);
    expect(again.body.code).toBe(r.body.code);
    expect(again.body.error).toBe(r.body.error);
    expect(again.body.details).toEqual(r.body.details);
    expect(await ledger(a, LEAF)).toEqual([{ token: "tok_needs_approval", state: "captured" }]);
    expect(await ledger(a, DEMO)).toEqual([{ token: "tok_decline", state: "declined" }]);

    // The board is back: a new preview, then the same key, pays demo-store alone.
    await restocked();
    const p = await srv.json("/api/v1/agent/checkout/preview", { method: "POST", headers: key.headers, body: { cartId: a.cartId } });
    expect(p.status).toBe(200);
    expect(p.body.data.checkout_session_id).toBe(a.sid);
    const done = await a.pay({ [DEMO]: "tok_approve" });
    expect(done.status).toBe(200);
    expect(done.body.data.status).toBe("COMPLETED");
    const after = await orders(a.cartId);
    expect(after[DEMO]).toMatchObject({ status: "paid" });
    expect(after[LEAF]).toEqual(o[LEAF]!);
    expect(await ledger(a, LEAF)).toEqual([{ token: "tok_needs_approval", state: "captured" }]);
    expect(await ledger(a, DEMO)).toEqual([{ token: "tok_decline", state: "declined" }, { token: "tok_approve", state: "captured" }]);
  }, 60_000);

  test("a retry after a partly captured decline that finds the declined store sold out says the other store was paid, and the session stays READY_FOR_PAYMENT", async () => {
    await restocked();
    const a = await twoStoreSession(srv, key);
    const first = await a.pay({ [DEMO]: "tok_decline", [LEAF]: "tok_approve" });
    expect(first.status).toBe(402);
    expect(first.body.details).toMatchObject({ partially_captured: true, captured_merchant_slugs: [LEAF] });
    await soldOut();
    const r = await a.pay({ [DEMO]: "tok_approve" });
    const o = await orders(a.cartId);
    expectPaidSaid(r, a, o[LEAF]!.id);
    expect(await sessionStatus(a.cartId)).toBe("READY_FOR_PAYMENT");
    const again = await a.pay({ [DEMO]: "tok_approve" });
    expect(again.body.details).toEqual(r.body.details);

    // The board is back, and the last unit goes to another buyer while this retry is between its state check and its
    // hold (the retry's hold waits on the row lock of that sale): the hold finds the shortage. Nothing of that
    // attempt stays held, and the session still waits for demo-store.
    await restocked();
    await srv.db.sql`UPDATE products SET stock_quantity = reserved_quantity + 1 WHERE id = ${BOARD}`;
    const [before] = await srv.db.sql<{ r: number }[]>`SELECT reserved_quantity::int AS r FROM products WHERE id = ${BOARD}`;
    let held: Res | undefined;
    await srv.db.sql.begin(async (tx) => {
      await tx`SELECT 1 FROM products WHERE id = ${BOARD} FOR UPDATE`;
      const racing = a.pay({ [DEMO]: "tok_approve" }).then((x) => (held = x));
      await Bun.sleep(700);
      expect(held).toBeUndefined();
      await tx`UPDATE products SET stock_quantity = reserved_quantity WHERE id = ${BOARD}`;
      void racing;
    });
    for (let i = 0; i < 100 && !held; i++) await Bun.sleep(50);
    expect(held?.body.error).toStartWith("Stock no longer covers the cart.");
    expectPaidSaid(held!, a, o[LEAF]!.id);
    expect(await sessionStatus(a.cartId)).toBe("READY_FOR_PAYMENT");
    const [afterHold] = await srv.db.sql<{ r: number }[]>`SELECT reserved_quantity::int AS r FROM products WHERE id = ${BOARD}`;
    expect(afterHold!.r).toBe(before!.r);
    expect((await orders(a.cartId))[DEMO]).toMatchObject({ status: "pending", capture_ref: null });
    expect(await ledger(a, LEAF)).toEqual([{ token: "tok_approve", state: "captured" }]);
    expect(await ledger(a, DEMO)).toEqual([{ token: "tok_decline", state: "declined" }]);
  }, 60_000);

  test("a retry refused because the merchant canceled the unpaid store's order ends the session and says the other store was paid; the same key keeps saying so, and a new preview pays the rest", async () => {
    await restocked();
    const a = await twoStoreSession(srv, key);
    expect((await a.pay({ [DEMO]: "tok_decline", [LEAF]: "tok_approve" })).status).toBe(402);
    const o = await orders(a.cartId);
    // Stands in for a cancel that bypassed the session: this session's order for demo-store can never be paid now.
    await srv.db.sql`UPDATE orders SET status = 'canceled' WHERE id = ${o[DEMO]!.id}`;
    const r = await a.pay({ [DEMO]: "tok_approve" });
    expect(r.status).toBe(409);
    expect(r.body).toMatchObject({
      code: "STATE_EXECUTION_BLOCKED",
      details: {
        reasons: [{ code: "order_canceled", store_id: DEMO }],
        checkout_status: "FAILED",
        partially_captured: true,
        captured_merchant_slugs: [LEAF],
        completed_store_ids: [LEAF],
        order_ids: [o[LEAF]!.id],
      },
    });
    expect(r.body.error).toContain("The checkout session has ended; preview the cart again to pay the remaining merchants");

    const again = await a.pay({ [DEMO]: "tok_approve" });
    expect(again.status).toBe(409);
    expect(again.body).toMatchObject({
      code: "SESSION_INACTIVE",
      details: { status: "FAILED", checkout_session_id: a.sid, partially_captured: true, captured_merchant_slugs: [LEAF], order_ids: [o[LEAF]!.id] },
    });
    expect(again.body.error).toContain("greenleaf-living was paid and stays paid");

    const p = await srv.json("/api/v1/agent/checkout/preview", { method: "POST", headers: key.headers, body: { cartId: a.cartId } });
    expect(p.status).toBe(200);
    expect(p.body.data.checkout_session_id).not.toBe(a.sid);
    const next: Attempt = { cartId: a.cartId, sid: p.body.data.checkout_session_id, ik: crypto.randomUUID(), pay: a.pay };
    const done = await srv.json("/api/v1/agent/checkout", {
      method: "POST",
      headers: key.headers,
      body: { cartId: a.cartId, checkout_session_id: next.sid, idempotency_key: next.ik, payment_methods: { [DEMO]: "tok_approve" } },
    });
    expect(done.status).toBe(200);
    expect(done.body.data.status).toBe("COMPLETED");
    expect(done.body.data.order_ids).toContain(o[LEAF]!.id);
    // greenleaf-living was charged once, in the first session; the new one charged demo-store alone.
    expect(await ledger(a, LEAF)).toEqual([{ token: "tok_approve", state: "captured" }]);
    expect(await ledger(next, LEAF)).toEqual([]);
    expect(await ledger(next, DEMO)).toEqual([{ token: "tok_approve", state: "captured" }]);
  }, 60_000);
});
