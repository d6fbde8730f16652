/**
 * Cart totals in integer minor units, per store and for the cart. Rules (also in docs/checkout.md):
 * - one currency per cart: lines in two currencies → CURRENCY_MISMATCH;
 * - unit price = a negotiated price when present, in the line's currency and not expired (valid strictly before
 *   `expiresAt`), but never above the list price; else the list price;
 * - discount: one code (coupons.ts), which may name a coupon at several of the cart's stores: each that applies
 *   discounts its own store; percent discounts round half to even; a cart-wide coupon is split across
 *   stores by largest remainder; a discount never exceeds the subtotal it applies to, so no total is negative;
 * - shipping per store: base + per item, free when the store's subtotal AFTER discount reaches `freeOverMinor`
 *   (what the merchant actually receives decides, so a coupon cannot be stacked on a free-shipping threshold);
 * - tax: none unless a `TaxHook` is given; `flatRateTax` rounds half to even;
 * - total per store = subtotal − discount + shipping + tax; the cart total is the sum of the store totals.
 */
import { fail } from "../runtime/errors.ts";
import { allocateProportionally, divRoundHalfEven, evaluateCoupon, type Coupon, type CouponEvaluation } from "./coupons.ts";

export interface NegotiatedPrice {
  unitPriceMinor: number;
  currency?: string;
  expiresAt: number;
}

export interface PricedLine {
  storeId: string;
  productId: string;
  variantId?: string | null;
  quantity: number;
  listPriceMinor: number;
  currency: string;
  negotiated?: NegotiatedPrice | null;
}

export interface ShippingRule {
  baseMinor: number;
  perItemMinor: number;
  /** Free shipping when the discounted store subtotal is >= this; null/undefined = never free. */
  freeOverMinor?: number | null;
}

export interface TaxContext {
  storeId: string;
  currency: string;
  /** Store subtotal after discount. */
  itemsMinor: number;
  shippingMinor: number;
}
export type TaxHook = (ctx: TaxContext) => number;

export interface TotalsInput {
  lines: readonly PricedLine[];
  /** Per store; a store without a rule has no shipping quote yet (`shippingQuoted: false`, shipping 0). */
  shipping?: Readonly<Record<string, ShippingRule>>;
  /**
   * The code and what it names: one coupon, or one row per store of the cart that has a coupon with this code (each
   * store's coupon discounts that store's lines only; see `discountsOf`).
   */
  coupon?: { code: string; coupon: Coupon | readonly Coupon[] | undefined } | null;
  tax?: TaxHook;
  now: number;
}

export interface LineTotal {
  storeId: string;
  productId: string;
  variantId: string | null;
  quantity: number;
  listPriceMinor: number;
  unitPriceMinor: number;
  priceSource: "list" | "negotiated";
  lineTotalMinor: number;
}

export interface StoreTotals {
  storeId: string;
  currency: string;
  lines: LineTotal[];
  itemCount: number;
  subtotalMinor: number;
  discountMinor: number;
  shippingMinor: number;
  shippingQuoted: boolean;
  taxMinor: number;
  totalMinor: number;
}

export interface CartTotals {
  currency: string;
  stores: StoreTotals[];
  subtotalMinor: number;
  discountMinor: number;
  shippingMinor: number;
  taxMinor: number;
  totalMinor: number;
  coupon: CouponEvaluation | null;
}

const isNonNegInt = (n: unknown): n is number => typeof n === "number" && Number.isInteger(n) && n >= 0;

export function unitPriceOf(line: PricedLine, now: number): { unitPriceMinor: number; priceSource: "list" | "negotiated" } {
  const n = line.negotiated;
  if (
    n &&
    isNonNegInt(n.unitPriceMinor) &&
    now < n.expiresAt &&
    (n.currency === undefined || n.currency.toUpperCase() === line.currency.toUpperCase()) &&
    n.unitPriceMinor <= line.listPriceMinor
  ) {
    return { unitPriceMinor: n.unitPriceMinor, priceSource: "negotiated" };
  }
  return { unitPriceMinor: line.listPriceMinor, priceSource: "list" };
}

