/**
 * An x402 settlement is never recorded failed while its transfer may be on chain (payments audit B2 F1, F2), and a
 * slow facilitator gives the agent the documented answers (F3). The real server, the devnet (anvil + TestUSDC + the
 * @x402/evm facilitator) and a facilitator proxy in front of it (facilitator-proxy.ts) that loses or garbles the
 * answer AFTER the facilitator acted. In every case: the buyer is charged at most once on chain, the order ends
 * paid when the transfer landed, and the agent gets 200 COMPLETED or 503 UPSTREAM_UNAVAILABLE SETTLEMENT_UNKNOWN.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import type { PaymentPayload } from "@x402/core/types";
import { decodePaymentResponseHeader } from "@x402/fetch";
import type { Address } from "viem";
import { DEFAULT_SETTLE_TIMEOUT_MS, EXTRAS_X402_SETTLE_TIMEOUT_MS, x402AskTimeoutMs, x402Timeouts } from "../../actors/payments/x402-rail.ts";
import type { DevAccount } from "../../infra/x402/chain.ts";
import type { Devnet } from "../../infra/x402/devnet.ts";
import { createFacilitatorClient } from "../../infra/x402/facilitator-client.ts";
import { ActorError } from "../../actors/runtime/errors.ts";
import type { TestKey } from "../helpers/agents.ts";
import type { TestServer } from "../helpers/server.ts";
import type { FacilitatorProxy } from "./facilitator-proxy.ts";
import { expectMined as expectMinedOn, payerOf, startX402Env, waitFor, withSettleMode, x402Signer, type X402Env } from "./helpers.ts";

const BOARD = "5befd987-79cd-540c-8a5d-2ba5a30aed41"; // DS-0011, demo-store, untracked stock
/** The deadline of an ask that names none (the actor client's 10 s in production), shortened with the settle deadline. */
const ASK_MS = 2_500;

let env: X402Env;
let devnet: Devnet;
let proxy: FacilitatorProxy;
let srv: TestServer;
let key: TestKey;
let merchant: Address;
let x402Config: Record<string, string>;

