/**
 * The built-in sandbox card processor. No money moves; outcomes are chosen by test payment tokens:
 *
 * | token                | charge result                                                                  |
 * |----------------------|--------------------------------------------------------------------------------|
 * | `tok_approve`        | captured                                                                       |
 * | `tok_decline`        | declined (PAYMENT_DECLINED), nothing captured                                  |
 * | `tok_fail`           | failed (PAYMENT_FAILED_ROLLED_BACK), nothing captured                          |
 * | `tok_needs_approval` | needs_buyer_approval with a link; after `approve(intentId, token)` the same call captures, after `reject(intentId, token)` it is not_approved; `voidIntent` (its checkout ended unpaid) withdraws it: the link refuses, a charge is not_approved |
 * | `tok_not_approved`   | not_approved (PAYMENT_NOT_APPROVED): the payer refused at once                 |
 * | `tok_lost_response`  | captures, then the first call throws UPSTREAM_UNAVAILABLE as if the answer was lost, and so does the lookup right after it in this process; a later charge/lookup of the same intent returns the capture |
 * | `tok_amount_mismatch`| captures one minor unit MORE than asked (the caller's amount check must catch it: PAYMENT_AMOUNT_MISMATCH) |
 * | `tok_finalization_fails` | captured like tok_approve; the cart treats the order write as failed (PAYMENT_CAPTURED_FINALIZATION_FAILED) |
 * | `MOCK`               | captured at once with `simulated: true`, only on mock stores (default `demo-store`); elsewhere PAYMENT_METHOD_NOT_CONFIGURED |
 * | anything else        | declined with reason `invalid_test_token`                                      |
 *
 * Idempotency per intent id is kept in a ledger behind `SandboxLedgerStore` (memory here; a Postgres store can
 * implement the same four-ish methods with INSERT … ON CONFLICT DO NOTHING).
 *
 * The buyer's approval link is `{approvalBaseUrl}/{intentId}/{approvalToken}`. The intent id is deterministic (the
 * caller derives it from the session, key, store and attempt, so a retry or the reconciler finds the same intent) and
 * is seen by others (the payee's order history had it; anyone knowing the session can derive it), so it is no
 * credential. The token is the capability: 32 random bytes the processor draws when the intent starts waiting for
 * the buyer, stored with the intent (the first record wins, so a replayed or reconciled charge hands back the same
 * link), shown only in the `needs_buyer_approval` answer that goes to the buyer's agent, and compared in constant
 * time. A wrong or missing token is answered exactly as an unknown intent (docs/checkout.md "Payment method").
 */
import { createHash, randomBytes, timingSafeEqual } from "node:crypto";
import { fail } from "../runtime/errors.ts";
import type { ChargeIntent, ChargeResult, LookupResult, PaymentRail, RefundRequest, RefundResult } from "./rail.ts";

export const SANDBOX_TOKENS = {
  approve: "tok_approve",
  decline: "tok_decline",
  fail: "tok_fail",
  needsApproval: "tok_needs_approval",
  notApproved: "tok_not_approved",
  lostResponse: "tok_lost_response",
  amountMismatch: "tok_amount_mismatch",
  finalizationFails: "tok_finalization_fails",
  mock: "MOCK",
} as const;

export type SandboxIntentState =
  | "captured"
  | "declined"
  | "failed"
  | "not_approved"
  | "awaiting_approval"
  | "approved" // buyer approved, capture happens on the next charge call
  | "rejected" // buyer refused, the next charge call answers not_approved
  | "voided"; // its checkout ended unpaid while it waited (voidIntent): the link refuses, a charge answers not_approved

