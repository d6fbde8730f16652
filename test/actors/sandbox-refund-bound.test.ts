/**
 * The sandbox card processor stands for an outside processor: it must never refund more than it captured, whatever
 * its callers do at once (review RA: the amount was checked on a read, so refunds of different ids running together
 * each passed it). Real Postgres ledger, real concurrency.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { CardSandboxRail } from "../../actors/payments/card-sandbox.ts";
import { PgSandboxLedger } from "../../actors/payments/sandbox-ledger-pg.ts";
import { createTestDatabase, type TestDatabase } from "../helpers/db.ts";
import { capturedOn } from "../helpers/sandbox-rail.ts";

let db: TestDatabase;
beforeAll(async () => {
  db = await createTestDatabase({ poolSize: 20 });
});
afterAll(async () => {
  await db.drop();
});

describe("sandbox refunds under concurrency", () => {
  test("refunds of different ids sent at once never add up to more than the capture", async () => {
    for (let round = 0; round < 5; round++) {
      const rail = new CardSandboxRail({ ledger: new PgSandboxLedger(db.sql) });
      const capture = await capturedOn(rail, `cs_bound_${round}`);
      const answers = await Promise.all(
        Array.from({ length: 12 }, (_, i) => rail.refund({ refundId: `rf_${round}_${i}`, captureRef: capture.captureRef, amountMinor: 1_000 })),
      );
      const refunded = answers.filter((a) => a.status === "refunded");
      expect(refunded.length).toBe(4);
      expect(answers.filter((a) => a.status === "failed").every((a) => a.status === "failed" && a.reason === "exceeds_captured")).toBe(true);
      const [row] = await db.sql<{ refunded_minor: string }[]>`SELECT refunded_minor FROM sandbox_ledger_intents WHERE intent_id = ${capture.intentId}`;
      expect(Number(row!.refunded_minor)).toBe(4_000);
      // a refused refund's id keeps its refusal: asked again, it does not take the room another refund left
      const refusedId = answers.find((a) => a.status === "failed")!.refundId;
      expect((await rail.refund({ refundId: refusedId, captureRef: capture.captureRef, amountMinor: 100 })).status).toBe("failed");
    }
  });

  test("the same refund id sent many times at once is applied once", async () => {
    const rail = new CardSandboxRail({ ledger: new PgSandboxLedger(db.sql) });
    const capture = await capturedOn(rail, "cs_same_id");
    const answers = await Promise.all(Array.from({ length: 10 }, () => rail.refund({ refundId: "rf_same", captureRef: capture.captureRef, amountMinor: 1_500 })));
    expect(answers.every((a) => a.status === "refunded")).toBe(true);
    const [row] = await db.sql<{ refunded_minor: string }[]>`SELECT refunded_minor FROM sandbox_ledger_intents WHERE intent_id = ${capture.intentId}`;
    expect(Number(row!.refunded_minor)).toBe(1_500);
  });
});
