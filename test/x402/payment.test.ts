/**
 * End to end on the devnet: the OFFICIAL x402 client (x402Client + exact EVM scheme + wrapFetchWithPayment)
 * pays a small resource server that speaks our challenge (x402-challenge.ts), checks the payload locally
 * (x402-verify.ts) and then calls OUR facilitator's /verify and /settle. Balances are read from the chain.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { x402Client } from "@x402/core/client";
import type { PaymentPayload, PaymentRequirements } from "@x402/core/types";
import { toClientEvmSigner } from "@x402/evm";
import { registerExactEvmScheme } from "@x402/evm/exact/client";
import { ExactEvmSchemeV1 } from "@x402/evm/exact/v1/client";
import { decodePaymentResponseHeader, wrapFetchWithPayment } from "@x402/fetch";
import type { Abi, Address } from "viem";
import { privateKeyToAccount } from "viem/accounts";
import {
  buildPaymentRequired,
  buildPaymentRequirements,
  decodePaymentRequired,
  decodePaymentSignature,
  encodePaymentResponse,
  paymentRequiredHeaders,
  PAYMENT_SIGNATURE_HEADER,
  X_PAYMENT_HEADER,
} from "../../actors/payments/x402-challenge.ts";
import { InMemoryNonceStore, verifyX402PaymentLocally } from "../../actors/payments/x402-verify.ts";
import { ActorError, ERROR_TABLE } from "../../actors/runtime/errors.ts";
import type { DevAccount } from "../../infra/x402/chain.ts";
import { startDevnet, type Devnet } from "../../infra/x402/devnet.ts";
import { createFacilitatorClient, type X402FacilitatorClient } from "../../infra/x402/facilitator-client.ts";
import { devnetPublicClient } from "../../infra/x402/token.ts";

const PRICE = 1_250_000n; // 1.25 USDC

let devnet: Devnet;
let payer: DevAccount;
let payee: Address;
let requirements: PaymentRequirements;
let facilitator: X402FacilitatorClient;
let shop: ReturnType<typeof Bun.serve>;
const nonces = new InMemoryNonceStore();
/** Every payment header the shop received, in order. */
const received: string[] = [];

/** A minimal paid resource: 402 challenge, then local checks, then the facilitator's /verify and /settle. */
function startShop(): ReturnType<typeof Bun.serve> {
  return Bun.serve({
    hostname: "127.0.0.1",
    port: 0,
    async fetch(req) {
      const url = new URL(req.url);
      const challenge = (error?: string) =>
        buildPaymentRequired({
          network: devnet.network,
          asset: devnet.token,
          amount: PRICE,
          payTo: payee,
          maxTimeoutSeconds: 120,
          resource: { url: url.toString(), description: "one paid report", mimeType: "application/json" },
          error,
        });
      const refuse = (error: string) =>
        new Response(JSON.stringify({ error }), { status: 402, headers: paymentRequiredHeaders(challenge(error)) });

      const header = req.headers.get(PAYMENT_SIGNATURE_HEADER) ?? req.headers.get(X_PAYMENT_HEADER);
      if (header === null) return refuse("Payment required");
      received.push(header);
      let payload: PaymentPayload;
      try {
        payload = decodePaymentSignature(header);
      } catch {
        return new Response(JSON.stringify({ error: "bad payment header" }), { status: 400 });
      }
      const local = await verifyX402PaymentLocally(payload, requirements, { nonces });
      if (!local.ok) return refuse(local.reason);
      const verified = await facilitator.verify(payload, requirements);
      if (!verified.isValid) return refuse(verified.invalidReason ?? "verify_failed");
      const settled = await facilitator.settle(payload, requirements);
      if (!settled.success) return refuse(settled.errorReason ?? "settle_failed");
      return new Response(JSON.stringify({ report: "paid content", payer: local.payer }), {
        status: 200,
        headers: { "content-type": "application/json", "PAYMENT-RESPONSE": encodePaymentResponse(settled) },
      });
    },
  });
}

