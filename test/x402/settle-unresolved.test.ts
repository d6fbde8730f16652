/**
 * x402 settlements the service cannot settle by itself, and repeats of a partly paid x402 checkout.
 *
 * 1. A store without an `rpc_url`: an unknown settlement past its authorization's `validBefore` can never be told
 *    used from unused (the facilitator refuses an expired authorization before it looks at the nonce). It is
 *    escalated like a card capture waiting for its merchant: the order flagged `settlement_unknown` with a
 *    `reconciliation_required` event, listed under `reconciliation=required`, no timer, the stock held. The merchant
 *    accepts (order paid under `x402:<nonce>`) or releases it with `refund` (order canceled, stock back, the rail's
 *    record failed: nothing captured as far as our records go).
 * 2. After a 207, repeating the identical request ignores the payload of the store already paid (payments audit
 *    B2 F5): it is never charged again, and the answer names it (`paid_merchant_slugs`, `ignored_payloads_for`).
 *
 * The real server, the devnet and a facilitator proxy (facilitator-proxy.ts) that drops /settle before or after
 * forwarding it. The service clock is moved past `validBefore`; the chain's own clock is not (the rail decides expiry
 * by the service clock), so the proxy keeps refusing re-sends meanwhile.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import type { PaymentPayload, PaymentRequired } from "@x402/core/types";
import type { Address, Hex } from "viem";
import { decodePaymentRequired } from "../../actors/payments/x402-challenge.ts";
import { EXPIRY_MARGIN_SECONDS, FACILITATOR_NONCE_USED_REASON } from "../../actors/payments/x402-rail.ts";
import type { DevAccount } from "../../infra/x402/chain.ts";
import type { Devnet } from "../../infra/x402/devnet.ts";
import { login, type TestKey } from "../helpers/agents.ts";
import type { TestServer } from "../helpers/server.ts";
import type { FacilitatorProxy } from "./facilitator-proxy.ts";
import { cancelOnChain as cancelOn, payerOf, startX402Env, waitFor, withSettleMode, x402Signer, type X402Env } from "./helpers.ts";

const SKILLET = "399d72f1-303c-5cf3-bc6a-5c82714b85d4"; // DS-0005, demo-store, tracked stock
const BOARD = "5befd987-79cd-540c-8a5d-2ba5a30aed41"; // DS-0011, demo-store, untracked stock
const GREEN = "4ef5cf23-f828-5e3e-bd0b-833653bc4c5a"; // GL-0001, greenleaf-living

let env: X402Env;
let devnet: Devnet;
let proxy: FacilitatorProxy;
let srv: TestServer;
let key: TestKey;
let owner: Record<string, string>;
let merchant: Address;
let greenWallet: Address;
let x402Config: Record<string, string>;
let offsetMs = 0;
const clock = { now: () => Date.now() + offsetMs };

beforeAll(async () => {
  // No rpc_url: the facilitator is the only witness of a settlement.
  env = await startX402Env({ rpcUrl: null, fund: [3, 4, 8, 9], boot: { clock } });
  ({ devnet, proxy, srv, key, merchant, x402Config } = env);
  owner = { authorization: `Bearer ${await login(srv)}` }; // the demo store is the operator's
  greenWallet = payerNo(6).address;
  await srv.db.sql`UPDATE stores SET payment_methods = '{card,x402}' WHERE slug = 'greenleaf-living'`;
  await srv.db.sql`INSERT INTO store_x402_config (store_slug, pay_to, network, asset_address, facilitator_url, rpc_url)
      VALUES ('greenleaf-living', ${greenWallet}, ${devnet.network}, ${devnet.token.address}, ${devnet.facilitator.url}, ${devnet.chain.rpcUrl})
      ON CONFLICT (store_slug) DO UPDATE SET pay_to = EXCLUDED.pay_to, network = EXCLUDED.network, asset_address = EXCLUDED.asset_address,
        facilitator_url = EXCLUDED.facilitator_url, rpc_url = EXCLUDED.rpc_url`;
}, 120_000);

afterAll(async () => {
  await env?.stop();
});

const payerNo = (i: number): DevAccount => payerOf(devnet, i);

const newCart = (items: { product_id: string; quantity: number }[]) => env.newCart(items);

const checkout = (body: Record<string, unknown>) => env.checkout(body);

const challengeOf = (cartId: string) => env.challengeOf(cartId);

/** One store's payload of a (multi-store) challenge, signed by `account`. */
async function payloadFor(challenge: PaymentRequired, account: DevAccount, slug = "demo-store"): Promise<PaymentPayload> {
  const accepts = challenge.accepts.filter((a) => a.extra?.merchantSlug === slug);
  expect(accepts).toHaveLength(1);
  return x402Signer(devnet, account).createPaymentPayload({ ...challenge, accepts });
}

