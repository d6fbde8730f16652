import { describe, expect, test } from "bun:test";
import { ActorError } from "../../actors/runtime/errors.ts";
import { MAX_OPEN_REFUNDS_PER_ORDER, assertApprovable, validateRefundRequest, type RefundRecordLike } from "../../actors/store/refunds.ts";

const T0 = Date.UTC(2025, 0, 1);
const open = (n: number): RefundRecordLike[] => Array.from({ length: n }, () => ({ status: "PENDING_APPROVAL" as const, amountMinor: 1 }));
const request = (refunds: RefundRecordLike[], amount?: number) =>
  validateRefundRequest({ order: { status: "paid", totalMinor: 10_000, createdAt: T0, deliveredAt: null }, refunds, policy: {}, amount, now: T0 + 1 });

function errorOf(fn: () => unknown): ActorError | undefined {
  try {
    fn();
  } catch (e) {
    if (e instanceof ActorError) return e;
    throw e;
  }
  return undefined;
}

describe("open refund requests per order", () => {
  test(`a request is accepted while fewer than ${MAX_OPEN_REFUNDS_PER_ORDER} wait for the merchant`, () => {
    expect(request(open(MAX_OPEN_REFUNDS_PER_ORDER - 1), 1)).toEqual({ amountMinor: 1, reason: null });
  });
  test("the next one is conflict with the open count; decided and failed requests do not count", () => {
    const err = errorOf(() => request(open(MAX_OPEN_REFUNDS_PER_ORDER), 1));
    expect(err?.code).toBe("conflict");
    expect(err?.details).toEqual({ reason: "too_many_open_refunds", open_refunds: 5, max_open_refunds: 5 });
    const decided: RefundRecordLike[] = [...open(4), { status: "REJECTED", amountMinor: 1 }, { status: "FAILED", amountMinor: 1 }, { status: "REFUNDED", amountMinor: 1 }];
    expect(request(decided).amountMinor).toBe(10_000 - 4 - 1);
  });
});

describe("approving or retrying a refund", () => {
  test("a pending request within the bound is approvable (it counts itself once)", () => {
    const r: RefundRecordLike = { status: "PENDING_APPROVAL", amountMinor: 6_000 };
    expect(() => assertApprovable(10_000, r, [r, { status: "PENDING_APPROVAL", amountMinor: 4_000 }])).not.toThrow();
  });
  test("a FAILED refund whose share was taken since is conflict exceeds_refundable", () => {
    const r: RefundRecordLike = { status: "FAILED", amountMinor: 6_000 };
    const err = errorOf(() => assertApprovable(10_000, r, [r, { status: "REFUNDED", amountMinor: 3_000 }, { status: "PENDING_APPROVAL", amountMinor: 2_000 }]));
    expect(err?.code).toBe("conflict");
    expect(err?.details).toEqual({ reason: "exceeds_refundable", status: "FAILED", amount_minor: 6_000, refundable_minor: 5_000 });
    expect(() => assertApprovable(10_000, r, [r, { status: "REFUNDED", amountMinor: 4_000 }])).not.toThrow();
  });
});
