/**
 * Catalog and merchant records: the TypeBox schemas the store actor, the gateway and the seed share, and the
 * mappers between database rows (snake_case, as postgres.js returns them) and records (camelCase, JSON-safe:
 * timestamps are ISO strings so a record survives structured clone and the NATS wire unchanged).
 *
 * Money is integer minor units (`priceMinor`) plus an ISO 4217 `currency`. The one exception is `ProductInput`,
 * the merchant-facing ingestion shape, which takes decimal major units (`price: 19.99`) like every platform
 * export does; `productInputToFields` converts it once, at that edge.
 */
import { Type as T, type Static } from "@sinclair/typebox";
import { CodePointString } from "../../infra/code-point-string.ts";
import { minorUnitExponent } from "../../search/money.ts";
import { storeSlugSchema } from "./slug.ts";

// ---------------------------------------------------------------------------------------------------------------
// Enumerations

export const VERIFICATION_LEVELS = ["UNVERIFIED", "BASIC", "STANDARD", "PREMIUM", "QUALIFIED"] as const;
export const VerificationLevel = T.Union(VERIFICATION_LEVELS.map((l) => T.Literal(l)));
export type VerificationLevel = Static<typeof VerificationLevel>;

export const OPERATIONAL_STATUSES = ["active", "deprioritized", "hidden", "suspended"] as const;
export const OperationalStatus = T.Union(OPERATIONAL_STATUSES.map((s) => T.Literal(s)));
export type OperationalStatus = Static<typeof OperationalStatus>;

export const PAYMENT_METHODS = ["MOCK", "card", "x402"] as const;

/**
 * The 249 officially assigned ISO 3166-1 alpha-2 codes (from Debian's iso-codes, iso_3166-1.json). A two-letter
 * pattern alone let "ZZ" through as an unshippable destination instead of a 400.
 */
export const ISO_COUNTRY_CODES: ReadonlySet<string> = new Set(
  [
  "AD AE AF AG AI AL AM AO AQ AR AS AT AU AW AX AZ BA BB BD BE BF BG BH BI BJ BL BM BN BO BQ",
  "BR BS BT BV BW BY BZ CA CC CD CF CG CH CI CK CL CM CN CO CR CU CV CW CX CY CZ DE DJ DK DM",
  "DO DZ EC EE EG EH ER ES ET FI FJ FK FM FO FR GA GB GD GE GF GG GH GI GL GM GN GP GQ GR GS",
  "GT GU GW GY HK HM HN HR HT HU ID IE IL IM IN IO IQ IR IS IT JE JM JO JP KE KG KH KI KM KN",
  "KP KR KW KY KZ LA LB LC LI LK LR LS LT LU LV LY MA MC MD ME MF MG MH MK ML MM MN MO MP MQ",
  "MR MS MT MU MV MW MX MY MZ NA NC NE NF NG NI NL NO NP NR NU NZ OM PA PE PF PG PH PK PL PM",
  "PN PR PS PT PW PY QA RE RO RS RU RW SA SB SC SD SE SG SH SI SJ SK SL SM SN SO SR SS ST SV",
  "SX SY SZ TC TD TF TG TH TJ TK TL TM TN TO TR TT TV TW TZ UA UG UM US UY UZ VA VC VE VG VI",
  "VN VU WF WS YE YT ZA ZM ZW",
  ]
    .join(" ")
    .split(" "),
);

export function isIsoCountryCode(code: string): boolean {
  return ISO_COUNTRY_CODES.has(code.toUpperCase());
}

/**
 * The ISO 4217 currencies money may be in: the 159 current codes of Debian's iso-codes 4.15 (iso_4217.json) less
 * the ones that are not money a shop charges (precious metals XAU XAG XPD XPT, bond units XBA–XBD, XDR XSU XUA,
 * the test and "no currency" codes XTS XXX, and the funds codes BOV CHE CHW CLF COU MXV USN UYI UYW). The pattern
 * alone let "ZZZ" through as a product, zone or order currency (audit A3-7). Exponents: `currencyExponent`.
 */
