/**
 * The protocol bridge over HTTP, in each protocol's own request shapes: ACP checkout sessions, UCP checkout
 * sessions, AP2 payment mandates; detection on POST /agent/checkout; Idempotency-Key replays.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { CompactSign, exportJWK, generateKeyPair, type CryptoKey } from "jose";
import { mandateHash } from "../../gateway/bridge/ap2-auth.ts";
import { ALL_SCOPES, createKey, login, merchantLogin, type TestKey } from "../helpers/agents.ts";
import * as ap2 from "../helpers/ap2.ts";
import { decideAt } from "../helpers/sandbox-approval.ts";
import { startServer, type TestServer } from "../helpers/server.ts";

const BOARD = "5befd987-79cd-540c-8a5d-2ba5a30aed41"; // DS-0011, demo-store, 26.95, untracked stock
const SKILLET = "399d72f1-303c-5cf3-bc6a-5c82714b85d4"; // DS-0005, demo-store, 36.95

let srv: TestServer;
let key: TestKey;
let other: TestKey;
let admin: string;
/** The user's device key, registered for `key` as kid "phone". */
let userKey: CryptoKey;

beforeAll(async () => {
  srv = await startServer({ seed: true });
  admin = await login(srv);
  key = await createKey(srv, { scopes: ALL_SCOPES, token: admin });
  other = await createKey(srv, { scopes: ALL_SCOPES, token: admin });
  const pair = await generateKeyPair("ES256", { extractable: true });
  userKey = pair.privateKey;
  const r = await registerUserKey(key, "phone", pair);
  if (r.status !== 200) throw new Error(`user key registration failed: ${r.status} ${JSON.stringify(r.body)}`);
}, 120_000);
afterAll(async () => {
  await srv?.stop();
});

/** Registers the pair's public key as `k`'s AP2 user key `kid`, with its proof of possession (helpers/ap2.ts). */
const registerUserKey = (k: TestKey, kid: string, pair: { publicKey: CryptoKey; privateKey: CryptoKey }, token = admin, alg = "ES256") =>
  ap2.registerUserKey(srv, token, k.id, kid, pair, alg);
/** The registration PUT as sent, without a proof. */
const putUserKey = (k: TestKey, kid: string, jwk: unknown, token = admin) =>
  srv.json(`/api/v1/agent-keys/${k.id}/ap2-user-keys/${kid}`, { method: "PUT", headers: { authorization: `Bearer ${token}` }, body: { jwk } });

/** AP2 user_authorization: a JWS by the user's device key over the hashes of the mandate's parts. */
async function authorize(body: { payment_mandate: { payment_mandate_contents: unknown }; cart_mandate?: unknown; intent_mandate?: unknown }, signer: { key: CryptoKey; alg: string; kid: string } = { key: userKey, alg: "ES256", kid: "phone" }): Promise<string> {
  const parts = [body.payment_mandate.payment_mandate_contents, ...(body.cart_mandate ? [body.cart_mandate] : []), ...(body.intent_mandate ? [body.intent_mandate] : [])];
  const transaction_data = parts.map(mandateHash);
  const payload = new TextEncoder().encode(JSON.stringify({ iat: Math.floor(Date.now() / 1000), aud: "ap2", transaction_data }));
  return new CompactSign(payload).setProtectedHeader({ alg: signer.alg, kid: signer.kid, typ: "kb+jwt" }).sign(signer.key);
}

const post = (path: string, body: unknown, k: TestKey = key, headers: Record<string, string> = {}) =>
  srv.json(`/api/v1/agent${path}`, { method: "POST", headers: { ...k.headers, ...headers }, body });
