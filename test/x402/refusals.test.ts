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

/** Stand-in facilitators that answer free text (engineer AJ's port range). */
const FAKE_VERIFY_PORT = 7981;
const FAKE_SETTLE_PORT = 7982;
/** What @x402/evm's v1 settle (and any facilitator) can put where a reason code belongs: viem's error text. */
const FREE_TEXT = `The contract function "transferWithAuthorization" reverted.\n\nContract Call:\n  args: (0xabc, 33940000, 0x${"ab".repeat(65)})\n\nVersion: viem@2.57.20 ${"x".repeat(1200)}`;
const useFacilitator = (url: string) => env.srv.db.sql`UPDATE store_x402_config SET facilitator_url = ${url} WHERE store_slug = 'demo-store'`;

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
    expect(refusalMessage("Contract call reverted: viem@2")).toBe("the facilitator refused the payment");
  });

  test("a facilitator /verify whose invalidReason is free text (library version, call arguments) gets 402 with the generic code facilitator_refused and none of that text", async () => {
    const fake = Bun.serve({
      port: FAKE_VERIFY_PORT,
      hostname: "127.0.0.1",
      fetch: async (req) => {
        const b = (await req.json().catch(() => ({}))) as { paymentPayload?: { payload?: { authorization?: { from?: string } } } };
        if (new URL(req.url).pathname.endsWith("/verify")) {
          return Response.json({ isValid: false, invalidReason: FREE_TEXT, payer: b.paymentPayload?.payload?.authorization?.from }, { status: 400 });
        }
        return new Response("no", { status: 404 });
      },
    });
    try {
      await useFacilitator(`http://127.0.0.1:${FAKE_VERIFY_PORT}`);
      const cartId = await newCart();
      const r = await env.checkout({ cartId, x402_payload: await payloadFor(cartId, FUNDED), idempotency_key: crypto.randomUUID() });
      expect(r.status).toBe(402);
      expect(r.body).toMatchObject({
        success: false,
        code: "payment_required",
        error: "x402 payment refused: the facilitator refused the payment",
        details: { reason: "facilitator_refused", merchant_slug: "demo-store" },
      });
      const text = JSON.stringify(r.body);
      for (const leak of ["viem", "Contract Call", "transferWithAuthorization", "ab".repeat(65)]) expect(text).not.toContain(leak);
      expect(await ordersOf(cartId)).toEqual([]);
    } finally {
      fake.stop(true);
      await useFacilitator(env.proxy.url);
    }
  }, 60_000);

  test("a facilitator /settle whose errorReason is free text is recorded as settle_failed, and the agent gets 503 SETTLEMENT_UNKNOWN without that text", async () => {
    const fake = Bun.serve({
      port: FAKE_SETTLE_PORT,
      hostname: "127.0.0.1",
      fetch: async (req) => {
        const b = (await req.json().catch(() => ({}))) as { paymentPayload?: { payload?: { authorization?: { from?: string } } }; paymentRequirements?: { network?: string } };
        const payer = b.paymentPayload?.payload?.authorization?.from;
        const path = new URL(req.url).pathname;
        if (path.endsWith("/verify")) return Response.json({ isValid: true, payer });
        if (path.endsWith("/settle")) return Response.json({ success: false, errorReason: FREE_TEXT, transaction: "", network: b.paymentRequirements?.network, payer });
        return new Response("no", { status: 404 });
      },
    });
    try {
      await useFacilitator(`http://127.0.0.1:${FAKE_SETTLE_PORT}`);
      const cartId = await newCart();
      const r = await env.checkout({ cartId, x402_payload: await payloadFor(cartId, FUNDED), idempotency_key: crypto.randomUUID() });
      expect({ status: r.status, code: r.body.code, status_detail: r.body.details?.status }).toEqual({
        status: 503,
        code: "UPSTREAM_UNAVAILABLE",
        status_detail: "SETTLEMENT_UNKNOWN",
      });
      expect(JSON.stringify(r.body)).not.toContain("viem");
      const [intent] = await env.srv.db.sql<{ state: string; error_reason: string | null }[]>`SELECT state, error_reason FROM x402_intents WHERE cart_id = ${cartId}`;
      expect({ ...intent }).toEqual({ state: "unknown", error_reason: "settle_failed" });
    } finally {
      fake.stop(true);
      await useFacilitator(env.proxy.url);
    }
  }, 60_000);
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

  test("a PAYMENT-SIGNATURE and an X-PAYMENT header together are 400 INVALID_ARGUMENT naming both; neither is charged, and the X-PAYMENT one still pays its cart alone", async () => {
    const cartId = await newCart();
    const challenge = await env.challengeOf(cartId);
    const signer = x402Signer(env.devnet, payerOf(env.devnet, FUNDED));
    const pA = await signer.createPaymentPayload(challenge);
    const pB = await signer.createPaymentPayload(challenge);
    const payer = payerOf(env.devnet, FUNDED).address;
    const before = await env.devnet.balanceOf(payer);
    const r = await env.srv.json("/api/v1/agent/checkout", {
      method: "POST",
      headers: { ...env.key.headers, "PAYMENT-SIGNATURE": encodePaymentSignature(pA), "X-PAYMENT": encodePaymentSignature(pB) },
      body: { cartId, payment_rail: "x402", x402_config: env.x402Config, idempotency_key: crypto.randomUUID() },
    });
    expect({ status: r.status, code: r.body.code, details: r.body.details }).toEqual({
      status: 400,
      code: "INVALID_ARGUMENT",
      details: { field: "x402_payload", payment_sources: ["PAYMENT-SIGNATURE", "X-PAYMENT"] },
    });
    expect(await env.devnet.balanceOf(payer)).toBe(before);
    expect(await ordersOf(cartId)).toEqual([]);
    const alone = await env.srv.json("/api/v1/agent/checkout", {
      method: "POST",
      headers: { ...env.key.headers, "X-PAYMENT": encodePaymentSignature(pB) },
      body: { cartId, payment_rail: "x402", x402_config: env.x402Config, idempotency_key: crypto.randomUUID() },
    });
    expect(alone.status).toBe(200);
    expect(alone.body.data.status).toBe("COMPLETED");
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