export const ISO_CURRENCY_CODES: ReadonlySet<string> = new Set(
  [
  "AED AFN ALL AMD ANG AOA ARS AUD AWG AZN BAM BBD BDT BGN BHD BIF BMD BND BOB BRL BSD BTN BWP BYN BZD CAD CDF CHF CLP CNY",
  "COP CRC CUC CUP CVE CZK DJF DKK DOP DZD EGP ERN ETB EUR FJD FKP GBP GEL GHS GIP GMD GNF GTQ GYD HKD HNL HRK HTG HUF IDR",
  "ILS INR IQD IRR ISK JMD JOD JPY KES KGS KHR KMF KPW KRW KWD KYD KZT LAK LBP LKR LRD LSL LYD MAD MDL MGA MKD MMK MNT MOP",
  "MRU MUR MVR MWK MXN MYR MZN NAD NGN NIO NOK NPR NZD OMR PAB PEN PGK PHP PKR PLN PYG QAR RON RSD RUB RWF SAR SBD SCR SDG",
  "SEK SGD SHP SLE SLL SOS SRD SSP STN SVC SYP SZL THB TJS TMT TND TOP TRY TTD TWD TZS UAH UGX USD UYU UZS VED VES VND VUV",
  "WST XAF XCD XOF XPF YER ZAR ZMW ZWL",
  ]
    .join(" ")
    .split(" "),
);

/** Case-sensitive: money currencies are upper case everywhere (the schemas' `^[A-Z]{3}$`). */
export function isIsoCurrencyCode(code: string): boolean {
  return ISO_CURRENCY_CODES.has(code);
}

/** The per-field message for a currency outside `ISO_CURRENCY_CODES`, or null. */
export function currencyProblem(code: string): string | null {
  return isIsoCurrencyCode(code) ? null : `${code} is not an ISO 4217 currency code`;
}

/**
 * The pattern of a name or id a merchant sends that must say something: a character other than white space. A title,
 * an external id or a buyer made only of spaces passed `minLength: 1` and was stored: a product listed with a blank
 * name, an upsert key nobody can read back, every blank buyer one "unique" buyer (helper A, session 21). Per-item
 * validators say it in NOT_BLANK_MESSAGE's words (ingest.ts `schemaErrors`).
 */
export const NOT_BLANK_PATTERN = "\\S";
export const NOT_BLANK_MESSAGE = "must contain a character other than white space";

/**
 * A string of 1 to `maxLength` characters (code points, as docs/conventions.md counts them and the database's
 * `length()` checks do: `CodePointString`) with one that is not white space (NOT_BLANK_PATTERN).
 */
export function NonBlank(maxLength: number) {
  return CodePointString({ minLength: 1, maxLength, pattern: NOT_BLANK_PATTERN });
}

/** A string of at most `maxLength` characters (code points: `CodePointString`), for the free text of ingestion items. */
const Text = (maxLength: number) => CodePointString({ maxLength });

const Uuid = T.String({ format: "uuid" });
const Currency = T.String({ pattern: "^[A-Z]{3}$", minLength: 3, maxLength: 3 });
const Country = T.String({ pattern: "^[A-Z]{2}$", minLength: 2, maxLength: 2 });
const Minor = T.Integer({ minimum: 0 });
const IsoDate = T.String({ format: "date-time" });
const Gtin = T.String({ pattern: "^[0-9]{8,14}$" });

// ---------------------------------------------------------------------------------------------------------------
// Store

/** Stored in `stores.policies`. The API shows `freeShippingThreshold` as a decimal; here it is minor units. */
export const Policies = T.Object(
  {
    acceptsReturns: T.Boolean(),
    returnWindowDays: T.Optional(T.Integer({ minimum: 0 })),
    freeShippingThresholdMinor: T.Optional(Minor),
    restockingFeePercent: T.Optional(T.Number({ minimum: 0, maximum: 100 })),
    /** Free text as the spec shows it, e.g. "3-5". */
    shippingEstimateDays: T.Optional(T.String()),
    /** Free text, e.g. "24h". */
    supportResponseTimeSla: T.Optional(T.String()),
  },
  { additionalProperties: false },
);
export type Policies = Static<typeof Policies>;

/**
 * Rules for POST /agent/negotiate (BETA). A bid at or above `autoAcceptPercent` of the list price is accepted,
 * one below `floorPercent` is refused, anything between gets a counter-offer; at most `maxRounds` per
 * product and agent key. Products in `excludedCategories` are never negotiable.
 */
