/**
 * Local x402 payload checks, offline: payloads are signed with viem exactly as @x402/evm's exact client signs
 * them (EIP-712 TransferWithAuthorization over the token's domain), then altered one field at a time.
 */
import { describe, expect, test } from "bun:test";
import type { PaymentPayload, PaymentRequirements } from "@x402/core/types";
import { getAddress, toHex, type Address, type Hex } from "viem";
import { privateKeyToAccount } from "viem/accounts";
import { buildPaymentRequirements } from "../../actors/payments/x402-challenge.ts";
import {
  EIP3009_TYPES,
  InMemoryNonceStore,
  nonceKey,
  verifyX402PaymentLocally,
  type NonceStore,
} from "../../actors/payments/x402-verify.ts";

const payerAccount = privateKeyToAccount("0x59c6995e998f97a5a0044966f0945389dc9e86dae88c7a8412f4603b6b78690d");
const otherAccount = privateKeyToAccount("0x7c852118294e51e653712a81e05800f419141751be58f605c371e15141b007a6");
const TOKEN: Address = "0x5FbDB2315678afecb367f032d93F642f64180aa3";
const OTHER_TOKEN: Address = "0xe7f1725E7734CE288F8367e1Bb143E90bb3F0512";
const PAY_TO: Address = "0x3C44CdDdB6a900fa2b585dd299e03d12FA4293BC";
const NOW = 1_800_000_000;

const expected: PaymentRequirements = buildPaymentRequirements({
  network: "eip155:84532",
  asset: { address: TOKEN, name: "USD Coin", version: "2", decimals: 6 },
  amount: 12_340_000n,
  payTo: PAY_TO,
  maxTimeoutSeconds: 300,
});

interface SignArgs {
  requirements?: PaymentRequirements;
  signer?: typeof payerAccount;
  from?: Address;
  value?: string;
  validAfter?: number;
  validBefore?: number;
  nonce?: Hex;
}

let nonceCounter = 0;
const freshNonce = (): Hex => toHex(BigInt(Date.now()) * 1000n + BigInt(++nonceCounter), { size: 32 });

/** What @x402/evm's exact client produces for `requirements`. */
async function signPayload(args: SignArgs = {}): Promise<PaymentPayload> {
  const requirements = args.requirements ?? expected;
  const signer = args.signer ?? payerAccount;
  const chainId = Number(requirements.network.split(":")[1]);
  const authorization = {
    from: args.from ?? signer.address,
    to: getAddress(requirements.payTo),
    value: args.value ?? requirements.amount,
    validAfter: String(args.validAfter ?? 0),
    validBefore: String(args.validBefore ?? NOW + requirements.maxTimeoutSeconds),
    nonce: args.nonce ?? freshNonce(),
  };
  const signature = await signer.signTypedData({
    domain: {
      name: requirements.extra.name as string,
      version: requirements.extra.version as string,
      chainId,
      verifyingContract: getAddress(requirements.asset),
    },
    types: EIP3009_TYPES,
    primaryType: "TransferWithAuthorization",
    message: {
      from: getAddress(authorization.from),
      to: authorization.to,
      value: BigInt(authorization.value),
      validAfter: BigInt(authorization.validAfter),
      validBefore: BigInt(authorization.validBefore),
      nonce: authorization.nonce,
    },
  });
  return {
    x402Version: 2,
    resource: { url: "http://127.0.0.1/checkout" },
    accepted: requirements,
    payload: { authorization, signature },
  };
}

const verify = (payload: unknown, nonces: NonceStore = new InMemoryNonceStore(), now = NOW) =>
  verifyX402PaymentLocally(payload, expected, { nonces, nowSeconds: now });

const reasonOf = async (payload: unknown, now = NOW) => {
  const result = await verify(payload, new InMemoryNonceStore(), now);
  return result.ok ? "ok" : result.reason;
};

