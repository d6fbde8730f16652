/**
 * Payments audit B2 F4: a multi-store card checkout where one store's leg is declined while another's waits for the
 * buyer's approval. The 202 says what happened to every store (`details.stores`, as the 402 does), and the documented
 * resume (same session and idempotency_key after the approval, with a new payment method for the declined store)
 * captures the approved leg AND charges the new method on the declined one: one call, not two. Money moves once per
 * store (the sandbox processor's ledger). Through HTTP against the real server.
 */
import { beforeAll, describe, expect, test } from "bun:test";
import { ALL_SCOPES, createKey, type TestKey } from "../helpers/agents.ts";
import { GREEN } from "../helpers/partly-paid.ts";
import { DEMO, LEAF, TRACKED_BOARD as BOARD, ledger as storeLedger, twoStoreSession, type Attempt } from "../helpers/two-store-session.ts";
import { useServer } from "../helpers/server.ts";
import { approvalLink, decideAt } from "../helpers/sandbox-approval.ts";

const srv = useServer({ seed: true });
let key: TestKey;

beforeAll(async () => {
  key = await createKey(srv, { scopes: ALL_SCOPES, tier: "ENTERPRISE" });
}, 120_000);

/** A two-store cart, previewed, then paid with demo-store's card declined and greenleaf's waiting for the buyer. */
async function declinedBesideApproval(): Promise<Attempt & { first: { status: number; body: any } }> {
  const a = await twoStoreSession(srv, key);
  const first = await a.pay({ [DEMO]: "tok_decline", [LEAF]: "tok_needs_approval" });
  return { ...a, first };
}

/** The processor's intents of one store's attempts 1..3 in this session, in attempt order. */
const ledger = (a: Attempt, store: string) => storeLedger(srv, a, store);

/** The buyer's decision at the link the 202 gave the agent for greenleaf. */
async function decide(a: { first: { status: number; body: any } }, decision: "approve" | "reject"): Promise<void> {
  const r = await decideAt(srv, approvalLink(a.first, LEAF), decision);
  expect(r.status).toBe(200);
}

async function stock(productId: string): Promise<number> {
  const [p] = await srv.db.sql<{ n: number }[]>`SELECT stock_quantity::int AS n FROM products WHERE id = ${productId}`;
  return p!.n;
}

