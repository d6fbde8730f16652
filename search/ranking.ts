/**
 * Search ranking (pure): eligibility, request filters, the spec's score, why_ranked, confidences, dedupe,
 * sorting and paging over the engine's candidate window. No I/O; `now` is passed in.
 *
 * score = text × 0.55 + trust × 0.25 + freshness × 0.10 + inStock × 0.10   (weights from SearchSettings)
 * then × (1 − deprioritizedPenalty) for stores whose operational status is deprioritized.
 * Formula, tiers and rules are written up in docs/search.md.
 */
import { categoryKey, clamp01, matchingPrice, tokenize, windowCandidates, type Candidate, type CandidateWindow, type EngineQuery } from "./engine.ts";
import type { ProductColumns } from "./columns.ts";
import { minorAtLeast, minorAtMost, minorUnitExponent, toMajor } from "./money.ts";
import { DEFAULT_SEARCH_SETTINGS, DEFAULT_STOP_WORDS, type SearchSettings } from "./settings.ts";
import { AGENT_THRESHOLD, agentCheckoutAllowed } from "../actors/trust/bands.ts";

// ---------- stores and eligibility ----------

export const VERIFICATION_LEVELS = ["UNVERIFIED", "BASIC", "STANDARD", "PREMIUM", "QUALIFIED"] as const;
export type VerificationLevel = (typeof VERIFICATION_LEVELS)[number];
export type StoreStatus = "active" | "deprioritized" | "hidden" | "suspended";

export interface StoreSnapshot {
  slug: string;
  name: string;
  /** 0..1, null when no score exists yet. */
  trustScore: number | null;
  verificationLevel: VerificationLevel;
  /** Operational status from the trust score thresholds. */
  storeStatus: StoreStatus;
  /** ISO date-time of the last successful catalog sync. */
  lastSyncAt: string | null;
  euQualified: boolean;
  /** 0..1 trust components, when known. */
  priceAccuracy?: number | null;
  availabilityAccuracy?: number | null;
}

export const MIN_ELIGIBLE_TRUST = 0.3;
export const MIN_ELIGIBLE_VERIFICATION: VerificationLevel = "BASIC";

/** Rank of a verification level; QUALIFIED is the highest. Unknown levels rank below UNVERIFIED. */
export function verificationRank(level: string): number {
  return VERIFICATION_LEVELS.indexOf(level as VerificationLevel);
}

/**
 * Spec eligibility for search and merchant reads: verification BASIC or higher, trustScore >= 0.3 (a store
 * without a score is not eligible), and neither suspended nor hidden. Deprioritized stores stay eligible.
 */
export function isStoreEligible(store: Pick<StoreSnapshot, "trustScore" | "verificationLevel" | "storeStatus">): boolean {
  return (
    verificationRank(store.verificationLevel) >= verificationRank(MIN_ELIGIBLE_VERIFICATION) &&
    store.trustScore !== null &&
    Number.isFinite(store.trustScore) &&
    store.trustScore >= MIN_ELIGIBLE_TRUST &&
    store.storeStatus !== "suspended" &&
    store.storeStatus !== "hidden"
  );
}

// ---------- freshness and confidences ----------

export type FreshnessTier = "fresh" | "good" | "stale" | "very_stale" | "unknown";
export type Confidence = "high" | "medium" | "low";

/** Upper bounds (exclusive, hours since last sync) and the value each tier contributes to the score. */
export const FRESHNESS_TIERS: ReadonlyArray<{ tier: Exclude<FreshnessTier, "unknown">; maxAgeHours: number; value: number }> = [
  { tier: "fresh", maxAgeHours: 6, value: 1 },
  { tier: "good", maxAgeHours: 24, value: 0.7 },
  { tier: "stale", maxAgeHours: 72, value: 0.3 },
  { tier: "very_stale", maxAgeHours: Infinity, value: 0 },
];

/** Hours since `lastSyncAt` (0 for a sync in the future), null when missing or unparseable. */
export function syncAgeHours(lastSyncAt: string | Date | null | undefined, now: Date): number | null {
  if (lastSyncAt == null) return null;
  const t = lastSyncAt instanceof Date ? lastSyncAt.getTime() : Date.parse(lastSyncAt);
  if (!Number.isFinite(t)) return null;
  return Math.max(0, (now.getTime() - t) / 3_600_000);
}

/** fresh < 6 h <= good < 24 h <= stale < 72 h <= very_stale; unknown when never synced. */
export function freshnessTier(lastSyncAt: string | Date | null | undefined, now: Date): FreshnessTier {
  const age = syncAgeHours(lastSyncAt, now);
  if (age === null) return "unknown";
  for (const t of FRESHNESS_TIERS) if (age < t.maxAgeHours) return t.tier;
  return "very_stale";
}

/** The 0..1 freshness input of the ranking score; unknown counts as 0. */
export function freshnessValue(tier: FreshnessTier): number {
  return FRESHNESS_TIERS.find((t) => t.tier === tier)?.value ?? 0;
}

const CONFIDENCE_ORDER: Confidence[] = ["low", "medium", "high"];
const minConfidence = (a: Confidence, b: Confidence): Confidence =>
  CONFIDENCE_ORDER[Math.min(CONFIDENCE_ORDER.indexOf(a), CONFIDENCE_ORDER.indexOf(b))];

/** The ceiling a store's measured accuracy allows: unknown → medium, < 0.8 → low, < 0.95 → medium, else high. */
export function accuracyCeiling(accuracy: number | null | undefined): Confidence {
  if (accuracy == null || !Number.isFinite(accuracy)) return "medium";
  if (accuracy < 0.8) return "low";
  if (accuracy < 0.95) return "medium";
  return "high";
}

/** Stock moves fast: high only when fresh (< 6 h), medium when good (< 24 h), else low; capped by availabilityAccuracy. */
export function stockConfidence(
  input: { lastSyncAt: string | Date | null | undefined; availabilityAccuracy?: number | null },
  now: Date,
): Confidence {
  const tier = freshnessTier(input.lastSyncAt, now);
  const byAge: Confidence = tier === "fresh" ? "high" : tier === "good" ? "medium" : "low";
  return minConfidence(byAge, accuracyCeiling(input.availabilityAccuracy));
}

/** Prices move slower: high when synced < 24 h, medium < 72 h, else low; capped by priceAccuracy. */
export function priceConfidence(
  input: { lastSyncAt: string | Date | null | undefined; priceAccuracy?: number | null },
  now: Date,
): Confidence {
  const tier = freshnessTier(input.lastSyncAt, now);
  const byAge: Confidence = tier === "fresh" || tier === "good" ? "high" : tier === "stale" ? "medium" : "low";
  return minConfidence(byAge, accuracyCeiling(input.priceAccuracy));
}

// ---------- request ----------

export type SortOrder = "relevance" | "price_asc" | "price_desc" | "trust_score" | "newest";
export const MAX_LIMIT = 100;
export const DEFAULT_LIMIT = 20;

export interface SearchFilters {
  /** Decimal amount in the product's currency. */
  minPrice?: number;
  maxPrice?: number;
  category?: string;
  /** Default true: only in-stock products. false: stock state is not filtered (out-of-stock ranks lower). */
  inStock?: boolean;
  minTrustScore?: number;
  /** Minimum verification level. */
  verificationLevel?: VerificationLevel;
}

export interface RankRequest {
  filters?: SearchFilters;
  sort?: SortOrder;
  page?: number;
  limit?: number;
  deduplicate?: boolean;
}

