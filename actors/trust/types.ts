/** Shared vocabulary of the trust engines. Scales are named in every identifier that carries a score. */

export const METHODOLOGY_VERSION = "4.1.0" as const;
export const V2_MODEL_VERSION = "2.0" as const;

export type EngineId = "v41" | "v2";

export type DataQuality =
  | "verified"
  | "measured"
  | "proxy"
  | "self_declared"
  | "not_applicable"
  | "synthetic_blocked";

export const DATA_QUALITY_LEVELS: readonly DataQuality[] = [
  "verified",
  "measured",
  "proxy",
  "self_declared",
  "not_applicable",
  "synthetic_blocked",
];

export type Tier = "insufficient_data" | "cold_start" | "human_established" | "agent_verified_thin" | "agent_verified";

/**
 * confidence_level in API responses is the v4.1 tier the merchant's data supports (the spec names
 * `insufficient_data` as a confidence level, and the other tiers are exactly how much evidence stands behind the
 * number).
 */
export type ConfidenceLevel = Tier;

export const round = (value: number, decimals: number): number => {
  const f = 10 ** decimals;
  return Math.round(value * f) / f;
};

export const clamp01 = (value: number): number => (value < 0 ? 0 : value > 1 ? 1 : value);