const authorizationOf = (p: PaymentPayload) => (p.payload as { authorization: { nonce: string; validBefore: string; from: string } }).authorization;

const orderOf = async (cartId: string) =>
  (await srv.db.sql<{ id: string; status: string; capture_ref: string | null; reconciliation: string | null }[]>`
    SELECT id, status, capture_ref, reconciliation FROM orders WHERE cart_id = ${cartId}`)[0]!;
const intentOf = async (cartId: string) =>
  (await srv.db.sql<{ state: string; error_reason: string | null; transaction_hash: string | null }[]>`
    SELECT state, error_reason, transaction_hash FROM x402_intents WHERE cart_id = ${cartId} ORDER BY created_at DESC LIMIT 1`)[0]!;
const stock = async () => (await srv.db.sql<{ s: number; r: number }[]>`SELECT stock_quantity AS s, reserved_quantity AS r FROM products WHERE id = ${SKILLET}`)[0]!;
const sessionTimer = async (cartId: string) => (await srv.db.sql`SELECT 1 FROM actor_reminders WHERE kind = 'cart' AND id = ${cartId} AND name = 'session'`).length;

const cancelOnChain = (payer: DevAccount, nonce: Hex) => cancelOn(devnet, payer, nonce);

/**
 * A one-skillet x402 checkout whose settlement outcome is lost (`mode` on the proxy), then the service clock moved
 * past the authorization's validBefore (+ the skew margin) and the session's reconcile run: the order is escalated.
 */
async function escalatedCheckout(payer: DevAccount, mode: "drop" | "reset") {
  const cartId = await newCart([{ product_id: SKILLET, quantity: 1 }]);
  const payload = await payloadFor(await challengeOf(cartId), payer);
  const auth = authorizationOf(payload);
  const body = { cartId, x402_payload: payload, idempotency_key: crypto.randomUUID() };
  const before = { balance: await devnet.balanceOf(payer.address), stock: await stock() };
  proxy.settleMode = mode;
  const r = await checkout(body);
  // every later /settle (the reconciler's re-sends) is lost before it reaches the facilitator
  proxy.settleMode = "drop";
  expect(r.status).toBe(503);
  expect(r.body).toMatchObject({ code: "UPSTREAM_UNAVAILABLE", details: { status: "SETTLEMENT_UNKNOWN" } });
  expect(await intentOf(cartId)).toMatchObject({ state: "unknown" });

  // past validBefore for the service: nothing can settle or tell it any more
  offsetMs = (Number(auth.validBefore) + EXPIRY_MARGIN_SECONDS + 5) * 1000 - Date.now();
  await srv.db.sql`UPDATE actor_reminders SET due_at = now() WHERE kind = 'cart' AND id = ${cartId}`;
  await waitFor("the escalation", async () => (await orderOf(cartId)).reconciliation !== null);
  return { cartId, payload, auth, body, before };
}

