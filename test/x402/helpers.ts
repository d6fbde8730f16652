/**
 * The set-up the x402 settlement tests share (chain-reconcile, settle-unknown, settle-unresolved): the devnet
 * (anvil + TestUSDC + the @x402/evm facilitator), the facilitator proxy in front of it, the real server allowing
 * only that proxy, the demo store's x402 config pointed at both, and a payer's signing client. Each file keeps its own
 * cases and the extra set-up it alone needs (a second store, a moved clock, an RPC relay).
 */
import { expect } from "bun:test";
import { x402Client } from "@x402/core/client";
import type { PaymentRequired } from "@x402/core/types";
import { toClientEvmSigner } from "@x402/evm";
import { registerExactEvmScheme } from "@x402/evm/exact/client";
import { parseAbi, type Abi, type Address, type Hex } from "viem";
import { privateKeyToAccount } from "viem/accounts";
import { decodePaymentRequired } from "../../actors/payments/x402-challenge.ts";
import type { BootOptions } from "../../gateway/boot.ts";
import type { Config } from "../../infra/config.ts";
import type { DevAccount } from "../../infra/x402/chain.ts";
import { startDevnet, type Devnet } from "../../infra/x402/devnet.ts";
import { devnetPublicClient, devnetWalletClient } from "../../infra/x402/token.ts";
import { ALL_SCOPES, createKey, type TestKey } from "../helpers/agents.ts";
import { startServer, type TestServer } from "../helpers/server.ts";
import { startFacilitatorProxy, type FacilitatorProxy, type SettleMode } from "./facilitator-proxy.ts";

/** The devnet account that receives the demo store's payments. */
export const MERCHANT_ACCOUNT = 5;

export interface X402Env {
  devnet: Devnet;
  proxy: FacilitatorProxy;
  srv: TestServer;
  key: TestKey;
  merchant: Address;
  /** The `x402_config` an agent's checkout names: the demo store's wallet, network, proxy and asset. */
  x402Config: Record<string, string>;
  /** The agent's cart of `items`, expected created (201); its id. */
  newCart(items: { product_id: string; quantity: number }[]): Promise<string>;
  /** The agent's x402 checkout naming `x402Config`, with `body` on top (the body typed as TestServer.json's). */
  checkout<T = any>(body: Record<string, unknown>): Promise<{ status: number; headers: Headers; body: T }>;
  /** The challenge a payload-less checkout of `cartId` answers (expected 402), decoded from PAYMENT-REQUIRED. */
  challengeOf(cartId: string): Promise<PaymentRequired>;
  stop(): Promise<void>;
}

export function payerOf(devnet: Devnet, i: number): DevAccount {
  return devnet.chain.accounts[i] as DevAccount;
}

/**
 * Starts the devnet, the proxy and a seeded server (allowlisting the proxy), points the demo store's x402 config at
 * them, with `rpcUrl` as its chain witness (null: none, the facilitator alone), and funds each `fund` account.
 */
export async function startX402Env(opts: { rpcUrl: "devnet" | null; fund: number[]; config?: Partial<Config>; boot?: Omit<BootOptions, "config"> }): Promise<X402Env> {
  const devnet = await startDevnet();
  const proxy = await startFacilitatorProxy(devnet.facilitator.url);
  // Anvil mines a block per transaction and none in between: a transfer is captured once mined (1) unless a file
  // asks for more depth and mines the blocks itself (capture-confirmations.test.ts).
  const srv = await startServer({
    seed: true,
    config: { X402_CAPTURE_CONFIRMATIONS: 1, ...opts.config, X402_FACILITATOR_ALLOWLIST: proxy.url },
    ...(opts.boot ? { boot: opts.boot } : {}),
  });
  const key = await createKey(srv, { scopes: ALL_SCOPES });
  const merchant = payerOf(devnet, MERCHANT_ACCOUNT).address as Address;
  const rpcUrl = opts.rpcUrl === "devnet" ? devnet.chain.rpcUrl : null;
  await srv.db.sql`UPDATE store_x402_config SET pay_to = ${merchant}, network = ${devnet.network}, asset_address = ${devnet.token.address},
      facilitator_url = ${proxy.url}, rpc_url = ${rpcUrl} WHERE store_slug = 'demo-store'`;
  const x402Config = { merchant_wallet_address: merchant, network: devnet.network, facilitator_url: proxy.url, asset_address: devnet.token.address };
  for (const i of opts.fund) await devnet.fund(payerOf(devnet, i).address, 1_000_000_000n);
  const checkout = <T>(body: Record<string, unknown>) =>
    srv.json<T>("/api/v1/agent/checkout", { method: "POST", headers: key.headers, body: { payment_rail: "x402", x402_config: x402Config, ...body } });
  return {
    devnet,
    proxy,
    srv,
    key,
    merchant,
    x402Config,
    async newCart(items) {
      const r = await srv.json("/api/v1/agent/cart", { method: "POST", headers: key.headers, body: { items } });
      expect(r.status).toBe(201);
      return r.body.data.id;
    },
    checkout,
    async challengeOf(cartId) {
      const r = await checkout({ cartId });
      expect(r.status).toBe(402);
      return decodePaymentRequired(r.headers.get("PAYMENT-REQUIRED") ?? "");
    },
    async stop() {
      await srv.stop();
      await proxy.stop();
      await devnet.stop();
    },
  };
}

