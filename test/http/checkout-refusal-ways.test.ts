/**
 * Checkout refusals point the agent a way the service then accepts (session 11, engineer C):
 * - IDEMPOTENCY_KEY_CONFLICT offers "cancel the session and preview again" only where the session accepts a cancel
 *   (checkout-machine.ts `keyConflictWays`, from CHECKOUT_TRANSITIONS); a COMPLETED session's way on is its first key,
 *   which returns the existing orders; a running one's is its first key; an ended one's is a new preview (review S-2).
 *   REST, MCP complete_checkout and AP2 (its own words) alike.
 * - a one-call checkout (no checkout_session_id) refused for a payment method it names leaves the cart as it was: the
 *   token is checked before the preview is committed; a refusal that can only come after that preview names the
 *   session it left (review P-3).
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { generateKeyPair, type CryptoKey } from "jose";
import { ALL_SCOPES, createKey, login, type TestKey } from "../helpers/agents.ts";
import * as ap2 from "../helpers/ap2.ts";
import { startServer, type TestServer } from "../helpers/server.ts";
import { accept, connect, errorOf, type Connected } from "../mcp/helpers.ts";

const BOARD = "5befd987-79cd-540c-8a5d-2ba5a30aed41"; // DS-0011, demo-store (MOCK accepted), untracked stock
const GREEN = "4ef5cf23-f828-5e3e-bd0b-833653bc4c5a"; // GL-0001, greenleaf-living (card only)

let srv: TestServer;
let key: TestKey;
let agent: Connected;
let userKey: CryptoKey;

beforeAll(async () => {
  srv = await startServer({ seed: true, config: { RATE_LIMITS_ENABLED: false } });
  const admin = await login(srv);
  key = await createKey(srv, { scopes: ALL_SCOPES, token: admin });
  const pair = await generateKeyPair("ES256", { extractable: true });
  const registered = await ap2.registerUserKey(srv, admin, key.id, "phone", pair);
  expect(registered.status).toBe(200);
  userKey = pair.privateKey;
  agent = await connect(srv, { headers: key.headers, elicit: accept });
}, 120_000);
afterAll(async () => {
  await agent?.close();
  await srv?.stop();
});

const post = (path: string, body: unknown, headers: Record<string, string> = {}) =>
  srv.json(`/api/v1/agent${path}`, { method: "POST", headers: { ...key.headers, ...headers }, body });
const getCart = (id: string) => srv.json(`/api/v1/agent/cart/${id}`, { headers: key.headers });

async function newCart(items: { product_id: string; quantity: number }[] = [{ product_id: BOARD, quantity: 1 }]): Promise<string> {
  const r = await post("/cart", { items });
  expect(r.status).toBe(201);
  return r.body.data.id;
}

/** A one-call MOCK checkout: the COMPLETED session and the key it is bound to. */
async function completed(): Promise<{ cartId: string; sessionId: string; firstKey: string; orderIds: string[] }> {
  const cartId = await newCart();
  const firstKey = crypto.randomUUID();
  const paid = await post("/checkout", { cartId, payment_method: "MOCK", idempotency_key: firstKey });
  expect(paid.status).toBe(200);
  return { cartId, sessionId: paid.body.data.checkout_session_id, firstKey, orderIds: paid.body.data.order_ids };
}

/** A one-call checkout declined: the session is READY_FOR_PAYMENT, bound to `firstKey`. */
async function declined(): Promise<{ cartId: string; sessionId: string; firstKey: string }> {
  const cartId = await newCart();
  const firstKey = crypto.randomUUID();
  const r = await post("/checkout", { cartId, payment_method: "tok_decline", idempotency_key: firstKey });
  expect(r.status).toBe(402);
  return { cartId, sessionId: r.body.details.checkout_session_id, firstKey };
}

