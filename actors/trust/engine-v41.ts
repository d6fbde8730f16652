/**
 * Trust engine v4.1 (scale 0..100). Pure: every input, including the clock, is an argument.
 *
 * final = min(100, base + externalAssuranceBonus)
 * base  = floor + weighted01 × (cap − floor), with floor = 0 for every tier (see docs/trust.md)
 * weighted01 = Σ over dimensions of effectiveWeight × dimensionScore01, where tier weights of dimensions that have
 * no applicable signal are redistributed proportionally to the dimensions that have one.
 */
import { METHODOLOGY_VERSION, round, type ConfidenceLevel, type DataQuality, type Tier } from "./types.ts";

export interface Signal {
  /** 0..1, higher is better. */
  value: number;
  quality: DataQuality;
}

export interface ReliabilitySignals {
  fulfillment?: Signal;
  disputeRefundHealth?: Signal;
  catalogQuality?: Signal;
  storeAge?: Signal;
  humanOrderVolume?: Signal;
}

export interface ReadinessSignals {
  setupQuality?: Signal;
  /** Ed25519 request/response signing in place and checked. */
  protocolSecurity?: Signal;
  complianceHealth?: Signal;
  integrationFreshness?: Signal;
}

export interface EvidenceSignals {
  agentCheckout?: Signal;
  agentFulfillmentDispute?: Signal;
  receiptIntegrity?: Signal;
}

export interface Certification {
  id: string;
  /** e.g. "pci_dss", "iso_27001", "soc2_type2"; one bonus per kind. */
  kind: string;
  issuer: string;
  /** epoch ms */
  validFrom: number;
  /** epoch ms */
  validUntil: number;
  /** Only `verified` evidence (checked against the issuer) passes the gate. */
  evidenceQuality: DataQuality;
}

export interface TrustInputs {
  merchantReliabilityBase: ReliabilitySignals;
  agenticReadiness: ReadinessSignals;
  agenticEvidence: EvidenceSignals;
  humanOrders: number;
  agentOrders: number;
  /** GMV of the trailing 90 days in minor units (cents); null/undefined = unknown. */
  gmv90dMinor?: number | null;
  /**
   * The currency of `gmv90dMinor` (the store's); absent = USD. The floor is per currency (GMV_FLOOR_MINOR); a currency
   * without one cannot show the floor met (no exchange rate is kept): agent_verified degrades
   * (`gmv_90d_no_floor_for_currency`).
   */
  gmv90dCurrency?: string | null;
  uniqueBuyers90d?: number | null;
  certifications?: Certification[];
}

export type DimensionName = "merchantReliabilityBase" | "agenticReadiness" | "agenticEvidence";
export const DIMENSIONS: readonly DimensionName[] = ["merchantReliabilityBase", "agenticReadiness", "agenticEvidence"];

/** Relative weights of signals inside each dimension (each set sums to 1). */
export const SIGNAL_WEIGHTS = {
  merchantReliabilityBase: {
    fulfillment: 0.3,
    disputeRefundHealth: 0.25,
    catalogQuality: 0.2,
    storeAge: 0.1,
    humanOrderVolume: 0.15,
  },
  agenticReadiness: {
    setupQuality: 0.3,
    protocolSecurity: 0.3,
    complianceHealth: 0.25,
    integrationFreshness: 0.15,
  },
  agenticEvidence: {
    agentCheckout: 0.35,
    agentFulfillmentDispute: 0.35,
    receiptIntegrity: 0.3,
  },
} as const satisfies Record<DimensionName, Record<string, number>>;

/**
 * How much a signal's weight counts inside its dimension, by data quality: a proxy or a merchant's own claim
 * moves the dimension less than measured or verified evidence. not_applicable and synthetic_blocked never score.
 */
export const QUALITY_CREDIBILITY: Record<DataQuality, number> = {
  verified: 1,
  measured: 1,
  proxy: 0.75,
  self_declared: 0.5,
  not_applicable: 0,
  synthetic_blocked: 0,
};

/**
 * Order health gates reliability (audit A4 M2). The other reliability signals (catalog quality, store age, human
 * order volume) say nothing about whether buyers get what they paid for, so they may lift reliability at most
 * `margin` above order health, the weighted mean of the applicable order-health signals: reliability =
 * min(weighted mean of all signals, orderHealth + margin). A store whose orders are all late and disputed
 * (orderHealth 0) has reliability <= 0.25 whatever its catalog and age. No applicable order-health signal: no gate.
 */
export const ORDER_HEALTH_GATE = {
  signals: ["fulfillment", "disputeRefundHealth"] as readonly string[],
  margin: 0.25,
} as const;

export interface TierSpec {
  tier: Exclude<Tier, "insufficient_data">;
  cap: number;
  floor: number;
  weights: Record<DimensionName, number>;
}

