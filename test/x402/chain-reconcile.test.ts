/**
 * Reconciling x402 settlements from the chain (review R4-2, R4-3, R4-4, R4-6; R4-7 is in
 * test/http/server-idle-timeout.test.ts). The real server, the devnet (anvil + TestUSDC + the @x402/evm facilitator),
 * the facilitator proxy (facilitator-proxy.ts) and, per case, a JSON-RPC relay in front of anvil that behaves like a
 * hosted provider (range-capped or log-less `eth_getLogs`).
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import type { PaymentPayload } from "@x402/core/types";
import type { Address, Hex } from "viem";
import { EXPIRY_MARGIN_SECONDS, EXTRAS_X402_SETTLE_TIMEOUT_MS, SPENT_UNCONFIRMED_REASON } from "../../actors/payments/x402-rail.ts";
import type { DevAccount } from "../../infra/x402/chain.ts";
import type { Devnet } from "../../infra/x402/devnet.ts";
import { login, type TestKey } from "../helpers/agents.ts";
import type { TestServer } from "../helpers/server.ts";
import type { FacilitatorProxy } from "./facilitator-proxy.ts";
import { cancelOnChain as cancelOn, expectMined as expectMinedOn, payerOf, startX402Env, waitFor, withSettleMode, x402Signer, type X402Env } from "./helpers.ts";

const BOARD = "5befd987-79cd-540c-8a5d-2ba5a30aed41"; // DS-0011, demo-store, untracked stock

let env: X402Env;
let devnet: Devnet;
let proxy: FacilitatorProxy;
let srv: TestServer;
let key: TestKey;
let owner: Record<string, string>;
let merchant: Address;
let x402Config: Record<string, string>;
let offsetMs = 0;
const clock = { now: () => Date.now() + offsetMs };

interface RpcCall { id: unknown; method: string; params?: { fromBlock?: string; toBlock?: string }[] }
type Rule = (call: RpcCall) => { code: number; message: string } | null;

/** A JSON-RPC relay in front of anvil that answers the calls `rule` refuses with its error. */
function rpcRelay(rule: Rule) {
  const server = Bun.serve({
    port: 0,
    hostname: "127.0.0.1",
    async fetch(req) {
      const body = await req.text();
      const parsed = JSON.parse(body) as RpcCall | RpcCall[];
      const calls = Array.isArray(parsed) ? parsed : [parsed];
      const refused = calls.map((c) => ({ c, e: rule(c) }));
      if (!Array.isArray(parsed) && refused[0]!.e) return Response.json({ jsonrpc: "2.0", id: parsed.id, error: refused[0]!.e });
      const r = await fetch(devnet.chain.rpcUrl, { method: "POST", headers: { "content-type": "application/json" }, body });
      return new Response(await r.text(), { headers: { "content-type": "application/json" } });
    },
  });
  return { url: `http://127.0.0.1:${server.port}`, stop: () => server.stop(true) };
}

/** As range-capped providers: an `eth_getLogs` from block 0, or over more than 1,000 blocks, is refused. */
const rangeCapped: Rule = (c) => {
  if (c.method !== "eth_getLogs") return null;
  const from = c.params?.[0]?.fromBlock;
  const to = c.params?.[0]?.toBlock;
  const span = from && to && to.startsWith("0x") ? BigInt(to) - BigInt(from) : 1_000_000n;
  return from === undefined || from === "0x0" || from === "earliest" || span >= 1_000n ? { code: -32005, message: "query exceeds max block range 1000" } : null;
};
/** A node that serves no logs at all (pruned, or a provider that disabled the method). */
const noLogs: Rule = (c) => (c.method === "eth_getLogs" ? { code: -32601, message: "the method eth_getLogs does not exist/is not available" } : null);

async function setRpc(url: string): Promise<void> {
  await srv.db.sql`UPDATE store_x402_config SET rpc_url = ${url} WHERE store_slug = 'demo-store'`;
}

beforeAll(async () => {
  env = await startX402Env({ rpcUrl: "devnet", fund: [3, 4, 6, 7, 8], boot: { clock } });
  ({ devnet, proxy, srv, key, merchant, x402Config } = env);
  owner = { authorization: `Bearer ${await login(srv)}` }; // the demo store is the operator's
}, 120_000);

afterAll(async () => {
  await env?.stop();
});

const payerNo = (i: number): DevAccount => payerOf(devnet, i);

const newCart = () => env.newCart([{ product_id: BOARD, quantity: 1 }]);

const checkout = (body: Record<string, unknown>) => env.checkout(body);

async function payloadFor(cartId: string, account: DevAccount): Promise<PaymentPayload> {
  return x402Signer(devnet, account).createPaymentPayload(await env.challengeOf(cartId));
}