/** What ranking needs from a product record; money in minor units. */
export interface RankableProduct {
  id: string;
  storeSlug: string;
  title: string;
  description: string;
  priceMinor: number;
  /**
   * Every price the cart can charge, ascending, when that is not just `priceMinor`: a product with variants is
   * bought as one of them, at the variant's own price (its list price when the variant has none). The price filter
   * matches when one of them is in range; price sorts use the lowest in range (price_desc: the highest).
   */
  prices?: readonly number[];
  compareAtPriceMinor: number | null;
  currency: string;
  inStock: boolean;
  imageUrl: string | null;
  category: string | null;
  /** ISO date-time, used by sort=newest. */
  createdAt: string;
}

export interface MerchantSummary {
  slug: string;
  name: string;
  trustScore: number | null;
  verificationLevel: VerificationLevel;
  storeStatus: "active" | "deprioritized";
  lastSyncAt: string | null;
  /**
   * Whether an agent's checkout here goes ahead: false below the agent-checkout trust threshold (`agentCheckoutOf`).
   * Search results and product detail send it; the merchant directory's summaries leave it out.
   */
  agentCheckout?: boolean;
  /** Only when `agentCheckout` is false: the reason a checkout answers with NOT_ELIGIBLE. */
  agentCheckoutReason?: "trust_below_agent_threshold";
}

/**
 * The merchant summary's agent-checkout signal (audit A7 LOW-4): a store below the agent-checkout trust threshold
 * (actors/trust/bands.ts AGENT_THRESHOLD, 0.7) is searchable and readable, but a checkout there is refused with
 * NOT_ELIGIBLE `trust_below_agent_threshold` (the cart's assertStoresPayable: no score is refused too). Search
 * results and product reads say so up front instead of at checkout.
 */
export function agentCheckoutOf(trustScore: number | null): Pick<MerchantSummary, "agentCheckout" | "agentCheckoutReason"> {
  // The threshold rule is bands.ts's, the one the cart's assertStoresPayable applies (review RN LOW-3: one place).
  return trustScore !== null && Number.isFinite(trustScore) && agentCheckoutAllowed(trustScore)
    ? { agentCheckout: true }
    : { agentCheckout: false, agentCheckoutReason: "trust_below_agent_threshold" };
}

export interface ScoreBreakdown {
  text: number;
  trust: number;
  freshness: number;
  inStock: number;
  /** Weighted sum before the deprioritized penalty. */
  base: number;
  /** 1, or 1 − penalty for a deprioritized store. */
  multiplier: number;
  /** Unrounded final score, used for ordering. */
  final: number;
}

/** The product record's own fields (its store named by `merchant` instead of `storeSlug`), ranked. */
export interface RankedProduct extends Omit<RankableProduct, "storeSlug"> {
  merchant: MerchantSummary;
  relevanceScore: number;
  freshnessTier: FreshnessTier;
  stockConfidence: Confidence;
  priceConfidence: Confidence;
  why_ranked: string;
  euQualified: boolean;
  score: ScoreBreakdown;
}

export interface RankResult<T = RankedProduct> {
  items: T[];
  total: number;
  page: number;
  limit: number;
  totalPages: number;
  /**
   * With RankInput.cap, when more than `cap` candidates passed the filters: the cap-th best value of the order's first
   * criterion (relevance: the final score; trust_score: the trust; price_asc: minus the major price; price_desc: the
   * major price; newest: the creation time), i.e. a candidate left out is not above it.
   */
  capCut?: number;
}

export interface NormalizedRequest {
  filters: SearchFilters & { inStock: boolean };
  sort: SortOrder;
  page: number;
  limit: number;
  deduplicate: boolean;
}

/** Defaults and caps: page >= 1 (default 1), limit 1..100 (default 20, anything larger is served as 100). */
export function normalizeRequest(req: RankRequest = {}): NormalizedRequest {
  const page = Number.isFinite(req.page) ? Math.max(1, Math.floor(req.page as number)) : 1;
  const rawLimit = Number.isFinite(req.limit) ? Math.floor(req.limit as number) : DEFAULT_LIMIT;
  return {
    filters: { ...req.filters, inStock: req.filters?.inStock ?? true },
    sort: req.sort ?? "relevance",
    page,
    limit: Math.min(MAX_LIMIT, Math.max(1, rawLimit)),
    deduplicate: req.deduplicate === true,
  };
}

function storePassesFilters(store: StoreSnapshot, f: SearchFilters): boolean {
  if (!isStoreEligible(store)) return false;
  if (f.minTrustScore !== undefined && (store.trustScore ?? 0) < f.minTrustScore) return false;
  if (f.verificationLevel !== undefined && verificationRank(store.verificationLevel) < verificationRank(f.verificationLevel)) return false;
  return true;
}

/** Slugs of the stores a request may return: eligible and passing the store-level filters. */
export function allowedStoreSlugs(stores: Iterable<StoreSnapshot>, req: RankRequest = {}): string[] {
  const f = normalizeRequest(req).filters;
  const out: string[] = [];
  for (const s of stores) if (storePassesFilters(s, f)) out.push(s.slug);
  return out.sort();
}

/**
 * The engine query for a request: store allow-list (eligibility + trust/verification filters), stock, category
 * and a price range pushed down in minor units. Decimal bounds map to minor units differently per currency, so
 * the pushed range is widened to hold for every exponent in `currencies` (exact when they share one exponent);
 * ranking re-applies the exact per-currency bounds.
 */
export function engineQueryFromRequest(
  text: string,
  req: RankRequest,
  stores: Iterable<StoreSnapshot>,
  settings: SearchSettings = DEFAULT_SEARCH_SETTINGS,
  currencies: readonly string[] = ["EUR"],
): EngineQuery {
  return engineQueryFor(text, req, allowedStoreSlugs(stores, req), settings, currencies);
}

/** engineQueryFromRequest with the store allow-list already computed (callers may cache it per filter shape). */
export function engineQueryFor(
  text: string,
  req: RankRequest,
  storeSlugs: string[],
  settings: SearchSettings = DEFAULT_SEARCH_SETTINGS,
  currencies: readonly string[] = ["EUR"],
): EngineQuery {
  const n = normalizeRequest(req);
  const exps = currencies.length > 0 ? currencies.map(minorUnitExponent) : [2];
  const q: EngineQuery = { text, window: settings.candidateWindow, storeSlugs };
  if (n.filters.inStock) q.inStock = true;
  if (n.filters.category !== undefined) q.category = n.filters.category;
  if (n.filters.minPrice !== undefined) q.minPriceMinor = Math.floor(n.filters.minPrice * 10 ** Math.min(...exps) + 1e-9);
  if (n.filters.maxPrice !== undefined) q.maxPriceMinor = Math.ceil(n.filters.maxPrice * 10 ** Math.max(...exps) - 1e-9);
  return q;
}

// ---------- scoring ----------

const r2 = (x: number) => x.toFixed(2);
const R2_ZERO = r2(0);
/**
 * A score below `threshold`, written so that the number shown is below the threshold shown (review RN LOW-3):
 * toFixed(2) wrote a refused 0.6996 as "trust 0.70 below 0.70". Two decimals, as the rest of why_ranked (0.58 stays
 * "0.58", the same as its trust part), and more only where two would round up to the threshold (0.6996 → "0.6996";
 * scores carry 4 decimals); past 6, rounded down to 2.
 */
