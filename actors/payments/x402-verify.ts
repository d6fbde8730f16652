/**
 * Local checks of an x402 v2 `exact` (EIP-3009) payment payload, run before any facilitator call so a wrong,
 * stale or replayed payment is refused without a network round trip. Pure except for the EIP-712 signer
 * recovery (viem, offline) and the injected nonce store.
 *
 * Order matters:
 * 1. shape (`malformed`) — v2, scheme `exact`, an EIP-3009 authorization with hex fields;
 * 2. what the payer agreed to vs what we asked: network/chain id, asset, payTo, amount. These come first so
 *    a payment made for another token or chain reads as that mismatch and not as a bad signature (the
 *    EIP-712 domain includes chain id and token address, so the signature would fail too);
 * 3. the signature: the recovered `TransferWithAuthorization` signer must be `authorization.from`;
 * 4. the validity window;
 * 5. the nonce: only a validly signed payload may consult and claim a nonce, so nobody can burn another
 *    payer's nonce with a forged payload.
 */
import { getAddress, isAddress, recoverTypedDataAddress, type Address, type Hex } from "viem";
import type { PaymentRequirements } from "@x402/core/types";
import { parseExactEip3009Payload, parsePaymentPayload, X402_VERSION, type ExactEip3009Payload } from "./x402-challenge.ts";

export type X402VerifyReason =
  | "malformed"
  | "network_mismatch"
  | "asset_mismatch"
  | "payto_mismatch"
  | "amount_mismatch"
  | "invalid_signature"
  | "not_yet_valid"
  | "expired"
  /** `validBefore` lies further ahead than `maxTimeoutSeconds` (+ skew) allows. */
  | "window_too_long"
  | "nonce_reused";

export type X402VerifyResult =
  | {
      ok: true;
      payer: Address;
      /** Atomic units authorised (equal to the required amount). */
      amount: bigint;
      /** The key the nonce was checked and remembered under (see `nonceKey`). */
      nonceKey: string;
      authorization: ExactEip3009Payload["authorization"];
    }
  | { ok: false; reason: X402VerifyReason; message: string; payer?: Address };

/**
 * Remembers EIP-3009 nonces already accepted. Keys come from `nonceKey` (chain, token, payer, nonce): on chain
 * a nonce is scoped to (token, authorizer), so the same 32 bytes from two payers are two different nonces.
 * Production stores should make `remember` durable (and ideally refuse a second claim atomically).
 */
export interface NonceStore {
  seen(nonce: string): Promise<boolean>;
  remember(nonce: string): Promise<void>;
}

export interface VerifyOptions {
  nonces: NonceStore;
  /** Current time in Unix seconds; default the wall clock. */
  nowSeconds?: number;
  /** Clock skew tolerated on `validBefore - now` vs `maxTimeoutSeconds`. Default 30 s. */
  skewSeconds?: number;
  /**
   * An authorization must stay valid at least this long, so it can still be mined after the facilitator call.
   * Default 6 s, the margin @x402/evm's facilitator itself applies (it refuses `validBefore < now + 6`).
   */
  minRemainingSeconds?: number;
  /** Claim the nonce when everything else passes (default true). False only looks it up. */
  remember?: boolean;
}

export const EIP3009_TYPES = {
  TransferWithAuthorization: [
    { name: "from", type: "address" },
    { name: "to", type: "address" },
    { name: "value", type: "uint256" },
    { name: "validAfter", type: "uint256" },
    { name: "validBefore", type: "uint256" },
    { name: "nonce", type: "bytes32" },
  ],
} as const;

/** `eip155:84532` → 84532; undefined for anything that is not a CAIP-2 EVM chain id. */
export function evmChainIdOf(network: string): number | undefined {
  const m = /^eip155:([1-9][0-9]{0,15})$/.exec(network);
  if (!m) return undefined;
  const id = Number(m[1]);
  return Number.isSafeInteger(id) ? id : undefined;
}

/** Nonce-store key: chain, token, payer and nonce, lower-cased. */
export function nonceKey(chainId: number, asset: string, from: string, nonce: string): string {
  return `eip3009:${chainId}:${asset.toLowerCase()}:${from.toLowerCase()}:${nonce.toLowerCase()}`;
}

const MAX_UINT256 = 2n ** 256n - 1n;

const refuse = (reason: X402VerifyReason, message: string, payer?: Address): X402VerifyResult =>
  payer === undefined ? { ok: false, reason, message } : { ok: false, reason, message, payer };

// Non-strict: a lower-case address is as good as a checksummed one; the comparison is on the bytes.
const sameAddress = (a: string, b: string): boolean =>
  isAddress(a, { strict: false }) && isAddress(b, { strict: false }) && a.toLowerCase() === b.toLowerCase();

/**
 * Checks `payload` (an x402 v2 payment payload, as received) against `expected` (the requirements we issued
 * in the 402 challenge). Never throws for bad input: every refusal is a typed reason.
 */
