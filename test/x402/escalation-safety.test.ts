/**
 * Escalations of x402 legs that never invite a second charge (review RG MED-1..3), on the real server with a movable
 * clock, the devnet and the facilitator proxy:
 * - a store whose rpc_url cannot be read is escalated only 10 minutes past validBefore (our clock may run ahead of the
 *   chain's with a send in flight), its evidence says a transfer may still land, and the merchant's refund (release) is
 *   refused 409 while the chain has not shown the authorization expired unused; the late transfer then pays the order
 *   once the rpc_url is fixed, and the cart is never reopened for a second payment;
 * - a healthy chain slower than validBefore is not escalated as stalled while its head moves;
 * (A leg escalated as stalled: escalation-stalled.test.ts, on its own chain, since it moves the chain's clock.)
 * X402_CAPTURE_CONFIRMATIONS is 3 (1 for the late-transfer test's server) and the in-turn wait 0.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import {
  AWAITING_CONFIRMATIONS_REASON,
  EXPIRY_MARGIN_SECONDS,
  EXTRAS_X402_SETTLE_TIMEOUT_MS,
  HEAD_STALL_SECONDS,
  RELEASE_WITHOUT_CHAIN_SECONDS,
  UNREADABLE_ESCALATION_SECONDS,
  UNRESOLVED_REASON,
} from "../../actors/payments/x402-rail.ts";
import { login } from "../helpers/agents.ts";
import { BOARD, startEscalationEnv, validBeforeOf, type EscalationEnv } from "./escalation-helpers.ts";
import { payerOf, waitFor, x402Signer } from "./helpers.ts";

/** A store rpc_url that cannot be read (engineer AP's port range). */
const BROKEN_RPC_PORT = 7977;
let e: EscalationEnv;
let broken: ReturnType<typeof Bun.serve>;

beforeAll(async () => {
  e = await startEscalationEnv([3, 4, 7]);
  broken = Bun.serve({ port: BROKEN_RPC_PORT, hostname: "127.0.0.1", fetch: () => new Response("down", { status: 503 }) });
}, 120_000);

afterAll(async () => {
  broken?.stop(true);
  await e?.env.stop();
});