describe("an unknown x402 settlement without an rpc_url, past its validBefore", () => {
  test("is escalated for the merchant, and the merchant's release cancels the order, puts the stock back and records nothing captured", async () => {
    const payer = payerNo(3);
    try {
      const { cartId, auth, body, before } = await escalatedCheckout(payer, "drop");
      const order = await orderOf(cartId);
      expect(order).toMatchObject({ status: "pending", reconciliation: "settlement_unknown", capture_ref: null });
      expect((await stock()).r).toBe(before.stock.r + 1); // still held for the merchant's decision
      // The chain is asked again with the backoff (a store that sets an rpc_url lets it decide; review RG MED-3).
      expect(await sessionTimer(cartId)).toBe(1);
      const [event] = await srv.db.sql<{ data: Record<string, unknown> }[]>`SELECT data FROM order_events WHERE order_id = ${order.id} AND type = 'reconciliation_required'`;
      expect(event!.data).toMatchObject({
        reason: "settlement_unknown",
        reference: `x402:${auth.nonce}`,
        evidence: { payer: auth.from, nonce: auth.nonce, valid_before: auth.validBefore, pay_to: merchant },
      });

      const listed = await srv.json("/api/v1/merchant/stores/demo-store/orders?reconciliation=required", { headers: owner });
      expect(listed.status).toBe(200);
      expect(JSON.stringify(listed.body.data)).toContain(order.id);

      // the agent's repeat: waiting for the merchant, not a new signature; nothing re-sent
      const settles = proxy.settles;
      const again = await checkout(body);
      expect({ status: again.status, body: again.body }).toMatchObject({
        status: 409,
        body: { code: "CHECKOUT_ALREADY_IN_PROGRESS", details: { status: "SETTLEMENT_UNKNOWN", awaiting: "merchant_reconciliation", payment_reference: `x402:${auth.nonce}` } },
      });
      expect(proxy.settles).toBe(settles);

      const released = await srv.json(`/api/v1/merchant/stores/demo-store/orders/${order.id}/reconcile`, { method: "POST", headers: owner, body: { action: "refund" } });
      expect(released.status).toBe(200);
      expect(released.body.data).toMatchObject({ order_status: "canceled", refund: null, refund_by_merchant: true, reconciliation: null });
      expect(await orderOf(cartId)).toMatchObject({ status: "canceled", reconciliation: null });
      expect((await stock()).r).toBe(before.stock.r); // the hold is back
      expect((await stock()).s).toBe(before.stock.s);
      expect(await intentOf(cartId)).toMatchObject({ state: "failed", error_reason: "released_by_merchant" });
      expect(await devnet.balanceOf(payer.address)).toBe(before.balance); // nothing moved on chain
    } finally {
      proxy.settleMode = "pass";
      offsetMs = 0;
    }
  }, 60_000);

  test("is escalated for the merchant, and the merchant's accept pays the order under the authorization's reference; the agent's repeat answers COMPLETED", async () => {
    const payer = payerNo(4);
    try {
      const { cartId, auth, payload, body, before } = await escalatedCheckout(payer, "reset");
      const price = BigInt(payload.accepted.amount);
      expect(await devnet.balanceOf(payer.address)).toBe(before.balance - price); // the lost settle did transfer
      const order = await orderOf(cartId);
      expect(order).toMatchObject({ status: "pending", reconciliation: "settlement_unknown" });

      const accepted = await srv.json(`/api/v1/merchant/stores/demo-store/orders/${order.id}/reconcile`, { method: "POST", headers: owner, body: { action: "accept" } });
      expect(accepted.status).toBe(200);
      expect(accepted.body.data).toMatchObject({ order_status: "paid", capture_reference: `x402:${auth.nonce}`, checkout_status: "COMPLETED" });
      expect(await orderOf(cartId)).toMatchObject({ status: "paid", reconciliation: null, capture_ref: `x402:${auth.nonce}` });
      expect(await stock()).toEqual({ s: before.stock.s - 1, r: before.stock.r }); // sold
      expect(await intentOf(cartId)).toMatchObject({ state: "captured", transaction_hash: `x402:${auth.nonce}` });

      const again = await checkout(body);
      if (again.status === 200) expect(again.body.data.status).toBe("COMPLETED");
      else expect({ status: again.status, body: again.body }).toMatchObject({ status: 409, body: { code: "CHECKOUT_ALREADY_IN_PROGRESS", details: { status: "COMPLETED" } } });
      expect(await devnet.balanceOf(payer.address)).toBe(before.balance - price); // charged once
    } finally {
      proxy.settleMode = "pass";
      offsetMs = 0;
    }
  }, 60_000);
});