export interface SandboxIntentRecord {
  intentId: string;
  storeId: string;
  amountMinor: number;
  currency: string;
  token: string;
  state: SandboxIntentState;
  captureRef: string | null;
  refundedMinor: number;
  simulated: boolean;
  /** tok_lost_response: the answer of the first call is "lost" once. */
  responseLost: boolean;
  /**
   * The secret of the buyer's approval link (64 hex), drawn when the intent starts waiting for approval; null for an
   * intent that never needed one (and for one recorded before migration 0084 until its next charge or lookup).
   */
  approvalToken: string | null;
  createdAt: number;
  updatedAt: number;
}

export interface SandboxRefundRecord {
  refundId: string;
  captureRef: string;
  result: RefundResult;
}

export interface SandboxLedgerStore {
  getIntent(intentId: string): Promise<SandboxIntentRecord | undefined>;
  /** Insert unless a record with that intent id exists; returns the stored record (the existing one wins). */
  insertIntent(record: SandboxIntentRecord): Promise<SandboxIntentRecord>;
  /**
   * Compare-and-set of the intent's state: moves it from `from` to `change.state` (with `change.captureRef` when given)
   * only while it is still in `from`, in one write that touches no other column. Returns the updated record, or
   * undefined when the intent was no longer in `from` (nothing written; the caller re-reads and decides again).
   */
  transitionIntent(intentId: string, from: SandboxIntentState, change: IntentTransition): Promise<SandboxIntentRecord | undefined>;
  /** Clears a captured intent's lost-response flag; true only for the one call that cleared it. */
  clearResponseLost(intentId: string, updatedAt: number): Promise<boolean>;
  /** Gives an intent without an approval token this one (an existing token wins); returns the stored token. */
  assignApprovalToken(intentId: string, token: string): Promise<string>;
  findIntentByCapture(captureRef: string): Promise<SandboxIntentRecord | undefined>;
  getRefund(refundId: string): Promise<SandboxRefundRecord | undefined>;
  /**
   * Insert unless a record with that refund id exists; returns the stored record (the existing one wins). `debit`:
   * the refunded amount added to the intent in the same write, only when the record was inserted (a crash between
   * two writes would let a retry of the refund id refund twice).
   */
  insertRefund(record: SandboxRefundRecord, debit?: RefundDebit): Promise<SandboxRefundRecord>;
}

export interface IntentTransition {
  state: SandboxIntentState;
  /** Set with the state (a capture's reference); left as it is when absent. */
  captureRef?: string;
  updatedAt: number;
}

export interface RefundDebit {
  intentId: string;
  amountMinor: number;
  updatedAt: number;
}

export class InMemorySandboxLedger implements SandboxLedgerStore {
  private readonly intents = new Map<string, SandboxIntentRecord>();
  private readonly refunds = new Map<string, SandboxRefundRecord>();

