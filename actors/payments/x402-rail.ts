/**
 * The x402 rail: settles one store's leg of a checkout with an EIP-3009 authorization through an allowlisted
 * facilitator, behind the same `PaymentRail` contract as the card rail, so the cart actor's crash-safe flow
 * (intent id committed before the rail is called, idempotent charge, lookup for reconciliation) applies as is.
 *
 * Two halves:
 * - `prepareX402Authorizations` (gateway side, before any cart state moves): the merchant's configuration
 *   (x402-config.ts), the local checks (x402-verify.ts: amount, asset, payTo, network, signature, validity
 *   window, nonce never used) and the facilitator's /verify. Each passing payload is stored as a prepared
 *   authorization (`x402_authorizations`) whose id is the leg's `paymentToken` ("x402:<token id>").
 * - `X402Rail.charge(intent)`: records the intent (`x402_intents`, state recorded) BEFORE the facilitator is
 *   called, claims the nonce atomically for that intent (`x402_nonces`), then /settle. A `success` is CAPTURED only
 *   once the chain shows the transfer X402_CAPTURE_CONFIRMATIONS deep when the store has an `rpc_url` (until then
 *   `unknown`, `awaiting_confirmations`: a reorg can still drop it, audit V3); without one, at once. FAILED only when nothing
 *   can have moved: the first send never left (connection refused), the facilitator refused it before any
 *   broadcast, or the chain shows the nonce unused and no longer usable. Anything else (timeout, lost connection,
 *   a refusal that can follow the broadcast) leaves the intent `unknown` and throws UPSTREAM_UNAVAILABLE, which
 *   the cart turns into SETTLEMENT_UNKNOWN. `lookup` reconciles from the chain only (`authorizationState(from,
 *   nonce)` and the `AuthorizationUsed` log); a repeated charge also re-sends the SAME authorization, which can
 *   complete this intent's single transfer but never make a second one (the token refuses a used nonce). So the
 *   agent is never charged twice. An `rpc_url` that cannot be read proves nothing (nothing is re-sent on it, and its
 *   reads back off); a transfer it shows but never deep enough waits. Without a chain (`rpc_url`), or with one that
 *   cannot be read, an intent sent but never decided is `unresolved` once its authorization expired (a transfer never
 *   deep enough too, review RX-1), and one whose re-send the facilitator refused as `nonce_already_used` at once
 *   (spent, but by the transfer or by a cancellation nobody here can tell): the cart escalates it for the merchant.
 */
import { Type as T } from "@sinclair/typebox";
import type { PaymentPayload, PaymentRequirements, SettleResponse } from "@x402/core/types";
import { createPublicClient, encodeEventTopics, http, TransactionReceiptNotFoundError, parseAbi, parseAbiItem, toEventSelector, toHex, type Address, type Hex } from "viem";
import type { Sql } from "../../infra/db.ts";
import type { BootHook } from "../../infra/boot-hooks.ts";
import type { Logger } from "../../infra/log.ts";
import { createFacilitatorClient } from "../../infra/x402/facilitator-client.ts";
import { registerRail } from "./card-rails.ts";
import type { ChargeIntent, ChargeResult, LookupResult, PaymentRail, RefundRequest, RefundResult } from "./rail.ts";
import { ActorError, fail } from "../runtime/errors.ts";
import { installWalletRuntime } from "../wallet/index.ts";
import { parseExactEip3009Payload } from "./x402-challenge.ts";
import { facilitatorMayBePrivate, type EffectiveX402Config, type FacilitatorVersion, type X402Policy } from "./x402-config.ts";
import { PgNonceStore } from "./x402-nonces-pg.ts";
import { evmChainIdOf, nonceKey, verifyX402PaymentLocally, type X402VerifyReason } from "./x402-verify.ts";

export const X402_TOKEN_PREFIX = "x402:";

/** Keys of `Services.extras` read on every use, so a running server can be tuned (tests). */
export const EXTRAS_X402_SETTLE_TIMEOUT_MS = "x402.settleTimeoutMs";
export const EXTRAS_X402_VERIFY_TIMEOUT_MS = "x402.verifyTimeoutMs";
export const DEFAULT_SETTLE_TIMEOUT_MS = 15_000;
export const DEFAULT_VERIFY_TIMEOUT_MS = 5_000;
/** Each chain read of a reconciliation (authorizationState, the block height, one window of the log search). */
export const CHAIN_READ_TIMEOUT_MS = 2_000;
/**
 * One look at the chain (chainState: the nonce's state, then the log search or the expiry check), whatever its
 * number of reads: the gateway's ask budget counts looks, not reads.
 */
export const CHAIN_LOOK_TIMEOUT_MS = 4_000;
/** Blocks per `eth_getLogs` of the transaction search (providers commonly cap a range at 1,000 to 10,000 blocks). */
export const LOG_SEARCH_CHUNK_BLOCKS = 1_000n;
/** Windows searched per look, from the intent's recorded height: the transfer is mined before validBefore. */
export const LOG_SEARCH_MAX_CHUNKS = 3;
/**
 * Depth of the block whose timestamp must be past validBefore, and at which the nonce must be unused, before an
 * intent is failed as expired: a shallow reorg cannot bring back a transfer below it.
 */
export const EXPIRY_CONFIRMATIONS = 2n;
/**
 * The reason of an intent whose transfer is on chain (the facilitator's `success`, or its `AuthorizationUsed` log found
 * by a reconciliation) but not yet X402_CAPTURE_CONFIRMATIONS blocks deep (infra/config.ts): a reorg can still drop it,
 * leaving the merchant unpaid and the authorization usable again (audit V3). The intent stays `unknown` with the
 * transaction recorded; the cart answers SETTLEMENT_UNKNOWN and its reconcile reminder looks again. Should the
 * transfer vanish meanwhile, the next look finds the nonce unused and re-sends the same authorization (it can land
 * once), or fails the intent once the chain shows it expired: never paid on a transfer that is gone.
 */
export const AWAITING_CONFIRMATIONS_REASON = "awaiting_confirmations";
/** How long a settle waits, within its own turn, for the transfer to get deep enough before answering SETTLEMENT_UNKNOWN. */
export const EXTRAS_X402_CONFIRM_WAIT_MS = "x402.confirmWaitMs";
export const DEFAULT_CONFIRM_WAIT_MS = 6_000;
/** Between two depth checks of that wait. */
const CONFIRM_POLL_MS = 1_000;
/**
 * Without a chain our clock is the only judge of expiry, and it may run ahead of the chain's: an authorization is
 * expired for us this long after its validBefore (stores without an rpc_url only).
 */
export const EXPIRY_MARGIN_SECONDS = 30;
/**
 * The reason of an intent whose outcome nothing can tell any more: sent, its authorization expired (validBefore +
 * EXPIRY_MARGIN_SECONDS by our clock; + UNREADABLE_ESCALATION_SECONDS for an `rpc_url`), and no chain to read, either
 * none configured or an `rpc_url` that cannot be read (dead, wrong, a lapsed provider key: review RX-1). `lookup` answers it `unresolved` and the cart escalates its
 * order for the merchant (orders.reconciliation `settlement_unknown`); a chain readable again still decides first.
 */
export const UNRESOLVED_REASON = "settlement_unresolvable_without_chain";
/**
 * The reason of an intent whose nonce the chain shows spent while neither its `AuthorizationUsed` nor its
 * `AuthorizationCanceled` log can be read (an RPC that refuses or caps log searches). EIP-3009's authorizationState is
 * true for a used AND for a cancelled authorization, so a spent nonce alone is no proof of payment: a payer who races
 * `cancelAuthorization` after sending would get the goods unpaid. `lookup` answers it `unresolved` (the merchant checks
 * its wallet), and re-reads the chain every time, so a log that becomes readable still decides (review P4).
 */
export const SPENT_UNCONFIRMED_REASON = "nonce_spent_transfer_not_found";
/**
 * The reason of an intent whose re-send the facilitator refused as `nonce_already_used` while there is no `rpc_url` to
 * read: the facilitator, like authorizationState, cannot tell our transfer from the payer's `cancelAuthorization`, so it
 * is no proof of payment either. `lookup` answers it `unresolved` at once (every re-send would get the same answer) and
 * the merchant checks its wallet (review P5).
 */
export const FACILITATOR_NONCE_USED_REASON = "facilitator_nonce_already_used";

/**
 * The reason of an intent whose transfer the chain shows, but never X402_CAPTURE_CONFIRMATIONS deep, once its
 * authorization is past validBefore (+ EXPIRY_MARGIN_SECONDS by our clock) and its depth has not changed for
 * HEAD_STALL_SECONDS: the store's node stopped following the chain (its head no longer moves; review RG MED-2). `lookup` answers it `unresolved` and the merchant checks its wallet (review RX-1).
 * Before that it is looked at again like any transfer awaiting its depth.
 */
export const CONFIRMATIONS_STALLED_REASON = "transfer_not_deep_enough_by_valid_before";

/**
 * How long past validBefore (by our clock) a store's rpc_url must have stayed unreadable before the intent is escalated
 * to the merchant (review RG MED-1). Our clock can run ahead of the chain's and a send can still be in flight, so 30 s
 * (EXPIRY_MARGIN_SECONDS) was no proof that nothing can land: the order just stays pending (503 SETTLEMENT_UNKNOWN)
 * meanwhile, and a chain readable again decides by itself.
 */
export const UNREADABLE_ESCALATION_SECONDS = 600;
/**
 * A transfer on chain but not deep enough is escalated as stalled (CONFIRMATIONS_STALLED_REASON) only once its depth,
 * and so the store's chain head, has not moved for this long (review RG MED-2): a healthy chain that is merely slower
 * than validBefore keeps being looked at and is captured when deep.
 */
