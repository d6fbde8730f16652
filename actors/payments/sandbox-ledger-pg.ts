/**
 * The sandbox card processor's ledger in Postgres. The sandbox plays an external processor, so its memory must
 * outlive our process: a capture made just before a crash is found again by intent id on restart, and the
 * reconciler never captures twice. Insert-if-absent gives the processor's idempotency per intent id.
 */
import type { Sql } from "../../infra/db.ts";
import type { RefundResult } from "./rail.ts";
import type { RefundDebit, SandboxIntentRecord, SandboxIntentState, SandboxLedgerStore, SandboxRefundRecord } from "./card-sandbox.ts";

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
  createdAt: r.created_at.getTime(),
  updatedAt: r.updated_at.getTime(),
});

export class PgSandboxLedger implements SandboxLedgerStore {
  constructor(private readonly sql: Sql) {}

  async getIntent(intentId: string): Promise<SandboxIntentRecord | undefined> {
    const rows = await this.sql<IntentRow[]>`SELECT * FROM sandbox_ledger_intents WHERE intent_id = ${intentId}`;
    return rows[0] && fromRow(rows[0]);
  }

  async insertIntent(r: SandboxIntentRecord): Promise<SandboxIntentRecord> {
    // One statement: insert, or return the existing row (the first record for an intent id wins).
    const rows = await this.sql<IntentRow[]>`
      WITH ins AS (
        INSERT INTO sandbox_ledger_intents (intent_id, store_id, amount_minor, currency, token, state, capture_ref,
          refunded_minor, simulated, response_lost, created_at, updated_at)
        VALUES (${r.intentId}, ${r.storeId}, ${r.amountMinor}, ${r.currency}, ${r.token}, ${r.state}, ${r.captureRef},
          ${r.refundedMinor}, ${r.simulated}, ${r.responseLost}, ${new Date(r.createdAt)}, ${new Date(r.updatedAt)})
        ON CONFLICT (intent_id) DO NOTHING
        RETURNING *)
      SELECT * FROM ins UNION ALL SELECT * FROM sandbox_ledger_intents WHERE intent_id = ${r.intentId} AND NOT EXISTS (SELECT 1 FROM ins)`;
    if (rows[0]) return fromRow(rows[0]);
    // Lost a race with a concurrent insert that was not yet visible to the statement's snapshot.
    const again = await this.getIntent(r.intentId);
    if (!again) throw new Error(`sandbox ledger: intent ${r.intentId} neither inserted nor found`);
    return again;
  }

  async updateIntent(r: SandboxIntentRecord): Promise<void> {
    await this.sql`
      UPDATE sandbox_ledger_intents SET state = ${r.state}, capture_ref = ${r.captureRef}, refunded_minor = ${r.refundedMinor},
        response_lost = ${r.responseLost}, updated_at = ${new Date(r.updatedAt)}
      WHERE intent_id = ${r.intentId}`;
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
    // One statement: the record and (only when it was inserted) the intent's refunded amount, both or neither.
    await this.sql`
      WITH ins AS (
        INSERT INTO sandbox_ledger_refunds (refund_id, capture_ref, result)
        VALUES (${record.refundId}, ${record.captureRef}, ${this.sql.json(record.result as never)}) ON CONFLICT (refund_id) DO NOTHING
        RETURNING refund_id)
      UPDATE sandbox_ledger_intents SET refunded_minor = refunded_minor + ${debit?.amountMinor ?? 0}, updated_at = ${new Date(debit?.updatedAt ?? 0)}
      WHERE intent_id = ${debit?.intentId ?? null} AND EXISTS (SELECT 1 FROM ins)`;
    return (await this.getRefund(record.refundId)) ?? record;
  }
}
