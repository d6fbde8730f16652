/**
 * Per-store, per-request engine selection (spec "Engine selection"). Always yields a number.
 *
 * overall:   v4.1 when TRUST_SCORE_PUBLIC_V41_ENABLED and v4.1 produced a value, else v2.
 * breakdown: v4.1 when both flags are on and v4.1 produced a value, else the 12 v2 components.
 *
 * The score is carried on both scales under explicit names. For a v2 overall, score0to100 is the v2 number × 100;
 * it is still the v2 model and not comparable with a v4.1 number (`engines.overall` says which it is).
 */
import type { DimensionBreakdown, AssuranceDecision, V41Result } from "./engine-v41.ts";
import type { V2Component, V2Result } from "./engine-v2.ts";
import { METHODOLOGY_VERSION, V2_MODEL_VERSION, round, type ConfidenceLevel, type EngineId, type Tier } from "./types.ts";

export interface TrustFlags {
  TRUST_SCORE_PUBLIC_V41_ENABLED: boolean;
  TRUST_SCORE_PUBLIC_COHERENT_ENGINE_ENABLED: boolean;
}

export type SelectedBreakdown =
  | {
      engine: "v41";
      tier: Tier;
      cap: number | null;
      base0to100: number | null;
      externalAssuranceBonus0to100: number;
      dimensions: DimensionBreakdown[];
      assurance: AssuranceDecision[];
    }
  | { engine: "v2"; components: V2Component[] };

export interface SelectedTrustScore {
  engines: { overall: EngineId; breakdown: EngineId };
  confidence_level: ConfidenceLevel;
  /** The selected engine's number on the 0..100 scale. */
  score0to100: number;
  /** The same number on the 0..1 scale used by thresholds, bands and statuses. */
  score0to1: number;
  /** Version of the model that produced the overall number. */
  modelVersion: typeof METHODOLOGY_VERSION | typeof V2_MODEL_VERSION;
  breakdown: SelectedBreakdown;
}

/** Reads a flag the way operators write them: "1", "true", "on", "yes" (any case) are on; anything else is off. */
export function flagOn(raw: string | undefined | null): boolean {
  return raw !== undefined && raw !== null && ["1", "true", "on", "yes"].includes(raw.trim().toLowerCase());
}

export function selectTrustScore(args: { v41: V41Result | null; v2: V2Result; flags: TrustFlags }): SelectedTrustScore {
  const { v41, v2, flags } = args;
  const v41Value = v41 !== null && v41.tier !== "insufficient_data" && v41.value !== null ? v41.value : null;
  const overall: EngineId = flags.TRUST_SCORE_PUBLIC_V41_ENABLED && v41Value !== null ? "v41" : "v2";
  const breakdownEngine: EngineId =
    overall === "v41" && flags.TRUST_SCORE_PUBLIC_COHERENT_ENGINE_ENABLED ? "v41" : "v2";

  let score0to100: number;
  let score0to1: number;
  if (overall === "v41" && v41Value !== null) {
    score0to100 = round(v41Value, 2);
    score0to1 = round(v41Value / 100, 4);
  } else {
    score0to1 = round(v2.score0to1, 4);
    score0to100 = round(v2.score0to1 * 100, 2);
  }

  const breakdown: SelectedBreakdown =
    breakdownEngine === "v41" && v41 !== null
      ? {
          engine: "v41",
          tier: v41.tier,
          cap: v41.cap,
          base0to100: v41.base,
          externalAssuranceBonus0to100: v41.bonus,
          dimensions: v41.dimensions,
          assurance: v41.assurance,
        }
      : { engine: "v2", components: v2.components };

  return {
    engines: { overall, breakdown: breakdown.engine },
    // The tier says how much evidence exists, whichever engine is published; without a v4.1 run there is none.
    confidence_level: v41 === null ? "insufficient_data" : v41.confidence_level,
    score0to100,
    score0to1,
    modelVersion: overall === "v41" ? METHODOLOGY_VERSION : V2_MODEL_VERSION,
    breakdown,
  };
}
