/**
 * The sandbox processor's refund transaction is bounded (review RG-3: `sql.begin` passed the pool's query deadline
 * by, so a refund waiting on a held row lock, or on a pool with no connection free, kept its caller waiting for
 * good). Past the bound the caller gets a retryable "database unavailable" error, nothing of the refund is written,
 * and the retry under the same refund id refunds exactly once. Real Postgres, a real row lock.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { CardSandboxRail } from "../../actors/payments/card-sandbox.ts";
import { PgSandboxLedger } from "../../actors/payments/sandbox-ledger-pg.ts";
import { connect, isDatabaseUnavailable, isNeverSent } from "../../infra/db.ts";
import { createTestDatabase, type TestDatabase } from "../helpers/db.ts";
import { capturedOn } from "../helpers/sandbox-rail.ts";
import { PgProxy } from "../helpers/pg-proxy.ts";

const BOUND_MS = 400;

let db: TestDatabase;
beforeAll(async () => {
  db = await createTestDatabase();
});
afterAll(async () => {
  await db.drop();
});

async function refundedMinor(intentId: string): Promise<number> {
  const [row] = await db.sql<{ refunded_minor: number }[]>`SELECT refunded_minor FROM sandbox_ledger_intents WHERE intent_id = ${intentId}`;
  return Number(row!.refunded_minor);
}

async function refundRows(refundId: string): Promise<number> {
  const [row] = await db.sql<{ n: number }[]>`SELECT count(*)::int AS n FROM sandbox_ledger_refunds WHERE refund_id = ${refundId}`;
  return row!.n;
}

/** The error a promise rejects with, and how long it took (null if it resolved). */
async function failure(p: Promise<unknown>): Promise<{ error: unknown; ms: number } | null> {
  const start = Date.now();
  try {
    await p;
    return null;
  } catch (error) {
    return { error, ms: Date.now() - start };
  }
}

describe("the sandbox refund's transaction has a deadline", () => {
  test("a refund blocked by a held lock on its intent answers a retryable error within the bound, and its retry refunds once", async () => {
    const rail = new CardSandboxRail({ ledger: new PgSandboxLedger(db.sql, { refundDeadlineMs: BOUND_MS }) });
    const capture = await capturedOn(rail, "cs_deadline_lock");
    const holder = await db.sql.reserve();
    try {
      await holder`BEGIN`;
      await holder`SELECT intent_id FROM sandbox_ledger_intents WHERE intent_id = ${capture.intentId} FOR UPDATE`;
      const failed = await failure(rail.refund({ refundId: "rf_lock", captureRef: capture.captureRef, amountMinor: 1_000 }));
      expect(failed).not.toBeNull();
      expect(isDatabaseUnavailable(failed!.error)).toBe(true);
      // the server's cancellation (lock_timeout 55P03 or statement_timeout 57014: a definite rollback), not the
      // client's own give-up after the grace (QUERY_DEADLINE: an unknown outcome)
      expect(["55P03", "57014"]).toContain((failed!.error as { code?: string }).code ?? "");
      expect(failed!.ms).toBeLessThan(BOUND_MS + 1_500);
      // the server cancelled the lock wait and rolled the whole transaction back: no record claims the id, no debit
      expect(await refundRows("rf_lock")).toBe(0);
      expect(await refundedMinor(capture.intentId)).toBe(0);
    } finally {
      await holder`COMMIT`.catch(() => {});
      holder.release();
    }
    const first = await rail.refund({ refundId: "rf_lock", captureRef: capture.captureRef, amountMinor: 1_000 });
    expect(first.status).toBe("refunded");
    const again = await rail.refund({ refundId: "rf_lock", captureRef: capture.captureRef, amountMinor: 1_000 });
    expect(again).toEqual(first);
    expect(await refundRows("rf_lock")).toBe(1);
    expect(await refundedMinor(capture.intentId)).toBe(1_000);
  });

  test("a refund whose transaction cannot begin (no connection free) answers a retryable error within the bound and leaves nothing behind", async () => {
    const pool = connect(db.url, 1);
    try {
      const ledger = new PgSandboxLedger(pool, { refundDeadlineMs: BOUND_MS });
      const rail = new CardSandboxRail({ ledger });
      const capture = await capturedOn(rail, "cs_deadline_pool");
      const debit = { intentId: capture.intentId, amountMinor: 700, updatedAt: Date.now() };
      const record = { refundId: "rf_pool", captureRef: capture.captureRef, result: { status: "refunded" as const, refundId: "rf_pool", refundRef: "re_pool", amountMinor: 700 } };
      const only = await pool.reserve();
      let failed: Awaited<ReturnType<typeof failure>>;
      try {
        failed = await failure(ledger.insertRefund(record, debit));
      } finally {
        only.release();
      }
      expect(failed).not.toBeNull();
      expect(isDatabaseUnavailable(failed!.error)).toBe(true);
      expect(isNeverSent(failed!.error)).toBe(true);
      expect(failed!.ms).toBeLessThan(BOUND_MS + 1_500);
      // the transaction queued for the connection starts once it is free, finds it was given up and rolls back
      await Bun.sleep(100);
      await pool`SELECT 1`;
      expect(await refundRows("rf_pool")).toBe(0);
      expect(await refundedMinor(capture.intentId)).toBe(0);
      const stored = await ledger.insertRefund(record, debit);
      expect(stored.result.status).toBe("refunded");
      expect(await refundedMinor(capture.intentId)).toBe(700);
    } finally {
      await pool.end({ timeout: 1 });
    }
  });

  test("a refund on a database that stopped answering answers a retryable error within the bound, and its retry after the stall refunds once", async () => {
    const proxy = await PgProxy.toTestServer();
    const pool = connect(proxy.via(db.url), 2);
    try {
      const ledger = new PgSandboxLedger(pool, { refundDeadlineMs: BOUND_MS });
      const rail = new CardSandboxRail({ ledger });
      const capture = await capturedOn(rail, "cs_deadline_stall");
      const debit = { intentId: capture.intentId, amountMinor: 900, updatedAt: Date.now() };
      const record = { refundId: "rf_stall", captureRef: capture.captureRef, result: { status: "refunded" as const, refundId: "rf_stall", refundRef: "re_stall", amountMinor: 900 } };
      proxy.stall();
      const failed = await failure(ledger.insertRefund(record, debit));
      expect(failed).not.toBeNull();
      expect(isDatabaseUnavailable(failed!.error)).toBe(true);
      expect(failed!.ms).toBeLessThan(BOUND_MS + 1_500);
      proxy.resume();
      // the BEGIN answered late: the body found it was given up and rolled back
      await Bun.sleep(100);
      await pool`SELECT 1`;
      expect(await refundRows("rf_stall")).toBe(0);
      expect(await refundedMinor(capture.intentId)).toBe(0);
      expect((await ledger.insertRefund(record, debit)).result.status).toBe("refunded");
      expect((await ledger.insertRefund(record, debit)).result.status).toBe("refunded");
      expect(await refundRows("rf_stall")).toBe(1);
      expect(await refundedMinor(capture.intentId)).toBe(900);
    } finally {
      proxy.resume();
      await pool.end({ timeout: 1 });
      await proxy.down();
    }
  });
});