function officialClient(account: DevAccount) {
  const client = new x402Client();
  const reader = devnetPublicClient(devnet.chain.rpcUrl, devnet.chain.chainId);
  const signer = toClientEvmSigner(privateKeyToAccount(account.privateKey), {
    readContract: (args) =>
      reader.readContract({ address: args.address, abi: args.abi as Abi, functionName: args.functionName, args: args.args }),
  });
  registerExactEvmScheme(client, { signer, networks: [devnet.network] });
  // The client refuses tokens it does not know by default: list ours, capped at 5 USDC per payment.
  client.setSpendControls({
    allowedAssets: [{ network: devnet.network, asset: devnet.token.address, maxAmountPerPayment: "5000000" }],
  });
  return client;
}

const rawPost = (path: string, body: unknown) =>
  fetch(`${devnet.facilitator.url}${path}`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify(body),
  }).then(async (r) => ({ status: r.status, body: (await r.json()) as Record<string, unknown> }));

beforeAll(async () => {
  devnet = await startDevnet();
  payer = devnet.chain.accounts[1] as DevAccount;
  payee = (devnet.chain.accounts[5] as DevAccount).address;
  requirements = buildPaymentRequirements({
    network: devnet.network,
    asset: devnet.token,
    amount: PRICE,
    payTo: payee,
    maxTimeoutSeconds: 120,
  });
  facilitator = createFacilitatorClient({ url: devnet.facilitator.url, timeoutMs: 3_000 });
  shop = startShop();
});

afterAll(async () => {
  await shop?.stop(true);
  await devnet?.stop();
});

