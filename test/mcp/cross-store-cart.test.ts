/**
 * Audit V ("also seen"): a store's MCP endpoint served another store's cart: on /greenleaf-living/mcp a demo-store
 * cart was previewed and paid, the human asked to "Pay … to Greenleaf Living" for a demo-store order, under
 * greenleaf's tool set, mandate rule and customer identity. A cart none of whose merchants is the endpoint's store is
 * not found there (CART_NOT_FOUND; its session CHECKOUT_SESSION_NOT_FOUND), before anything is written or anyone is
 * asked; on its own store's endpoint it is served as before, and a cart with a line of the endpoint's store too.
 */
import { afterAll, beforeAll, expect, test } from "bun:test";
import { ALL_SCOPES, createKey, type TestKey } from "../helpers/agents.ts";
import { startServer, type TestServer } from "../helpers/server.ts";
import { accept, connect, DEMO, DEMO_PRODUCT, errorOf, structured, type Connected } from "./helpers.ts";

const GREEN = "greenleaf-living";
const GREEN_PRODUCT = "4ef5cf23-f828-5e3e-bd0b-833653bc4c5a";

let srv: TestServer;
let key: TestKey;
let demo: Connected;
let green: Connected;

beforeAll(async () => {
  srv = await startServer({ seed: true, config: { RATE_LIMITS_ENABLED: false } });
  key = await createKey(srv, { scopes: ALL_SCOPES, tier: "ENTERPRISE" });
  demo = await connect(srv, { path: `/${DEMO}/mcp`, headers: key.headers, elicit: accept });
  green = await connect(srv, { path: `/${GREEN}/mcp`, headers: key.headers, elicit: accept });
}, 120_000);
afterAll(async () => {
  await demo?.close();
  await green?.close();
  await srv?.stop();
});

/** A demo-store cart previewed on the demo endpoint: its id and session. */
async function demoSession() {
  const cart = structured(await demo.call("create_cart", { items: [{ product_id: DEMO_PRODUCT, quantity: 1 }] }));
  const pv = await demo.call("preview_checkout", { cart_id: cart.cart_id });
  expect(pv.isError).toBeFalsy();
  return { cartId: cart.cart_id as string, sessionId: structured(pv).checkout_session_id as string, stateHash: structured(pv).state_hash as string };
}

const ordersOf = async (cartId: string) => (await srv.db.sql<{ status: string }[]>`SELECT status FROM orders WHERE cart_id = ${cartId}`).map((o) => o.status);

test("another store's endpoint answers CART_NOT_FOUND for a demo-store cart in every cart tool and changes nothing", async () => {
  const s = await demoSession();
  const asked = green.elicitations.length;
  const calls: [string, Record<string, unknown>][] = [
    ["get_cart", { cart_id: s.cartId }],
    ["preview_checkout", { cart_id: s.cartId }],
    ["get_shipping_rates", { cart_id: s.cartId, country_code: "US", postal_code: "94107" }],
    ["apply_coupon", { cart_id: s.cartId, code: "WELCOME10" }],
    ["update_cart_item", { cart_id: s.cartId, product_id: GREEN_PRODUCT, quantity: 1 }],
    ["remove_cart_item", { cart_id: s.cartId, product_id: DEMO_PRODUCT }],
    ["ucp_create_checkout", { cart_id: s.cartId }],
  ];
  for (const [name, args] of calls) {
    const e = errorOf(await green.call(name, args));
    expect({ name, code: e.code, cart_id: e.details.cart_id }).toEqual({ name, code: "CART_NOT_FOUND", cart_id: s.cartId });
  }
  expect(green.elicitations.length).toBe(asked);
  // the demo session was neither re-previewed nor frozen by another cart: same state, and the cart is still its own
  const own = structured(await demo.call("get_cart", { cart_id: s.cartId }));
  expect(own.checkout_session_id).toBe(s.sessionId);
  expect(own.status).toBe("CHECKOUT");
  expect(own.replaced_by_cart_id).toBeUndefined();
}, 60_000);

test("another store's endpoint answers CHECKOUT_SESSION_NOT_FOUND for a demo-store session without asking the human or charging; its own endpoint pays it", async () => {
  const s = await demoSession();
  const asked = green.elicitations.length;
  const ik = crypto.randomUUID();
  const calls: [string, Record<string, unknown>][] = [
    ["complete_checkout", { checkout_session_id: s.sessionId, idempotency_key: ik, payment_method: "MOCK" }],
    ["ucp_complete_checkout", { checkout_session_id: s.sessionId, idempotency_key: ik, payment_method: "MOCK" }],
    ["cancel_checkout", { checkout_session_id: s.sessionId }],
    ["get_checkout_status", { checkout_session_id: s.sessionId }],
    ["ucp_update_checkout", { checkout_session_id: s.sessionId }],
  ];
  for (const [name, args] of calls) {
    const e = errorOf(await green.call(name, args));
    expect({ name, code: e.code, checkout_session_id: e.details.checkout_session_id }).toEqual({ name, code: "CHECKOUT_SESSION_NOT_FOUND", checkout_session_id: s.sessionId });
  }
  expect(green.elicitations.length).toBe(asked);
  expect(await ordersOf(s.cartId)).toEqual([]);

  const paid = await demo.call("complete_checkout", { checkout_session_id: s.sessionId, idempotency_key: ik, payment_method: "MOCK" });
  expect(paid.isError).toBeFalsy();
  expect(structured(paid).status).toBe("COMPLETED");
  expect(structured(paid).state_hash).toBe(s.stateHash);
  expect(await ordersOf(s.cartId)).toEqual(["paid"]);
}, 60_000);

test("a cart with a line of the endpoint's store is served there, with another store's lines", async () => {
  const c = await srv.json("/api/v1/agent/cart", { method: "POST", headers: key.headers, body: { items: [{ product_id: DEMO_PRODUCT, quantity: 1 }, { product_id: GREEN_PRODUCT, quantity: 1 }] } });
  expect(c.status).toBe(201);
  const cartId = c.body.data.id as string;
  const got = await green.call("get_cart", { cart_id: cartId });
  expect(got.isError).toBeFalsy();
  expect([...structured(got).merchants].sort()).toEqual([DEMO, GREEN]);
}, 60_000);