  async getIntent(intentId: string): Promise<SandboxIntentRecord | undefined> {
    const r = this.intents.get(intentId);
    return r && { ...r };
  }
  async insertIntent(record: SandboxIntentRecord): Promise<SandboxIntentRecord> {
    const existing = this.intents.get(record.intentId);
    if (existing) return { ...existing };
    this.intents.set(record.intentId, { ...record });
    return { ...record };
  }
  async transitionIntent(intentId: string, from: SandboxIntentState, change: IntentTransition): Promise<SandboxIntentRecord | undefined> {
    const r = this.intents.get(intentId);
    if (!r || r.state !== from) return undefined;
    const next = { ...r, state: change.state, captureRef: change.captureRef ?? r.captureRef, updatedAt: change.updatedAt };
    this.intents.set(intentId, next);
    return { ...next };
  }
  /** Replaces a whole record: for tests that set up a state (a row as written before migration 0084); the rail never calls it. */
  async updateIntent(record: SandboxIntentRecord): Promise<void> {
    this.intents.set(record.intentId, { ...record });
  }
  async clearResponseLost(intentId: string, updatedAt: number): Promise<boolean> {
    const r = this.intents.get(intentId);
    if (!r || r.state !== "captured" || !r.responseLost) return false;
    this.intents.set(intentId, { ...r, responseLost: false, updatedAt });
    return true;
  }
  async assignApprovalToken(intentId: string, token: string): Promise<string> {
    const r = this.intents.get(intentId);
    if (!r) throw new Error(`sandbox ledger: no intent ${intentId}`);
    if (r.approvalToken === null) this.intents.set(intentId, { ...r, approvalToken: token });
    return this.intents.get(intentId)!.approvalToken as string;
  }
  async findIntentByCapture(captureRef: string): Promise<SandboxIntentRecord | undefined> {
    for (const r of this.intents.values()) if (r.captureRef === captureRef) return { ...r };
    return undefined;
  }
  async getRefund(refundId: string): Promise<SandboxRefundRecord | undefined> {
    return this.refunds.get(refundId);
  }
  async insertRefund(record: SandboxRefundRecord, debit?: RefundDebit): Promise<SandboxRefundRecord> {
    const existing = this.refunds.get(record.refundId);
    if (existing) return existing;
    const intent = debit && this.intents.get(debit.intentId);
    if (debit && intent && intent.refundedMinor + debit.amountMinor > intent.amountMinor) {
      // the bound is the ledger's, as in PgSandboxLedger: the caller's check was a read
      const refused: SandboxRefundRecord = { ...record, result: { status: "failed", refundId: record.refundId, reason: "exceeds_captured" } };
      this.refunds.set(record.refundId, refused);
      return refused;
    }
    this.refunds.set(record.refundId, record);
    if (debit && intent) this.intents.set(debit.intentId, { ...intent, refundedMinor: intent.refundedMinor + debit.amountMinor, updatedAt: debit.updatedAt });
    return record;
  }
}

export interface CardSandboxOptions {
  ledger?: SandboxLedgerStore;
  /** Stores where `MOCK` completes at once. */
  mockStores?: readonly string[];
  approvalBaseUrl?: string;
  now?: () => number;
}

const ref = (prefix: string, seed: string): string => `${prefix}_${createHash("sha256").update(seed).digest("hex").slice(0, 24)}`;

/** A fresh approval-link secret: 32 random bytes, hex. */
const newApprovalToken = (): string => randomBytes(32).toString("hex");

/** Whether `given` is the intent's approval token, in time independent of where they differ (both hashed first). */
function approvalTokenMatches(stored: string | null, given: string): boolean {
  const digest = (v: string) => createHash("sha256").update(v).digest();
  // Compared even without a stored token, so a tokenless intent costs what a wrong token does.
  const same = timingSafeEqual(digest(stored ?? ""), digest(given));
  return stored !== null && given.length > 0 && same;
}

/**
 * The refusal at the link of a voided intent (its checkout ended unpaid): 409 `conflict`, `details.state: voided`,
 * `reason: checkout_ended`. The page says the same (gateway/rest/checkout.ts).
 */
export function checkoutEnded(intentId: string) {
  return fail(
    "conflict",
    "This payment can no longer be approved: the checkout it belongs to ended (canceled or expired) before it was paid. Nothing was charged and nothing will be; the agent can start a new checkout.",
    { intent_id: intentId, state: "voided", reason: "checkout_ended" },
  );
}

/** The states in which an intent waits for (or has just had) the buyer's decision: its answer carries the link. */
const WAITING: ReadonlySet<SandboxIntentState> = new Set(["awaiting_approval", "approved"]);

export class CardSandboxRail implements PaymentRail {
  readonly name = "card";
  private readonly ledger: SandboxLedgerStore;
  private readonly mockStores: ReadonlySet<string>;
  private readonly approvalBaseUrl: string;
  private readonly now: () => number;
  /** Concurrent calls for one intent in this process share one promise. */
  private readonly inflight = new Map<string, Promise<ChargeResult>>();
  /**
   * tok_lost_response intents whose charge answer was just lost: their next lookup here is lost too. The caller looks
   * the intent up right after a lost answer and would settle it at once, so the agent would never see the lost answer
   * the token exists to rehearse (503 UPSTREAM_UNAVAILABLE, then the same call again returns the order; review AD-5).
   * In memory on purpose: a real processor's lookup is not simulated, and another process (or a restart) finds the
   * capture at once, which is the recovery path anyway.
   */
  private readonly lookupLost = new Set<string>();

