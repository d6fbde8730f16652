/**
 * A payment token longer than the cart takes (actors/cart/messages.ts PAYMENT_TOKEN_MAX_LENGTH, REST's
 * `payment_method` bound) sent through a bridge, through HTTP against the real server. It used to reach the cart's
 * message schema and come back as "invalid cart.checkout message: Expected string length less or equal to 100" on
 * `/paymentMethod`, a member no protocol request has (helper E, session 20); on AP2 that was after the mandate had
 * been claimed and bound to the cart. Each bridge now refuses it itself, naming its own token member, before any
 * cart work: nothing is held or charged, and an AP2 mandate refused so is bound to no cart.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import * as ap2 from "../helpers/ap2.ts";
import { paymentContents, type Ap2Agent } from "../helpers/ap2.ts";
import { ACP, UCP } from "../helpers/bridge.ts";

let a: Ap2Agent;
beforeAll(async () => {
  a = await ap2.startAp2Agent();
}, 120_000);
afterAll(async () => {
  await a?.srv.stop();
});

const LONG = `tok_${"x".repeat(97)}`; // 101 characters
const send = (method: string, path: string, body: unknown, headers: Record<string, string> = {}) =>
  a.srv.json(path, { method, headers: { ...a.key.headers, "idempotency-key": crypto.randomUUID(), ...headers }, body });
const ordersOfKey = async () => (await a.srv.db.sql<{ n: number }[]>`SELECT count(*)::int AS n FROM orders WHERE agent_key_id = ${a.key.id}`)[0]!.n;

describe("a payment token longer than 100 characters through a bridge", () => {
  test("ACP 2025-09-29 answers 400 INVALID_ARGUMENT on $.payment_data.token and holds nothing", async () => {
    const c = await send("POST", ACP, { items: [{ id: a.product, quantity: 1 }] });
    expect(c.status).toBe(201);
    const before = await ordersOfKey();
    const r = await send("POST", `${ACP}/${c.body.id}/complete`, { payment_data: { token: LONG, provider: "stripe" } });
    expect(r.status).toBe(400);
    expect(r.body).toMatchObject({ type: "invalid_request", code: "INVALID_ARGUMENT", param: "$.payment_data.token" });
    expect(r.body.message).not.toContain("cart.checkout");
    expect(await ordersOfKey()).toBe(before);
  }, 60_000);

  test("ACP 2026-04-17 answers 400 INVALID_ARGUMENT on $.payment_data.instrument.credential.token", async () => {
    const v = { "api-version": "2026-04-17" };
    const c = await send("POST", ACP, { line_items: [{ id: a.product }] }, v);
    expect(c.status).toBe(201);
    const r = await send("POST", `${ACP}/${c.body.id}/complete`, { payment_data: { handler_id: "card", instrument: { type: "card", credential: { type: "spt", token: LONG } } } }, v);
    expect(r.status).toBe(400);
    expect(r.body).toMatchObject({ type: "invalid_request", code: "INVALID_ARGUMENT", param: "$.payment_data.instrument.credential.token" });
    expect(r.body.message).not.toContain("cart.checkout");
  }, 60_000);

  test("UCP answers 400 INVALID_ARGUMENT on $.payment.instruments[0].credential.token", async () => {
    const c = await send("POST", UCP, { line_items: [{ item: { id: a.product }, quantity: 1 }] });
    expect(c.status).toBe(201);
    const r = await send("POST", `${UCP}/${c.body.id}/complete`, { payment: { instruments: [{ handler_id: "sandbox_card", credential: { token: LONG } }] } });
    expect(r.status).toBe(400);
    expect(r.body.messages[0]).toMatchObject({ type: "error", code: "INVALID_ARGUMENT", path: "$.payment.instruments[0].credential.token" });
    expect(r.body.messages[0].content).not.toContain("cart.checkout");
  }, 60_000);

  test("AP2 answers 400 INVALID_ARGUMENT naming the mandate's token member, and the mandate is bound to no cart", async () => {
    const cart = await ap2.cheapCart(a);
    const pmc = paymentContents(500);
    pmc.payment_response.details.token = LONG;
    const body = { cart_id: cart.cartId, payment_mandate: { payment_mandate_contents: pmc, user_authorization: await ap2.signMandate(a.userKey, [pmc]) } };
    const r = await send("POST", "/api/v1/agent/ap2/payment-mandates", body);
    expect(r.status).toBe(400);
    expect(r.body).toMatchObject({ success: false, code: "INVALID_ARGUMENT", details: { field: "payment_mandate.payment_mandate_contents.payment_response.details.token" } });
    expect(r.body.error).not.toContain("cart.checkout");
    const [bound] = await a.srv.db.sql<{ n: number }[]>`SELECT count(*)::int AS n FROM bridge_sessions WHERE protocol = 'ap2' AND agent_key_id = ${a.key.id}`;
    expect(bound!.n).toBe(0);
    expect((await ap2.paidOrders(a.srv, cart.cartId)).length).toBe(0);
  }, 60_000);

  test("a token of exactly 100 characters passes the bridge and is the cart's to judge (not a sandbox test token)", async () => {
    const c = await send("POST", UCP, { line_items: [{ item: { id: a.product }, quantity: 1 }] });
    expect(c.status).toBe(201);
    const r = await send("POST", `${UCP}/${c.body.id}/complete`, { payment: { instruments: [{ handler_id: "sandbox_card", credential: { token: LONG.slice(0, 100) } }] } });
    expect(r.status).toBe(400);
    expect(r.body.messages[0]).toMatchObject({ code: "INVALID_ARGUMENT", path: "$.payment.instruments[0].credential.token" });
    expect(r.body.messages[0].content).toContain("is not a sandbox test token");
  }, 60_000);
});