const authorizationOf = (p: PaymentPayload) => (p.payload as { authorization: { from: string; nonce: string; validBefore: string } }).authorization;

const orderOf = async (cartId: string) => {
  const rows = await srv.db.sql<{ status: string; capture_ref: string | null }[]>`SELECT status, capture_ref FROM orders WHERE cart_id = ${cartId}`;
  return rows.map((o) => ({ ...o }));
};
const intentOf = async (cartId: string) => {
  const [row] = await srv.db.sql<{ state: string; error_reason: string | null; transaction_hash: string | null }[]>`
    SELECT state, error_reason, transaction_hash FROM x402_intents WHERE cart_id = ${cartId} ORDER BY created_at DESC LIMIT 1`;
  return row ? { ...row } : undefined;
};

const expectMined = (tx: string) => expectMinedOn(devnet, tx);
const cancelOnChain = (payer: DevAccount, nonce: Hex) => cancelOn(devnet, payer, nonce);

async function anvil(method: string, params: unknown[] = []): Promise<unknown> {
  const r = await fetch(devnet.chain.rpcUrl, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify({ jsonrpc: "2.0", id: 1, method, params }) });
  return ((await r.json()) as { result: unknown }).result;
}

describe("a landed transfer whose log a hosted RPC will not search from block 0 (R4-3)", () => {
  test("a range-capped RPC: the log is searched from the intent's block in windows; 200 COMPLETED with the real transaction, charged once", async () => {
    const relay = rpcRelay(rangeCapped);
    await setRpc(relay.url);
    try {
      const payer = payerNo(3);
      const cartId = await newCart();
      const payload = await payloadFor(cartId, payer);
      const before = await devnet.balanceOf(payer.address);
      const r = await withSettleMode(proxy, "reset", () => checkout({ cartId, x402_payload: payload, idempotency_key: crypto.randomUUID() })); // the transfer happens, its answer is lost
      expect(r.status).toBe(200);
      expect(r.body.data.status).toBe("COMPLETED");
      const tx = r.body.data.x402.settlements[0].transaction as string;
      expect(tx).toMatch(/^0x[0-9a-f]{64}$/);
      await expectMined(tx);
      expect(await orderOf(cartId)).toEqual([{ status: "paid", capture_ref: tx }]);
      expect(await devnet.balanceOf(payer.address)).toBe(before - BigInt(payload.accepted.amount));
    } finally {
      relay.stop();
      await setRpc(devnet.chain.rpcUrl);
    }
  }, 60_000);

  test("an RPC that serves no logs: a spent nonce alone is not proof of payment; the order is escalated for the merchant, never paid by itself", async () => {
    const relay = rpcRelay(noLogs);
    await setRpc(relay.url);
    try {
      const payer = payerNo(4);
      const cartId = await newCart();
      const payload = await payloadFor(cartId, payer);
      const auth = authorizationOf(payload);
      const before = await devnet.balanceOf(payer.address);
      const body = { cartId, x402_payload: payload, idempotency_key: crypto.randomUUID() };
      const r = await withSettleMode(proxy, "reset", () => checkout(body));
      const ref = `x402:${auth.nonce}`;
      expect({ status: r.status, code: r.body.code, details: r.body.details }).toMatchObject({
        status: 409,
        code: "CHECKOUT_ALREADY_IN_PROGRESS",
        details: { status: "SETTLEMENT_UNKNOWN", awaiting: "merchant_reconciliation", reason: SPENT_UNCONFIRMED_REASON, payment_reference: ref },
      });
      const [order] = await srv.db.sql<{ id: string; status: string; reconciliation: string | null; capture_ref: string | null }[]>`
        SELECT id, status, reconciliation, capture_ref FROM orders WHERE cart_id = ${cartId}`;
      expect({ ...order! }).toMatchObject({ status: "pending", reconciliation: "settlement_unknown", capture_ref: null });
      expect(await intentOf(cartId)).toMatchObject({ state: "unknown", error_reason: SPENT_UNCONFIRMED_REASON, transaction_hash: null });
      const [event] = await srv.db.sql<{ data: Record<string, unknown> }[]>`SELECT data FROM order_events WHERE order_id = ${order!.id} AND type = 'reconciliation_required'`;
      expect(event!.data).toMatchObject({ reason: "settlement_unknown", reference: ref, rail_reason: SPENT_UNCONFIRMED_REASON, evidence: { payer: auth.from, nonce: auth.nonce, pay_to: merchant } });
      expect(String((event!.data.evidence as Record<string, string>).check)).toContain("cancelAuthorization");

      // the agent's repeat: still waiting for the merchant, never COMPLETED on the spent nonce alone
      const again = await checkout(body);
      expect({ status: again.status, code: again.body.code, awaiting: again.body.details?.awaiting }).toEqual({ status: 409, code: "CHECKOUT_ALREADY_IN_PROGRESS", awaiting: "merchant_reconciliation" });

      // the merchant found the transfer in its wallet: accept pays the order under the nonce's reference
      const accepted = await srv.json(`/api/v1/merchant/stores/demo-store/orders/${order!.id}/reconcile`, { method: "POST", headers: owner, body: { action: "accept" } });
      expect(accepted.status).toBe(200);
      expect(await orderOf(cartId)).toEqual([{ status: "paid", capture_ref: ref }]);
      expect(await intentOf(cartId)).toMatchObject({ state: "captured", error_reason: "accepted_by_merchant" });
      expect(await devnet.balanceOf(payer.address)).toBe(before - BigInt(payload.accepted.amount)); // charged once
    } finally {
      relay.stop();
      await setRpc(devnet.chain.rpcUrl);
    }
  }, 60_000);

  test("an authorization the payer cancelled after sending, its log readable: the settlement fails, nothing is paid and nothing moved", async () => {
    const payer = payerNo(8);
    const cartId = await newCart();
    const payload = await payloadFor(cartId, payer);
    const auth = authorizationOf(payload);
    const before = await devnet.balanceOf(payer.address);
    const body = { cartId, x402_payload: payload, idempotency_key: crypto.randomUUID() };
    proxy.settleMode = "drop"; // the /settle is lost: nothing happened, the outcome is unknown
    try {
      const r = await checkout(body);
      expect({ status: r.status, settlement: r.body.details?.status }).toEqual({ status: 503, settlement: "SETTLEMENT_UNKNOWN" });
      await cancelOnChain(payer, auth.nonce as Hex);
      const again = await checkout(body);
      expect(again.status).not.toBe(200);
      expect(await intentOf(cartId)).toMatchObject({ state: "failed", error_reason: "authorization_canceled" });
      expect((await orderOf(cartId)).map((o) => o.status)).not.toContain("paid");
      expect(await devnet.balanceOf(payer.address)).toBe(before);
    } finally {
      proxy.settleMode = "pass";
    }
  }, 60_000);
});