  constructor(options: CardSandboxOptions = {}) {
    this.ledger = options.ledger ?? new InMemorySandboxLedger();
    this.mockStores = new Set(options.mockStores ?? ["demo-store"]);
    this.approvalBaseUrl = (options.approvalBaseUrl ?? "https://sandbox-pay.invalid/approve").replace(/\/$/, "");
    this.now = options.now ?? Date.now;
  }

  charge(intent: ChargeIntent): Promise<ChargeResult> {
    const running = this.inflight.get(intent.intentId);
    if (running) return running;
    const p = this.chargeOnce(intent).finally(() => this.inflight.delete(intent.intentId));
    this.inflight.set(intent.intentId, p);
    return p;
  }

  private async chargeOnce(intent: ChargeIntent): Promise<ChargeResult> {
    if (!Number.isInteger(intent.amountMinor) || intent.amountMinor <= 0) {
      throw fail("INVALID_ARGUMENT", "amountMinor must be a positive integer.", { field: "amountMinor" });
    }
    if (intent.paymentToken === SANDBOX_TOKENS.mock && !this.mockStores.has(intent.storeId)) {
      throw fail("PAYMENT_METHOD_NOT_CONFIGURED", "MOCK payments are accepted only on the demo store.", { store: intent.storeId });
    }
    const now = this.now();
    const fresh: SandboxIntentRecord = {
      intentId: intent.intentId,
      storeId: intent.storeId,
      // tok_amount_mismatch: a processor that captured another amount than it was asked for.
      amountMinor: intent.paymentToken === SANDBOX_TOKENS.amountMismatch ? intent.amountMinor + 1 : intent.amountMinor,
      currency: intent.currency,
      token: intent.paymentToken,
      state: initialState(intent.paymentToken),
      captureRef: null,
      refundedMinor: 0,
      simulated: intent.paymentToken === SANDBOX_TOKENS.mock,
      responseLost: intent.paymentToken === SANDBOX_TOKENS.lostResponse,
      approvalToken: null,
      createdAt: now,
      updatedAt: now,
    };
    if (fresh.state === "captured") fresh.captureRef = ref("cap", intent.intentId);
    // Drawn with the record, so it is stored in the same insert: a replay of the intent finds the same link.
    if (fresh.state === "awaiting_approval") fresh.approvalToken = newApprovalToken();
    // The first record for an intent id wins: a repeat (even with other amount or token) replays it.
    let record = await this.ledger.insertIntent(fresh);
    if (record.state === "approved") {
      // Only an intent still approved is captured (approved has no other way out, so a miss is a capture by another
      // process: its record is the answer).
      record =
        (await this.ledger.transitionIntent(record.intentId, "approved", { state: "captured", captureRef: ref("cap", record.intentId), updatedAt: now })) ??
        (await this.ledger.getIntent(record.intentId)) ??
        record;
    } else if (record.state === "captured" && record.responseLost) {
      // The one call that clears the flag loses its answer; a concurrent one answers the capture.
      if (await this.ledger.clearResponseLost(record.intentId, now)) {
        this.lookupLost.add(record.intentId);
        throw fail("UPSTREAM_UNAVAILABLE", "The sandbox processor's answer was lost (simulated).", { intent_id: record.intentId });
      }
    }
    return this.resultOf(await this.withApprovalToken(record));
  }