describe("x402 payment through the devnet", () => {
  test("the shop's 402 carries a v2 challenge the official client can read", async () => {
    const res = await fetch(`http://127.0.0.1:${shop.port}/report`);
    expect(res.status).toBe(402);
    expect(res.headers.get("cache-control")).toBe("no-store");
    const challenge = decodePaymentRequired(res.headers.get("PAYMENT-REQUIRED") ?? "");
    expect(challenge.x402Version).toBe(2);
    expect(challenge.accepts[0]).toEqual(requirements);
  });

  test("a payment made with the official client is settled by our facilitator: balances move by exactly the price", async () => {
    const payerBefore = await devnet.balanceOf(payer.address);
    const payeeBefore = await devnet.balanceOf(payee);
    const pay = wrapFetchWithPayment(fetch, officialClient(payer));

    const res = await pay(`http://127.0.0.1:${shop.port}/report`);
    expect(res.status).toBe(200);
    expect(await res.json()).toMatchObject({ report: "paid content", payer: payer.address });
    const receipt = decodePaymentResponseHeader(res.headers.get("PAYMENT-RESPONSE") ?? "");
    expect(receipt).toMatchObject({ success: true, network: devnet.network, payer: payer.address });
    expect(receipt.transaction).toMatch(/^0x[0-9a-f]{64}$/);

    expect(await devnet.balanceOf(payer.address)).toBe(payerBefore - PRICE);
    expect(await devnet.balanceOf(payee)).toBe(payeeBefore + PRICE);
    // the settlement is a real mined transaction of the token
    const tx = await devnetPublicClient(devnet.chain.rpcUrl, devnet.chain.chainId).getTransactionReceipt({
      hash: receipt.transaction as `0x${string}`,
    });
    expect(tx.status).toBe("success");
    expect(tx.to?.toLowerCase()).toBe(devnet.token.address.toLowerCase());
  });

  test("the same payload replayed is refused by our local nonce check and by the facilitator", async () => {
    // pay once (self-contained: does not lean on the previous test)
    const paid = await wrapFetchWithPayment(fetch, officialClient(payer))(`http://127.0.0.1:${shop.port}/report`);
    expect(paid.status).toBe(200);
    const header = received.at(-1);
    if (!header) throw new Error("the shop saw no payment header");
    const payload = decodePaymentSignature(header);
    const payeeBefore = await devnet.balanceOf(payee);

    // to the shop: the local check refuses before any facilitator call
    const res = await fetch(`http://127.0.0.1:${shop.port}/report`, { headers: { [PAYMENT_SIGNATURE_HEADER]: header } });
    expect(res.status).toBe(402);
    expect(decodePaymentRequired(res.headers.get("PAYMENT-REQUIRED") ?? "").error).toBe("nonce_reused");

    // straight to the facilitator: the token has marked the nonce used
    const verified = await facilitator.verify(payload, requirements);
    expect(verified.isValid).toBe(false);
    expect(verified.invalidReason).toBe("invalid_exact_evm_nonce_already_used");
    const settled = await facilitator.settle(payload, requirements);
    expect(settled.success).toBe(false);
    expect(settled.errorReason).toBe("invalid_exact_evm_nonce_already_used");

    expect(await devnet.balanceOf(payee)).toBe(payeeBefore);
  });

  test("the facilitator checks signatures itself: a tampered payload is refused with no transfer", async () => {
    const client = officialClient(payer);
    const challenge = decodePaymentRequired(
      (await fetch(`http://127.0.0.1:${shop.port}/report`)).headers.get("PAYMENT-REQUIRED") ?? "",
    );
    const payload = await client.createPaymentPayload(challenge);
    const inner = payload.payload as { authorization: Record<string, string>; signature: string };
    const tampered: PaymentPayload = {
      ...payload,
      payload: { ...inner, authorization: { ...inner.authorization, to: (devnet.chain.accounts[6] as DevAccount).address } },
    };
    const tamperedRequirements = { ...requirements, payTo: (devnet.chain.accounts[6] as DevAccount).address };
    const verified = await facilitator.verify(tampered, tamperedRequirements);
    expect(verified).toMatchObject({ isValid: false, invalidReason: "invalid_exact_evm_signature" });
    const payerBefore = await devnet.balanceOf(payer.address);
    const settled = await facilitator.settle(tampered, tamperedRequirements);
    expect(settled.success).toBe(false);
    expect(await devnet.balanceOf(payer.address)).toBe(payerBefore);
  });

  test("the facilitator serves x402 v1 request bodies too", async () => {
    const account = devnet.chain.accounts[2] as DevAccount;
    const v1Requirements = {
      scheme: "exact",
      network: "base-sepolia" as const, // the v1 name of chain 84532
      maxAmountRequired: "10000",
      resource: `http://127.0.0.1:${shop.port}/report`,
      description: "v1 body",
      mimeType: "application/json",
      outputSchema: {},
      payTo: payee,
      maxTimeoutSeconds: 120,
      asset: devnet.token.address,
      extra: { name: devnet.token.name, version: devnet.token.version },
    };
    const v1 = new ExactEvmSchemeV1(toClientEvmSigner(privateKeyToAccount(account.privateKey)));
    const payload = await v1.createPaymentPayload(1, v1Requirements as unknown as PaymentRequirements);
    const body = { x402Version: 1, paymentPayload: payload, paymentRequirements: v1Requirements };
    const payeeBefore = await devnet.balanceOf(payee);

    const verified = await rawPost("/verify", body);
    expect(verified).toMatchObject({ status: 200, body: { isValid: true, payer: account.address } });
    const settled = await rawPost("/settle", body);
    expect(settled).toMatchObject({ status: 200, body: { success: true, network: "base-sepolia" } });
    expect(await devnet.balanceOf(payee)).toBe(payeeBefore + 10_000n);
  });

  test("/supported lists exact on our CAIP-2 network for v2 and on base-sepolia for v1, with the gas payer", async () => {
    const supported = await facilitator.supported();
    expect(supported.kinds).toContainEqual({ x402Version: 2, scheme: "exact", network: devnet.network });
    expect(supported.kinds.some((k) => k.x402Version === 1 && String(k.network) === "base-sepolia")).toBe(true);
    expect(JSON.stringify(supported.signers)).toContain(devnet.facilitator.address);
  });

  test("a malformed body is a 400 from the facilitator", async () => {
    expect((await rawPost("/verify", { paymentPayload: {} })).status).toBe(400);
    expect((await rawPost("/settle", "nope")).status).toBe(400);
  });

  test("facilitator down: the call fails fast with a retryable UPSTREAM_UNAVAILABLE", async () => {
    const client = officialClient(payer);
    const challenge = buildPaymentRequired({ ...requirementsInput(), resource: { url: "http://127.0.0.1/report" } });
    const payload = await client.createPaymentPayload(challenge);
    await devnet.facilitator.down();
    try {
      const started = performance.now();
      const err = await facilitator.verify(payload, requirements).then(
        () => undefined,
        (e: unknown) => e,
      );
      expect(performance.now() - started).toBeLessThan(1_000);
      expect(err).toBeInstanceOf(ActorError);
      const actorError = err as ActorError;
      expect(actorError.code).toBe("UPSTREAM_UNAVAILABLE");
      expect(ERROR_TABLE[actorError.code].retryable).toBe(true);
      expect(actorError.details).toMatchObject({ reason: "unreachable", operation: "verify" });
      expect(actorError.message).toContain("unreachable");

      const settleErr = (await facilitator.settle(payload, requirements).catch((e: unknown) => e)) as ActorError;
      expect(settleErr.code).toBe("UPSTREAM_UNAVAILABLE");
      expect(settleErr.details).toMatchObject({ settlement: "not_attempted" });
    } finally {
      await devnet.facilitator.up();
    }
    // back up on the same URL: the same, still unused payload now settles
    const settled = await facilitator.settle(payload, requirements);
    expect(settled.success).toBe(true);
  });

  test("a settle slower than the caller's deadline is a retryable timeout with an unknown outcome", async () => {
    const client = officialClient(payer);
    const challenge = buildPaymentRequired({ ...requirementsInput(), resource: { url: "http://127.0.0.1/report" } });
    const payload = await client.createPaymentPayload(challenge);
    const impatient = createFacilitatorClient({ url: devnet.facilitator.url, timeoutMs: 200 });
    const payeeBefore = await devnet.balanceOf(payee);
    devnet.facilitator.setSettleDelay(600);
    try {
      const err = (await impatient.settle(payload, requirements).catch((e: unknown) => e)) as ActorError;
      expect(err).toBeInstanceOf(ActorError);
      expect(err.code).toBe("UPSTREAM_UNAVAILABLE");
      expect(err.details).toMatchObject({ reason: "timeout", operation: "settle", settlement: "unknown" });
      // the facilitator carried on: the transfer lands even though the caller gave up
      expect(await eventually(() => devnet.balanceOf(payee), (b) => b === payeeBefore + PRICE)).toBe(payeeBefore + PRICE);
    } finally {
      devnet.facilitator.setSettleDelay(0);
    }
    // re-sending the same payload cannot pay twice
    const again = await facilitator.settle(payload, requirements);
    expect(again.success).toBe(false);
    expect(await devnet.balanceOf(payee)).toBe(payeeBefore + PRICE);
  });
});

/** Polls `read` until `done` holds or 5 s pass; returns the last value read. */
async function eventually<T>(read: () => Promise<T>, done: (value: T) => boolean): Promise<T> {
  const deadline = Date.now() + 5_000;
  let value = await read();
  while (!done(value) && Date.now() < deadline) {
    await Bun.sleep(50);
    value = await read();
  }
  return value;
}

function requirementsInput() {
  return { network: devnet.network, asset: devnet.token, amount: PRICE, payTo: payee, maxTimeoutSeconds: 120 };
}