describe("a multi-store card checkout with one store declined and another waiting for the buyer", () => {
  test("answers 202 user_action_required whose details.stores say the declined store was declined and rolled back, and whose text names it and the way on", async () => {
    const a = await declinedBesideApproval();
    expect(a.first.status).toBe(202);
    expect(a.first.body.code).toBe("user_action_required");
    expect(a.first.body.details.status).toBe("PENDING_EXTERNAL_CONFIRMATION");
    expect(a.first.body.details.approval_urls.map((u: { merchant_slug: string }) => u.merchant_slug)).toEqual([LEAF]);
    expect(a.first.body.details.completed_store_ids).toEqual([]);
    const stores = [...a.first.body.details.stores].sort((x: { store_id: string }, y: { store_id: string }) => x.store_id.localeCompare(y.store_id));
    expect(stores).toEqual([
      { store_id: DEMO, status: "unpaid", outcome: "declined" },
      { store_id: LEAF, status: "needs_buyer_approval", outcome: "needs_buyer_approval" },
    ]);
    expect(a.first.body.error).toContain(`${DEMO} was declined`);
    expect(a.first.body.error).toContain("payment_methods");
  }, 90_000);

  test("the resume after the approval, with a new payment method for the declined store, captures both stores in that one call, each exactly once", async () => {
    const before = { demo: await stock(BOARD), green: await stock(GREEN) };
    const a = await declinedBesideApproval();
    expect(a.first.status).toBe(202);
    await decide(a, "approve");
    const r = await a.pay({ [DEMO]: "tok_approve", [LEAF]: "tok_needs_approval" });
    expect(r.status).toBe(200);
    expect(r.body.data.status).toBe("COMPLETED");
    expect(r.body.data.orders.map((o: { merchant_slug: string; status: string }) => [o.merchant_slug, o.status]).sort()).toEqual([[DEMO, "paid"], [LEAF, "paid"]]);
    // the declined attempt stays declined; the new method was charged under a new intent (attempt 2); greenleaf once
    expect(await ledger(a, DEMO)).toEqual([{ token: "tok_decline", state: "declined" }, { token: "tok_approve", state: "captured" }]);
    expect(await ledger(a, LEAF)).toEqual([{ token: "tok_needs_approval", state: "captured" }]);
    expect({ demo: await stock(BOARD), green: await stock(GREEN) }).toEqual({ demo: before.demo - 1, green: before.green - 1 });
    const orders = await srv.db.sql<{ status: string }[]>`SELECT status FROM orders WHERE cart_id = ${a.cartId}`;
    expect(orders.map((o) => o.status)).toEqual(["paid", "paid"]);
    // the same call again is the receipt; nothing is charged again
    const again = await a.pay({ [DEMO]: "tok_approve", [LEAF]: "tok_needs_approval" });
    expect(again.status).toBe(409);
    expect(again.body.code).toBe("CHECKOUT_ALREADY_IN_PROGRESS");
    expect((await ledger(a, DEMO)).length + (await ledger(a, LEAF)).length).toBe(3);
  }, 90_000);

  test("a resume before the buyer approved answers the 202 again and does not charge the declined store meanwhile", async () => {
    const a = await declinedBesideApproval();
    expect(a.first.status).toBe(202);
    const r = await a.pay({ [DEMO]: "tok_approve", [LEAF]: "tok_needs_approval" });
    expect(r.status).toBe(202);
    expect(r.body.details.stores).toContainEqual({ store_id: DEMO, status: "unpaid", outcome: "declined" });
    expect(await ledger(a, DEMO)).toEqual([{ token: "tok_decline", state: "declined" }]);
  }, 90_000);

  test("when the buyer refused, the resume answers the 402 rollback naming both stores' outcomes and does not charge the declined store again", async () => {
    const a = await declinedBesideApproval();
    expect(a.first.status).toBe(202);
    await decide(a, "reject");
    const r = await a.pay({ [DEMO]: "tok_approve", [LEAF]: "tok_needs_approval" });
    expect(r.status).toBe(402);
    expect(r.body.code).toBe("PAYMENT_DECLINED");
    expect(r.body.details.stores).toContainEqual({ store_id: LEAF, status: "unpaid", outcome: "not_approved" });
    expect(await ledger(a, DEMO)).toEqual([{ token: "tok_decline", state: "declined" }]);
  }, 90_000);

  test("a resume naming a token the sandbox processor does not know for the declined store is 400 INVALID_ARGUMENT before the approved store is captured", async () => {
    const a = await declinedBesideApproval();
    expect(a.first.status).toBe(202);
    await decide(a, "approve");
    const r = await a.pay({ [DEMO]: "tok_nonsense", [LEAF]: "tok_needs_approval" });
    expect(r.status).toBe(400);
    expect(r.body.code).toBe("INVALID_ARGUMENT");
    expect(r.body.details).toMatchObject({ field: `payment_methods.${DEMO}`, reason: "invalid_test_token" });
    expect(await ledger(a, LEAF)).toEqual([{ token: "tok_needs_approval", state: "approved" }]);
    // the session still waits for the resume: a good token then completes both stores
    const ok = await a.pay({ [DEMO]: "tok_approve", [LEAF]: "tok_needs_approval" });
    expect(ok.status).toBe(200);
    expect(ok.body.data.status).toBe("COMPLETED");
  }, 90_000);

  test("a resume that names the declined card again is declined again for that store while the approved store is captured", async () => {
    const a = await declinedBesideApproval();
    expect(a.first.status).toBe(202);
    await decide(a, "approve");
    const r = await a.pay({ [DEMO]: "tok_decline", [LEAF]: "tok_needs_approval" });
    expect(r.status).toBe(402);
    expect(r.body.code).toBe("PAYMENT_DECLINED");
    expect(r.body.details).toMatchObject({ partially_captured: true, captured_merchant_slugs: [LEAF], completed_store_ids: [LEAF] });
    expect(await ledger(a, DEMO)).toEqual([{ token: "tok_decline", state: "declined" }, { token: "tok_decline", state: "declined" }]);
    expect(await ledger(a, LEAF)).toEqual([{ token: "tok_needs_approval", state: "captured" }]);
  }, 90_000);
});
