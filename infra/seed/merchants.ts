/**
 * The demo merchants: who they are and what each one is for. Tests and docs/data-model.md rely on the slugs,
 * levels, scores and statuses here; change them only together with those.
 */
import type { NegotiationRules, OperationalStatus, Policies, VerificationLevel } from "../../actors/store/schemas.ts";
import { GOOD_QUALITY, type CatalogQuality } from "./catalog.ts";

export type ZoneRegion = "US" | "EU" | "UK";

export interface OrderProfile {
  human: number;
  agent: number;
  /** Size of the buyer pools; the first orders in the 90-day window each get a new buyer. */
  humanBuyers: number;
  agentBuyers: number;
  onTime: number;
  dispute: number;
  refund: number;
  partialRefund: number;
  cancel: number;
  /** Share of agent orders paid over x402 (when the store accepts it). */
  x402Share: number;
}

export interface CouponSpec {
  code: string;
  kind: "percent" | "fixed";
  value: number;
  minSpendMinor?: number;
  /** Days from now; negative = already expired; undefined = never. */
  expiresInDays?: number;
  usageLimit?: number;
  usedCount?: number;
}

export interface MerchantSpec {
  slug: string;
  name: string;
  purpose: string;
  /** External-id prefix of its products (DS-0001 …). */
  prefix: string;
  level: VerificationLevel;
  trust: number | null;
  status: OperationalStatus;
  country: string;
  euBased: boolean;
  currency: string;
  platform: string;
  hosted: boolean;
  products: number;
  categories: string[];
  quality: CatalogQuality;
  paymentMethods: string[];
  policies: Policies;
  negotiation: NegotiationRules | null;
  review: readonly [avg: number, count: number] | null;
  /** Minutes since the last successful catalog sync. */
  syncAgeMinutes: number;
  /** Days since the store joined. */
  ageDays: number;
  orders: OrderProfile;
  zones: ZoneRegion;
  /** A second country-wide method for its own country: carts must pick one (get_shipping_rates) before checkout. */
  expressShipping?: true;
  coupons: CouponSpec[];
}

const q = (over: Partial<CatalogQuality>): CatalogQuality => ({ ...GOOD_QUALITY, ...over });
const SLOPPY = q({ missingGtinRate: 0.3, invalidGtinRate: 0.25, missingImageRate: 0.15, inconsistentStockRate: 0.1, missingAttributesRate: 0.3, outOfStockRate: 0.2 });
const ALL = ["Electronics", "Apparel", "Home & Kitchen", "Sports & Outdoors", "Beauty & Personal Care", "Toys & Games", "Pet Supplies", "Garden"];

const healthy = (human: number, agent: number, humanBuyers: number, agentBuyers: number): OrderProfile => ({
  human, agent, humanBuyers, agentBuyers, onTime: 0.95, dispute: 0.01, refund: 0.03, partialRefund: 0.02, cancel: 0.03, x402Share: 0.2,
});

const FULL_POLICIES = (returnWindowDays: number, freeShippingThresholdMinor: number, days: string, sla: string): Policies => ({
  acceptsReturns: true,
  returnWindowDays,
  freeShippingThresholdMinor,
  restockingFeePercent: 0,
  shippingEstimateDays: days,
  supportResponseTimeSla: sla,
});

export const DEMO_STORE_SLUG = "demo-store";

