/**
 * AP2: the limits that bind are the ones the user signed (audit B F1, F6). The user's `transaction_data` names the
 * hashes of every mandate part they approved; an agent that leaves a signed cart or intent mandate out (and with it
 * the expiry the user set) is refused, and so is an intent mandate the user never signed (its `merchants` would
 * widen the payees). A mandate amount with more decimals than the currency has is refused, never rounded up.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { CompactSign, generateKeyPair, type CryptoKey } from "jose";
import { mandateHash } from "../../gateway/bridge/ap2-auth.ts";
import { ALL_SCOPES, createKey, login, type TestKey } from "../helpers/agents.ts";
import * as ap2 from "../helpers/ap2.ts";
import { startServer, type TestServer } from "../helpers/server.ts";

const BOARD = "5befd987-79cd-540c-8a5d-2ba5a30aed41"; // DS-0011, demo-store, 26.95, untracked stock

let srv: TestServer;
let key: TestKey;
let userKey: CryptoKey;

beforeAll(async () => {
  srv = await startServer({ seed: true });
  const admin = await login(srv);
  key = await createKey(srv, { scopes: ALL_SCOPES, token: admin });
  const pair = await generateKeyPair("ES256", { extractable: true });
  userKey = pair.privateKey;
  const r = await ap2.registerUserKey(srv, admin, key.id, "phone", pair);
  if (r.status !== 200) throw new Error(`user key registration failed: ${r.status} ${JSON.stringify(r.body)}`);
}, 120_000);
afterAll(async () => {
  await srv?.stop();
});

const post = (path: string, body: unknown) => srv.json(`/api/v1/agent${path}`, { method: "POST", headers: key.headers, body });
const ordersOfCart = async (cartId: string) => srv.db.sql<{ id: string }[]>`SELECT id FROM orders WHERE cart_id = ${cartId}`;

async function newCart(): Promise<string> {
  const r = await post("/cart", { items: [{ product_id: BOARD, quantity: 1 }] });
  expect(r.status).toBe(201);
  return r.body.data.id;
}

const contents = (value: number | string = 100, currency = "USD") => ({
  payment_mandate_id: `pm_${crypto.randomUUID()}`,
  payment_details_id: "details_1",
  payment_details_total: { label: "Total", amount: { currency, value } },
  payment_response: { method_name: "CARD", details: { token: "tok_approve" } },
  merchant_agent: "demo-store",
  timestamp: new Date().toISOString(),
});

/** The user's JWS over exactly these parts' hashes. */
async function sign(parts: unknown[]): Promise<string> {
  const payload = new TextEncoder().encode(JSON.stringify({ iat: Math.floor(Date.now() / 1000), aud: "ap2", transaction_data: parts.map(mandateHash) }));
  return new CompactSign(payload).setProtectedHeader({ alg: "ES256", kid: "phone", typ: "kb+jwt" }).sign(userKey);
}

type CartRead = { id: string; currency: string; items: { title: string; line_total: number }[]; totals: { total: number } };
const readCart = async (cartId: string): Promise<CartRead> => (await srv.json(`/api/v1/agent/cart/${cartId}`, { headers: key.headers })).body.data;

/** AP2 CartMandate for the cart as the agent reads it: one display item per line, the cart's total. */
function cartMandateOf(cart: CartRead, cart_expiry: string, over: { id?: string; total?: number } = {}) {
  return {
    contents: {
      id: over.id ?? `cart_${cart.id}`,
      user_cart_confirmation_required: true,
      payment_request: {
        method_data: [{ supported_methods: "CARD" }],
        details: {
          id: `order_${cart.id}`,
          display_items: cart.items.map((l) => ({ label: l.title, amount: { currency: cart.currency, value: l.line_total } })),
          total: { label: "Total", amount: { currency: cart.currency, value: over.total ?? cart.totals.total } },
        },
      },
      cart_expiry,
      merchant_name: "demo-store",
    },
  };
}

const inAnHour = () => new Date(Date.now() + 3_600_000).toISOString();
const anHourAgo = () => new Date(Date.now() - 3_600_000).toISOString();

