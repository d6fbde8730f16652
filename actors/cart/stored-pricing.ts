/**
 * What a checkout session keeps of its preview, in the fewest bytes: the inputs of its totals and of its approved
 * merchant state, never what follows from them. The full `CartTotals` and `CheckoutState` are rebuilt exactly on
 * use (`totalsOf`, `previewedOf`).
 *
 * Why: the session is rewritten with the whole cart state three times per checkout (preview, payment start,
 * settlement). Kept whole, totals and previewed state repeated each line and store (ids, prices, quantities) and
 * every sum, so a one-item cart's state was ~2.4 kB of jsonb: over Postgres's 2 kB TOAST threshold, so each of those
 * writes compressed it (pglz) — about twice the Postgres CPU of the same update below the threshold. Compact, a
 * one-item cart's state stays inline, uncompressed.
 *
 * Dropped because derived: a line's store id and line total (unit × quantity), a store's currency, item count,
 * subtotal and total, the cart's sums; a line's `available` when stock is not tracked (null).
 * Sessions written before this (with `totals` and `previewed`) are read as they are.
 */
import type { CouponEvaluation } from "./coupons.ts";
import { checkoutStateFromTotals, type CheckoutState } from "./state-hash.ts";
import { cartTotalsOf, type CartTotals, type LineTotal, type StoreTotals } from "./totals.ts";

/** A line's totals without what follows from its store and prices, plus the stock it was previewed with. */
export type StoredLine = Omit<LineTotal, "storeId" | "lineTotalMinor"> & {
  /** Units available when previewed; absent = stock not tracked. */
  available?: number;
};

export interface StoredStore {
  storeId: string;
  policyVersion: string;
  discountMinor: number;
  shippingMinor: number;
  shippingQuoted: boolean;
  taxMinor: number;
  lines: StoredLine[];
}

export interface StoredPricing {
  currency: string;
  coupon: CouponEvaluation | null;
  stores: StoredStore[];
}

/**
 * The stored form of a preview's totals and approved state (which `price()` builds from the same totals, store by
 * store and line by line; refused if they do not match, so nothing is silently lost).
 */
export function storePricing(totals: CartTotals, previewed: CheckoutState): StoredPricing {
  if (previewed.currency !== totals.currency || previewed.stores.length !== totals.stores.length) throw new Error("storePricing: state and totals disagree");
  return {
    currency: totals.currency,
    coupon: totals.coupon,
    stores: totals.stores.map((s, i) => {
      const ps = previewed.stores[i];
      if (ps.storeId !== s.storeId || ps.lines.length !== s.lines.length) throw new Error("storePricing: state and totals disagree");
      return {
        storeId: s.storeId,
        policyVersion: ps.policyVersion,
        discountMinor: s.discountMinor,
        shippingMinor: s.shippingMinor,
        shippingQuoted: s.shippingQuoted,
        taxMinor: s.taxMinor,
        lines: s.lines.map((l, j) => {
          const pl = ps.lines[j];
          if (pl.productId !== l.productId || (pl.variantId ?? null) !== l.variantId || pl.quantity !== l.quantity || pl.unitPriceMinor !== l.unitPriceMinor) {
            throw new Error("storePricing: state and totals disagree");
          }
          const line: StoredLine = {
            productId: l.productId,
            variantId: l.variantId,
            quantity: l.quantity,
            listPriceMinor: l.listPriceMinor,
            unitPriceMinor: l.unitPriceMinor,
            priceSource: l.priceSource,
          };
          if (pl.available !== null) line.available = pl.available;
          return line;
        }),
      };
    }),
  };
}

function expandTotals(p: StoredPricing): CartTotals {
  const stores: StoreTotals[] = p.stores.map((s) => {
    const lines: LineTotal[] = s.lines.map((l) => ({
      storeId: s.storeId,
      productId: l.productId,
      variantId: l.variantId,
      quantity: l.quantity,
      listPriceMinor: l.listPriceMinor,
      unitPriceMinor: l.unitPriceMinor,
      priceSource: l.priceSource,
      lineTotalMinor: l.unitPriceMinor * l.quantity,
    }));
    const subtotalMinor = lines.reduce((a, l) => a + l.lineTotalMinor, 0);
    return {
      storeId: s.storeId,
      currency: p.currency,
      lines,
      itemCount: lines.reduce((a, l) => a + l.quantity, 0),
      subtotalMinor,
      discountMinor: s.discountMinor,
      shippingMinor: s.shippingMinor,
      shippingQuoted: s.shippingQuoted,
      taxMinor: s.taxMinor,
      totalMinor: subtotalMinor - s.discountMinor + s.shippingMinor + s.taxMinor,
    };
  });
  return cartTotalsOf(p.currency, stores, p.coupon);
}

/** The approved state as `price()` built it: from the totals, with the stored policy versions and stock. */
function expandState(p: StoredPricing): CheckoutState {
  const stores = new Map(p.stores.map((s) => [s.storeId, s]));
  return checkoutStateFromTotals(totalsOf({ pricing: p }), {
    policyVersion: (storeId) => stores.get(storeId)!.policyVersion,
    available: (storeId, productId, variantId) =>
      stores.get(storeId)!.lines.find((l) => l.productId === productId && l.variantId === variantId)?.available ?? null,
  });
}

// A session's stored pricing never changes in place (a new preview stores a new object), so its expansions are
// cached per object for the life of the activation.
const totalsCache = new WeakMap<StoredPricing, CartTotals>();
const stateCache = new WeakMap<StoredPricing, CheckoutState>();

/** Where a session's pricing lives: `pricing` (compact), or `totals` + `previewed` on sessions stored before it. */
export interface PricedSession {
  pricing?: StoredPricing;
  totals?: CartTotals;
  previewed?: CheckoutState;
}

/** A session's stored form expanded once per pricing object, or its legacy copy. */
function expanded<T extends object>(pricing: StoredPricing | undefined, legacy: T | undefined, cache: WeakMap<StoredPricing, T>, expand: (p: StoredPricing) => T): T {
  if (!pricing) {
    if (!legacy) throw new Error("checkout session without pricing");
    return legacy;
  }
  let v = cache.get(pricing);
  if (!v) cache.set(pricing, (v = expand(pricing)));
  return v;
}

export function totalsOf(s: PricedSession): CartTotals {
  return expanded(s.pricing, s.totals, totalsCache, expandTotals);
}

export function previewedOf(s: PricedSession): CheckoutState {
  return expanded(s.pricing, s.previewed, stateCache, expandState);
}