beforeAll(async () => {
  env = await startX402Env({ rpcUrl: "devnet", fund: [3, 4, 7, 8], config: { ACTOR_ASK_TIMEOUT_MS: ASK_MS } });
  ({ devnet, proxy, srv, key, merchant, x402Config } = env);
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

const orderOf = async (cartId: string) => {
  const rows = await srv.db.sql<{ status: string; capture_ref: string | null }[]>`SELECT status, capture_ref FROM orders WHERE cart_id = ${cartId}`;
  return rows.map((o) => ({ ...o }));
};
const intentOf = async (cartId: string) => {
  const [row] = await srv.db.sql<{ state: string; error_reason: string | null; transaction_hash: string | null; updated_at: Date }[]>`
    SELECT state, error_reason, transaction_hash, updated_at FROM x402_intents WHERE cart_id = ${cartId} ORDER BY created_at DESC LIMIT 1`;
  return row;
};

const expectMined = (tx: string) => expectMinedOn(devnet, tx);

/** The agent's documented repeat (same call, same key) answers the receipt: 200 COMPLETED, or 409 naming COMPLETED. */
async function expectRepeatAnswersCompleted(body: Record<string, unknown>): Promise<void> {
  const again = await checkout(body);
  if (again.status === 200) expect(again.body.data.status).toBe("COMPLETED");
  else expect({ status: again.status, body: again.body }).toMatchObject({ status: 409, body: { code: "CHECKOUT_ALREADY_IN_PROGRESS", details: { status: "COMPLETED" } } });
}

describe("the facilitator's answer is lost after it settled", () => {
  test("a connection reset after /settle was forwarded is found on chain: 200 COMPLETED with that transaction, the buyer charged once", async () => {
    const payer = payerNo(3);
    const cartId = await newCart();
    const payload = await payloadFor(cartId, payer);
    const price = BigInt(payload.accepted.amount);
    const before = await devnet.balanceOf(payer.address);
    const body = { cartId, x402_payload: payload, idempotency_key: crypto.randomUUID() };
    const r = await withSettleMode(proxy, "reset", () => checkout(body));
    expect(await devnet.balanceOf(payer.address)).toBe(before - price); // the transfer happened
    expect(r.status).toBe(200);
    expect(r.body.data.status).toBe("COMPLETED");
    const tx = decodePaymentResponseHeader(r.headers.get("PAYMENT-RESPONSE") ?? "").transaction;
    await expectMined(tx);
    expect(await orderOf(cartId)).toEqual([{ status: "paid", capture_ref: tx }]);
    expect(await intentOf(cartId)).toMatchObject({ state: "captured", transaction_hash: tx });

    await expectRepeatAnswersCompleted(body);
    expect(await devnet.balanceOf(payer.address)).toBe(before - price);
  }, 60_000);

  test("a success:false the facilitator gives after broadcasting (its receipt wait failed) is found on chain: 200 COMPLETED, the buyer charged once", async () => {
    const payer = payerNo(4);
    const cartId = await newCart();
    const payload = await payloadFor(cartId, payer);
    const price = BigInt(payload.accepted.amount);
    const before = await devnet.balanceOf(payer.address);
    const body = { cartId, x402_payload: payload, idempotency_key: crypto.randomUUID() };
    const r = await withSettleMode(proxy, "receipt_timeout", () => checkout(body));
    expect(await devnet.balanceOf(payer.address)).toBe(before - price);
    expect(r.status).toBe(200);
    expect(r.body.data.status).toBe("COMPLETED");
    const tx = decodePaymentResponseHeader(r.headers.get("PAYMENT-RESPONSE") ?? "").transaction;
    await expectMined(tx);
    expect(await orderOf(cartId)).toEqual([{ status: "paid", capture_ref: tx }]);

    await expectRepeatAnswersCompleted(body);
    expect(await devnet.balanceOf(payer.address)).toBe(before - price);
  }, 60_000);

  test("the facilitator client reports a reset after sending as an unknown settlement, and only a refused connection as not attempted", async () => {
    const dummy = { x402Version: 2 } as unknown as PaymentPayload;
    proxy.settleMode = "reset";
    let lost: unknown;
    try {
      await createFacilitatorClient({ url: proxy.url }).settle(dummy, {} as never);
    } catch (err) {
      lost = err;
    } finally {
      proxy.settleMode = "pass";
    }
    expect(lost).toBeInstanceOf(ActorError);
    expect((lost as ActorError).details).toMatchObject({ reason: "connection_lost", settlement: "unknown" });

    const closed = Bun.serve({ port: 0, hostname: "127.0.0.1", fetch: () => new Response("") });
    const refusedUrl = `http://127.0.0.1:${closed.port}`;
    closed.stop(true);
    let refused: unknown;
    try {
      await createFacilitatorClient({ url: refusedUrl }).settle(dummy, {} as never);
    } catch (err) {
      refused = err;
    }
    expect((refused as ActorError).details).toMatchObject({ reason: "unreachable", settlement: "not_attempted" });
  });
});

/**
 * The settle deadline and every caller's deadline around it, scaled down together so the cases take seconds, not the
 * 15 s deadline's 12 s and 20 s settles: this file's server gives an ask without a deadline of its own ASK_MS (the
 * actor client's 10 s by default) and these tests set the settle deadline to SETTLE_MS (15 s by default). A settle
 * longer than ASK_MS is answered, so the checkout's ask is not held to the default deadline; one longer than SETTLE_MS
 * gets the documented 503 at the settle deadline, not a caller's timeout.
 */
describe("a slow facilitator (the settle deadline, 4.5 s here)", () => {
  const SETTLE_MS = 4_500;
  const withSettleDeadline = async <T>(fn: () => Promise<T>): Promise<T> => {
    srv.running.services.extras.set(EXTRAS_X402_SETTLE_TIMEOUT_MS, SETTLE_MS);
    try {
      return await fn();
    } finally {
      srv.running.services.extras.delete(EXTRAS_X402_SETTLE_TIMEOUT_MS);
    }
  };

  test("by default the settle deadline is 15 s and the gateway waits for the cart's turn longer (41 s: with the 6 s wait for the transfer's depth)", () => {
    expect(DEFAULT_SETTLE_TIMEOUT_MS).toBe(15_000);
    expect(x402AskTimeoutMs(x402Timeouts(new Map()))).toBe(41_000);
    expect(x402AskTimeoutMs(x402Timeouts(new Map([[EXTRAS_X402_SETTLE_TIMEOUT_MS, SETTLE_MS]])))).toBeGreaterThan(SETTLE_MS);
  });

  test("a settle that takes 3.5 s (past the default ask deadline, within the settle deadline) answers 200 COMPLETED, not a caller timeout", async () => {
    const payer = payerNo(7);
    const cartId = await newCart();
    const payload = await payloadFor(cartId, payer);
    const before = await devnet.balanceOf(payer.address);
    devnet.facilitator.setSettleDelay(ASK_MS + 1_000);
    let r;
    const started = Date.now();
    try {
      r = await withSettleDeadline(() => checkout({ cartId, x402_payload: payload, idempotency_key: crypto.randomUUID() }));
    } finally {
      devnet.facilitator.setSettleDelay(0);
    }
    expect(Date.now() - started).toBeGreaterThanOrEqual(ASK_MS + 1_000);
    expect({ status: r.status, code: r.body.code }).toEqual({ status: 200, code: undefined });
    expect(r.body.data.status).toBe("COMPLETED");
    expect(await devnet.balanceOf(payer.address)).toBe(before - BigInt(payload.accepted.amount));
    expect((await orderOf(cartId))[0]?.status).toBe("paid");
  }, 60_000);

  test("a settle that takes 7 s answers the documented 503 SETTLEMENT_UNKNOWN; the transfer lands, the order ends paid, the buyer charged once", async () => {
    const payer = payerNo(8);
    const cartId = await newCart();
    const payload = await payloadFor(cartId, payer);
    const price = BigInt(payload.accepted.amount);
    const before = await devnet.balanceOf(payer.address);
    const body = { cartId, x402_payload: payload, idempotency_key: crypto.randomUUID() };
    devnet.facilitator.setSettleDelay(7_000);
    let r;
    const started = Date.now();
    try {
      r = await withSettleDeadline(() => checkout(body));
    } finally {
      devnet.facilitator.setSettleDelay(0); // the held settle keeps its 7 s; re-sends are served at once
    }
    expect(Date.now() - started).toBeGreaterThanOrEqual(SETTLE_MS); // the settle deadline, not an earlier caller timeout
    expect(r.status).toBe(503);
    expect(r.body).toMatchObject({ success: false, code: "UPSTREAM_UNAVAILABLE", details: { status: "SETTLEMENT_UNKNOWN" } });
    expect(JSON.stringify(r.body)).not.toContain("cart/");

    await waitFor("the slow transfer", async () => (await devnet.balanceOf(payer.address)) !== before);
    expect(await devnet.balanceOf(payer.address)).toBe(before - price);
    await expectRepeatAnswersCompleted(body);
    expect((await orderOf(cartId))[0]?.status).toBe("paid");
    expect(await intentOf(cartId)).toMatchObject({ state: "captured" });
    await Bun.sleep(1_000); // any queued re-send is refused by the token
    expect(await devnet.balanceOf(payer.address)).toBe(before - price);
  }, 90_000);
});

describe("reconciling an unknown settlement", () => {
  test("a re-send whose connection is refused leaves the settlement unknown; the held transfer lands and the order is paid once", async () => {
    const payer = payerNo(1);
    const cartId = await newCart();
    const payload = await payloadFor(cartId, payer);
    const price = BigInt(payload.accepted.amount);
    const before = await devnet.balanceOf(payer.address);
    const body = { cartId, x402_payload: payload, idempotency_key: crypto.randomUUID() };
    srv.running.services.extras.set(EXTRAS_X402_SETTLE_TIMEOUT_MS, 2_000);
    proxy.settleMode = "hold";
    try {
      const r = await checkout(body);
      expect(r.status).toBe(503);
      expect(r.body).toMatchObject({ code: "UPSTREAM_UNAVAILABLE", details: { status: "SETTLEMENT_UNKNOWN" } });
      await proxy.held();
      const unknownSince = (await intentOf(cartId))!.updated_at.getTime();
      expect((await intentOf(cartId))!.state).toBe("unknown");

      // the session timer reconciles (5 s later): its re-send finds the facilitator refusing connections
      await waitFor("the reconciler's re-send", async () => {
        const i = await intentOf(cartId);
        return i!.updated_at.getTime() > unknownSince && i!.state !== "settling";
      });
      expect(await intentOf(cartId)).toMatchObject({ state: "unknown" });
      expect((await orderOf(cartId))[0]?.status).toBe("pending");
      expect(await devnet.balanceOf(payer.address)).toBe(before);

      // the first send, held all along, reaches the facilitator now: the transfer lands
      proxy.settleMode = "pass";
      expect(JSON.parse(await proxy.release())).toMatchObject({ success: true });
      await proxy.up();
    } finally {
      proxy.settleMode = "pass";
      srv.running.services.extras.delete(EXTRAS_X402_SETTLE_TIMEOUT_MS);
    }
    expect(await devnet.balanceOf(payer.address)).toBe(before - price);

    await expectRepeatAnswersCompleted(body);
    const [order] = await orderOf(cartId);
    expect(order?.status).toBe("paid");
    await expectMined(order?.capture_ref as string);
    expect(await devnet.balanceOf(payer.address)).toBe(before - price);
  }, 90_000);
});
