/**
 * Wallet key material, kept out of the agent actor's auth hot path: generation (viem), sealing under a sub-key of
 * the key-encryption key with the wallet id as AAD (a sealed key copied onto another wallet's row does not open),
 * and EIP-3009 signing for x402. Nothing here logs or returns a private key.
 */
import { getAddress, type Address, type Hex } from "viem";
import { generatePrivateKey, privateKeyToAccount } from "viem/accounts";
import { randomBytes } from "node:crypto";
import type { PaymentPayload, PaymentRequirements } from "@x402/core/types";
import { openString, seal } from "../../infra/crypto.ts";
import { deriveKey } from "../../infra/secrets.ts";
import { ActorError, fail } from "../runtime/errors.ts";
import { EIP3009_TYPES, evmChainIdOf } from "../payments/x402-verify.ts";

export const WALLET_NETWORKS = ["eip155:8453", "eip155:84532"] as const;
export type WalletNetwork = (typeof WALLET_NETWORKS)[number];
/** The spec's default: the test network. */
export const DEFAULT_WALLET_NETWORK: WalletNetwork = "eip155:84532";

export function isWalletNetwork(value: unknown): value is WalletNetwork {
  return typeof value === "string" && (WALLET_NETWORKS as readonly string[]).includes(value);
}

export function walletSealingKey(kek: Uint8Array): Uint8Array {
  return new Uint8Array(deriveKey(kek, "agent-wallet-keys-v1"));
}

const aad = (walletId: string) => `agent-wallet:${walletId}`;

export interface NewWalletKey {
  address: Address;
  sealedPrivateKey: string;
}

export function generateWalletKey(sealingKey: Uint8Array, walletId: string): NewWalletKey {
  const pk = generatePrivateKey();
  const address = privateKeyToAccount(pk).address;
  return { address, sealedPrivateKey: seal(sealingKey, pk, aad(walletId)) };
}

function openKey(sealingKey: Uint8Array, walletId: string, sealed: string): Hex {
  try {
    return openString(sealingKey, sealed, aad(walletId)) as Hex;
  } catch {
    // Never say more: the wallet cannot sign, which is an internal fault (wrong SECRET_KEY, tampered row).
    throw new ActorError("INTERNAL_ERROR", "the wallet key could not be opened");
  }
}

/**
 * Signs an x402 v2 `exact` payment for `requirements` with the wallet's key: an EIP-3009
 * `TransferWithAuthorization` from the wallet to `payTo`, valid from 0 until now + maxTimeoutSeconds (what the
 * official client signs), with a fresh random nonce.
 */
export async function signX402Payment(
  sealingKey: Uint8Array,
  wallet: { id: string; address: string; network: string; sealedPrivateKey: string },
  requirements: PaymentRequirements,
  resource: PaymentPayload["resource"] | undefined,
  nowSeconds: number,
): Promise<PaymentPayload> {
  if (requirements.network !== wallet.network) {
    throw fail("INVALID_ARGUMENT", `the wallet is on ${wallet.network}, the payment asks for ${requirements.network}`, {
      field: "network",
      wallet_network: wallet.network,
    });
  }
  const chainId = evmChainIdOf(requirements.network);
  const name = requirements.extra?.name;
  const version = requirements.extra?.version;
  if (chainId === undefined || typeof name !== "string" || typeof version !== "string" || requirements.scheme !== "exact") {
    throw fail("INVALID_ARGUMENT", "the requirements are not an EVM exact payment with a token domain", { field: "requirements" });
  }
  const account = privateKeyToAccount(openKey(sealingKey, wallet.id, wallet.sealedPrivateKey));
  const authorization = {
    from: account.address,
    to: getAddress(requirements.payTo.toLowerCase()),
    value: requirements.amount,
    validAfter: "0",
    validBefore: String(nowSeconds + requirements.maxTimeoutSeconds),
    nonce: `0x${randomBytes(32).toString("hex")}` as Hex,
  };
  const signature = await account.signTypedData({
    domain: { name, version, chainId, verifyingContract: getAddress(requirements.asset.toLowerCase()) },
    types: EIP3009_TYPES,
    primaryType: "TransferWithAuthorization",
    message: {
      from: authorization.from,
      to: authorization.to,
      value: BigInt(authorization.value),
      validAfter: 0n,
      validBefore: BigInt(authorization.validBefore),
      nonce: authorization.nonce,
    },
  });
  const payload: PaymentPayload = { x402Version: 2, accepted: requirements, payload: { signature, authorization } };
  if (resource) payload.resource = resource;
  return payload;
}