describe("AP2: every signed mandate part must be presented, and every presented part signed", () => {
  test("a mandate whose signed cart mandate (with the expiry) is left out is 401 signed_part_missing and pays nothing", async () => {
    // The auditor's t9 scenario: the user signed the payment contents and a cart mandate that expired an hour ago.
    const cartId = await newCart();
    const pmc = contents();
    const cart_mandate = cartMandateOf(await readCart(cartId), anHourAgo());
    const user_authorization = await sign([pmc, cart_mandate]);
    const withIt = await post("/ap2/payment-mandates", { cart_id: cartId, cart_mandate, payment_mandate: { payment_mandate_contents: pmc, user_authorization } });
    expect(withIt.status).toBe(403);
    expect(withIt.body).toMatchObject({ code: "MANDATE_LIMIT_EXCEEDED", details: { violated: "expiry" } });
    const without = await post("/ap2/payment-mandates", { cart_id: cartId, payment_mandate: { payment_mandate_contents: pmc, user_authorization } });
    expect(without.status).toBe(401);
    expect(without.body).toMatchObject({
      success: false,
      code: "AGENT_TOKEN_INVALID",
      details: { reason: "signed_part_missing", field: "payment_mandate.user_authorization", unmatched_hashes: 1, absent_parts: ["cart_mandate", "intent_mandate"] },
    });
    expect(await ordersOfCart(cartId)).toHaveLength(0);
  });

  test("a signed intent mandate left out is refused the same way; presented, its expiry binds", async () => {
    const cartId = await newCart();
    const pmc = contents();
    const intent_mandate = { merchants: ["demo-store"], intent_expiry: anHourAgo(), natural_language_description: "a deck, within the hour" };
    const user_authorization = await sign([pmc, intent_mandate]);
    const without = await post("/ap2/payment-mandates", { cart_id: cartId, payment_mandate: { payment_mandate_contents: pmc, user_authorization } });
    expect(without.status).toBe(401);
    expect(without.body.details).toMatchObject({ reason: "signed_part_missing", absent_parts: ["cart_mandate", "intent_mandate"] });
    const withIt = await post("/ap2/payment-mandates", { cart_id: cartId, intent_mandate, payment_mandate: { payment_mandate_contents: pmc, user_authorization } });
    expect(withIt.status).toBe(403);
    expect(withIt.body).toMatchObject({ code: "MANDATE_LIMIT_EXCEEDED", details: { violated: "expiry" } });
    expect(await ordersOfCart(cartId)).toHaveLength(0);
  });

  test("an intent mandate the user did not sign is 401 intent_mandate_mismatch (its merchants would widen the payees)", async () => {
    const cartId = await newCart();
    const pmc = contents();
    const user_authorization = await sign([pmc]);
    const r = await post("/ap2/payment-mandates", {
      cart_id: cartId,
      intent_mandate: { merchants: ["demo-store", "greenleaf-living"], intent_expiry: inAnHour() },
      payment_mandate: { payment_mandate_contents: pmc, user_authorization },
    });
    expect(r.status).toBe(401);
    expect(r.body).toMatchObject({ code: "AGENT_TOKEN_INVALID", details: { reason: "intent_mandate_mismatch" } });
    expect(await ordersOfCart(cartId)).toHaveLength(0);
  });

  test("a mandate with its intent and cart mandates signed and presented, inside their expiries, is paid", async () => {
    const cartId = await newCart();
    const pmc = contents();
    const intent_mandate = { merchants: ["demo-store"], intent_expiry: inAnHour() };
    const cart_mandate = cartMandateOf(await readCart(cartId), inAnHour());
    const user_authorization = await sign([pmc, cart_mandate, intent_mandate]);
    const r = await post("/ap2/payment-mandates", { cart_id: cartId, intent_mandate, cart_mandate, payment_mandate: { payment_mandate_contents: pmc, user_authorization } });
    expect(r.status).toBe(200);
    expect(r.body.data.order_ids).toHaveLength(1);
    expect(await ordersOfCart(cartId)).toHaveLength(1);
  });

  test("a mandate signed over only its payment contents still pays (no expiry was signed, none binds)", async () => {
    const cartId = await newCart();
    const pmc = contents();
    const r = await post("/ap2/payment-mandates", { cart_id: cartId, payment_mandate: { payment_mandate_contents: pmc, user_authorization: await sign([pmc]) } });
    expect(r.status).toBe(200);
    expect(r.body.data.order_ids).toHaveLength(1);
  });
});