export const HEAD_STALL_SECONDS = 120;
/**
 * The merchant's `refund` (release) of an escalated x402 intent with an rpc_url is refused (409) while the chain has not
 * decided it (unreadable, or unused and not yet expired by the chain's clock): a transfer may still land, and a
 * released order reopens the cart for a second payment (review RG MED-1). Past validBefore + this long by our clock no
 * clock skew or send in flight is plausible any more, and the release is allowed without the chain.
 */
export const RELEASE_WITHOUT_CHAIN_SECONDS = 24 * 3600;

type UnresolvedReason = typeof UNRESOLVED_REASON | typeof SPENT_UNCONFIRMED_REASON | typeof FACILITATOR_NONCE_USED_REASON | typeof CONFIRMATIONS_STALLED_REASON;

/**
 * How long the gateway waits for a cart turn that settles x402 legs (legs settle in parallel): the settle deadline
 * plus the chain looks the same turn can make around it (a reconciling turn looks the chain up at most four times:
 * lookup, resume, after a refusal, and the cart's lookup after a throw; each look is bounded by
 * CHAIN_LOOK_TIMEOUT_MS) plus a margin for the database. Longer than the settle deadline, so a slow facilitator gives
 * the agent the documented 503 SETTLEMENT_UNKNOWN, not the caller's own timeout (payments audit B2 F3). A turn that
 * first waits behind another (the session timer's reconcile) can still run past it: the gateway then answers the
 * same 503 itself (x402-checkout.ts, review R4-2). The wait for the transfer's depth after a `success`
 * (confirmWaitMs) is in it too. 41 s with the defaults; the HTTP server's idle timeout is above it
 * (gateway/boot.ts SERVER_IDLE_TIMEOUT_S).
 */
export function x402AskTimeoutMs(timeouts: X402Timeouts): number {
  return timeouts.settleMs + timeouts.confirmWaitMs + 4 * CHAIN_LOOK_TIMEOUT_MS + 4_000;
}

/**
 * Refusals the exact-EVM facilitator (@x402/evm) gives from its verify step, before it broadcasts anything: the
 * authorization is wrong, expired, unfunded, or its simulation fails. Every other `success: false` (the
 * transaction failed or its receipt wait threw, the transfer event did not match, a plain error message) can come
 * after the transfer was broadcast. `nonce_already_used` is left out on purpose: the nonce may be used by our own
 * earlier send; the chain says which.
 */
const REFUSED_BEFORE_BROADCAST: ReadonlySet<string> = new Set([
  "invalid_exact_evm_scheme",
  "invalid_exact_evm_network_mismatch",
  "invalid_exact_evm_missing_eip712_domain",
  "invalid_exact_evm_recipient_mismatch",
  "invalid_exact_evm_signature",
  "invalid_exact_evm_payload_authorization_valid_before",
  "invalid_exact_evm_payload_authorization_valid_after",
  "invalid_exact_evm_authorization_value",
  "invalid_exact_evm_payload_authorization_value_mismatch",
  "invalid_exact_evm_token_name_mismatch",
  "invalid_exact_evm_token_version_mismatch",
  "invalid_exact_evm_eip3009_not_supported",
  "invalid_exact_evm_insufficient_balance",
  "invalid_exact_evm_transaction_simulation_failed",
  "invalid_exact_evm_failed_to_parse_signature",
  "asset_not_deployed_contract",
  "unsupported_payload_type",
  "eip6492_factory_not_allowed",
]);

export function isRefusedBeforeBroadcast(errorReason: string): boolean {
  return REFUSED_BEFORE_BROADCAST.has(errorReason);
}

/**
 * Our own sentence for each refusal reason a facilitator gives (its `invalidReason` / `errorReason`), for the agent's
 * error message. The facilitator's own `invalidMessage` is never passed on: @x402/evm fills it with viem's error
 * text (library version, the contract call's arguments, the payer's signature), about 1.3 KB of another stack's
 * internals (audit V4). It goes to a debug log line only, truncated (FACILITATOR_TEXT_LOG_CHARS).
 */
const REFUSAL_MESSAGES: Readonly<Record<string, string>> = {
  invalid_exact_evm_scheme: "the payment is not for the exact scheme",
  invalid_exact_evm_network_mismatch: "the payment is for another network",
  invalid_exact_evm_missing_eip712_domain: "the payment requirements lack the token's EIP-712 domain",
  invalid_exact_evm_recipient_mismatch: "the authorization pays another address than the merchant's wallet",
  invalid_exact_evm_signature: "the authorization's signature does not match its payer",
  invalid_exact_evm_failed_to_parse_signature: "the authorization's signature cannot be read",
  invalid_exact_evm_payload_authorization_valid_before: "the authorization expires too soon or has expired",
  invalid_exact_evm_payload_authorization_valid_after: "the authorization is not valid yet",
  invalid_exact_evm_authorization_value: "the authorization's amount is not the amount due",
  invalid_exact_evm_payload_authorization_value_mismatch: "the authorization's amount is not the amount due",
  invalid_exact_evm_token_name_mismatch: "the authorization was signed for another token name",
  invalid_exact_evm_token_version_mismatch: "the authorization was signed for another token version",
  invalid_exact_evm_eip3009_not_supported: "the token does not support EIP-3009 transfers",
  invalid_exact_evm_insufficient_balance: "the payer's balance is below the amount",
  invalid_exact_evm_nonce_already_used: "this authorization's nonce has already been used",
  invalid_exact_evm_transaction_simulation_failed: "the token refused the transfer in simulation (balance, nonce or validity)",
  invalid_exact_evm_transaction_failed: "the transfer transaction failed",
  invalid_exact_evm_transfer_event_mismatch: "the transfer on chain does not match the authorization",
  asset_not_deployed_contract: "the asset is not a deployed contract on this network",
  unsupported_payload_type: "the payment payload type is not supported",
  eip6492_factory_not_allowed: "the smart-wallet factory of the signature is not allowed",
  invalid_scheme: "the payment scheme is not supported",
  invalid_network: "the payment's network is not supported",
  invalid_payload: "the payment payload is malformed",
  invalid_payment_requirements: "the payment requirements were refused",
  // Our own generic codes, for a facilitator answer without a reason code (facilitatorReasonCode).
  facilitator_refused: "the facilitator refused the payment",
  verify_failed: "the facilitator refused the payment",
  settle_failed: "the facilitator could not settle the payment",
};

/** How much of a facilitator's own refusal text a debug log line keeps. */
export const FACILITATOR_TEXT_LOG_CHARS = 300;

/**
 * What a facilitator's reason (`invalidReason` / `errorReason`) must look like to be used as one: a code. Anything
 * else (@x402/evm's v1 settle puts viem's error text in `errorReason`, and any allowlisted facilitator can send free
 * text) is replaced by a generic code before it reaches the agent, an info or warn log, or the database; the raw
 * text goes only to a debug line, truncated (review RX-4).
 */
const REASON_CODE = /^[a-z0-9_]{1,80}$/;

/** The facilitator's reason when it is a code, else `fallback` (`facilitator_refused`, `settle_failed`). */
export function facilitatorReasonCode(raw: string | undefined | null, fallback: string): string {
  return raw != null && REASON_CODE.test(raw) ? raw : fallback;
}

/** The agent-facing sentence for a facilitator refusal reason; an unknown code is named, never explained by its text. */
export function refusalMessage(reason: string): string {
  return REFUSAL_MESSAGES[reason] ?? (REASON_CODE.test(reason) ? `the facilitator refused the payment (${reason})` : "the facilitator refused the payment");
}

export interface X402Timeouts {
  settleMs: number;
  verifyMs: number;
  /** The in-turn wait for the transfer's depth (EXTRAS_X402_CONFIRM_WAIT_MS). */
  confirmWaitMs: number;
}

// ---------------------------------------------------------------------------------------------------------------
// Facilitator wire versions

const V1_NETWORK_NAMES: Record<string, string> = { "eip155:8453": "base", "eip155:84532": "base-sepolia" };

/**
 * The bodies for the facilitator in its wire version. v1 carries the same EIP-3009 authorization (same
 * signature, same EIP-712 domain) under v1 field names: a named network, `maxAmountRequired`, a resource URL.
 */
export function facilitatorBodies(
  version: FacilitatorVersion,
  payload: PaymentPayload,
  requirements: PaymentRequirements,
  resourceUrl: string,
): { payload: PaymentPayload; requirements: PaymentRequirements } {
  if (version === "v2") return { payload, requirements };
  const network = V1_NETWORK_NAMES[requirements.network];
  if (!network) throw fail("STORE_NOT_CONFIGURED", `facilitator v1 has no name for network ${requirements.network}`, { network: requirements.network });
  const v1Requirements = {
    scheme: requirements.scheme,
    network,
    maxAmountRequired: requirements.amount,
    resource: resourceUrl,
    description: "agent checkout",
    mimeType: "application/json",
    outputSchema: {},
    payTo: requirements.payTo,
    maxTimeoutSeconds: requirements.maxTimeoutSeconds,
    asset: requirements.asset,
    extra: requirements.extra,
  };
  const v1Payload = { x402Version: 1, scheme: requirements.scheme, network, payload: payload.payload };
  // The HTTP client only serialises these; their v1 shapes are what a v1 facilitator reads.
  return { payload: v1Payload as unknown as PaymentPayload, requirements: v1Requirements as unknown as PaymentRequirements };
}

