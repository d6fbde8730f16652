/**
 * A cart whose price changes between the checkout's read of what is due (the payload is checked against it) and the
 * settle turn: the rail refuses the leg before anything is sent (`amount_changed_since_authorization`), and the 402
 * says so and challenges for the amount due NOW. It used to answer `settle_failed` with the card rail's "another
 * payment_method" text and a PAYMENT-REQUIRED challenge for the old amount, which an x402 client signs and is refused
 * again (amount_mismatch). Nothing is captured either way; the new challenge's payment then pays once.
 */
import { afterAll, beforeAll, expect, test } from "bun:test";
import { decodePaymentRequired } from "../../actors/payments/x402-challenge.ts";
import { login } from "../helpers/agents.ts";
import { payerOf, startFacilitatorFront, startX402Env, x402Signer, type X402Env } from "./helpers.ts";

const PAYER = 3;
const SHIPPING_MINOR = 699; // demo-store's flat shipping

let env: X402Env;
/** In front of the devnet's facilitator proxy: runs `duringVerify` (once) while holding a /verify. */
let front: ReturnType<typeof Bun.serve>;
let duringVerify: (() => Promise<unknown>) | null = null;

beforeAll(async () => {
  env = await startX402Env({ rpcUrl: "devnet", fund: [PAYER] });
  front = await startFacilitatorFront(env, async () => {
    if (!duringVerify) return;
    const run = duringVerify;
    duringVerify = null;
    await run();
  });
}, 120_000);

afterAll(async () => {
  front?.stop(true);
  await env?.stop();
});

test("a price change between the payload's check and its settle is refused as amount_changed_since_authorization, and the 402 challenges for the new total", async () => {
  const admin = { authorization: `Bearer ${await login(env.srv)}` };
  const made = await env.srv.json("/api/v1/merchant/stores/demo-store/catalog", {
    method: "PUT",
    headers: admin,
    body: { products: [{ externalId: `amount-changed-${crypto.randomUUID()}`, title: "Amount Changed Lamp", category: "Kitchen", price: 10, currency: "USD", stockQuantity: null, inStock: true }] },
  });
  expect(made.status).toBe(200);
  const productId = made.body.data.upserted[0].id as string;
  const cartId = await env.newCart([{ product_id: productId, quantity: 1 }]);
  const payer = payerOf(env.devnet, PAYER);
  const payload = await x402Signer(env.devnet, payer).createPaymentPayload(await env.challengeOf(cartId));
  const idempotencyKey = crypto.randomUUID();
  const before = await env.devnet.balanceOf(payer.address);

  // the merchant's price moves from 10.00 to 20.00 while the facilitator verifies the payment for 10.00 + shipping
  duringVerify = () => env.srv.db.sql`UPDATE products SET price_minor = 2000, updated_at = now() WHERE id = ${productId}`;
  const refused = await env.checkout({ cartId, x402_payload: payload, idempotency_key: idempotencyKey });
  expect(refused.status).toBe(402);
  expect(refused.body).toMatchObject({
    success: false,
    code: "payment_required",
    details: { results: [{ merchant_slug: "demo-store", status: "failed", reason: "amount_changed_since_authorization" }], legs: [{ merchant_slug: "demo-store", amount_minor: 2000 + SHIPPING_MINOR }] },
  });
  expect(refused.body.error).toContain("the cart's total changed");
  expect(refused.body.error).not.toContain("payment_method");
  const challenge = decodePaymentRequired(refused.headers.get("PAYMENT-REQUIRED") ?? "");
  expect(challenge.error).toBe("amount_changed_since_authorization");
  expect(challenge.accepts.map((a) => a.amount)).toEqual([String((2000 + SHIPPING_MINOR) * 10_000)]);
  expect(await env.devnet.balanceOf(payer.address)).toBe(before);
  expect(await env.srv.db.sql`SELECT 1 FROM orders WHERE cart_id = ${cartId} AND status = 'paid'`).toHaveLength(0);

  // the challenge of that answer pays, once, for the new total
  const paid = await env.checkout({ cartId, x402_payload: await x402Signer(env.devnet, payer).createPaymentPayload(challenge), idempotency_key: idempotencyKey });
  expect(paid.status).toBe(200);
  expect(paid.body.data).toMatchObject({ status: "COMPLETED", total_minor: 2000 + SHIPPING_MINOR });
  expect(before - (await env.devnet.balanceOf(payer.address))).toBe(BigInt((2000 + SHIPPING_MINOR) * 10_000));
}, 60_000);
