/**
 * A leg escalated as stalled (its transfer on chain, the store's head not moving past validBefore) is asked again by
 * the session reminder with the backoff, and when the chain decides it the order is paid and its `settlement_unknown`
 * flag cleared in the same transaction, without the agent (review RG MED-3). Its own file: it moves the devnet's clock.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { AWAITING_CONFIRMATIONS_REASON, CONFIRMATIONS_STALLED_REASON, EXPIRY_MARGIN_SECONDS, HEAD_STALL_SECONDS } from "../../actors/payments/x402-rail.ts";
import { login } from "../helpers/agents.ts";
import { startEscalationEnv, validBeforeOf, type EscalationEnv } from "./escalation-helpers.ts";
import { waitFor } from "./helpers.ts";

let e: EscalationEnv;

beforeAll(async () => {
  e = await startEscalationEnv([6]);
}, 120_000);

afterAll(async () => {
  await e?.env.stop();
});

describe("a transfer on chain but not deep enough by validBefore", () => {
  test("whose head stopped is escalated as stalled; once the chain moves again the session's reminder pays the order without the agent and clears its flag in the same transaction", async () => {
    e.setOffsetMs(0);
    const { cartId, payload } = await e.payPending(6);
    const vb = validBeforeOf(payload);
    const nowChain = await e.chainNow();
    const target = vb + EXPIRY_MARGIN_SECONDS + HEAD_STALL_SECONDS + 5;
    await e.anvil("evm_increaseTime", [target - nowChain]);
    e.setOffsetMs(target * 1000 - Date.now());
    await e.reminderDue(cartId);
    await waitFor("the escalation", async () => (await e.orderOf(cartId)).reconciliation != null, 20_000);
    expect(await e.orderOf(cartId)).toMatchObject({ status: "pending", reconciliation: "settlement_unknown" });
    expect(await e.intentOf(cartId)).toMatchObject({ error_reason: AWAITING_CONFIRMATIONS_REASON });
    const [ev] = await e.env.srv.db.sql<{ data: { rail_reason: string } }[]>`
      SELECT data FROM order_events WHERE order_id = ${(await e.orderOf(cartId)).id} AND type = 'reconciliation_required'`;
    expect(ev!.data.rail_reason).toBe(CONFIRMATIONS_STALLED_REASON);
    // The escalated leg keeps a reminder: the chain is asked again without the agent.
    await waitFor("the escalated leg's reminder", async () => (await e.env.srv.db.sql`SELECT 1 FROM actor_reminders WHERE kind = 'cart' AND id = ${cartId}`).length === 1, 5_000);

    await e.anvil("evm_mine");
    await e.anvil("evm_mine"); // 3 deep
    await e.reminderDue(cartId);
    await waitFor("the chain's decision", async () => (await e.orderOf(cartId)).status === "paid", 20_000);
    const order = await e.orderOf(cartId);
    expect(order).toMatchObject({ status: "paid", reconciliation: null });
    const [resolved] = await e.env.srv.db.sql<{ data: Record<string, unknown> }[]>`
      SELECT data FROM order_events WHERE order_id = ${order.id} AND type = 'reconciliation_resolved'`;
    expect(resolved!.data).toMatchObject({ actor: "system", action: "chain_decided", reason: "settlement_unknown", outcome: "captured" });
    // Nothing left for the merchant: not listed, and reconcile says so.
    const owner = { authorization: `Bearer ${await login(e.env.srv)}` };
    const list = await e.env.srv.json(`/api/v1/merchant/stores/demo-store/orders?reconciliation=required`, { headers: owner });
    expect(list.status).toBe(200);
    expect((list.body.data.items as { id: string }[]).some((i) => i.id === order.id)).toBe(false);
    e.setOffsetMs(0);
  }, 90_000);
});
