/** Message contracts of the `trust` actor (TypeBox: validated at the host, typed at the caller) and its event. */
import { Type as T, type Static } from "@sinclair/typebox";

/** The one trust actor: it owns every store's score, the signing key set, history, alerts and appeals. */
export const TRUST_ACTOR_ID = "global";

/** Topic of the event published after each store's recompute (consumed by the search indexer). */
export const TRUST_SCORE_TOPIC = "trust.score";

/** Payload of `trust.score`: exactly these fields (the search engineer's `TrustScoreEvent`). */
export interface TrustScoreEvent {
  slug: string;
  /** 0..1 */
  trustScore: number;
  operationalStatus: "active" | "deprioritized" | "hidden" | "suspended";
  /** ISO 8601 */
  computedAt: string;
}

/** `boot`: a store with no computed score yet, scored before the gateway reports ready (scoreUnscored). */
export const RecomputeTrigger = T.Union([T.Literal("refresh"), T.Literal("operator"), T.Literal("on_demand"), T.Literal("boot")]);
export type RecomputeTrigger = Static<typeof RecomputeTrigger>;

export const EnsureScheduled = T.Object({});
export const RecomputeAll = T.Object({ trigger: RecomputeTrigger });
export const Recompute = T.Object({ slug: T.String({ minLength: 1, maxLength: 63 }), trigger: RecomputeTrigger });
export const RotateKey = T.Object({});
export const ScoreUnscored = T.Object({});

export const FileAppeal = T.Object({
  storeSlug: T.String({ minLength: 1, maxLength: 63 }),
  userId: T.String(),
  reason: T.String({ minLength: 10, maxLength: 2000 }),
  evidenceUrls: T.Array(T.String({ maxLength: 2048 }), { maxItems: 10 }),
});

export const ResolveAppeal = T.Object({
  id: T.String({ format: "uuid" }),
  userId: T.String(),
  decision: T.Union([T.Literal("upheld"), T.Literal("rejected")]),
  note: T.String({ minLength: 1, maxLength: 2000 }),
  /** Recompute the store's score right after the decision (e.g. after corrected data). */
  recompute: T.Boolean(),
});

export const ResolveAlert = T.Object({
  id: T.String({ format: "uuid" }),
  userId: T.String(),
  resolution: T.Union([T.Literal("confirmed_legitimate"), T.Literal("confirmed_manipulation"), T.Literal("dismissed")]),
  note: T.String({ minLength: 1, maxLength: 2000 }),
});

export interface RecomputeSummary {
  stores: number;
  alerts: number;
  batches: number;
  computedAt: string;
  durationMs: number;
  /** Time per phase; reads overlap the previous batch's work, so the phases can add up to more than durationMs. */
  profileMs: { readMs: number; scoreMs: number; signMs: number; writeMs: number; commitMs: number };
}

export interface AppealView {
  id: string;
  storeSlug: string;
  status: "open" | "resolved";
  reason: string;
  evidenceUrls: string[];
  disputedScore0to1: number | null;
  filedAt: string;
  reviewDueAt: string;
  decision: "upheld" | "rejected" | null;
  decisionNote: string | null;
  resolvedAt: string | null;
}

export interface AlertView {
  id: string;
  storeSlug: string;
  kind: "rapid_gain" | "band_jump_without_evidence";
  detectedAt: string;
  engine: "v41" | "v2";
  from0to1: number;
  to0to1: number;
  delta0to1: number;
  fromBand: string;
  toBand: string;
  windowHours: number;
  status: "open" | "resolved";
  resolution: string | null;
  note: string | null;
  resolvedAt: string | null;
}