const w = (r: number, a: number, e: number): Record<DimensionName, number> => ({
  merchantReliabilityBase: r,
  agenticReadiness: a,
  agenticEvidence: e,
});

export const TIERS: Record<Exclude<Tier, "insufficient_data">, TierSpec> = {
  cold_start: { tier: "cold_start", cap: 65, floor: 0, weights: w(0, 1, 0) },
  human_established: { tier: "human_established", cap: 85, floor: 0, weights: w(0.7, 0.3, 0) },
  agent_verified_thin: { tier: "agent_verified_thin", cap: 92, floor: 0, weights: w(0.45, 0.25, 0.3) },
  agent_verified: { tier: "agent_verified", cap: 100, floor: 0, weights: w(0.35, 0.25, 0.4) },
};

export const TIER_THRESHOLDS = {
  minHumanOrders: 5,
  minAgentOrdersThin: 5,
  minAgentOrdersVerified: 20,
  /** The spec's floor, in US cents; GMV_FLOOR_MINOR has it per currency. */
  minGmv90dMinor: 1_000_000,
  minUniqueBuyers90d: 20,
} as const;

/**
 * The agent_verified GMV floor per store currency, in its minor units (helper C, session 21). The spec's floor is
 * 1,000,000 cents (10,000 US dollars); a store's GMV is in its own currency's minor units and no exchange rate is kept,
 * so a KRW or IDR store compared with 1,000,000 would pass at ~700 or ~0.6 dollars. Fixed, documented floors instead:
 * 10,000 units of the currencies that trade near or above the dollar (EUR, GBP, CHF, all with 2 decimals); a currency
 * without a floor here cannot show the floor met and the store degrades to agent_verified_thin, as for a missing GMV
 * (spec). docs/trust.md "Tiers".
 */
export const GMV_FLOOR_MINOR: Readonly<Record<string, number>> = {
  USD: TIER_THRESHOLDS.minGmv90dMinor,
  EUR: TIER_THRESHOLDS.minGmv90dMinor,
  GBP: TIER_THRESHOLDS.minGmv90dMinor,
  CHF: TIER_THRESHOLDS.minGmv90dMinor,
};

export const ASSURANCE = {
  maxBonus: 10,
  pointsPerCertification: 5,
  /** Issuers whose certificates we can check; anything else earns nothing. */
  defaultIssuerAllowlist: ["PCI SSC", "ISO/IEC accredited body", "AICPA SOC", "TrustedShops", "EHI"],
} as const;

export interface SignalBreakdown {
  name: string;
  value: number | null;
  quality: DataQuality;
  /** Share of the dimension after quality weighting and not_applicable redistribution (0 when not scored). */
  weightInDimension: number;
}

export interface DimensionBreakdown {
  dimension: DimensionName;
  tierWeight: number;
  /** Weight after redistribution away from dimensions with no applicable signal. */
  effectiveWeight: number;
  /** 0..1, null when no applicable signal. */
  score01: number | null;
  /** Points this dimension adds to the base on the 0..100 scale. */
  contribution0to100: number;
  /**
   * Reliability only: the factor (0..1) that order health applied to the other signals (ORDER_HEALTH_GATE); 1 when
   * orders are healthy or no order-health signal applies. Their weightInDimension already includes it.
   */
  orderHealthGate?: number;
  signals: SignalBreakdown[];
}

export interface AssuranceDecision {
  certificationId: string;
  kind: string;
  accepted: boolean;
  points: number;
  reason: "accepted" | "issuer_not_allowlisted" | "expired" | "not_yet_valid" | "evidence_not_verified" | "duplicate_kind" | "bonus_cap_reached";
}

export interface V41Result {
  engine: "v41";
  methodologyVersion: typeof METHODOLOGY_VERSION;
  tier: Tier;
  confidence_level: ConfidenceLevel;
  /** Final score 0..100, null when tier is insufficient_data. */
  value: number | null;
  /** Score before the assurance bonus, never above the tier cap. */
  base: number | null;
  bonus: number;
  cap: number | null;
  floor: number | null;
  dimensions: DimensionBreakdown[];
  assurance: AssuranceDecision[];
  /** Why the tier is what it is (degradations, blocked signals, invalid input). */
  reasons: string[];
}

export interface V41Options {
  /** epoch ms; used by the certification expiry gate. */
  now: number;
  issuerAllowlist?: readonly string[];
}

type AnySignals = Partial<Record<string, Signal>>;

function isValidSignal(s: Signal): boolean {
  return (
    typeof s === "object" &&
    s !== null &&
    QUALITY_CREDIBILITY[s.quality] !== undefined &&
    (s.quality === "not_applicable" || s.quality === "synthetic_blocked" || (Number.isFinite(s.value) && s.value >= 0 && s.value <= 1))
  );
}