const get = (path: string, k: TestKey = key) => srv.json(`/api/v1/agent${path}`, { headers: k.headers });
/** AP2 CartMandate for the cart as the agent reads it (one display item per line, the cart's total). */
async function cartMandateOf(cartId: string, cart_expiry = new Date(Date.now() + 600_000).toISOString()) {
  const cart = (await srv.json(`/api/v1/agent/cart/${cartId}`, { headers: key.headers })).body.data as { currency: string; items: { title: string; line_total: number }[]; totals: { total: number } };
  const display_items = cart.items.map((l) => ({ label: l.title, amount: { currency: cart.currency, value: l.line_total } }));
  return { contents: { id: `cart_${cartId}`, payment_request: { details: { id: `order_${cartId}`, display_items, total: { label: "Total", amount: { currency: cart.currency, value: cart.totals.total } } } }, cart_expiry, merchant_name: "demo-store" } };
}
const ordersOfCart = async (cartId: string) => (await srv.db.sql<{ id: string; status: string }[]>`SELECT id, status FROM orders WHERE cart_id = ${cartId}`).map((r) => ({ ...r }));
const cartOf = async (sessionId: string) => (await srv.db.sql<{ cart_id: string }[]>`SELECT cart_id FROM bridge_sessions WHERE id = ${sessionId}`)[0]!.cart_id;

