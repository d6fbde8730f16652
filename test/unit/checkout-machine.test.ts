import { describe, expect, test } from "bun:test";
import {
  CHECKOUT_EVENTS,
  CHECKOUT_STATUSES,
  PENDING_CONFIRMATION_TTL_MS,
  SESSION_TTL_MS,
  STALE_IN_PROGRESS_MS,
  TERMINAL_CHECKOUT_STATUSES,
  applyCheckoutEvent,
  bindIdempotencyKey,
  checkoutCell,
  decideComplete,
  isStaleInProgress,
  newCheckoutSession,
  newLeg,
  prepareLegsForCharge,
  settleLegs,
  type CheckoutSessionHeader,
  type CheckoutStatus,
  type PaymentLeg,
} from "../../actors/cart/checkout-machine.ts";
import { deriveIntentId } from "../../actors/payments/rail.ts";
import { ActorError } from "../../actors/runtime/errors.ts";

const T0 = Date.UTC(2025, 0, 1);
const KEY = "3b241101-e2bb-4255-8caf-4136c566a962";
const OTHER_KEY = "9f5c2a4e-1b7d-4c3e-a8f2-6d0e1b2c3a4f";

function errorOf(fn: () => unknown): ActorError | undefined {
  try {
    fn();
  } catch (e) {
    if (e instanceof ActorError) return e;
    throw e;
  }
  return undefined;
}

const sessionIn = (status: CheckoutStatus, extra: Partial<CheckoutSessionHeader> = {}): CheckoutSessionHeader => ({
  id: "cs_1",
  status,
  idempotencyKey: null,
  updatedAt: T0 - 1,
  expiresAt: T0, // due, so `expire` is legal where the table allows it
  ...extra,
});

const LEGAL: Record<string, { to: CheckoutStatus; reports?: string }> = {
  "OPEN/preview": { to: "READY_FOR_PAYMENT" },
  "OPEN/shipping_changed": { to: "OPEN" },
  "OPEN/cancel": { to: "CANCELED" },
  "OPEN/expire": { to: "EXPIRED" },
  "READY_FOR_PAYMENT/preview": { to: "READY_FOR_PAYMENT" },
  "READY_FOR_PAYMENT/begin_payment": { to: "IN_PROGRESS" },
  "READY_FOR_PAYMENT/shipping_changed": { to: "OPEN" },
  "READY_FOR_PAYMENT/state_blocked": { to: "FAILED", reports: "STATE_EXECUTION_BLOCKED" },
  "READY_FOR_PAYMENT/cancel": { to: "CANCELED" },
  "READY_FOR_PAYMENT/expire": { to: "EXPIRED" },
  "IN_PROGRESS/payment_captured": { to: "COMPLETED" },
  "IN_PROGRESS/payment_failed": { to: "READY_FOR_PAYMENT", reports: "PAYMENT_FAILED_ROLLED_BACK" },
  "IN_PROGRESS/payment_declined": { to: "READY_FOR_PAYMENT", reports: "PAYMENT_DECLINED" },
  "IN_PROGRESS/payment_not_approved": { to: "READY_FOR_PAYMENT", reports: "PAYMENT_NOT_APPROVED" },
  "IN_PROGRESS/buyer_approval_required": { to: "PENDING_EXTERNAL_CONFIRMATION" },
  "IN_PROGRESS/settlement_unknown": { to: "SETTLEMENT_UNKNOWN" },
  "PENDING_EXTERNAL_CONFIRMATION/resume_payment": { to: "IN_PROGRESS" },
  "PENDING_EXTERNAL_CONFIRMATION/payment_captured": { to: "COMPLETED" },
  "PENDING_EXTERNAL_CONFIRMATION/payment_failed": { to: "READY_FOR_PAYMENT", reports: "PAYMENT_FAILED_ROLLED_BACK" },
  "PENDING_EXTERNAL_CONFIRMATION/payment_declined": { to: "READY_FOR_PAYMENT", reports: "PAYMENT_DECLINED" },
  "PENDING_EXTERNAL_CONFIRMATION/payment_not_approved": { to: "READY_FOR_PAYMENT", reports: "PAYMENT_NOT_APPROVED" },
  "PENDING_EXTERNAL_CONFIRMATION/cancel": { to: "CANCELED" },
  "PENDING_EXTERNAL_CONFIRMATION/expire": { to: "EXPIRED" },
  "SETTLEMENT_UNKNOWN/payment_captured": { to: "COMPLETED" },
  "SETTLEMENT_UNKNOWN/payment_failed": { to: "READY_FOR_PAYMENT", reports: "PAYMENT_FAILED_ROLLED_BACK" },
  "SETTLEMENT_UNKNOWN/payment_declined": { to: "READY_FOR_PAYMENT", reports: "PAYMENT_DECLINED" },
  "SETTLEMENT_UNKNOWN/payment_not_approved": { to: "READY_FOR_PAYMENT", reports: "PAYMENT_NOT_APPROVED" },
  "SETTLEMENT_UNKNOWN/buyer_approval_required": { to: "PENDING_EXTERNAL_CONFIRMATION" },
  "SETTLEMENT_UNKNOWN/settlement_unknown": { to: "SETTLEMENT_UNKNOWN" },
};