/** An x402 client that signs as `account` on the devnet, allowed to pay the devnet token only. */
export function x402Signer(devnet: Devnet, account: DevAccount): x402Client {
  const client = new x402Client();
  const reader = devnetPublicClient(devnet.chain.rpcUrl, devnet.chain.chainId);
  const evm = toClientEvmSigner(privateKeyToAccount(account.privateKey), {
    readContract: (args) => reader.readContract({ address: args.address, abi: args.abi as Abi, functionName: args.functionName, args: args.args }),
  });
  registerExactEvmScheme(client, { signer: evm, networks: [devnet.network] });
  client.setSpendControls({ allowedAssets: [{ network: devnet.network, asset: devnet.token.address, maxAmountPerPayment: "1000000000" }] });
  return client;
}

/** A mined, successful transaction on the devnet. */
export async function expectMined(devnet: Devnet, tx: string): Promise<void> {
  const receipt = await devnetPublicClient(devnet.chain.rpcUrl, devnet.chain.chainId).getTransactionReceipt({ hash: tx as Hex });
  expect(receipt.status).toBe("success");
}

const CANCEL_ABI = parseAbi(["function name() view returns (string)", "function cancelAuthorization(address authorizer, bytes32 nonce, bytes signature)"]);

/** The payer's own EIP-3009 cancelAuthorization of `nonce`, mined on the devnet. */
export async function cancelOnChain(devnet: Devnet, payer: DevAccount, nonce: Hex): Promise<void> {
  const reader = devnetPublicClient(devnet.chain.rpcUrl, devnet.chain.chainId);
  const name = (await reader.readContract({ address: devnet.token.address as Address, abi: CANCEL_ABI, functionName: "name" })) as string;
  const account = privateKeyToAccount(payer.privateKey);
  const signature = await account.signTypedData({
    domain: { name, version: "2", chainId: devnet.chain.chainId, verifyingContract: devnet.token.address as Address },
    types: { CancelAuthorization: [{ name: "authorizer", type: "address" }, { name: "nonce", type: "bytes32" }] },
    primaryType: "CancelAuthorization",
    message: { authorizer: payer.address as Address, nonce },
  });
  const wallet = devnetWalletClient(devnet.chain.rpcUrl, devnet.chain.chainId, payer.privateKey);
  const hash = await wallet.writeContract({ address: devnet.token.address as Address, abi: CANCEL_ABI, functionName: "cancelAuthorization", args: [payer.address as Address, nonce, signature], account, chain: null });
  expect((await reader.waitForTransactionReceipt({ hash })).status).toBe("success");
}

export async function waitFor(what: string, check: () => Promise<boolean>, ms = 20_000): Promise<void> {
  const until = Date.now() + ms;
  while (!(await check())) {
    if (Date.now() > until) throw new Error(`timed out waiting for ${what}`);
    await Bun.sleep(100);
  }
}

/** Runs `fn` with the proxy's /settle in `mode`, then puts it back to `pass` whatever happened. */
export async function withSettleMode<T>(proxy: FacilitatorProxy, mode: SettleMode, fn: () => Promise<T>): Promise<T> {
  proxy.settleMode = mode;
  try {
    return await fn();
  } finally {
    proxy.settleMode = "pass";
  }
}

/**
 * A server in front of the devnet's facilitator proxy, made demo-store's facilitator (and allowed): every call is
 * passed on, and each /verify first awaits `beforeVerify`, so a test can hold a payment between its check and its settle.
 */
export async function startFacilitatorFront(env: X402Env, beforeVerify: () => Promise<unknown> | void): Promise<ReturnType<typeof Bun.serve>> {
  const front = Bun.serve({
    hostname: "127.0.0.1",
    port: 0,
    async fetch(req) {
      const path = new URL(req.url).pathname;
      const body = req.method === "GET" ? undefined : await req.text();
      if (path.endsWith("/verify")) await beforeVerify();
      const r = await fetch(`${env.proxy.url.replace(/\/$/, "")}${path}`, { method: req.method, headers: { "content-type": "application/json" }, body });
      return new Response(await r.text(), { status: r.status, headers: { "content-type": "application/json" } });
    },
  });
  const url = `http://127.0.0.1:${front.port}`;
  env.srv.running.services.config.X402_FACILITATOR_ALLOWLIST = url;
  await env.srv.db.sql`UPDATE store_x402_config SET facilitator_url = ${url} WHERE store_slug = 'demo-store'`;
  return front;
}