describe("IDEMPOTENCY_KEY_CONFLICT names only ways the session accepts (review S-2)", () => {
  test("on a COMPLETED session another key's way on is the first key, which returns the existing orders; cancel is not offered (it is refused)", async () => {
    const s = await completed();
    const other = await post("/checkout", { cartId: s.cartId, checkout_session_id: s.sessionId, payment_method: "MOCK", idempotency_key: crypto.randomUUID() });
    expect(other.status).toBe(409);
    expect(other.body).toMatchObject({ success: false, code: "IDEMPOTENCY_KEY_CONFLICT" });
    expect(other.body.details).toEqual({ status: "COMPLETED", next: ["retry_with_first_key"], checkout_session_id: s.sessionId });
    expect(other.body.error).toContain("a call with the key of its first attempt returns the existing orders (nothing is charged again)");
    expect(other.body.error).not.toContain("cancel the session");
    expect(JSON.stringify(other.body)).not.toContain(s.firstKey);

    // the way it names works; the way it no longer names is refused
    const first = await post("/checkout", { cartId: s.cartId, checkout_session_id: s.sessionId, payment_method: "MOCK", idempotency_key: s.firstKey });
    expect(first.status).toBe(409);
    expect(first.body.code).toBe("CHECKOUT_ALREADY_IN_PROGRESS");
    expect(first.body.details.order_ids).toEqual(s.orderIds);
    const cancel = await post(`/checkout/${s.sessionId}/cancel`, {});
    expect({ status: cancel.status, code: cancel.body.code }).toEqual({ status: 409, code: "SESSION_INACTIVE" });
  });

  test("on a READY_FOR_PAYMENT session (after a decline) both ways are offered, and the cancel it offers is accepted", async () => {
    const s = await declined();
    const other = await post("/checkout", { cartId: s.cartId, checkout_session_id: s.sessionId, payment_method: "tok_approve", idempotency_key: crypto.randomUUID() });
    expect(other.status).toBe(409);
    expect(other.body.code).toBe("IDEMPOTENCY_KEY_CONFLICT");
    expect(other.body.details).toEqual({ status: "READY_FOR_PAYMENT", next: ["retry_with_first_key", "cancel_checkout_then_preview"], checkout_session_id: s.sessionId });
    expect(other.body.error).toContain("retry with the key of its first attempt, or cancel the session and preview the cart again");
    const cancel = await post(`/checkout/${s.sessionId}/cancel`, {});
    expect(cancel.status).toBe(200);
  });

  test("on a CANCELED session neither key goes on: the way on is a new preview, which opens a new session", async () => {
    const s = await declined();
    expect((await post(`/checkout/${s.sessionId}/cancel`, {})).status).toBe(200);
    const other = await post("/checkout", { cartId: s.cartId, checkout_session_id: s.sessionId, payment_method: "tok_approve", idempotency_key: crypto.randomUUID() });
    expect(other.status).toBe(409);
    expect(other.body.code).toBe("IDEMPOTENCY_KEY_CONFLICT");
    expect(other.body.details).toEqual({ status: "CANCELED", next: ["preview_checkout"], checkout_session_id: s.sessionId });
    expect(other.body.error).toContain("The session has ended (CANCELED) and takes no call with either key: preview the cart again");
    expect(other.body.error).not.toContain("cancel the session");
    const first = await post("/checkout", { cartId: s.cartId, checkout_session_id: s.sessionId, payment_method: "tok_approve", idempotency_key: s.firstKey });
    expect({ status: first.status, code: first.body.code }).toEqual({ status: 409, code: "SESSION_INACTIVE" });
    const preview = await post("/checkout/preview", { cartId: s.cartId });
    expect(preview.status).toBe(200);
    expect(preview.body.data.checkout_session_id).not.toBe(s.sessionId);
  });

  test("on a SETTLEMENT_UNKNOWN session (lost answer) the way on is the first key; cancel is not offered (it is refused)", async () => {
    const cartId = await newCart();
    const firstKey = crypto.randomUUID();
    const lost = await post("/checkout", { cartId, payment_method: "tok_lost_response", idempotency_key: firstKey });
    expect(lost.status).toBe(503);
    const sessionId = lost.body.details.checkout_session_id as string;
    const other = await post("/checkout", { cartId, checkout_session_id: sessionId, payment_method: "tok_approve", idempotency_key: crypto.randomUUID() });
    expect(other.status).toBe(409);
    expect(other.body.code).toBe("IDEMPOTENCY_KEY_CONFLICT");
    expect(other.body.details).toEqual({ status: "SETTLEMENT_UNKNOWN", next: ["retry_with_first_key"], checkout_session_id: sessionId });
    expect(other.body.error).toContain("Its payment is running (SETTLEMENT_UNKNOWN): call again with the key of its first attempt to learn the outcome");
    expect(other.body.error).not.toContain("cancel the session");
    const cancel = await post(`/checkout/${sessionId}/cancel`, {});
    expect({ status: cancel.status, code: cancel.body.code }).toEqual({ status: 409, code: "CHECKOUT_STATUS_INVALID" });
    const first = await post("/checkout", { cartId, checkout_session_id: sessionId, payment_method: "tok_lost_response", idempotency_key: firstKey });
    expect(first.status).toBe(200);
    expect(first.body.data.status).toBe("COMPLETED");
  });

  test("MCP complete_checkout on a COMPLETED session with another key says the same (no cancel), without asking the human", async () => {
    const s = await completed();
    const before = agent.elicitations.length;
    const e = errorOf(await agent.call("complete_checkout", { checkout_session_id: s.sessionId, idempotency_key: crypto.randomUUID(), payment_method: "MOCK" }));
    expect(e.code).toBe("IDEMPOTENCY_KEY_CONFLICT");
    expect(e.remedy).toBe("stop");
    expect(e.details).toMatchObject({ status: "COMPLETED", next: ["retry_with_first_key"], checkout_session_id: s.sessionId });
    expect(e.message).toContain("returns the existing orders");
    expect(e.message).not.toContain("cancel the session");
    expect(agent.elicitations.length).toBe(before);
  });
});

/** A mandate for up to 100 USD at demo-store signed by the key's user key; `cart_id` is the request's. */
const signedMandate = (mandateId: string, token = "tok_approve") => ap2.demoStoreMandate(userKey, mandateId, token);

