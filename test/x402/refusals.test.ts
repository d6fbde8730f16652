/**
 * What an agent is told when an x402 payment is refused (audit V4), and a request that carries two payments (audit V,
 * "Also seen"). The real server, the devnet and the facilitator proxy.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import type { PaymentPayload } from "@x402/core/types";
import { encodePaymentSignature } from "../../actors/payments/x402-challenge.ts";
import { refusalMessage } from "../../actors/payments/x402-rail.ts";
import { payerOf, startX402Env, x402Signer, type X402Env } from "./helpers.ts";

const BOARD = "5befd987-79cd-540c-8a5d-2ba5a30aed41"; // DS-0011, demo-store, untracked stock
const FUNDED = 3;
const UNFUNDED = 7;

let env: X402Env;

beforeAll(async () => {
  env = await startX402Env({ rpcUrl: "devnet", fund: [FUNDED] });
}, 120_000);

afterAll(async () => {
  await env?.stop();
});

const newCart = () => env.newCart([{ product_id: BOARD, quantity: 1 }]);

async function payloadFor(cartId: string, payerNo: number): Promise<PaymentPayload> {
  return x402Signer(env.devnet, payerOf(env.devnet, payerNo)).createPaymentPayload(await env.challengeOf(cartId));
}

const ordersOf = async (cartId: string) => (await env.srv.db.sql<{ status: string }[]>`SELECT status FROM orders WHERE cart_id = ${cartId}`).map((o) => o.status);

describe("a facilitator refusal reaches the agent as our own sentence (V4)", () => {
  test("an unfunded payer gets 402 with 'the payer's balance is below the amount', the reason code, and no library text, call arguments or signature", async () => {
    const cartId = await newCart();
    const payload = await payloadFor(cartId, UNFUNDED);
    const r = await env.checkout({ cartId, x402_payload: payload, idempotency_key: crypto.randomUUID() });
    expect(r.status).toBe(402);
    expect(r.body).toMatchObject({
      success: false,
      code: "payment_required",
      error: "x402 payment refused: the payer's balance is below the amount",
      details: { reason: "invalid_exact_evm_insufficient_balance", merchant_slug: "demo-store" },
    });
    const text = JSON.stringify(r.body);
    const signature = (payload.payload as { signature: string }).signature;
    for (const leak of ["viem", "Contract Call", "transferWithAuthorization", "Docs:", signature.slice(2, 66)]) expect(text).not.toContain(leak);
    expect(await ordersOf(cartId)).toEqual([]);
  }, 60_000);

  test("a reason without a sentence of ours is named, not explained by the facilitator's text", () => {
    expect(refusalMessage("invalid_exact_evm_signature")).toBe("the authorization's signature does not match its payer");
    expect(refusalMessage("some_new_reason")).toBe("the facilitator refused the payment (some_new_reason)");
  });
});

describe("one request carries one payment", () => {
  test("a body x402_payload and a PAYMENT-SIGNATURE header together are 400 INVALID_ARGUMENT naming both; nothing is charged and no order is written", async () => {
    const cartId = await newCart();
    const p1 = await payloadFor(cartId, FUNDED);
    const p2 = await payloadFor(cartId, FUNDED);
    const payer = payerOf(env.devnet, FUNDED).address;
    const before = await env.devnet.balanceOf(payer);
    const r = await env.srv.json("/api/v1/agent/checkout", {
      method: "POST",
      headers: { ...env.key.headers, "PAYMENT-SIGNATURE": encodePaymentSignature(p2) },
      body: { cartId, payment_rail: "x402", x402_config: env.x402Config, x402_payload: p1, idempotency_key: crypto.randomUUID() },
    });
    expect({ status: r.status, code: r.body.code, details: r.body.details }).toEqual({
      status: 400,
      code: "INVALID_ARGUMENT",
      details: { field: "x402_payload", payment_sources: ["x402_payload", "PAYMENT-SIGNATURE"] },
    });
    expect(await env.devnet.balanceOf(payer)).toBe(before);
    expect(await ordersOf(cartId)).toEqual([]);
  }, 60_000);

  test("pay_with_wallet with an x402_payload is 400 INVALID_ARGUMENT naming both", async () => {
    const cartId = await newCart();
    const p1 = await payloadFor(cartId, FUNDED);
    const r = await env.checkout({ cartId, x402_payload: p1, pay_with_wallet: true, idempotency_key: crypto.randomUUID() });
    expect({ status: r.status, code: r.body.code, details: r.body.details }).toEqual({
      status: 400,
      code: "INVALID_ARGUMENT",
      details: { field: "x402_payload", payment_sources: ["x402_payload", "pay_with_wallet"] },
    });
    expect(await ordersOf(cartId)).toEqual([]);
  }, 60_000);
});