export async function verifyX402PaymentLocally(
  payload: unknown,
  expected: PaymentRequirements,
  options: VerifyOptions,
): Promise<X402VerifyResult> {
  // 1. shape
  const parsed = parsePaymentPayload(payload);
  if (!parsed.ok) return refuse("malformed", parsed.error);
  const { accepted } = parsed.value;
  if (parsed.value.x402Version !== X402_VERSION) return refuse("malformed", "only x402 v2 payloads are accepted");
  if (accepted.scheme !== "exact" || expected.scheme !== "exact") {
    return refuse("malformed", `scheme must be "exact" (got "${accepted.scheme}")`);
  }
  const inner = parseExactEip3009Payload(parsed.value.payload);
  if (!inner.ok) return refuse("malformed", `${inner.error} (only EIP-3009 authorizations are accepted)`);
  const { authorization, signature } = inner.value;
  // EIP-3009 signs these as uint256: a larger number is no authorization the token could ever take, so it is a
  // malformed payload (it reached the signature check as invalid_signature, with viem's range error as the message).
  for (const field of ["value", "validAfter", "validBefore"] as const) {
    if (BigInt(authorization[field]) > MAX_UINT256) return refuse("malformed", `authorization.${field} is larger than a uint256`);
  }
  // Lower-case first: getAddress throws on a mixed-case address with a bad checksum; bytes are what count.
  const payer = getAddress(authorization.from.toLowerCase());
  const expectedChainId = evmChainIdOf(expected.network);
  if (expectedChainId === undefined) return refuse("malformed", `expected network ${expected.network} is not an EVM chain`);
  const name = expected.extra?.name;
  const version = expected.extra?.version;
  if (typeof name !== "string" || typeof version !== "string") {
    return refuse("malformed", "expected requirements lack extra.name / extra.version (the token's EIP-712 domain)");
  }

  // 2. what was agreed vs what we asked for
  if (accepted.network !== expected.network) {
    return refuse("network_mismatch", `payment is for ${accepted.network}, expected ${expected.network}`, payer);
  }
  if (!sameAddress(accepted.asset, expected.asset)) {
    return refuse("asset_mismatch", `payment is in asset ${accepted.asset}, expected ${expected.asset}`, payer);
  }
  if (!sameAddress(authorization.to, expected.payTo) || !sameAddress(accepted.payTo, expected.payTo)) {
    return refuse("payto_mismatch", `payment goes to ${authorization.to}, expected ${expected.payTo}`, payer);
  }
  const required = BigInt(expected.amount);
  const value = BigInt(authorization.value);
  if (value !== required || BigInt(accepted.amount) !== required) {
    return refuse("amount_mismatch", `payment authorises ${value} atomic units, expected exactly ${required}`, payer);
  }

  // 3. signature: recover the EIP-712 signer under the token's domain on the expected chain
  if (!/^0x[0-9a-fA-F]{130}$/.test(signature)) {
    // ERC-1271 / ERC-6492 (smart-wallet) signatures need the chain; only the facilitator can check them.
    return refuse("invalid_signature", "only 65-byte ECDSA (EOA) signatures can be verified locally", payer);
  }
  let signer: Address;
  try {
    signer = await recoverTypedDataAddress({
      domain: { name, version, chainId: expectedChainId, verifyingContract: getAddress(expected.asset.toLowerCase()) },
      types: EIP3009_TYPES,
      primaryType: "TransferWithAuthorization",
      message: {
        from: payer,
        to: getAddress(authorization.to.toLowerCase()),
        value,
        validAfter: BigInt(authorization.validAfter),
        validBefore: BigInt(authorization.validBefore),
        nonce: authorization.nonce as Hex,
      },
      signature: signature as Hex,
    });
  } catch {
    // Our own sentence only: viem's and noble's error text (a curve bound, "Version: viem@…") is another stack's
    // internals and never reaches the agent, as for a facilitator's refusal text (audit V4, review RX-4).
    return refuse("invalid_signature", "the signature is not a valid ECDSA signature (it recovers no signer)", payer);
  }
  if (signer !== payer) return refuse("invalid_signature", `signed by ${signer}, not by authorization.from ${payer}`, payer);

  // 4. validity window. The official v2 client signs validAfter = 0 and validBefore = now + maxTimeoutSeconds,
  // so the window that matters is from now to validBefore.
  const now = BigInt(Math.floor(options.nowSeconds ?? Date.now() / 1000));
  const validAfter = BigInt(authorization.validAfter);
  const validBefore = BigInt(authorization.validBefore);
  const skew = BigInt(options.skewSeconds ?? 30);
  const minRemaining = BigInt(options.minRemainingSeconds ?? 6);
  if (validAfter > now) return refuse("not_yet_valid", `authorization is valid only after ${validAfter} (now ${now})`, payer);
  if (validBefore <= now + minRemaining) {
    return refuse("expired", `authorization expired or expires within ${minRemaining} s (validBefore ${validBefore}, now ${now})`, payer);
  }
  const longest = BigInt(expected.maxTimeoutSeconds) + skew;
  if (validBefore - now > longest) {
    return refuse("window_too_long", `authorization stays valid ${validBefore - now} s, more than the allowed ${longest} s`, payer);
  }

  // 5. nonce
  const key = nonceKey(expectedChainId, expected.asset, payer, authorization.nonce);
  if (await options.nonces.seen(key)) return refuse("nonce_reused", `nonce ${authorization.nonce} was already used`, payer);
  if (options.remember !== false) await options.nonces.remember(key);

  return { ok: true, payer, amount: value, nonceKey: key, authorization };
}

/** A process-local NonceStore for tests and single-process tools (forgets on restart). */
export class InMemoryNonceStore implements NonceStore {
  private readonly keys = new Set<string>();
  async seen(nonce: string): Promise<boolean> {
    return this.keys.has(nonce);
  }
  async remember(nonce: string): Promise<void> {
    this.keys.add(nonce);
  }
}