export const NegotiationRules = T.Object(
  {
    enabled: T.Boolean(),
    floorPercent: T.Number({ minimum: 0, maximum: 100 }),
    autoAcceptPercent: T.Number({ minimum: 0, maximum: 100 }),
    maxRounds: T.Integer({ minimum: 1, maximum: 100 }),
    /** Bounded like a product's `category` (255) they are matched against (audit A3-6: 10,000 × 700 chars were stored). */
    excludedCategories: T.Array(CodePointString({ maxLength: 255 }), { maxItems: 100 }),
  },
  { additionalProperties: false },
);
export type NegotiationRules = Static<typeof NegotiationRules>;

export const StoreRecord = T.Object({
  slug: storeSlugSchema(),
  name: T.String({ minLength: 1 }),
  ownerUserId: T.Union([Uuid, T.Null()]),
  verificationLevel: VerificationLevel,
  country: Country,
  euBased: T.Boolean(),
  currency: Currency,
  platform: T.String(),
  hostedStorefront: T.Boolean(),
  trustScore: T.Union([T.Number({ minimum: 0, maximum: 1 }), T.Null()]),
  operationalStatus: OperationalStatus,
  lastSyncAt: T.Union([IsoDate, T.Null()]),
  policies: Policies,
  policyVersion: T.Integer({ minimum: 1 }),
  paymentMethods: T.Array(T.String()),
  /** null = every MCP tool is enabled. */
  enabledMcpTools: T.Union([T.Array(T.String()), T.Null()]),
  negotiationRules: T.Union([NegotiationRules, T.Null()]),
  reviewRatingAvg: T.Union([T.Number({ minimum: 0, maximum: 5 }), T.Null()]),
  reviewCount: T.Integer({ minimum: 0 }),
  version: T.Integer({ minimum: 0 }),
  createdAt: IsoDate,
  updatedAt: IsoDate,
});
export type StoreRecord = Static<typeof StoreRecord>;

// ---------------------------------------------------------------------------------------------------------------
// Product

/** One purchasable variant. `priceMinor` null = the product's price; `stockQuantity` null = untracked. */
export const Variant = T.Object(
  {
    id: Uuid,
    sku: T.Optional(T.String()),
    title: T.String(),
    options: T.Record(T.String(), T.String()),
    priceMinor: T.Union([Minor, T.Null()]),
    stockQuantity: T.Union([T.Integer({ minimum: 0 }), T.Null()]),
    inStock: T.Boolean(),
  },
  { additionalProperties: true },
);
export type Variant = Static<typeof Variant>;

/**
 * Free-form, but the sustainability endpoint and the seed agree on these keys. `origin` is an ISO 3166-1
 * alpha-2 code, `weightGrams` an integer, `recycledContentPercent` 0..100.
 */
export const ProductAttributes = T.Object(
  {
    material: T.Optional(T.String()),
    weightGrams: T.Optional(T.Integer({ minimum: 0 })),
    origin: T.Optional(T.String()),
    recycledContentPercent: T.Optional(T.Number({ minimum: 0, maximum: 100 })),
  },
  { additionalProperties: true },
);
export type ProductAttributes = Static<typeof ProductAttributes>;

export const ProductRecord = T.Object({
  id: Uuid,
  storeSlug: T.String(),
  externalId: T.String({ minLength: 1, maxLength: 255 }),
  title: T.String({ minLength: 1, maxLength: 500 }),
  description: T.String(),
  brand: T.Union([T.String(), T.Null()]),
  category: T.Union([T.String(), T.Null()]),
  tags: T.Array(T.String()),
  gtin: T.Union([Gtin, T.Null()]),
  priceMinor: Minor,
  compareAtPriceMinor: T.Union([Minor, T.Null()]),
  currency: Currency,
  /** null = stock is not tracked; `inStock` is then the merchant's word. */
  stockQuantity: T.Union([T.Integer({ minimum: 0 }), T.Null()]),
  inStock: T.Boolean(),
  images: T.Array(T.String()),
  variants: T.Array(Variant),
  attributes: ProductAttributes,
  active: T.Boolean(),
  createdAt: IsoDate,
  updatedAt: IsoDate,
  syncedAt: IsoDate,
});
export type ProductRecord = Static<typeof ProductRecord>;