export const MERCHANTS: readonly MerchantSpec[] = [
  {
    slug: DEMO_STORE_SLUG, name: "Demo Store", prefix: "DS",
    purpose: "The public demo store (MCP without a key, MOCK payments). Large mixed catalog, healthy history, agent_verified tier.",
    level: "STANDARD", trust: 0.86, status: "active", country: "US", euBased: false, currency: "USD",
    platform: "custom", hosted: false, products: 240, categories: ALL, quality: GOOD_QUALITY,
    paymentMethods: ["MOCK", "card", "x402"],
    policies: FULL_POLICIES(30, 5000, "3-5", "24h"),
    negotiation: { enabled: true, floorPercent: 80, autoAcceptPercent: 95, maxRounds: 3, excludedCategories: [] },
    review: [4.6, 1280], syncAgeMinutes: 10, ageDays: 720,
    orders: { ...healthy(150, 80, 110, 45), x402Share: 0.15 },
    zones: "US",
    coupons: [
      { code: "WELCOME10", kind: "percent", value: 10 },
      { code: "FIVEOFF", kind: "fixed", value: 500, minSpendMinor: 2500 },
      { code: "EXPIRED15", kind: "percent", value: 15, expiresInDays: -30 },
      { code: "LIMITED50", kind: "percent", value: 50, usageLimit: 1, usedCount: 1 },
    ],
  },
  {
    slug: "northwind-outfitters", name: "Northwind Outfitters", prefix: "NW",
    purpose: "Top of the scale: PREMIUM, EXCELLENT band, long agent history, hosted storefront.",
    level: "PREMIUM", trust: 0.95, status: "active", country: "US", euBased: false, currency: "USD",
    platform: "shopify-like hosted", hosted: true, products: 60, categories: ["Apparel", "Sports & Outdoors"], quality: q({ missingGtinRate: 0.02 }),
    paymentMethods: ["card", "x402"],
    policies: FULL_POLICIES(60, 7500, "2-4", "4h"),
    negotiation: { enabled: true, floorPercent: 90, autoAcceptPercent: 97, maxRounds: 2, excludedCategories: ["Sports & Outdoors"] },
    review: [4.8, 3420], syncAgeMinutes: 30, ageDays: 1500,
    orders: { ...healthy(220, 90, 160, 50), onTime: 0.98, dispute: 0.003, refund: 0.02 },
    zones: "US",
    coupons: [{ code: "TRAIL15", kind: "percent", value: 15, minSpendMinor: 10000, expiresInDays: 60 }],
  },
  {
    slug: "qualified-eu-shop", name: "Qualified EU Shop", prefix: "EU",
    purpose: "QUALIFIED level, EU based (DE), prices in EUR; euQualified in search results.",
    level: "QUALIFIED", trust: 0.91, status: "active", country: "DE", euBased: true, currency: "EUR",
    platform: "custom", hosted: false, products: 50, categories: ["Home & Kitchen", "Beauty & Personal Care", "Garden"], quality: q({ missingGtinRate: 0 }),
    paymentMethods: ["card", "x402"],
    policies: { ...FULL_POLICIES(30, 5000, "1-3", "12h"), returnWindowDays: 30 },
    negotiation: null,
    review: [4.7, 860], syncAgeMinutes: 45, ageDays: 900,
    orders: healthy(140, 45, 100, 32),
    zones: "EU",
    coupons: [{ code: "WILLKOMMEN5", kind: "fixed", value: 500, minSpendMinor: 3000 }],
  },
  {
    slug: "greenleaf-living", name: "Greenleaf Living", prefix: "GL",
    purpose: "PREMIUM, GOOD band; sustainable home and garden goods (high recycled content for the sustainability endpoint).",
    level: "PREMIUM", trust: 0.88, status: "active", country: "US", euBased: false, currency: "USD",
    platform: "woocommerce-like", hosted: false, products: 45, categories: ["Home & Kitchen", "Garden", "Beauty & Personal Care"], quality: GOOD_QUALITY,
    paymentMethods: ["card"],
    policies: FULL_POLICIES(45, 6000, "3-6", "24h"),
    negotiation: null,
    review: [4.5, 540], syncAgeMinutes: 90, ageDays: 1100,
    orders: healthy(110, 30, 80, 25),
    zones: "US",
    coupons: [{ code: "GREEN20", kind: "percent", value: 20, minSpendMinor: 8000, expiresInDays: 14 }],
  },
  {
    slug: "brightside-electronics", name: "Brightside Electronics", prefix: "BE",
    purpose: "STANDARD, GOOD band electronics; carries near-duplicates of demo-store items for dedupe tests.",
    level: "STANDARD", trust: 0.82, status: "active", country: "US", euBased: false, currency: "USD",
    platform: "bigcommerce-like", hosted: true, products: 50, categories: ["Electronics"], quality: GOOD_QUALITY,
    paymentMethods: ["card", "x402"],
    policies: { ...FULL_POLICIES(15, 9900, "2-5", "48h"), restockingFeePercent: 15 },
    negotiation: { enabled: true, floorPercent: 85, autoAcceptPercent: 96, maxRounds: 3, excludedCategories: [] },
    review: [4.3, 720], syncAgeMinutes: 120, ageDays: 800,
    orders: healthy(100, 34, 75, 28),
    zones: "US",
    coupons: [],
  },
  {
    slug: "unverified-outlet", name: "Unverified Outlet", prefix: "UO",
    purpose: "Healthy in every way except verification (UNVERIFIED): must never be visible to agents.",
    level: "UNVERIFIED", trust: 0.78, status: "active", country: "US", euBased: false, currency: "USD",
    platform: "shopify-like hosted", hosted: true, products: 30, categories: ["Apparel", "Home & Kitchen"], quality: GOOD_QUALITY,
    paymentMethods: ["card"],
    policies: FULL_POLICIES(30, 5000, "3-5", "24h"),
    negotiation: null,
    review: [4.4, 210], syncAgeMinutes: 60, ageDays: 400,
    orders: { ...healthy(60, 0, 50, 1), x402Share: 0 },
    zones: "US",
    coupons: [{ code: "OUTLET5", kind: "fixed", value: 500 }],
  },
  {
    slug: "maple-pine-home", name: "Maple & Pine Home", prefix: "MP",
    purpose: "STANDARD, ACCEPTABLE band; agent_verified_thin tier (5-19 agent orders).",
    level: "STANDARD", trust: 0.74, status: "active", country: "US", euBased: false, currency: "USD",
    platform: "custom", hosted: false, products: 35, categories: ["Home & Kitchen", "Garden"], quality: GOOD_QUALITY,
    paymentMethods: ["card"],
    policies: FULL_POLICIES(30, 7500, "4-7", "48h"),
    negotiation: null,
    review: [4.2, 180], syncAgeMinutes: 240, ageDays: 600,
    orders: { ...healthy(60, 12, 45, 10), onTime: 0.92 },
    zones: "US",
    coupons: [],
  },
  {
    slug: "summit-sports-co", name: "Summit Sports Co", prefix: "SS",
    purpose: "STANDARD at the bottom of ACCEPTABLE (0.71); thin agent history; Standard or Express shipping (the buyer picks).",
    level: "STANDARD", trust: 0.71, status: "active", country: "US", euBased: false, currency: "USD",
    platform: "magento-like", hosted: false, products: 40, categories: ["Sports & Outdoors"], quality: q({ missingGtinRate: 0.1 }),
    paymentMethods: ["card"],
    policies: { ...FULL_POLICIES(30, 10000, "3-7", "48h"), restockingFeePercent: 10 },
    negotiation: null,
    review: [4.1, 150], syncAgeMinutes: 360, ageDays: 500,
    orders: { ...healthy(50, 8, 40, 7), onTime: 0.9, dispute: 0.02 },
    zones: "US",
    expressShipping: true,
    coupons: [],
  },
  {
    slug: "harbour-lane-uk", name: "Harbour Lane", prefix: "HL",
    purpose: "BASIC, CAUTION band, UK based with GBP prices (non-EU, not euQualified).",
    level: "BASIC", trust: 0.62, status: "active", country: "GB", euBased: false, currency: "GBP",
    platform: "shopify-like hosted", hosted: true, products: 30, categories: ["Apparel", "Home & Kitchen"], quality: q({ missingGtinRate: 0.15 }),
    paymentMethods: ["card"],
    policies: { acceptsReturns: true, returnWindowDays: 14, freeShippingThresholdMinor: 4000, shippingEstimateDays: "2-4" },
    negotiation: null,
    review: [4.0, 95], syncAgeMinutes: 600, ageDays: 350,
    orders: { ...healthy(40, 6, 32, 6), onTime: 0.88, dispute: 0.02, refund: 0.05 },
    zones: "UK",
    coupons: [{ code: "SPRING10", kind: "percent", value: 10, expiresInDays: 30 }],
  },
  {
    slug: "cozy-paws-supply", name: "Cozy Paws Supply", prefix: "CP",
    purpose: "BASIC, CAUTION band pet store; human_established tier (few agent orders).",
    level: "BASIC", trust: 0.66, status: "active", country: "US", euBased: false, currency: "USD",
    platform: "shopify-like hosted", hosted: true, products: 30, categories: ["Pet Supplies"], quality: q({ missingGtinRate: 0.1 }),
    paymentMethods: ["card"],
    policies: { acceptsReturns: true, returnWindowDays: 30, freeShippingThresholdMinor: 4900, shippingEstimateDays: "3-6" },
    negotiation: null,
    review: [4.2, 130], syncAgeMinutes: 300, ageDays: 300,
    orders: { ...healthy(35, 3, 30, 3), onTime: 0.9 },
    zones: "US",
    coupons: [],
  },
  {
    slug: "pixel-play-games", name: "Pixel Play Games", prefix: "PP",
    purpose: "BASIC, low CAUTION (0.55); toys and gadgets; carries near-duplicates of demo-store electronics.",
    level: "BASIC", trust: 0.55, status: "active", country: "US", euBased: false, currency: "USD",
    platform: "custom", hosted: false, products: 35, categories: ["Toys & Games", "Electronics"], quality: q({ missingGtinRate: 0.15, missingImageRate: 0.05 }),
    paymentMethods: ["card"],
    policies: { acceptsReturns: true, returnWindowDays: 14, shippingEstimateDays: "5-8" },
    negotiation: null,
    review: [3.8, 75], syncAgeMinutes: 1440, ageDays: 250,
    orders: { ...healthy(30, 4, 26, 4), onTime: 0.85, dispute: 0.04, refund: 0.06 },
    zones: "US",
    coupons: [],
  },
  {
    slug: "deprioritized-depot", name: "Deprioritized Depot", prefix: "DD",
    purpose: "BASIC, trust 0.40: operational status deprioritized (visible, ranked lower).",
    level: "BASIC", trust: 0.4, status: "deprioritized", country: "US", euBased: false, currency: "USD",
    platform: "custom", hosted: false, products: 30, categories: ["Electronics", "Sports & Outdoors", "Home & Kitchen"], quality: q({ missingGtinRate: 0.2, missingImageRate: 0.05, inconsistentStockRate: 0.03 }),
    paymentMethods: ["card"],
    policies: { acceptsReturns: true, returnWindowDays: 7, restockingFeePercent: 20 },
    negotiation: null,
    review: [3.2, 60], syncAgeMinutes: 4320, ageDays: 200,
    orders: { ...healthy(35, 7, 30, 6), onTime: 0.72, dispute: 0.08, refund: 0.12, cancel: 0.06 },
    zones: "US",
    coupons: [],
  },
  {
    slug: "lowtrust-bazaar", name: "Lowtrust Bazaar", prefix: "LB",
    purpose: "BASIC, trust 0.25: hidden from discovery. Sloppy catalog data, stale sync, many disputes.",
    level: "BASIC", trust: 0.25, status: "hidden", country: "US", euBased: false, currency: "USD",
    platform: "custom", hosted: false, products: 30, categories: ["Electronics", "Toys & Games"], quality: SLOPPY,
    paymentMethods: ["card"],
    policies: { acceptsReturns: false },
    negotiation: null,
    review: [2.4, 48], syncAgeMinutes: 20 * 1440, ageDays: 150,
    orders: { ...healthy(45, 10, 40, 9), onTime: 0.5, dispute: 0.2, refund: 0.25, partialRefund: 0.05, cancel: 0.08 },
    zones: "US",
    coupons: [],
  },
  {
    slug: "suspended-goods", name: "Suspended Goods", prefix: "SG",
    purpose: "BASIC, trust 0.10: auto-suspended. Must never be visible to agents.",
    level: "BASIC", trust: 0.1, status: "suspended", country: "US", euBased: false, currency: "USD",
    platform: "custom", hosted: false, products: 20, categories: ["Apparel", "Beauty & Personal Care"], quality: SLOPPY,
    paymentMethods: ["card"],
    policies: { acceptsReturns: false },
    negotiation: null,
    review: [1.9, 33], syncAgeMinutes: 45 * 1440, ageDays: 120,
    orders: { ...healthy(25, 8, 22, 7), onTime: 0.3, dispute: 0.35, refund: 0.4, partialRefund: 0.05, cancel: 0.1 },
    zones: "US",
    coupons: [],
  },
  {
    slug: "fresh-start-studio", name: "Fresh Start Studio", prefix: "FS",
    purpose: "New BASIC merchant with no published trust score yet (null) and 3 orders: cold_start tier. Not eligible until the trust actor scores it.",
    level: "BASIC", trust: null, status: "active", country: "US", euBased: false, currency: "USD",
    platform: "shopify-like hosted", hosted: true, products: 12, categories: ["Beauty & Personal Care", "Home & Kitchen"], quality: GOOD_QUALITY,
    paymentMethods: ["card"],
    policies: { acceptsReturns: true, returnWindowDays: 30, shippingEstimateDays: "3-5" },
    negotiation: null,
    review: null, syncAgeMinutes: 15, ageDays: 12,
    orders: { ...healthy(3, 0, 3, 1), dispute: 0, refund: 0, partialRefund: 0, cancel: 0 },
    zones: "US",
    coupons: [],
  },
];

