/**
 * The merchant state a checkout preview approved, its canonical hash, and the comparison run before payment.
 *
 * Hash: sha256 hex over canonical JSON (object keys sorted at every depth, stores sorted by id, lines by product
 * and variant) of: currency; per store its policy version, shipping, discount and tax; per line the quantity, the
 * unit price and whether stock covers the quantity (a boolean, not the count: other buyers' purchases must not
 * force a reconfirmation while enough stock remains).
 *
 * compareStates(previewed, current, paidStoreIds): the stores already paid in the session are left out of both
 * states first (their lines are bought); then:
 * - blocked (STATE_EXECUTION_BLOCKED, details.reasons): currency changed, a store's policy version changed, a store
 *   or line vanished or changed quantity, stock no longer covers a line, or the total moved by more than the cut
 *   (|Δ| > 10 % of the previewed total, either way; any increase from a previewed total of 0);
 * - reconfirm (STATE_RECONFIRMATION_REQUIRED, details.reconfirm_state_hash): the total went up by any amount, any
 *   single component went up (a line's unit price, a store's shipping or tax, or a discount went down), or the
 *   total went down by more than the tolerance;
 * - ok: nothing moved, or only a decrease within the tolerance: at most max(50 minor units, 0.5 % of the
 *   previewed total). The payment then charges the session's approved pricing, not the lower current one (the
 *   human approved that total; MCP binds the payment to its state hash): a decrease this small does not interrupt it.
 * A reconfirm outcome passes when the caller sends `reconfirmed_state_hash` equal to the current hash; a missing
 * or stale hash is refused again with the fresh hash. Blocked is never overridable.
 */
import { createHash } from "node:crypto";
import { fail } from "../runtime/errors.ts";
import type { CartTotals } from "./totals.ts";

export interface LineState {
  productId: string;
  variantId?: string | null;
  quantity: number;
  unitPriceMinor: number;
  /** Units available to sell; null = stock not tracked (unlimited). */
  available: number | null;
}

export interface StoreState {
  storeId: string;
  policyVersion: string;
  shippingMinor: number;
  discountMinor: number;
  taxMinor: number;
  lines: LineState[];
}

export interface CheckoutState {
  currency: string;
  stores: StoreState[];
}

/** Decreases up to max(these two) pass silently. */
export const DECREASE_TOLERANCE_MINOR = 50;
export const DECREASE_TOLERANCE_BPS = 50; // 0.5 %
/** A total move strictly beyond this blocks execution. */
export const BLOCKING_CUT_BPS = 1_000; // 10 %

/**
 * JSON with object keys sorted at every depth; undefined members dropped; non-finite numbers refused.
 * Built in one walk: only strings go through JSON.stringify (for their escapes), object keys through a small cache of
 * their quoted form (a checkout state has a dozen distinct keys), numbers through String (the same text as JSON's
 * for a finite number, -0 as 0); a stringify call per key and per value was ~60 % of a state hash's cost.
 */
export function canonicalJson(value: unknown): string {
  switch (typeof value) {
    case "string":
      return JSON.stringify(value);
    case "boolean":
      return value ? "true" : "false";
    case "number":
      if (!Number.isFinite(value)) throw new RangeError("canonicalJson: non-finite number");
      return String(value);
    case "object": {
      if (value === null) return "null";
      if (Array.isArray(value)) {
        let out = "[";
        for (let i = 0; i < value.length; i++) {
          if (i > 0) out += ",";
          // a hole stays empty, as Array.prototype.map and join left it
          if (!(i in value)) continue;
          const v: unknown = value[i];
          out += v === undefined ? "null" : canonicalJson(v);
        }
        return out + "]";
      }
      const obj = value as Record<string, unknown>;
      const keys = Object.keys(obj).sort();
      let out = "{";
      let first = true;
      for (const k of keys) {
        const v = obj[k];
        if (v === undefined) continue;
        out += (first ? "" : ",") + quotedKey(k) + ":" + canonicalJson(v);
        first = false;
      }
      return out + "}";
    }
    default:
      throw new TypeError(`canonicalJson: unsupported ${typeof value}`);
  }
}

/** Quoted object keys (bounded: canonicalJson also reads outside documents, e.g. AP2 mandates). */
const QUOTED_KEYS_MAX = 512;
const quotedKeys = new Map<string, string>();

function quotedKey(k: string): string {
  let q = quotedKeys.get(k);
  if (q === undefined) {
    q = JSON.stringify(k);
    if (quotedKeys.size < QUOTED_KEYS_MAX) quotedKeys.set(k, q);
  }
  return q;
}

