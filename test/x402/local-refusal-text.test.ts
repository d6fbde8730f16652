/**
 * The local checks' refusals (x402-verify.ts) say what is wrong in our own words: a payload whose authorization holds a
 * number beyond uint256 is `malformed` (it was `invalid_signature`), and a signature that recovers no signer (r = 0, a
 * bad v) is `invalid_signature` without viem's or noble's error text (a curve bound, "Version: viem@…"), as for a
 * facilitator's refusal text (audit V4, review RX-4). Nothing is sent to the facilitator and no money moves.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import type { PaymentPayload } from "@x402/core/types";
import { payerOf, startX402Env, x402Signer, type X402Env } from "./helpers.ts";

const BOARD = "5befd987-79cd-540c-8a5d-2ba5a30aed41"; // DS-0011, demo-store
const PAYER = 3;

let env: X402Env;
beforeAll(async () => {
  env = await startX402Env({ rpcUrl: "devnet", fund: [PAYER] });
}, 120_000);
afterAll(async () => {
  await env?.stop();
});

/** A cart of one board and a valid payload for it, with `change` applied to the payload's authorization or signature. */
async function tamperedPayload(change: (p: { signature: string; authorization: Record<string, string> }) => void): Promise<{ cartId: string; payload: PaymentPayload }> {
  const cartId = await env.newCart([{ product_id: BOARD, quantity: 1 }]);
  const signed = await x402Signer(env.devnet, payerOf(env.devnet, PAYER)).createPaymentPayload(await env.challengeOf(cartId));
  const inner = structuredClone(signed.payload) as { signature: string; authorization: Record<string, string> };
  change(inner);
  return { cartId, payload: { ...signed, payload: inner } };
}

const LIBRARY_TEXT = /viem|noble|Version:|safe 256-bit|expected valid|yParity|115792089237316195423570985008687907853269984665640564039457584007913129639935/i;

describe("the local checks' refusals", () => {
  for (const field of ["validBefore", "validAfter"]) {
    test(`an authorization whose ${field} is larger than a uint256 is refused as malformed, in our words, with nothing charged`, async () => {
      const { cartId, payload } = await tamperedPayload((p) => {
        p.authorization[field] = "9".repeat(78);
      });
      const before = await env.devnet.balanceOf(payerOf(env.devnet, PAYER).address);
      const r = await env.checkout({ cartId, x402_payload: payload, idempotency_key: crypto.randomUUID() });
      expect(r.status).toBe(402);
      expect(r.body).toMatchObject({ success: false, code: "payment_required", details: { reason: "malformed" } });
      expect(r.body.error).toContain(`authorization.${field} is larger than a uint256`);
      expect(JSON.stringify(r.body)).not.toMatch(LIBRARY_TEXT);
      expect(await env.devnet.balanceOf(payerOf(env.devnet, PAYER).address)).toBe(before);
    });
  }

  const broken: [string, (sig: string) => string][] = [
    ["whose r and s are zero", () => `0x${"0".repeat(130)}`],
    ["whose v is neither 27 nor 28", (sig) => `${sig.slice(0, -2)}05`],
  ];
  for (const [what, breakIt] of broken) {
    test(`a signature ${what} is invalid_signature without the signature library's error text`, async () => {
      const { cartId, payload } = await tamperedPayload((p) => {
        p.signature = breakIt(p.signature);
      });
      const r = await env.checkout({ cartId, x402_payload: payload, idempotency_key: crypto.randomUUID() });
      expect(r.status).toBe(402);
      expect(r.body).toMatchObject({ success: false, code: "payment_required", details: { reason: "invalid_signature" } });
      expect(r.body.error).toBe("x402 payment refused: the signature is not a valid ECDSA signature (it recovers no signer)");
      expect(JSON.stringify(r.body)).not.toMatch(LIBRARY_TEXT);
      expect(await env.srv.db.sql`SELECT 1 FROM orders WHERE cart_id = ${cartId}`).toHaveLength(0);
    });
  }
});
