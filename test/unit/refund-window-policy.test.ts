/**
 * The refund rule's return window is the one every view of a store's policies shows (audit M-4): refunds.ts
 * refundWindowDays against ingest.ts policiesView, for a store that does not accept returns, one that accepts them
 * with a window, and one that declares none (the views show none; the rule applies the 30-day default).
 */
import { expect, test } from "bun:test";
import { policiesView } from "../../actors/store/ingest.ts";
import { DEFAULT_RETURN_WINDOW_DAYS, refundWindowDays, validateRefundRequest } from "../../actors/store/refunds.ts";

const DAY = 24 * 60 * 60 * 1000;
const T0 = Date.UTC(2026, 10, 1);

test("a store that does not accept returns has a 0-day window for refunds, as its policies view shows", () => {
  expect(policiesView({ acceptsReturns: false }, "USD").returnWindowDays).toBe(0);
  expect(refundWindowDays({ acceptsReturns: false })).toBe(0);
  // a stored window beside acceptsReturns false (rows from before policiesFromInput refused it) is not a window either
  expect(policiesView({ acceptsReturns: false, returnWindowDays: 30 }, "USD").returnWindowDays).toBe(0);
  expect(refundWindowDays({ acceptsReturns: false, returnWindowDays: 30 })).toBe(0);
});

test("a store that accepts returns has its declared window, or the default when it declares none", () => {
  expect(policiesView({ acceptsReturns: true, returnWindowDays: 14 }, "USD").returnWindowDays).toBe(14);
  expect(refundWindowDays({ acceptsReturns: true, returnWindowDays: 14 })).toBe(14);
  expect(refundWindowDays({ acceptsReturns: true, returnWindowDays: null })).toBe(DEFAULT_RETURN_WINDOW_DAYS);
});

test("a request a day after the order at a no-returns store is RETURN_WINDOW_EXPIRED with a 0-day window", () => {
  const ask = (policy: { acceptsReturns: boolean; returnWindowDays?: number | null }) => () =>
    validateRefundRequest({ order: { status: "paid", totalMinor: 1000, createdAt: T0, deliveredAt: null }, refunds: [], policy, now: T0 + DAY });
  expect(ask({ acceptsReturns: false })).toThrow(expect.objectContaining({ code: "RETURN_WINDOW_EXPIRED", details: expect.objectContaining({ return_window_days: 0 }) }));
  expect(ask({ acceptsReturns: true, returnWindowDays: null })()).toEqual({ amountMinor: 1000, reason: null });
});