describe("an x402 re-send the facilitator refuses as nonce_already_used, without an rpc_url (review P5)", () => {
  test("is escalated for the merchant, never paid on the facilitator's word alone (a cancelled authorization reads the same); the merchant's accept pays it", async () => {
    const payer = payerNo(8);
    try {
      const cartId = await newCart([{ product_id: SKILLET, quantity: 1 }]);
      const payload = await payloadFor(await challengeOf(cartId), payer);
      const auth = authorizationOf(payload);
      const ref = `x402:${auth.nonce}`;
      const body = { cartId, x402_payload: payload, idempotency_key: crypto.randomUUID() };
      const before = await devnet.balanceOf(payer.address);
      // the transfer happens, its answer is lost
      proxy.settleMode = "reset";
      const first = await checkout(body);
      proxy.settleMode = "pass";
      expect(first.status).toBe(503);
      expect(first.body).toMatchObject({ code: "UPSTREAM_UNAVAILABLE", details: { status: "SETTLEMENT_UNKNOWN" } });

      // the agent's repeat re-sends the same authorization: the facilitator answers nonce_already_used
      const again = await checkout(body);
      expect({ status: again.status, code: again.body.code, details: again.body.details }).toMatchObject({
        status: 409,
        code: "CHECKOUT_ALREADY_IN_PROGRESS",
        details: { status: "SETTLEMENT_UNKNOWN", awaiting: "merchant_reconciliation", reason: FACILITATOR_NONCE_USED_REASON, payment_reference: ref },
      });
      const order = await orderOf(cartId);
      expect(order).toMatchObject({ status: "pending", reconciliation: "settlement_unknown", capture_ref: null });
      expect(await intentOf(cartId)).toMatchObject({ state: "unknown", error_reason: FACILITATOR_NONCE_USED_REASON, transaction_hash: null });
      const [event] = await srv.db.sql<{ data: Record<string, unknown> }[]>`SELECT data FROM order_events WHERE order_id = ${order.id} AND type = 'reconciliation_required'`;
      expect(event!.data).toMatchObject({ reason: "settlement_unknown", reference: ref, rail_reason: FACILITATOR_NONCE_USED_REASON, evidence: { payer: auth.from, nonce: auth.nonce, pay_to: merchant } });
      expect(String((event!.data.evidence as Record<string, string>).check)).toContain("cancelAuthorization");
      const settles = proxy.settles;
      const third = await checkout(body);
      expect({ status: third.status, code: third.body.code, awaiting: third.body.details?.awaiting }).toEqual({ status: 409, code: "CHECKOUT_ALREADY_IN_PROGRESS", awaiting: "merchant_reconciliation" });
      expect(proxy.settles).toBe(settles); // nothing re-sent once escalated

      const accepted = await srv.json(`/api/v1/merchant/stores/demo-store/orders/${order.id}/reconcile`, { method: "POST", headers: owner, body: { action: "accept" } });
      expect(accepted.status).toBe(200);
      expect(await orderOf(cartId)).toMatchObject({ status: "paid", reconciliation: null, capture_ref: ref });
      expect(await intentOf(cartId)).toMatchObject({ state: "captured", error_reason: "accepted_by_merchant" });
      expect(await devnet.balanceOf(payer.address)).toBe(before - BigInt(payload.accepted.amount)); // charged once
    } finally {
      proxy.settleMode = "pass";
    }
  }, 60_000);

  test("an authorization the payer cancelled after a lost /settle reads the same to the facilitator: escalated, not paid; the merchant's refund releases it, nothing moved", async () => {
    const payer = payerNo(9);
    try {
      const cartId = await newCart([{ product_id: SKILLET, quantity: 1 }]);
      const payload = await payloadFor(await challengeOf(cartId), payer);
      const auth = authorizationOf(payload);
      const body = { cartId, x402_payload: payload, idempotency_key: crypto.randomUUID() };
      const before = { balance: await devnet.balanceOf(payer.address), stock: await stock() };
      proxy.settleMode = "drop"; // the /settle is lost before the facilitator: nothing moved, the outcome is unknown
      const first = await checkout(body);
      proxy.settleMode = "pass";
      expect({ status: first.status, settlement: first.body.details?.status }).toEqual({ status: 503, settlement: "SETTLEMENT_UNKNOWN" });
      await cancelOnChain(payer, auth.nonce as Hex);

      const again = await checkout(body);
      expect({ status: again.status, code: again.body.code, details: again.body.details }).toMatchObject({
        status: 409,
        code: "CHECKOUT_ALREADY_IN_PROGRESS",
        details: { status: "SETTLEMENT_UNKNOWN", awaiting: "merchant_reconciliation", reason: FACILITATOR_NONCE_USED_REASON },
      });
      const order = await orderOf(cartId);
      expect(order).toMatchObject({ status: "pending", reconciliation: "settlement_unknown", capture_ref: null });

      const released = await srv.json(`/api/v1/merchant/stores/demo-store/orders/${order.id}/reconcile`, { method: "POST", headers: owner, body: { action: "refund" } });
      expect(released.status).toBe(200);
      expect(await orderOf(cartId)).toMatchObject({ status: "canceled", reconciliation: null, capture_ref: null });
      expect(await intentOf(cartId)).toMatchObject({ state: "failed", error_reason: "released_by_merchant" });
      expect(await stock()).toEqual(before.stock);
      expect(await devnet.balanceOf(payer.address)).toBe(before.balance); // nothing moved
    } finally {
      proxy.settleMode = "pass";
    }
  }, 60_000);
});