const isCount = (n: unknown): n is number => typeof n === "number" && Number.isInteger(n) && n >= 0;

/** Picks the tier from order counts alone; reasons explain a degradation from agent_verified. */
export function selectTier(
  inputs: Pick<TrustInputs, "humanOrders" | "agentOrders" | "gmv90dMinor" | "uniqueBuyers90d" | "gmv90dCurrency">,
): { tier: Exclude<Tier, "insufficient_data">; reasons: string[] } {
  const t = TIER_THRESHOLDS;
  const reasons: string[] = [];
  if (inputs.agentOrders >= t.minAgentOrdersVerified) {
    const gmv = inputs.gmv90dMinor;
    const buyers = inputs.uniqueBuyers90d;
    // the floor in the GMV's own currency: another currency's minor units are no US cents (GMV_FLOOR_MINOR)
    const floor = Object.hasOwn(GMV_FLOOR_MINOR, inputs.gmv90dCurrency ?? "USD") ? GMV_FLOOR_MINOR[inputs.gmv90dCurrency ?? "USD"] : undefined;
    if (gmv === null || gmv === undefined) reasons.push("gmv_90d_missing");
    else if (floor === undefined) reasons.push("gmv_90d_no_floor_for_currency");
    else if (gmv < floor) reasons.push("gmv_90d_below_floor");
    if (buyers === null || buyers === undefined) reasons.push("unique_buyers_90d_missing");
    else if (buyers < t.minUniqueBuyers90d) reasons.push("unique_buyers_90d_below_floor");
    if (reasons.length === 0) return { tier: "agent_verified", reasons };
    return { tier: "agent_verified_thin", reasons: reasons.map((r) => `degraded_to_agent_verified_thin:${r}`) };
  }
  if (inputs.agentOrders >= t.minAgentOrdersThin) return { tier: "agent_verified_thin", reasons };
  if (inputs.humanOrders >= t.minHumanOrders) return { tier: "human_established", reasons };
  return { tier: "cold_start", reasons };
}

/**
 * The order-health gate of the reliability dimension (ORDER_HEALTH_GATE): the factor (0..1) applied to the shares of
 * the signals other than order health so that the dimension does not exceed orderHealth + margin. 1 when it does not
 * bind or no order-health signal applies. `rows`: each applicable signal's normalised share and value.
 */
export function orderHealthGate(rows: readonly { name: string; value: number; share: number }[]): number {
  const isHealth = (name: string) => ORDER_HEALTH_GATE.signals.includes(name);
  const health = rows.filter((r) => r.share > 0 && isHealth(r.name));
  const healthShare = health.reduce((sum, r) => sum + r.share, 0);
  if (healthShare === 0) return 1;
  const healthPart = health.reduce((sum, r) => sum + r.share * r.value, 0);
  const otherPart = rows.reduce((sum, r) => sum + (r.share > 0 && !isHealth(r.name) ? r.share * r.value : 0), 0);
  const limit = healthPart / healthShare + ORDER_HEALTH_GATE.margin;
  if (otherPart <= 0 || healthPart + otherPart <= limit) return 1;
  return Math.max(0, Math.min(1, (limit - healthPart) / otherPart));
}

function scoreDimension(
  dimension: DimensionName,
  signals: AnySignals,
): { score01: number | null; signals: SignalBreakdown[]; orderHealthGate?: number } {
  const weights = SIGNAL_WEIGHTS[dimension] as Record<string, number>;
  const rows: { name: string; signal: Signal | undefined; raw: number }[] = Object.keys(weights).map((name) => {
    const signal = signals[name];
    const raw = signal ? weights[name] * QUALITY_CREDIBILITY[signal.quality] : 0;
    return { name, signal, raw };
  });
  const total = rows.reduce((sum, r) => sum + r.raw, 0);
  const reliability = dimension === "merchantReliabilityBase";
  const gate = reliability && total > 0 ? orderHealthGate(rows.map((r) => ({ name: r.name, value: r.signal?.value ?? 0, share: r.raw / total }))) : 1;
  // The share each signal carries: its normalised weight, times the gate for the signals order health gates.
  const share = (r: (typeof rows)[number]) => (total > 0 ? (r.raw / total) * (reliability && !ORDER_HEALTH_GATE.signals.includes(r.name) ? gate : 1) : 0);
  const breakdown: SignalBreakdown[] = rows.map((r) => ({
    name: r.name,
    value: r.signal && r.raw > 0 ? r.signal.value : null,
    quality: r.signal ? r.signal.quality : "not_applicable",
    weightInDimension: round(share(r), 6),
  }));
  const extra = reliability ? { orderHealthGate: round(gate, 6) } : {};
  if (total === 0) return { score01: null, signals: breakdown, ...extra };
  const score01 = rows.reduce((sum, r) => sum + (r.raw > 0 && r.signal ? share(r) * r.signal.value : 0), 0);
  return { score01, signals: breakdown, ...extra };
}