const SPECIFIC_REFUSALS: Record<string, string> = {
  "OPEN/begin_payment": "PRECONDITION_NOT_MET",
  "IN_PROGRESS/begin_payment": "CHECKOUT_ALREADY_IN_PROGRESS",
  "SETTLEMENT_UNKNOWN/begin_payment": "CHECKOUT_ALREADY_IN_PROGRESS",
  "COMPLETED/begin_payment": "CHECKOUT_ALREADY_IN_PROGRESS",
};

describe("checkout-session transition table", () => {
  for (const status of CHECKOUT_STATUSES) {
    for (const event of CHECKOUT_EVENTS) {
      const key = `${status}/${event}`;
      const legal = LEGAL[key];
      if (legal) {
        test(`a ${status} session on ${event} moves to ${legal.to}${legal.reports ? ` reporting ${legal.reports}` : ""}`, () => {
          expect(checkoutCell(status, event)).toEqual(legal.reports ? { to: legal.to, reports: legal.reports as never } : { to: legal.to });
          const next = applyCheckoutEvent(sessionIn(status), event, T0);
          expect(next.status).toBe(legal.to);
          expect(next.updatedAt).toBe(T0);
        });
      } else {
        const code =
          SPECIFIC_REFUSALS[key] ?? (TERMINAL_CHECKOUT_STATUSES.has(status) ? "SESSION_INACTIVE" : "CHECKOUT_STATUS_INVALID");
        test(`a ${status} session refuses ${event} with ${code} naming the status`, () => {
          const err = errorOf(() => applyCheckoutEvent(sessionIn(status), event, T0));
          expect(err?.code).toBe(code as never);
          expect(err?.details?.status).toBe(status);
        });
      }
    }
  }

  test("a PRECONDITION_NOT_MET refusal names preview_checkout as the required step", () => {
    expect(errorOf(() => applyCheckoutEvent(sessionIn("OPEN"), "begin_payment", T0))?.details?.required_step).toBe("preview_checkout");
  });
});

describe("a shipping change after the preview", () => {
  test("sends a ready session back to OPEN, so completing it asks for a new preview first", () => {
    const s = applyCheckoutEvent(sessionIn("READY_FOR_PAYMENT", { idempotencyKey: KEY }), "shipping_changed", T0);
    expect(s.status).toBe("OPEN");
    expect(s.expiresAt).toBe(T0 + SESSION_TTL_MS);
    const err = errorOf(() => decideComplete(s, KEY));
    expect(err?.code).toBe("PRECONDITION_NOT_MET");
    expect(err?.details?.required_step).toBe("preview_checkout");
    expect(applyCheckoutEvent(s, "preview", T0 + 1).status).toBe("READY_FOR_PAYMENT");
  });

  for (const status of ["IN_PROGRESS", "PENDING_EXTERNAL_CONFIRMATION", "SETTLEMENT_UNKNOWN"] as const) {
    test(`is refused while the session is ${status}: money may be moving or the buyer is approving the old amount`, () => {
      const err = errorOf(() => applyCheckoutEvent(sessionIn(status), "shipping_changed", T0));
      expect(err?.code).toBe("CHECKOUT_STATUS_INVALID");
      expect(err?.details?.status).toBe(status);
    });
  }
});

