import { describe, expect, test } from "bun:test";
import {
  DEFAULT_RETURN_WINDOW_DAYS,
  REFUND_EVENTS,
  REFUND_STATUSES,
  applyRefundEvent,
  orderEventAfterRefund,
  refundableMinor,
  returnWindowEndsAt,
  validateRefundRequest,
  type RefundActor,
  type RefundRecordLike,
  type RefundRequestInput,
  type RefundStatus,
} from "../../actors/store/refunds.ts";
import { ActorError } from "../../actors/runtime/errors.ts";

const DAY = 86_400_000;
const T0 = Date.UTC(2025, 0, 1);

function errorOf(fn: () => unknown): ActorError | undefined {
  try {
    fn();
  } catch (e) {
    if (e instanceof ActorError) return e;
    throw e;
  }
  return undefined;
}

const req = (over: Partial<RefundRequestInput> = {}): RefundRequestInput => ({
  order: { status: "delivered", totalMinor: 10_000, createdAt: T0, deliveredAt: T0 + 3 * DAY },
  refunds: [],
  policy: { returnWindowDays: 14 },
  now: T0 + 4 * DAY,
  ...over,
});

const LEGAL: Record<string, [RefundStatus, RefundActor]> = {
  "PENDING_APPROVAL/approve": ["APPROVED", "merchant"],
  "PENDING_APPROVAL/reject": ["REJECTED", "merchant"],
  "APPROVED/settle": ["REFUNDED", "system"],
  "APPROVED/fail": ["FAILED", "system"],
  "FAILED/retry": ["APPROVED", "merchant"],
  "FAILED/reject": ["REJECTED", "merchant"],
  "PENDING_APPROVAL/supersede": ["REJECTED", "system"],
  "FAILED/supersede": ["REJECTED", "system"],
};

describe("refund transition table", () => {
  for (const status of REFUND_STATUSES) {
    for (const event of REFUND_EVENTS) {
      for (const actor of ["merchant", "system"] as const) {
        const legal = LEGAL[`${status}/${event}`];
        if (legal && legal[1] === actor) {
          test(`the ${actor} may ${event} a ${status} refund, making it ${legal[0]}`, () => {
            expect(applyRefundEvent({ status, amountMinor: 1 }, event, actor).status).toBe(legal[0]);
          });
        } else {
          test(`the ${actor} may not ${event} a ${status} refund`, () => {
            const err = errorOf(() => applyRefundEvent({ status, amountMinor: 1 }, event, actor));
            expect(err?.code).toBe("conflict");
            expect(err?.details?.status).toBe(status);
          });
        }
      }
    }
  }
});

describe("refund amount bounds", () => {
  test("an omitted amount requests the full remaining amount", () => {
    expect(validateRefundRequest(req())).toEqual({ amountMinor: 10_000, reason: null });
  });

  test("refundable is total minus refunded minus in flight; rejected and failed ones do not count", () => {
    const refunds: RefundRecordLike[] = [
      { status: "REFUNDED", amountMinor: 1_000 },
      { status: "PENDING_APPROVAL", amountMinor: 2_000 },
      { status: "APPROVED", amountMinor: 500 },
      { status: "REJECTED", amountMinor: 4_000 },
      { status: "FAILED", amountMinor: 300 },
    ];
    expect(refundableMinor(10_000, refunds)).toBe(6_500);
    expect(validateRefundRequest(req({ refunds })).amountMinor).toBe(6_500);
  });

  test("exactly the refundable amount is accepted", () => {
    expect(validateRefundRequest(req({ amount: 10_000 })).amountMinor).toBe(10_000);
  });

  test("one cent over the refundable amount is INVALID_ARGUMENT naming what is refundable", () => {
    const err = errorOf(() => validateRefundRequest(req({ amount: 10_001 })));
    expect(err?.code).toBe("INVALID_ARGUMENT");
    expect(err?.details).toEqual({ field: "amount", refundable_minor: 10_000 });
  });

  for (const bad of [0, -1, 1.5, "100", Number.NaN]) {
    test(`an amount of ${JSON.stringify(bad)} is INVALID_ARGUMENT`, () => {
      const err = errorOf(() => validateRefundRequest(req({ amount: bad })));
      expect(err?.code).toBe("INVALID_ARGUMENT");
      expect(err?.details?.field).toBe("amount");
    });
  }

  test("an amount of one cent is accepted", () => {
    expect(validateRefundRequest(req({ amount: 1 })).amountMinor).toBe(1);
  });

  test("a fully refunded or fully claimed order has nothing left (conflict)", () => {
    const err = errorOf(() => validateRefundRequest(req({ refunds: [{ status: "PENDING_APPROVAL", amountMinor: 10_000 }] })));
    expect(err?.code).toBe("conflict");
    expect(err?.details?.refundable_minor).toBe(0);
  });

  for (const status of ["pending", "canceled", "refunded"] as const) {
    test(`a ${status} order cannot be refunded by request`, () => {
      expect(errorOf(() => validateRefundRequest(req({ order: { ...req().order, status } })))?.code).toBe("conflict");
    });
  }
});