function belowThreshold(x: number, threshold: number): string {
  for (let d = 2; d <= 6; d++) {
    const s = x.toFixed(d);
    if (Number(s) < threshold) return s;
  }
  return (Math.floor(x * 100) / 100).toFixed(2);
}

/**
 * The parts of a why_ranked text that depend only on the store's trust and the settings, formatted once per store
 * snapshot and weights instead of once per ranked product (toFixed was a seventh of a small store's search).
 * Re-formatted when the store's trust or the settings object changes, so the text is always what formatting
 * afresh would give.
 */
interface WhyFixedParts {
  settings: SearchSettings;
  trustValue: number;
  textWeight: string;
  trust: string;
  inStock: string;
  outOfStock: string;
}
const whyFixedCache = new WeakMap<StoreSnapshot, WhyFixedParts>();

function whyFixedParts(store: StoreSnapshot, trust: number, settings: SearchSettings): WhyFixedParts {
  const hit = whyFixedCache.get(store);
  if (hit && hit.settings === settings && hit.trustValue === trust) return hit;
  const w = settings.rankingWeights;
  const parts: WhyFixedParts = {
    settings,
    trustValue: trust,
    textWeight: r2(w.text),
    trust: `trust ${r2(trust)}×${r2(w.trust)}=${r2(trust * w.trust)}`,
    inStock: `in stock +${r2(w.inStock)}`,
    outOfStock: `out of stock +${R2_ZERO}`,
  };
  whyFixedCache.set(store, parts);
  return parts;
}

/** Final score rounded to 3 decimals for the API (ordering uses the unrounded value). */
export function roundScore(x: number): number {
  return Math.round(x * 1000) / 1000;
}

export function formatAge(hours: number): string {
  if (hours < 1) return `${Math.max(0, Math.round(hours * 60))} min ago`;
  if (hours < 48) return `${Math.round(hours)} h ago`;
  return `${Math.round(hours / 24)} d ago`;
}

/**
 * What a page item's why_ranked, tier, confidences and merchant summary take from its store at one instant:
 * computed once per (store snapshot, clock reading, settings) instead of once per item (a small store's page is
 * ten items of one store: the sync age, tier, confidences and toFixed calls were most of its search). Snapshots
 * are replaced, never mutated, so the entry is what computing afresh would give.
 */
interface StorePageParts {
  nowMs: number;
  settings: SearchSettings;
  tier: FreshnessTier;
  freshness: number;
  trust: number;
  multiplier: number;
  /** "fresh (synced 2 h ago) +0.10" or "sync time unknown +0.00". */
  freshnessPart: string;
  /** "; deprioritized store ×0.80" or "". */
  penaltyPart: string;
  /** "; agent checkout refused: trust 0.55 below 0.70" or "" (agentCheckoutOf). */
  checkoutPart: string;
  fixed: WhyFixedParts;
  stock: Confidence;
  price: Confidence;
  merchant: MerchantSummary;
}
const storePageCache = new WeakMap<StoreSnapshot, StorePageParts>();

function storePageParts(store: StoreSnapshot, now: Date, settings: SearchSettings): StorePageParts {
  const nowMs = now.getTime();
  const hit = storePageCache.get(store);
  if (hit !== undefined && hit.nowMs === nowMs && hit.settings === settings) return hit;
  const w = settings.rankingWeights;
  const age = syncAgeHours(store.lastSyncAt, now);
  let tier: FreshnessTier = "unknown";
  if (age !== null) {
    tier = "very_stale";
    for (const t of FRESHNESS_TIERS) {
      if (age < t.maxAgeHours) {
        tier = t.tier;
        break;
      }
    }
  }
  const freshness = freshnessValue(tier);
  const trust = clamp01(store.trustScore ?? 0);
  const multiplier = store.storeStatus === "deprioritized" ? 1 - settings.deprioritizedPenalty : 1;
  const stockByAge: Confidence = tier === "fresh" ? "high" : tier === "good" ? "medium" : "low";
  const priceByAge: Confidence = tier === "fresh" || tier === "good" ? "high" : tier === "stale" ? "medium" : "low";
  const checkout = agentCheckoutOf(store.trustScore);
  const parts: StorePageParts = {
    nowMs,
    settings,
    tier,
    freshness,
    trust,
    multiplier,
    freshnessPart: age === null ? `sync time unknown +${R2_ZERO}` : `${tier.replace("_", " ")} (synced ${formatAge(age)}) +${r2(freshness * w.freshness)}`,
    penaltyPart: multiplier !== 1 ? `; deprioritized store ×${r2(multiplier)}` : "",
    checkoutPart: checkout.agentCheckout ? "" : `; agent checkout refused: trust ${belowThreshold(store.trustScore ?? 0, AGENT_THRESHOLD)} below ${r2(AGENT_THRESHOLD)}`,
    fixed: whyFixedParts(store, trust, settings),
    stock: minConfidence(stockByAge, accuracyCeiling(store.availabilityAccuracy)),
    price: minConfidence(priceByAge, accuracyCeiling(store.priceAccuracy)),
    merchant: {
      slug: store.slug,
      name: store.name,
      trustScore: store.trustScore,
      verificationLevel: store.verificationLevel,
      storeStatus: store.storeStatus === "deprioritized" ? "deprioritized" : "active",
      lastSyncAt: store.lastSyncAt,
      ...checkout,
    },
  };
  storePageCache.set(store, parts);
  return parts;
}

/**
 * Formatted strings by the number they format, per settings object: text scores and rounded final scores repeat
 * across a page and across requests (a title's words give the same text score), and toFixed is not cheap.
 * Bounded: dropped when large or when the settings change.
 */
let formatSettings: SearchSettings | null = null;
const textParts = new Map<number, string>();
const scoreTexts = new Map<number, string>();
function textPart(text: number, settings: SearchSettings, textWeight: string): string {
  if (formatSettings !== settings || textParts.size > 4096 || scoreTexts.size > 4096) {
    formatSettings = settings;
    textParts.clear();
    scoreTexts.clear();
  }
  let s = textParts.get(text);
  if (s === undefined) textParts.set(text, (s = `text match ${r2(text)}×${textWeight}=${r2(text * settings.rankingWeights.text)}`));
  return s;
}
function scoreText(rounded: number): string {
  let s = scoreTexts.get(rounded);
  if (s === undefined) scoreTexts.set(rounded, (s = rounded.toFixed(3)));
  return s;
}

export function scoreProduct(
  textScore: number,
  product: Pick<RankableProduct, "inStock">,
  store: StoreSnapshot,
  now: Date,
  settings: SearchSettings = DEFAULT_SEARCH_SETTINGS,
): { score: ScoreBreakdown; why: string; tier: FreshnessTier } {
  return scoreWithParts(textScore, product.inStock, storePageParts(store, now, settings), settings);
}

function scoreWithParts(
  textScore: number,
  inStock: boolean,
  parts: StorePageParts,
  settings: SearchSettings,
): { score: ScoreBreakdown; why: string; tier: FreshnessTier } {
  const w = settings.rankingWeights;
  const text = clamp01(textScore);
  const { trust, freshness, multiplier, fixed } = parts;
  const stock = inStock ? 1 : 0;
  const base = text * w.text + trust * w.trust + freshness * w.freshness + stock * w.inStock;
  const final = base * multiplier;
  const why =
    `${textPart(text, settings, fixed.textWeight)}; ${fixed.trust}; ${parts.freshnessPart}; ` +
    `${inStock ? fixed.inStock : fixed.outOfStock}${parts.penaltyPart}; score ${scoreText(roundScore(final))}${parts.checkoutPart}`;
  return { score: { text, trust, freshness, inStock: stock, base, multiplier, final }, why, tier: parts.tier };
}

