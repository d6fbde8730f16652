/**
 * A rail refusal that writes no intent row (helper C, C-3): one signed authorization given to two carts at once. Both
 * pass the local checks and the facilitator's /verify (the nonce is unused until one of them settles); the cart that
 * records its intent second finds the authorization taken (x402-rail.ts `charge`, the insert's conflict) and is refused
 * `nonce_reused` before anything is sent. Its answer used to say `settle_failed` ("the facilitator could not settle"),
 * since the checkout read reasons only from intent rows and this refusal has none; the cart's rollback now carries the
 * rail's reason (details.stores[].reason) and the 402 names it. Exactly one payment moves money.
 */
import { afterAll, beforeAll, expect, test } from "bun:test";
import { decodePaymentRequired } from "../../actors/payments/x402-challenge.ts";
import { login } from "../helpers/agents.ts";
import { payerOf, startFacilitatorFront, startX402Env, x402Signer, type X402Env } from "./helpers.ts";

const PAYER = 4;
const SHIPPING_MINOR = 699; // demo-store's flat shipping

let env: X402Env;
/** In front of the devnet's facilitator proxy: while `gate` is set, each /verify waits until `gate.want` have arrived. */
let front: ReturnType<typeof Bun.serve>;
let gate: { want: number; seen: number; open: () => void; opened: Promise<void> } | null = null;

function verifyGate(want: number) {
  let open = () => {};
  const opened = new Promise<void>((resolve) => (open = resolve));
  gate = { want, seen: 0, open, opened };
}

beforeAll(async () => {
  env = await startX402Env({ rpcUrl: "devnet", fund: [PAYER] });
  front = await startFacilitatorFront(env, async () => {
    if (!gate) return;
    const g = gate;
    if (++g.seen >= g.want) g.open();
    await g.opened;
  });
}, 120_000);

afterAll(async () => {
  front?.stop(true);
  await env?.stop();
});

test("one authorization given to two carts at once pays one of them, and the other's 402 says nonce_reused (not settle_failed) with a challenge to sign anew", async () => {
  const admin = { authorization: `Bearer ${await login(env.srv)}` };
  const made = await env.srv.json("/api/v1/merchant/stores/demo-store/catalog", {
    method: "PUT",
    headers: admin,
    body: { products: [{ externalId: `nonce-race-${crypto.randomUUID()}`, title: "Nonce Race Lamp", category: "Kitchen", price: 10, currency: "USD", stockQuantity: null, inStock: true }] },
  });
  expect(made.status).toBe(200);
  const productId = made.body.data.upserted[0].id as string;
  const carts = [await env.newCart([{ product_id: productId, quantity: 1 }]), await env.newCart([{ product_id: productId, quantity: 1 }])];
  const payer = payerOf(env.devnet, PAYER);
  // the challenges of the two carts are alike (same store, amount, asset, payTo): one signature pays either
  const payload = await x402Signer(env.devnet, payer).createPaymentPayload(await env.challengeOf(carts[0]!));
  const before = await env.devnet.balanceOf(payer.address);

  const keys = [crypto.randomUUID(), crypto.randomUUID()];
  verifyGate(2);
  const answers = await Promise.all(carts.map((cartId, i) => env.checkout({ cartId, x402_payload: payload, idempotency_key: keys[i] })));
  gate = null;

  expect(answers.map((a) => a.status).sort()).toEqual([200, 402]);
  const paid = answers.find((a) => a.status === 200)!;
  const refused = answers.find((a) => a.status === 402)!;
  expect(paid.body.data).toMatchObject({ status: "COMPLETED", total_minor: 1000 + SHIPPING_MINOR });
  expect(refused.body).toMatchObject({
    success: false,
    code: "payment_required",
    details: { results: [{ merchant_slug: "demo-store", status: "failed", reason: "nonce_reused" }] },
  });
  expect(refused.body.error).toContain("already used by another payment");
  expect(refused.body.error).toContain("nothing was captured");
  expect(refused.body.error).not.toContain("could not settle");
  const challenge = decodePaymentRequired(refused.headers.get("PAYMENT-REQUIRED") ?? "");
  expect(challenge.error).toBe("nonce_reused");
  // money moved once
  expect(before - (await env.devnet.balanceOf(payer.address))).toBe(BigInt((1000 + SHIPPING_MINOR) * 10_000));
  const refusedCart = carts[answers.indexOf(refused)]!;
  expect(await env.srv.db.sql`SELECT 1 FROM orders WHERE cart_id = ${refusedCart} AND status = 'paid'`).toHaveLength(0);

  // the way on the answer names: a new authorization for its challenge, with the same idempotency_key, pays it once
  const fresh = await x402Signer(env.devnet, payer).createPaymentPayload(challenge);
  const again = await env.checkout({ cartId: refusedCart, x402_payload: fresh, idempotency_key: keys[answers.indexOf(refused)] });
  expect(again.status).toBe(200);
  expect(again.body.data).toMatchObject({ status: "COMPLETED" });
  expect(before - (await env.devnet.balanceOf(payer.address))).toBe(BigInt(2 * (1000 + SHIPPING_MINOR) * 10_000));
}, 90_000);