export function shippingFor(rule: ShippingRule, itemCount: number, discountedSubtotalMinor: number): number {
  if (rule.freeOverMinor != null && discountedSubtotalMinor >= rule.freeOverMinor) return 0;
  return rule.baseMinor + rule.perItemMinor * itemCount;
}

/** A flat tax rate in basis points over items after discount (and shipping, if `includeShipping`). */
export function flatRateTax(rateBps: number, options: { includeShipping?: boolean } = {}): TaxHook {
  if (!Number.isInteger(rateBps) || rateBps < 0) throw new RangeError("rateBps must be a non-negative integer");
  return ({ itemsMinor, shippingMinor }) => divRoundHalfEven((itemsMinor + (options.includeShipping ? shippingMinor : 0)) * rateBps, 10_000);
}

/** The single currency of a set of lines, or CURRENCY_MISMATCH. */
export function cartCurrency(lines: readonly Pick<PricedLine, "currency">[]): string {
  const currencies = [...new Set(lines.map((l) => l.currency.toUpperCase()))];
  if (currencies.length === 0) throw fail("INSUFFICIENT_INPUT", "A cart needs at least one item.", { field: "items" });
  if (currencies.length > 1) throw fail("CURRENCY_MISMATCH", "Items do not share one currency; use one cart per currency.", { currencies });
  return currencies[0];
}

export function computeTotals(input: TotalsInput): CartTotals {
  const currency = cartCurrency(input.lines);
  input.lines.forEach((line, i) => {
    if (!Number.isInteger(line.quantity) || line.quantity < 1) {
      throw fail("INVALID_ARGUMENT", "quantity must be an integer >= 1.", { field: `items[${i}].quantity` });
    }
    if (!isNonNegInt(line.listPriceMinor)) throw fail("INVALID_ARGUMENT", "price must be integer minor units >= 0.", { field: `items[${i}].price` });
  });

  const byStore = new Map<string, LineTotal[]>();
  for (const line of input.lines) {
    const { unitPriceMinor, priceSource } = unitPriceOf(line, input.now);
    const lt: LineTotal = {
      storeId: line.storeId,
      productId: line.productId,
      variantId: line.variantId ?? null,
      quantity: line.quantity,
      listPriceMinor: line.listPriceMinor,
      unitPriceMinor,
      priceSource,
      lineTotalMinor: unitPriceMinor * line.quantity,
    };
    const list = byStore.get(line.storeId) ?? [];
    list.push(lt);
    byStore.set(line.storeId, list);
  }
  const storeIds = [...byStore.keys()];
  const subtotals = storeIds.map((id) => (byStore.get(id) as LineTotal[]).reduce((a, l) => a + l.lineTotalMinor, 0));

  // Discount per store.
  let couponEval: CouponEvaluation | null = null;
  let discounts = storeIds.map(() => 0);
  if (input.coupon) ({ couponEval, discounts } = discountsOf(input.coupon.code, input.coupon.coupon, storeIds, subtotals, currency, input.now));

  const stores: StoreTotals[] = storeIds.map((storeId, i) => {
    const lines = byStore.get(storeId) as LineTotal[];
    const itemCount = lines.reduce((a, l) => a + l.quantity, 0);
    const subtotalMinor = subtotals[i];
    const discountMinor = Math.min(discounts[i], subtotalMinor);
    const itemsMinor = subtotalMinor - discountMinor;
    const rule = input.shipping?.[storeId];
    const shippingMinor = rule ? shippingFor(rule, itemCount, itemsMinor) : 0;
    const taxMinor = input.tax ? input.tax({ storeId, currency, itemsMinor, shippingMinor }) : 0;
    if (!isNonNegInt(taxMinor)) throw fail("internal_error", "The tax hook returned a non-integer or negative amount.", { store_id: storeId });
    return {
      storeId,
      currency,
      lines,
      itemCount,
      subtotalMinor,
      discountMinor,
      shippingMinor,
      shippingQuoted: rule !== undefined,
      taxMinor,
      totalMinor: itemsMinor + shippingMinor + taxMinor,
    };
  });
  // Minor units must stay exact in a double: past 2^53 a sum silently rounds (each amount is bounded by
  // MAX_AMOUNT_MINOR, but 100 lines x 10,000 units of it are not). subtotal + shipping + tax bounds every sum.
  const gross = stores.reduce((a, s) => a + s.subtotalMinor + s.shippingMinor + s.taxMinor, 0);
  if (!Number.isSafeInteger(gross)) throw fail("INVALID_ARGUMENT", "The cart total is too large for one order; lower the quantities.", { field: "items" });

  return cartTotalsOf(currency, stores, couponEval);
}