// ---------------------------------------------------------------------------------------------------------------
// Shipping zones and coupons

export const ShippingZone = T.Object({
  id: Uuid,
  storeSlug: T.String(),
  name: T.String(),
  /** ISO 3166-1 alpha-2 codes. */
  countries: T.Array(Country, { minItems: 1 }),
  /** Empty = the whole of each listed country. */
  postalPrefixes: T.Array(T.String()),
  currency: Currency,
  baseMinor: Minor,
  perItemMinor: Minor,
  /** Subtotal (minor units) at or above which shipping is free; null = never. */
  freeOverMinor: T.Union([Minor, T.Null()]),
  minDays: T.Integer({ minimum: 0 }),
  maxDays: T.Integer({ minimum: 0 }),
});
export type ShippingZone = Static<typeof ShippingZone>;

export const CouponKind = T.Union([T.Literal("percent"), T.Literal("fixed")]);
export type CouponKind = Static<typeof CouponKind>;

/** `value` is a whole percentage (1..100) for `percent`, minor units of `currency` for `fixed`. */
export const Coupon = T.Object({
  id: Uuid,
  storeSlug: T.String(),
  code: T.String({ pattern: "^[A-Z0-9_-]{2,64}$" }),
  kind: CouponKind,
  value: T.Integer({ minimum: 1 }),
  minSpendMinor: Minor,
  currency: T.Union([Currency, T.Null()]),
  expiresAt: T.Union([IsoDate, T.Null()]),
  usageLimit: T.Union([T.Integer({ minimum: 0 }), T.Null()]),
  usedCount: T.Integer({ minimum: 0 }),
  active: T.Boolean(),
});
export type Coupon = Static<typeof Coupon>;

// ---------------------------------------------------------------------------------------------------------------
// Ingestion (PUT /catalog)

/** The largest int4: stock quantities are `integer` columns, so a larger one is a per-item rejection, not a 400. */
export const MAX_STOCK_QUANTITY = 2_147_483_647;

export const VariantInput = T.Object({
  /** Kept when given (so carts that name it stay valid); otherwise the store actor assigns one. */
  id: T.Optional(Uuid),
  sku: T.Optional(T.String({ maxLength: 255 })),
  title: NonBlank(255),
  options: T.Optional(T.Record(T.String(), T.String())),
  /** Decimal major units; omit to use the product's price. */
  price: T.Optional(T.Number({ minimum: 0 })),
  stockQuantity: T.Optional(T.Union([T.Integer({ minimum: 0, maximum: MAX_STOCK_QUANTITY }), T.Null()])),
  inStock: T.Optional(T.Boolean()),
});
export type VariantInput = Static<typeof VariantInput>;

/**
 * One item a merchant pushes in PUT /catalog. Prices are decimal MAJOR units (`19.99` USD), with no more
 * decimals than the currency has (2 for USD/EUR, 0 for JPY); `currency` is required on every item.
 * `externalId` is the merchant's own id and the upsert key within the store. `stockQuantity` omitted or null
 * means untracked; `inStock` defaults to `stockQuantity > 0` when tracked, otherwise true, and a tracked 0 is never in stock.
 */
export const ProductInput = T.Object(
  {
    externalId: NonBlank(255),
    title: NonBlank(500),
    description: T.Optional(Text(20_000)),
    brand: T.Optional(Text(255)),
    category: T.Optional(Text(255)),
    tags: T.Optional(T.Array(Text(100), { maxItems: 50 })),
    gtin: T.Optional(Gtin),
    price: T.Number({ minimum: 0 }),
    compareAtPrice: T.Optional(T.Union([T.Number({ minimum: 0 }), T.Null()])),
    currency: Currency,
    stockQuantity: T.Optional(T.Union([T.Integer({ minimum: 0, maximum: MAX_STOCK_QUANTITY }), T.Null()])),
    inStock: T.Optional(T.Boolean()),
    /** http or https only (`imageUrlProblem`, checked per item): agents and the dashboard show these as links. */
    images: T.Optional(T.Array(T.String({ format: "uri", maxLength: 2048, description: "http or https URL" }), { maxItems: 20 })),
    variants: T.Optional(T.Array(VariantInput, { maxItems: 250 })),
    attributes: T.Optional(ProductAttributes),
    active: T.Optional(T.Boolean()),
  },
  { additionalProperties: false },
);
export type ProductInput = Static<typeof ProductInput>;