/**
 * The same item sold by several merchants under slightly different titles (search dedupe). Each entry lists the
 * stores that carry it, with that store's title; the demo store carries all of them as DS-0001 … DS-0008.
 */
export interface SharedItem {
  key: string;
  category: string;
  templateNoun: string;
  brand: string;
  baseUsd: number;
  titles: Record<string, string>;
}

export const SHARED_ITEMS: readonly SharedItem[] = [
  {
    key: "auralis-anc", category: "Electronics", templateNoun: "Noise-Cancelling Headphones", brand: "Auralis", baseUsd: 249,
    titles: {
      "demo-store": "Auralis Pro ANC Wireless Headphones",
      "brightside-electronics": "Auralis Pro ANC Wireless Headphones - Black",
      "pixel-play-games": "Auralis Pro Wireless Noise Cancelling Headphones",
      "lowtrust-bazaar": "AURALIS Pro ANC Wireless Headphones (Black)",
    },
  },
  {
    key: "voltiq-65w", category: "Electronics", templateNoun: "USB-C Charger 65W", brand: "Voltiq", baseUsd: 45,
    titles: {
      "demo-store": "Voltiq 65W USB-C GaN Charger",
      "brightside-electronics": "Voltiq 65W USB C GaN Fast Charger",
      "deprioritized-depot": "Voltiq GaN Charger 65W USB-C",
      "lowtrust-bazaar": "Voltiq 65W USB-C GaN Charger (2-Port)",
    },
  },
  {
    key: "nimbus-buds", category: "Electronics", templateNoun: "Wireless Earbuds", brand: "Nimbus Audio", baseUsd: 129,
    titles: {
      "demo-store": "Nimbus Audio Buds 2 True Wireless Earbuds",
      "brightside-electronics": "Nimbus Audio Buds 2 Wireless Earbuds",
      "pixel-play-games": "Nimbus Audio Buds2 True Wireless Earbuds",
    },
  },
  {
    key: "kestrel-k75", category: "Electronics", templateNoun: "Mechanical Keyboard", brand: "Kestrel Labs", baseUsd: 119,
    titles: {
      "demo-store": "Kestrel Labs K75 Mechanical Keyboard",
      "brightside-electronics": "Kestrel Labs K75 Wireless Mechanical Keyboard",
    },
  },
  {
    key: "copperline-skillet", category: "Home & Kitchen", templateNoun: 'Cast Iron Skillet 10"', brand: "Copperline", baseUsd: 39,
    titles: {
      "demo-store": "Copperline Cast Iron Skillet 10 inch",
      "greenleaf-living": 'Copperline 10" Cast Iron Skillet',
      "maple-pine-home": "Copperline Pre-Seasoned Cast Iron Skillet, 10 in",
      "qualified-eu-shop": "Copperline Cast Iron Skillet 10 inch (25 cm)",
    },
  },
  {
    key: "ridgeback-cork-mat", category: "Sports & Outdoors", templateNoun: "Yoga Mat 6mm", brand: "Ridgeback", baseUsd: 68,
    titles: {
      "demo-store": "Ridgeback Cork Yoga Mat 6mm",
      "northwind-outfitters": "Ridgeback 6mm Cork Yoga Mat",
      "summit-sports-co": "Ridgeback Cork Yoga Mat - 6 mm",
    },
  },
  {
    key: "trailwise-ascent", category: "Sports & Outdoors", templateNoun: "Trail Running Shoes", brand: "Trailwise", baseUsd: 139,
    titles: {
      "demo-store": "Trailwise Ascent Trail Running Shoes",
      "northwind-outfitters": "Trailwise Ascent Trail Runner Shoes",
      "summit-sports-co": "Trailwise Ascent Trail Running Shoe",
      "deprioritized-depot": "Trailwise Ascent Trail-Running Shoes",
    },
  },
  {
    key: "kindred-ortho-bed", category: "Pet Supplies", templateNoun: "Orthopedic Dog Bed", brand: "Kindred Pet", baseUsd: 89,
    titles: {
      "demo-store": "Kindred Pet Orthopedic Dog Bed, Large",
      "cozy-paws-supply": "Kindred Pet Large Orthopedic Dog Bed",
    },
  },
];
