/**
 * A partly paid cart (review R5-5: a two-store checkout where one store's leg captured and the other's was declined,
 * then the session canceled) refuses edits on REST with 409 CART_NOT_MUTABLE reason partly_paid. The MCP edit tools
 * (update_cart_item, remove_cart_item, ucp_update_cart) must answer the same refusal: the same code, message and
 * details as the REST envelope, before the human is asked. A cart frozen by a live session likewise answers the
 * cart actor's own refusal on both. Through the SDK client against the real server; the cart is made over REST, the
 * only way to put two stores in one cart.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { ManualClock } from "../../actors/runtime/clock.ts";
import { ALL_SCOPES, createKey, type TestKey } from "../helpers/agents.ts";
import { BOARD, partlyPaidThenCanceled } from "../helpers/partly-paid.ts";
import { startServer, type TestServer } from "../helpers/server.ts";
import { accept, connect, counted, DEMO_PRODUCT, errorOf, type Connected } from "./helpers.ts";

const DAY_MS = 24 * 60 * 60 * 1000;
const clock = new ManualClock(Date.now());
let srv: TestServer;
let key: TestKey;
let demo: Connected;

beforeAll(async () => {
  srv = await startServer({ seed: true, boot: { clock }, config: { RATE_LIMITS_ENABLED: false } });
  key = await createKey(srv, { scopes: ALL_SCOPES, tier: "ENTERPRISE" });
  demo = await connect(srv, { headers: key.headers, elicit: accept });
}, 120_000);
afterAll(async () => {
  await demo?.close();
  await srv?.stop();
});

/** The REST refusal of an edit of the cart (apply-coupon, the REST edit of an existing cart). */
async function restRefusal(cartId: string): Promise<{ code: string; message: string; details: Record<string, unknown> }> {
  const r = await srv.json("/api/v1/agent/apply-coupon", { method: "POST", headers: key.headers, body: { cartId, code: "WELCOME10" } });
  expect(r.status).toBe(409);
  return { code: r.body.code, message: r.body.error, details: r.body.details };
}

const edits = (cartId: string): [string, Record<string, unknown>][] => [
  ["update_cart_item", { cart_id: cartId, product_id: BOARD, quantity: 2 }],
  ["remove_cart_item", { cart_id: cartId, product_id: BOARD }],
  ["ucp_update_cart", { cart_id: cartId, product_id: BOARD, quantity: 3 }],
];

describe("MCP edits of a partly paid cart", () => {
  test("are CART_NOT_MUTABLE reason partly_paid with the REST envelope's message and details, without asking the human", async () => {
    const { cartId, sid } = await partlyPaidThenCanceled(srv, key);
    const rest = await restRefusal(cartId);
    expect(rest.details).toMatchObject({ reason: "partly_paid", checkout_session_id: sid, checkout_status: "CANCELED", paid_merchant_slugs: ["demo-store"], required_step: "preview_checkout" });
    for (const [tool, args] of edits(cartId)) {
      const { result, asked } = await counted(demo, () => demo.call(tool, args));
      const e = errorOf(result);
      expect({ tool, code: e.code, message: e.message, details: e.details }).toEqual({ tool, ...rest });
      expect(e.remedy).toBe("refresh_state");
      expect(asked).toBe(0);
    }
    // nothing was rebuilt: the cart is still the partly paid one, not replaced
    const g = await srv.json(`/api/v1/agent/cart/${cartId}`, { headers: key.headers });
    expect(g.body.data.status).toBe("CHECKOUT");
  }, 90_000);
});

describe("MCP edits of a cart frozen by its live checkout session", () => {
  test("answer the cart's own refusal, as REST does: the session, its status and how to unfreeze the cart", async () => {
    const c = await srv.json("/api/v1/agent/cart", { method: "POST", headers: key.headers, body: { items: [{ product_id: DEMO_PRODUCT, quantity: 1 }] } });
    expect(c.status).toBe(201);
    const cartId: string = c.body.data.id;
    const pv = await srv.json("/api/v1/agent/checkout/preview", { method: "POST", headers: key.headers, body: { cartId } });
    expect(pv.status).toBe(200);
    const rest = await restRefusal(cartId);
    expect(rest.details).toMatchObject({ reason: "checkout_in_progress", checkout_session_id: pv.body.data.checkout_session_id, checkout_status: "READY_FOR_PAYMENT" });
    const { result, asked } = await counted(demo, () => demo.call("update_cart_item", { cart_id: cartId, product_id: DEMO_PRODUCT, quantity: 2 }));
    const e = errorOf(result);
    expect({ code: e.code, message: e.message, details: e.details }).toEqual(rest);
    expect(asked).toBe(0);
  }, 90_000);
});

describe("MCP edits of a partly paid cart that has expired", () => {
  test("24 hours after its last change are CART_NOT_MUTABLE reason expired, as on REST (the clock moves last in this file)", async () => {
    const { cartId } = await partlyPaidThenCanceled(srv, key);
    clock.advance(DAY_MS + 1000);
    const rest = await restRefusal(cartId);
    expect(rest.details).toMatchObject({ reason: "expired" });
    for (const [tool, args] of edits(cartId)) {
      const { result, asked } = await counted(demo, () => demo.call(tool, args));
      const e = errorOf(result);
      expect({ tool, code: e.code, message: e.message, details: e.details }).toEqual({ tool, ...rest });
      expect(asked).toBe(0);
    }
  }, 90_000);
});