// ---------------------------------------------------------------------------------------------------------------
// Money helpers (edge conversion)

/**
 * ISO 4217 minor-unit exponent: the one table in search/money.ts, which carts, orders and search convert with. This
 * module kept a shorter copy (BIF, PYG, UGX, XAF, XOF … as 2 decimals, IQD and LYD as 2) until audit A3-7.
 */
export function currencyExponent(currency: string): number {
  return minorUnitExponent(currency);
}

/**
 * The largest amount, in minor units, that any single money value entering the service may have (a price, a zone
 * fee, a coupon, an order total): 10^12, i.e. 10,000,000,000.00 in a 2-decimal currency, 1,000,000,000,000 JPY or
 * 10,000,000,000 IDR. Far above any real catalog price, and far below Number.MAX_SAFE_INTEGER (about 9.007 × 10^15),
 * so minor units stay exact in a double (infra/db.ts parses bigint money as a JS number) and the search index's
 * integer check never sees a value it cannot store (docs/catalog.md).
 */
export const MAX_AMOUNT_MINOR = 1_000_000_000_000;

/** 19.99 USD → 1999. Rounds half away from zero after fixing binary noise (0.1 + 0.2 style). */
export function toMinor(major: number, currency: string): number {
  const factor = 10 ** currencyExponent(currency);
  return Math.round(Number((major * factor).toFixed(6)));
}

/** 1999 USD → 19.99 */
export function toMajor(minor: number, currency: string): number {
  return minor / 10 ** currencyExponent(currency);
}

// ---------------------------------------------------------------------------------------------------------------
// Rows and mappers

type Num = number | string | bigint;
type Ts = Date | string;
type JsonValue = unknown;

/** A `stores` row as postgres.js returns it (numeric/bigint may be strings depending on the client's types). */
export interface StoreRow {
  slug: string;
  name: string;
  owner_user_id: string | null;
  verification_level: string;
  country: string;
  eu_based: boolean;
  currency: string;
  platform: string;
  hosted_storefront: boolean;
  trust_score: Num | null;
  operational_status: string;
  last_sync_at: Ts | null;
  policies: JsonValue;
  policy_version: number;
  payment_methods: string[];
  enabled_mcp_tools: string[] | null;
  negotiation_rules: JsonValue;
  review_rating_avg: Num | null;
  review_count: number;
  version: number;
  created_at: Ts;
  updated_at: Ts;
}

export interface ProductRow {
  id: string;
  store_slug: string;
  external_id: string;
  title: string;
  description: string;
  brand: string | null;
  category: string | null;
  tags: string[];
  gtin: string | null;
  price_minor: Num;
  compare_at_price_minor: Num | null;
  currency: string;
  stock_quantity: number | null;
  in_stock: boolean;
  images: string[];
  variants: JsonValue;
  attributes: JsonValue;
  active: boolean;
  created_at: Ts;
  updated_at: Ts;
  synced_at: Ts;
}

export interface ShippingZoneRow {
  id: string;
  store_slug: string;
  name: string;
  countries: string[];
  postal_prefixes: string[];
  currency: string;
  base_minor: Num;
  per_item_minor: Num;
  free_over_minor: Num | null;
  min_days: number;
  max_days: number;
}

export interface CouponRow {
  id: string;
  store_slug: string;
  code: string;
  kind: string;
  value: Num;
  min_spend_minor: Num;
  currency: string | null;
  expires_at: Ts | null;
  usage_limit: number | null;
  used_count: number;
  active: boolean;
}

const num = (v: Num): number => Number(v);
const numOrNull = (v: Num | null | undefined): number | null => (v === null || v === undefined ? null : Number(v));
export const iso = (v: Ts): string => (v instanceof Date ? v.toISOString() : new Date(v).toISOString());
const isoOrNull = (v: Ts | null | undefined): string | null => (v === null || v === undefined ? null : iso(v));
/** jsonb comes back parsed from postgres.js, but a text-typed read (or a json string) is tolerated. */
const json = <V>(v: JsonValue, fallback: V): V => {
  if (v === null || v === undefined) return fallback;
  if (typeof v === "string") return JSON.parse(v) as V;
  return v as V;
};