/**
 * How far a rejected coupon got through evaluateCoupon's checks: when no candidate applies, the answer names the one
 * that came closest (its reason tells the buyer what would make it apply), not an inactive row of another store.
 */
const REJECTION_RANK: Record<string, number> = { invalid: 0, expired: 1, exhausted: 2, currency_mismatch: 3, below_minimum: 4 };

/**
 * One code may name a coupon at several stores of the cart (codes are unique per store only). Every candidate is
 * evaluated against the subtotal it covers (its store's, or the cart's for a coupon without a store), and every
 * one that applies discounts what it covers: store A's inactive or expired coupon never hides store B's (audit
 * A3-2), and two stores with an applicable coupon of that code each discount their own lines. The answer is one
 * evaluation: applied with the sum of the discounts, or the rejection of the candidate that came closest (ties: the
 * first, stores in slug order).
 */
function discountsOf(
  code: string,
  given: Coupon | readonly Coupon[] | undefined,
  storeIds: readonly string[],
  subtotals: readonly number[],
  currency: string,
  now: number,
): { couponEval: CouponEvaluation; discounts: number[] } {
  const candidates: readonly (Coupon | undefined)[] = given === undefined ? [undefined] : isCouponList(given) ? (given.length ? given : [undefined]) : [given];
  const discounts = storeIds.map(() => 0);
  let applied = false;
  let closest: CouponEvaluation | null = null;
  let appliedCode = code;
  for (const coupon of candidates) {
    const storeIdx = coupon?.storeId ? storeIds.indexOf(coupon.storeId) : -1;
    const eligible = coupon?.storeId ? (storeIdx >= 0 ? subtotals[storeIdx] : 0) : subtotals.reduce((a, b) => a + b, 0);
    const ev = evaluateCoupon(coupon, code, { eligibleSubtotalMinor: eligible, currency, now });
    if (ev.applied) {
      applied = true;
      appliedCode = ev.code;
      const parts = coupon?.storeId ? storeIds.map((_, i) => (i === storeIdx ? ev.discountMinor : 0)) : allocateProportionally(ev.discountMinor, subtotals);
      parts.forEach((d, i) => (discounts[i] = Math.min(discounts[i] + d, subtotals[i])));
    } else if (!closest || (!closest.applied && REJECTION_RANK[ev.reason] > REJECTION_RANK[closest.reason])) {
      closest = ev;
    }
  }
  if (applied) return { couponEval: { applied: true, code: appliedCode, discountMinor: discounts.reduce((a, b) => a + b, 0) }, discounts };
  return { couponEval: closest as CouponEvaluation, discounts };
}

function isCouponList(c: Coupon | readonly Coupon[]): c is readonly Coupon[] {
  return Array.isArray(c);
}

/** The cart's sums over its stores' totals. */
export function cartTotalsOf(currency: string, stores: StoreTotals[], coupon: CouponEvaluation | null): CartTotals {
  const sum = (f: (s: StoreTotals) => number): number => stores.reduce((a, s) => a + f(s), 0);
  return {
    currency,
    stores,
    subtotalMinor: sum((s) => s.subtotalMinor),
    discountMinor: sum((s) => s.discountMinor),
    shippingMinor: sum((s) => s.shippingMinor),
    taxMinor: sum((s) => s.taxMinor),
    totalMinor: sum((s) => s.totalMinor),
    coupon,
  };
}