// ---------- dedupe ----------

/**
 * Near-duplicate key of a title: case, accents and punctuation folded, stop words dropped, words de-duplicated
 * and sorted (so word order does not matter). Empty when nothing is left (such titles are never merged).
 */
export function dedupeKey(title: string, stopWords: readonly string[] = DEFAULT_STOP_WORDS): string {
  const stop = new Set([...DEFAULT_STOP_WORDS, ...stopWords].map((w) => w.toLowerCase()));
  return [...new Set(tokenize(title).filter((w) => !stop.has(w)))].sort().join(" ");
}

// ---------- sorting ----------

const byId = (a: RankedProduct, b: RankedProduct) => (a.id < b.id ? -1 : a.id > b.id ? 1 : 0);
const byRelevance = (a: RankedProduct, b: RankedProduct) =>
  b.score.final - a.score.final || b.score.trust - a.score.trust || byId(a, b);
/** Lowest chargeable price (`highest`: the highest), in major units. */
const majorPrice = (p: RankedProduct, highest: boolean) =>
  (p.prices === undefined ? p.priceMinor : p.prices[highest ? p.prices.length - 1 : 0]!) / 10 ** minorUnitExponent(p.currency);

/** Comparators; every non-relevance sort breaks ties by relevance, then id, so pages are stable. */
export const SORTS: Record<SortOrder, (a: RankedProduct, b: RankedProduct) => number> = {
  relevance: byRelevance,
  price_asc: (a, b) => majorPrice(a, false) - majorPrice(b, false) || byRelevance(a, b),
  price_desc: (a, b) => majorPrice(b, true) - majorPrice(a, true) || byRelevance(a, b),
  trust_score: (a, b) => b.score.trust - a.score.trust || byRelevance(a, b),
  newest: (a, b) => (Date.parse(b.createdAt) || 0) - (Date.parse(a.createdAt) || 0) || byRelevance(a, b),
};

// ---------- top-k selection ----------

/**
 * The k first items under `cmp` (negative = a comes first) without sorting everything: a bounded binary heap
 * whose root is the worst item kept, O(n log k). `sorted()` returns the kept items in `cmp` order.
 */
export class TopK<T> {
  private heap: T[] = [];

  constructor(
    readonly k: number,
    private readonly cmp: (a: T, b: T) => number,
  ) {}

  get size(): number {
    return this.heap.length;
  }

  push(x: T): void {
    const h = this.heap;
    if (this.k <= 0) return;
    if (h.length < this.k) {
      h.push(x);
      let i = h.length - 1;
      while (i > 0) {
        const p = (i - 1) >> 1;
        if (this.cmp(h[i]!, h[p]!) <= 0) break;
        [h[i], h[p]] = [h[p]!, h[i]!];
        i = p;
      }
      return;
    }
    if (this.cmp(x, h[0]!) >= 0) return;
    h[0] = x;
    const n = h.length;
    let i = 0;
    for (;;) {
      const l = 2 * i + 1;
      const r = l + 1;
      let m = i;
      if (l < n && this.cmp(h[l]!, h[m]!) > 0) m = l;
      if (r < n && this.cmp(h[r]!, h[m]!) > 0) m = r;
      if (m === i) break;
      [h[i], h[m]] = [h[m]!, h[i]!];
      i = m;
    }
  }

  sorted(): T[] {
    return [...this.heap].sort(this.cmp);
  }
}

/**
 * The k-th largest value (k from 1) of `values[0..n)`, by quickselect: O(n), reorders `values` in place.
 * Lets a caller drop everything strictly below it before the (costlier) comparator-based top-k.
 */
export function kthLargest(values: Float64Array, n: number, k: number): number {
  if (n <= 0 || k <= 0) return Infinity;
  if (k > n) return -Infinity;
  let lo = 0;
  let hi = n - 1;
  const target = k - 1; // index in descending order
  while (lo < hi) {
    // median of three as the pivot, then a three-way partition (many equal values are the common case)
    const mid = (lo + hi) >> 1;
    const a = values[lo]!;
    const b = values[mid]!;
    const c = values[hi]!;
    const pivot = a > b ? (b > c ? b : a > c ? c : a) : a > c ? a : b > c ? c : b;
    let lt = lo;
    let gt = hi;
    let i = lo;
    while (i <= gt) {
      const v = values[i]!;
      if (v > pivot) {
        values[i] = values[lt]!;
        values[lt] = v;
        lt++;
        i++;
      } else if (v < pivot) {
        values[i] = values[gt]!;
        values[gt] = v;
        gt--;
      } else i++;
    }
    // [lo, lt) > pivot, [lt, gt] == pivot, (gt, hi] < pivot
    if (target < lt) hi = lt - 1;
    else if (target > gt) lo = gt + 1;
    else return pivot;
  }
  return values[target]!;
}

/** The first `k` of `items` under `cmp`, in order (same as `[...items].sort(cmp).slice(0, k)` for a total order). */
export function topK<T>(items: Iterable<T>, k: number, cmp: (a: T, b: T) => number): T[] {
  const t = new TopK<T>(k, cmp);
  for (const x of items) t.push(x);
  return t.sorted();
}

// ---------- the pipeline ----------

export interface RankInput {
  candidates: Candidate[];
  products: ReadonlyMap<string, RankableProduct>;
  /**
   * Optional: the same records by `Candidate.ref` (see `SearchDoc.ref`). When every candidate's ref leads to a
   * record with its id, no id is hashed; otherwise ranking looks every candidate up in `products`.
   */
  productsByRef?: ReadonlyArray<RankableProduct | undefined>;
  /**
   * Optional: the records and their rankable fields as columns by `Candidate.ref` (the search service's). When
   * every candidate's ref holds its id there, the window is ranked from the columns and records are read only
   * for the page (and for dedupe keys); otherwise as without it.
   */
  columns?: ProductColumns;
  /** Optional: the candidates as an engine's CandidateWindow instead of `candidates` (which is then ignored). */
  window?: CandidateWindow;
  /**
   * Optional: the window is the first `cap` candidates of the requested order (after the filters, before dedupe,
   * which then works inside it as it does inside an engine's window), so `total` is at most `cap`. A wildcard
   * query's (search/service.ts `wildcardWindow`): with no text to choose the window by, the engine hands every
   * match over and the window is the first `candidateWindow` of the order asked for, not the engine's first ids.
   */
  cap?: number;
  stores: ReadonlyMap<string, StoreSnapshot>;
  request?: RankRequest;
  now: Date;
  settings?: SearchSettings;
}

/** Category keys by category string: few distinct values, asked for on every candidate of a filtered request. */
const categoryKeys = new Map<string, string | null>();
function cachedCategoryKey(category: string | null): string | null {
  if (category === null) return null;
  let k = categoryKeys.get(category);
  if (k === undefined) {
    if (categoryKeys.size > 10_000) categoryKeys.clear();
    categoryKeys.set(category, (k = categoryKey(category)));
  }
  return k;
}

