/**
 * Review RAP MED-1: a merchant's `refund` (release) of an escalated x402 order is refused once the store's chain shows
 * the payment's transfer. The escalation came from an unreadable rpc_url; the held transfer then landed, the merchant
 * fixed the rpc_url and asked to release before the reminder looked again. Released, the order was canceled and the
 * cart reopened while the merchant held the money, so the agent paid a second time. Now: 409 `chain_shows_transfer`,
 * the order stays, the cart stays closed, and `accept` pays it once.
 */
import { afterAll, beforeAll, expect, test } from "bun:test";
import { EXTRAS_X402_SETTLE_TIMEOUT_MS, UNREADABLE_ESCALATION_SECONDS } from "../../actors/payments/x402-rail.ts";
import { login } from "../helpers/agents.ts";
import { BOARD, startEscalationEnv, validBeforeOf, type EscalationEnv } from "./escalation-helpers.ts";
import { payerOf, waitFor, x402Signer } from "./helpers.ts";

let e: EscalationEnv;
let broken: ReturnType<typeof Bun.serve>;
beforeAll(async () => {
  e = await startEscalationEnv([3]);
  broken = Bun.serve({ port: 0, hostname: "127.0.0.1", fetch: () => new Response("down", { status: 503 }) });
}, 120_000);
afterAll(async () => {
  broken?.stop(true);
  await e?.env.stop();
});

test("a release of an escalated x402 order is refused once the chain shows its transfer; accept pays it once", async () => {
  await e.env.srv.db.sql`UPDATE store_x402_config SET rpc_url = ${`http://127.0.0.1:${broken.port}/`} WHERE store_slug = 'demo-store'`;
  const cartId = await e.env.newCart([{ product_id: BOARD, quantity: 1 }]);
  const payer = payerOf(e.env.devnet, 3);
  const payload = await x402Signer(e.env.devnet, payer).createPaymentPayload(await e.env.challengeOf(cartId));
  const body = { cartId, x402_payload: payload, idempotency_key: crypto.randomUUID() };
  e.env.srv.running.services.extras.set(EXTRAS_X402_SETTLE_TIMEOUT_MS, 2_000);
  e.env.proxy.settleMode = "hold";
  expect((await e.env.checkout(body)).status).toBe(503);
  await e.env.proxy.held();
  e.setOffsetMs((validBeforeOf(payload) + UNREADABLE_ESCALATION_SECONDS + 5) * 1000 - Date.now());
  await e.reminderDue(cartId);
  await waitFor("the escalation", async () => (await e.orderOf(cartId)).reconciliation != null, 20_000);
  const order = await e.orderOf(cartId);
  // the held transfer lands, deep; the merchant fixes its rpc_url and decides before the reminder looks again
  e.env.proxy.settleMode = "pass";
  await e.env.proxy.release();
  await e.env.proxy.up();
  for (let i = 0; i < 4; i++) await e.anvil("evm_mine");
  await e.env.srv.db.sql`UPDATE store_x402_config SET rpc_url = ${e.env.devnet.chain.rpcUrl} WHERE store_slug = 'demo-store'`;
  await e.env.srv.db.sql`UPDATE actor_reminders SET due_at = now() + interval '1 hour' WHERE kind = 'cart' AND id = ${cartId}`;
  const owner = { authorization: `Bearer ${await login(e.env.srv)}` };
  const reconcile = (action: string) => e.env.srv.json(`/api/v1/merchant/stores/demo-store/orders/${order.id}/reconcile`, { method: "POST", headers: owner, body: { action } });
  const refused = await reconcile("refund");
  expect(refused.status).toBe(409);
  expect(refused.body).toMatchObject({ success: false, code: "conflict", details: { reason: "chain_shows_transfer", next: "accept" } });
  expect((await e.orderOf(cartId)).status).toBe("pending");
  e.setOffsetMs(0);
  // the cart did not reopen: another payment of it is not taken
  const again = await e.env.checkout({ ...body, idempotency_key: crypto.randomUUID() });
  expect(again.status).not.toBe(200);
  const accepted = await reconcile("accept");
  expect(accepted.status).toBe(200);
  expect((await e.orderOf(cartId)).status).toBe("paid");
}, 120_000);