describe("a store whose rpc_url cannot be read while the first send is still in flight", () => {
  test("is not escalated 30 s past validBefore, is escalated 10 min past it with evidence that a transfer may still land, and the merchant's refund is refused 409 until the chain decides; the late transfer then pays the order once and the cart is never paid twice", async () => {
    e.setOffsetMs(0);
    await e.env.srv.db.sql`UPDATE store_x402_config SET rpc_url = ${`http://127.0.0.1:${BROKEN_RPC_PORT}/`} WHERE store_slug = 'demo-store'`;
    try {
      const cartId = await e.env.newCart([{ product_id: BOARD, quantity: 1 }]);
      const payer = payerOf(e.env.devnet, 3);
      const payload = await x402Signer(e.env.devnet, payer).createPaymentPayload(await e.env.challengeOf(cartId));
      const body = { cartId, x402_payload: payload, idempotency_key: crypto.randomUUID() };
      e.env.srv.running.services.extras.set(EXTRAS_X402_SETTLE_TIMEOUT_MS, 2_000);
      e.env.proxy.settleMode = "hold";
      const first = await e.env.checkout(body);
      expect({ status: first.status, detail: first.body.details?.status }).toEqual({ status: 503, detail: "SETTLEMENT_UNKNOWN" });
      await e.env.proxy.held();
      const vb = validBeforeOf(payload);

      // Our clock 35 s past validBefore (ahead of the chain's): still the chain's to decide, not escalated.
      e.setOffsetMs((vb + EXPIRY_MARGIN_SECONDS + 5) * 1000 - Date.now());
      const again = await e.env.checkout(body);
      expect({ status: again.status, code: again.body.code, detail: again.body.details?.status }).toEqual({ status: 503, code: "UPSTREAM_UNAVAILABLE", detail: "SETTLEMENT_UNKNOWN" });
      expect((await e.orderOf(cartId)).reconciliation).toBeNull();

      // 10 minutes past it: escalated, with honest evidence.
      e.setOffsetMs((vb + UNREADABLE_ESCALATION_SECONDS + 5) * 1000 - Date.now());
      await e.reminderDue(cartId);
      await waitFor("the escalation", async () => (await e.orderOf(cartId)).reconciliation != null, 20_000);
      const order = await e.orderOf(cartId);
      expect(order).toMatchObject({ status: "pending", reconciliation: "settlement_unknown" });
      const [ev] = await e.env.srv.db.sql<{ data: { rail_reason: string; evidence: { check: string } } }[]>`
        SELECT data FROM order_events WHERE order_id = ${order.id} AND type = 'reconciliation_required'`;
      expect(ev!.data.rail_reason).toBe(UNRESOLVED_REASON);
      expect(ev!.data.evidence.check).toContain("The chain could not be read");
      expect(ev!.data.evidence.check).toContain("a transfer may still land until the chain can be checked");
      expect(ev!.data.evidence.check).not.toContain("can no longer land");

      // The merchant finds nothing in its wallet yet and asks for refund: refused while the chain proves nothing.
      const owner = { authorization: `Bearer ${await login(e.env.srv)}` };
      const rf = await e.env.srv.json(`/api/v1/merchant/stores/demo-store/orders/${order.id}/reconcile`, { method: "POST", headers: owner, body: { action: "refund" } });
      expect({ status: rf.status, code: rf.body.code, reason: rf.body.details?.reason, chain: rf.body.details?.chain }).toEqual({
        status: 409,
        code: "conflict",
        reason: "chain_outcome_unproven",
        chain: "unreadable",
      });
      expect(await e.orderOf(cartId)).toMatchObject({ status: "pending", reconciliation: "settlement_unknown" });
      expect(await e.intentOf(cartId)).toEqual({ state: "unknown", error_reason: UNRESOLVED_REASON });

      // The held send lands now (chain time is still before validBefore).
      const merchantBefore = await e.env.devnet.balanceOf(e.env.merchant);
      e.env.proxy.settleMode = "pass";
      await e.env.proxy.release();
      await e.env.proxy.up();
      await e.anvil("evm_mine");
      await e.anvil("evm_mine");
      const credited = (await e.env.devnet.balanceOf(e.env.merchant)) - merchantBefore;
      expect(credited).toBeGreaterThan(0n);

      // The merchant fixes the rpc_url: the session's reminder asks the chain again, which pays the order and clears its flag.
      await e.env.srv.db.sql`UPDATE store_x402_config SET rpc_url = ${e.env.devnet.chain.rpcUrl} WHERE store_slug = 'demo-store'`;
      await e.reminderDue(cartId);
      await waitFor("the chain's decision", async () => (await e.orderOf(cartId)).status === "paid", 20_000);
      expect(await e.orderOf(cartId)).toMatchObject({ status: "paid", reconciliation: null });
      expect(await e.intentOf(cartId)).toMatchObject({ state: "captured" });

      // The cart was never reopened: no second payment of it.
      e.setOffsetMs(0);
      const payerBefore = await e.env.devnet.balanceOf(payer.address);
      const repeat = await e.env.checkout(body);
      expect({ status: repeat.status, code: repeat.body.code, checkout: repeat.body.details?.status }).toEqual({ status: 409, code: "CHECKOUT_ALREADY_IN_PROGRESS", checkout: "COMPLETED" });
      expect(await e.env.devnet.balanceOf(payer.address)).toBe(payerBefore);
      const orders = await e.env.srv.db.sql<{ status: string }[]>`SELECT status FROM orders WHERE cart_id = ${cartId}`;
      expect(orders.map((o) => o.status)).toEqual(["paid"]);
    } finally {
      e.env.proxy.settleMode = "pass";
      e.env.srv.running.services.extras.delete(EXTRAS_X402_SETTLE_TIMEOUT_MS);
      await e.env.srv.db.sql`UPDATE store_x402_config SET rpc_url = ${e.env.devnet.chain.rpcUrl} WHERE store_slug = 'demo-store'`;
      e.setOffsetMs(0);
    }
  }, 120_000);
});

