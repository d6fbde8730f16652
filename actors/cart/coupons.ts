/**
 * Coupons: percent or fixed, with minimum spend, a validity window, a usage limit, and a currency for fixed
 * amounts. `evaluateCoupon` never throws for a bad coupon: a rejection is a normal answer (the spec's
 * apply-coupon returns 200 "applied or rejected as invalid"). Money is integer minor units throughout.
 *
 * A coupon with `storeId` discounts that store's subtotal only; without one it is a cart-wide coupon whose
 * discount is split across the stores in proportion to their subtotals (largest remainder, so the parts add up
 * exactly), because every store gets its own order and each order must carry its own share.
 */
export interface Coupon {
  code: string;
  kind: "percent" | "fixed";
  /** percent coupons: basis points, 1..10000 (1000 = 10 %). */
  percentBps?: number;
  /** fixed coupons: amount in minor units of `currency`. */
  amountMinor?: number;
  /** Required for fixed coupons; optional restriction for percent ones. */
  currency?: string | null;
  storeId?: string | null;
  /** Eligible subtotal must be at least this (inclusive), in the cart's currency. */
  minSpendMinor?: number | null;
  /** Cap on a percent discount. */
  maxDiscountMinor?: number | null;
  startsAt?: number | null;
  /** Valid strictly before this instant. */
  expiresAt?: number | null;
  maxUses?: number | null;
  /**
   * Uses taken by other carts: paid orders' and those claimed by legs still holding (coupons.used_count), less the
   * uses the pricing cart's own session orders hold (commerce.ts findCoupons: its own use is not "taken"). Pricing
   * only previews the limit; the leg's hold claims a use conditionally and is refused when none is left
   * (commerce.ts couponClaim).
   */
  usedCount?: number;
  active?: boolean;
}

export type CouponRejection = "invalid" | "expired" | "below_minimum" | "exhausted" | "currency_mismatch";

export type CouponEvaluation =
  | { applied: true; code: string; discountMinor: number }
  | { applied: false; code: string; reason: CouponRejection; details?: Record<string, unknown> };

export interface CouponContext {
  /** Subtotal the coupon would apply to: the store's subtotal for a store coupon, else the cart's. */
  eligibleSubtotalMinor: number;
  currency: string;
  now: number;
}

export function normalizeCouponCode(code: string): string {
  return code.trim().toUpperCase();
}

export function findCoupon(coupons: readonly Coupon[], code: string): Coupon | undefined {
  const wanted = normalizeCouponCode(code);
  return coupons.find((c) => normalizeCouponCode(c.code) === wanted);
}

/**
 * Checks in order: invalid (unknown, inactive, not started, malformed, nothing eligible) → expired → exhausted →
 * currency_mismatch → below_minimum. The discount is capped at the eligible subtotal, so a total is never negative.
 */
export function evaluateCoupon(coupon: Coupon | undefined, code: string, ctx: CouponContext): CouponEvaluation {
  const shown = coupon ? coupon.code : normalizeCouponCode(code);
  const reject = (reason: CouponRejection, details?: Record<string, unknown>): CouponEvaluation =>
    details ? { applied: false, code: shown, reason, details } : { applied: false, code: shown, reason };
  if (!coupon || coupon.active === false) return reject("invalid");
  if (!isWellFormed(coupon)) return reject("invalid", { why: "malformed" });
  if (coupon.startsAt != null && ctx.now < coupon.startsAt) return reject("invalid", { why: "not_started" });
  if (coupon.expiresAt != null && ctx.now >= coupon.expiresAt) return reject("expired");
  if (coupon.maxUses != null && (coupon.usedCount ?? 0) >= coupon.maxUses) return reject("exhausted");
  if (coupon.currency != null && coupon.currency.toUpperCase() !== ctx.currency.toUpperCase()) {
    return reject("currency_mismatch", { coupon_currency: coupon.currency, cart_currency: ctx.currency });
  }
  if (ctx.eligibleSubtotalMinor <= 0) return reject("invalid", { why: "nothing_eligible" });
  if (coupon.minSpendMinor != null && ctx.eligibleSubtotalMinor < coupon.minSpendMinor) {
    return reject("below_minimum", { min_spend_minor: coupon.minSpendMinor, eligible_subtotal_minor: ctx.eligibleSubtotalMinor });
  }
  let discount: number;
  if (coupon.kind === "percent") {
    discount = divRoundHalfEven(ctx.eligibleSubtotalMinor * (coupon.percentBps as number), 10_000);
    if (coupon.maxDiscountMinor != null) discount = Math.min(discount, coupon.maxDiscountMinor);
  } else {
    discount = coupon.amountMinor as number;
  }
  return { applied: true, code: coupon.code, discountMinor: Math.min(discount, ctx.eligibleSubtotalMinor) };
}

function isWellFormed(c: Coupon): boolean {
  const nonNegInt = (n: number | null | undefined): boolean => n == null || (Number.isInteger(n) && n >= 0);
  if (!nonNegInt(c.minSpendMinor) || !nonNegInt(c.maxDiscountMinor) || !nonNegInt(c.maxUses)) return false;
  if (c.kind === "percent") return Number.isInteger(c.percentBps) && (c.percentBps as number) >= 1 && (c.percentBps as number) <= 10_000;
  if (c.kind === "fixed") return Number.isInteger(c.amountMinor) && (c.amountMinor as number) > 0 && typeof c.currency === "string" && c.currency.length === 3;
  return false;
}

/**
 * n / d rounded half to even (banker's rounding), for n >= 0, d > 0 integers. Half-even keeps the rounding error
 * of many percent discounts centred on zero instead of always favouring one side. BigInt so a large n × bps
 * product never loses precision.
 */
export function divRoundHalfEven(n: number, d: number): number {
  if (!Number.isInteger(n) || !Number.isInteger(d) || n < 0 || d <= 0) throw new RangeError("divRoundHalfEven wants integers n >= 0, d > 0");
  const N = BigInt(n);
  const D = BigInt(d);
  const q = N / D;
  const r2 = (N % D) * 2n;
  if (r2 > D || (r2 === D && q % 2n === 1n)) return Number(q + 1n);
  return Number(q);
}

/**
 * Split `total` across `weights` in proportion (largest remainder; ties go to the earlier index). The parts are
 * integers that add up to exactly `total`, and no part exceeds its weight when total <= sum(weights).
 */
export function allocateProportionally(total: number, weights: readonly number[]): number[] {
  const sum = weights.reduce((a, b) => a + b, 0);
  if (sum <= 0 || total <= 0) return weights.map(() => 0);
  const T = BigInt(total);
  const S = BigInt(sum);
  const floors = weights.map((w) => (T * BigInt(w)) / S);
  const rems = weights.map((w, i) => ({ i, rem: (T * BigInt(w)) % S }));
  let left = T - floors.reduce((a, b) => a + b, 0n);
  rems.sort((a, b) => (a.rem === b.rem ? a.i - b.i : a.rem > b.rem ? -1 : 1));
  for (const { i } of rems) {
    if (left <= 0n) break;
    floors[i] = floors[i] + 1n;
    left -= 1n;
  }
  return floors.map(Number);
}