  async lookup(intentId: string): Promise<LookupResult> {
    if (this.lookupLost.delete(intentId)) {
      throw fail("UPSTREAM_UNAVAILABLE", "The sandbox processor's answer was lost (simulated).", { intent_id: intentId });
    }
    const record = await this.ledger.getIntent(intentId);
    if (!record) return { status: "unknown", intentId };
    // `approved` is not captured yet: it answers as still waiting until the next charge captures it.
    return this.resultOf(await this.withApprovalToken(record));
  }

  /**
   * The buyer's approval link of an intent that still waits for the buyer's decision (`awaiting_approval`), or
   * undefined (unknown, decided, or never waiting). What a protocol's session read shows as the link (review RA-3); an
   * intent recorded without a token gets its token here, as at a lookup.
   */
  async undecidedApprovalUrl(intentId: string): Promise<string | undefined> {
    const record = await this.ledger.getIntent(intentId);
    if (!record || record.state !== "awaiting_approval") return undefined;
    return this.approvalUrlOf(await this.withApprovalToken(record));
  }

  private approvalUrlOf(r: SandboxIntentRecord): string {
    return `${this.approvalBaseUrl}/${encodeURIComponent(r.intentId)}/${encodeURIComponent(r.approvalToken ?? "")}`;
  }

  /**
   * A waiting intent recorded without a token (before migration 0084, or by a process that did not draw one) gets
   * one now, so its answer carries a working link; the first token stored wins.
   */
  private async withApprovalToken(record: SandboxIntentRecord): Promise<SandboxIntentRecord> {
    if (!WAITING.has(record.state) || record.approvalToken !== null) return record;
    return { ...record, approvalToken: await this.ledger.assignApprovalToken(record.intentId, newApprovalToken()) };
  }

  /**
   * The intent as the buyer's approval page shows it (merchant, amount, state), or undefined when there is no such
   * intent or `approvalToken` is not its link's token (the two are not told apart).
   */
  async describe(
    intentId: string,
    approvalToken: string,
  ): Promise<Pick<SandboxIntentRecord, "intentId" | "storeId" | "amountMinor" | "currency" | "state"> | undefined> {
    const r = await this.ledger.getIntent(intentId);
    if (!approvalTokenMatches(r?.approvalToken ?? null, approvalToken) || !r) return undefined;
    return { intentId: r.intentId, storeId: r.storeId, amountMinor: r.amountMinor, currency: r.currency, state: r.state };
  }

  /**
   * Withdraws an intent that waits for the buyer (awaiting_approval, or approved and not yet captured): its checkout
   * ended unpaid, so nothing will ever capture it. Compare-and-set from the state read; a decision written meanwhile is
   * read again and withdrawn too (a state once left is never entered again, so two rounds decide). Any other state
   * (captured, refused, unknown intent) is left as it is.
   */
  async voidIntent(intentId: string): Promise<void> {
    for (let round = 0; round < 3; round++) {
      const record = await this.ledger.getIntent(intentId);
      if (!record || !WAITING.has(record.state)) return;
      if (await this.ledger.transitionIntent(intentId, record.state, { state: "voided", updatedAt: this.now() })) return;
    }
  }

  /** Buyer approval simulation (the link's token required): the next charge of this intent captures. */
  async approve(intentId: string, approvalToken: string): Promise<void> {
    await this.decide(intentId, approvalToken, "approved");
  }

  /** Buyer refusal simulation (the link's token required): the next charge of this intent answers not_approved. */
  async reject(intentId: string, approvalToken: string): Promise<void> {
    await this.decide(intentId, approvalToken, "rejected");
  }