describe("ACP checkout sessions", () => {
  test("creating a session answers 201 with an ACP CheckoutSession ready for payment", async () => {
    const r = await post("/acp/checkout_sessions", { items: [{ id: BOARD, quantity: 2 }], buyer: { first_name: "Ada", email: "ada@example.com" } });
    expect(r.status).toBe(201);
    expect(r.body.id).toMatch(/^cs_[0-9a-f]{32}$/);
    expect(r.body).toMatchObject({ status: "ready_for_payment", currency: "usd", buyer: { first_name: "Ada" } });
    expect(r.body.line_items).toEqual([expect.objectContaining({ item: { id: BOARD, quantity: 2 }, base_amount: 5390, subtotal: 5390 })]);
    const total = r.body.totals.find((x: { type: string }) => x.type === "total");
    expect(total.amount).toBeGreaterThanOrEqual(5390);
    expect(r.body.success).toBeUndefined(); // ACP's shape, not our envelope
    const again = await get(`/acp/checkout_sessions/${r.body.id}`);
    expect(again.status).toBe(200);
    expect(again.body).toMatchObject({ id: r.body.id, status: "ready_for_payment", line_items: r.body.line_items });
  });

  test("updating the items moves the session to the new items", async () => {
    const created = await post("/acp/checkout_sessions", { items: [{ id: BOARD, quantity: 1 }] });
    const r = await post(`/acp/checkout_sessions/${created.body.id}`, { items: [{ id: SKILLET, quantity: 1 }], fulfillment_address: { name: "Ada", line_one: "1 Main St", city: "Springfield", postal_code: "12345", country: "US" } });
    expect(r.status).toBe(200);
    expect(r.body.id).toBe(created.body.id);
    expect(r.body.line_items.map((l: { item: { id: string } }) => l.item.id)).toEqual([SKILLET]);
    expect(r.body.fulfillment_address).toMatchObject({ city: "Springfield" });
  });

  test("completing with a payment token answers status completed with the order, which is paid", async () => {
    const created = await post("/acp/checkout_sessions", { items: [{ id: BOARD, quantity: 1 }] });
    const r = await post(`/acp/checkout_sessions/${created.body.id}/complete`, { payment_data: { token: "tok_approve", provider: "stripe" } });
    expect(r.status).toBe(200);
    expect(r.body.status).toBe("completed");
    expect(r.body.order).toMatchObject({ checkout_session_id: created.body.id });
    const order = await get(`/orders/${r.body.order.id}`);
    expect(order.status).toBe(200);
    expect(order.body.data.status).toBe("paid");
    expect((await get(`/acp/checkout_sessions/${created.body.id}`)).body.status).toBe("completed");
  });

  test("the same Idempotency-Key with the same request replays the answer and charges once; with another request it is refused", async () => {
    const created = await post("/acp/checkout_sessions", { items: [{ id: BOARD, quantity: 1 }] });
    const idem = { "Idempotency-Key": `idem_${crypto.randomUUID()}` };
    const body = { payment_data: { token: "tok_approve", provider: "stripe" } };
    const first = await post(`/acp/checkout_sessions/${created.body.id}/complete`, body, key, idem);
    expect(first.status).toBe(200);
    const replay = await post(`/acp/checkout_sessions/${created.body.id}/complete`, body, key, idem);
    expect(replay.status).toBe(200);
    expect(replay.headers.get("idempotent-replayed")).toBe("true");
    expect(replay.body).toEqual(first.body);
    expect(await ordersOfCart(await cartOf(created.body.id))).toHaveLength(1);
    const conflict = await post(`/acp/checkout_sessions/${created.body.id}/complete`, { payment_data: { token: "MOCK", provider: "stripe" } }, key, idem);
    expect(conflict.status).toBe(409);
    expect(conflict.body).toMatchObject({ type: "request_not_idempotent", code: "IDEMPOTENCY_KEY_CONFLICT" });
  });

  test("creating twice with one Idempotency-Key makes one session", async () => {
    const idem = { "Idempotency-Key": crypto.randomUUID() };
    const body = { items: [{ id: BOARD, quantity: 3 }] };
    const a = await post("/acp/checkout_sessions", body, key, idem);
    const b = await post("/acp/checkout_sessions", body, key, idem);
    expect(a.status).toBe(201);
    expect(b.status).toBe(201);
    expect(b.body.id).toBe(a.body.id);
  });

  test("a declined token is an ACP processing_error (402) and the session can be completed afterwards", async () => {
    const created = await post("/acp/checkout_sessions", { items: [{ id: BOARD, quantity: 1 }] });
    const declined = await post(`/acp/checkout_sessions/${created.body.id}/complete`, { payment_data: { token: "tok_decline", provider: "stripe" } });
    expect(declined.status).toBe(402);
    expect(declined.body).toMatchObject({ type: "processing_error", code: "PAYMENT_DECLINED" });
    // ACP's way on: no idempotency_key field exists here (review U-2)
    expect(declined.body.message).toContain("complete it again with another payment token, under a new Idempotency-Key.");
    expect(declined.body.message).not.toContain("idempotency_key");
    expect(declined.body.details?.idempotency_key_bound).toBeUndefined();
    const ok = await post(`/acp/checkout_sessions/${created.body.id}/complete`, { payment_data: { token: "tok_approve", provider: "stripe" } });
    expect(ok.status).toBe(200);
    expect(ok.body.status).toBe("completed");
  });

  test("a canceled session is canceled and accepts no completion; a completed one cannot be canceled", async () => {
    const created = await post("/acp/checkout_sessions", { items: [{ id: BOARD, quantity: 1 }] });
    const canceled = await post(`/acp/checkout_sessions/${created.body.id}/cancel`, {});
    expect(canceled.status).toBe(200);
    expect(canceled.body.status).toBe("canceled");
    const late = await post(`/acp/checkout_sessions/${created.body.id}/complete`, { payment_data: { token: "tok_approve" } });
    expect(late.status).toBe(409);
    expect(late.body).toMatchObject({ type: "invalid_request", code: "SESSION_INACTIVE" });

    const done = await post("/acp/checkout_sessions", { items: [{ id: BOARD, quantity: 1 }] });
    await post(`/acp/checkout_sessions/${done.body.id}/complete`, { payment_data: { token: "tok_approve" } });
    const refused = await post(`/acp/checkout_sessions/${done.body.id}/cancel`, {});
    expect(refused.status).toBe(409);
    expect(refused.body.code).toBe("CHECKOUT_STATUS_INVALID");
  });

  test("malformed items are refused in ACP's error shape naming the parameter", async () => {
    const r = await post("/acp/checkout_sessions", { items: [{ id: "not-a-uuid", quantity: 1 }] });
    expect(r.status).toBe(400);
    expect(r.body).toMatchObject({ type: "invalid_request", code: "INVALID_ARGUMENT", param: "$.items[0].id" });
  });

  test("another agent's session is not found", async () => {
    const created = await post("/acp/checkout_sessions", { items: [{ id: BOARD, quantity: 1 }] });
    const r = await get(`/acp/checkout_sessions/${created.body.id}`, other);
    expect(r.status).toBe(404);
    expect(r.body.code).toBe("CHECKOUT_SESSION_NOT_FOUND");
  });
});