const lineKey = (l: Pick<LineState, "productId" | "variantId">): string => `${l.productId}\u0000${l.variantId ?? ""}`;
/** Code-unit order of two strings (not locale-aware: the same on every host). */
export const cmp = (a: string, b: string): number => (a < b ? -1 : a > b ? 1 : 0);
const stockOk = (l: LineState): boolean => l.available === null || l.available >= l.quantity;

/** The normalized view that is hashed. */
export function canonicalStateView(state: CheckoutState): unknown {
  return {
    v: "checkout-state.v1",
    currency: state.currency.toUpperCase(),
    stores: [...state.stores]
      .sort((a, b) => cmp(a.storeId, b.storeId))
      .map((s) => ({
        store_id: s.storeId,
        policy_version: s.policyVersion,
        shipping_minor: s.shippingMinor,
        discount_minor: s.discountMinor,
        tax_minor: s.taxMinor,
        lines: [...s.lines]
          .sort((a, b) => cmp(lineKey(a), lineKey(b)))
          .map((l) => ({
            product_id: l.productId,
            variant_id: l.variantId ?? null,
            quantity: l.quantity,
            unit_price_minor: l.unitPriceMinor,
            stock_ok: stockOk(l),
          })),
      })),
  };
}

export function stateHash(state: CheckoutState): string {
  return createHash("sha256").update(canonicalJson(canonicalStateView(state))).digest("hex");
}

export function stateTotalMinor(state: CheckoutState): number {
  return state.stores.reduce(
    (a, s) => a + s.lines.reduce((b, l) => b + l.unitPriceMinor * l.quantity, 0) - s.discountMinor + s.shippingMinor + s.taxMinor,
    0,
  );
}

export type StateReason = { code: string } & Record<string, unknown>;

export type StateComparison =
  | { outcome: "ok"; currentHash: string }
  | { outcome: "reconfirm"; currentHash: string; reasons: StateReason[] }
  | { outcome: "blocked"; currentHash: string; reasons: StateReason[] };

/**
 * `paidStoreIds`: stores whose leg is already captured in this session. Their lines were bought by that capture (the
 * order stands at what was paid, and the attempt charges only the unpaid legs), so nothing about them is checked: not
 * their stock (their own sale used it, for ever: model finding P-1), nor their policy version, prices, shipping or
 * tax, which would otherwise block or ask to reconfirm the remaining stores' payment until a new preview (P-1's
 * follow-up, session 11). Both states are
 * compared without them, the totals and the blocking cut included, and `currentHash` is the hash of what is compared:
 * a reconfirmation (and a human's approval of it) stays valid while the paid stores' lines move, so it never loops.
 * Without paid stores it is the full state's hash, as a preview's.
 */
export function compareStates(previewedState: CheckoutState, currentState: CheckoutState, paidStoreIds: ReadonlySet<string> = new Set()): StateComparison {
  const previewed = withoutStores(previewedState, paidStoreIds);
  const current = withoutStores(currentState, paidStoreIds);
  const currentHash = stateHash(current);
  const blocked: StateReason[] = [];
  const moved: StateReason[] = [];

  if (previewed.currency.toUpperCase() !== current.currency.toUpperCase()) {
    blocked.push({ code: "currency_changed", from: previewed.currency, to: current.currency });
  }
  const currentStores = new Map(current.stores.map((s) => [s.storeId, s]));
  const previewedIds = new Set(previewed.stores.map((s) => s.storeId));
  for (const s of current.stores) if (!previewedIds.has(s.storeId)) blocked.push({ code: "store_added", store_id: s.storeId });

  for (const p of previewed.stores) {
    const c = currentStores.get(p.storeId);
    if (!c) {
      blocked.push({ code: "store_missing", store_id: p.storeId });
      continue;
    }
    if (p.policyVersion !== c.policyVersion) {
      blocked.push({ code: "policy_version_changed", store_id: p.storeId, from: p.policyVersion, to: c.policyVersion });
    }
    const up = (code: string, from: number, to: number): void => {
      moved.push({ code, store_id: p.storeId, from_minor: from, to_minor: to });
    };
    if (c.shippingMinor > p.shippingMinor) up("shipping_increased", p.shippingMinor, c.shippingMinor);
    if (c.taxMinor > p.taxMinor) up("tax_increased", p.taxMinor, c.taxMinor);
    if (c.discountMinor < p.discountMinor) up("discount_decreased", p.discountMinor, c.discountMinor);

    const currentLines = new Map(c.lines.map((l) => [lineKey(l), l]));
    const previewedKeys = new Set(p.lines.map(lineKey));
    for (const l of c.lines) {
      if (!previewedKeys.has(lineKey(l))) blocked.push({ code: "line_added", store_id: p.storeId, product_id: l.productId, variant_id: l.variantId ?? null });
    }
    for (const pl of p.lines) {
      const at = { store_id: p.storeId, product_id: pl.productId, variant_id: pl.variantId ?? null };
      const cl = currentLines.get(lineKey(pl));
      if (!cl) {
        blocked.push({ code: "line_missing", ...at });
        continue;
      }
      if (cl.quantity !== pl.quantity) blocked.push({ code: "quantity_changed", ...at, from: pl.quantity, to: cl.quantity });
      if (!stockOk(cl)) {
        blocked.push({ code: cl.available === 0 ? "out_of_stock" : "stock_insufficient", ...at, requested: cl.quantity, available: cl.available });
      }
      if (cl.unitPriceMinor > pl.unitPriceMinor) {
        moved.push({ code: "unit_price_increased", ...at, from_minor: pl.unitPriceMinor, to_minor: cl.unitPriceMinor });
      }
    }
  }

  const before = stateTotalMinor(previewed);
  const after = stateTotalMinor(current);
  const delta = after - before;
  const totals = { previewed_total_minor: before, current_total_minor: after, delta_minor: delta };
  if (before <= 0 ? delta > 0 : Math.abs(delta) * 10_000 > before * BLOCKING_CUT_BPS) {
    blocked.push({ code: "price_beyond_cut", ...totals, cut_bps: BLOCKING_CUT_BPS });
  }
  if (blocked.length > 0) return { outcome: "blocked", currentHash, reasons: blocked };

  if (delta > 0) moved.unshift({ code: "total_increased", ...totals });
  else if (delta < 0 && -delta > decreaseToleranceMinor(before)) moved.unshift({ code: "total_decreased", ...totals });
  if (moved.length > 0) return { outcome: "reconfirm", currentHash, reasons: moved };
  return { outcome: "ok", currentHash };
}

