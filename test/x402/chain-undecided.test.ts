/**
 * A facilitator `success` the store's chain never confirms (review RX-1): the store's rpc_url cannot be read (dead,
 * wrong, a lapsed provider key), or its node's head stops so the transfer never gets X402_CAPTURE_CONFIRMATIONS deep.
 * The money moved; the order must not stay pending for ever. Meanwhile the agent gets the documented 503
 * SETTLEMENT_UNKNOWN and nothing is re-sent (an unreadable chain is not a nonce "unused again"); once the service clock
 * is past the authorization's validBefore (+ EXPIRY_MARGIN_SECONDS) nothing can move any more and the order is
 * escalated to the merchant (`settlement_unknown`, the facilitator's transaction as evidence), the agent's repeat
 * getting 409 `awaiting: merchant_reconciliation`.
 *
 * The real server (with a movable clock), the devnet and the facilitator proxy. X402_CAPTURE_CONFIRMATIONS is 3 and
 * the in-turn wait 0: anvil mines only per transaction, so a transfer stays 1 deep unless the test mines.
 */
import { afterAll, afterEach, beforeAll, describe, expect, test } from "bun:test";
import type { PaymentPayload } from "@x402/core/types";
import {
  AWAITING_CONFIRMATIONS_REASON,
  CONFIRMATIONS_STALLED_REASON,
  EXPIRY_MARGIN_SECONDS,
  EXTRAS_X402_CONFIRM_WAIT_MS,
  UNREADABLE_ESCALATION_SECONDS,
  UNRESOLVED_REASON,
} from "../../actors/payments/x402-rail.ts";
import { setLogSink } from "../../infra/log.ts";
import { payerOf, startX402Env, waitFor, x402Signer, type X402Env } from "./helpers.ts";

const BOARD = "5befd987-79cd-540c-8a5d-2ba5a30aed41"; // DS-0011, demo-store, untracked stock
/** A store rpc_url that cannot be read (engineer AJ's port range): every JSON-RPC call answered 503, and counted. */
const BROKEN_RPC_PORT = 7991;
let brokenRpc: ReturnType<typeof Bun.serve>;
let rpcCalls = 0;
/** A hosted provider's URL carries the merchant's API key in its path: it must never reach a log line. */
const PROVIDER_KEY = "aj7f3k9providerkey";
const logLines: string[] = [];
let restoreSink: () => void = () => {};

let env: X402Env;
let offsetMs = 0;
const clock = { now: () => Date.now() + offsetMs };

beforeAll(async () => {
  restoreSink = setLogSink((line) => void logLines.push(line));
  env = await startX402Env({ rpcUrl: "devnet", fund: [3, 4], config: { X402_CAPTURE_CONFIRMATIONS: 3, LOG_LEVEL: "warn" }, boot: { clock } });
  env.srv.running.services.extras.set(EXTRAS_X402_CONFIRM_WAIT_MS, 0);
  brokenRpc = Bun.serve({
    port: BROKEN_RPC_PORT,
    hostname: "127.0.0.1",
    fetch: () => {
      rpcCalls++;
      return new Response("provider key expired", { status: 503 });
    },
  });
}, 120_000);

afterEach(async () => {
  offsetMs = 0;
  await env.srv.db.sql`UPDATE store_x402_config SET rpc_url = ${env.devnet.chain.rpcUrl} WHERE store_slug = 'demo-store'`;
});

afterAll(async () => {
  restoreSink();
  brokenRpc?.stop(true);
  await env?.stop();
});

const orderOf = async (cartId: string) => {
  const [o] = await env.srv.db.sql<{ id: string; status: string; capture_ref: string | null; reconciliation: string | null }[]>`
    SELECT id, status, capture_ref, reconciliation FROM orders WHERE cart_id = ${cartId}`;
  return o ? { ...o } : undefined;
};
const intentOf = async (cartId: string) => {
  const [row] = await env.srv.db.sql<{ state: string; error_reason: string | null; transaction_hash: string | null }[]>`
    SELECT state, error_reason, transaction_hash FROM x402_intents WHERE cart_id = ${cartId}`;
  return row ? { ...row } : undefined;
};
const authOf = (p: PaymentPayload) => (p.payload as { authorization: { from: string; nonce: string; validBefore: string } }).authorization;

/** A paid checkout answered 503 SETTLEMENT_UNKNOWN: the merchant credited, the order pending, the transaction recorded. */
async function paidButPending(payerNo: number) {
  const cartId = await env.newCart([{ product_id: BOARD, quantity: 1 }]);
  const payload = await x402Signer(env.devnet, payerOf(env.devnet, payerNo)).createPaymentPayload(await env.challengeOf(cartId));
  const before = await env.devnet.balanceOf(env.merchant);
  const body = { cartId, x402_payload: payload, idempotency_key: crypto.randomUUID() };
  const first = await env.checkout(body);
  expect({ status: first.status, code: first.body.code, status_detail: first.body.details?.status }).toEqual({
    status: 503,
    code: "UPSTREAM_UNAVAILABLE",
    status_detail: "SETTLEMENT_UNKNOWN",
  });
  expect(await env.devnet.balanceOf(env.merchant)).toBe(before + BigInt(payload.accepted.amount));
  const intent = await intentOf(cartId);
  expect(intent).toMatchObject({ state: "unknown", error_reason: AWAITING_CONFIRMATIONS_REASON });
  expect(intent!.transaction_hash).toMatch(/^0x[0-9a-f]{64}$/);
  return { cartId, payload, body, tx: intent!.transaction_hash! };
}