/** Parsed timestamps per record (snapshots are replaced, never mutated): Date.parse was a third of ranking. */
const syncedAt = new WeakMap<StoreSnapshot, number>();
function syncedAtMs(store: StoreSnapshot): number {
  let t = syncedAt.get(store);
  if (t === undefined) {
    t = store.lastSyncAt == null ? NaN : Date.parse(store.lastSyncAt);
    syncedAt.set(store, t);
  }
  return t;
}
const createdAt = new WeakMap<RankableProduct, number>();
function createdAtMs(p: RankableProduct): number {
  let t = createdAt.get(p);
  if (t === undefined) createdAt.set(p, (t = Date.parse(p.createdAt) || 0));
  return t;
}

/** Dedupe keys per product record (records are replaced, never mutated, on change) and stop-word list. */
const dedupeKeys = new WeakMap<RankableProduct, { stop: readonly string[]; key: string }>();
function cachedDedupeKey(p: RankableProduct, stopWords: readonly string[]): string {
  const hit = dedupeKeys.get(p);
  if (hit && hit.stop === stopWords) return hit.key;
  const key = dedupeKey(p.title, stopWords);
  dedupeKeys.set(p, { stop: stopWords, key });
  return key;
}

/**
 * Per-ref scratch for candidateRecords (ranking is synchronous, so one serves every call): at 2 × ref the call
 * that last saw the ref, at 2 × ref + 1 where its record went; side by side so a lookup is one cache miss.
 */
let refSeen = new Int32Array(0);
let refEpoch = 0;

/**
 * The known records among the candidates, each once with its best text score (engines return an id once; the
 * rule only matters for callers that merge lists). Through `productsByRef` when every candidate's ref leads to
 * its record, else through the id map, as before.
 */
function candidateRecords(input: RankInput): { records: RankableProduct[]; texts: number[] } {
  const byRef = input.productsByRef;
  if (byRef !== undefined) {
    if (refSeen.length < 2 * byRef.length) {
      refSeen = new Int32Array(Math.max(2 * byRef.length, refSeen.length * 2));
      refEpoch = 0;
    }
    if (++refEpoch === 0x7fff_ffff) {
      refSeen.fill(0);
      refEpoch = 1;
    }
    const records: RankableProduct[] = [];
    const texts: number[] = [];
    let complete = true;
    for (const c of input.candidates) {
      const ref = c.ref;
      const p = ref === undefined ? undefined : byRef[ref];
      if (p === undefined || p.id !== c.id) {
        complete = false;
        break;
      }
      const seen = 2 * ref!;
      if (refSeen[seen] === refEpoch) {
        const at = refSeen[seen + 1]!;
        texts[at] = Math.max(texts[at]!, c.textScore);
        continue;
      }
      refSeen[seen] = refEpoch;
      refSeen[seen + 1] = records.length;
      records.push(p);
      texts.push(c.textScore);
    }
    if (complete) return { records, texts };
  }
  const best = new Map<string, number>();
  for (const c of input.candidates) best.set(c.id, Math.max(best.get(c.id) ?? -Infinity, c.textScore));
  const records: RankableProduct[] = [];
  const texts: number[] = [];
  for (const [id, textScore] of best) {
    const p = input.products.get(id);
    if (!p) continue;
    records.push(p);
    texts.push(textScore);
  }
  return { records, texts };
}

/** What ordering needs about one candidate, computed without strings (why_ranked is built for the page only). */
interface Scored {
  p: RankableProduct;
  store: StoreSnapshot;
  text: number;
  final: number;
  trust: number;
  majorPrice: number;
  createdMs: number;
}

/** Per-store part of the score; the freshness value holds while `now` is in [from, until). */
interface StoreTerms {
  store: StoreSnapshot;
  trust: number;
  freshness: number;
  multiplier: number;
  from: number;
  until: number;
}

/** A store's ranking terms at `nowMs` (valid while `nowMs` stays in [from, until)): one place for ranking and wildcardStoreOrder. */
function storeTermsOf(store: StoreSnapshot, nowMs: number, settings: SearchSettings): StoreTerms {
  const fw = freshnessWindow(syncedAtMs(store), nowMs);
  return {
    store,
    trust: clamp01(store.trustScore ?? 0),
    freshness: freshnessValue(fw.tier),
    multiplier: store.storeStatus === "deprioritized" ? 1 - settings.deprioritizedPenalty : 1,
    from: fw.from,
    until: fw.until,
  };
}

/** A Map that counts its writes, so data derived from it (store terms, allow-lists) can be cached safely. */
export class VersionedMap<K, V> extends Map<K, V> {
  version = 0;
  override set(key: K, value: V): this {
    this.version++;
    return super.set(key, value);
  }
  override delete(key: K): boolean {
    this.version++;
    return super.delete(key);
  }
  override clear(): void {
    this.version++;
    super.clear();
  }
}

/**
 * Store terms across requests, for store maps that count their writes (the search service's): per filter shape,
 * valid for one version of the map. Plain maps get a fresh table per request.
 */
/** Store terms of one filter shape, by slug and (for the columns' dense path) by the columns' store index. */
interface StoreTermsTable {
  bySlug: Map<string, StoreTerms | null>;
  byIndex: Array<StoreTerms | null | undefined>;
  /** The columns whose store indices `byIndex` uses. */
  columns: ProductColumns | null;
}
const storeTermsCache = new WeakMap<ReadonlyMap<string, StoreSnapshot>, { version: number; byShape: Map<string, StoreTermsTable> }>();
const newTermsTable = (): StoreTermsTable => ({ bySlug: new Map(), byIndex: [], columns: null });
function storeTermsTable(stores: ReadonlyMap<string, StoreSnapshot>, shape: string): StoreTermsTable {
  if (!(stores instanceof VersionedMap)) return newTermsTable();
  let c = storeTermsCache.get(stores);
  if (!c || c.version !== stores.version) storeTermsCache.set(stores, (c = { version: stores.version, byShape: new Map() }));
  let table = c.byShape.get(shape);
  if (!table) {
    if (c.byShape.size > 200) c.byShape.clear();
    c.byShape.set(shape, (table = newTermsTable()));
  }
  return table;
}

/** The freshness tier at `nowMs` and the times between which it stays the same (1 ms inside each boundary). */
function freshnessWindow(syncMs: number, nowMs: number): { tier: FreshnessTier; from: number; until: number } {
  if (!Number.isFinite(syncMs)) return { tier: "unknown", from: -Infinity, until: Infinity };
  const age = Math.max(0, (nowMs - syncMs) / 3_600_000);
  let lower = 0;
  for (const t of FRESHNESS_TIERS) {
    if (age < t.maxAgeHours) {
      return {
        tier: t.tier,
        from: lower === 0 ? -Infinity : syncMs + lower * 3_600_000 + 1,
        until: t.maxAgeHours === Infinity ? Infinity : syncMs + t.maxAgeHours * 3_600_000 - 1,
      };
    }
    lower = t.maxAgeHours;
  }
  return { tier: "very_stale", from: syncMs + lower * 3_600_000 + 1, until: Infinity };
}

const sId = (a: Scored, b: Scored) => (a.p.id < b.p.id ? -1 : a.p.id > b.p.id ? 1 : 0);
const sRelevance = (a: Scored, b: Scored) => b.final - a.final || b.trust - a.trust || sId(a, b);
/**
 * The orders of SORTS on precomputed fields; under a price filter a product with several prices sorts by its price in
 * range (SORTS, used without a filter, by its lowest or highest).
 */