// ---------------------------------------------------------------------------------------------------------------
// Prepared authorizations (gateway side)

export interface LegToPay {
  storeId: string;
  amountMinor: number;
  currency: string;
  requirements: PaymentRequirements;
  config: EffectiveX402Config;
  payload: PaymentPayload;
}

export type PrepareOutcome =
  | { ok: true; tokenId: string; prepared: string[]; refused: { storeId: string; reason: string; message: string }[] }
  | { ok: false; storeId: string; reason: X402VerifyReason | string; message: string; payer?: string };

/**
 * Local checks for every leg first (nothing is sent anywhere if one payload is wrong, replayed or forged), then
 * the facilitator's /verify per leg. A leg the facilitator refuses (e.g. insufficient funds) is left out so the
 * other stores can still settle (a 207); a transport failure throws (retryable, nothing written).
 */
export async function prepareX402Authorizations(
  sql: Sql,
  input: { cartId: string; agentKeyId: string; resourceUrl: string; legs: LegToPay[]; timeouts: X402Timeouts; nowSeconds?: number; log?: Logger },
): Promise<PrepareOutcome> {
  const nonces = new PgNonceStore(sql);
  const seenNonces = new Set<string>();
  for (const leg of input.legs) {
    const local = await verifyX402PaymentLocally(leg.payload, leg.requirements, { nonces, remember: false, nowSeconds: input.nowSeconds });
    if (!local.ok) return { ok: false, storeId: leg.storeId, reason: local.reason, message: local.message, ...(local.payer ? { payer: local.payer } : {}) };
    // One authorization cannot pay two legs.
    if (seenNonces.has(local.nonceKey)) return { ok: false, storeId: leg.storeId, reason: "nonce_reused", message: "the same authorization was given for two stores" };
    seenNonces.add(local.nonceKey);
  }
  const refused: { storeId: string; reason: string; message: string }[] = [];
  const passed: LegToPay[] = [];
  for (const leg of input.legs) {
    const client = createFacilitatorClient({ url: leg.config.facilitatorUrl, timeoutMs: input.timeouts.verifyMs, allowPrivate: leg.config.facilitatorAllowPrivate, log: input.log });
    const wire = facilitatorBodies(leg.config.facilitatorVersion, leg.payload, leg.requirements, input.resourceUrl);
    const verified = await client.verify(wire.payload, wire.requirements);
    if (verified.isValid) {
      passed.push(leg);
      continue;
    }
    const reason = verified.invalidReason == null ? "verify_failed" : facilitatorReasonCode(verified.invalidReason, "facilitator_refused");
    if (verified.invalidMessage || reason !== verified.invalidReason) {
      input.log?.debug("x402 facilitator refusal text", {
        storeId: leg.storeId,
        reason,
        raw: verified.invalidReason?.slice(0, FACILITATOR_TEXT_LOG_CHARS),
        text: verified.invalidMessage?.slice(0, FACILITATOR_TEXT_LOG_CHARS),
      });
    }
    refused.push({ storeId: leg.storeId, reason, message: refusalMessage(reason) });
  }
  if (passed.length === 0) {
    const first = refused[0]!;
    return { ok: false, storeId: first.storeId, reason: first.reason, message: first.message };
  }
  const tokenId = crypto.randomUUID();
  for (const leg of passed) {
    await sql`
      INSERT INTO x402_authorizations (token_id, store_id, cart_id, agent_key_id, amount_minor, currency, payload, requirements,
                                       facilitator_url, facilitator_version, rpc_url, facilitator_allow_private)
      VALUES (${tokenId}, ${leg.storeId}, ${input.cartId}, ${input.agentKeyId}, ${leg.amountMinor}, ${leg.currency},
              ${sql.json(leg.payload as never)}, ${sql.json(leg.requirements as never)}, ${leg.config.facilitatorUrl},
              ${leg.config.facilitatorVersion}, ${leg.config.rpcUrl}, ${leg.config.facilitatorAllowPrivate})`;
  }
  return { ok: true, tokenId, prepared: passed.map((l) => l.storeId), refused };
}

export interface IntentView {
  intentId: string;
  storeId: string;
  state: string;
  transaction: string | null;
  errorReason: string | null;
  network: string;
  payer: string;
}

/** The rail's record of the intents made from one prepared authorization (for the checkout's answer). */
export async function intentsOfToken(sql: Sql, tokenId: string): Promise<IntentView[]> {
  const rows = await sql<{ intent_id: string; store_id: string; state: string; transaction_hash: string | null; error_reason: string | null; network: string; payer: string }[]>`
    SELECT intent_id, store_id, state, transaction_hash, error_reason, network, payer FROM x402_intents WHERE token_id = ${tokenId}`;
  return rows.map((r) => ({ intentId: r.intent_id, storeId: r.store_id, state: r.state, transaction: r.transaction_hash, errorReason: r.error_reason, network: r.network, payer: r.payer }));
}

/** The captured intents of a cart (a reconciled or repeated checkout reports its transactions too). */
export async function capturedIntentsOfCart(sql: Sql, cartId: string): Promise<IntentView[]> {
  const rows = await sql<{ intent_id: string; store_id: string; state: string; transaction_hash: string | null; error_reason: string | null; network: string; payer: string }[]>`
    SELECT intent_id, store_id, state, transaction_hash, error_reason, network, payer FROM x402_intents
    WHERE cart_id = ${cartId} AND state = 'captured' ORDER BY updated_at`;
  return rows.map((r) => ({ intentId: r.intent_id, storeId: r.store_id, state: r.state, transaction: r.transaction_hash, errorReason: r.error_reason, network: r.network, payer: r.payer }));
}

// ---------------------------------------------------------------------------------------------------------------
// The rail

interface AuthorizationRow {
  cart_id: string;
  amount_minor: string;
  currency: string;
  payload: PaymentPayload;
  requirements: PaymentRequirements;
  facilitator_url: string;
  facilitator_version: FacilitatorVersion;
  rpc_url: string | null;
  /** The gateway's decision at /verify (migration 0102): the facilitator may be on a private address. */
  facilitator_allow_private: boolean;
}

interface IntentRow {
  intent_id: string;
  store_id: string;
  amount_minor: string;
  currency: string;
  network: string;
  asset: string;
  pay_to: string;
  payer: string;
  nonce: string;
  valid_before: string;
  facilitator_url: string;
  facilitator_version: FacilitatorVersion;
  payload: PaymentPayload;
  requirements: PaymentRequirements;
  rpc_url: string | null;
  /** The gateway's decision at /verify, by its policy (migration 0102): the facilitator may be on a private address. */
  facilitator_allow_private: boolean;
  /** The chain's height before the first /settle (migration 0072); the log search starts there. */
  from_block: string | null;
  state: "recorded" | "settling" | "captured" | "failed" | "unknown";
  transaction_hash: string | null;
  error_reason: string | null;
}

const EIP3009_ABI = parseAbi(["function authorizationState(address authorizer, bytes32 nonce) view returns (bool)"]);
const AUTHORIZATION_USED = parseAbiItem("event AuthorizationUsed(address indexed authorizer, bytes32 indexed nonce)");
const AUTHORIZATION_CANCELED = parseAbiItem("event AuthorizationCanceled(address indexed authorizer, bytes32 indexed nonce)");

export class X402Rail implements PaymentRail {
  readonly name = "x402";
  private readonly nonces: PgNonceStore;
  /**
   * Per intent whose store's rpc_url could not be read at its last look (this process only): how many looks in a row
   * failed and when the next one may read again. The cart's reminder comes every 5 s and each of its turns looks
   * twice or more (lookup, resume), up to CHAIN_LOOK_TIMEOUT_MS each against an RPC that hangs; between two allowed
   * looks the rail answers "unreadable" from memory, so the chain is read 5 s after the first failure, then after 10,
   * 20, … at most 10 minutes (the documented reconcile backoff, review RX-1). Past validBefore every look reads (it
   * decides the escalation). Forgotten as soon as a look reads the chain; a restart only starts the series again.
   */
  private readonly unreadableLooks = new Map<string, { failed: number; nextAtMs: number }>();
  /**
   * Per intent whose transfer is on chain but not deep enough (this process only): its depth at the last look and since
   * when (our clock) it has been that depth. The head stalled only when the depth did not change for HEAD_STALL_SECONDS
   * (review RG MED-2); a restart starts the watch again, which only delays an escalation.
   */
  private readonly depthSeen = new Map<string, { depth: bigint; sinceMs: number }>();

  constructor(
    private readonly sql: Sql,
    private readonly timeouts: () => X402Timeouts,
    private readonly log?: Logger,
    private readonly nowMs: () => number = Date.now,
    /** Blocks, the transfer's own included, before an x402 transfer counts as captured (stores with an rpc_url). */
    private readonly captureConfirmations: bigint = 1n,
    /**
     * X402_FACILITATOR_ALLOWLIST and ALLOW_PRIVATE_URLS (never in production) of this actor host, read at each /settle:
     * which facilitators may be on a private address (`facilitatorMayBePrivate`), besides the intent's own recorded
     * decision (the gateway's at /verify, `facilitator_allow_private`). By default none.
     */
    private readonly facilitatorPolicy: () => Pick<X402Policy, "allowlist" | "allowPrivate"> = () => ({ allowlist: "", allowPrivate: false }),
  ) {
    this.nonces = new PgNonceStore(sql);
  }

