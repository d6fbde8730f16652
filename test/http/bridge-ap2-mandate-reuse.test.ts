/**
 * An AP2 payment mandate pays one cart. The user's signature covers the mandate's contents but not the request's
 * `cart_id`, so without a binding the same signed mandate would pay every cart of the agent that fits its limits
 * (audit D11's key-reuse trap, here with the user's authorization at stake). The mandate id is bound to the first
 * cart it is presented for; another cart is MANDATE_LIMIT_EXCEEDED (`violated: cart`).
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { generateKeyPair, type CryptoKey } from "jose";
import { ALL_SCOPES, createKey, login, type TestKey } from "../helpers/agents.ts";
import * as ap2 from "../helpers/ap2.ts";
import { startServer, type TestServer } from "../helpers/server.ts";

const BOARD = "5befd987-79cd-540c-8a5d-2ba5a30aed41"; // DS-0011, demo-store, 26.95, untracked stock

let srv: TestServer;
let key: TestKey;
let other: TestKey;
let admin: string;
const userKeys = new Map<string, CryptoKey>();

async function registerUserKey(k: TestKey): Promise<void> {
  const pair = await generateKeyPair("ES256", { extractable: true });
  userKeys.set(k.id, pair.privateKey);
  const r = await ap2.registerUserKey(srv, admin, k.id, "phone", pair);
  if (r.status !== 200) throw new Error(`user key registration failed: ${r.status} ${JSON.stringify(r.body)}`);
}

beforeAll(async () => {
  srv = await startServer({ seed: true });
  admin = await login(srv);
  key = await createKey(srv, { scopes: ALL_SCOPES, token: admin });
  other = await createKey(srv, { scopes: ALL_SCOPES, token: admin });
  await registerUserKey(key);
  await registerUserKey(other);
}, 120_000);
afterAll(async () => {
  await srv?.stop();
});

const post = (path: string, body: unknown, k: TestKey = key) => srv.json(`/api/v1/agent${path}`, { method: "POST", headers: k.headers, body });
const ordersOfCart = async (cartId: string) => (await srv.db.sql<{ id: string; status: string }[]>`SELECT id, status FROM orders WHERE cart_id = ${cartId}`).map((r) => ({ ...r }));

async function newCart(k: TestKey = key): Promise<string> {
  const r = await post("/cart", { items: [{ product_id: BOARD, quantity: 1 }] }, k);
  expect(r.status).toBe(201);
  return r.body.data.id;
}

/** A mandate for up to 100 USD at demo-store, signed by `k`'s user key; `cart_id` is the request's, not signed. */
const signedMandate = (k: TestKey, mandateId: string, token = "tok_approve") => ap2.demoStoreMandate(userKeys.get(k.id)!, mandateId, token);

describe("AP2 mandate reuse", () => {
  test("a paid mandate presented again for another cart is MANDATE_LIMIT_EXCEEDED (violated: cart) and pays nothing", async () => {
    const mandateId = `pm_${crypto.randomUUID()}`;
    const forCart = await signedMandate(key, mandateId);
    const first = await newCart();
    const paid = await post("/ap2/payment-mandates", forCart(first));
    expect(paid.status).toBe(200);
    expect(paid.body.data.order_ids).toHaveLength(1);

    const second = await newCart();
    const replay = await post("/ap2/payment-mandates", forCart(second));
    expect(replay.status).toBe(403);
    expect(replay.body).toMatchObject({
      success: false,
      code: "MANDATE_LIMIT_EXCEEDED",
      details: { violated: "cart", mandate_cart_id: first, cart_id: second, mandate: { payment_mandate_id: mandateId } },
    });
    expect(await ordersOfCart(second)).toEqual([]);
    // the cart it paid still answers with its order
    const again = await post("/ap2/payment-mandates", forCart(first));
    expect(again.status).toBe(200);
    expect(again.body.data.order_ids).toEqual(paid.body.data.order_ids);
  });

  test("a mandate declined on its cart stays bound to that cart: another cart is refused and pays nothing", async () => {
    const declinedFor = await signedMandate(key, `pm_${crypto.randomUUID()}`, "tok_decline");
    const cartId = await newCart();
    const declined = await post("/ap2/payment-mandates", declinedFor(cartId));
    expect(declined.status).toBe(402);
    const otherCart = await newCart();
    const elsewhere = await post("/ap2/payment-mandates", declinedFor(otherCart));
    expect(elsewhere.status).toBe(403);
    expect(elsewhere.body.details.violated).toBe("cart");
    expect(await ordersOfCart(otherCart)).toEqual([]);
  });

  test("after a declined mandate, the 402 and a second mandate's 409 say AP2's way on; cancelling the session lets a new mandate pay the same cart (review V-2)", async () => {
    const cartId = await newCart();
    const declined = await post("/ap2/payment-mandates", (await signedMandate(key, `pm_${crypto.randomUUID()}`, "tok_decline"))(cartId));
    expect(declined.status).toBe(402);
    expect(declined.body.error).toContain("to pay another way, cancel the checkout session (details.checkout_session_id) and present a new mandate for this cart");
    expect(declined.body.error).not.toContain("idempotency_key");
    const second = await signedMandate(key, `pm_${crypto.randomUUID()}`);
    const conflict = await post("/ap2/payment-mandates", second(cartId));
    expect(conflict.status).toBe(409);
    expect(conflict.body.code).toBe("IDEMPOTENCY_KEY_CONFLICT");
    expect(conflict.body.error).toContain("cancel the checkout session (details.checkout_session_id");
    expect(conflict.body.error).not.toMatch(/idempotency_key|complete_checkout/);
    const session = declined.body.details.checkout_session_id;
    expect((await post(`/checkout/${session}/cancel`, {})).status).toBe(200);
    const paid = await post("/ap2/payment-mandates", second(cartId));
    expect(paid.status).toBe(200);
    expect((await ordersOfCart(cartId)).some((o) => o.status === "paid")).toBe(true);
  });

  test("a mandate refused for its limits binds nothing: the same mandate then pays a cart inside them", async () => {
    const forCart = await signedMandate(key, `pm_${crypto.randomUUID()}`);
    const big = await post("/cart", { items: [{ product_id: BOARD, quantity: 5 }] }); // 134.75 > 100
    const refused = await post("/ap2/payment-mandates", forCart(big.body.data.id));
    expect(refused.status).toBe(403);
    expect(refused.body.details.violated).toBe("amount");
    const small = await newCart();
    const paid = await post("/ap2/payment-mandates", forCart(small));
    expect(paid.status).toBe(200);
    expect(await ordersOfCart(small)).toHaveLength(1);
  });

  test("the same mandate id under another agent key is that agent's own mandate", async () => {
    const mandateId = `pm_${crypto.randomUUID()}`;
    const mine = await post("/ap2/payment-mandates", (await signedMandate(key, mandateId))(await newCart()));
    expect(mine.status).toBe(200);
    const theirs = await post("/ap2/payment-mandates", (await signedMandate(other, mandateId))(await newCart(other)), other);
    expect(theirs.status).toBe(200);
  });
});