  /**
   * The decision is a compare-and-set on `awaiting_approval`: of two decisions that both read a waiting intent (two
   * tabs, two devices) only the first write counts; the other re-reads and is answered from what the intent is now
   * (the same decision: done; the other one, or a capture that followed it: 409 conflict with the state). A stale
   * write can never turn a refusal into an approval or overwrite a capture.
   */
  private async decide(intentId: string, approvalToken: string, state: "approved" | "rejected"): Promise<void> {
    let record = await this.ledger.getIntent(intentId);
    // A wrong token is answered as an unknown intent: the same error, message and details.
    if (!approvalTokenMatches(record?.approvalToken ?? null, approvalToken) || !record) {
      throw fail("not_found", "No sandbox payment with that intent id.", { intent_id: intentId });
    }
    if (record.state === "awaiting_approval") {
      if (await this.ledger.transitionIntent(intentId, "awaiting_approval", { state, updatedAt: this.now() })) return;
      // Another decision was written between our read and our write: answer from the intent as it is now (a state
      // once left is never entered again, so one re-read decides).
      record = await this.ledger.getIntent(intentId);
      if (!record) throw fail("not_found", "No sandbox payment with that intent id.", { intent_id: intentId });
    }
    if (record.state === state || (state === "approved" && record.state === "captured")) return;
    if (record.state === "voided") throw checkoutEnded(intentId);
    throw fail("conflict", `The payment is ${record.state}; it is not waiting for approval.`, { intent_id: intentId, state: record.state });
  }

  async refund(request: RefundRequest): Promise<RefundResult> {
    const existing = await this.ledger.getRefund(request.refundId);
    if (existing) return existing.result;
    const { result, debit } = await this.computeRefund(request);
    // The record and the intent's refunded amount in one write: a retry of the refund id finds the record.
    const stored = await this.ledger.insertRefund({ refundId: request.refundId, captureRef: request.captureRef, result }, debit);
    return stored.result;
  }

  private async computeRefund(request: RefundRequest): Promise<{ result: RefundResult; debit?: RefundDebit }> {
    const { refundId } = request;
    if (!Number.isInteger(request.amountMinor) || request.amountMinor <= 0) return { result: { status: "failed", refundId, reason: "invalid_amount" } };
    const record = await this.ledger.findIntentByCapture(request.captureRef);
    if (!record || record.state !== "captured") return { result: { status: "failed", refundId, reason: "unknown_capture" } };
    if (record.refundedMinor + request.amountMinor > record.amountMinor) return { result: { status: "failed", refundId, reason: "exceeds_captured" } };
    return {
      result: { status: "refunded", refundId, refundRef: ref("re", refundId), amountMinor: request.amountMinor },
      debit: { intentId: record.intentId, amountMinor: request.amountMinor, updatedAt: this.now() },
    };
  }

  private resultOf(r: SandboxIntentRecord): ChargeResult {
    const intentId = r.intentId;
    switch (r.state) {
      case "captured":
        return { status: "captured", intentId, captureRef: r.captureRef as string, amountMinor: r.amountMinor, currency: r.currency, simulated: r.simulated };
      case "declined":
        return { status: "declined", intentId, code: "PAYMENT_DECLINED", reason: r.token === SANDBOX_TOKENS.decline ? "card_declined" : "invalid_test_token" };
      case "failed":
        return { status: "failed", intentId, code: "PAYMENT_FAILED_ROLLED_BACK", reason: "processor_error" };
      case "awaiting_approval":
      case "approved":
        return { status: "needs_buyer_approval", intentId, approvalUrl: this.approvalUrlOf(r) };
      case "not_approved":
      case "rejected":
      case "voided":
        return { status: "not_approved", intentId, code: "PAYMENT_NOT_APPROVED" };
    }
  }
}

function initialState(token: string): SandboxIntentState {
  switch (token) {
    case SANDBOX_TOKENS.approve:
    case SANDBOX_TOKENS.mock:
    case SANDBOX_TOKENS.lostResponse:
    case SANDBOX_TOKENS.amountMismatch:
    case SANDBOX_TOKENS.finalizationFails:
      return "captured";
    case SANDBOX_TOKENS.fail:
      return "failed";
    case SANDBOX_TOKENS.needsApproval:
      return "awaiting_approval";
    case SANDBOX_TOKENS.notApproved:
      return "not_approved";
    default:
      return "declined";
  }
}