const SCORED_SORTS: Record<SortOrder, (a: Scored, b: Scored) => number> = {
  relevance: sRelevance,
  price_asc: (a, b) => a.majorPrice - b.majorPrice || sRelevance(a, b),
  price_desc: (a, b) => b.majorPrice - a.majorPrice || sRelevance(a, b),
  trust_score: (a, b) => b.trust - a.trust || sRelevance(a, b),
  newest: (a, b) => b.createdMs - a.createdMs || sRelevance(a, b),
};

/**
 * Candidates → one page of ranked products. Candidates whose product or store is unknown, whose store is not
 * eligible, or that fail a filter are dropped (filters are re-checked even when the engine applied them).
 *
 * Cost: every candidate gets its numeric score (the same arithmetic as scoreProduct, so the order is the same);
 * dedupe uses cached title keys; a bounded heap picks the page; only the page's items get why_ranked,
 * confidences and merchant summaries.
 */
export function rankProducts(given: RankInput): RankResult {
  let input = given;
  const settings = input.settings ?? DEFAULT_SEARCH_SETTINGS;
  const req = normalizeRequest(input.request);
  const f = req.filters;
  const w = settings.rankingWeights;

  const nowMs = input.now.getTime();
  const table = storeTermsTable(input.stores, `${f.minTrustScore ?? ""}|${f.verificationLevel ?? ""}|${settings.deprioritizedPenalty}`);
  const storeTerms = table.bySlug;
  const termsOf = (slug: string): StoreTerms | null => {
    let t = storeTerms.get(slug);
    if (t === null || (t !== undefined && nowMs >= t.from && nowMs < t.until)) return t;
    const store = input.stores.get(slug);
    t = store && storePassesFilters(store, f) ? storeTermsOf(store, nowMs, settings) : null;
    storeTerms.set(slug, t);
    return t;
  };
  if (input.columns !== undefined) {
    const dense = rankFromColumns(input, input.columns, table, termsOf, req, settings);
    if (dense !== null) return dense;
  }
  if (input.window !== undefined) input = { ...input, candidates: windowCandidates(input.window), window: undefined };
  const { records, texts } = candidateRecords(input);
  const wantCategory = f.category !== undefined ? categoryKey(f.category) : undefined;
  const bounds = new Map<string, [number, number]>();
  const boundsOf = (currency: string): [number, number] => {
    let b = bounds.get(currency);
    if (!b) {
      b = [f.minPrice !== undefined ? minorAtLeast(f.minPrice, currency) : -Infinity, f.maxPrice !== undefined ? minorAtMost(f.maxPrice, currency) : Infinity];
      bounds.set(currency, b);
    }
    return b;
  };

  const byPrice = req.sort === "price_asc" || req.sort === "price_desc";
  let scored: Scored[] = [];
  for (let i = 0; i < records.length; i++) {
    const p = records[i]!;
    const textScore = texts[i]!;
    const st = termsOf(p.storeSlug);
    if (st === null) continue;
    if (f.inStock && !p.inStock) continue;
    if (wantCategory !== undefined && cachedCategoryKey(p.category) !== wantCategory) continue;
    const priceFiltered = f.minPrice !== undefined || f.maxPrice !== undefined;
    let sortPrice = p.priceMinor;
    if (priceFiltered || (byPrice && p.prices !== undefined)) {
      const [lo, hi] = priceFiltered ? boundsOf(p.currency) : [-Infinity, Infinity];
      if (p.prices === undefined) {
        if (p.priceMinor < lo || p.priceMinor > hi) continue;
      } else {
        // several chargeable prices (variants): one of them in range; sorted by the lowest in range (desc: highest)
        sortPrice = matchingPrice(p.prices, lo, hi, req.sort === "price_desc");
        if (Number.isNaN(sortPrice)) continue;
      }
    }
    const text = clamp01(textScore);
    const base = text * w.text + st.trust * w.trust + st.freshness * w.freshness + (p.inStock ? 1 : 0) * w.inStock;
    scored.push({
      p,
      store: st.store,
      text: textScore,
      final: base * st.multiplier,
      trust: st.trust,
      majorPrice: byPrice ? sortPrice / 10 ** minorUnitExponent(p.currency) : 0,
      createdMs: req.sort === "newest" ? createdAtMs(p) : 0,
    });
  }

  if (input.cap !== undefined && scored.length > input.cap) scored = topK(scored, input.cap, SCORED_SORTS[req.sort]);
  if (req.deduplicate) {
    // across merchants only (audit Q-4): the winner's merchant keeps its other products of the key
    const keep = new Map<string, Scored>();
    const keys: string[] = new Array(scored.length);
    for (let i = 0; i < scored.length; i++) {
      const it = scored[i]!;
      const key = (keys[i] = cachedDedupeKey(it.p, settings.stopWords) || `\u0000${it.p.id}`);
      const cur = keep.get(key);
      if (!cur || sRelevance(it, cur) < 0) keep.set(key, it);
    }
    scored = scored.filter((it, i) => keep.get(keys[i]!)!.p.storeSlug === it.p.storeSlug);
  }
  const total = scored.length;
  const start = (req.page - 1) * req.limit;
  const page = start >= total ? [] : topK(scored, start + req.limit, SCORED_SORTS[req.sort]).slice(start);
  return {
    items: page.map((s) => rankedProduct(s.p, s.store, s.text, input.now, settings)),
    total,
    page: req.page,
    limit: req.limit,
    totalPages: Math.ceil(total / req.limit),
  };
}

/** Scratch of the dense path by candidate position (ranking is synchronous, so one set serves every call). */
let dRef = new Int32Array(1024);
let dText = new Float64Array(1024);
let dFinal = new Float64Array(1024);
let dTrust = new Float64Array(1024);
let dKey = new Float64Array(1024);
/** The columns' store index per kept position: its terms are `table.byIndex[store]` (set once per call, see below). */
let dStore = new Int32Array(1024);

/**
 * rankProducts over the columns: the same filters, arithmetic, orders and page as the record path, reading
 * typed arrays by ref instead of a record per candidate. Null when a candidate's ref does not hold its id (no
 * ref, a ref from before a reload, a ref reused since): the caller then takes the record path.
 */
