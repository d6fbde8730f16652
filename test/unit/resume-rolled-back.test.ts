/**
 * Audit B2 F4, the pure half: what a 202 "the buyer must approve" says about a store whose leg rolled back in the same
 * attempt, and when the resume goes on to that store's new attempt in the same call.
 */
import { describe, expect, test } from "bun:test";
import {
  approvalMessage,
  newLeg,
  prepareLegsForCharge,
  resumeRetriesRolledBack,
  settleLegs,
  type LegResult,
  type PaymentLeg,
} from "../../actors/cart/checkout-machine.ts";

const KEY = "3b241101-e2bb-4255-8caf-4136c566a962";
const legs = (): PaymentLeg[] => [newLeg("store-a", 1000, "USD"), newLeg("store-b", 2000, "USD")];

/** store-a declined, store-b waiting for its buyer; then store-b's resume answers `resumed`. */
function declinedThenResumed(resumed: LegResult) {
  const pending = settleLegs(prepareLegsForCharge("cs_1", KEY, legs()), {
    "store-a": { outcome: "declined" },
    "store-b": { outcome: "needs_buyer_approval", approvalUrl: "u" },
  });
  const resumedLegs = pending.legs.map((l) => (l.status === "needs_buyer_approval" ? { ...l, status: "processing" as const } : l));
  return { pending, after: settleLegs(resumedLegs, { "store-b": resumed }) };
}

describe("a leg declined beside one waiting for the buyer", () => {
  test("the approval's settlement lists every store with its status and last outcome", () => {
    const { pending } = declinedThenResumed({ outcome: "captured", captureRef: "c" });
    expect(pending.event).toBe("buyer_approval_required");
    expect(pending.stores).toEqual([
      { store_id: "store-a", status: "unpaid", outcome: "declined" },
      { store_id: "store-b", status: "needs_buyer_approval", outcome: "needs_buyer_approval" },
    ]);
  });

  test("the resume goes on to the declined store once the approved store is captured", () => {
    const { after } = declinedThenResumed({ outcome: "captured", captureRef: "c" });
    expect(after.event).toBe("payment_declined");
    expect(resumeRetriesRolledBack(["store-a"], { status: "READY_FOR_PAYMENT", legs: after.legs })).toBe(true);
  });

  for (const outcome of ["not_approved", "failed", "declined"] as const) {
    test(`the resume stops at its own answer when the approved store's payment is ${outcome}`, () => {
      const { after } = declinedThenResumed({ outcome });
      expect(resumeRetriesRolledBack(["store-a"], { status: "READY_FOR_PAYMENT", legs: after.legs })).toBe(false);
    });
  }

  test("the resume stops while the buyer has not approved yet or the answer is unknown", () => {
    const waiting = declinedThenResumed({ outcome: "needs_buyer_approval", approvalUrl: "u" }).after;
    expect(resumeRetriesRolledBack(["store-a"], { status: "PENDING_EXTERNAL_CONFIRMATION", legs: waiting.legs })).toBe(false);
    const unknown = declinedThenResumed({ outcome: "unknown" }).after;
    expect(resumeRetriesRolledBack(["store-a"], { status: "SETTLEMENT_UNKNOWN", legs: unknown.legs })).toBe(false);
  });

  test("nothing rolled back before the resume means nothing to go on to", () => {
    const captured = [{ ...newLeg("store-b", 2000, "USD"), status: "captured" as const }];
    expect(resumeRetriesRolledBack([], { status: "READY_FOR_PAYMENT", legs: captured })).toBe(false);
  });
});

describe("the 202's text", () => {
  test("without a rolled-back store it only says to approve and call again", () => {
    const text = approvalMessage([{ store_id: "store-b", status: "needs_buyer_approval", outcome: "needs_buyer_approval" }], "payment_methods");
    expect(text).toBe("The buyer must approve the payment at the link; then call again with the same checkout_session_id and idempotency_key.");
  });

  test("names each rolled-back store, what happened there and the field for its new payment method", () => {
    const text = approvalMessage(
      [
        { store_id: "store-a", status: "unpaid", outcome: "declined" },
        { store_id: "store-c", status: "unpaid", outcome: "failed" },
        { store_id: "store-b", status: "needs_buyer_approval", outcome: "needs_buyer_approval" },
      ],
      "payment_methods",
    );
    expect(text).toContain("store-a was declined; store-c was not charged (the payment failed)");
    expect(text).toContain("new payment method for them in payment_methods");
    expect(text).toContain("the same call charges them");
  });
});