describe("refund reason", () => {
  test("a 255-character reason is accepted", () => {
    expect(validateRefundRequest(req({ reason: "x".repeat(255) })).reason).toHaveLength(255);
  });
  test("a 256-character reason is INVALID_ARGUMENT", () => {
    const err = errorOf(() => validateRefundRequest(req({ reason: "x".repeat(256) })));
    expect(err?.code).toBe("INVALID_ARGUMENT");
    expect(err?.details).toEqual({ field: "reason", length: 256 });
  });
  test("255 emoji count as 255 characters, not 510 UTF-16 units", () => {
    expect(validateRefundRequest(req({ reason: "📦".repeat(255) })).reason).toBe("📦".repeat(255));
  });
  test("a non-string reason is INVALID_ARGUMENT", () => {
    expect(errorOf(() => validateRefundRequest(req({ reason: 5 })))?.details?.field).toBe("reason");
  });
});

describe("return window", () => {
  const delivered = T0 + 3 * DAY;
  test("the window runs from delivery", () => {
    expect(returnWindowEndsAt({ createdAt: T0, deliveredAt: delivered }, 14)).toBe(delivered + 14 * DAY);
  });
  test("the window runs from creation when the order was never delivered", () => {
    expect(returnWindowEndsAt({ createdAt: T0, deliveredAt: null }, 14)).toBe(T0 + 14 * DAY);
  });
  test("a store without a declared window gets the default", () => {
    expect(returnWindowEndsAt({ createdAt: T0, deliveredAt: null }, null)).toBe(T0 + DEFAULT_RETURN_WINDOW_DAYS * DAY);
  });
  test("a request at the last instant of the window is accepted", () => {
    expect(validateRefundRequest(req({ now: delivered + 14 * DAY })).amountMinor).toBe(10_000);
  });
  test("a request one millisecond after the window is RETURN_WINDOW_EXPIRED", () => {
    const err = errorOf(() => validateRefundRequest(req({ now: delivered + 14 * DAY + 1 })));
    expect(err?.code).toBe("RETURN_WINDOW_EXPIRED");
    expect(err?.details?.return_window_days).toBe(14);
  });
  test("a zero-day window refuses any later request", () => {
    expect(errorOf(() => validateRefundRequest(req({ policy: { returnWindowDays: 0 } })))?.code).toBe("RETURN_WINDOW_EXPIRED");
  });
});

describe("order after a settled refund", () => {
  test("refunds covering the total make the order refunded, less makes it partially refunded", () => {
    expect(orderEventAfterRefund(10_000, [{ status: "REFUNDED", amountMinor: 10_000 }])).toBe("refund_full");
    expect(orderEventAfterRefund(10_000, [{ status: "REFUNDED", amountMinor: 9_999 }, { status: "APPROVED", amountMinor: 1 }])).toBe("refund_partial");
  });
});