describe("repeating an x402 checkout after a 207 (payments audit B2 F5)", () => {
  test("the identical request ignores the payload of the store already paid, names it, and settles only the other store once it can pay", async () => {
    const paying = payerNo(3);
    const unfunded = payerNo(7); // no balance: greenleaf's leg is refused at /verify
    const cartId = await newCart([
      { product_id: BOARD, quantity: 1 },
      { product_id: GREEN, quantity: 1 },
    ]);
    const challenge = await challengeOf(cartId);
    const demo = await payloadFor(challenge, paying, "demo-store");
    const green = await payloadFor(challenge, unfunded, "greenleaf-living");
    const demoPrice = BigInt(demo.accepted.amount);
    const greenPrice = BigInt(green.accepted.amount);
    const merchantBefore = await devnet.balanceOf(merchant);
    const greenBefore = await devnet.balanceOf(greenWallet);
    const body = { cartId, x402_payload: { "demo-store": demo, "greenleaf-living": green }, idempotency_key: crypto.randomUUID() };

    const partial = await checkout(body);
    expect(partial.status).toBe(207);
    expect(partial.body.data).toMatchObject({ status: "PARTIALLY_COMPLETED", completed_store_ids: ["demo-store"] });
    expect(await devnet.balanceOf(merchant)).toBe(merchantBefore + demoPrice);

    // the identical request (object keyed by slug): the demo payload is ignored, greenleaf's is refused again
    const repeat = await checkout(body);
    expect(repeat.status).toBe(402);
    expect(repeat.body).toMatchObject({
      code: "payment_required",
      details: { reason: "invalid_exact_evm_insufficient_balance", merchant_slug: "greenleaf-living", paid_merchant_slugs: ["demo-store"], ignored_payloads_for: ["demo-store"] },
    });
    expect(repeat.body.error).not.toContain("does not pay");
    // the same payloads as an array: the same answer
    const asArray = await checkout({ ...body, x402_payload: [demo, green] });
    expect(asArray.status).toBe(402);
    expect(asArray.body.details).toMatchObject({ reason: "invalid_exact_evm_insufficient_balance", ignored_payloads_for: ["demo-store"] });
    // only the paid store's payload: nothing to charge, the challenge for the unpaid store, naming the paid one
    const onlyPaid = await checkout({ ...body, x402_payload: demo });
    expect(onlyPaid.status).toBe(402);
    expect(onlyPaid.body.details).toMatchObject({ reason: "merchant_already_paid", paid_merchant_slugs: ["demo-store"], ignored_payloads_for: ["demo-store"] });
    expect(decodePaymentRequired(onlyPaid.headers.get("PAYMENT-REQUIRED") ?? "").accepts.map((a) => a.payTo)).toEqual([greenWallet]);
    expect(await devnet.balanceOf(merchant)).toBe(merchantBefore + demoPrice); // never charged twice

    // once greenleaf's payer has the money, the identical request completes
    await devnet.fund(unfunded.address, greenPrice);
    const done = await checkout(body);
    expect(done.status).toBe(200);
    expect(done.body.data).toMatchObject({ status: "COMPLETED" });
    expect(done.body.data.order_ids).toHaveLength(2);
    expect(await devnet.balanceOf(merchant)).toBe(merchantBefore + demoPrice);
    expect(await devnet.balanceOf(greenWallet)).toBe(greenBefore + greenPrice);
  }, 60_000);
});