/** Applies the documented gates to each certification; at most ASSURANCE.maxBonus points in total. */
export function assessAssurance(
  certifications: readonly Certification[],
  now: number,
  issuerAllowlist: readonly string[] = ASSURANCE.defaultIssuerAllowlist,
): { bonus: number; decisions: AssuranceDecision[] } {
  const seenKinds = new Set<string>();
  let bonus = 0;
  const decisions: AssuranceDecision[] = [];
  for (const c of certifications) {
    const reject = (reason: AssuranceDecision["reason"]) =>
      decisions.push({ certificationId: c.id, kind: c.kind, accepted: false, points: 0, reason });
    if (!issuerAllowlist.includes(c.issuer)) reject("issuer_not_allowlisted");
    else if (!(now < c.validUntil)) reject("expired");
    else if (!(c.validFrom <= now)) reject("not_yet_valid");
    else if (c.evidenceQuality !== "verified") reject("evidence_not_verified");
    else if (seenKinds.has(c.kind)) reject("duplicate_kind");
    else if (bonus >= ASSURANCE.maxBonus) reject("bonus_cap_reached");
    else {
      const points = Math.min(ASSURANCE.pointsPerCertification, ASSURANCE.maxBonus - bonus);
      seenKinds.add(c.kind);
      bonus += points;
      decisions.push({ certificationId: c.id, kind: c.kind, accepted: true, points, reason: "accepted" });
    }
  }
  return { bonus, decisions };
}

function insufficient(reasons: string[], dimensions: DimensionBreakdown[] = []): V41Result {
  return {
    engine: "v41",
    methodologyVersion: METHODOLOGY_VERSION,
    tier: "insufficient_data",
    confidence_level: "insufficient_data",
    value: null,
    base: null,
    bonus: 0,
    cap: null,
    floor: null,
    dimensions,
    assurance: [],
    reasons,
  };
}

export function computeV41(inputs: TrustInputs, options: V41Options): V41Result {
  // Fail closed: malformed input must never turn into a confident number.
  const invalid: string[] = [];
  const blocked: string[] = [];
  for (const dim of DIMENSIONS) {
    const signals = (inputs[dim] ?? {}) as AnySignals;
    for (const [name, s] of Object.entries(signals)) {
      if (s === undefined) continue;
      if (!isValidSignal(s)) invalid.push(`invalid_signal:${dim}.${name}`);
      else if (s.quality === "synthetic_blocked") blocked.push(`synthetic_blocked:${dim}.${name}`);
    }
  }
  if (!isCount(inputs.humanOrders)) invalid.push("invalid_count:humanOrders");
  if (!isCount(inputs.agentOrders)) invalid.push("invalid_count:agentOrders");
  if (invalid.length > 0 || blocked.length > 0) return insufficient([...invalid, ...blocked]);

  const { tier, reasons } = selectTier(inputs);
  const spec = TIERS[tier];

  const scored = DIMENSIONS.map((dim) => ({ dim, ...scoreDimension(dim, (inputs[dim] ?? {}) as AnySignals) }));
  const applicableWeight = scored.reduce((sum, d) => sum + (d.score01 !== null ? spec.weights[d.dim] : 0), 0);
  const span = spec.cap - spec.floor;

  const dimensions: DimensionBreakdown[] = scored.map((d) => {
    const effectiveWeight = applicableWeight > 0 && d.score01 !== null ? spec.weights[d.dim] / applicableWeight : 0;
    return {
      dimension: d.dim,
      tierWeight: spec.weights[d.dim],
      effectiveWeight: round(effectiveWeight, 6),
      score01: d.score01 === null ? null : round(d.score01, 6),
      contribution0to100: round(effectiveWeight * (d.score01 ?? 0) * span, 4),
      ...(d.orderHealthGate === undefined ? {} : { orderHealthGate: d.orderHealthGate }),
      signals: d.signals,
    };
  });

  if (applicableWeight === 0) return insufficient([...reasons, "no_applicable_components"], dimensions);

  const weighted01 = scored.reduce(
    (sum, d) => sum + (d.score01 !== null ? (spec.weights[d.dim] / applicableWeight) * d.score01 : 0),
    0,
  );
  const base = Math.min(spec.cap, spec.floor + weighted01 * span);
  const { bonus, decisions } = assessAssurance(inputs.certifications ?? [], options.now, options.issuerAllowlist);
  const value = Math.min(100, base + bonus);

  return {
    engine: "v41",
    methodologyVersion: METHODOLOGY_VERSION,
    tier,
    confidence_level: tier,
    value: round(value, 2),
    base: round(base, 2),
    bonus,
    cap: spec.cap,
    floor: spec.floor,
    dimensions,
    assurance: decisions,
    reasons,
  };
}