describe("a first /settle refused with a pre-broadcast reason that names a transaction (R4-6)", () => {
  test("is looked up on chain, not trusted: 200 COMPLETED with that transaction, the order paid, charged once", async () => {
    const payer = payerNo(6);
    const cartId = await newCart();
    const payload = await payloadFor(cartId, payer);
    const before = await devnet.balanceOf(payer.address);
    const r = await withSettleMode(proxy, "refused_with_tx", () => checkout({ cartId, x402_payload: payload, idempotency_key: crypto.randomUUID() }));
    expect(r.status).toBe(200);
    expect(r.body.data.status).toBe("COMPLETED");
    const tx = r.body.data.x402.settlements[0].transaction as string;
    await expectMined(tx);
    expect(await orderOf(cartId)).toEqual([{ status: "paid", capture_ref: tx }]);
    expect(await devnet.balanceOf(payer.address)).toBe(before - BigInt(payload.accepted.amount));
  }, 60_000);
});

describe("a first /settle refused before broadcast while the nonce is spent and no log can be read (R4-6, review P4)", () => {
  test("is neither failed nor paid: the order is escalated for the merchant", async () => {
    const relay = rpcRelay(noLogs);
    await setRpc(relay.url);
    try {
      const payer = payerNo(1);
      const cartId = await newCart();
      const payload = await payloadFor(cartId, payer);
      const r = await withSettleMode(proxy, "refused_no_tx", () => checkout({ cartId, x402_payload: payload, idempotency_key: crypto.randomUUID() })); // the transfer happens; the answer reads as a pre-broadcast refusal
      expect({ status: r.status, code: r.body.code, details: r.body.details }).toMatchObject({
        status: 409,
        code: "CHECKOUT_ALREADY_IN_PROGRESS",
        details: { status: "SETTLEMENT_UNKNOWN", awaiting: "merchant_reconciliation", reason: SPENT_UNCONFIRMED_REASON, payment_reference: `x402:${authorizationOf(payload).nonce}` },
      });
      const [order] = await srv.db.sql<{ status: string; reconciliation: string | null }[]>`SELECT status, reconciliation FROM orders WHERE cart_id = ${cartId}`;
      expect({ ...order! }).toEqual({ status: "pending", reconciliation: "settlement_unknown" });
      expect(await intentOf(cartId)).toMatchObject({ state: "unknown", error_reason: SPENT_UNCONFIRMED_REASON });
    } finally {
      relay.stop();
      await setRpc(devnet.chain.rpcUrl);
    }
  }, 60_000);
});