describe("local x402 verification", () => {
  test("a payload signed for exactly what was asked is accepted and names the payer", async () => {
    const result = await verify(await signPayload());
    expect(result).toMatchObject({ ok: true, payer: payerAccount.address, amount: 12_340_000n });
  });

  test("a tampered signature is refused as invalid_signature", async () => {
    const payload = await signPayload();
    const inner = payload.payload as { signature: Hex };
    // flip one nibble of r
    const flipped = inner.signature.slice(0, 10) + (inner.signature[10] === "a" ? "b" : "a") + inner.signature.slice(11);
    expect(await reasonOf({ ...payload, payload: { ...payload.payload, signature: flipped } })).toBe("invalid_signature");
  });

  test("an authorization whose from is not the signer is refused as invalid_signature", async () => {
    expect(await reasonOf(await signPayload({ from: otherAccount.address }))).toBe("invalid_signature");
  });

  test("a value changed after signing is refused", async () => {
    const payload = await signPayload();
    const inner = payload.payload as { authorization: Record<string, string>; signature: Hex };
    const tampered = {
      ...payload,
      accepted: { ...payload.accepted, amount: "1" },
      payload: { ...inner, authorization: { ...inner.authorization, value: "1" } },
    };
    expect(await reasonOf(tampered)).toBe("amount_mismatch");
  });

  test("a payment signed for a different amount is refused as amount_mismatch", async () => {
    const cheaper = { ...expected, amount: "12339999" };
    expect(await reasonOf(await signPayload({ requirements: cheaper }))).toBe("amount_mismatch");
    const dearer = { ...expected, amount: "12340001" };
    expect(await reasonOf(await signPayload({ requirements: dearer }))).toBe("amount_mismatch");
  });

  test("a payment to another wallet is refused as payto_mismatch", async () => {
    const elsewhere = { ...expected, payTo: otherAccount.address };
    expect(await reasonOf(await signPayload({ requirements: elsewhere }))).toBe("payto_mismatch");
  });

  test("a payment in another token is refused as asset_mismatch", async () => {
    const otherToken = { ...expected, asset: OTHER_TOKEN };
    expect(await reasonOf(await signPayload({ requirements: otherToken }))).toBe("asset_mismatch");
  });

  test("a payment on another network is refused as network_mismatch", async () => {
    const mainnet = { ...expected, network: "eip155:8453" as const };
    expect(await reasonOf(await signPayload({ requirements: mainnet }))).toBe("network_mismatch");
  });

  test("a payment that claims our network but was signed for another chain id fails its signature", async () => {
    const signedOnMainnet = await signPayload({ requirements: { ...expected, network: "eip155:8453" } });
    expect(await reasonOf({ ...signedOnMainnet, accepted: expected })).toBe("invalid_signature");
  });

  test("an expired window is refused as expired", async () => {
    expect(await reasonOf(await signPayload({ validBefore: NOW - 10 }))).toBe("expired");
    expect(await reasonOf(await signPayload({ validBefore: NOW }))).toBe("expired");
    // still valid for 3 s only: too short to be mined after the facilitator round trip
    expect(await reasonOf(await signPayload({ validBefore: NOW + 3 }))).toBe("expired");
  });

  test("an authorization that starts in the future is refused as not_yet_valid", async () => {
    expect(await reasonOf(await signPayload({ validAfter: NOW + 60 }))).toBe("not_yet_valid");
    expect(await reasonOf(await signPayload({ validAfter: NOW }))).toBe("ok");
  });

  test("an authorization valid for much longer than maxTimeoutSeconds is refused", async () => {
    expect(await reasonOf(await signPayload({ validBefore: NOW + 300 + 30 }))).toBe("ok");
    expect(await reasonOf(await signPayload({ validBefore: NOW + 3_600 }))).toBe("window_too_long");
  });

  test("the same payload presented twice is refused the second time as nonce_reused", async () => {
    const nonces = new InMemoryNonceStore();
    const payload = await signPayload();
    expect((await verify(payload, nonces)).ok).toBe(true);
    const again = await verify(payload, nonces);
    expect(again).toMatchObject({ ok: false, reason: "nonce_reused" });
  });

  test("the nonce is keyed by payer, so the same nonce from another payer is not a replay", async () => {
    const nonces = new InMemoryNonceStore();
    const nonce = freshNonce();
    expect((await verify(await signPayload({ nonce }), nonces)).ok).toBe(true);
    expect((await verify(await signPayload({ nonce, signer: otherAccount }), nonces)).ok).toBe(true);
  });

  test("a forged payload never claims the payer's nonce", async () => {
    const nonces = new InMemoryNonceStore();
    const nonce = freshNonce();
    const forged = await signPayload({ nonce, from: payerAccount.address, signer: otherAccount });
    expect(await verify(forged, nonces)).toMatchObject({ ok: false, reason: "invalid_signature" });
    expect(await nonces.seen(nonceKey(84532, TOKEN, payerAccount.address, nonce))).toBe(false);
    expect((await verify(await signPayload({ nonce }), nonces)).ok).toBe(true);
  });

  test("remember: false checks the nonce without claiming it", async () => {
    const nonces = new InMemoryNonceStore();
    const payload = await signPayload();
    const opts = { nonces, nowSeconds: NOW, remember: false };
    expect((await verifyX402PaymentLocally(payload, expected, opts)).ok).toBe(true);
    expect((await verifyX402PaymentLocally(payload, expected, opts)).ok).toBe(true);
  });

  test("shapes that are not an x402 v2 exact EIP-3009 payload are refused as malformed", async () => {
    const good = await signPayload();
    const inner = good.payload as { authorization: Record<string, string>; signature: Hex };
    const cases: unknown[] = [
      null,
      "x402",
      {},
      { ...good, x402Version: 1 },
      { ...good, accepted: { ...good.accepted, scheme: "upto" } },
      { ...good, payload: { signature: inner.signature } },
      { ...good, payload: { ...inner, authorization: { ...inner.authorization, value: "12.34" } } },
      { ...good, payload: { ...inner, authorization: { ...inner.authorization, nonce: "0x1234" } } },
      { ...good, payload: { ...inner, authorization: { ...inner.authorization, from: "not-an-address" } } },
    ];
    for (const payload of cases) {
      expect(await reasonOf(payload)).toBe("malformed");
    }
  });

  test("a smart-wallet (non-65-byte) signature cannot be verified locally", async () => {
    const good = await signPayload();
    const inner = good.payload as { authorization: Record<string, string>; signature: Hex };
    const wrapped = { ...good, payload: { ...inner, signature: `${inner.signature}${"00".repeat(32)}` } };
    expect(await reasonOf(wrapped)).toBe("invalid_signature");
  });
});
