/**
 * The sandbox card processor's ledger in Postgres. The sandbox plays an external processor, so its memory must
 * outlive our process: a capture made just before a crash is found again by intent id on restart, and the
 * reconciler never captures twice. Insert-if-absent gives the processor's idempotency per intent id.
 */
import { beginWithin, type Sql } from "../../infra/db.ts";
import type { RefundResult } from "./rail.ts";
import type { IntentTransition, RefundDebit, SandboxIntentRecord, SandboxIntentState, SandboxLedgerStore, SandboxRefundRecord } from "./card-sandbox.ts";

interface IntentRow {
  intent_id: string;
  store_id: string;
  amount_minor: number;
  currency: string;
  token: string;
  state: string;
  capture_ref: string | null;
  refunded_minor: number;
  simulated: boolean;
  response_lost: boolean;
  approval_token: string | null;
  created_at: Date;
  updated_at: Date;
}

const fromRow = (r: IntentRow): SandboxIntentRecord => ({
  intentId: r.intent_id,
  storeId: r.store_id,
  amountMinor: Number(r.amount_minor),
  currency: r.currency,
  token: r.token,
  state: r.state as SandboxIntentState,
  captureRef: r.capture_ref,
  refundedMinor: Number(r.refunded_minor),
  simulated: r.simulated,
  responseLost: r.response_lost,
  approvalToken: r.approval_token,
  createdAt: r.created_at.getTime(),
  updatedAt: r.updated_at.getTime(),
});

/**
 * How long a refund's transaction (`insertRefund`) may take before its caller gets a retryable "database
 * unavailable" (503 service_unavailable): waiting for a connection, for a stalled server, or for the intent's row while
 * another transaction holds it (review RG-3: it had no bound at all). Below the actor ask timeout (10 s), so the store
 * turn driving the refund answers that error itself, and its caller gets it, rather than a bare ask timeout while the
 * turn still waits; far above what the transaction takes (four short statements on one row).
 */
export const SANDBOX_REFUND_DEADLINE_MS = 5_000;

export class PgSandboxLedger implements SandboxLedgerStore {
  private readonly refundDeadlineMs: number;

  constructor(
    private readonly sql: Sql,
    opts: { refundDeadlineMs?: number } = {},
  ) {
    this.refundDeadlineMs = opts.refundDeadlineMs ?? SANDBOX_REFUND_DEADLINE_MS;
  }

  async getIntent(intentId: string): Promise<SandboxIntentRecord | undefined> {
    const rows = await this.sql<IntentRow[]>`SELECT * FROM sandbox_ledger_intents WHERE intent_id = ${intentId}`;
    return rows[0] && fromRow(rows[0]);
  }

  async insertIntent(r: SandboxIntentRecord): Promise<SandboxIntentRecord> {
    // One statement: insert, or return the existing row (the first record for an intent id wins).
    const rows = await this.sql<IntentRow[]>`
      WITH ins AS (
        INSERT INTO sandbox_ledger_intents (intent_id, store_id, amount_minor, currency, token, state, capture_ref,
          refunded_minor, simulated, response_lost, approval_token, created_at, updated_at)
        VALUES (${r.intentId}, ${r.storeId}, ${r.amountMinor}, ${r.currency}, ${r.token}, ${r.state}, ${r.captureRef},
          ${r.refundedMinor}, ${r.simulated}, ${r.responseLost}, ${r.approvalToken}, ${new Date(r.createdAt)}, ${new Date(r.updatedAt)})
        ON CONFLICT (intent_id) DO NOTHING
        RETURNING *)
      SELECT * FROM ins UNION ALL SELECT * FROM sandbox_ledger_intents WHERE intent_id = ${r.intentId} AND NOT EXISTS (SELECT 1 FROM ins)`;
    if (rows[0]) return fromRow(rows[0]);
    // Lost a race with a concurrent insert that was not yet visible to the statement's snapshot.
    const again = await this.getIntent(r.intentId);
    if (!again) throw new Error(`sandbox ledger: intent ${r.intentId} neither inserted nor found`);
    return again;
  }

