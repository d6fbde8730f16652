/**
 * x402 checkout end to end: the real server, the local chain (anvil + TestUSDC) and the local facilitator. The
 * demo store's server-side x402 configuration is pointed at the devnet; payments are made with the OFFICIAL
 * client (`@x402/fetch` wrapFetchWithPayment + `@x402/evm` exact scheme) and with the agent's custodial wallet.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { x402Client } from "@x402/core/client";
import type { PaymentPayload, PaymentRequired } from "@x402/core/types";
import { toClientEvmSigner } from "@x402/evm";
import { registerExactEvmScheme } from "@x402/evm/exact/client";
import { decodePaymentResponseHeader, wrapFetchWithPayment } from "@x402/fetch";
import type { Abi, Address } from "viem";
import { privateKeyToAccount } from "viem/accounts";
import { decodePaymentRequired, encodePaymentSignature } from "../../actors/payments/x402-challenge.ts";
import { EXTRAS_X402_SETTLE_TIMEOUT_MS } from "../../actors/payments/x402-rail.ts";
import type { DevAccount } from "../../infra/x402/chain.ts";
import { startDevnet, type Devnet } from "../../infra/x402/devnet.ts";
import { devnetPublicClient } from "../../infra/x402/token.ts";
import { ALL_SCOPES, createKey, type TestKey } from "../helpers/agents.ts";
import { startServer, type TestServer } from "../helpers/server.ts";

const BOARD = "5befd987-79cd-540c-8a5d-2ba5a30aed41"; // DS-0011, demo-store, untracked stock
const GREEN = "4ef5cf23-f828-5e3e-bd0b-833653bc4c5a"; // GL-0001, greenleaf-living

let devnet: Devnet;
let srv: TestServer;
let key: TestKey;
let merchant: Address; // demo-store's configured wallet (anvil #5)
let greenWallet: Address; // greenleaf-living's (anvil #6)
let x402Config: Record<string, string>;

beforeAll(async () => {
  devnet = await startDevnet();
  // Anvil mines a block per transaction and none in between: a transfer counts once mined (capture-confirmations.test.ts
  // tests the depth).
  srv = await startServer({ seed: true, config: { X402_FACILITATOR_ALLOWLIST: devnet.facilitator.url, X402_CAPTURE_CONFIRMATIONS: 1 } });
  key = await createKey(srv, { scopes: ALL_SCOPES });
  merchant = acct(5);
  greenWallet = acct(6);
  await srv.db.sql`UPDATE store_x402_config SET pay_to = ${merchant}, network = ${devnet.network}, asset_address = ${devnet.token.address},
      facilitator_url = ${devnet.facilitator.url}, rpc_url = ${devnet.chain.rpcUrl} WHERE store_slug = 'demo-store'`;
  x402Config = { merchant_wallet_address: merchant, network: devnet.network, facilitator_url: devnet.facilitator.url, asset_address: devnet.token.address };
}, 120_000);

afterAll(async () => {
  await srv?.stop();
  await devnet?.stop();
});

function acct(i: number): Address {
  return (devnet.chain.accounts[i] as DevAccount).address;
}

function officialClient(account: DevAccount) {
  const client = new x402Client();
  const reader = devnetPublicClient(devnet.chain.rpcUrl, devnet.chain.chainId);
  const signer = toClientEvmSigner(privateKeyToAccount(account.privateKey), {
    readContract: (args) => reader.readContract({ address: args.address, abi: args.abi as Abi, functionName: args.functionName, args: args.args }),
  });
  registerExactEvmScheme(client, { signer, networks: [devnet.network] });
  client.setSpendControls({ allowedAssets: [{ network: devnet.network, asset: devnet.token.address, maxAmountPerPayment: "1000000000" }] });
  return client;
}

async function newCart(items: { product_id: string; quantity: number }[] = [{ product_id: BOARD, quantity: 1 }], k: TestKey = key): Promise<string> {
  const r = await srv.json("/api/v1/agent/cart", { method: "POST", headers: k.headers, body: { items } });
  expect(r.status).toBe(201);
  return r.body.data.id;
}

const checkout = (body: Record<string, unknown>, k: TestKey = key) =>
  srv.json("/api/v1/agent/checkout", { method: "POST", headers: k.headers, body: { payment_rail: "x402", x402_config: x402Config, ...body } });

async function challengeOf(cartId: string): Promise<PaymentRequired> {
  const r = await checkout({ cartId });
  expect(r.status).toBe(402);
  return decodePaymentRequired(r.headers.get("PAYMENT-REQUIRED") ?? "");
}

async function payloadFor(cartId: string, account: DevAccount, tweak?: (c: PaymentRequired) => void): Promise<PaymentPayload> {
  const challenge = await challengeOf(cartId);
  tweak?.(challenge);
  return officialClient(account).createPaymentPayload(challenge);
}

const ordersOf = async (cartId: string) =>
  (await srv.db.sql<{ id: string; status: string }[]>`SELECT id, status FROM orders WHERE cart_id = ${cartId}`).map((o) => ({ ...o }));

describe("the 402 challenge", () => {
  test("an x402 checkout without a payment answers 402 with a v2 PAYMENT-REQUIRED challenge for the cart total", async () => {
    const cartId = await newCart();
    const r = await checkout({ cartId });
    expect(r.status).toBe(402);
    expect(r.headers.get("cache-control")).toBe("no-store");
    expect(r.body).toMatchObject({ success: false, code: "payment_required" });
    const challenge = decodePaymentRequired(r.headers.get("PAYMENT-REQUIRED") ?? "");
    expect(challenge.x402Version).toBe(2);
    expect(challenge.resource.url).toBe(`${srv.url}/api/v1/agent/checkout`);
    expect(challenge.accepts).toHaveLength(1);
    const leg = r.body.details.legs[0];
    expect(challenge.accepts[0]).toEqual({
      scheme: "exact",
      network: "eip155:84532",
      asset: devnet.token.address,
      amount: String(BigInt(leg.amount_minor) * 10_000n), // cents → 6-decimal USDC units
      payTo: merchant,
      maxTimeoutSeconds: 300,
      extra: { merchantSlug: "demo-store", name: "USD Coin", version: "2" },
    });
    expect(leg).toMatchObject({ merchant_slug: "demo-store", currency: "USD" });
    expect(await ordersOf(cartId)).toEqual([]);
  });

  test("x402_config is required: without it the checkout is 400 naming the field", async () => {
    const cartId = await newCart();
    const r = await srv.json("/api/v1/agent/checkout", { method: "POST", headers: key.headers, body: { cartId, payment_rail: "x402" } });
    expect(r.status).toBe(400);
    expect(r.body).toMatchObject({ success: false, code: "MISSING_REQUIRED_ARGUMENT", details: { field: "x402_config" } });
  });

  test("an x402_payload that is an empty array or object is 400 INVALID_ARGUMENT naming the field, and writes no order", async () => {
    const cartId = await newCart();
    for (const empty of [[], {}]) {
      const r = await checkout({ cartId, x402_payload: empty });
      expect(r.status).toBe(400);
      expect(r.body).toMatchObject({ success: false, code: "INVALID_ARGUMENT", details: { field: "x402_payload" } });
    }
    expect(await ordersOf(cartId)).toEqual([]);
  });

  test("a payload keyed by a merchant the cart does not pay is 400 naming that key, and no money moves", async () => {
    const payer = devnet.chain.accounts[3] as DevAccount;
    const cartId = await newCart();
    const payload = await payloadFor(cartId, payer);
    const before = await devnet.balanceOf(payer.address);
    const r = await checkout({ cartId, x402_payload: { "summit-sports-co": payload } });
    expect(r.status).toBe(400);
    expect(r.body).toMatchObject({ code: "INVALID_ARGUMENT", details: { field: "x402_payload.summit-sports-co", merchant_slug: "summit-sports-co", cart_merchants: ["demo-store"] } });
    expect(await devnet.balanceOf(payer.address)).toBe(before);
    expect(await ordersOf(cartId)).toEqual([]);
  });

  test("the merchant's configured wallet overrides a different merchant_wallet_address when enforcement is off", async () => {
    const cartId = await newCart();
    const r = await checkout({ cartId, x402_config: { ...x402Config, merchant_wallet_address: acct(7) } });
    expect(r.status).toBe(402);
    expect(decodePaymentRequired(r.headers.get("PAYMENT-REQUIRED") ?? "").accepts[0]!.payTo).toBe(merchant);
  });

  test("a mismatched merchant_wallet_address is refused with 400 when SPEC005_X402_CONFIG_ENFORCED is true", async () => {
    const config = srv.running.services.config;
    config.SPEC005_X402_CONFIG_ENFORCED = true;
    try {
      const cartId = await newCart();
      const r = await checkout({ cartId, x402_config: { ...x402Config, merchant_wallet_address: acct(7) } });
      expect(r.status).toBe(400);
      expect(r.body).toMatchObject({ code: "INVALID_ARGUMENT", details: { field: "x402_config.merchant_wallet_address", reason: "merchant_wallet_mismatch" } });
      const same = await checkout({ cartId });
      expect(same.status).toBe(402);
    } finally {
      config.SPEC005_X402_CONFIG_ENFORCED = false;
    }
  });

  test("a facilitator URL outside the allowlist is refused and never called", async () => {
    let hits = 0;
    const trap = Bun.serve({ hostname: "127.0.0.1", port: 0, fetch: () => (hits++, new Response("{}")) });
    await srv.db.sql`UPDATE store_x402_config SET facilitator_url = NULL WHERE store_slug = 'demo-store'`;
    try {
      const cartId = await newCart();
      const r = await checkout({ cartId, x402_config: { ...x402Config, facilitator_url: `http://127.0.0.1:${trap.port}` } });
      expect(r.status).toBe(400);
      expect(r.body).toMatchObject({ code: "INVALID_ARGUMENT", details: { field: "x402_config.facilitator_url", reason: "facilitator_not_allowed" } });
      // the allowlisted one is accepted from the caller when the merchant configures none
      expect((await checkout({ cartId })).status).toBe(402);
      expect(hits).toBe(0);
    } finally {
      await srv.db.sql`UPDATE store_x402_config SET facilitator_url = ${devnet.facilitator.url} WHERE store_slug = 'demo-store'`;
      trap.stop(true);
    }
  });

  test("a store without a server-side x402 wallet cannot be paid over x402, whatever the caller names", async () => {
    await srv.db.sql`UPDATE stores SET payment_methods = '{card,x402}' WHERE slug = 'greenleaf-living'`;
    const cartId = await newCart([{ product_id: GREEN, quantity: 1 }]);
    const r = await checkout({ cartId });
    expect(r.status).toBe(400);
    expect(r.body).toMatchObject({ code: "PAYMENT_METHOD_NOT_CONFIGURED", details: { merchant_slug: "greenleaf-living", reason: "x402_not_configured" } });
  });
});

describe("paying", () => {
  test("the official x402 client pays through the local facilitator: the token balance moves and the order completes", async () => {
    const payer = devnet.chain.accounts[1] as DevAccount;
    const cartId = await newCart();
    const payerBefore = await devnet.balanceOf(payer.address);
    const merchantBefore = await devnet.balanceOf(merchant);
    const pay = wrapFetchWithPayment(fetch, officialClient(payer));
    const res = await pay(`${srv.url}/api/v1/agent/checkout`, {
      method: "POST",
      headers: { ...key.headers, "content-type": "application/json" },
      body: JSON.stringify({ cartId, payment_rail: "x402", x402_config: x402Config, idempotency_key: crypto.randomUUID() }),
    });
    const body = (await res.json()) as { success: boolean; data: { status: string; order_id: string; total_minor: number; payment_rail: string } };
    expect(res.status).toBe(200);
    expect(body.success).toBe(true);
    expect(body.data).toMatchObject({ status: "COMPLETED", payment_rail: "x402" });
    const receipt = decodePaymentResponseHeader(res.headers.get("PAYMENT-RESPONSE") ?? "");
    expect(receipt).toMatchObject({ success: true, network: devnet.network, payer: payer.address });
    expect(receipt.transaction).toMatch(/^0x[0-9a-f]{64}$/);

    const price = BigInt(body.data.total_minor) * 10_000n;
    expect(await devnet.balanceOf(payer.address)).toBe(payerBefore - price);
    expect(await devnet.balanceOf(merchant)).toBe(merchantBefore + price);
    const tx = await devnetPublicClient(devnet.chain.rpcUrl, devnet.chain.chainId).getTransactionReceipt({ hash: receipt.transaction as `0x${string}` });
    expect(tx.status).toBe("success");

    const order = await srv.json(`/api/v1/agent/orders/${body.data.order_id}`, { headers: key.headers });
    expect(order.status).toBe(200);
    expect(order.body.data).toMatchObject({ status: "paid", merchant_slug: "demo-store" });
  });

  test("an x402_payload in the body pays too, and the same payload replayed on another cart is refused (nonce_reused) with no money moved", async () => {
    const payer = devnet.chain.accounts[2] as DevAccount;
    const first = await newCart();
    const payload = await payloadFor(first, payer);
    const paid = await checkout({ cartId: first, x402_payload: payload });
    expect(paid.status).toBe(200);
    expect(paid.body.data.status).toBe("COMPLETED");

    const second = await newCart();
    const before = await devnet.balanceOf(payer.address);
    const replay = await checkout({ cartId: second, x402_payload: payload });
    expect(replay.status).toBe(402);
    expect(replay.body).toMatchObject({ code: "payment_required", details: { reason: "nonce_reused", merchant_slug: "demo-store" } });
    expect(decodePaymentRequired(replay.headers.get("PAYMENT-REQUIRED") ?? "").error).toBe("nonce_reused");
    // replayed through the header as well
    const viaHeader = await srv.json("/api/v1/agent/checkout", {
      method: "POST",
      headers: { ...key.headers, "PAYMENT-SIGNATURE": encodePaymentSignature(payload) },
      body: { cartId: second, payment_rail: "x402", x402_config: x402Config },
    });
    expect(viaHeader.status).toBe(402);
    expect(viaHeader.body.details.reason).toBe("nonce_reused");
    expect(await devnet.balanceOf(payer.address)).toBe(before);
    expect(await ordersOf(second)).toEqual([]);
  });

  test("one payload sent to two carts at the same time pays exactly one of them", async () => {
    const payer = devnet.chain.accounts[2] as DevAccount;
    const a = await newCart();
    const b = await newCart();
    const payload = await payloadFor(a, payer);
    const before = await devnet.balanceOf(payer.address);
    const [ra, rb] = await Promise.all([checkout({ cartId: a, x402_payload: payload }), checkout({ cartId: b, x402_payload: payload })]);
    const statuses = [ra.status, rb.status].sort();
    expect(statuses[0]).toBe(200);
    expect(statuses[1]).not.toBe(200);
    const price = BigInt((ra.status === 200 ? ra : rb).body.data.total_minor) * 10_000n;
    expect(await devnet.balanceOf(payer.address)).toBe(before - price);
  });

  test("a tampered signature is refused before the facilitator: 402 invalid_signature, nothing moves", async () => {
    const payer = devnet.chain.accounts[2] as DevAccount;
    const cartId = await newCart();
    const payload = await payloadFor(cartId, payer);
    const inner = payload.payload as { signature: string; authorization: Record<string, string> };
    const sig = inner.signature;
    const flipped = `${sig.slice(0, 10)}${sig[10] === "a" ? "b" : "a"}${sig.slice(11)}`;
    const before = await devnet.balanceOf(payer.address);
    const r = await checkout({ cartId, x402_payload: { ...payload, payload: { ...inner, signature: flipped } } });
    expect(r.status).toBe(402);
    expect(r.body.details.reason).toBe("invalid_signature");
    expect(await devnet.balanceOf(payer.address)).toBe(before);
    expect(await ordersOf(cartId)).toEqual([]);
  });

  test("a payment for a different amount is refused: 402 amount_mismatch", async () => {
    const cartId = await newCart();
    const payload = await payloadFor(cartId, devnet.chain.accounts[2] as DevAccount, (c) => {
      c.accepts[0]!.amount = String(BigInt(c.accepts[0]!.amount) - 1n);
    });
    const r = await checkout({ cartId, x402_payload: payload });
    expect(r.status).toBe(402);
    expect(r.body.details.reason).toBe("amount_mismatch");
    expect(await ordersOf(cartId)).toEqual([]);
  });

  test("a payment to another payTo is refused: 402 payto_mismatch", async () => {
    const cartId = await newCart();
    const payload = await payloadFor(cartId, devnet.chain.accounts[2] as DevAccount, (c) => {
      c.accepts[0]!.payTo = acct(7);
    });
    const r = await checkout({ cartId, x402_payload: payload });
    expect(r.status).toBe(402);
    expect(r.body.details.reason).toBe("payto_mismatch");
  });

  test("with the facilitator down the checkout answers a retryable 503 and writes no order; the same payload pays once it is back", async () => {
    const payer = devnet.chain.accounts[2] as DevAccount;
    const cartId = await newCart();
    const payload = await payloadFor(cartId, payer);
    const idempotency_key = crypto.randomUUID();
    const before = await devnet.balanceOf(payer.address);
    await devnet.facilitator.down();
    try {
      const r = await checkout({ cartId, x402_payload: payload, idempotency_key });
      expect(r.status).toBe(503);
      expect(r.body).toMatchObject({ success: false, code: "UPSTREAM_UNAVAILABLE", details: { reason: "unreachable" } });
      expect(await ordersOf(cartId)).toEqual([]);
      expect(await devnet.balanceOf(payer.address)).toBe(before);
    } finally {
      await devnet.facilitator.up();
    }
    const again = await checkout({ cartId, x402_payload: payload, idempotency_key });
    expect(again.status).toBe(200);
    expect(again.body.data.status).toBe("COMPLETED");
    expect(await devnet.balanceOf(payer.address)).toBe(before - BigInt(again.body.data.total_minor) * 10_000n);
  });

  test("the agent's custodial wallet pays when asked (pay_with_wallet), on the facilitator's v1 wire format too", async () => {
    const agent = await createKey(srv, { scopes: ALL_SCOPES });
    const provisioned = await srv.json("/api/v1/agent/wallet/provision", { method: "POST", headers: agent.headers, body: {} });
    expect(provisioned.status).toBe(201);
    const wallet = provisioned.body.data.address as Address;
    await devnet.fund(wallet, 500_000_000n);

    const cartId = await newCart(undefined, agent);
    const r = await checkout({ cartId, pay_with_wallet: true }, agent);
    expect(r.status).toBe(200);
    expect(r.body.data.status).toBe("COMPLETED");
    const price = BigInt(r.body.data.total_minor) * 10_000n;
    expect(await devnet.balanceOf(wallet)).toBe(500_000_000n - price);
    expect(decodePaymentResponseHeader(r.headers.get("PAYMENT-RESPONSE") ?? "").payer).toBe(wallet);

    await srv.db.sql`UPDATE store_x402_config SET facilitator_version = 'v1' WHERE store_slug = 'demo-store'`;
    try {
      const v1Cart = await newCart(undefined, agent);
      const v1 = await checkout({ cartId: v1Cart, pay_with_wallet: true }, agent);
      expect(v1.status).toBe(200);
      expect(await devnet.balanceOf(wallet)).toBe(500_000_000n - price - BigInt(v1.body.data.total_minor) * 10_000n);
    } finally {
      await srv.db.sql`UPDATE store_x402_config SET facilitator_version = 'v2' WHERE store_slug = 'demo-store'`;
    }
  });

  test("pay_with_wallet without a provisioned wallet is 404", async () => {
    const agent = await createKey(srv, { scopes: ALL_SCOPES });
    const cartId = await newCart(undefined, agent);
    const r = await checkout({ cartId, pay_with_wallet: true }, agent);
    expect(r.status).toBe(404);
    expect(r.body.code).toBe("not_found");
  });
});

describe("per-store settlement", () => {
  test("a multi-store cart where one store settles and the other cannot answers 207 with per-store results; the same key then pays only the rest", async () => {
    await srv.db.sql`UPDATE stores SET payment_methods = '{card,x402}' WHERE slug = 'greenleaf-living'`;
    await srv.db.sql`INSERT INTO store_x402_config (store_slug, pay_to, network, asset_address, facilitator_url, rpc_url)
      VALUES ('greenleaf-living', ${greenWallet}, ${devnet.network}, ${devnet.token.address}, ${devnet.facilitator.url}, ${devnet.chain.rpcUrl})
      ON CONFLICT (store_slug) DO UPDATE SET pay_to = EXCLUDED.pay_to`;
    const agent = await createKey(srv, { scopes: ALL_SCOPES });
    const wallet = (await srv.json("/api/v1/agent/wallet/provision", { method: "POST", headers: agent.headers, body: {} })).body.data.address as Address;
    const cartId = await newCart([{ product_id: BOARD, quantity: 1 }, { product_id: GREEN, quantity: 1 }], agent);
    const due = await checkout({ cartId }, agent);
    expect(due.status).toBe(402);
    const accepts = decodePaymentRequired(due.headers.get("PAYMENT-REQUIRED") ?? "").accepts;
    expect(accepts.map((a) => a.payTo).sort()).toEqual([merchant, greenWallet].sort());
    const demoAmount = BigInt(accepts.find((a) => a.payTo === merchant)!.amount);
    const greenAmount = BigInt(accepts.find((a) => a.payTo === greenWallet)!.amount);
    // enough for the demo store only
    await devnet.fund(wallet, demoAmount);
    const merchantBefore = await devnet.balanceOf(merchant);
    const idempotency_key = crypto.randomUUID();

    const partial = await checkout({ cartId, pay_with_wallet: true, idempotency_key }, agent);
    expect(partial.status).toBe(207);
    expect(partial.body.success).toBe(true);
    expect(partial.body.data).toMatchObject({ status: "PARTIALLY_COMPLETED", completed_store_ids: ["demo-store"] });
    const results = Object.fromEntries((partial.body.data.results as { merchant_slug: string }[]).map((r) => [r.merchant_slug, r]));
    expect(results["demo-store"]).toMatchObject({ status: "captured" });
    expect(results["greenleaf-living"]).toMatchObject({ status: "failed" });
    expect(partial.body.data.order_ids).toHaveLength(1);
    expect(await devnet.balanceOf(merchant)).toBe(merchantBefore + demoAmount);
    expect(await devnet.balanceOf(wallet)).toBe(0n);
    // the challenge left is the unpaid store's
    expect(decodePaymentRequired(partial.headers.get("PAYMENT-REQUIRED") ?? "").accepts.map((a) => a.payTo)).toEqual([greenWallet]);

    await devnet.fund(wallet, greenAmount);
    const rest = await checkout({ cartId, pay_with_wallet: true, idempotency_key }, agent);
    expect(rest.status).toBe(200);
    expect(rest.body.data.status).toBe("COMPLETED");
    expect(rest.body.data.order_ids).toHaveLength(2);
    expect(await devnet.balanceOf(merchant)).toBe(merchantBefore + demoAmount); // not charged twice
    expect(await devnet.balanceOf(greenWallet)).toBe(greenAmount);
    expect(await devnet.balanceOf(wallet)).toBe(0n);
  });
});

describe("a settle that times out", () => {
  test("leaves the session SETTLEMENT_UNKNOWN (retryable 503), is reconciled on chain, and charges exactly once", async () => {
    const payer = devnet.chain.accounts[1] as DevAccount;
    const cartId = await newCart();
    const payload = await payloadFor(cartId, payer);
    const idempotency_key = crypto.randomUUID();
    const before = await devnet.balanceOf(payer.address);
    srv.running.services.extras.set(EXTRAS_X402_SETTLE_TIMEOUT_MS, 700);
    devnet.facilitator.setSettleDelay(2_000);
    let first;
    try {
      first = await checkout({ cartId, x402_payload: payload, idempotency_key });
    } finally {
      srv.running.services.extras.delete(EXTRAS_X402_SETTLE_TIMEOUT_MS);
      devnet.facilitator.setSettleDelay(0);
    }
    expect(first.status).toBe(503);
    expect(first.body).toMatchObject({ code: "UPSTREAM_UNAVAILABLE", details: { status: "SETTLEMENT_UNKNOWN" } });

    // the slow settlement lands on its own
    const price = BigInt(payload.accepted.amount);
    for (let i = 0; i < 100 && (await devnet.balanceOf(payer.address)) === before; i++) await Bun.sleep(100);
    expect(await devnet.balanceOf(payer.address)).toBe(before - price);

    // the same call again reconciles (or the reminder already did): one order, paid; no second charge
    const again = await checkout({ cartId, x402_payload: payload, idempotency_key });
    if (again.status === 200) expect(again.body.data.status).toBe("COMPLETED");
    else expect(again.body).toMatchObject({ code: "CHECKOUT_ALREADY_IN_PROGRESS", details: { status: "COMPLETED" } });
    const orders = await ordersOf(cartId);
    expect(orders).toHaveLength(1);
    expect(orders[0]!.status).toBe("paid");
    await Bun.sleep(2_500); // let the facilitator's queued re-settle finish: it must not move money
    expect(await devnet.balanceOf(payer.address)).toBe(before - price);
  });
});