export function storeFromRow(row: StoreRow): StoreRecord {
  return {
    slug: row.slug,
    name: row.name,
    ownerUserId: row.owner_user_id,
    verificationLevel: row.verification_level as VerificationLevel,
    country: row.country,
    euBased: row.eu_based,
    currency: row.currency,
    platform: row.platform,
    hostedStorefront: row.hosted_storefront,
    trustScore: numOrNull(row.trust_score),
    operationalStatus: row.operational_status as OperationalStatus,
    lastSyncAt: isoOrNull(row.last_sync_at),
    policies: json<Policies>(row.policies, { acceptsReturns: false }),
    policyVersion: row.policy_version,
    paymentMethods: row.payment_methods ?? [],
    enabledMcpTools: row.enabled_mcp_tools,
    negotiationRules: json<NegotiationRules | null>(row.negotiation_rules, null),
    reviewRatingAvg: numOrNull(row.review_rating_avg),
    reviewCount: row.review_count,
    version: row.version,
    createdAt: iso(row.created_at),
    updatedAt: iso(row.updated_at),
  };
}

export function productFromRow(row: ProductRow): ProductRecord {
  return {
    id: row.id,
    storeSlug: row.store_slug,
    externalId: row.external_id,
    title: row.title,
    description: row.description,
    brand: row.brand,
    category: row.category,
    tags: row.tags ?? [],
    gtin: row.gtin,
    priceMinor: num(row.price_minor),
    compareAtPriceMinor: numOrNull(row.compare_at_price_minor),
    currency: row.currency,
    stockQuantity: row.stock_quantity,
    inStock: row.in_stock,
    images: row.images ?? [],
    variants: json<Variant[]>(row.variants, []),
    attributes: json<ProductAttributes>(row.attributes, {}),
    active: row.active,
    createdAt: iso(row.created_at),
    updatedAt: iso(row.updated_at),
    syncedAt: iso(row.synced_at),
  };
}

export function shippingZoneFromRow(row: ShippingZoneRow): ShippingZone {
  return {
    id: row.id,
    storeSlug: row.store_slug,
    name: row.name,
    countries: row.countries,
    postalPrefixes: row.postal_prefixes ?? [],
    currency: row.currency,
    baseMinor: num(row.base_minor),
    perItemMinor: num(row.per_item_minor),
    freeOverMinor: numOrNull(row.free_over_minor),
    minDays: row.min_days,
    maxDays: row.max_days,
  };
}

export function couponFromRow(row: CouponRow): Coupon {
  return {
    id: row.id,
    storeSlug: row.store_slug,
    code: row.code,
    kind: row.kind as CouponKind,
    value: num(row.value),
    minSpendMinor: num(row.min_spend_minor),
    currency: row.currency,
    expiresAt: isoOrNull(row.expires_at),
    usageLimit: row.usage_limit,
    usedCount: row.used_count,
    active: row.active,
  };
}

/**
 * The inverse of `productFromRow`, in the JSON shape `jsonb_to_recordset` / multi-row inserts take
 * (timestamps stay ISO strings; Postgres casts them).
 */
export function productToRow(p: ProductRecord): ProductRow {
  return {
    id: p.id,
    store_slug: p.storeSlug,
    external_id: p.externalId,
    title: p.title,
    description: p.description,
    brand: p.brand,
    category: p.category,
    tags: p.tags,
    gtin: p.gtin,
    price_minor: p.priceMinor,
    compare_at_price_minor: p.compareAtPriceMinor,
    currency: p.currency,
    stock_quantity: p.stockQuantity,
    in_stock: p.inStock,
    images: p.images,
    variants: p.variants,
    attributes: p.attributes,
    active: p.active,
    created_at: p.createdAt,
    updated_at: p.updatedAt,
    synced_at: p.syncedAt,
  };
}