  async charge(intent: ChargeIntent): Promise<ChargeResult> {
    const existing = await this.load(intent.intentId);
    if (existing) return this.resume(existing);
    const failed = (reason: string): ChargeResult => ({ status: "failed", intentId: intent.intentId, code: "PAYMENT_FAILED_ROLLED_BACK", reason });
    if (!intent.paymentToken.startsWith(X402_TOKEN_PREFIX)) return failed("no_x402_authorization");
    const tokenId = intent.paymentToken.slice(X402_TOKEN_PREFIX.length);
    const [auth] = await this.sql<AuthorizationRow[]>`
      SELECT cart_id, amount_minor, currency, payload, requirements, facilitator_url, facilitator_version, rpc_url, facilitator_allow_private
      FROM x402_authorizations WHERE token_id = ${tokenId} AND store_id = ${intent.storeId}`;
    if (!auth) return failed("no_x402_authorization");
    if (Number(auth.amount_minor) !== intent.amountMinor || auth.currency !== intent.currency) return failed("amount_changed_since_authorization");
    const inner = parseExactEip3009Payload(auth.payload.payload);
    const chainId = evmChainIdOf(auth.requirements.network);
    if (!inner.ok || chainId === undefined) return failed("malformed");
    const { authorization } = inner.value;
    // Before anything is sent: the transfer, if any, is in a later block (the reconciliation searches from here).
    const fromBlock = await chainHeight(auth.rpc_url);
    const inserted = await this.sql<{ intent_id: string }[]>`
      INSERT INTO x402_intents (intent_id, store_id, amount_minor, currency, network, asset, pay_to, payer, nonce, valid_before,
                                facilitator_url, facilitator_version, payload, requirements, rpc_url, cart_id, token_id, state, from_block,
                                facilitator_allow_private)
      VALUES (${intent.intentId}, ${intent.storeId}, ${intent.amountMinor}, ${intent.currency}, ${auth.requirements.network},
              ${auth.requirements.asset}, ${auth.requirements.payTo}, ${authorization.from}, ${authorization.nonce},
              ${authorization.validBefore}, ${auth.facilitator_url}, ${auth.facilitator_version}, ${this.sql.json(auth.payload as never)},
              ${this.sql.json(auth.requirements as never)}, ${auth.rpc_url}, ${auth.cart_id}, ${tokenId}, 'recorded',
              ${fromBlock === null ? null : String(fromBlock)}, ${auth.facilitator_allow_private})
      ON CONFLICT DO NOTHING RETURNING intent_id`;
    if (inserted.length === 0) {
      // Either this intent raced itself (then resume it) or the authorization already paid another intent.
      const again = await this.load(intent.intentId);
      if (again) return this.resume(again);
      return failed("nonce_reused");
    }
    const key = nonceKey(chainId, auth.requirements.asset, authorization.from, authorization.nonce);
    if (!(await this.nonces.claim(key, intent.intentId))) {
      await this.finish(intent.intentId, "failed", null, "nonce_reused");
      return failed("nonce_reused");
    }
    const row = (await this.load(intent.intentId)) as IntentRow;
    return this.settle(row, key);
  }

  /**
   * Reconciliation's question, answered from what is recorded and from the chain only: it never sends anything to
   * the facilitator (the PaymentRail contract: lookup never moves money). `unknown` (not on chain, still usable)
   * makes the reconciler call `charge` with the same intent id, which re-sends the SAME authorization.
   */
  async lookup(intentId: string): Promise<LookupResult> {
    let row = await this.load(intentId);
    if (!row) return { status: "unknown", intentId };
    // A captured transfer gone from the chain is a reorg like a shallow one (review RX-2): back to awaiting its depth,
    // so the chain decides below (found again, re-sent while the authorization is valid, failed once it expired).
    if (row.state === "captured" && (await this.captureVanished(row))) row = { ...row, state: "unknown", error_reason: AWAITING_CONFIRMATIONS_REASON };
    if (row.state === "captured" || row.state === "failed") return this.resume(row);
    const decided = await this.decideOnChain(row);
    if (decided === SPENT_UNCONFIRMED) return this.unresolved(row, SPENT_UNCONFIRMED_REASON);
    // The two ways the chain can leave a sent payment undecided for good (review RX-1): the transfer on chain but never
    // deep enough (a node whose head stopped), or the rpc_url unreadable (dead, wrong, a lapsed provider key). Looked at
    // again while the authorization may still land; past validBefore (+ the margins) the merchant is asked to decide from
    // its wallet, with the facilitator's transaction as evidence, and the chain is still asked (the cart's reminder).
    if (decided === CONFIRMING) return this.expired(row) && this.headStalled(row) ? this.unresolved(row, CONFIRMATIONS_STALLED_REASON) : { status: "unknown", intentId };
    if (decided === UNREADABLE) {
      // Our clock alone, and it may run ahead of the chain's with a send still in flight: a wide margin (review RG MED-1).
      if (!this.pastValidBefore(row, UNREADABLE_ESCALATION_SECONDS)) return { status: "unknown", intentId };
      this.unreadableLooks.delete(row.intent_id); // escalated: the cart stops asking
      return this.unresolved(row, UNRESOLVED_REASON);
    }
    if (decided) return decided;
    if (this.facilitatorSaidUsed(row)) return this.unresolved(row, FACILITATOR_NONCE_USED_REASON);
    if (this.expiredWithoutChain(row)) return this.unresolved(row, UNRESOLVED_REASON);
    return { status: "unknown", intentId };
  }

  /**
   * The merchant's decision on an intent `lookup` reported `unresolved` (docs/x402.md): it found the transfer in its
   * wallet (captured, reference `x402:<nonce>`) or released the order (failed: nothing captured as far as our records
   * go). Only a non-final intent moves, so a repeated decision changes nothing.
   */
  async recordResolution(intentId: string, outcome: "captured" | "released"): Promise<void> {
    const row = await this.load(intentId);
    if (!row) return;
    if (outcome === "released") await this.assertReleasable(row);
    if (outcome === "captured") await this.finish(intentId, "captured", `x402:${row.nonce}`, "accepted_by_merchant");
    else await this.finish(intentId, "failed", null, "released_by_merchant");
    this.log?.info("x402 unresolved settlement decided by the merchant", { intentId, outcome });
  }

  /**
   * A release (the merchant's `refund` of an escalated intent) is refused with 409 while the store's chain has not
   * decided the authorization (review RG MED-1): its rpc_url unreadable, or its nonce unused and not yet expired by the
   * chain's clock. A transfer may still land then, and the released order would reopen the cart for a second payment.
   * It is refused too when the chain shows this payment's transfer, deep or not yet (review RAP MED-1): the money
   * landed, so the order is the merchant's to accept (then refund as any x402 refund, from its wallet), never to
   * release for the agent to pay again. Allowed when the chain shows the authorization expired unused or cancelled,
   * for a store without an rpc_url (no chain to wait for: the documented rule), when the chain shows the nonce spent
   * by no readable transfer (the merchant checks its wallet), and, with the chain still unreadable, past
   * validBefore + RELEASE_WITHOUT_CHAIN_SECONDS.
   */
  private async assertReleasable(row: IntentRow): Promise<void> {
    if (row.state === "failed") return;
    if (row.state === "captured") throw chainShowsTransfer(row, row.transaction_hash);
    if (!row.rpc_url) return;
    if (row.error_reason !== UNRESOLVED_REASON && row.error_reason !== CONFIRMATIONS_STALLED_REASON) return;
    const decided = await this.decideOnChain(row);
    if (decided === CONFIRMING || (typeof decided === "object" && decided !== null && decided.status === "captured")) {
      const [now] = await this.sql<{ transaction_hash: string | null }[]>`SELECT transaction_hash FROM x402_intents WHERE intent_id = ${row.intent_id}`;
      throw chainShowsTransfer(row, now?.transaction_hash ?? row.transaction_hash);
    }
    if (decided !== UNREADABLE && decided !== null) return;
    if (this.pastValidBefore(row, RELEASE_WITHOUT_CHAIN_SECONDS)) return;
    throw fail(
      "conflict",
      "The store's chain has not shown this payment's authorization expired unused: a transfer may still land until it can be checked, so the order cannot be released yet. Accept it if the transfer is in the wallet; otherwise fix the store's rpc_url and retry the refund (the chain then decides by itself).",
      {
        reason: "chain_outcome_unproven",
        chain: decided === UNREADABLE ? "unreadable" : "authorization_still_usable",
        payment_reference: `x402:${row.nonce}`,
        release_allowed_after: new Date((Number(row.valid_before) + RELEASE_WITHOUT_CHAIN_SECONDS) * 1000).toISOString(),
      },
    );
  }

  async refund(request: RefundRequest): Promise<RefundResult> {
    // An on-chain transfer cannot be pulled back by the service; the merchant pays a refund from its wallet.
    return { status: "failed", refundId: request.refundId, reason: "x402 refunds are paid by the merchant from its wallet" };
  }

  private async load(intentId: string): Promise<IntentRow | undefined> {
    // The store's rpc_url as it is now when it names the intent's network: a merchant who fixes a dead rpc_url lets
    // the chain decide its escalated intents (review RG MED-1); else the one recorded at payment.
    const [row] = await this.sql<IntentRow[]>`
      SELECT i.intent_id, i.store_id, i.amount_minor, i.currency, i.network, i.asset, i.pay_to, i.payer, i.nonce, i.valid_before, i.facilitator_url,
             i.facilitator_version, i.payload, i.requirements, i.facilitator_allow_private,
             COALESCE((SELECT c.rpc_url FROM store_x402_config c WHERE c.store_slug = i.store_id AND c.network = i.network), i.rpc_url) AS rpc_url,
             i.from_block, i.state, i.transaction_hash, i.error_reason
      FROM x402_intents i WHERE i.intent_id = ${intentId}`;
    return row;
  }