describe("UCP checkout sessions", () => {
  test("create, read and complete a UCP checkout: statuses ready_for_complete then completed, one order", async () => {
    const created = await post("/ucp/checkout-sessions", { line_items: [{ item: { id: BOARD }, quantity: 1 }], currency: "USD" });
    expect(created.status).toBe(201);
    expect(created.body).toMatchObject({ status: "ready_for_complete", currency: "USD", ucp: { version: expect.any(String) } });
    expect(created.body.line_items[0]).toMatchObject({ item: { id: BOARD, price: 2695 }, quantity: 1 });
    expect((await get(`/ucp/checkout-sessions/${created.body.id}`)).body.status).toBe("ready_for_complete");
    const payment = { payment: { instruments: [{ id: "pi_1", handler_id: "sandbox_card", credential: { type: "token", token: "tok_approve" } }] } };
    const done = await post(`/ucp/checkout-sessions/${created.body.id}/complete`, payment);
    expect(done.status).toBe(200);
    expect(done.body.status).toBe("completed");
    // completing again is idempotent: the same order, no second charge
    const again = await post(`/ucp/checkout-sessions/${created.body.id}/complete`, payment);
    expect(again.status).toBe(200);
    expect(again.body.order.id).toBe(done.body.order.id);
    expect(await ordersOfCart(await cartOf(created.body.id))).toEqual([{ id: done.body.order.id, status: "paid" }]);
  });

  test("a buyer approval is requires_escalation with a continue_url", async () => {
    const created = await post("/ucp/checkout-sessions", { line_items: [{ item: { id: BOARD }, quantity: 1 }] });
    const r = await post(`/ucp/checkout-sessions/${created.body.id}/complete`, { payment: { instruments: [{ handler_id: "sandbox_card", credential: { token: "tok_needs_approval" } }] } });
    expect(r.status).toBe(200);
    expect(r.body.status).toBe("requires_escalation");
    expect(r.body.continue_url).toMatch(/^http:\/\/127\.0\.0\.1:\d+\/api\/v1\/sandbox\/payments\/pi_[0-9a-f]{40}\/[0-9a-f]{64}$/);
    // the buyer approves at that very link (review RA-5), and the next complete pays
    const approved = await decideAt(srv, r.body.continue_url, "approve");
    expect(approved.status).toBe(200);
    expect(approved.body.data.decision).toBe("approve");
    const done = await post(`/ucp/checkout-sessions/${created.body.id}/complete`, { payment: { instruments: [{ handler_id: "sandbox_card", credential: { token: "tok_needs_approval" } }] } });
    expect(done.status).toBe(200);
    expect(done.body.status).toBe("completed");
  });

  test("a missing payment credential is a UCP error message naming the field", async () => {
    const created = await post("/ucp/checkout-sessions", { line_items: [{ item: { id: BOARD }, quantity: 1 }] });
    const r = await post(`/ucp/checkout-sessions/${created.body.id}/complete`, { payment: { instruments: [] } });
    expect(r.status).toBe(400);
    expect(r.body.messages[0]).toMatchObject({ type: "error", code: "MISSING_REQUIRED_ARGUMENT", details: { field: "payment.instruments[0].credential.token" } });
  });

  test("cancel answers canceled", async () => {
    const created = await post("/ucp/checkout-sessions", { line_items: [{ item: { id: BOARD }, quantity: 1 }] });
    const r = await post(`/ucp/checkout-sessions/${created.body.id}/cancel`, {});
    expect(r.status).toBe(200);
    expect(r.body.status).toBe("canceled");
  });
});

type MandateOver = { value?: number; currency?: string; merchant?: string; expiry?: string; id?: string; merchants?: string[] };

/** A payment mandate for the cart, signed by the user's registered key. */
async function mandate(cartId: string, over: MandateOver = {}) {
  const body = unsignedMandate(cartId, over);
  body.payment_mandate.user_authorization = await authorize(body);
  return body;
}

function unsignedMandate(cartId: string, over: MandateOver = {}) {
  return {
    cart_id: cartId,
    intent_mandate: {
      natural_language_description: "a skateboard deck under 100 dollars",
      user_cart_confirmation_required: false,
      merchants: over.merchants ?? ["demo-store"],
      intent_expiry: over.expiry ?? new Date(Date.now() + 3_600_000).toISOString(),
    },
    payment_mandate: {
      payment_mandate_contents: {
        payment_mandate_id: over.id ?? `pm_${crypto.randomUUID()}`,
        payment_details_id: `order_${cartId}`,
        payment_details_total: { label: "Total", amount: { currency: over.currency ?? "USD", value: over.value ?? 100 } },
        payment_response: { request_id: `req_${cartId}`, method_name: "CARD", details: { token: "tok_approve" } },
        merchant_agent: over.merchant ?? "demo-store",
        timestamp: new Date().toISOString(),
      },
      user_authorization: "",
    },
  };
}

