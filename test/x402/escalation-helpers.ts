/**
 * Shared by the escalation tests (escalation-safety, escalation-stalled; review RG MED-1..3): an x402 env with a movable
 * service clock, depth 3 and no in-turn wait, plus the reads and moves those tests make.
 */
import { expect } from "bun:test";
import type { PaymentPayload } from "@x402/core/types";
import { EXTRAS_X402_CONFIRM_WAIT_MS } from "../../actors/payments/x402-rail.ts";
import { payerOf, startX402Env, x402Signer, type X402Env } from "./helpers.ts";

export const BOARD = "5befd987-79cd-540c-8a5d-2ba5a30aed41"; // DS-0011, demo-store, untracked stock

export interface EscalationEnv {
  env: X402Env;
  /** Moves the service clock: our now is Date.now() + offsetMs. */
  setOffsetMs(ms: number): void;
  anvil(method: string, params?: unknown[]): Promise<unknown>;
  chainNow(): Promise<number>;
  orderOf(cartId: string): Promise<{ id: string; status: string; reconciliation: string | null }>;
  intentOf(cartId: string): Promise<{ state?: string; error_reason?: string | null }>;
  reminderDue(cartId: string): Promise<unknown>;
  /** A payment whose transfer is 1 deep: 503 SETTLEMENT_UNKNOWN. */
  payPending(payer: number): Promise<{ cartId: string; payload: PaymentPayload; body: Record<string, unknown> }>;
}

export async function startEscalationEnv(fund: number[]): Promise<EscalationEnv> {
  let offsetMs = 0;
  const env = await startX402Env({ rpcUrl: "devnet", fund, config: { X402_CAPTURE_CONFIRMATIONS: 3 }, boot: { clock: { now: () => Date.now() + offsetMs } } });
  env.srv.running.services.extras.set(EXTRAS_X402_CONFIRM_WAIT_MS, 0);
  const anvil = async (method: string, params: unknown[] = []) => {
    const r = await fetch(env.devnet.chain.rpcUrl, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify({ jsonrpc: "2.0", id: 1, method, params }) });
    return ((await r.json()) as { result: unknown }).result;
  };
  return {
    env,
    setOffsetMs: (ms) => void (offsetMs = ms),
    anvil,
    chainNow: async () => Number(((await anvil("eth_getBlockByNumber", ["latest", false])) as { timestamp: string }).timestamp),
    async orderOf(cartId) {
      const [o] = await env.srv.db.sql<{ id: string; status: string; reconciliation: string | null }[]>`SELECT id, status, reconciliation FROM orders WHERE cart_id = ${cartId}`;
      return o!;
    },
    async intentOf(cartId) {
      const [i] = await env.srv.db.sql<{ state: string; error_reason: string | null }[]>`SELECT state, error_reason FROM x402_intents WHERE cart_id = ${cartId}`;
      return { ...i };
    },
    reminderDue: (cartId) => env.srv.db.sql`UPDATE actor_reminders SET due_at = now() WHERE kind = 'cart' AND id = ${cartId}`,
    async payPending(payer) {
      const cartId = await env.newCart([{ product_id: BOARD, quantity: 1 }]);
      const payload = await x402Signer(env.devnet, payerOf(env.devnet, payer)).createPaymentPayload(await env.challengeOf(cartId));
      const body = { cartId, x402_payload: payload, idempotency_key: crypto.randomUUID() };
      const first = await env.checkout(body);
      expect({ status: first.status, detail: first.body.details?.status }).toEqual({ status: 503, detail: "SETTLEMENT_UNKNOWN" });
      return { cartId, payload, body };
    },
  };
}

export const validBeforeOf = (p: PaymentPayload): number => Number((p.payload as { authorization: { validBefore: string } }).authorization.validBefore);