describe("AP2: the mandate amount is read exactly", () => {
  test("a value with more decimals than the currency has is 400 INVALID_ARGUMENT, never rounded into the limit", async () => {
    const cartId = await newCart();
    for (const [value, currency] of [[134.985, "USD"], ["134.985", "USD"], [100.5, "JPY"]] as const) {
      const pmc = contents(value, currency);
      const r = await post("/ap2/payment-mandates", { cart_id: cartId, payment_mandate: { payment_mandate_contents: pmc, user_authorization: await sign([pmc]) } });
      expect(r.status).toBe(400);
      expect(r.body).toMatchObject({ success: false, code: "INVALID_ARGUMENT", details: { field: "payment_mandate.payment_mandate_contents.payment_details_total.amount.value" } });
    }
    expect(await ordersOfCart(cartId)).toHaveLength(0);
  });

  test("a value with trailing zeros or as a decimal string is read to the minor unit", async () => {
    const cartId = await newCart();
    const pmc = contents("26.950", "USD"); // the board alone; shipping pushes the total above it
    const r = await post("/ap2/payment-mandates", { cart_id: cartId, payment_mandate: { payment_mandate_contents: pmc, user_authorization: await sign([pmc]) } });
    expect(r.status).toBe(403);
    expect(r.body).toMatchObject({ code: "MANDATE_LIMIT_EXCEEDED", details: { violated: "amount", mandate: { max_amount_minor: 2695 } } });
  });
});

describe("AP2: a signed part counts only in its own role (review R3-1)", () => {
  const pay = (cartId: string, pmc: unknown, user_authorization: string, parts: Record<string, unknown>) =>
    post("/ap2/payment-mandates", { cart_id: cartId, ...parts, payment_mandate: { payment_mandate_contents: pmc, user_authorization } });

  test("a signed, expired intent mandate presented as the cart mandate is 400 naming the intent's member and pays nothing", async () => {
    const cartId = await newCart();
    const pmc = contents();
    const intent = { merchants: ["demo-store"], intent_expiry: anHourAgo(), natural_language_description: "a deck" };
    const ua = await sign([pmc, intent]);
    const asIntent = await pay(cartId, pmc, ua, { intent_mandate: intent });
    expect(asIntent.status).toBe(403);
    expect(asIntent.body).toMatchObject({ code: "MANDATE_LIMIT_EXCEEDED", details: { violated: "expiry" } });
    const asCart = await pay(cartId, pmc, ua, { cart_mandate: intent });
    expect(asCart.status).toBe(400);
    expect(asCart.body).toMatchObject({ success: false, code: "INVALID_ARGUMENT", details: { field: "cart_mandate.intent_expiry", role: "cart_mandate" } });
    expect(await ordersOfCart(cartId)).toHaveLength(0);
  });

  test("a body without cart_id is 400 MISSING_REQUIRED_ARGUMENT on cart_id; a cart_id that is no uuid stays INVALID_ARGUMENT (helper F, session 22)", async () => {
    const empty = await post("/ap2/payment-mandates", {});
    expect({ status: empty.status, code: empty.body.code, field: empty.body.details?.field }).toEqual({ status: 400, code: "MISSING_REQUIRED_ARGUMENT", field: "cart_id" });
    const bad = await post("/ap2/payment-mandates", { cart_id: "not-a-uuid" });
    expect({ status: bad.status, code: bad.body.code, field: bad.body.details?.field }).toEqual({ status: 400, code: "INVALID_ARGUMENT", field: "cart_id" });
  });

  test("a signed part with neither role's members, presented as the cart mandate, is 400 for its missing contents", async () => {
    const cartId = await newCart();
    const pmc = contents();
    const bare = { note: "signed by the user" };
    const r = await pay(cartId, pmc, await sign([pmc, bare]), { cart_mandate: bare });
    expect(r.status).toBe(400);
    expect(r.body).toMatchObject({ code: "MISSING_REQUIRED_ARGUMENT", details: { field: "cart_mandate.contents" } });
    expect(await ordersOfCart(cartId)).toHaveLength(0);
  });

  test("a signed, expired cart mandate presented as the intent mandate is 400 naming the cart's member and pays nothing", async () => {
    const cartId = await newCart();
    const pmc = contents();
    const cm = cartMandateOf(await readCart(cartId), anHourAgo());
    const ua = await sign([pmc, cm]);
    const asCart = await pay(cartId, pmc, ua, { cart_mandate: cm });
    expect(asCart.status).toBe(403);
    expect(asCart.body).toMatchObject({ code: "MANDATE_LIMIT_EXCEEDED", details: { violated: "expiry" } });
    const asIntent = await pay(cartId, pmc, ua, { intent_mandate: cm });
    expect(asIntent.status).toBe(400);
    expect(asIntent.body).toMatchObject({ success: false, code: "INVALID_ARGUMENT", details: { field: "intent_mandate.contents", role: "intent_mandate" } });
    expect(await ordersOfCart(cartId)).toHaveLength(0);
  });

  test("an intent mandate without intent_expiry is 400 MISSING_REQUIRED_ARGUMENT (AP2 requires it)", async () => {
    const cartId = await newCart();
    const pmc = contents();
    const intent = { merchants: ["demo-store"] };
    const r = await pay(cartId, pmc, await sign([pmc, intent]), { intent_mandate: intent });
    expect(r.status).toBe(400);
    expect(r.body).toMatchObject({ code: "MISSING_REQUIRED_ARGUMENT", details: { field: "intent_mandate.intent_expiry" } });
    expect(await ordersOfCart(cartId)).toHaveLength(0);
  });
});