async function newCart(productId = BOARD, quantity = 1): Promise<string> {
  const r = await post("/cart", { items: [{ product_id: productId, quantity }] });
  expect(r.status).toBe(201);
  return r.body.data.id;
}

describe("AP2 payment mandates", () => {
  test("a cart inside the mandate's limits is paid: 200 receipt with the order; the same mandate again returns it", async () => {
    const cartId = await newCart();
    const body = await mandate(cartId);
    const r = await post("/ap2/payment-mandates", body);
    expect(r.status).toBe(200);
    expect(r.body.data).toMatchObject({ payment_mandate_id: body.payment_mandate.payment_mandate_contents.payment_mandate_id, cart_id: cartId, amount: { currency: "USD" } });
    expect(r.body.data.order_ids).toHaveLength(1);
    const again = await post("/ap2/payment-mandates", body);
    expect(again.status).toBe(200);
    expect(again.body.data.order_ids).toEqual(r.body.data.order_ids);
    expect(await ordersOfCart(cartId)).toHaveLength(1);
  });

  test("a mandate whose payment needs the buyer's approval is 202 PENDING with the approval link; approved at that link, the same mandate again pays", async () => {
    const cartId = await newCart();
    const body = unsignedMandate(cartId);
    body.payment_mandate.payment_mandate_contents.payment_response.details.token = "tok_needs_approval";
    body.payment_mandate.user_authorization = await authorize(body);
    const pending = await post("/ap2/payment-mandates", body);
    expect(pending.status).toBe(202);
    expect(pending.body.data).toMatchObject({ cart_id: cartId, order_ids: [], payment_status: { pending: true } });
    expect(pending.body.data.approval_urls).toHaveLength(1);
    const [link] = pending.body.data.approval_urls as string[];
    expect(link).toMatch(/^http:\/\/127\.0\.0\.1:\d+\/api\/v1\/sandbox\/payments\/pi_[0-9a-f]{40}\/[0-9a-f]{64}$/);
    // the buyer approves at the link the receipt carries (review RA-5)
    const approved = await decideAt(srv, link!, "approve");
    expect(approved.status).toBe(200);
    const paid = await post("/ap2/payment-mandates", body);
    expect(paid.status).toBe(200);
    expect(paid.body.data.order_ids).toHaveLength(1);
    expect(await ordersOfCart(cartId)).toEqual([{ id: paid.body.data.order_ids[0], status: "paid" }]);
  });

  test("a cart total above the mandate amount is MANDATE_LIMIT_EXCEEDED with the limit and the total", async () => {
    const cartId = await newCart(BOARD, 5); // 134.75 + shipping
    const r = await post("/ap2/payment-mandates", await mandate(cartId, { value: 50 }));
    expect(r.status).toBe(403);
    expect(r.body).toMatchObject({ success: false, code: "MANDATE_LIMIT_EXCEEDED", details: { violated: "amount", mandate: { max_amount_minor: 5000, currency: "USD" } } });
    expect(r.body.details.cart_total_minor).toBeGreaterThan(5000);
    expect(await ordersOfCart(cartId)).toEqual([]);
  });

  test("another currency, another payee or an expired mandate is MANDATE_LIMIT_EXCEEDED naming which", async () => {
    const cartId = await newCart();
    const cases: [MandateOver, string][] = [
      [{ currency: "EUR" }, "currency"],
      [{ merchant: "greenleaf-living", merchants: ["greenleaf-living"] }, "payee"],
      [{ expiry: new Date(Date.now() - 1000).toISOString() }, "expiry"],
    ];
    for (const [over, violated] of cases) {
      const r = await post("/ap2/payment-mandates", await mandate(cartId, over));
      expect(r.status).toBe(403);
      expect(r.body.code).toBe("MANDATE_LIMIT_EXCEEDED");
      expect(r.body.details.violated).toBe(violated);
    }
    expect(await ordersOfCart(cartId)).toEqual([]);
  });

  test("a mandate without the user's authorization is refused", async () => {
    const cartId = await newCart();
    const body = await mandate(cartId);
    const r = await post("/ap2/payment-mandates", { ...body, payment_mandate: { ...body.payment_mandate, user_authorization: "" } });
    expect(r.status).toBe(400);
    expect(r.body).toMatchObject({ code: "MISSING_REQUIRED_ARGUMENT", details: { field: "payment_mandate.user_authorization" } });
  });
});

