/**
 * Rapid suspicious gains (spec: "raise anomaly alerts reviewed by an administrator"). Pure: the trust actor passes
 * the history and the new point and stores whatever alerts come back.
 *
 * Rule, evaluated against the points of the last 24 h produced by the SAME engine as the new point (an engine
 * switch v2 ↔ v4.1 changes the number without any merchant action and is not a gain):
 *  1. rapid_gain: new score − lowest score in the window >= 0.15 (0..1 scale).
 *  2. band_jump_without_evidence: the display band rose by at least one full band from the lowest point in the
 *     window, the gain is at least 0.05 (so a score hovering on a band boundary does not alert), and the count of
 *     verified-quality evidence did not increase (unknown counts are treated as "not increased": fail towards review).
 * Both can fire for the same point. Alerts never change the score: an administrator decides.
 *
 * Once per gain (audit A4 M1): the lowest point stays in the window for 24 h, so every later recompute saw the same
 * gain again and raised another pair, even after an operator resolved the first. `raised` holds the alerts already
 * raised in the window (open or resolved). A kind is not raised again for the same engine and the same starting
 * level (from0to1): band_jump_without_evidence only when the band rose above the highest band already alerted from
 * it, rapid_gain only when the score rose another RAPID_GAIN_THRESHOLD above the highest level already alerted.
 */
import { bandIndex, displayBand, type DisplayBand } from "./bands.ts";
import type { HistoryPoint } from "./explain.ts";
import { round } from "./types.ts";

export const ANOMALY_WINDOW_HOURS = 24;
export const RAPID_GAIN_THRESHOLD = 0.15;
export const BAND_JUMP_MIN_GAIN = 0.05;

export type AnomalyKind = "rapid_gain" | "band_jump_without_evidence";

export interface AnomalyAlert {
  kind: AnomalyKind;
  storeSlug: string;
  /** epoch ms of the new point */
  at: number;
  from0to1: number;
  to0to1: number;
  delta0to1: number;
  fromBand: DisplayBand;
  toBand: DisplayBand;
  windowHours: number;
  reviewRequired: true;
}

const EPS = 1e-9;
/** Stored levels have 4 decimals: two levels closer than this are the same level. */
const SAME_LEVEL = 5e-5;

/** An alert already stored (open or resolved), as the rule needs it. */
export interface RaisedAlert {
  kind: AnomalyKind;
  engine: string;
  /** epoch ms it was detected */
  at: number;
  from0to1: number;
  to0to1: number;
}

export function detectAnomalies(
  storeSlug: string,
  history: readonly HistoryPoint[],
  current: HistoryPoint,
  raised: readonly RaisedAlert[] = [],
): AnomalyAlert[] {
  const windowStart = current.at - ANOMALY_WINDOW_HOURS * 3_600_000;
  const window = history.filter((p) => p.engine === current.engine && p.at >= windowStart && p.at < current.at);
  if (window.length === 0) return [];

  const lowest = window.reduce((lo, p) => (p.score0to1 < lo.score0to1 ? p : lo));
  const delta = round(current.score0to1 - lowest.score0to1, 6);
  const fromBand = displayBand(lowest.score0to1);
  const toBand = displayBand(current.score0to1);
  const alert = (kind: AnomalyKind): AnomalyAlert => ({
    kind,
    storeSlug,
    at: current.at,
    from0to1: lowest.score0to1,
    to0to1: current.score0to1,
    delta0to1: delta,
    fromBand,
    toBand,
    windowHours: ANOMALY_WINDOW_HOURS,
    reviewRequired: true,
  });

  // The highest level already alerted, per kind, from the same starting level of the same engine in the window.
  const alertedTo = (kind: AnomalyKind): number | null => {
    const same = raised.filter(
      (a) => a.kind === kind && a.engine === current.engine && a.at >= windowStart && a.at <= current.at && Math.abs(a.from0to1 - lowest.score0to1) < SAME_LEVEL,
    );
    return same.length === 0 ? null : Math.max(...same.map((a) => a.to0to1));
  };

  const alerts: AnomalyAlert[] = [];
  const gainTo = alertedTo("rapid_gain");
  if (delta + EPS >= RAPID_GAIN_THRESHOLD && (gainTo === null || current.score0to1 - gainTo + EPS >= RAPID_GAIN_THRESHOLD)) {
    alerts.push(alert("rapid_gain"));
  }

  const evidenceBefore = Math.max(...window.map((p) => p.verifiedEvidence ?? 0));
  const evidenceGrew = current.verifiedEvidence !== undefined && current.verifiedEvidence > evidenceBefore;
  const bandTo = alertedTo("band_jump_without_evidence");
  const newBand = bandTo === null || bandIndex(toBand) > bandIndex(displayBand(bandTo));
  if (bandIndex(toBand) > bandIndex(fromBand) && delta + EPS >= BAND_JUMP_MIN_GAIN && !evidenceGrew && newBand) {
    alerts.push(alert("band_jump_without_evidence"));
  }
  return alerts;
}