  private async finish(intentId: string, state: IntentRow["state"], tx: string | null, reason: string | null): Promise<void> {
    await this.sql`UPDATE x402_intents SET state = ${state}, transaction_hash = COALESCE(${tx}, transaction_hash), error_reason = ${reason}, updated_at = now()
                   WHERE intent_id = ${intentId} AND state NOT IN ('captured', 'failed')`;
  }

  private captured(row: IntentRow, tx: string): ChargeResult {
    return { status: "captured", intentId: row.intent_id, captureRef: tx, amountMinor: Number(row.amount_minor), currency: row.currency, simulated: false };
  }

  /** An intent seen before: a final state answers at once; anything else is reconciled. */
  private async resume(row: IntentRow): Promise<ChargeResult> {
    if (row.state === "captured") return this.captured(row, row.transaction_hash ?? `x402:${row.nonce}`);
    if (row.state === "failed") return { status: "failed", intentId: row.intent_id, code: "PAYMENT_FAILED_ROLLED_BACK", reason: row.error_reason ?? "failed" };
    const decided = await this.decideOnChain(row);
    // Spent, but not provably by a transfer: never re-sent (the token refuses it), never paid; the cart's lookup after
    // this throw escalates it for the merchant.
    if (decided === SPENT_UNCONFIRMED) return this.unknown(row, SPENT_UNCONFIRMED_REASON);
    // On chain, not deep yet: nothing to re-send (the token would refuse the used nonce); the reminder looks again.
    if (decided === CONFIRMING) return this.unknown(row, AWAITING_CONFIRMATIONS_REASON);
    // The chain could not be read: that is not "the nonce is unused again", so nothing is re-sent (review RX-1; it used
    // to be re-sent at every reminder with a false reorg warning). The reason is kept; lookup escalates past
    // validBefore. An intent never sent (`recorded`) still gets its first send.
    if (decided === UNREADABLE && row.state !== "recorded") return this.unknown(row, row.error_reason ?? "settle_outcome_unknown");
    if (decided && decided !== UNREADABLE) return decided;
    if (row.error_reason === AWAITING_CONFIRMATIONS_REASON && row.transaction_hash) {
      // The facilitator's transfer was seen (or reported) and its nonce is unused again: a reorg dropped it. The same
      // authorization is sent again below; it can land once, and is never counted paid until it is deep.
      this.log?.warn("x402 transfer no longer on chain before it was deep enough (reorg); re-sending the same authorization", {
        intentId: row.intent_id,
        transaction: row.transaction_hash,
      });
    }
    // The facilitator already answered a re-send `nonce_already_used`: another would only say it again.
    if (this.facilitatorSaidUsed(row)) return this.unknown(row, FACILITATOR_NONCE_USED_REASON);
    if (this.expiredWithoutChain(row)) {
      // A re-send can neither settle an expired authorization nor tell whether it was used (the facilitator refuses
      // it as expired before it looks at the nonce): only the merchant can say (lookup answers `unresolved`).
      const never = await this.neverSent(row);
      if (never) return never;
      return this.unknown(row, UNRESOLVED_REASON);
    }
    const chainId = evmChainIdOf(row.network) as number;
    return this.settle(row, nonceKey(chainId, row.asset, row.payer, row.nonce));
  }

  /**
   * What the chain proves about an intent not final yet: its nonce used by a transfer (the `AuthorizationUsed` log
   * found) → captured with that transaction; never used and no longer usable (cancelled by the payer: the
   * `AuthorizationCanceled` log, or unused at a confirmed block past `validBefore` by the chain's own clock) → failed.
   * CONFIRMING when the transfer's log is found but fewer than X402_CAPTURE_CONFIRMATIONS blocks deep (audit V3).
   * SPENT_UNCONFIRMED when the nonce is spent but neither log can be read: used or cancelled, nobody can say, so it is
   * neither paid nor failed (the caller escalates it; review P4). UNREADABLE when the store's rpc_url could not be
   * read (nothing may be re-sent on that; review RX-1). null when the chain, read, proves nothing (the nonce unused and
   * still usable), or there is no chain to ask.
   */
  private async decideOnChain(row: IntentRow): Promise<ChargeResult | typeof SPENT_UNCONFIRMED | typeof CONFIRMING | typeof UNREADABLE | null> {
    const backoff = this.unreadableLooks.get(row.intent_id);
    if (backoff && this.nowMs() < backoff.nextAtMs && !this.expired(row)) return UNREADABLE;
    const onChain = await this.chainState(row);
    if (onChain === UNREADABLE) {
      const failed = (backoff?.failed ?? 0) + 1;
      this.unreadableLooks.set(row.intent_id, { failed, nextAtMs: this.nowMs() + unreadableBackoffMs(failed) });
      return UNREADABLE;
    }
    this.unreadableLooks.delete(row.intent_id);
    if (!onChain || !onChain.used || !onChain.transaction || onChain.confirmations >= this.captureConfirmations) this.depthSeen.delete(row.intent_id);
    if (!onChain) return null;
    if (onChain.used) {
      if (!onChain.transaction) {
        if (row.error_reason !== SPENT_UNCONFIRMED_REASON) {
          await this.finish(row.intent_id, "unknown", null, SPENT_UNCONFIRMED_REASON);
          this.log?.warn("x402 nonce spent but neither its transfer nor its cancellation can be read; escalated to the merchant", { intentId: row.intent_id });
        }
        return SPENT_UNCONFIRMED;
      }
      const tx = onChain.transaction;
      if (onChain.confirmations < this.captureConfirmations) {
        // Used by this transfer, but a reorg can still drop it (audit V3): recorded, not captured; looked at again.
        if (row.error_reason !== AWAITING_CONFIRMATIONS_REASON || row.transaction_hash !== tx) {
          await this.finish(row.intent_id, "unknown", tx, AWAITING_CONFIRMATIONS_REASON);
        }
        const seen = this.depthSeen.get(row.intent_id);
        if (!seen || seen.depth !== onChain.confirmations) this.depthSeen.set(row.intent_id, { depth: onChain.confirmations, sinceMs: this.nowMs() });
        return CONFIRMING;
      }
      await this.finish(row.intent_id, "captured", tx, null);
      this.log?.info("x402 settlement reconciled on chain", { intentId: row.intent_id, transaction: tx });
      return this.captured(row, tx);
    }
    const reason = onChain.cancelled
      ? "authorization_canceled"
      : onChain.expired
        ? "authorization_expired_unsettled"
        : null;
    if (!reason) return null;
    // Nothing moved under this authorization, and nothing can move any more.
    await this.finish(row.intent_id, "failed", null, reason);
    return { status: "failed", intentId: row.intent_id, code: "PAYMENT_FAILED_ROLLED_BACK", reason };
  }

  /**
   * A captured intent whose transaction the chain no longer has (receipt absent or not this transfer), read within one
   * look; its state goes back to `unknown`, awaiting confirmations with the transaction kept, like a transfer a shallow
   * reorg dropped: while the authorization is valid it can land again (the dropped transaction returns to the mempool,
   * or the same authorization is re-sent), so it is never handed to the merchant as "nothing paid" (review RX-2). An
   * unreadable chain, a store without an rpc_url, or a merchant-accepted capture (`x402:<nonce>`) proves nothing: false.
   */
  private async captureVanished(row: IntentRow): Promise<boolean> {
    if (!row.rpc_url || !row.transaction_hash?.startsWith("0x")) return false;
    const client = chainClient(row.rpc_url);
    const proof = await withinLook(readReceipt(client, row, row.transaction_hash)).catch(() => ({ kind: "unreadable" as const }));
    if (proof.kind !== "absent") return false;
    await this.sql`UPDATE x402_intents SET state = 'unknown', error_reason = ${AWAITING_CONFIRMATIONS_REASON}, updated_at = now()
                   WHERE intent_id = ${row.intent_id} AND state = 'captured'`;
    this.log?.warn("x402 captured transaction no longer on chain (reorg); reconciled again like an unconfirmed transfer", { intentId: row.intent_id, transaction: row.transaction_hash });
    return true;
  }

  /**
   * decideOnChain, repeated while the transfer is on chain but not deep enough, for at most the confirm wait
   * (EXTRAS_X402_CONFIRM_WAIT_MS): on a chain with short blocks the agent gets its 200 in the same call; past the
   * wait it gets SETTLEMENT_UNKNOWN and the reconcile reminder finishes the job.
   */
  private async decideWhenDeep(row: IntentRow): Promise<Awaited<ReturnType<X402Rail["decideOnChain"]>>> {
    const until = Date.now() + this.timeouts().confirmWaitMs;
    for (;;) {
      const decided = await this.decideOnChain(row);
      if (decided !== CONFIRMING || Date.now() + CONFIRM_POLL_MS > until) return decided;
      await Bun.sleep(CONFIRM_POLL_MS);
    }
  }

  /** Past `validBefore` (with the clock-skew margin) by our clock: the judge only when there is no chain to ask. */
  private expired(row: IntentRow): boolean {
    return this.pastValidBefore(row, EXPIRY_MARGIN_SECONDS);
  }

  private pastValidBefore(row: IntentRow, marginSeconds: number): boolean {
    return Math.floor(this.nowMs() / 1000) >= Number(row.valid_before) + marginSeconds;
  }

  /** The transfer's depth (so the store's chain head) has not moved for HEAD_STALL_SECONDS by our clock (review RG MED-2). */
  private headStalled(row: IntentRow): boolean {
    const seen = this.depthSeen.get(row.intent_id);
    return seen !== undefined && this.nowMs() - seen.sinceMs >= HEAD_STALL_SECONDS * 1000;
  }

