/**
 * The x402 v2 wire shapes a checkout speaks, exactly as `@x402/core` 2.27 builds and reads them:
 *
 * - `PAYMENT-REQUIRED` (server → client, on the 402): base64(UTF-8 JSON of `PaymentRequired`)
 *   `{ x402Version: 2, error?, resource: {url, description?, mimeType?}, accepts: PaymentRequirements[] }`
 *   with `PaymentRequirements = { scheme, network (CAIP-2), asset, amount (atomic units, string), payTo,
 *   maxTimeoutSeconds, extra: { name, version } }` — `extra` is the token's EIP-712 domain, which the client
 *   signs against and the facilitator checks.
 * - `PAYMENT-SIGNATURE` (client → server; `X-PAYMENT` in v1): base64(JSON of `PaymentPayload`)
 *   `{ x402Version: 2, resource?, accepted: PaymentRequirements, payload: { signature, authorization } }`.
 * - `PAYMENT-RESPONSE` (server → client after settlement; `X-PAYMENT-RESPONSE` in v1): base64(JSON of
 *   `SettleResponse`) `{ success, transaction, network, payer?, errorReason? }`.
 *
 * Encoding is delegated to the library's own helpers so the bytes match what its clients expect; decoding adds
 * the shape checks the library leaves out (it only JSON-parses).
 */
import { Type, type Static, type TSchema } from "@sinclair/typebox";
import { Value } from "@sinclair/typebox/value";
import {
  decodePaymentRequiredHeader,
  decodePaymentResponseHeader,
  decodePaymentSignatureHeader,
  encodePaymentRequiredHeader,
  encodePaymentResponseHeader,
  encodePaymentSignatureHeader,
} from "@x402/core/http";
import type { PaymentPayload, PaymentRequired, PaymentRequirements, SettleResponse } from "@x402/core/types";
import { fail } from "../runtime/errors.ts";

export type { PaymentPayload, PaymentRequired, PaymentRequirements, SettleResponse };

export const X402_VERSION = 2;
export const PAYMENT_REQUIRED_HEADER = "PAYMENT-REQUIRED";
export const PAYMENT_SIGNATURE_HEADER = "PAYMENT-SIGNATURE";
/** The v1 request header; the library's v1 clients send it. */
export const X_PAYMENT_HEADER = "X-PAYMENT";
export const PAYMENT_RESPONSE_HEADER = "PAYMENT-RESPONSE";
export const X_PAYMENT_RESPONSE_HEADER = "X-PAYMENT-RESPONSE";
/** The library marks every 402 `Cache-Control: no-store`: a challenge is per request. */
export const PAYMENT_REQUIRED_CACHE_CONTROL = "no-store";
/** What we put in `maxTimeoutSeconds` unless told otherwise (the validity the client gives its signature). */
export const DEFAULT_MAX_TIMEOUT_SECONDS = 300;

const Caip2 = Type.String({ pattern: "^[-a-z0-9]{3,8}:[-_a-zA-Z0-9]{1,32}$" });
const EvmAddress = Type.String({ pattern: "^0x[0-9a-fA-F]{40}$" });
const AtomicAmount = Type.String({ pattern: "^(0|[1-9][0-9]{0,77})$" });

/** TypeBox mirror of `@x402/core`'s v2 `PaymentRequirements` (extra left open, as the library does). */
export const PaymentRequirementsSchema = Type.Object({
  scheme: Type.String({ minLength: 1 }),
  network: Caip2,
  asset: Type.String({ minLength: 1 }),
  amount: AtomicAmount,
  payTo: Type.String({ minLength: 1 }),
  maxTimeoutSeconds: Type.Integer({ minimum: 1 }),
  extra: Type.Record(Type.String(), Type.Unknown()),
});

export const ResourceInfoSchema = Type.Object({
  url: Type.String({ minLength: 1 }),
  description: Type.Optional(Type.String()),
  mimeType: Type.Optional(Type.String()),
  serviceName: Type.Optional(Type.String()),
  tags: Type.Optional(Type.Array(Type.String())),
  iconUrl: Type.Optional(Type.String()),
});

export const PaymentRequiredSchema = Type.Object({
  x402Version: Type.Literal(2),
  error: Type.Optional(Type.String()),
  resource: ResourceInfoSchema,
  accepts: Type.Array(PaymentRequirementsSchema, { minItems: 1 }),
  extensions: Type.Optional(Type.Record(Type.String(), Type.Unknown())),
});

/** The EIP-3009 `exact` EVM payload inside `PaymentPayload.payload`. */
export const ExactEip3009PayloadSchema = Type.Object({
  signature: Type.String({ pattern: "^0x[0-9a-fA-F]*$" }),
  authorization: Type.Object({
    from: EvmAddress,
    to: EvmAddress,
    value: AtomicAmount,
    validAfter: AtomicAmount,
    validBefore: AtomicAmount,
    nonce: Type.String({ pattern: "^0x[0-9a-fA-F]{64}$" }),
  }),
});
export type ExactEip3009Payload = Static<typeof ExactEip3009PayloadSchema>;