/** The catalog fields of a product from an ingestion item (ids, timestamps and store are the actor's business). */
export type ProductFields = Pick<
  ProductRecord,
  | "externalId" | "title" | "description" | "brand" | "category" | "tags" | "gtin" | "priceMinor"
  | "compareAtPriceMinor" | "currency" | "stockQuantity" | "inStock" | "images" | "attributes" | "active"
> & { variants: Array<Omit<Variant, "id"> & { id?: string }> };

/**
 * Tracked stock of 0 is out of stock whatever `inStock` says (as a sale sets it when it takes the last unit,
 * actors/store/commerce.ts): a tracked 0 with `inStock: true` was listed in stock by search and availability, then
 * refused by the cart (audit A2-F14). Tracked stock above 0 is in stock unless the merchant says `false` (sales
 * paused); untracked (null) stock is the merchant's word, true when not given.
 */
export function effectiveInStock(stockQuantity: number | null, inStock?: boolean): boolean {
  return stockQuantity === null ? (inStock ?? true) : stockQuantity > 0 && inStock !== false;
}

export interface VariantStock {
  id?: string;
  stockQuantity: number | null;
  inStock: boolean;
}

/**
 * A product's totals from its variants: the sum of tracked variant stock (null when any variant is untracked), in
 * stock if any variant is. The one roll-up both writers use (PUT /catalog through `productInputToFields`, PATCH
 * /inventory in the store actor), so a product never says "in stock" while none of its variants can be sold
 * (audit A2 MED-1).
 */
export function rollUpVariants(variants: readonly VariantStock[]): { stockQuantity: number | null; inStock: boolean } {
  if (variants.length === 0) return { stockQuantity: null, inStock: true };
  const tracked = variants.every((v) => v.stockQuantity !== null);
  return {
    stockQuantity: tracked ? variants.reduce((s, v) => s + (v.stockQuantity ?? 0), 0) : null,
    inStock: variants.some((v) => v.inStock),
  };
}

/**
 * Converts a validated `ProductInput` (major units) to record fields (minor units, defaults applied). A product
 * with variants takes its stock from them (`rollUpVariants`); `validateCatalogItems` refuses an item whose own
 * product-level stock says otherwise. Variant ids are lower-cased: carts look variants up by the lower-case id.
 */
export function productInputToFields(input: ProductInput): ProductFields {
  const variants = (input.variants ?? []).map((v) => {
    const vq = v.stockQuantity ?? null;
    return {
      ...(v.id ? { id: v.id.toLowerCase() } : {}),
      ...(v.sku ? { sku: v.sku } : {}),
      title: v.title,
      options: v.options ?? {},
      priceMinor: v.price === undefined ? null : toMinor(v.price, input.currency),
      stockQuantity: vq,
      inStock: effectiveInStock(vq, v.inStock),
    };
  });
  const ownStock = input.stockQuantity ?? null;
  const stock = variants.length > 0 ? rollUpVariants(variants) : { stockQuantity: ownStock, inStock: effectiveInStock(ownStock, input.inStock) };
  return {
    externalId: input.externalId,
    title: input.title,
    description: input.description ?? "",
    brand: input.brand ?? null,
    category: input.category ?? null,
    tags: input.tags ?? [],
    gtin: input.gtin ?? null,
    priceMinor: toMinor(input.price, input.currency),
    compareAtPriceMinor:
      input.compareAtPrice === undefined || input.compareAtPrice === null ? null : toMinor(input.compareAtPrice, input.currency),
    currency: input.currency,
    stockQuantity: stock.stockQuantity,
    inStock: stock.inStock,
    images: input.images ?? [],
    attributes: input.attributes ?? {},
    active: input.active ?? true,
    variants,
  };
}

/** EAN/UPC/GTIN-8/12/13/14 check-digit test (mod-10, weights 3/1 from the right). */
export function isValidGtin(gtin: string): boolean {
  if (!/^[0-9]{8,14}$/.test(gtin) || ![8, 12, 13, 14].includes(gtin.length)) return false;
  const digits = gtin.split("").map(Number);
  const check = digits.pop()!;
  let sum = 0;
  for (let i = digits.length - 1, w = 3; i >= 0; i--, w = w === 3 ? 1 : 3) sum += digits[i]! * w;
  return (10 - (sum % 10)) % 10 === check;
}