  /**
   * No chain to ask and the authorization expired: if it was ever sent, nothing will tell whether it moved money
   * (the facilitator refuses an expired authorization before it looks at the nonce), and nothing can move any more.
   */
  private expiredWithoutChain(row: IntentRow): boolean {
    return !row.rpc_url && this.expired(row);
  }

  /**
   * No chain to ask, and the facilitator refused a re-send as `nonce_already_used`: spent, by our transfer or by the
   * payer's cancelAuthorization, nobody here can say (with an rpc_url the chain's events decide instead).
   */
  private facilitatorSaidUsed(row: IntentRow): boolean {
    return !row.rpc_url && row.error_reason === FACILITATOR_NONCE_USED_REASON;
  }

  /** An intent never sent (state `recorded`) whose authorization expired: nothing moved and nothing can. */
  private async neverSent(row: IntentRow): Promise<ChargeResult | null> {
    if (row.state !== "recorded") return null;
    await this.finish(row.intent_id, "failed", null, "authorization_expired_unsettled");
    return { status: "failed", intentId: row.intent_id, code: "PAYMENT_FAILED_ROLLED_BACK", reason: "authorization_expired_unsettled" };
  }

  /**
   * An intent the rail cannot decide, handed to the merchant (the cart flags the order; docs/x402.md), who looks for
   * the transfer in its wallet: sent at least once, expired, with no chain to read or an rpc_url that cannot be read
   * (UNRESOLVED_REASON); or its transfer on chain but never deep enough by then (CONFIRMATIONS_STALLED_REASON); or its nonce
   * spent while neither its transfer nor its cancellation can be read (SPENT_UNCONFIRMED_REASON, recorded by
   * decideOnChain); or, with no chain to read, its re-send refused by the facilitator as `nonce_already_used`
   * (FACILITATOR_NONCE_USED_REASON, recorded by settle). The intent stays `unknown` with the reason until the
   * merchant's decision (`recordResolution`).
   */
  private async unresolved(row: IntentRow, reason: UnresolvedReason): Promise<LookupResult> {
    if (reason === UNRESOLVED_REASON) {
      const never = await this.neverSent(row);
      if (never) return never;
      if (row.error_reason !== UNRESOLVED_REASON) {
        await this.finish(row.intent_id, "unknown", null, UNRESOLVED_REASON);
        this.log?.warn(
          row.rpc_url
            ? "x402 settlement outcome cannot be determined: the store's rpc_url could not be read by validBefore + 10 min; escalated to the merchant"
            : "x402 settlement outcome cannot be determined without a chain; escalated to the merchant",
          { intentId: row.intent_id, transaction: row.transaction_hash },
        );
      }
    }
    return {
      status: "unresolved",
      intentId: row.intent_id,
      reason,
      reference: `x402:${row.nonce}`,
      evidence: {
        network: row.network,
        asset: row.asset,
        pay_to: row.pay_to,
        payer: row.payer,
        amount: String(row.requirements.amount),
        nonce: row.nonce,
        valid_before: String(row.valid_before),
        // The transaction the facilitator reported (or the chain showed), when there is one: where to look first.
        ...(row.transaction_hash?.startsWith("0x") ? { transaction_hash: row.transaction_hash } : {}),
        check:
          reason === FACILITATOR_NONCE_USED_REASON
            ? "The facilitator reports this authorization's nonce already used, but not whether by the transfer or by the payer's cancelAuthorization (no chain is configured to tell). Look in the pay_to wallet for an incoming transfer of `amount` of `asset` from `payer` (the token's AuthorizationUsed event with this nonce): found, accept; an AuthorizationCanceled event instead, or no such transfer, refund (nothing was paid)."
            : reason === CONFIRMATIONS_STALLED_REASON
            ? "The store's rpc_url shows this payment's transfer (`transaction_hash`) on chain but never deep enough to count: its node's head has not moved for minutes (it seems to have stopped following the chain). Look in the pay_to wallet for an incoming transfer of `amount` of `asset` from `payer` (the token's AuthorizationUsed event with this nonce): found, accept. A refund (release) is refused until the store's chain shows the authorization expired unused, since a transfer may still land until it can be checked; check the store's rpc_url (the chain then decides by itself)."
            : reason === UNRESOLVED_REASON && row.rpc_url
            ? "The chain could not be read (the store's rpc_url failed for over 10 minutes past the authorization's validBefore by the service clock), so the transfer the facilitator reported (`transaction_hash`, if present) was never confirmed; a transfer may still land until the chain can be checked. Look in the pay_to wallet for an incoming transfer of `amount` of `asset` from `payer` (the token's AuthorizationUsed event with this nonce): found, accept. A refund (release) is refused until the chain shows the authorization expired unused (24 hours past validBefore at the latest); fix the store's rpc_url and the chain decides by itself."
            : reason === SPENT_UNCONFIRMED_REASON
            ? "The chain shows this authorization's nonce spent, but not whether by the transfer or by the payer's cancelAuthorization. Look in the pay_to wallet for an incoming transfer of `amount` of `asset` from `payer` (the token's AuthorizationUsed event with this nonce): found, accept; an AuthorizationCanceled event instead, or no such transfer, refund (nothing was paid)."
            : "Look in the pay_to wallet for an incoming transfer of `amount` of `asset` from `payer` (the token's AuthorizationUsed event with this nonce): found, accept; none, refund (nothing was captured).",
      },
    };
  }

  /** The intent stays `unknown` (its transfer may be or become on chain); the cart turns the throw into SETTLEMENT_UNKNOWN. */
  private async unknown(row: IntentRow, reason: string, cause?: unknown): Promise<never> {
    await this.finish(row.intent_id, "unknown", null, reason);
    this.log?.warn("x402 settle outcome unknown; will reconcile", { intentId: row.intent_id, reason, ...(cause instanceof Error ? { error: cause } : {}) });
    if (cause instanceof ActorError && cause.code.startsWith("UPSTREAM_")) {
      throw fail(cause.code, cause.message, { ...cause.details, settlement: "unknown" });
    }
    throw fail("UPSTREAM_UNAVAILABLE", "x402 settlement outcome unknown", { settlement: "unknown", reason });
  }

  /**
   * /settle with the intent's own authorization. Safe to repeat: the token accepts a nonce once. FAILED is written
   * only when nothing can have moved (payments audit B2 F1, F2):
   * - the first send of this intent never left (connection refused): the nonce is given back;
   * - the first send was refused by the facilitator for a reason it gives before broadcasting anything;
   * - the chain shows the nonce unused and no longer usable.
   * Any other outcome (a lost connection, a timeout, a refusal that can come after the broadcast, any answer to a
   * re-send while an earlier send's outcome is unknown) is decided on chain, or stays `unknown`.
   */
  private async settle(row: IntentRow, key: string): Promise<ChargeResult> {
    // `recorded` is the only state in which no /settle of this authorization was ever sent (the state becomes
    // `settling` before the call). Once one was, only the chain can say it did not land.
    const sentBefore = row.state !== "recorded";
    await this.sql`UPDATE x402_intents SET state = 'settling', updated_at = now() WHERE intent_id = ${row.intent_id} AND state IN ('recorded', 'unknown')`;
    // Vetted again on this request (the guard resolves the name again). A private address is allowed when the gateway
    // decided so at /verify by its policy (recorded on the intent: this actor host's configuration may lack
    // X402_FACILITATOR_ALLOWLIST, review Y-2) or when this host's own policy allows it (intents from before 0102).
    const client = createFacilitatorClient({
      url: row.facilitator_url,
      timeoutMs: this.timeouts().settleMs,
      allowPrivate: row.facilitator_allow_private || facilitatorMayBePrivate(row.facilitator_url, this.facilitatorPolicy()),
      ...(this.log ? { log: this.log } : {}),
    });
    const wire = facilitatorBodies(row.facilitator_version, row.payload, row.requirements, "");
    let res: SettleResponse;
    try {
      res = await client.settle(wire.payload, wire.requirements);
    } catch (err) {
      const details = err instanceof ActorError ? err.details : undefined;
      if (details?.settlement === "not_attempted" && !sentBefore) {
        // This intent's only send never left: nothing can have moved. Give the nonce back so the payer may retry. Why
        // not: unreachable, or refused by the SSRF guard (its address is not public now: review Y-2 named it unreachable).
        const reason = details.reason === "facilitator_not_public" ? "facilitator_not_public" : "facilitator_unreachable";
        await this.finish(row.intent_id, "failed", null, reason);
        await this.nonces.release(key, row.intent_id);
        return { status: "failed", intentId: row.intent_id, code: "PAYMENT_FAILED_ROLLED_BACK", reason };
      }
      // A re-send that never left says nothing about the earlier send, which may still land; anything else may
      // have been acted on. The chain is asked by the reconciliation (lookup) that follows.
      return this.unknown(row, "settle_outcome_unknown", err);
    }
    if (res.success) {
      if (!row.rpc_url) {
        // No chain to read: the facilitator's word is the only witness (docs/x402.md "Without an rpc_url").
        await this.finish(row.intent_id, "captured", res.transaction, null);
        return this.captured(row, res.transaction);
      }
      // A transfer in the head block is not money yet: a reorg can drop it (audit V3). Recorded with its transaction
      // and not captured until the chain shows its AuthorizationUsed log X402_CAPTURE_CONFIRMATIONS deep; the
      // facilitator's hash is never trusted alone (the log is searched by the nonce).
      await this.finish(row.intent_id, "unknown", res.transaction, AWAITING_CONFIRMATIONS_REASON);
      const decided = await this.decideWhenDeep({ ...row, state: "unknown", transaction_hash: res.transaction ?? row.transaction_hash, error_reason: AWAITING_CONFIRMATIONS_REASON });
      if (decided === SPENT_UNCONFIRMED) return this.unknown(row, SPENT_UNCONFIRMED_REASON);
      // Not deep yet, or the chain cannot be read: recorded with the facilitator's transaction, looked at again, and
      // escalated to the merchant if nothing is proven past validBefore (lookup, review RX-1).
      if (decided && decided !== CONFIRMING && decided !== UNREADABLE) return decided;
      return this.unknown(row, AWAITING_CONFIRMATIONS_REASON);
    }
    const reason = facilitatorReasonCode(res.errorReason, "settle_failed");
    if (res.errorReason !== reason || res.errorMessage) {
      this.log?.debug("x402 facilitator settle refusal text", {
        intentId: row.intent_id,
        reason,
        raw: res.errorReason?.slice(0, FACILITATOR_TEXT_LOG_CHARS),
        text: res.errorMessage?.slice(0, FACILITATOR_TEXT_LOG_CHARS),
      });
    }
    // A refusal that names a transaction is not a pre-broadcast one, whatever its reason (review R4-6).
    if (!sentBefore && isRefusedBeforeBroadcast(reason) && !res.transaction) {
      // One look first when the chain can be read: a facilitator that retried internally after a lost answer, or
      // the payer's own submission, can refuse "before broadcast" a transfer that happened (review R4-6).
      const decided = row.rpc_url ? await this.decideOnChain(row) : null;
      // Spent without a readable transfer or cancellation: not failed (it may have paid), not paid (it may have been
      // cancelled): escalated like any other (review P4).
      if (decided === SPENT_UNCONFIRMED) return this.unknown(row, SPENT_UNCONFIRMED_REASON);
      if (decided === CONFIRMING) return this.unknown(row, AWAITING_CONFIRMATIONS_REASON);
      // An unreadable chain proves nothing either way: the facilitator's pre-broadcast refusal decides, as without one.
      if (decided && decided !== UNREADABLE) return decided;
      await this.finish(row.intent_id, "failed", null, reason);
      return { status: "failed", intentId: row.intent_id, code: "PAYMENT_FAILED_ROLLED_BACK", reason };
    }
    const decided = await this.decideOnChain(row);
    if (decided === SPENT_UNCONFIRMED) return this.unknown(row, SPENT_UNCONFIRMED_REASON);
    if (decided === CONFIRMING) return this.unknown(row, AWAITING_CONFIRMATIONS_REASON);
    if (decided && decided !== UNREADABLE) return decided;
    if (/nonce_already_used/.test(reason) && !row.rpc_url) {
      // No chain to ask: the facilitator says the nonce is spent, which is as true of the payer's cancelAuthorization
      // as of our own earlier settle (the usual case after a timeout). Never paid on that alone: the cart's lookup
      // after this throw answers `unresolved` and the merchant decides from its wallet (review P5). With an rpc_url
      // decideOnChain above has already read the events.
      return this.unknown(row, FACILITATOR_NONCE_USED_REASON);
    }
    // A refusal that can come after the transfer was broadcast (receipt wait failed, transaction failed, an error
    // message), or any refusal of a re-send: the chain has not shown the transfer yet, and it may still land.
    return this.unknown(row, reason);
  }