/** An x402 v2 payment payload (the `x402_payload` of InitiateCheckoutRequest). */
export const PaymentPayloadV2Schema = Type.Object({
  x402Version: Type.Literal(2),
  resource: Type.Optional(ResourceInfoSchema),
  accepted: PaymentRequirementsSchema,
  payload: Type.Record(Type.String(), Type.Unknown()),
  extensions: Type.Optional(Type.Record(Type.String(), Type.Unknown())),
});

export const SettleResponseSchema = Type.Object({
  success: Type.Boolean(),
  errorReason: Type.Optional(Type.String()),
  errorMessage: Type.Optional(Type.String()),
  payer: Type.Optional(Type.String()),
  transaction: Type.String(),
  network: Caip2,
  amount: Type.Optional(Type.String()),
});

export type ParseResult<T> = { ok: true; value: T } | { ok: false; error: string };

function check<S extends TSchema>(schema: S, raw: unknown, what: string): ParseResult<Static<S>> {
  if (Value.Check(schema, raw)) return { ok: true, value: raw };
  const first = Value.Errors(schema, raw).First();
  return { ok: false, error: first ? `${what}${first.path}: ${first.message}` : `${what}: invalid` };
}

export const parsePaymentRequirements = (raw: unknown): ParseResult<PaymentRequirements> =>
  check(PaymentRequirementsSchema, raw, "paymentRequirements") as ParseResult<PaymentRequirements>;
export const parsePaymentRequired = (raw: unknown): ParseResult<PaymentRequired> =>
  check(PaymentRequiredSchema, raw, "paymentRequired") as ParseResult<PaymentRequired>;
export const parsePaymentPayload = (raw: unknown): ParseResult<PaymentPayload> =>
  check(PaymentPayloadV2Schema, raw, "paymentPayload") as ParseResult<PaymentPayload>;
export const parseExactEip3009Payload = (raw: unknown): ParseResult<ExactEip3009Payload> =>
  check(ExactEip3009PayloadSchema, raw, "paymentPayload.payload");
export const parseSettleResponse = (raw: unknown): ParseResult<SettleResponse> =>
  check(SettleResponseSchema, raw, "settleResponse") as ParseResult<SettleResponse>;

// ---------------------------------------------------------------------------------------------------------------
// Building the challenge

export interface X402Asset {
  /** ERC-20 contract address. */
  address: string;
  /** EIP-712 domain name of the token ("USD Coin" for Circle's USDC). */
  name: string;
  /** EIP-712 domain version ("2" for Circle's USDC). */
  version: string;
  /** ERC-20 decimals (6 for USDC); used by `toAssetAmount`. */
  decimals: number;
}

export interface CheckoutChallengeInput {
  /** CAIP-2 network, e.g. `eip155:84532`. */
  network: string;
  asset: X402Asset;
  /** Price in the asset's atomic units (6 decimals for USDC). Use `toAssetAmount` from the cart's minor units. */
  amount: bigint | string;
  /** The merchant's wallet. */
  payTo: string;
  /** What is being paid for; for checkout, the checkout URL. */
  resource: { url: string; description?: string; mimeType?: string };
  maxTimeoutSeconds?: number;
  /** Why the 402 (the library sets e.g. "Payment required"; a failed attempt names its reason). */
  error?: string;
  /** Extra members for `extra` beyond the EIP-712 domain (e.g. `assetTransferMethod`). */
  extra?: Record<string, unknown>;
}

/** One `PaymentRequirements` entry (scheme `exact`). */
export function buildPaymentRequirements(input: Omit<CheckoutChallengeInput, "resource" | "error">): PaymentRequirements {
  const amount = typeof input.amount === "bigint" ? input.amount.toString() : input.amount;
  const requirements: PaymentRequirements = {
    scheme: "exact",
    network: input.network as PaymentRequirements["network"],
    asset: input.asset.address,
    amount,
    payTo: input.payTo,
    maxTimeoutSeconds: input.maxTimeoutSeconds ?? DEFAULT_MAX_TIMEOUT_SECONDS,
    extra: { ...input.extra, name: input.asset.name, version: input.asset.version },
  };
  const parsed = parsePaymentRequirements(requirements);
  if (!parsed.ok) throw fail("INVALID_ARGUMENT", `cannot build x402 requirements: ${parsed.error}`);
  if (!/^0x[0-9a-fA-F]{40}$/.test(requirements.asset) || !/^0x[0-9a-fA-F]{40}$/.test(requirements.payTo)) {
    throw fail("INVALID_ARGUMENT", "x402 asset and payTo must be EVM addresses", { field: "payTo" });
  }
  if (amount === "0") throw fail("INVALID_ARGUMENT", "an x402 payment amount must be positive", { field: "amount" });
  return requirements;
}