describe("the agent's repeat while the session timer re-sends a slow /settle (R4-2)", () => {
  // The settle deadline is 15 s in production; 4 s here (x402.settleTimeoutMs) keeps the case short. "At once" is
  // judged against it: the repeat must not wait behind the timer's re-send, which holds the cart for the deadline.
  const SETTLE_MS = 4_000;
  test("answers the documented 503 SETTLEMENT_UNKNOWN at once, never a caller timeout; the order is then paid once", async () => {
    const payer = payerNo(7);
    const cartId = await newCart();
    const payload = await payloadFor(cartId, payer);
    const price = BigInt(payload.accepted.amount);
    const before = await devnet.balanceOf(payer.address);
    const body = { cartId, x402_payload: payload, idempotency_key: crypto.randomUUID() };
    srv.running.services.extras.set(EXTRAS_X402_SETTLE_TIMEOUT_MS, SETTLE_MS);
    devnet.facilitator.setSettleDelay(120_000); // every /settle outlives the deadline
    try {
      try {
        const first = await checkout(body);
        expect(first.status).toBe(503);
        expect(first.body).toMatchObject({ code: "UPSTREAM_UNAVAILABLE", details: { status: "SETTLEMENT_UNKNOWN" } });
        expect((await intentOf(cartId))?.state).toBe("unknown");
        await waitFor("the session timer's re-send (5 s)", async () => (await intentOf(cartId))?.state === "settling", 15_000);
        const started = Date.now();
        const again = await checkout(body);
        const took = Date.now() - started;
        expect({ status: again.status, code: again.body.code, status_detail: again.body.details?.status }).toEqual({ status: 503, code: "UPSTREAM_UNAVAILABLE", status_detail: "SETTLEMENT_UNKNOWN" });
        expect(again.body.details.checkout_session_id).toBe(first.body.details.checkout_session_id);
        expect(JSON.stringify(again.body)).not.toContain("cart/");
        expect(took).toBeLessThan(SETTLE_MS / 2);
      } finally {
        devnet.facilitator.setSettleDelay(0);
      }
      // the next re-send is served at once: the order ends paid, the buyer charged once
      await waitFor("the order paid", async () => (await orderOf(cartId))[0]?.status === "paid", 60_000);
    } finally {
      srv.running.services.extras.delete(EXTRAS_X402_SETTLE_TIMEOUT_MS);
    }
    await Bun.sleep(1_000);
    expect(await devnet.balanceOf(payer.address)).toBe(before - price);
  }, 150_000);
});

// Last: it moves the chain's clock forward for good.
describe("expiry is judged by the chain's clock (R4-4)", () => {
  test("our clock past validBefore while the chain is not: the settlement stays unknown; a confirmed block past it fails it", async () => {
    const payer = payerNo(3);
    const cartId = await newCart();
    const payload = await payloadFor(cartId, payer);
    const auth = authorizationOf(payload);
    const before = await devnet.balanceOf(payer.address);
    const body = { cartId, x402_payload: payload, idempotency_key: crypto.randomUUID() };
    proxy.settleMode = "drop"; // never forwarded: nothing moves, and every re-send is lost too
    try {
      const r = await checkout(body);
      expect(r.status).toBe(503);
      // our clock runs ahead, past validBefore + the margin; the chain's has not got there
      offsetMs = (Number(auth.validBefore) + EXPIRY_MARGIN_SECONDS + 5) * 1000 - Date.now();
      await srv.db.sql`UPDATE actor_reminders SET due_at = now() WHERE kind = 'cart' AND id = ${cartId}`;
      await Bun.sleep(3_000);
      const repeat = await checkout(body);
      expect({ status: repeat.status, detail: repeat.body.details?.status }).toEqual({ status: 503, detail: "SETTLEMENT_UNKNOWN" });
      expect(await intentOf(cartId)).toMatchObject({ state: "unknown" });
      expect((await orderOf(cartId))[0]?.status).toBe("pending");

      // the chain passes validBefore, with the confirmation depth
      await anvil("evm_mine", [Number(auth.validBefore) + 1]);
      await anvil("evm_mine", [Number(auth.validBefore) + 2]);
      await anvil("evm_mine", [Number(auth.validBefore) + 3]);
      await srv.db.sql`UPDATE actor_reminders SET due_at = now() WHERE kind = 'cart' AND id = ${cartId}`;
      await waitFor("the intent failed", async () => (await intentOf(cartId))?.state === "failed", 30_000);
      expect(await intentOf(cartId)).toMatchObject({ state: "failed", error_reason: "authorization_expired_unsettled" });
      expect(await devnet.balanceOf(payer.address)).toBe(before);
    } finally {
      proxy.settleMode = "pass";
      offsetMs = 0;
    }
  }, 90_000);
});
