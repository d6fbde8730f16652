/**
 * Review R4-5: an AP2 mandate's limits bind the total the cart charges, not the cart the gateway read one turn
 * earlier. The shipping pick is made to land between the gateway's check and the payment deterministically: the
 * test holds an uncommitted row on the mandate's binding key (bridge_sessions), so the gateway's bindMandate waits
 * there after checkMandate passed, and the agent picks the dearer option meanwhile.
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
const payWithChangeInBetween = (body: unknown, mandateId: string, meanwhile: () => Promise<void>) => ap2.payWithChangeInBetween(a, body, mandateId, meanwhile);
const paidOrders = (cartId: string) => ap2.paidOrders(srv, cartId);

describe("AP2 limits are checked on the total the payment charges (R4-5)", () => {
  test("a dearer shipping option picked after the gateway's check is refused with 403 MANDATE_LIMIT_EXCEEDED amount, and nothing is charged", async () => {
    const cart = await cheapCart();
    const pmc = paymentContents(cart.total);
    const body = { cart_id: cart.cartId, payment_mandate: { payment_mandate_contents: pmc, user_authorization: await sign([pmc]) } };
    let dearTotalMinor = 0;
    const res = await payWithChangeInBetween(body, pmc.payment_mandate_id, async () => {
      const pv = await post("/checkout/preview", { cartId: cart.cartId, shipping: { ...DEST, option_id: cart.dear } });
      expect(pv.status).toBe(200);
      dearTotalMinor = pv.body.data.totals.total_minor;
    });
    expect(dearTotalMinor).toBeGreaterThan(cart.totalMinor);
    expect(res.status).toBe(403);
    expect(res.body.code).toBe("MANDATE_LIMIT_EXCEEDED");
    expect(res.body.details.violated).toBe("amount");
    expect(res.body.details.cart_total_minor).toBe(dearTotalMinor);
    expect(res.body.details.mandate.max_amount_minor).toBe(cart.totalMinor);
    expect(res.body.details.mandate.payment_mandate_id).toBe(pmc.payment_mandate_id);
    expect((await paidOrders(cart.cartId)).length).toBe(0);
    const [held] = await srv.db.sql<{ n: number }[]>`SELECT count(*)::int AS n FROM orders WHERE cart_id = ${cart.cartId}`;
    expect(held!.n).toBe(0); // refused before the hold: no pending order either
  }, 60_000);

  test("a signed cart mandate's exact total binds the payment: a dearer option picked after the check is 403 cart_contents", async () => {
    const cart = await cheapCart();
    const cm = {
      contents: {
        id: `cart_${cart.cartId}`,
        cart_expiry: new Date(Date.now() + 3_600_000).toISOString(),
        merchant_name: SUMMIT,
        payment_request: {
          details: {
            display_items: [{ label: cart.line.title, amount: { currency: "USD", value: cart.line.line_total } }],
            total: { label: "Total", amount: { currency: "USD", value: cart.total } },
          },
        },
      },
    };
    const pmc = paymentContents(500); // the payment's own cap would allow the dearer total: the cart mandate must not
    const body = { cart_id: cart.cartId, cart_mandate: cm, payment_mandate: { payment_mandate_contents: pmc, user_authorization: await sign([pmc, cm]) } };
    const res = await payWithChangeInBetween(body, pmc.payment_mandate_id, async () => {
      expect((await post("/checkout/preview", { cartId: cart.cartId, shipping: { ...DEST, option_id: cart.dear } })).status).toBe(200);
    });
    expect(res.status).toBe(403);
    expect(res.body.code).toBe("MANDATE_LIMIT_EXCEEDED");
    expect(res.body.details.violated).toBe("cart_contents");
    expect(res.body.details.cart_mandate).toEqual({ id: `cart_${cart.cartId}`, currency: "USD", total_minor: cart.totalMinor });
    expect(res.body.details.cart_total_minor).toBeGreaterThan(cart.totalMinor);
    expect((await paidOrders(cart.cartId)).length).toBe(0);
  }, 60_000);

  test("with no change in between the same mandate pays the total it was checked on", async () => {
    const cart = await cheapCart();
    const pmc = paymentContents(cart.total);
    const body = { cart_id: cart.cartId, payment_mandate: { payment_mandate_contents: pmc, user_authorization: await sign([pmc]) } };
    const res = await payWithChangeInBetween(body, pmc.payment_mandate_id, async () => {});
    expect(res.status).toBe(200);
    expect((await paidOrders(cart.cartId)).map((o) => Number(o.total_minor))).toEqual([cart.totalMinor]);
  }, 60_000);

  test("racing payments and shipping changes never charge more than the mandate (the reviewer's race, 12 tries)", async () => {
    let over = 0;
    let refused = 0;
    for (let i = 0; i < 12; i++) {
      const cart = await cheapCart();
      const pmc = paymentContents(cart.total);
      const body = { cart_id: cart.cartId, payment_mandate: { payment_mandate_contents: pmc, user_authorization: await sign([pmc]) } };
      const [a] = await Promise.all([
        post("/ap2/payment-mandates", body),
        Bun.sleep(i % 6).then(() => post("/checkout/preview", { cartId: cart.cartId, shipping: { ...DEST, option_id: cart.dear } })),
      ]);
      if (a.status === 403) {
        expect(a.body.code).toBe("MANDATE_LIMIT_EXCEEDED");
        refused++;
      } else expect(a.status).toBe(200);
      for (const o of await paidOrders(cart.cartId)) if (Number(o.total_minor) > cart.totalMinor) over++;
    }
    console.log(`R4-5 race: ${refused} of 12 refused, ${over} paid over the mandate`);
    expect(over).toBe(0);
  }, 240_000);
});
