/**
 * Review Y-2 (session 17, 8ba2e97): the /settle re-vetted the facilitator with the ACTOR HOST's own
 * X402_FACILITATOR_ALLOWLIST, while /verify ran on the gateway with the gateway's. A deployment with a self-hosted
 * facilitator on its own network, allowlisted on the gateways only, verified every payment and then refused every
 * settle, and the agent was told `facilitator_unreachable` (the facilitator was reachable: refused by policy).
 * Now the gateway's decision at /verify is recorded on the authorization and the intent (migration 0102,
 * `facilitator_allow_private`) and the settle honours it (the SSRF guard still runs); a settle the guard refuses is
 * failed with its own reason, `facilitator_not_public`, nothing sent.
 *
 * The devnet facilitator (behind the proxy) is on 127.0.0.1, allowlisted on this server, ALLOW_PRIVATE_URLS false; the
 * x402 rail is replaced by one whose policy is empty: an actor host started without the allowlist.
 */
import { afterAll, beforeAll, expect, test } from "bun:test";
import { registerRail } from "../../actors/payments/card-rails.ts";
import { X402Rail, x402Timeouts } from "../../actors/payments/x402-rail.ts";
import { payerOf, startX402Env, x402Signer, type X402Env } from "./helpers.ts";

const BOARD = "5befd987-79cd-540c-8a5d-2ba5a30aed41"; // DS-0011, demo-store, untracked stock

let env: X402Env;

beforeAll(async () => {
  env = await startX402Env({ rpcUrl: null, fund: [3, 4], config: { ALLOW_PRIVATE_URLS: false } });
  const services = env.srv.running.services;
  // the actor host's configuration: no X402_FACILITATOR_ALLOWLIST, no ALLOW_PRIVATE_URLS
  registerRail(
    services.sql,
    "x402",
    new X402Rail(services.sql, () => x402Timeouts(services.extras), undefined, () => services.clock.now(), 1n, () => ({ allowlist: "", allowPrivate: false })),
  );
}, 120_000);

afterAll(async () => {
  await env?.stop();
});

async function pay(payerIndex: number) {
  const cartId = await env.newCart([{ product_id: BOARD, quantity: 1 }]);
  const payload = await x402Signer(env.devnet, payerOf(env.devnet, payerIndex)).createPaymentPayload(await env.challengeOf(cartId));
  const r = await env.checkout({ cartId, x402_payload: payload, idempotency_key: crypto.randomUUID() });
  const [intent] = await env.srv.db.sql<{ state: string; error_reason: string | null; facilitator_allow_private: boolean }[]>`
    SELECT state, error_reason, (to_jsonb(i) -> 'facilitator_allow_private')::boolean AS facilitator_allow_private FROM x402_intents i WHERE cart_id = ${cartId}`;
  return { r, intent };
}

test("the settle honours the gateway's /verify decision: an allowlisted private facilitator settles on an actor host without the allowlist (200 COMPLETED)", async () => {
  const { r, intent } = await pay(3);
  expect({ status: r.status, code: r.body.code, reason: r.body.details?.reason }).toEqual({ status: 200, code: undefined, reason: undefined });
  expect(r.body.data.status).toBe("COMPLETED");
  expect(intent).toMatchObject({ state: "captured", facilitator_allow_private: true });
}, 60_000);

test("a settle the SSRF guard refuses is failed as facilitator_not_public (it was facilitator_unreachable), nothing sent", async () => {
  // an intent whose recorded decision is public-only (an intent from before migration 0102, or a public name that
  // now resolves to a private address): the actor host's empty policy refuses the loopback facilitator
  await env.srv.db.sql.unsafe(`
    CREATE FUNCTION f2_public_only() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN NEW.facilitator_allow_private := false; RETURN NEW; END $$;
    CREATE TRIGGER f2_public_only BEFORE INSERT ON x402_intents FOR EACH ROW EXECUTE FUNCTION f2_public_only();`);
  const settlesBefore = env.proxy.settles;
  try {
    const { r, intent } = await pay(4);
    // 402 with a fresh challenge (the payer may pay again), the leg's reason and the x402 error naming the refusal
    expect(r.status).toBe(402);
    expect(r.body).toMatchObject({ code: "payment_required", details: { code_detail: "PAYMENT_FAILED_ROLLED_BACK", results: [{ merchant_slug: "demo-store", status: "failed", reason: "facilitator_not_public" }], x402: { error: "facilitator_not_public" } } });
    expect(intent).toMatchObject({ state: "failed", error_reason: "facilitator_not_public", facilitator_allow_private: false });
    expect(env.proxy.settles).toBe(settlesBefore);
  } finally {
    await env.srv.db.sql.unsafe(`DROP TRIGGER f2_public_only ON x402_intents; DROP FUNCTION f2_public_only();`);
  }
}, 60_000);