describe("checkout-session expiry", () => {
  test("a ready session expires 30 minutes after it was previewed", () => {
    const s = newCheckoutSession("cs_1", T0, true);
    expect(s.status).toBe("READY_FOR_PAYMENT");
    expect(s.expiresAt).toBe(T0 + SESSION_TTL_MS);
  });

  test("a session created without a shipping quote starts OPEN", () => {
    expect(newCheckoutSession("cs_1", T0, false).status).toBe("OPEN");
  });

  test("an expiry reminder before the session is due is refused with conflict", () => {
    const s = newCheckoutSession("cs_1", T0, true);
    expect(errorOf(() => applyCheckoutEvent(s, "expire", T0 + SESSION_TTL_MS - 1))?.code).toBe("conflict");
    expect(applyCheckoutEvent(s, "expire", T0 + SESSION_TTL_MS).status).toBe("EXPIRED");
  });

  test("a session waiting for the buyer gets one hour to be approved", () => {
    const s = applyCheckoutEvent(sessionIn("IN_PROGRESS", { expiresAt: null }), "buyer_approval_required", T0);
    expect(s.expiresAt).toBe(T0 + PENDING_CONFIRMATION_TTL_MS);
  });

  test("a running payment or an unknown settlement never expires", () => {
    const s = applyCheckoutEvent(sessionIn("READY_FOR_PAYMENT"), "begin_payment", T0);
    expect(s.expiresAt).toBeNull();
    expect(errorOf(() => applyCheckoutEvent(s, "expire", T0 + 365 * 86400_000))?.code).toBe("CHECKOUT_STATUS_INVALID");
    const u = applyCheckoutEvent(s, "settlement_unknown", T0);
    expect(u.expiresAt).toBeNull();
  });

  test("a rollback to READY_FOR_PAYMENT gives the session a fresh 30 minutes", () => {
    const s = applyCheckoutEvent(sessionIn("IN_PROGRESS", { expiresAt: null }), "payment_failed", T0);
    expect(s.expiresAt).toBe(T0 + SESSION_TTL_MS);
  });

  test("an IN_PROGRESS session untouched for two minutes is stale and goes to reconciliation", () => {
    const s = sessionIn("IN_PROGRESS", { updatedAt: T0 });
    expect(isStaleInProgress(s, T0 + STALE_IN_PROGRESS_MS - 1)).toBe(false);
    expect(isStaleInProgress(s, T0 + STALE_IN_PROGRESS_MS)).toBe(true);
    expect(isStaleInProgress(sessionIn("PENDING_EXTERNAL_CONFIRMATION", { updatedAt: T0 }), T0 + STALE_IN_PROGRESS_MS)).toBe(false);
  });
});

