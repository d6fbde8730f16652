/** The public methodology document served by GET /trust/methodology. Built from the same constants the engines use. */
import { ASSURANCE, ORDER_HEALTH_GATE, SIGNAL_WEIGHTS, GMV_FLOOR_MINOR, TIERS, TIER_THRESHOLDS } from "./engine-v41.ts";
import { V2_COMPONENTS, V2_NORMALISATION } from "./engine-v2.ts";
import { AGENT_THRESHOLD, DISPLAY_BANDS, LEGACY_LADDER, OPERATIONAL_STATUSES, SUSPENSION_THRESHOLD } from "./bands.ts";
import { DATA_QUALITY_LEVELS, METHODOLOGY_VERSION, V2_MODEL_VERSION } from "./types.ts";

export const REFRESH_INTERVAL_HOURS = 6;

const DATA_QUALITY_MEANING: Record<string, string> = {
  verified: "cryptographically verified evidence",
  measured: "measured by the platform",
  proxy: "indirect signal",
  self_declared: "declared by the merchant",
  not_applicable: "weight is redistributed, no synthetic value scored",
  synthetic_blocked: "fail-closed: the score collapses to insufficient_data",
};

function buildTopLevel() {
  const tiers = [
    {
      tier: "insufficient_data",
      cap: null,
      floor: null,
      criteria: "no applicable components, or any signal is synthetic_blocked",
      weights: null,
      emitsValue: false,
    },
    {
      ...tierRow("cold_start"),
      criteria: `humanOrders < ${TIER_THRESHOLDS.minHumanOrders} and agentOrders < ${TIER_THRESHOLDS.minAgentOrdersThin}`,
    },
    {
      ...tierRow("human_established"),
      criteria: `humanOrders >= ${TIER_THRESHOLDS.minHumanOrders} and agentOrders < ${TIER_THRESHOLDS.minAgentOrdersThin}`,
    },
    {
      ...tierRow("agent_verified_thin"),
      criteria: `agentOrders between ${TIER_THRESHOLDS.minAgentOrdersThin} and ${TIER_THRESHOLDS.minAgentOrdersVerified - 1}, or agent_verified with the GMV floor or unique-buyer count missing or insufficient`,
    },
    {
      ...tierRow("agent_verified"),
      criteria: `agentOrders >= ${TIER_THRESHOLDS.minAgentOrdersVerified} and GMV >= ${TIER_THRESHOLDS.minGmv90dMinor} cents in 90 days and >= ${TIER_THRESHOLDS.minUniqueBuyers90d} unique buyers (GMV in the store's currency: ${Object.keys(GMV_FLOOR_MINOR).map((c) => `${GMV_FLOOR_MINOR[c]} minor units of ${c}`).join(", ")}; a store in another currency degrades to agent_verified_thin)`,
    },
  ];
  return {
    version: METHODOLOGY_VERSION,
    scale: { min: 0, max: 100 },
    suspension_threshold: SUSPENSION_THRESHOLD,
    agent_threshold: AGENT_THRESHOLD,
    thresholds_scale: { min: 0, max: 1 },
    refresh_interval_hours: REFRESH_INTERVAL_HOURS,
    formula:
      "base = floor + weighted × (cap − floor) with weighted the tier-weighted sum of dimension scores (0..1); final = min(100, base + external_assurance_bonus)",
    dimensions: {
      merchantReliabilityBase: {
        signals: SIGNAL_WEIGHTS.merchantReliabilityBase,
        order_health_gate: {
          signals: [...ORDER_HEALTH_GATE.signals],
          margin: ORDER_HEALTH_GATE.margin,
          rule: "reliability = min(weighted mean of its signals, order health + margin); order health = weighted mean of the applicable order-health signals; no gate without one",
        },
      },
      agenticReadiness: { signals: SIGNAL_WEIGHTS.agenticReadiness },
      agenticEvidence: { signals: SIGNAL_WEIGHTS.agenticEvidence },
    },
    external_assurance: {
      max_bonus: ASSURANCE.maxBonus,
      points_per_certification: ASSURANCE.pointsPerCertification,
      gates: ["issuer on allowlist", "not expired", "already valid", "verified evidence", "one bonus per certification kind"],
      issuer_allowlist: [...ASSURANCE.defaultIssuerAllowlist],
      applied: "after the base score; the final score is clamped to 100",
      collected: false,
      note: "certifications are not recorded yet, so no merchant earns this bonus today",
    },
    tiers,
    tier_degradation: "agent_verified degrades to agent_verified_thin when the GMV floor or the unique-buyer count is missing or insufficient",
    tier_counts:
      "humanOrders, agentOrders, GMV and unique buyers count kept sales only: paid, not canceled orders of which at most half of the capture was refunded; GMV is captured minus refunded, in the store's currency. Refunded orders count toward refund health",
    data_quality_levels: DATA_QUALITY_LEVELS.map((level) => ({ level, meaning: DATA_QUALITY_MEANING[level] })),
    engine_selection: {
      overall: "v41 when TRUST_SCORE_PUBLIC_V41_ENABLED is on and v4.1 produces a value; otherwise v2",
      breakdown: "v41 when TRUST_SCORE_PUBLIC_COHERENT_ENGINE_ENABLED is also on; otherwise the 12 v2 components",
      flags: ["TRUST_SCORE_PUBLIC_V41_ENABLED", "TRUST_SCORE_PUBLIC_COHERENT_ENGINE_ENABLED"],
    },
    v2: {
      version: V2_MODEL_VERSION,
      scale: { min: 0, max: 1 },
      role: "degraded fallback; no tier caps or agent-evidence checks; not comparable with v4.1",
      components: V2_COMPONENTS.map((c) => ({ name: c.name, weight: c.weight, source: c.source })),
      normalisation: V2_NORMALISATION,
    },
    display_bands: DISPLAY_BANDS.map((b) => ({ min: b.min, band: b.band })),
    operational_statuses: OPERATIONAL_STATUSES.map((s) => ({ min: s.min, status: s.status, meaning: s.meaning })),
    interval_rule: "each key is an inclusive lower bound: [0,0.2) suspended, [0.2,0.3) hidden, [0.3,0.5) deprioritized, [0.5,1] active",
    legacy_ladder: {
      deprecated: true,
      use_instead: ["display_bands", "operational_statuses"],
      levels: LEGACY_LADDER.map((l) => ({ min: l.min, level: l.level })),
      agent_checkout_minimum: "STANDARD",
    },
    signing: { alg: "EdDSA", crv: "Ed25519", jwks: "/.well-known/jwks.json" },
    qtsp: { enabled: false, note: "signed_at is asserted by the issuer only" },
  };
}

function tierRow(tier: keyof typeof TIERS) {
  const t = TIERS[tier];
  return {
    tier,
    cap: t.cap,
    floor: t.floor,
    weights: {
      reliability: t.weights.merchantReliabilityBase,
      readiness: t.weights.agenticReadiness,
      evidence: t.weights.agenticEvidence,
    },
    emitsValue: true,
  };
}

export type MethodologyTopLevel = ReturnType<typeof buildTopLevel>;

export type MethodologyDocument = MethodologyTopLevel & {
  /** @deprecated alias of the top-level fields, kept for older clients. */
  v41_methodology: MethodologyTopLevel & { deprecated: true };
};

export function methodologyDocument(): MethodologyDocument {
  const top = buildTopLevel();
  return { ...top, v41_methodology: { ...buildTopLevel(), deprecated: true } };
}