  async transitionIntent(intentId: string, from: SandboxIntentState, change: IntentTransition): Promise<SandboxIntentRecord | undefined> {
    // Compare-and-set: the condition on the state is checked again on the newest row version when a concurrent write
    // got there first (READ COMMITTED re-check), so a decision that read a stale state updates nothing.
    const rows = await this.sql<IntentRow[]>`
      UPDATE sandbox_ledger_intents SET state = ${change.state}, capture_ref = COALESCE(${change.captureRef ?? null}::text, capture_ref),
        updated_at = ${new Date(change.updatedAt)}
      WHERE intent_id = ${intentId} AND state = ${from}
      RETURNING *`;
    return rows[0] && fromRow(rows[0]);
  }

  async clearResponseLost(intentId: string, updatedAt: number): Promise<boolean> {
    const rows = await this.sql`
      UPDATE sandbox_ledger_intents SET response_lost = false, updated_at = ${new Date(updatedAt)}
      WHERE intent_id = ${intentId} AND state = 'captured' AND response_lost
      RETURNING intent_id`;
    return rows.length > 0;
  }

  async assignApprovalToken(intentId: string, token: string): Promise<string> {
    // One statement: the first token stored wins, also against a concurrent assignment.
    const rows = await this.sql<{ approval_token: string }[]>`
      UPDATE sandbox_ledger_intents SET approval_token = COALESCE(approval_token, ${token})
      WHERE intent_id = ${intentId} RETURNING approval_token`;
    if (!rows[0]) throw new Error(`sandbox ledger: no intent ${intentId}`);
    return rows[0].approval_token;
  }

  async findIntentByCapture(captureRef: string): Promise<SandboxIntentRecord | undefined> {
    const rows = await this.sql<IntentRow[]>`SELECT * FROM sandbox_ledger_intents WHERE capture_ref = ${captureRef}`;
    return rows[0] && fromRow(rows[0]);
  }

  async getRefund(refundId: string): Promise<SandboxRefundRecord | undefined> {
    const rows = await this.sql<{ refund_id: string; capture_ref: string; result: RefundResult }[]>`
      SELECT refund_id, capture_ref, result FROM sandbox_ledger_refunds WHERE refund_id = ${refundId}`;
    return rows[0] && { refundId: rows[0].refund_id, captureRef: rows[0].capture_ref, result: rows[0].result };
  }

  async insertRefund(record: SandboxRefundRecord, debit?: RefundDebit): Promise<SandboxRefundRecord> {
    // One transaction: the record claims the refund id (a concurrent insert of the same id waits on it, then finds it),
    // then the intent's refunded amount grows only while it stays within the capture. The caller's check of the amount
    // was a read: two refunds of different ids running at once both passed it (review RA), so the bound is decided here,
    // on the intent's row, and a refund that no longer fits is recorded as refused (exceeds_captured) with no debit.
    // Bounded (beginWithin, review RG-3): a timeout is an unknown outcome, never a refusal. It is thrown, not recorded;
    // the server's cancellation rolls the whole transaction back (no record, no debit), and the refund flow's
    // DatabaseUnavailable path leaves the refund APPROVED for its re-drive (refund-flow.ts `driveRefundRows`), whose
    // call under the same refund id finds the record if a late commit did write it, so it is applied once either way.
    return beginWithin(this.sql, this.refundDeadlineMs, async (tx) => {
      const inserted = await tx`
        INSERT INTO sandbox_ledger_refunds (refund_id, capture_ref, result)
        VALUES (${record.refundId}, ${record.captureRef}, ${tx.json(record.result as never)}) ON CONFLICT (refund_id) DO NOTHING
        RETURNING refund_id`;
      if (inserted.length === 0) {
        const rows = await tx<{ result: RefundResult }[]>`SELECT result FROM sandbox_ledger_refunds WHERE refund_id = ${record.refundId}`;
        return rows[0] ? { ...record, result: rows[0].result } : record;
      }
      if (!debit) return record;
      const debited = await tx`
        UPDATE sandbox_ledger_intents SET refunded_minor = refunded_minor + ${debit.amountMinor}, updated_at = ${new Date(debit.updatedAt)}
        WHERE intent_id = ${debit.intentId} AND refunded_minor + ${debit.amountMinor} <= amount_minor
        RETURNING 1`;
      if (debited.length > 0) return record;
      const refused: RefundResult = { status: "failed", refundId: record.refundId, reason: "exceeds_captured" };
      await tx`UPDATE sandbox_ledger_refunds SET result = ${tx.json(refused as never)} WHERE refund_id = ${record.refundId}`;
      return { ...record, result: refused };
    }) as Promise<SandboxRefundRecord>;
  }

}
