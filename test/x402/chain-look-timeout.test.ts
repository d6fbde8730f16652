/**
 * One look at the store's chain is bounded as a whole (CHAIN_LOOK_TIMEOUT_MS, 4 s), not only read by read
 * (CHAIN_READ_TIMEOUT_MS, 2 s): actors/payments/x402-rail.ts `chainState` runs its reads inside `withinLook`. A node
 * that answers every read just inside the read limit must not hold a reconciliation for read after read: once the
 * look runs out with the nonce already seen used, the intent is spent with its transfer not found in time
 * (SPENT_UNCONFIRMED_REASON, escalated to the merchant), and the timeout is logged. Without the look's bound the
 * reads would run to 4.8 s and find the transfer (1 deep: still awaiting confirmations).
 *
 * The real server, the devnet and the facilitator proxy; the store's rpc_url is a JSON-RPC relay to the devnet that can
 * be made slow: it then answers a receipt as "not mined" and the block height and log search each 1.6 s late, so the
 * look's reads add up to 4.8 s (authorizationState, fast, then those three). X402_CAPTURE_CONFIRMATIONS is 3 and the
 * in-turn wait 0: the paid transfer stays 1 deep, so the agent's repeat looks at the chain again.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { AWAITING_CONFIRMATIONS_REASON, CHAIN_LOOK_TIMEOUT_MS, EXTRAS_X402_CONFIRM_WAIT_MS, SPENT_UNCONFIRMED_REASON } from "../../actors/payments/x402-rail.ts";
import { setLogSink } from "../../infra/log.ts";
import { payerOf, startX402Env, x402Signer, type X402Env } from "./helpers.ts";

const BOARD = "5befd987-79cd-540c-8a5d-2ba5a30aed41"; // DS-0011, demo-store, untracked stock
/** Each slow read's delay: under the read limit (2 s), three of them over the look's (4 s). */
const SLOW_READ_MS = 1_600;

let env: X402Env;
let relay: ReturnType<typeof Bun.serve>;
let slow = false;
const logLines: string[] = [];
let restoreSink: () => void = () => {};

beforeAll(async () => {
  restoreSink = setLogSink((line) => void logLines.push(line));
  env = await startX402Env({ rpcUrl: "devnet", fund: [3], config: { X402_CAPTURE_CONFIRMATIONS: 3, LOG_LEVEL: "warn" } });
  env.srv.running.services.extras.set(EXTRAS_X402_CONFIRM_WAIT_MS, 0);
  const upstream = env.devnet.chain.rpcUrl;
  relay = Bun.serve({
    port: 0,
    hostname: "127.0.0.1",
    async fetch(req) {
      const text = await req.text();
      const call = JSON.parse(text) as { id: number; method: string };
      if (slow && ["eth_getTransactionReceipt", "eth_blockNumber", "eth_getLogs"].includes(call.method)) {
        await Bun.sleep(SLOW_READ_MS);
        if (call.method === "eth_getTransactionReceipt") return Response.json({ jsonrpc: "2.0", id: call.id, result: null });
      }
      return fetch(upstream, { method: "POST", headers: { "content-type": "application/json" }, body: text });
    },
  });
  await env.srv.db.sql`UPDATE store_x402_config SET rpc_url = ${`http://127.0.0.1:${relay.port}`} WHERE store_slug = 'demo-store'`;
}, 120_000);

afterAll(async () => {
  restoreSink();
  relay?.stop(true);
  await env?.stop();
});

const intentOf = async (cartId: string) => {
  const [row] = await env.srv.db.sql<{ state: string; error_reason: string | null; transaction_hash: string | null }[]>`
    SELECT state, error_reason, transaction_hash FROM x402_intents WHERE cart_id = ${cartId}`;
  return row ? { ...row } : undefined;
};

describe("a store whose chain answers each read slowly", () => {
  test("a look whose reads together outlast CHAIN_LOOK_TIMEOUT_MS ends at it: the nonce seen used, the transfer not found in time, the intent spent-unconfirmed and the timeout logged", async () => {
    expect(CHAIN_LOOK_TIMEOUT_MS).toBe(4_000);
    const cartId = await env.newCart([{ product_id: BOARD, quantity: 1 }]);
    const payload = await x402Signer(env.devnet, payerOf(env.devnet, 3)).createPaymentPayload(await env.challengeOf(cartId));
    const body = { cartId, x402_payload: payload, idempotency_key: crypto.randomUUID() };
    const first = await env.checkout(body);
    expect({ status: first.status, code: first.body.code, status_detail: first.body.details?.status }).toEqual({ status: 503, code: "UPSTREAM_UNAVAILABLE", status_detail: "SETTLEMENT_UNKNOWN" });
    const paid = await intentOf(cartId);
    expect(paid).toMatchObject({ state: "unknown", error_reason: AWAITING_CONFIRMATIONS_REASON });

    slow = true;
    const started = Date.now();
    const again = await env.checkout(body);
    const tookMs = Date.now() - started;
    // Spent, by a transfer or a cancellation nobody can say in time: the merchant decides; never paid, never re-sent.
    expect({ status: again.status, code: again.body.code, details: again.body.details }).toMatchObject({
      status: 409,
      code: "CHECKOUT_ALREADY_IN_PROGRESS",
      details: { status: "SETTLEMENT_UNKNOWN", awaiting: "merchant_reconciliation", reason: SPENT_UNCONFIRMED_REASON },
    });
    expect(await intentOf(cartId)).toEqual({ state: "unknown", error_reason: SPENT_UNCONFIRMED_REASON, transaction_hash: paid!.transaction_hash });
    expect(tookMs).toBeGreaterThanOrEqual(CHAIN_LOOK_TIMEOUT_MS);
    expect(logLines.some((l) => l.includes("x402 chain read failed during reconciliation") && l.includes(`chain look exceeded ${CHAIN_LOOK_TIMEOUT_MS} ms`))).toBe(true);
    // The abandoned look's last read (not cancelled) ends before the relay stops.
    await Bun.sleep(SLOW_READ_MS);
  }, 60_000);
});