describe("complete_checkout idempotency", () => {
  test("the first complete on a ready session starts and binds the key", () => {
    expect(decideComplete(sessionIn("READY_FOR_PAYMENT"), KEY)).toEqual({ action: "start", bindKey: true });
    expect(bindIdempotencyKey(sessionIn("READY_FOR_PAYMENT"), KEY).idempotencyKey).toBe(KEY);
  });

  test("binding the same key twice changes nothing", () => {
    const s = sessionIn("READY_FOR_PAYMENT", { idempotencyKey: KEY });
    expect(bindIdempotencyKey(s, KEY)).toBe(s);
  });

  test("binding a second key is refused with IDEMPOTENCY_KEY_CONFLICT", () => {
    expect(errorOf(() => bindIdempotencyKey(sessionIn("READY_FOR_PAYMENT", { idempotencyKey: KEY }), OTHER_KEY))?.code).toBe(
      "IDEMPOTENCY_KEY_CONFLICT",
    );
  });

  // EXPIRED answers CHECKOUT_SESSION_NOT_FOUND for every key (below).
  for (const status of CHECKOUT_STATUSES.filter((s) => s !== "EXPIRED")) {
    test(`a different key on a ${status} session bound to another key is IDEMPOTENCY_KEY_CONFLICT`, () => {
      const err = errorOf(() => decideComplete(sessionIn(status, { idempotencyKey: KEY }), OTHER_KEY));
      expect(err?.code).toBe("IDEMPOTENCY_KEY_CONFLICT");
      expect(err?.details?.status).toBe(status);
    });
  }

  test("a key conflict says what to do next and never echoes the bound key", () => {
    for (const err of [
      errorOf(() => decideComplete(sessionIn("READY_FOR_PAYMENT", { idempotencyKey: KEY }), OTHER_KEY)),
      errorOf(() => bindIdempotencyKey(sessionIn("READY_FOR_PAYMENT", { idempotencyKey: KEY }), OTHER_KEY)),
    ]) {
      expect(err?.details?.next).toEqual(["retry_with_first_key", "cancel_checkout_then_preview"]);
      expect(err?.message).toContain("retry with the key of its first attempt");
      expect(JSON.stringify([err?.message, err?.details])).not.toContain(KEY);
    }
  });

  const sameKey: Record<CheckoutStatus, string> = {
    OPEN: "PRECONDITION_NOT_MET",
    READY_FOR_PAYMENT: "start",
    IN_PROGRESS: "CHECKOUT_ALREADY_IN_PROGRESS",
    PENDING_EXTERNAL_CONFIRMATION: "resume",
    SETTLEMENT_UNKNOWN: "reconcile",
    COMPLETED: "CHECKOUT_ALREADY_IN_PROGRESS",
    FAILED: "SESSION_INACTIVE",
    EXPIRED: "CHECKOUT_SESSION_NOT_FOUND",
    CANCELED: "SESSION_INACTIVE",
  };
  for (const status of CHECKOUT_STATUSES) {
    const want = sameKey[status];
    test(`the same key on a ${status} session ${want === want.toLowerCase() ? `decides ${want}` : `is refused with ${want}`}`, () => {
      const s = sessionIn(status, { idempotencyKey: KEY });
      if (want === want.toLowerCase()) {
        expect(decideComplete(s, KEY).action).toBe(want as never);
      } else {
        const err = errorOf(() => decideComplete(s, KEY));
        expect(err?.code).toBe(want as never);
        expect(err?.details?.status).toBe(status);
      }
    });
  }

  test("a retry after a rollback with the same key starts a new attempt without rebinding", () => {
    expect(decideComplete(sessionIn("READY_FOR_PAYMENT", { idempotencyKey: KEY }), KEY)).toEqual({ action: "start", bindKey: false });
  });

  test("the same key on a completed session returns the existing order ids", () => {
    const err = errorOf(() => decideComplete(sessionIn("COMPLETED", { idempotencyKey: KEY }), KEY, ["ord_1", "ord_2"]));
    expect(err?.code).toBe("CHECKOUT_ALREADY_IN_PROGRESS");
    expect(err?.details?.order_ids).toEqual(["ord_1", "ord_2"]);
  });

  test("a missing idempotency key is MISSING_REQUIRED_ARGUMENT", () => {
    expect(errorOf(() => decideComplete(sessionIn("READY_FOR_PAYMENT"), undefined))?.code).toBe("MISSING_REQUIRED_ARGUMENT");
  });

  for (const bad of ["not-a-uuid", "3b241101-e2bb-1255-8caf-4136c566a962", 42]) {
    test(`an idempotency key ${JSON.stringify(bad)} that is not a UUID v4 is INVALID_ARGUMENT`, () => {
      const err = errorOf(() => decideComplete(sessionIn("READY_FOR_PAYMENT"), bad));
      expect(err?.code).toBe("INVALID_ARGUMENT");
      expect(err?.details?.field).toBe("idempotency_key");
    });
  }
});

