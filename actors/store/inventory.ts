/**
 * A store's stock reservation ledger, pure (every function returns a new ledger).
 *
 * available = onHand − reserved, never below 0; onHand null = stock not tracked = unlimited.
 * reserve: all-or-nothing over the lines of one reservation and, for a variant line, over both the variant's and the
 * tracked product's units, idempotent per reservation id (a retried message does not hold twice); release: gives the held units back; commit: the sale happened, onHand drops.
 * Stock is reserved when a payment leg starts, committed on capture, released on rollback or expiry.
 */
import { fail } from "../runtime/errors.ts";

export interface StockLevel {
  onHand: number | null;
  reserved: number;
}

export interface ReservationLine {
  productId: string;
  variantId?: string | null;
  quantity: number;
}

export interface Reservation {
  id: string;
  lines: { key: string; quantity: number }[];
  status: "held" | "committed" | "released";
}

export interface InventoryLedger {
  stock: Readonly<Record<string, StockLevel>>;
  reservations: Readonly<Record<string, Reservation>>;
}

export interface Shortage {
  productId: string;
  variantId: string | null;
  requested: number;
  available: number;
  reason: "insufficient" | "unknown_product";
}

export type ReserveResult = { ok: true; ledger: InventoryLedger; reservation: Reservation } | { ok: false; shortages: Shortage[] };

export function stockKey(productId: string, variantId?: string | null): string {
  return variantId ? `${productId}:${variantId}` : productId;
}

function splitKey(key: string): { productId: string; variantId: string | null } {
  const i = key.indexOf(":");
  return i < 0 ? { productId: key, variantId: null } : { productId: key.slice(0, i), variantId: key.slice(i + 1) };
}

export function emptyLedger(): InventoryLedger {
  return { stock: {}, reservations: {} };
}

/** Units that can still be reserved; null = unlimited. */
export function availableOf(ledger: InventoryLedger, productId: string, variantId?: string | null): number | null {
  const level = ledger.stock[stockKey(productId, variantId)];
  if (!level) return 0;
  if (level.onHand === null) return null;
  return Math.max(0, level.onHand - level.reserved);
}

/** Merchant sync: sets on-hand stock (null = untracked). Existing holds stay; availability clamps at 0. */
export function setStock(ledger: InventoryLedger, productId: string, variantId: string | null, onHand: number | null): InventoryLedger {
  if (onHand !== null && (!Number.isInteger(onHand) || onHand < 0)) {
    throw fail("INVALID_ARGUMENT", "stock must be an integer >= 0 or null.", { field: "stock" });
  }
  const key = stockKey(productId, variantId);
  const prev = ledger.stock[key];
  return { ...ledger, stock: { ...ledger.stock, [key]: { onHand, reserved: prev?.reserved ?? 0 } } };
}

export function reserve(ledger: InventoryLedger, reservationId: string, lines: readonly ReservationLine[]): ReserveResult {
  const existing = ledger.reservations[reservationId];
  if (existing) {
    if (existing.status !== "held") {
      throw fail("conflict", `Reservation ${reservationId} is already ${existing.status}.`, { status: existing.status });
    }
    return { ok: true, ledger, reservation: existing };
  }
  if (lines.length === 0) throw fail("INSUFFICIENT_INPUT", "A reservation needs at least one line.", { field: "lines" });
  const wanted = new Map<string, number>();
  for (const [i, l] of lines.entries()) {
    if (!Number.isInteger(l.quantity) || l.quantity < 1) {
      throw fail("INVALID_ARGUMENT", "quantity must be an integer >= 1.", { field: `lines[${i}].quantity` });
    }
    const key = stockKey(l.productId, l.variantId);
    wanted.set(key, (wanted.get(key) ?? 0) + l.quantity);
    // A variant's units are also the product's (its stock is the total of its variants): when the product tracks
    // stock, the same reservation holds both levels, as the database does in one conditional update.
    const product = ledger.stock[l.productId];
    if (l.variantId && product && product.onHand !== null) wanted.set(l.productId, (wanted.get(l.productId) ?? 0) + l.quantity);
  }
  const shortages: Shortage[] = [];
  for (const [key, qty] of wanted) {
    const level = ledger.stock[key];
    const { productId, variantId } = splitKey(key);
    if (!level) shortages.push({ productId, variantId, requested: qty, available: 0, reason: "unknown_product" });
    else if (level.onHand !== null && level.onHand - level.reserved < qty) {
      shortages.push({ productId, variantId, requested: qty, available: Math.max(0, level.onHand - level.reserved), reason: "insufficient" });
    }
  }
  if (shortages.length > 0) return { ok: false, shortages };
  const stock = { ...ledger.stock };
  for (const [key, qty] of wanted) stock[key] = { ...stock[key], reserved: stock[key].reserved + qty };
  const reservation: Reservation = { id: reservationId, lines: [...wanted].map(([key, quantity]) => ({ key, quantity })), status: "held" };
  return { ok: true, ledger: { stock, reservations: { ...ledger.reservations, [reservationId]: reservation } }, reservation };
}

function settle(ledger: InventoryLedger, reservationId: string, to: "committed" | "released"): InventoryLedger {
  const r = ledger.reservations[reservationId];
  if (!r) throw fail("not_found", `No reservation ${reservationId}.`, { reservation_id: reservationId });
  if (r.status === to) return ledger; // idempotent
  if (r.status !== "held") throw fail("conflict", `Reservation ${reservationId} is already ${r.status}.`, { status: r.status });
  const stock = { ...ledger.stock };
  for (const { key, quantity } of r.lines) {
    const level = stock[key] ?? { onHand: null, reserved: quantity };
    stock[key] = {
      reserved: Math.max(0, level.reserved - quantity),
      // A merchant sync may have lowered onHand below what we held; the sale still happened, so clamp at 0.
      onHand: to === "committed" && level.onHand !== null ? Math.max(0, level.onHand - quantity) : level.onHand,
    };
  }
  return { stock, reservations: { ...ledger.reservations, [reservationId]: { ...r, status: to } } };
}

export function commit(ledger: InventoryLedger, reservationId: string): InventoryLedger {
  return settle(ledger, reservationId, "committed");
}

export function release(ledger: InventoryLedger, reservationId: string): InventoryLedger {
  return settle(ledger, reservationId, "released");
}