/** The state without the given stores (the same object when there are none to drop). */
function withoutStores(state: CheckoutState, storeIds: ReadonlySet<string>): CheckoutState {
  if (storeIds.size === 0) return state;
  return { ...state, stores: state.stores.filter((s) => !storeIds.has(s.storeId)) };
}

/** The largest decrease of a total that passes without reconfirmation. */
export function decreaseToleranceMinor(previewedTotalMinor: number): number {
  return Math.max(DECREASE_TOLERANCE_MINOR, Math.floor((previewedTotalMinor * DECREASE_TOLERANCE_BPS) / 10_000));
}

/**
 * The gate before payment. Returns the current hash (the caller re-binds the session's approved state to the
 * current one when `reconfirmed`). Throws STATE_EXECUTION_BLOCKED or STATE_RECONFIRMATION_REQUIRED.
 */
export function assertStateExecutable(
  previewed: CheckoutState,
  current: CheckoutState,
  reconfirmedStateHash?: string | null,
  paidStoreIds: ReadonlySet<string> = new Set(),
): { currentHash: string; reconfirmed: boolean } {
  const result = compareStates(previewed, current, paidStoreIds);
  if (result.outcome === "blocked") {
    throw fail("STATE_EXECUTION_BLOCKED", "The merchant state changed beyond what a reconfirmation can cover.", { reasons: result.reasons });
  }
  if (result.outcome === "reconfirm") {
    if (reconfirmedStateHash && reconfirmedStateHash === result.currentHash) return { currentHash: result.currentHash, reconfirmed: true };
    throw fail("STATE_RECONFIRMATION_REQUIRED", "The merchant state moved since the preview (details.reasons). Show the new state to the user; once they confirm, call again with the same checkout_session_id and idempotency_key and reconfirmed_state_hash = details.reconfirm_state_hash.", {
      reconfirm_state_hash: result.currentHash,
      reasons: result.reasons,
      stale_hash_sent: Boolean(reconfirmedStateHash),
    });
  }
  return { currentHash: result.currentHash, reconfirmed: false };
}

/** Build the state from computed totals plus what totals do not know: policy versions and live stock. */
export function checkoutStateFromTotals(
  totals: CartTotals,
  info: {
    policyVersion: (storeId: string) => string;
    available: (storeId: string, productId: string, variantId: string | null) => number | null;
  },
): CheckoutState {
  return {
    currency: totals.currency,
    stores: totals.stores.map((s) => ({
      storeId: s.storeId,
      policyVersion: info.policyVersion(s.storeId),
      shippingMinor: s.shippingMinor,
      discountMinor: s.discountMinor,
      taxMinor: s.taxMinor,
      lines: s.lines.map((l) => ({
        productId: l.productId,
        variantId: l.variantId,
        quantity: l.quantity,
        unitPriceMinor: l.unitPriceMinor,
        available: info.available(s.storeId, l.productId, l.variantId),
      })),
    })),
  };
}