/**
 * The service clock past the authorization's validBefore (+ margin: UNREADABLE_ESCALATION_SECONDS for an unreadable
 * chain, review RG MED-1), and the session's reminder due now.
 */
async function pastValidBefore(cartId: string, payload: PaymentPayload, marginSeconds = EXPIRY_MARGIN_SECONDS): Promise<void> {
  offsetMs = (Number(authOf(payload).validBefore) + marginSeconds + 5) * 1000 - Date.now();
  await env.srv.db.sql`UPDATE actor_reminders SET due_at = now() WHERE kind = 'cart' AND id = ${cartId}`;
  await waitFor("the escalation", async () => (await orderOf(cartId))?.reconciliation != null, 20_000);
}

async function expectEscalated(cartId: string, payload: PaymentPayload, body: Record<string, unknown>, tx: string, railReason: string) {
  const auth = authOf(payload);
  const order = (await orderOf(cartId))!;
  expect(order).toMatchObject({ status: "pending", capture_ref: null, reconciliation: "settlement_unknown" });
  const [event] = await env.srv.db.sql<{ data: Record<string, unknown> }[]>`
    SELECT data FROM order_events WHERE order_id = ${order.id} AND type = 'reconciliation_required'`;
  expect(event!.data).toMatchObject({
    reason: "settlement_unknown",
    reference: `x402:${auth.nonce}`,
    rail_reason: railReason,
    evidence: { transaction_hash: tx, payer: auth.from, nonce: auth.nonce, valid_before: auth.validBefore, pay_to: env.merchant },
  });
  const settles = env.proxy.settles;
  const again = await env.checkout(body);
  expect({ status: again.status, code: again.body.code, details: again.body.details }).toMatchObject({
    status: 409,
    code: "CHECKOUT_ALREADY_IN_PROGRESS",
    details: { status: "SETTLEMENT_UNKNOWN", awaiting: "merchant_reconciliation", reason: railReason, payment_reference: `x402:${auth.nonce}` },
  });
  expect(env.proxy.settles).toBe(settles);
}

describe("a store whose rpc_url cannot be read", () => {
  test("a facilitator success answers 503 SETTLEMENT_UNKNOWN and is never re-sent while the chain cannot be read, which is read again after 5 s, then 10 s; past validBefore the order is escalated to the merchant with the facilitator's transaction, and the agent's repeat gets 409", async () => {
    await env.srv.db.sql`UPDATE store_x402_config SET rpc_url = ${`http://127.0.0.1:${BROKEN_RPC_PORT}/v2/${PROVIDER_KEY}`} WHERE store_slug = 'demo-store'`;
    const settlesBefore = env.proxy.settles;
    const { cartId, payload, body, tx } = await paidButPending(3);
    expect(env.proxy.settles).toBe(settlesBefore + 1);
    const repeatIs503 = async () => {
      const again = await env.checkout(body);
      expect({ status: again.status, code: again.body.code, status_detail: again.body.details?.status }).toEqual({
        status: 503,
        code: "UPSTREAM_UNAVAILABLE",
        status_detail: "SETTLEMENT_UNKNOWN",
      });
    };

    // The agent's repeats reconcile: an unreadable chain proves nothing, so the same 503 and no second /settle; within
    // the 5 s after the failed look the chain is not even read again.
    const readsAfterPay = rpcCalls;
    await repeatIs503();
    await repeatIs503();
    expect(rpcCalls).toBe(readsAfterPay);
    // 6 s later: read again (and still unreadable); then not again before 10 more seconds.
    offsetMs = 6_000;
    await repeatIs503();
    const readsAfter6s = rpcCalls;
    expect(readsAfter6s).toBeGreaterThan(readsAfterPay);
    offsetMs = 12_000;
    await repeatIs503();
    expect(rpcCalls).toBe(readsAfter6s);
    expect(env.proxy.settles).toBe(settlesBefore + 1);
    expect(await intentOf(cartId)).toEqual({ state: "unknown", error_reason: AWAITING_CONFIRMATIONS_REASON, transaction_hash: tx });
    expect(await orderOf(cartId)).toMatchObject({ status: "pending", reconciliation: null });

    await pastValidBefore(cartId, payload, UNREADABLE_ESCALATION_SECONDS);
    await expectEscalated(cartId, payload, body, tx, UNRESOLVED_REASON);
    expect(await intentOf(cartId)).toEqual({ state: "unknown", error_reason: UNRESOLVED_REASON, transaction_hash: tx });
    expect(env.proxy.settles).toBe(settlesBefore + 1);
    // The failed reads are logged, without the RPC's URL and so without the provider key in it.
    expect(logLines.some((l) => l.includes("x402 chain read failed during reconciliation"))).toBe(true);
    expect(logLines.filter((l) => l.includes(PROVIDER_KEY))).toEqual([]);
  }, 90_000);
});

describe("a store whose chain stops growing", () => {
  test("a transfer that never gets deep enough answers 503 SETTLEMENT_UNKNOWN meanwhile; past validBefore the order is escalated to the merchant with the transaction, never paid on it", async () => {
    const { cartId, payload, body, tx } = await paidButPending(4);
    const again = await env.checkout(body);
    expect(again.status).toBe(503);
    expect(await orderOf(cartId)).toMatchObject({ status: "pending", reconciliation: null });

    await pastValidBefore(cartId, payload);
    await expectEscalated(cartId, payload, body, tx, CONFIRMATIONS_STALLED_REASON);
  }, 90_000);
});
