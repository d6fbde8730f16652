/**
 * Model finding M-1 (session 12, test/helpers/checkout-model.ts shipping choices): a partly paid cart whose session
 * ended (the agent canceled it after one merchant was paid) took a new destination at its next preview, so the
 * remaining merchants were quoted and charged shipping to another place than the paid order ships to. The destination
 * is shared by every merchant of the cart; once one is paid it can no longer change, whether the session that paid it
 * is live or has ended (docs/checkout.md "Shipping", actors/cart/index.ts chooseCartShipping).
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { twoTenants, type TestKey } from "../helpers/agents.ts";
import { partlyPaidThenCanceled } from "../helpers/partly-paid.ts";
import { startServer, type TestServer } from "../helpers/server.ts";

let srv: TestServer;
let key: TestKey;

beforeAll(async () => {
  srv = await startServer({ seed: true, config: { RATE_LIMITS_ENABLED: false } });
  ({ key } = await twoTenants(srv));
}, 120_000);
afterAll(async () => {
  await srv?.stop();
});

const preview = (body: Record<string, unknown>) => srv.json("/api/v1/agent/checkout/preview", { method: "POST", headers: key.headers, body });

describe("the destination of a cart whose session ended after a merchant was paid (model finding M-1)", () => {
  test("a new destination at the next preview is refused 409 CHECKOUT_STATUS_INVALID merchant_already_paid, and the cart keeps none", async () => {
    const { cartId, sid } = await partlyPaidThenCanceled(srv, key);
    const r = await preview({ cartId, shipping: { country_code: "GB", postal_code: "SW1A 1AA" } });
    expect({ status: r.status, success: r.body.success, code: r.body.code, details: r.body.details }).toEqual({
      status: 409,
      success: false,
      code: "CHECKOUT_STATUS_INVALID",
      details: { status: "CANCELED", reason: "merchant_already_paid", merchant_slugs: ["demo-store"] },
    });
    expect(typeof r.body.error).toBe("string");
    const cart = await srv.json(`/api/v1/agent/cart/${cartId}`, { headers: key.headers });
    expect({ status: cart.status, shipping: cart.body.data.shipping, cart: cart.body.data.status }).toEqual({ status: 200, shipping: null, cart: "CHECKOUT" });
    // the same shipping as approved (none given: the domestic quote) still previews the remaining merchant
    const again = await preview({ cartId });
    expect({ status: again.status, session: again.body.data.checkout_session_id !== sid, merchants: again.body.data.merchants.map((m: { merchant_slug: string; shipping_option: unknown }) => [m.merchant_slug, m.shipping_option]) }).toEqual({
      status: 200,
      session: true,
      merchants: expect.arrayContaining([["greenleaf-living", null]]),
    });
  }, 60_000);
});
