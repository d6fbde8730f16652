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

export function detectAnomalies(storeSlug: string, history: readonly HistoryPoint[], current: HistoryPoint): AnomalyAlert[] {
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

  const alerts: AnomalyAlert[] = [];
  if (delta + EPS >= RAPID_GAIN_THRESHOLD) alerts.push(alert("rapid_gain"));

  const evidenceBefore = Math.max(...window.map((p) => p.verifiedEvidence ?? 0));
  const evidenceGrew = current.verifiedEvidence !== undefined && current.verifiedEvidence > evidenceBefore;
  if (bandIndex(toBand) > bandIndex(fromBand) && delta + EPS >= BAND_JUMP_MIN_GAIN && !evidenceGrew) {
    alerts.push(alert("band_jump_without_evidence"));
  }
  return alerts;
}
