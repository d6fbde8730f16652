/**
 * Review R6 LOW-1: a valid, signed AP2 intent mandate may name any number of merchants, of any length (AP2 bounds
 * neither; only the body limit does). 339602b copied that list into the cart's `checkout` message, whose schema
 * bounds payees (100 slugs of at most 200 characters), so such a mandate was refused with 400 "invalid cart.checkout
 * message". The gateway now passes only the cart's own merchants that the mandate names, and the payment goes
 * through as before; the limits still bind the paying turn.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import * as ap2 from "../helpers/ap2.ts";
import { DEST, SUMMIT, paymentContents, type Ap2Agent } from "../helpers/ap2.ts";
import type { TestServer } from "../helpers/server.ts";

let a: Ap2Agent;
let srv: TestServer;

beforeAll(async () => {
  a = await ap2.startAp2Agent();
  srv = a.srv;
}, 120_000);
afterAll(async () => {
  await srv?.stop();
});

const post = (path: string, body: unknown) => ap2.agentPost(a.srv, a.key)(path, body);
const sign = (parts: unknown[]) => ap2.signMandate(a.userKey, parts);
const cheapCart = () => ap2.cheapCart(a);
const paidOrders = (cartId: string) => ap2.paidOrders(srv, cartId);

/** An AP2 payment for `cartId` capped at `max`, with a signed intent mandate naming `merchants`. */
async function mandateBody(cartId: string, max: number, merchants: string[]) {
  const pmc = paymentContents(max);
  const im = { natural_language_description: "running shoes", merchants, intent_expiry: new Date(Date.now() + 3_600_000).toISOString() };
  return { mandateId: pmc.payment_mandate_id, body: { cart_id: cartId, intent_mandate: im, payment_mandate: { payment_mandate_contents: pmc, user_authorization: await sign([pmc, im]) } } };
}

describe("an AP2 intent mandate's merchant list is not bounded by the cart's message (R6 LOW-1)", () => {
  const cases: [string, () => string[]][] = [
    ["101 merchants", () => [SUMMIT, ...Array.from({ length: 100 }, (_, i) => `shop-${i}`)]],
    ["a merchant name of 201 characters", () => [SUMMIT, "x".repeat(201)]],
    ["1,000 merchants of 300 characters", () => [...Array.from({ length: 999 }, (_, i) => `${i}-${"m".repeat(296)}`), SUMMIT]],
  ];
  for (const [label, merchants] of cases) {
    test(`a signed mandate naming ${label} pays the cart (200)`, async () => {
      const cart = await cheapCart();
      const { body } = await mandateBody(cart.cartId, cart.total, merchants());
      const res = await post("/ap2/payment-mandates", body);
      expect(res.status).toBe(200);
      expect(res.body.success).toBe(true);
      expect(res.body.data.payment_status.merchant_confirmation_id).toBeString();
      expect((await paidOrders(cart.cartId)).map((o) => Number(o.total_minor))).toEqual([cart.totalMinor]);
    }, 60_000);
  }

  test("a long list that does not name the cart's merchant is still 403 payee, and nothing is paid", async () => {
    const cart = await cheapCart();
    const { body } = await mandateBody(cart.cartId, cart.total, Array.from({ length: 150 }, (_, i) => `shop-${i}`));
    const res = await post("/ap2/payment-mandates", body);
    expect(res.status).toBe(403);
    expect(res.body.code).toBe("MANDATE_LIMIT_EXCEEDED");
    expect(res.body.details.violated).toBe("payee");
    expect((await paidOrders(cart.cartId)).length).toBe(0);
  }, 60_000);

  test("with a long list the paying turn still binds the amount: a dearer option picked after the check is 403 amount", async () => {
    const cart = await cheapCart();
    const { body, mandateId } = await mandateBody(cart.cartId, cart.total, [SUMMIT, ...Array.from({ length: 120 }, (_, i) => `shop-${i}`)]);
    // The dearer option lands between the gateway's check and the payment (as in ap2-limits-in-payment-turn.test.ts).
    const res = await ap2.payWithChangeInBetween(a, body, mandateId, async () => {
      expect((await post("/checkout/preview", { cartId: cart.cartId, shipping: { ...DEST, option_id: cart.dear } })).status).toBe(200);
    });
    expect(res.status).toBe(403);
    expect(res.body.code).toBe("MANDATE_LIMIT_EXCEEDED");
    expect(res.body.details.violated).toBe("amount");
    expect(res.body.details.checked_at).toBe("payment");
    // the paying turn's echo names the mandate's merchants this cart pays, not the whole list
    expect(res.body.details.mandate.merchants).toEqual([SUMMIT]);
    expect((await paidOrders(cart.cartId)).length).toBe(0);
  }, 60_000);
});