  /**
   * What the chain says about the intent's nonce, within one look's deadline (CHAIN_LOOK_TIMEOUT_MS). null when there
   * is no RPC URL or the chain proves nothing yet (the facilitator is then the only witness).
   * - `authorizationState(from, nonce)` true: used. The transaction is searched in the `AuthorizationUsed` /
   *   `AuthorizationCanceled` logs from the block recorded before the first /settle, in bounded windows
   *   (chainLogSearch), never from block 0, which range-capped providers refuse (review R4-3). A cancellation's log
   *   → `cancelled` (nothing moved). No log found, or the logs cannot be read → used, transaction null: spent, but
   *   by a transfer or by the payer's cancelAuthorization nobody can say (authorizationState is true for both), so
   *   decideOnChain escalates it, never records it paid (review P4).
   * - false: unused. `expired` only when the chain itself shows it: a block at least EXPIRY_CONFIRMATIONS deep whose
   *   timestamp is past `validBefore`, and the nonce unused AT that block (review R4-4). A lagging node, or a host
   *   clock running ahead, answers "not yet", never "failed".
   * - UNREADABLE: the nonce's state could not be read (a dead or wrong rpc_url, a timeout): the chain proved nothing,
   *   which must not be taken for "unused" (review RX-1).
   */
  private async chainState(row: IntentRow): Promise<ChainState | typeof UNREADABLE | null> {
    if (!row.rpc_url) return null;
    const client = chainClient(row.rpc_url);
    let usedSeen = false;
    const look = async (): Promise<ChainState | null> => {
      const used = await readAuthorizationState(client, row);
      if (used) {
        usedSeen = true;
        // The transaction the facilitator named, read by its receipt: one call, and no eth_getLogs (which some RPCs
        // refuse). Only a successful receipt carrying this nonce's AuthorizationUsed log counts.
        const named = row.transaction_hash?.startsWith("0x") ? await receiptProof(client, row, row.transaction_hash) : null;
        if (named) return { used: true, cancelled: false, expired: false, transaction: named.transaction, confirmations: named.confirmations };
        const found = await chainLogSearch(client, row, this.log);
        if (found.kind === "cancelled") return { used: false, cancelled: true, expired: false, transaction: null, confirmations: 0n };
        if (found.kind === "used") return { used: true, cancelled: false, expired: false, transaction: found.transaction, confirmations: found.confirmations };
        return { used: true, cancelled: false, expired: false, transaction: null, confirmations: 0n };
      }
      // Our clock only saves the reads while the authorization is plainly still valid; the chain decides expiry.
      if (Math.floor(this.nowMs() / 1000) < Number(row.valid_before)) return { used: false, cancelled: false, expired: false, transaction: null, confirmations: 0n };
      const head = await client.getBlockNumber();
      if (head < EXPIRY_CONFIRMATIONS) return { used: false, cancelled: false, expired: false, transaction: null, confirmations: 0n };
      const settled = await client.getBlock({ blockNumber: head - EXPIRY_CONFIRMATIONS });
      if (settled.timestamp < BigInt(row.valid_before)) return { used: false, cancelled: false, expired: false, transaction: null, confirmations: 0n };
      const usedThen = await readAuthorizationState(client, row, settled.number ?? head - EXPIRY_CONFIRMATIONS);
      if (usedThen) return null; // used after all (a node that answered from another height): the next look finds it
      return { used: false, cancelled: false, expired: true, transaction: null, confirmations: 0n };
    };
    try {
      return await withinLook(look());
    } catch (err) {
      this.log?.warn("x402 chain read failed during reconciliation", { intentId: row.intent_id, error: chainErrorText(err) });
      // The nonce was seen used before the look ran out: spent, the transaction just not found in time. Otherwise the
      // chain said nothing: that is not "unused" (review RX-1), so nothing may be re-sent on it.
      return usedSeen ? { used: true, cancelled: false, expired: false, transaction: null, confirmations: 0n } : UNREADABLE;
    }
  }
}

/** The 409 for a release of a payment whose transfer the chain shows (review RAP MED-1): accept it instead. */
function chainShowsTransfer(row: IntentRow, transactionHash: string | null): ActorError {
  return fail(
    "conflict",
    "The store's chain shows this payment's transfer: the money landed, so the order cannot be released for the agent to pay again. Accept it (then refund the buyer from the wallet if that is the decision).",
    { reason: "chain_shows_transfer", payment_reference: `x402:${row.nonce}`, transaction_hash: transactionHash, next: "accept" },
  );
}

/** decideOnChain's answer for a nonce spent while neither its transfer nor its cancellation can be read. */
const SPENT_UNCONFIRMED = "spent_unconfirmed" as const;
/** decideOnChain's answer for a transfer found on chain but not yet X402_CAPTURE_CONFIRMATIONS deep. */
const CONFIRMING = "confirming" as const;
/** chainState's and decideOnChain's answer when the store's rpc_url could not be read: nothing is known. */
const UNREADABLE = "unreadable" as const;

/** The wait before reading an unreadable chain again after `failed` looks in a row: 5 s, doubling, at most 10 minutes. */
export function unreadableBackoffMs(failed: number): number {
  return Math.min(5_000 * 2 ** Math.min(Math.max(failed - 1, 0), 20), 10 * 60_000);
}

interface ChainState {
  used: boolean;
  cancelled: boolean;
  /** Unused at a confirmed block whose timestamp is past validBefore: the token will never accept it. */
  expired: boolean;
  transaction: string | null;
  /** Blocks from the transfer's (its own counted) to the head; 0 when no transfer was found. */
  confirmations: bigint;
}

type ChainClient = ReturnType<typeof createPublicClient>;

/**
 * A chain read's error for a log line, without the RPC's URL: viem's message quotes the URL and the request body, and
 * a hosted provider's URL carries the merchant's API key in its path or query (e.g. `…/v2/<key>`), which no log may
 * hold. The first line of viem's short message, any URL replaced, at most 300 characters.
 */
export function chainErrorText(err: unknown): string {
  const e = err as { name?: string; shortMessage?: string; message?: string } | null;
  const text = String(e?.shortMessage ?? e?.message ?? err).split("\n")[0] ?? "";
  return `${e?.name ?? "Error"}: ${text.replace(/[a-z][a-z0-9+.-]*:\/\/\S+/gi, "<rpc_url>")}`.slice(0, FACILITATOR_TEXT_LOG_CHARS);
}