describe("AP2's key conflict says AP2's way on for the session's status (review S-2)", () => {
  test("a second mandate for a cart an earlier mandate paid is told to present that mandate for its receipt, not to cancel", async () => {
    const cartId = await newCart();
    const first = await signedMandate(`pm_${crypto.randomUUID()}`);
    const paid = await post("/ap2/payment-mandates", first(cartId));
    expect(paid.status).toBe(200);
    const second = await post("/ap2/payment-mandates", (await signedMandate(`pm_${crypto.randomUUID()}`))(cartId));
    expect(second.status).toBe(409);
    expect(second.body).toMatchObject({ success: false, code: "IDEMPOTENCY_KEY_CONFLICT", details: { status: "COMPLETED", next: ["retry_with_first_key"] } });
    expect(second.body.error).toContain("The cart is paid: present that mandate again to get its receipt");
    expect(second.body.error).not.toMatch(/cancel|idempotency_key|complete_checkout/);
    const again = await post("/ap2/payment-mandates", first(cartId));
    expect(again.status).toBe(200);
    expect(again.body.data.order_ids).toEqual(paid.body.data.order_ids);
  });

  test("after a declined mandate the 409 still offers the cancel, and names the session it means (details.checkout_session_id)", async () => {
    const cartId = await newCart();
    const declinedAnswer = await post("/ap2/payment-mandates", (await signedMandate(`pm_${crypto.randomUUID()}`, "tok_decline"))(cartId));
    expect(declinedAnswer.status).toBe(402);
    const conflict = await post("/ap2/payment-mandates", (await signedMandate(`pm_${crypto.randomUUID()}`))(cartId));
    expect(conflict.status).toBe(409);
    expect(conflict.body.details).toMatchObject({ status: "READY_FOR_PAYMENT", checkout_session_id: declinedAnswer.body.details.checkout_session_id });
    expect(conflict.body.error).toContain("cancel the checkout session (details.checkout_session_id");
  });

  test("an Idempotency-Key reused with another request keeps the bridge's own text, not the mandate's", async () => {
    const idem = crypto.randomUUID();
    const a = await post("/ap2/payment-mandates", (await signedMandate(`pm_${crypto.randomUUID()}`))(await newCart()), { "idempotency-key": idem });
    expect(a.status).toBe(200);
    const b = await post("/ap2/payment-mandates", (await signedMandate(`pm_${crypto.randomUUID()}`))(await newCart()), { "idempotency-key": idem });
    expect(b.status).toBe(409);
    expect(b.body).toMatchObject({ code: "IDEMPOTENCY_KEY_CONFLICT", error: "This Idempotency-Key was used with a different request.", details: { field: "Idempotency-Key" } });
  });
});

describe("a one-call checkout refused for the payment method it names leaves the cart as it was (review P-3)", () => {
  test("an unknown payment_method is 400 invalid_test_token and opens no session: the cart stays OPEN and editable", async () => {
    const cartId = await newCart();
    const r = await post("/checkout", { cartId, payment_method: "tok_bogus", idempotency_key: crypto.randomUUID() });
    expect(r.status).toBe(400);
    expect(r.body).toMatchObject({ success: false, code: "INVALID_ARGUMENT", details: { field: "payment_method", reason: "invalid_test_token", merchant_slug: "demo-store" } });
    const cart = await getCart(cartId);
    expect({ status: cart.body.data.status, session: cart.body.data.checkout_session_id ?? null }).toEqual({ status: "OPEN", session: null });
    // a write the frozen cart refused (409 CART_NOT_MUTABLE checkout_in_progress) is answered: no coupon of that code
    const edited = await post("/cart/apply-coupon", { cartId, code: "NO-SUCH-CODE" });
    expect(edited.status).toBe(200);
  });

  test("an unknown payment_methods entry for a store of the cart is refused the same way, before the preview", async () => {
    const cartId = await newCart([{ product_id: BOARD, quantity: 1 }, { product_id: GREEN, quantity: 1 }]);
    const r = await post("/checkout", { cartId, payment_methods: { "demo-store": "MOCK", "greenleaf-living": "tok_visa" } });
    expect(r.status).toBe(400);
    expect(r.body).toMatchObject({ code: "INVALID_ARGUMENT", details: { field: "payment_methods.greenleaf-living", reason: "invalid_test_token" } });
    const cart = await getCart(cartId);
    expect({ status: cart.body.data.status, session: cart.body.data.checkout_session_id ?? null }).toEqual({ status: "OPEN", session: null });
  });

  test("a refusal that needs the previewed merchants (MOCK at a card-only store) names the session the preview left", async () => {
    const cartId = await newCart([{ product_id: GREEN, quantity: 1 }]);
    const r = await post("/checkout", { cartId, payment_method: "MOCK" });
    expect(r.status).toBe(400);
    expect(r.body.code).toBe("PAYMENT_METHOD_NOT_CONFIGURED");
    const cart = await getCart(cartId);
    expect(cart.body.data.checkout_session_id).toMatch(/^cs_/);
    expect(r.body.details).toMatchObject({ merchant_slug: "greenleaf-living", checkout_session_id: cart.body.data.checkout_session_id });
  });
});