describe("AP2 user authorization", () => {
  const refusedWith = async (body: unknown, reason: string, k: TestKey = key) => {
    const r = await post("/ap2/payment-mandates", body, k);
    expect(r.status).toBe(401);
    expect(r.body).toMatchObject({ success: false, code: "AGENT_TOKEN_INVALID", details: { reason, field: "payment_mandate.user_authorization" } });
  };

  test("a mandate signed by the user's registered Ed25519 key is accepted too, with its cart mandate signed", async () => {
    const pair = await generateKeyPair("EdDSA", { extractable: true });
    const reg = await registerUserKey(key, "laptop", pair, admin, "EdDSA");
    expect(reg.status).toBe(200);
    expect(reg.body.data).toMatchObject({ agent_key_id: key.id, kid: "laptop", alg: "EdDSA" });
    const cartId = await newCart();
    const body = { ...unsignedMandate(cartId), cart_mandate: await cartMandateOf(cartId) };
    body.payment_mandate.user_authorization = await authorize(body, { key: pair.privateKey, alg: "EdDSA", kid: "laptop" });
    const r = await post("/ap2/payment-mandates", body);
    expect(r.status).toBe(200);
    expect(r.body.data.order_ids).toHaveLength(1);
  });

  test("a mandate whose amount was raised after the user signed is 401 AGENT_TOKEN_INVALID (mandate_mismatch) and pays nothing", async () => {
    const cartId = await newCart(BOARD, 5);
    const body = await mandate(cartId, { value: 50 });
    body.payment_mandate.payment_mandate_contents.payment_details_total.amount.value = 500;
    await refusedWith(body, "mandate_mismatch");
    expect(await ordersOfCart(cartId)).toEqual([]);
  });

  test("a changed cart mandate is 401 AGENT_TOKEN_INVALID (cart_mandate_mismatch)", async () => {
    const cartId = await newCart();
    const cart_mandate = await cartMandateOf(cartId);
    const body = { ...unsignedMandate(cartId), cart_mandate };
    body.payment_mandate.user_authorization = await authorize(body);
    await refusedWith({ ...body, cart_mandate: { contents: { ...cart_mandate.contents, cart_expiry: new Date(Date.now() + 7_200_000).toISOString() } } }, "cart_mandate_mismatch");
  });

  test("a signature by another key under the registered kid is 401 AGENT_TOKEN_INVALID (signature)", async () => {
    const cartId = await newCart();
    const body = unsignedMandate(cartId);
    const stranger = await generateKeyPair("ES256");
    body.payment_mandate.user_authorization = await authorize(body, { key: stranger.privateKey, alg: "ES256", kid: "phone" });
    await refusedWith(body, "signature");
    expect(await ordersOfCart(cartId)).toEqual([]);
  });

  test("a kid not registered for this agent key is 401 AGENT_TOKEN_INVALID (unknown_key), even if another agent key has it", async () => {
    const cartId = await post("/cart", { items: [{ product_id: BOARD, quantity: 1 }] }, other);
    const body = await mandate(cartId.body.data.id); // signed with key's "phone"
    await refusedWith(body, "unknown_key", other);
  });

  test("a user_authorization that is not a compact JWS is 401 AGENT_TOKEN_INVALID (malformed)", async () => {
    const cartId = await newCart();
    const body = unsignedMandate(cartId);
    body.payment_mandate.user_authorization = "eyJhbGciOiJFUzI1NiJ9.stub";
    await refusedWith(body, "malformed");
  });

  test("registering a key: a private JWK is 400; another account's agent key is 404 not_found; a removed key no longer verifies", async () => {
    const pair = await generateKeyPair("ES256", { extractable: true });
    const priv = await putUserKey(key, "bad", await exportJWK(pair.privateKey));
    expect(priv.status).toBe(400);
    expect(priv.body).toMatchObject({ success: false, code: "INVALID_ARGUMENT", details: { field: "jwk.d" } });
    const merchant = await login(srv, merchantLogin("greenleaf-living"));
    const foreign = await putUserKey(key, "mine", await exportJWK(pair.publicKey), merchant);
    expect(foreign.status).toBe(404);
    expect(foreign.body.code).toBe("not_found");
    expect((await registerUserKey(key, "temp", pair)).status).toBe(200);
    const list = await srv.json(`/api/v1/agent-keys/${key.id}/ap2-user-keys`, { headers: { authorization: `Bearer ${admin}` } });
    expect(list.body.data.map((k: { kid: string }) => k.kid)).toContain("temp");
    const del = await srv.json(`/api/v1/agent-keys/${key.id}/ap2-user-keys/temp`, { method: "DELETE", headers: { authorization: `Bearer ${admin}` } });
    expect(del.status).toBe(200);
    const cartId = await newCart();
    const body = unsignedMandate(cartId);
    body.payment_mandate.user_authorization = await authorize(body, { key: pair.privateKey, alg: "ES256", kid: "temp" });
    await refusedWith(body, "unknown_key");
  });
});