function rankFromColumns(
  input: RankInput,
  cols: ProductColumns,
  table: StoreTermsTable,
  termsOf: (slug: string) => StoreTerms | null,
  req: NormalizedRequest,
  settings: SearchSettings,
): RankResult | null {
  const cands = input.candidates;
  const win = input.window;
  const count = win !== undefined ? win.length : cands.length;
  const ids = cols.ids;
  const nRefs = ids.length;
  if (dRef.length < count) {
    const n = Math.max(count, dRef.length * 2);
    dRef = new Int32Array(n);
    dText = new Float64Array(n);
    dFinal = new Float64Array(n);
    dTrust = new Float64Array(n);
    dKey = new Float64Array(n);
    dStore = new Int32Array(n);
  }
  let n = 0;
  if (win !== undefined) {
    // the embedded engine's window holds each of its slots once and a slot's id once, so each ref once: no
    // dedupe (its table was a random read and write per candidate)
    const wRefs = win.refs;
    const wText = win.textScores;
    // a ref still holds the entry's product when the columns still hold the generation the engine was given
    // with it (a 4-byte read); otherwise (no generation, other columns, a ref taken since) the ids decide, as
    // before: read only then, since the embedded engine's window fills them on first read
    const wGens = win.gens !== undefined && win.gensOwner === cols.uid ? win.gens : undefined;
    const gen = cols.gen;
    let wIds: string[] | undefined;
    for (let i = 0; i < count; i++) {
      const ref = wRefs[i]!;
      if (!(ref >= 0 && ref < nRefs)) return null;
      if (wGens === undefined || wGens[i] !== gen[ref]) {
        wIds ??= win.ids;
        if (ids[ref] !== wIds[i]) return null;
      }
      dRef[i] = ref;
      dText[i] = wText[i]!;
    }
    n = count;
  } else {
    if (refSeen.length < 2 * nRefs) {
      refSeen = new Int32Array(Math.max(2 * nRefs, refSeen.length * 2));
      refEpoch = 0;
    }
    if (++refEpoch === 0x7fff_ffff) {
      refSeen.fill(0);
      refEpoch = 1;
    }
    // each ref once, with its best text score (engines return an id once; the rule matters for merged lists)
    for (let i = 0; i < count; i++) {
      const c = cands[i]!;
      if (c.ref === undefined || !(c.ref < nRefs) || ids[c.ref] !== c.id) return null;
      const ref = c.ref;
      const textScore = c.textScore;
      const seen = 2 * ref;
      if (refSeen[seen] === refEpoch) {
        const at = refSeen[seen + 1]!;
        dText[at] = Math.max(dText[at]!, textScore);
        continue;
      }
      refSeen[seen] = refEpoch;
      refSeen[seen + 1] = n;
      dRef[n] = ref;
      dText[n] = textScore;
      n++;
    }
  }

  const f = req.filters;
  const w = settings.rankingWeights;
  const nowMs = input.now.getTime();
  if (table.columns !== cols) {
    table.columns = cols;
    table.byIndex = [];
  }
  const byIndex = table.byIndex;
  const slugs = cols.storeSlugs;
  let wantCategory = -3; // no category filter
  if (f.category !== undefined) {
    const key = categoryKey(f.category);
    wantCategory = key === null ? -1 : (cols.categoryIndex.get(key) ?? -2); // -2: no product has it
  }
  const priceFiltered = f.minPrice !== undefined || f.maxPrice !== undefined;
  const lo: number[] = [];
  const hi: number[] = [];
  if (priceFiltered) {
    for (const cur of cols.currencies) {
      lo.push(f.minPrice !== undefined ? minorAtLeast(f.minPrice, cur) : -Infinity);
      hi.push(f.maxPrice !== undefined ? minorAtMost(f.maxPrice, cur) : Infinity);
    }
  }
  const byPrice = req.sort === "price_asc" || req.sort === "price_desc";
  const newest = req.sort === "newest";
  const { store: storeCol, inStock: stockCol, category: catCol, priceMinor, prices: pricesCol, currency: curCol, createdMs, currencyScale } = cols;
  const desc = req.sort === "price_desc";
  // filter and score in place: positions [0, kept) are the ranked candidates
  let kept = 0;
  for (let i = 0; i < n; i++) {
    const ref = dRef[i]!;
    const si = storeCol[ref]!;
    let st = byIndex[si];
    if (st === undefined || (st !== null && !(nowMs >= st.from && nowMs < st.until))) byIndex[si] = st = termsOf(slugs[si]!);
    if (st === null) continue;
    const inStock = stockCol[ref] === 1;
    if (f.inStock && !inStock) continue;
    if (wantCategory !== -3 && catCol[ref] !== wantCategory) continue;
    // the price is read only when a filter or sort needs it: a random read per candidate otherwise wasted
    let sortPrice = 0;
    if (priceFiltered || byPrice) {
      sortPrice = priceMinor[ref]!;
      const several = pricesCol[ref];
      if (several === undefined) {
        if (priceFiltered && (sortPrice < lo[curCol[ref]!]! || sortPrice > hi[curCol[ref]!]!)) continue;
      } else {
        // several chargeable prices (variants): one of them in range; sorted by the lowest in range (desc: highest)
        sortPrice = priceFiltered ? matchingPrice(several, lo[curCol[ref]!]!, hi[curCol[ref]!]!, desc) : several[desc ? several.length - 1 : 0]!;
        if (Number.isNaN(sortPrice)) continue;
      }
    }
    const textScore = dText[i]!;
    const text = clamp01(textScore);
    const base = text * w.text + st.trust * w.trust + st.freshness * w.freshness + (inStock ? 1 : 0) * w.inStock;
    dRef[kept] = ref;
    dText[kept] = textScore;
    dFinal[kept] = base * st.multiplier;
    dTrust[kept] = st.trust;
    dKey[kept] = byPrice ? sortPrice / currencyScale[curCol[ref]!]! : newest ? createdMs[ref]! : 0;
    dStore[kept] = si;
    kept++;
  }

  const idKey = cols.idKey;
  const ref = dRef;
  const final = dFinal;
  const trust = dTrust;
  const key = dKey;
  const byId = (a: number, b: number): number => {
    const d = idKey[ref[a]!]! - idKey[ref[b]!]!;
    if (d !== 0) return d;
    const ia = ids[ref[a]!]!;
    const ib = ids[ref[b]!]!;
    return ia < ib ? -1 : ia > ib ? 1 : 0;
  };
  const relevance = (a: number, b: number): number => final[b]! - final[a]! || trust[b]! - trust[a]! || byId(a, b);
  const cmp: (a: number, b: number) => number =
    req.sort === "price_asc"
      ? (a, b) => key[a]! - key[b]! || relevance(a, b)
      : req.sort === "price_desc"
        ? (a, b) => key[b]! - key[a]! || relevance(a, b)
        : req.sort === "trust_score"
          ? (a, b) => trust[b]! - trust[a]! || relevance(a, b)
          : newest
            ? (a, b) => key[b]! - key[a]! || relevance(a, b)
            : relevance;

  let capCut: number | undefined;
  if (input.cap !== undefined && kept > input.cap) {
    // the order's first criterion as one number per position, larger first: what the cut is taken on
    const first = req.sort === "price_asc" ? (i: number) => -key[i]! : desc || newest ? (i: number) => key[i]! : req.sort === "trust_score" ? (i: number) => trust[i]! : (i: number) => final[i]!;
    const cut = keepFirst(kept, input.cap, cmp, first);
    kept = cut.kept;
    capCut = cut.cut;
  }
  // dedupe: the best position per title key (relevance is a total order, so visiting order does not matter); the
  // positions of other merchants under that key are dropped, the winner's merchant's own are kept (audit Q-4)
  let survivors: number[] | null = null;
  if (req.deduplicate) {
    const keepBy = new Map<string, number>();
    const keys: string[] = new Array(kept);
    for (let i = 0; i < kept; i++) {
      const p = cols.records[ref[i]!]!;
      const k = (keys[i] = cachedDedupeKey(p, settings.stopWords) || `\u0000${p.id}`);
      const cur = keepBy.get(k);
      if (cur === undefined || relevance(i, cur) < 0) keepBy.set(k, i);
    }
    survivors = [];
    for (let i = 0; i < kept; i++) {
      if (cols.records[ref[keepBy.get(keys[i]!)!]!]!.storeSlug === cols.records[ref[i]!]!.storeSlug) survivors.push(i);
    }
  }
  const total = survivors === null ? kept : survivors.length;
  const start = (req.page - 1) * req.limit;
  let page: number[] = [];
  if (start < total) {
    const top = new TopK<number>(start + req.limit, cmp);
    if (survivors === null) for (let i = 0; i < kept; i++) top.push(i);
    else for (const i of survivors) top.push(i);
    page = top.sorted().slice(start);
  }
  // the store of a kept position is byIndex[its store index].store: an entry set during this call is replaced only
  // by terms built from the same `input.stores` entry (and a kept position's store passed, so it is not null)
  const items = page.map((i) => rankedProduct(cols.records[ref[i]!]!, byIndex[dStore[i]!]!.store, dText[i]!, input.now, settings));
  return { items, total, page: req.page, limit: req.limit, totalPages: Math.ceil(total / req.limit), ...(capCut !== undefined ? { capCut } : {}) };
}