/** A client for the intent's RPC: no retries, each read bounded by CHAIN_READ_TIMEOUT_MS. */
function chainClient(rpcUrl: string): ChainClient {
  return createPublicClient({ transport: http(rpcUrl, { retryCount: 0, timeout: CHAIN_READ_TIMEOUT_MS }) });
}

async function readAuthorizationState(client: ChainClient, row: IntentRow, blockNumber?: bigint): Promise<boolean> {
  return client.readContract({
    address: row.asset as Address,
    abi: EIP3009_ABI,
    functionName: "authorizationState",
    args: [row.payer as Address, row.nonce as Hex],
    ...(blockNumber !== undefined ? { blockNumber } : {}),
  });
}

/**
 * The receipt of `hash` as proof of this intent's transfer: mined successfully on the chain as it is now, with the
 * token's `AuthorizationUsed(payer, nonce)` log. null when there is no such receipt (not mined, dropped by a reorg,
 * another transaction) or it cannot be read.
 */
async function receiptProof(client: ChainClient, row: { asset: string; payer: string; nonce: string }, hash: string): Promise<{ transaction: string; confirmations: bigint } | null> {
  const read = await readReceipt(client, row, hash);
  return read.kind === "proof" ? read : null;
}

/**
 * Bounds one chain look (CHAIN_LOOK_TIMEOUT_MS), whatever its number of reads: the one timeout of chainState and
 * captureVanished. Past it the look rejects; the reads it started are not cancelled (each ends within
 * CHAIN_READ_TIMEOUT_MS) and its late answer is dropped.
 */
async function withinLook<T>(p: Promise<T>): Promise<T> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  const deadline = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`chain look exceeded ${CHAIN_LOOK_TIMEOUT_MS} ms`)), CHAIN_LOOK_TIMEOUT_MS);
  });
  try {
    return await Promise.race([p, deadline]);
  } finally {
    clearTimeout(timer);
  }
}

/**
 * `hash`'s receipt as proof of the intent's transfer: `proof` (mined successfully, with the nonce's AuthorizationUsed
 * log from the token), `absent` (no receipt on the chain as it is now, a reverted one, or another transaction),
 * `unreadable` (the RPC failed: proves nothing).
 */
async function readReceipt(
  client: ChainClient,
  row: { asset: string; payer: string; nonce: string },
  hash: string,
): Promise<{ kind: "proof"; transaction: string; confirmations: bigint } | { kind: "absent" } | { kind: "unreadable" }> {
  try {
    let receipt: Awaited<ReturnType<ChainClient["getTransactionReceipt"]>>;
    try {
      receipt = await client.getTransactionReceipt({ hash: hash as Hex });
    } catch (err) {
      return err instanceof TransactionReceiptNotFoundError ? { kind: "absent" } : { kind: "unreadable" };
    }
    if (receipt.status !== "success") return { kind: "absent" };
    const [usedTopic, authorizerTopic, nonceTopic] = encodeEventTopics({
      abi: [AUTHORIZATION_USED],
      eventName: "AuthorizationUsed",
      args: { authorizer: row.payer as Address, nonce: row.nonce as Hex },
    });
    const ours = receipt.logs.some(
      (l) =>
        l.address.toLowerCase() === row.asset.toLowerCase() &&
        l.topics[0]?.toLowerCase() === String(usedTopic).toLowerCase() &&
        l.topics[1]?.toLowerCase() === String(authorizerTopic).toLowerCase() &&
        l.topics[2]?.toLowerCase() === String(nonceTopic).toLowerCase(),
    );
    if (!ours) return { kind: "absent" };
    const head = await client.getBlockNumber();
    const confirmations = head - receipt.blockNumber + 1n;
    return { kind: "proof", transaction: receipt.transactionHash, confirmations: confirmations > 0n ? confirmations : 0n };
  } catch {
    return { kind: "unreadable" };
  }
}

/**
 * The chain's height now (`eth_blockNumber`), recorded with an intent before its first /settle: its transfer, if
 * any, is in a later block. null when the RPC does not answer within one read (the search then starts from a bounded
 * window back from the latest block).
 */
export async function chainHeight(rpcUrl: string | null): Promise<bigint | null> {
  if (!rpcUrl) return null;
  try {
    const client = chainClient(rpcUrl);
    return await client.getBlockNumber();
  } catch {
    return null;
  }
}

/**
 * The `AuthorizationUsed` or `AuthorizationCanceled` log of the intent's nonce, searched in windows of
 * LOG_SEARCH_CHUNK_BLOCKS from the intent's `from_block` (else LOG_SEARCH_MAX_CHUNKS windows back from the latest
 * block), one `eth_getLogs` per window for both events, at most LOG_SEARCH_MAX_CHUNKS windows per look. The transfer
 * is mined before `validBefore`, so it sits a few blocks after `from_block`. `unreadable` when a window is refused
 * (a provider's range or result cap) or times out; `none` when every window was read and held neither log.
 */
export async function chainLogSearch(
  client: ChainClient,
  row: { asset: string; payer: string; nonce: string; from_block?: string | null; intent_id?: string },
  log?: Logger,
): Promise<{ kind: "used"; transaction: string | null; confirmations: bigint } | { kind: "cancelled" } | { kind: "none" } | { kind: "unreadable" }> {
  const head = await client.getBlockNumber();
  const span = LOG_SEARCH_CHUNK_BLOCKS * BigInt(LOG_SEARCH_MAX_CHUNKS);
  let from = row.from_block != null ? BigInt(row.from_block) : head >= span ? head - span + 1n : 0n;
  if (from > head) from = head;
  const [usedTopic, authorizerTopic, nonceTopic] = encodeEventTopics({
    abi: [AUTHORIZATION_USED],
    eventName: "AuthorizationUsed",
    args: { authorizer: row.payer as Address, nonce: row.nonce as Hex },
  });
  const canceledTopic = toEventSelector(AUTHORIZATION_CANCELED);
  for (let i = 0; i < LOG_SEARCH_MAX_CHUNKS; i++) {
    const lo = from + BigInt(i) * LOG_SEARCH_CHUNK_BLOCKS;
    if (lo > head) break;
    const hi = lo + LOG_SEARCH_CHUNK_BLOCKS - 1n < head ? lo + LOG_SEARCH_CHUNK_BLOCKS - 1n : head;
    let logs: { topics: Hex[]; transactionHash: Hex | null; blockNumber: Hex | null }[];
    try {
      logs = await client.request({
        method: "eth_getLogs",
        params: [{ address: row.asset as Address, fromBlock: toHex(lo), toBlock: toHex(hi), topics: [[usedTopic as Hex, canceledTopic], authorizerTopic as Hex, nonceTopic as Hex] }],
      });
    } catch (err) {
      log?.warn("x402 log search refused by the RPC; the nonce's state decides", { intentId: row.intent_id, fromBlock: String(lo), toBlock: String(hi), error: chainErrorText(err) });
      return { kind: "unreadable" };
    }
    const used = logs.find((l) => l.topics[0]?.toLowerCase() === String(usedTopic).toLowerCase());
    if (used) {
      // The log's block on the chain as it is now (a reorged-out transfer has no log): its depth is the capture's.
      const confirmations = used.blockNumber ? head - BigInt(used.blockNumber) + 1n : 0n;
      return { kind: "used", transaction: used.transactionHash ?? null, confirmations: confirmations > 0n ? confirmations : 0n };
    }
    if (logs.some((l) => l.topics[0]?.toLowerCase() === canceledTopic.toLowerCase())) return { kind: "cancelled" };
  }
  return { kind: "none" };
}

// ---------------------------------------------------------------------------------------------------------------
// Start-up

export const X402AuthorizationRef = T.String({ pattern: "^x402:[0-9a-f-]{36}$" });

/**
 * Every process hosting actors: the wallet actor's sealing key and the x402 rail in the rail registry (the cart
 * actor finds it with `railFor(sql, "x402")`).
 */
export const x402BootHook: BootHook = {
  name: "x402",
  roles: ["start", "actors"],
  async run({ services }) {
    const kek = services.extras.get("secretKey");
    if (!(kek instanceof Uint8Array)) throw new Error("x402 boot hook: secretKey missing from services");
    const uninstallWallet = installWalletRuntime(kek);
    registerRail(
      services.sql,
      "x402",
      new X402Rail(
        services.sql,
        () => x402Timeouts(services.extras),
        services.log.child({ component: "x402-rail" }),
        () => services.clock.now(),
        BigInt(services.config.X402_CAPTURE_CONFIRMATIONS),
        () => ({
          allowlist: services.config.X402_FACILITATOR_ALLOWLIST,
          allowPrivate: services.config.ALLOW_PRIVATE_URLS && services.config.NODE_ENV !== "production",
        }),
      ),
    );
    return async () => uninstallWallet();
  },
};

export function x402Timeouts(extras: Map<string, unknown>): X402Timeouts {
  return {
    settleMs: (extras.get(EXTRAS_X402_SETTLE_TIMEOUT_MS) as number | undefined) ?? DEFAULT_SETTLE_TIMEOUT_MS,
    verifyMs: (extras.get(EXTRAS_X402_VERIFY_TIMEOUT_MS) as number | undefined) ?? DEFAULT_VERIFY_TIMEOUT_MS,
    confirmWaitMs: (extras.get(EXTRAS_X402_CONFIRM_WAIT_MS) as number | undefined) ?? DEFAULT_CONFIRM_WAIT_MS,
  };
}