describe("AP2: a signed expiry in another form is refused, never skipped (review R3-2)", () => {
  test("an intent_expiry in epoch seconds, or an ISO date-time without a zone, is 400 INVALID_ARGUMENT naming it", async () => {
    const cartId = await newCart();
    const hourAgoSeconds = Math.floor(Date.now() / 1000) - 3600;
    for (const intent_expiry of [hourAgoSeconds, String(hourAgoSeconds), "2026-01-01T00:00:00", "2026-02-30T00:00:00Z", { at: anHourAgo() }]) {
      const pmc = contents();
      const intent = { merchants: ["demo-store"], intent_expiry };
      const r = await post("/ap2/payment-mandates", { cart_id: cartId, intent_mandate: intent, payment_mandate: { payment_mandate_contents: pmc, user_authorization: await sign([pmc, intent]) } });
      expect(r.status).toBe(400);
      expect(r.body).toMatchObject({ success: false, code: "INVALID_ARGUMENT", details: { field: "intent_mandate.intent_expiry" } });
    }
    expect(await ordersOfCart(cartId)).toHaveLength(0);
  });

  test("a cart_expiry in epoch seconds is 400 INVALID_ARGUMENT naming it", async () => {
    const cartId = await newCart();
    const pmc = contents();
    const cm = cartMandateOf(await readCart(cartId), anHourAgo());
    const signed = { ...cm, contents: { ...cm.contents, cart_expiry: Math.floor(Date.now() / 1000) - 3600 } };
    const r = await post("/ap2/payment-mandates", { cart_id: cartId, cart_mandate: signed, payment_mandate: { payment_mandate_contents: pmc, user_authorization: await sign([pmc, signed]) } });
    expect(r.status).toBe(400);
    expect(r.body).toMatchObject({ code: "INVALID_ARGUMENT", details: { field: "cart_mandate.contents.cart_expiry" } });
    expect(await ordersOfCart(cartId)).toHaveLength(0);
  });

  test("an expiry with an offset and microseconds (Python's isoformat) is read", async () => {
    const cartId = await newCart();
    const pmc = contents();
    const soon = new Date(Date.now() + 3_600_000).toISOString().replace("Z", "123+00:00"); // …:56.789123+00:00
    const intent = { merchants: ["demo-store"], intent_expiry: soon };
    const r = await post("/ap2/payment-mandates", { cart_id: cartId, intent_mandate: intent, payment_mandate: { payment_mandate_contents: pmc, user_authorization: await sign([pmc, intent]) } });
    expect(r.status).toBe(200);
    expect(r.body.data.order_ids).toHaveLength(1);
  });
});

