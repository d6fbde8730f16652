/**
 * An x402 payment is captured only when its transfer is final enough (audit V3): with the store's rpc_url, a
 * facilitator `success` leaves the order pending (503 SETTLEMENT_UNKNOWN) until the transfer is
 * X402_CAPTURE_CONFIRMATIONS blocks deep (2 here; anvil mines a block per transaction, the test mines the rest), and a
 * transfer a reorg drops before that is never counted paid. The real server, the devnet and the facilitator proxy.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import type { PaymentPayload } from "@x402/core/types";
import type { Hex } from "viem";
import { AWAITING_CONFIRMATIONS_REASON, EXTRAS_X402_CONFIRM_WAIT_MS } from "../../actors/payments/x402-rail.ts";
import { devnetPublicClient } from "../../infra/x402/token.ts";
import { payerOf, startX402Env, waitFor, x402Signer, type X402Env } from "./helpers.ts";

const BOARD = "5befd987-79cd-540c-8a5d-2ba5a30aed41"; // DS-0011, demo-store, untracked stock

let env: X402Env;

beforeAll(async () => {
  env = await startX402Env({ rpcUrl: "devnet", fund: [3, 4, 6], config: { X402_CAPTURE_CONFIRMATIONS: 2 } });
  // No in-turn wait for depth: every block here is mined by the test.
  env.srv.running.services.extras.set(EXTRAS_X402_CONFIRM_WAIT_MS, 0);
}, 120_000);

afterAll(async () => {
  await env?.stop();
});

async function anvil(method: string, params: unknown[] = []): Promise<unknown> {
  const r = await fetch(env.devnet.chain.rpcUrl, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify({ jsonrpc: "2.0", id: 1, method, params }) });
  return ((await r.json()) as { result: unknown }).result;
}

async function payloadFor(cartId: string, payerNo: number): Promise<PaymentPayload> {
  return x402Signer(env.devnet, payerOf(env.devnet, payerNo)).createPaymentPayload(await env.challengeOf(cartId));
}

const orderOf = async (cartId: string) => {
  const rows = await env.srv.db.sql<{ status: string; capture_ref: string | null; reconciliation: string | null }[]>`
    SELECT status, capture_ref, reconciliation FROM orders WHERE cart_id = ${cartId}`;
  return rows.map((o) => ({ ...o }));
};
const intentOf = async (cartId: string) => {
  const [row] = await env.srv.db.sql<{ state: string; error_reason: string | null; transaction_hash: string | null }[]>`
    SELECT state, error_reason, transaction_hash FROM x402_intents WHERE cart_id = ${cartId} ORDER BY created_at DESC LIMIT 1`;
  return row ? { ...row } : undefined;
};
const receiptOf = (tx: string) => devnetPublicClient(env.devnet.chain.rpcUrl, env.devnet.chain.chainId).getTransactionReceipt({ hash: tx as Hex }).catch(() => null);

describe("with the store's rpc_url, a facilitator success is not a capture until the transfer is deep", () => {
  test("a transfer one block deep answers 503 SETTLEMENT_UNKNOWN with the order pending; two deep, the same key answers 200 COMPLETED with that transaction", async () => {
    const cartId = await env.newCart([{ product_id: BOARD, quantity: 1 }]);
    const payload = await payloadFor(cartId, 3);
    const mBefore = await env.devnet.balanceOf(env.merchant);
    const key = crypto.randomUUID();
    const first = await env.checkout({ cartId, x402_payload: payload, idempotency_key: key });
    expect({ status: first.status, body: first.body }).toMatchObject({
      status: 503,
      body: { success: false, code: "UPSTREAM_UNAVAILABLE", details: { status: "SETTLEMENT_UNKNOWN" } },
    });
    // The transfer is on chain (one block deep), the order is not paid on it.
    expect(await env.devnet.balanceOf(env.merchant)).toBe(mBefore + BigInt(payload.accepted.amount));
    expect(await orderOf(cartId)).toEqual([{ status: "pending", capture_ref: null, reconciliation: null }]);
    const intent = await intentOf(cartId);
    expect(intent).toMatchObject({ state: "unknown", error_reason: AWAITING_CONFIRMATIONS_REASON });
    expect(intent!.transaction_hash).toMatch(/^0x[0-9a-f]{64}$/);
    const tx = intent!.transaction_hash!;

    await anvil("evm_mine");
    const again = await env.checkout({ cartId, x402_payload: payload, idempotency_key: key });
    expect(again.status).toBe(200);
    expect(again.body.data.status).toBe("COMPLETED");
    expect(again.body.data.x402.settlements[0].transaction).toBe(tx);
    expect(await orderOf(cartId)).toEqual([{ status: "paid", capture_ref: tx, reconciliation: null }]);
    expect(await intentOf(cartId)).toMatchObject({ state: "captured", error_reason: null, transaction_hash: tx });
  }, 60_000);

  test("the reconcile reminder alone pays the order once the transfer is deep, without the agent calling again", async () => {
    const cartId = await env.newCart([{ product_id: BOARD, quantity: 1 }]);
    const payload = await payloadFor(cartId, 4);
    const r = await env.checkout({ cartId, x402_payload: payload, idempotency_key: crypto.randomUUID() });
    expect(r.status).toBe(503);
    expect(r.body.details.status).toBe("SETTLEMENT_UNKNOWN");
    const tx = (await intentOf(cartId))!.transaction_hash!;
    await anvil("evm_mine");
    await waitFor("the reminder to pay the order", async () => (await orderOf(cartId))[0]?.status === "paid", 20_000);
    expect(await orderOf(cartId)).toEqual([{ status: "paid", capture_ref: tx, reconciliation: null }]);
  }, 60_000);

  test("a reorg that drops the transfer before it is deep: the order is never paid on it; the same authorization is sent again and the order is paid once the new transfer is deep, the merchant credited once", async () => {
    const cartId = await env.newCart([{ product_id: BOARD, quantity: 1 }]);
    const payload = await payloadFor(cartId, 6);
    const amount = BigInt(payload.accepted.amount);
    const mBefore = await env.devnet.balanceOf(env.merchant);
    const snapshot = await anvil("evm_snapshot");
    const key = crypto.randomUUID();
    const first = await env.checkout({ cartId, x402_payload: payload, idempotency_key: key });
    expect(first.status).toBe(503);
    expect(first.body.details.status).toBe("SETTLEMENT_UNKNOWN");
    const dropped = (await intentOf(cartId))!.transaction_hash!;

    // The reorg: the block holding the transfer is replaced by an empty one.
    expect(await anvil("evm_revert", [snapshot])).toBe(true);
    await anvil("evm_mine");
    expect(await receiptOf(dropped)).toBeNull();
    expect(await env.devnet.balanceOf(env.merchant)).toBe(mBefore);
    expect((await orderOf(cartId))[0]?.status).toBe("pending");

    // The agent's repeat (same key) reconciles: the nonce is unused again, so the same authorization is re-sent.
    const second = await env.checkout({ cartId, x402_payload: payload, idempotency_key: key });
    expect(second.status).toBe(503);
    expect(second.body.details.status).toBe("SETTLEMENT_UNKNOWN");
    const resent = (await intentOf(cartId))!.transaction_hash!;
    expect(resent).not.toBe(dropped);
    expect(await orderOf(cartId)).toEqual([{ status: "pending", capture_ref: null, reconciliation: null }]);

    await anvil("evm_mine");
    const third = await env.checkout({ cartId, x402_payload: payload, idempotency_key: key });
    expect(third.status).toBe(200);
    expect(third.body.data.status).toBe("COMPLETED");
    expect(third.body.data.x402.settlements[0].transaction).toBe(resent);
    expect(await orderOf(cartId)).toEqual([{ status: "paid", capture_ref: resent, reconciliation: null }]);
    expect(await env.devnet.balanceOf(env.merchant)).toBe(mBefore + amount);
  }, 60_000);

  test("a captured transfer that a reorg removed before its order was written, its authorization still valid: the same authorization is sent again and the order is paid once the new transfer is deep, never flagged 'nothing paid' to the merchant", async () => {
    const cartId = await env.newCart([{ product_id: BOARD, quantity: 1 }]);
    const payload = await payloadFor(cartId, 6);
    const amount = BigInt(payload.accepted.amount);
    const mBefore = await env.devnet.balanceOf(env.merchant);
    const snapshot = await anvil("evm_snapshot");
    const key = crypto.randomUUID();
    const first = await env.checkout({ cartId, x402_payload: payload, idempotency_key: key });
    expect(first.status).toBe(503);
    const tx = (await intentOf(cartId))!.transaction_hash!;
    // The rail recorded the capture and the process died before the cart wrote the order (the cart's leg is still
    // unknown); then a reorg deeper than the capture depth removes the transfer.
    await env.srv.db.sql`UPDATE x402_intents SET state = 'captured', error_reason = NULL WHERE cart_id = ${cartId}`;
    expect(await anvil("evm_revert", [snapshot])).toBe(true);
    await anvil("evm_mine");
    expect(await receiptOf(tx)).toBeNull();
    expect(await env.devnet.balanceOf(env.merchant)).toBe(mBefore);

    // Not "none → refund" while the authorization can still land (review RX-2): like a shallow reorg, re-sent.
    const again = await env.checkout({ cartId, x402_payload: payload, idempotency_key: key });
    expect({ status: again.status, code: again.body.code, status_detail: again.body.details?.status }).toEqual({
      status: 503,
      code: "UPSTREAM_UNAVAILABLE",
      status_detail: "SETTLEMENT_UNKNOWN",
    });
    const resent = (await intentOf(cartId))!.transaction_hash!;
    expect(resent).not.toBe(tx);
    expect(await intentOf(cartId)).toMatchObject({ state: "unknown", error_reason: AWAITING_CONFIRMATIONS_REASON });
    expect(await orderOf(cartId)).toEqual([{ status: "pending", capture_ref: null, reconciliation: null }]);

    await anvil("evm_mine");
    const third = await env.checkout({ cartId, x402_payload: payload, idempotency_key: key });
    expect(third.status).toBe(200);
    expect(third.body.data.x402.settlements[0].transaction).toBe(resent);
    expect(await orderOf(cartId)).toEqual([{ status: "paid", capture_ref: resent, reconciliation: null }]);
    expect(await env.devnet.balanceOf(env.merchant)).toBe(mBefore + amount);
  }, 60_000);
});