describe("a store whose rpc_url stays unreadable", () => {
  test("lets the merchant release the order 24 hours past validBefore without the chain, the 409 naming when before that", async () => {
    e.setOffsetMs(0);
    await e.env.srv.db.sql`UPDATE store_x402_config SET rpc_url = ${`http://127.0.0.1:${BROKEN_RPC_PORT}/`} WHERE store_slug = 'demo-store'`;
    try {
      const cartId = await e.env.newCart([{ product_id: BOARD, quantity: 1 }]);
      const payload = await x402Signer(e.env.devnet, payerOf(e.env.devnet, 7)).createPaymentPayload(await e.env.challengeOf(cartId));
      e.env.proxy.settleMode = "drop"; // every /settle lost before it reaches the facilitator: nothing moves
      const first = await e.env.checkout({ cartId, x402_payload: payload, idempotency_key: crypto.randomUUID() });
      expect({ status: first.status, detail: first.body.details?.status }).toEqual({ status: 503, detail: "SETTLEMENT_UNKNOWN" });
      const vb = validBeforeOf(payload);
      e.setOffsetMs((vb + UNREADABLE_ESCALATION_SECONDS + 5) * 1000 - Date.now());
      await e.reminderDue(cartId);
      await waitFor("the escalation", async () => (await e.orderOf(cartId)).reconciliation != null, 20_000);
      const order = await e.orderOf(cartId);
      // Logged in at each clock (a day later the first session has expired).
      const reconcile = async () =>
        e.env.srv.json(`/api/v1/merchant/stores/demo-store/orders/${order.id}/reconcile`, { method: "POST", headers: { authorization: `Bearer ${await login(e.env.srv)}` }, body: { action: "refund" } });
      const refused = await reconcile();
      expect({ status: refused.status, code: refused.body.code, reason: refused.body.details?.reason, after: refused.body.details?.release_allowed_after }).toEqual({
        status: 409,
        code: "conflict",
        reason: "chain_outcome_unproven",
        after: new Date((vb + RELEASE_WITHOUT_CHAIN_SECONDS) * 1000).toISOString(),
      });
      e.setOffsetMs((vb + RELEASE_WITHOUT_CHAIN_SECONDS + 5) * 1000 - Date.now());
      const released = await reconcile();
      expect(released.status).toBe(200);
      expect(released.body.data).toMatchObject({ order_status: "canceled", refund_by_merchant: true, reconciliation: null });
      expect(await e.intentOf(cartId)).toMatchObject({ state: "failed", error_reason: "released_by_merchant" });
    } finally {
      e.env.proxy.settleMode = "pass";
      await e.env.srv.db.sql`UPDATE store_x402_config SET rpc_url = ${e.env.devnet.chain.rpcUrl} WHERE store_slug = 'demo-store'`;
      e.setOffsetMs(0);
    }
  }, 90_000);
});

describe("a transfer on chain but not deep enough by validBefore", () => {
  test("on a healthy chain whose head still moves is not escalated and is paid when deep, the agent's repeat answering 200", async () => {
    e.setOffsetMs(0);
    const { cartId, payload, body } = await e.payPending(4);
    expect(await e.intentOf(cartId)).toMatchObject({ state: "unknown", error_reason: AWAITING_CONFIRMATIONS_REASON });
    // The agent's repeats are the subject here: the session's reminder, due by the jumped clock at once, would look at
    // the chain before the test mines (a suite on a busy machine hit that): it waits an hour.
    await e.env.srv.db.sql`UPDATE actor_reminders SET due_at = now() + interval '1 hour' WHERE kind = 'cart' AND id = ${cartId}`;
    const vb = validBeforeOf(payload);
    const nowChain = await e.chainNow();
    const target = vb + EXPIRY_MARGIN_SECONDS + HEAD_STALL_SECONDS + 5;
    e.setOffsetMs(target * 1000 - Date.now());
    await e.anvil("evm_increaseTime", [target - nowChain]);
    await e.anvil("evm_mine"); // 2 deep: the head moved
    const meanwhile = await e.env.checkout(body);
    expect({ status: meanwhile.status, code: meanwhile.body.code, detail: meanwhile.body.details?.status }).toEqual({ status: 503, code: "UPSTREAM_UNAVAILABLE", detail: "SETTLEMENT_UNKNOWN" });
    expect(await e.orderOf(cartId)).toMatchObject({ status: "pending", reconciliation: null });
    await e.anvil("evm_mine"); // 3 deep
    const paid = await e.env.checkout(body);
    expect({ status: paid.status, code: paid.body.code }).toEqual({ status: 200, code: undefined });
    expect(await e.orderOf(cartId)).toMatchObject({ status: "paid", reconciliation: null });
    e.setOffsetMs(0);
  }, 90_000);
});