describe("AP2: a signed cart mandate pays only the cart it shows (review R3-2)", () => {
  const payWith = async (cartId: string, cm: unknown) => {
    const pmc = contents();
    return post("/ap2/payment-mandates", { cart_id: cartId, cart_mandate: cm, payment_mandate: { payment_mandate_contents: pmc, user_authorization: await sign([pmc, cm]) } });
  };

  test("a cart mandate for cart A presented with cart B's id is 403 MANDATE_LIMIT_EXCEEDED (violated cart) and pays nothing", async () => {
    const a = await newCart();
    const r0 = await post("/cart", { items: [{ product_id: BOARD, quantity: 2 }] });
    const b = r0.body.data.id as string;
    const r = await payWith(b, cartMandateOf(await readCart(a), inAnHour()));
    expect(r.status).toBe(403);
    expect(r.body).toMatchObject({ code: "MANDATE_LIMIT_EXCEEDED", details: { violated: "cart", cart_id: b, cart_mandate: { id: `cart_${a}` } } });
    expect(await ordersOfCart(a)).toHaveLength(0);
    expect(await ordersOfCart(b)).toHaveLength(0);
  });

  test("a cart mandate whose signed total is not the cart's total (the cart changed after the user approved it) is 403 violated cart_contents", async () => {
    const cartId = await newCart();
    const cart = await readCart(cartId);
    const r = await payWith(cartId, cartMandateOf(cart, inAnHour(), { total: cart.totals.total - 1 }));
    expect(r.status).toBe(403);
    expect(r.body).toMatchObject({ code: "MANDATE_LIMIT_EXCEEDED", details: { violated: "cart_contents", cart_id: cartId } });
    expect(await ordersOfCart(cartId)).toHaveLength(0);
  });

  test("a cart mandate whose total is the cart's but whose display items are not its lines is 403 naming the unmatched line", async () => {
    const cartId = await newCart();
    const cart = await readCart(cartId);
    const cm = cartMandateOf(cart, inAnHour());
    cm.contents.payment_request.details.display_items = [{ label: "Something else", amount: { currency: cart.currency, value: cart.items[0]!.line_total } }];
    const r = await payWith(cartId, cm);
    expect(r.status).toBe(403);
    expect(r.body).toMatchObject({ code: "MANDATE_LIMIT_EXCEEDED", details: { violated: "cart_contents", unmatched_lines: [{ product_id: BOARD, quantity: 1 }] } });
    expect(await ordersOfCart(cartId)).toHaveLength(0);
  });

  test("a cart mandate without its total or display items is 400 MISSING/INVALID naming the field", async () => {
    const cartId = await newCart();
    const cm = cartMandateOf(await readCart(cartId), inAnHour());
    const noItems = { contents: { ...cm.contents, payment_request: { details: { total: cm.contents.payment_request.details.total } } } };
    const r1 = await payWith(cartId, noItems);
    expect(r1.status).toBe(400);
    expect(r1.body).toMatchObject({ code: "MISSING_REQUIRED_ARGUMENT", details: { field: "cart_mandate.contents.payment_request.details.display_items" } });
    const noTotal = { contents: { ...cm.contents, payment_request: { details: { display_items: [] } } } };
    const r2 = await payWith(cartId, noTotal);
    expect(r2.status).toBe(400);
    expect(r2.body).toMatchObject({ code: "INVALID_ARGUMENT", details: { field: "cart_mandate.contents.payment_request.details.total.amount" } });
    expect(await ordersOfCart(cartId)).toHaveLength(0);
  });

  test("the cart mandate of the cart paid, named by its bare id, pays it", async () => {
    const cartId = await newCart();
    const r = await payWith(cartId, cartMandateOf(await readCart(cartId), inAnHour(), { id: cartId.toUpperCase() }));
    expect(r.status).toBe(200);
    expect(await ordersOfCart(cartId)).toHaveLength(1);
  });
});