describe("detection on POST /agent/checkout", () => {
  test("the x-protocol header routes a UCP body through the bridge and answers in UCP's shape", async () => {
    const r = await post("/checkout", { line_items: [{ item: { id: BOARD }, quantity: 1 }] }, key, { "x-protocol": "ucp" });
    expect(r.status).toBe(201);
    expect(r.headers.get("x-protocol")).toBe("ucp");
    expect(r.body).toMatchObject({ status: "ready_for_complete", ucp: { version: expect.any(String) } });
  });

  test("an ACP body shape is detected without a header and creates an ACP session", async () => {
    const r = await post("/checkout", { items: [{ id: BOARD, quantity: 1 }], buyer: { email: "ada@example.com" } });
    expect(r.status).toBe(201);
    expect(r.body.id).toMatch(/^cs_/);
    expect(r.body.status).toBe("ready_for_payment");
    expect((await get(`/acp/checkout_sessions/${r.body.id}`)).status).toBe(200);
  });

  test("an AP2 payment mandate sent to /checkout pays the cart under the mandate's limits", async () => {
    const cartId = await newCart();
    const over = await post("/checkout", await mandate(cartId, { value: 1 }));
    expect(over.status).toBe(403);
    expect(over.body.code).toBe("MANDATE_LIMIT_EXCEEDED");
    const r = await post("/checkout", await mandate(cartId));
    expect(r.status).toBe(200);
    expect(r.body.data.order_ids).toHaveLength(1);
  });

  test("our own InitiateCheckoutRequest is not bridged", async () => {
    const cartId = await newCart();
    const r = await post("/checkout", { cartId, payment_method: "MOCK" });
    expect(r.status).toBe(200);
    expect(r.body).toMatchObject({ success: true, data: { status: "COMPLETED" } });
  });
});

describe("merchant protocols", () => {
  test("GET /merchants/{slug}/protocols reports the rails, the bridged protocols with their endpoints and the preferred one", async () => {
    const r = await get("/merchants/demo-store/protocols");
    expect(r.status).toBe(200);
    expect(r.body.data.preferred).toBe("card");
    expect(r.body.data.protocols.map((p: { id: string }) => p.id)).toEqual(["MOCK", "card", "x402"]);
    const x402 = r.body.data.protocols.find((p: { id: string }) => p.id === "x402");
    // the seeded demo store has a wallet but no facilitator, and no operator allowlist: not payable (x402-advertised.test.ts)
    expect(x402).toMatchObject({ configured: false, reason: "no_facilitator", network: "eip155:84532", version: 2 });
    expect(r.body.data.bridge.map((b: { id: string }) => b.id)).toEqual(["acp", "ap2", "ucp"]);
    expect(r.body.data.bridge.find((b: { id: string }) => b.id === "acp").endpoint).toBe("/api/v1/agent/acp/checkout_sessions");
  });
});
