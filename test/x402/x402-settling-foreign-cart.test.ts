/**
 * Audit B (session 17), B2: while a /settle of a cart is in flight, ANY agent key that names the cart id gets that
 * cart's 503 SETTLEMENT_UNKNOWN answer, with the owner's checkout_session_id, instead of 404 CART_NOT_FOUND. The
 * early answer (`refuseWhileSettling`, gateway/bridge/x402-checkout.ts, review R4-2) reads x402_intents by cart id
 * before the cart actor (which owns the ownership check) is asked. Spec: 404 cart not found "including owned by
 * another tenant"; docs/access.md: carts are visible only to the owning key.
 */
import { afterAll, beforeAll, expect, test } from "bun:test";
import { x402Client } from "@x402/core/client";
import type { PaymentRequired } from "@x402/core/types";
import { toClientEvmSigner } from "@x402/evm";
import { registerExactEvmScheme } from "@x402/evm/exact/client";
import type { Abi, Address } from "viem";
import { privateKeyToAccount } from "viem/accounts";
import { decodePaymentRequired } from "../../actors/payments/x402-challenge.ts";
import type { DevAccount } from "../../infra/x402/chain.ts";
import { startDevnet, type Devnet } from "../../infra/x402/devnet.ts";
import { devnetPublicClient } from "../../infra/x402/token.ts";
import { ALL_SCOPES, createKey, type TestKey } from "../helpers/agents.ts";
import { startServer, type TestServer } from "../helpers/server.ts";

const BOARD = "5befd987-79cd-540c-8a5d-2ba5a30aed41"; // DS-0011, demo-store, untracked stock

let devnet: Devnet;
let srv: TestServer;
let owner: TestKey;
let stranger: TestKey;
let x402Config: Record<string, string>;

beforeAll(async () => {
  devnet = await startDevnet();
  srv = await startServer({ seed: true, config: { X402_FACILITATOR_ALLOWLIST: devnet.facilitator.url, X402_CAPTURE_CONFIRMATIONS: 1 } });
  owner = await createKey(srv, { scopes: ALL_SCOPES, name: "owner" });
  stranger = await createKey(srv, { scopes: ALL_SCOPES, name: "stranger" });
  const merchant = (devnet.chain.accounts[5] as DevAccount).address;
  await srv.db.sql`UPDATE store_x402_config SET pay_to = ${merchant}, network = ${devnet.network}, asset_address = ${devnet.token.address},
      facilitator_url = ${devnet.facilitator.url}, rpc_url = ${devnet.chain.rpcUrl} WHERE store_slug = 'demo-store'`;
  x402Config = { merchant_wallet_address: merchant, network: devnet.network, facilitator_url: devnet.facilitator.url, asset_address: devnet.token.address };
}, 120_000);
afterAll(async () => {
  await srv?.stop();
  await devnet?.stop();
});

function officialClient(account: DevAccount) {
  const client = new x402Client();
  const reader = devnetPublicClient(devnet.chain.rpcUrl, devnet.chain.chainId);
  const signer = toClientEvmSigner(privateKeyToAccount(account.privateKey), {
    readContract: (args) => reader.readContract({ address: args.address as Address, abi: args.abi as Abi, functionName: args.functionName, args: args.args }),
  });
  registerExactEvmScheme(client, { signer, networks: [devnet.network] });
  client.setSpendControls({ allowedAssets: [{ network: devnet.network, asset: devnet.token.address, maxAmountPerPayment: "1000000000" }] });
  return client;
}

const checkout = (body: Record<string, unknown>, k: TestKey) =>
  srv.json("/api/v1/agent/checkout", { method: "POST", headers: k.headers, body: { payment_rail: "x402", x402_config: x402Config, ...body } });

test("another key naming a cart whose settlement is in flight gets 404, not the owner's 503 with its session id", async () => {
  const cart = await srv.json("/api/v1/agent/cart", { method: "POST", headers: owner.headers, body: { items: [{ product_id: BOARD, quantity: 1 }] } });
  expect(cart.status).toBe(201);
  const cartId = cart.body.data.id as string;
  // Control: with nothing in flight, the stranger gets the spec's 404.
  const before = await checkout({ cartId }, stranger);
  expect(before.status).toBe(404);
  expect(before.body).toMatchObject({ success: false, code: "CART_NOT_FOUND" });

  const first = await checkout({ cartId }, owner);
  expect(first.status).toBe(402);
  const challenge: PaymentRequired = decodePaymentRequired(first.headers.get("PAYMENT-REQUIRED") ?? "");
  const payload = await officialClient(devnet.chain.accounts[1] as DevAccount).createPaymentPayload(challenge);
  devnet.facilitator.setSettleDelay(4_000);
  const paying = checkout({ cartId, x402_payload: payload, idempotency_key: crypto.randomUUID() }, owner);
  // wait until the intent is settling
  for (let i = 0; i < 100; i++) {
    const [row] = await srv.db.sql`SELECT 1 FROM x402_intents WHERE cart_id = ${cartId} AND state = 'settling'`;
    if (row) break;
    await Bun.sleep(50);
  }
  const probe = await checkout({ cartId }, stranger);
  devnet.facilitator.setSettleDelay(0);
  const paid = await paying;
  expect(paid.status).toBe(200);
  // fails now: 503 UPSTREAM_UNAVAILABLE with details {status: SETTLEMENT_UNKNOWN, checkout_session_id, cart_id}
  expect(probe.body.details?.checkout_session_id).toBeUndefined();
  expect(probe.status).toBe(404);
  expect(probe.body).toMatchObject({ success: false, code: "CART_NOT_FOUND" });
}, 60_000);