describe("multi-store payment legs", () => {
  const legs = (): PaymentLeg[] => [newLeg("store-a", 1000, "USD"), newLeg("store-b", 2000, "USD")];

  test("preparing unpaid legs gives each a deterministic first-attempt intent id", () => {
    const p = prepareLegsForCharge("cs_1", KEY, legs());
    expect(p.map((l) => l.intentId)).toEqual([deriveIntentId("cs_1", KEY, "store-a", 1), deriveIntentId("cs_1", KEY, "store-b", 1)]);
    expect(p.every((l) => l.status === "processing" && l.attempt === 1)).toBe(true);
  });

  test("every leg captured completes the session", () => {
    const s = settleLegs(prepareLegsForCharge("cs_1", KEY, legs()), {
      "store-a": { outcome: "captured", captureRef: "cap_a" },
      "store-b": { outcome: "captured", captureRef: "cap_b" },
    });
    expect(s.event).toBe("payment_captured");
    expect(s.error).toBeUndefined();
    expect(s.completedStoreIds).toEqual(["store-a", "store-b"]);
  });

  test("when one store fails the paid store stays paid and the session rolls back for the other", () => {
    const s = settleLegs(prepareLegsForCharge("cs_1", KEY, legs()), {
      "store-a": { outcome: "captured", captureRef: "cap_a" },
      "store-b": { outcome: "failed" },
    });
    expect(s.event).toBe("payment_failed");
    expect(s.error?.code).toBe("PAYMENT_FAILED_ROLLED_BACK");
    expect(s.error?.details.completed_store_ids).toEqual(["store-a"]);
    expect(s.legs.map((l) => l.status)).toEqual(["captured", "unpaid"]);
  });

  test("a retry after a partial failure charges only the failed store, with a new intent id", () => {
    const first = prepareLegsForCharge("cs_1", KEY, legs());
    const settled = settleLegs(first, { "store-a": { outcome: "captured", captureRef: "cap_a" }, "store-b": { outcome: "declined" } });
    const retry = prepareLegsForCharge("cs_1", KEY, settled.legs);
    expect(retry[0]).toBe(settled.legs[0]);
    expect(retry[1].attempt).toBe(2);
    expect(retry[1].intentId).toBe(deriveIntentId("cs_1", KEY, "store-b", 2));
    expect(retry[1].intentId).not.toBe(first[1].intentId);
  });

  test("a leg waiting for approval keeps its intent id when resumed", () => {
    const first = prepareLegsForCharge("cs_1", KEY, legs());
    const settled = settleLegs(first, {
      "store-a": { outcome: "needs_buyer_approval", approvalUrl: "https://x/approve" },
      "store-b": { outcome: "captured", captureRef: "cap_b" },
    });
    expect(settled.event).toBe("buyer_approval_required");
    expect(settled.approvalUrls).toEqual([{ storeId: "store-a", url: "https://x/approve" }]);
    const resumed = prepareLegsForCharge("cs_1", KEY, settled.legs);
    expect(resumed[0].intentId).toBe(first[0].intentId);
    expect(resumed[0].attempt).toBe(1);
  });

  test("a leg without an answer is unknown and the session goes to SETTLEMENT_UNKNOWN before anything else", () => {
    const s = settleLegs(prepareLegsForCharge("cs_1", KEY, legs()), {
      "store-a": { outcome: "needs_buyer_approval", approvalUrl: "u" },
    });
    expect(s.event).toBe("settlement_unknown");
    expect(s.legs[1].status).toBe("unknown");
  });

  test("an unknown leg is reconciled under the same intent id", () => {
    const first = prepareLegsForCharge("cs_1", KEY, legs());
    const unknown = settleLegs(first, { "store-a": { outcome: "unknown" }, "store-b": { outcome: "captured", captureRef: "c" } });
    const again = prepareLegsForCharge("cs_1", KEY, unknown.legs);
    expect(again[0].intentId).toBe(first[0].intentId);
  });

  test("approval pending on one store outranks a failure on another", () => {
    const s = settleLegs(prepareLegsForCharge("cs_1", KEY, legs()), {
      "store-a": { outcome: "needs_buyer_approval", approvalUrl: "u" },
      "store-b": { outcome: "failed" },
    });
    expect(s.event).toBe("buyer_approval_required");
    expect(s.legs[1].status).toBe("unpaid");
  });

  const rollbackPrecedence: [string, string, string, string][] = [
    ["declined", "failed", "payment_declined", "PAYMENT_DECLINED"],
    ["not_approved", "failed", "payment_not_approved", "PAYMENT_NOT_APPROVED"],
    ["declined", "not_approved", "payment_declined", "PAYMENT_DECLINED"],
    ["failed", "failed", "payment_failed", "PAYMENT_FAILED_ROLLED_BACK"],
  ];
  for (const [a, b, event, code] of rollbackPrecedence) {
    test(`a ${a} leg with a ${b} leg rolls back reporting ${code}`, () => {
      const s = settleLegs(prepareLegsForCharge("cs_1", KEY, legs()), {
        "store-a": { outcome: a as never },
        "store-b": { outcome: b as never },
      });
      expect(s.event).toBe(event as never);
      expect(s.error?.code).toBe(code as never);
      expect(s.error?.details.status).toBe("READY_FOR_PAYMENT");
    });
  }
});