/** The v2 `PaymentRequired` object of a checkout's 402. */
export function buildPaymentRequired(input: CheckoutChallengeInput): PaymentRequired {
  const resource: PaymentRequired["resource"] = { url: input.resource.url };
  if (input.resource.description !== undefined) resource.description = input.resource.description;
  if (input.resource.mimeType !== undefined) resource.mimeType = input.resource.mimeType;
  const challenge: PaymentRequired = {
    x402Version: X402_VERSION,
    error: input.error ?? "Payment required",
    resource,
    accepts: [buildPaymentRequirements(input)],
  };
  return challenge;
}

/** Headers of the 402 response: `PAYMENT-REQUIRED` plus the library's `Cache-Control: no-store`. */
export function paymentRequiredHeaders(challenge: PaymentRequired): Record<string, string> {
  return {
    [PAYMENT_REQUIRED_HEADER]: encodePaymentRequired(challenge),
    "Cache-Control": PAYMENT_REQUIRED_CACHE_CONTROL,
  };
}

/**
 * Converts an amount in the currency's minor units (cents for USD) into the asset's atomic units
 * (USDC: 6 decimals, so 1234 cents → 12 340 000). Refuses a conversion that would lose precision.
 */
export function toAssetAmount(amountMinor: number | bigint, currencyDecimals: number, assetDecimals: number): bigint {
  if (typeof amountMinor === "number" && !Number.isSafeInteger(amountMinor)) {
    throw fail("INVALID_ARGUMENT", "amountMinor must be an integer", { field: "amountMinor" });
  }
  const minor = BigInt(amountMinor);
  if (minor < 0n) throw fail("INVALID_ARGUMENT", "amountMinor must not be negative", { field: "amountMinor" });
  const shift = assetDecimals - currencyDecimals;
  if (shift >= 0) return minor * 10n ** BigInt(shift);
  const divisor = 10n ** BigInt(-shift);
  if (minor % divisor !== 0n) {
    throw fail("INVALID_ARGUMENT", "the amount has more precision than the asset", { field: "amountMinor" });
  }
  return minor / divisor;
}

// ---------------------------------------------------------------------------------------------------------------
// Header codecs (library encoders; decoders with shape checks)

export function encodePaymentRequired(challenge: PaymentRequired): string {
  return encodePaymentRequiredHeader(challenge);
}

function decodeWith<T>(header: string, name: string, decode: (h: string) => unknown, parse: (raw: unknown) => ParseResult<T>): T {
  let raw: unknown;
  try {
    raw = decode(header.trim());
  } catch {
    throw fail("validation_error", `${name} header is not base64-encoded JSON`, { field: name });
  }
  const parsed = parse(raw);
  if (!parsed.ok) throw fail("validation_error", `${name} header: ${parsed.error}`, { field: name });
  return parsed.value;
}

export function decodePaymentRequired(header: string): PaymentRequired {
  return decodeWith(header, PAYMENT_REQUIRED_HEADER, decodePaymentRequiredHeader, parsePaymentRequired);
}

export function encodePaymentSignature(payload: PaymentPayload): string {
  return encodePaymentSignatureHeader(payload);
}

/**
 * Decodes a `PAYMENT-SIGNATURE` (or v1 `X-PAYMENT`: `name`) value into a v2 payload; a v1 payload is refused. A
 * refusal names the header the value came from.
 */
export function decodePaymentSignature(header: string, name: typeof PAYMENT_SIGNATURE_HEADER | typeof X_PAYMENT_HEADER = PAYMENT_SIGNATURE_HEADER): PaymentPayload {
  return decodeWith(header, name, decodePaymentSignatureHeader, parsePaymentPayload);
}

/** The payment header of a request, v2 name first; undefined when the request carries none. */
export function readPaymentHeader(headers: Headers): PaymentPayload | undefined {
  const v2 = headers.get(PAYMENT_SIGNATURE_HEADER);
  if (v2 !== null) return decodePaymentSignature(v2);
  const v1 = headers.get(X_PAYMENT_HEADER);
  // refused in the name the client sent (an X-PAYMENT value was refused as "PAYMENT-SIGNATURE header: …")
  return v1 === null ? undefined : decodePaymentSignature(v1, X_PAYMENT_HEADER);
}

/** `PAYMENT-RESPONSE` value; like the library, drops the facilitator's internal `extensionResponses`. */
export function encodePaymentResponse(settlement: SettleResponse): string {
  return encodePaymentResponseHeader(settlement);
}

export function decodePaymentResponse(header: string): SettleResponse {
  return decodeWith(header, PAYMENT_RESPONSE_HEADER, decodePaymentResponseHeader, parseSettleResponse);
}
