/**
 * Labels and statuses derived from a score on the 0..1 scale. Every boundary is a lower bound and belongs to the
 * higher interval: [0, 0.2) suspended, [0.2, 0.3) hidden, [0.3, 0.5) deprioritized, [0.5, 1] active.
 */

export const SUSPENSION_THRESHOLD = 0.2;
export const AGENT_THRESHOLD = 0.7;

export type DisplayBand = "RESTRICTED" | "CAUTION" | "ACCEPTABLE" | "GOOD" | "EXCELLENT";
export type OperationalStatus = "suspended" | "hidden" | "deprioritized" | "active";
/** Deprecated ladder, kept for consumers that have not moved to display bands and operational status. */
export type LegacyLevel = "RESTRICTED" | "CAUTION" | "STANDARD" | "VERIFIED" | "ELITE";

/** Ordered by lower bound, ascending. */
export const DISPLAY_BANDS: readonly { min: number; band: DisplayBand }[] = [
  { min: 0, band: "RESTRICTED" },
  { min: 0.5, band: "CAUTION" },
  { min: 0.7, band: "ACCEPTABLE" },
  { min: 0.8, band: "GOOD" },
  { min: 0.9, band: "EXCELLENT" },
];

export const OPERATIONAL_STATUSES: readonly { min: number; status: OperationalStatus; meaning: string }[] = [
  { min: 0, status: "suspended", meaning: "auto-suspended from discovery" },
  { min: 0.2, status: "hidden", meaning: "hidden from discovery" },
  { min: 0.3, status: "deprioritized", meaning: "lower in search" },
  { min: 0.5, status: "active", meaning: "normal visibility and checkout" },
];

/** The spec lists no rung under 0.20; scores below it stay RESTRICTED (operational status says suspended). */
export const LEGACY_LADDER: readonly { min: number; level: LegacyLevel }[] = [
  { min: 0, level: "RESTRICTED" },
  { min: 0.5, level: "CAUTION" },
  { min: 0.7, level: "STANDARD" },
  { min: 0.85, level: "VERIFIED" },
  { min: 0.95, level: "ELITE" },
];

function checked(score0to1: number): number {
  if (!Number.isFinite(score0to1)) throw new RangeError("trust score must be a finite number on the 0..1 scale");
  return score0to1 < 0 ? 0 : score0to1 > 1 ? 1 : score0to1;
}

function pick<T extends { min: number }>(table: readonly T[], score0to1: number): T {
  const s = checked(score0to1);
  let hit = table[0];
  for (const row of table) if (s >= row.min) hit = row;
  return hit;
}

export const displayBand = (score0to1: number): DisplayBand => pick(DISPLAY_BANDS, score0to1).band;
export const operationalStatus = (score0to1: number): OperationalStatus => pick(OPERATIONAL_STATUSES, score0to1).status;
/** @deprecated use displayBand and operationalStatus */
export const legacyLevel = (score0to1: number): LegacyLevel => pick(LEGACY_LADDER, score0to1).level;

export const bandIndex = (band: DisplayBand): number => DISPLAY_BANDS.findIndex((b) => b.band === band);

/** Searched and returned at all (hidden and suspended merchants are not). */
export const isDiscoverable = (score0to1: number): boolean => checked(score0to1) >= 0.3;

/** Agent checkout needs the agent threshold (0.7). */
export const agentCheckoutAllowed = (score0to1: number): boolean => checked(score0to1) >= AGENT_THRESHOLD;

/**
 * MerchantSummary.storeStatus has only two values. Hidden and suspended merchants never appear in discovery, so
 * when one is summarised anyway (e.g. inside an existing order) it is reported as deprioritized, never active.
 */
export function storeStatusForMerchantSummary(score0to1: number): "active" | "deprioritized" {
  return operationalStatus(score0to1) === "active" ? "active" : "deprioritized";
}
