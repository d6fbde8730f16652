/**
 * AP2's PaymentReceipt says the amount the payment charged, through HTTP against the real server (helper E, session
 * 20). The receipt's `amount` was the total of the cart the gateway read before the payment turn; a repricing in
 * between that the mandate allows (a cheaper shipping option picked through REST) was charged at the new total while
 * the receipt reported the old one, an amount never captured. The race is driven as in ap2-limits-in-payment-turn:
 * the test holds the mandate's binding key so the gateway waits after its read, and picks the option meanwhile.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import * as ap2 from "../helpers/ap2.ts";
import { DEST, paymentContents, type Ap2Agent } from "../helpers/ap2.ts";

let a: Ap2Agent;
beforeAll(async () => {
  a = await ap2.startAp2Agent();
}, 120_000);
afterAll(async () => {
  await a?.srv.stop();
});

const post = (path: string, body: unknown) => ap2.agentPost(a.srv, a.key)(path, body);

/** A one-line summit cart previewed with its dearest option, and its cheapest option's id. */
async function dearCart(): Promise<{ cartId: string; cheap: string; dearTotalMinor: number }> {
  const c = await post("/cart", { items: [{ product_id: a.product, quantity: 1 }] });
  const cartId = c.body.data.id as string;
  const listed = await post("/checkout/preview", { cartId, shipping: DEST });
  const byCost = [...(listed.body.details.options as { option_id: string; cost: number }[])].sort((x, y) => x.cost - y.cost);
  const pv = await post("/checkout/preview", { cartId, shipping: { ...DEST, option_id: byCost[byCost.length - 1]!.option_id } });
  expect(pv.status).toBe(200);
  return { cartId, cheap: byCost[0]!.option_id, dearTotalMinor: pv.body.data.totals.total_minor };
}

describe("AP2 receipt amount", () => {
  test("a cheaper option picked after the gateway's read is charged, and the receipt's amount is the charged total, also on a replay", async () => {
    const cart = await dearCart();
    const pmc = paymentContents(500);
    const body = { cart_id: cart.cartId, payment_mandate: { payment_mandate_contents: pmc, user_authorization: await ap2.signMandate(a.userKey, [pmc]) } };
    let cheapTotalMinor = 0;
    const res = await ap2.payWithChangeInBetween(a, body, pmc.payment_mandate_id, async () => {
      const pv = await post("/checkout/preview", { cartId: cart.cartId, shipping: { ...DEST, option_id: cart.cheap } });
      expect(pv.status).toBe(200);
      cheapTotalMinor = pv.body.data.totals.total_minor;
    });
    expect(cheapTotalMinor).toBeLessThan(cart.dearTotalMinor);
    expect(res.status).toBe(200);
    const paid = await ap2.paidOrders(a.srv, cart.cartId);
    expect(paid.map((o) => Number(o.total_minor))).toEqual([cheapTotalMinor]);
    expect(res.body.data.amount).toEqual({ currency: "USD", value: cheapTotalMinor / 100 });

    const again = await post("/ap2/payment-mandates", body);
    expect(again.status).toBe(200);
    expect(again.body.data.order_ids).toEqual(res.body.data.order_ids);
    expect(again.body.data.amount).toEqual({ currency: "USD", value: cheapTotalMinor / 100 });
  }, 60_000);
});