/** keepFirst's scratch: a copy of the first criterion (quickselect permutes it). */
let firstScratch = new Float64Array(1024);

/**
 * Keeps the first `cap` of the dense path's `kept` positions in `cmp`'s order, moved to positions [0, cap) of the
 * scratch arrays (in that order), and returns `cap` (RankInput.cap). `first` is `cmp`'s first criterion as a number,
 * larger first: a quickselect on it finds the cap-th best value, every position below that value is dropped without a
 * comparison, and only the rest (the cap best and the ties at the cut) go through `cmp`. A wildcard search hands
 * every match of the catalog over; a comparator heap over all of them cost 5-20 ms at 100k products.
 */
function keepFirst(kept: number, cap: number, cmp: (a: number, b: number) => number, first: (i: number) => number): { kept: number; cut: number } {
  if (firstScratch.length < kept) firstScratch = new Float64Array(Math.max(kept, firstScratch.length * 2));
  const values = firstScratch;
  for (let i = 0; i < kept; i++) values[i] = first(i);
  const cut = kthLargest(values, kept, cap);
  const top = new TopK<number>(cap, cmp);
  for (let i = 0; i < kept; i++) if (first(i) >= cut) top.push(i);
  const chosen = top.sorted();
  const n = chosen.length;
  const ref = new Int32Array(n), text = new Float64Array(n), fin = new Float64Array(n), tr = new Float64Array(n), key = new Float64Array(n), st = new Int32Array(n);
  for (let j = 0; j < n; j++) {
    const i = chosen[j]!;
    ref[j] = dRef[i]!;
    text[j] = dText[i]!;
    fin[j] = dFinal[i]!;
    tr[j] = dTrust[i]!;
    key[j] = dKey[i]!;
    st[j] = dStore[i]!;
  }
  dRef.set(ref);
  dText.set(text);
  dFinal.set(fin);
  dTrust.set(tr);
  dKey.set(key);
  dStore.set(st);
  return { kept: n, cut };
}

/**
 * A wildcard search's stores in the order of the best value a match of theirs can have on the sort's first
 * criterion (search/service.ts `rankWildcard`), or null for a sort whose first criterion is per product (price,
 * newest). relevance: the final score of an in-stock product (a wildcard's text score is 0, so it depends only on
 * the store and the stock; written as rankFromColumns computes it, so the values compare exactly); trust_score: the
 * store's trust. Stores the request cannot return (ineligible, below its trust or verification filter) are left out.
 */
export function wildcardStoreOrder(
  stores: ReadonlyMap<string, StoreSnapshot>,
  slugs: readonly string[],
  request: RankRequest,
  now: Date,
  settings: SearchSettings,
): Array<{ slug: string; bound: number }> | null {
  const req = normalizeRequest(request);
  if (req.sort !== "relevance" && req.sort !== "trust_score") return null;
  const w = settings.rankingWeights;
  const nowMs = now.getTime();
  const text = clamp01(0);
  const out: Array<{ slug: string; bound: number }> = [];
  for (const slug of slugs) {
    const store = stores.get(slug);
    if (!store || !storePassesFilters(store, req.filters)) continue;
    const st = storeTermsOf(store, nowMs, settings);
    if (req.sort === "trust_score") {
      out.push({ slug, bound: st.trust });
      continue;
    }
    const base = text * w.text + st.trust * w.trust + st.freshness * w.freshness + 1 * w.inStock;
    out.push({ slug, bound: base * st.multiplier });
  }
  return out.sort((a, b) => b.bound - a.bound);
}

function rankedProduct(p: RankableProduct, store: StoreSnapshot, textScore: number, now: Date, settings: SearchSettings): RankedProduct {
  const parts = storePageParts(store, now, settings);
  const { score, why, tier } = scoreWithParts(textScore, p.inStock, parts, settings);
  return {
    id: p.id,
    title: p.title,
    description: p.description,
    priceMinor: p.priceMinor,
    ...(p.prices !== undefined ? { prices: p.prices } : {}),
    compareAtPriceMinor: p.compareAtPriceMinor,
    currency: p.currency,
    inStock: p.inStock,
    imageUrl: p.imageUrl,
    category: p.category,
    createdAt: p.createdAt,
    merchant: parts.merchant,
    relevanceScore: roundScore(score.final),
    freshnessTier: tier,
    stockConfidence: parts.stock,
    priceConfidence: parts.price,
    why_ranked: why,
    euQualified: store.euQualified,
    score,
  };
}

/**
 * Collapses each near-duplicate title group across merchants: the highest-scoring product wins (ties: higher trust,
 * then lower id), the group's products of other merchants are dropped, and the winner's merchant keeps its other
 * products of the group (audit Q-4: they are its own distinct listings, which the spec's "across merchants" does not
 * collapse). In the order given.
 */
export function dedupe(items: RankedProduct[], stopWords: readonly string[] = DEFAULT_STOP_WORDS): RankedProduct[] {
  const keep = new Map<string, RankedProduct>();
  const keys = items.map((it) => dedupeKey(it.title, stopWords) || `\u0000${it.id}`);
  items.forEach((it, i) => {
    const cur = keep.get(keys[i]!);
    if (!cur || byRelevance(it, cur) < 0) keep.set(keys[i]!, it);
  });
  return items.filter((it, i) => keep.get(keys[i]!)!.merchant.slug === it.merchant.slug);
}

/** The spec's ProductSummary (decimal prices) from a ranked product. */
export interface ProductSummary {
  id: string;
  title: string;
  description: string;
  price: number;
  compareAtPrice: number | null;
  currency: string;
  inStock: boolean;
  imageUrl: string | null;
  category: string | null;
  merchant: MerchantSummary;
  relevanceScore: number;
  freshnessTier: FreshnessTier;
  stockConfidence: Confidence;
  priceConfidence: Confidence;
  why_ranked: string;
  euQualified: boolean;
  /**
   * Only for a product whose variants are priced on their own: the lowest and highest price the cart charges for
   * it (decimal, `currency`). `price` stays the product's list price; the price filter and price sorts use these.
   */
  priceRange?: { min: number; max: number };
}

export function toProductSummary(p: RankedProduct): ProductSummary {
  return {
    id: p.id,
    title: p.title,
    description: p.description,
    price: toMajor(p.priceMinor, p.currency),
    compareAtPrice: p.compareAtPriceMinor === null ? null : toMajor(p.compareAtPriceMinor, p.currency),
    currency: p.currency,
    inStock: p.inStock,
    imageUrl: p.imageUrl,
    category: p.category,
    merchant: p.merchant,
    relevanceScore: p.relevanceScore,
    freshnessTier: p.freshnessTier,
    stockConfidence: p.stockConfidence,
    priceConfidence: p.priceConfidence,
    why_ranked: p.why_ranked,
    euQualified: p.euQualified,
    ...(p.prices !== undefined && p.prices.length > 0
      ? { priceRange: { min: toMajor(p.prices[0]!, p.currency), max: toMajor(p.prices[p.prices.length - 1]!, p.currency) } }
      : {}),
  };
}
