/**
 * Merchant ingestion, pure: per-item validation of PUT /catalog batches, and the API ↔ record conversions of
 * policies, shipping zones, inventory updates and human orders. No I/O; the store actor writes what these return.
 *
 * An item is either accepted whole or rejected whole (with every reason), so a rejected item never leaves a
 * partial write behind.
 */
import { Type as T, type Static, type TSchema } from "@sinclair/typebox";
import { ValueErrorType } from "@sinclair/typebox/errors";
import { Value } from "@sinclair/typebox/value";
import { CodePointString, codePointFailure } from "../../infra/code-point-string.ts";
// The words every 400 uses for a failed schema rule (pure functions; the gateway's error plugin, the dashboard and
// MCP share them): a per-item error says a field's rule as the route's 400 would.
import { innerUnionFailure, validationAnswer } from "../../infra/validation-message.ts";
import { fail } from "../runtime/errors.ts";
import { refundWindowDays } from "./refunds.ts";
import {
  currencyExponent,
  currencyProblem,
  isIsoCountryCode,
  MAX_AMOUNT_MINOR,
  MAX_STOCK_QUANTITY,
  NegotiationRules,
  NonBlank,
  NOT_BLANK_MESSAGE,
  NOT_BLANK_PATTERN,
  ProductInput,
  productInputToFields,
  toMajor,
  toMinor,
  type Policies,
  type ProductFields,
  type Variant,
} from "./schemas.ts";

export { effectiveInStock, rollUpVariants, type VariantStock } from "./schemas.ts";

export const MAX_CATALOG_BATCH = 1000;

export interface ItemError {
  field: string;
  message: string;
}

export interface RejectedItem {
  index: number;
  externalId: string | null;
  errors: ItemError[];
}

export interface ValidatedItem {
  index: number;
  fields: ProductFields;
}

const pointer = (path: string, whole = "(item)") => path.replace(/^\//, "").replace(/\//g, ".") || whole;

/**
 * An item's schema failures as per-item errors (at most `max`), one per field, in the words a route's 400 uses for the
 * same rule (infra/validation-message.ts): "must be a number ≥ 0 (missing)", "must be an integer from 0 to
 * 2147483647 or null (got \"five\")", "Property 'colour' should not be provided; allowed: …". TypeBox reports a
 * missing field twice ("Expected required property", then "Expected number"): the first failure of a field is its
 * error (helper B, session 22). A blank name or id (NOT_BLANK_PATTERN) is said in NOT_BLANK_MESSAGE's words: an
 * empty one fails its length first. Every per-item validator of merchant ingestion (PUT /catalog and its CLI and
 * dashboard uploads, PATCH /inventory, POST /orders) reads its schema through here.
 */
export function schemaErrors(schema: TSchema, raw: unknown, max: number, whole = "(item)"): ItemError[] {
  const errors: ItemError[] = [];
  for (const e of Value.Errors(schema, raw)) {
    // an object-or-null (or integer-or-null) field whose value is of a member's kind: the member's own failure
    const check = codePointFailure(innerUnionFailure(e) ?? e);
    const field = pointer(check.path ?? e.path, whole);
    if (errors.some((x) => x.field === field)) continue;
    const pattern = (check.schema as { pattern?: string } | undefined)?.pattern;
    const message =
      check.type === ValueErrorType.StringPattern && pattern === NOT_BLANK_PATTERN
        ? NOT_BLANK_MESSAGE
        : (validationAnswer("item", field, check, check.type === ValueErrorType.ObjectAdditionalProperties ? check.schema : undefined).details.errors as ItemError[])[0]!.message;
    errors.push({ field, message });
    if (errors.length >= max) break;
  }
  return errors;
}

/**
 * True when `major` has no more decimals than the currency allows (19.99 USD yes, 19.999 USD no, 10.5 JPY no).
 * The tolerance only absorbs binary noise (0.29 × 100 = 28.999999999999996), which is relative to the value's
 * size; an absolute 1e-6 of a minor unit let 1e-9 USD (0.0000001 cents) through as 0 and 5.000000001 as 5.
 */
export function fitsCurrency(major: number, currency: string): boolean {
  const scaled = major * 10 ** currencyExponent(currency);
  // 4 ulps of the scaled value: the product's own rounding plus the decimal input's (1e-12 relative let
  // 4,999,999,999.999 USD through as 5,000,000,000.00: review of 3b10258)
  return Number.isFinite(scaled) && Math.abs(scaled - Math.round(scaled)) <= Math.max(1e-9, Math.abs(scaled) * 4 * Number.EPSILON);
}

/**
 * Why `major` cannot be stored as money of `currency` (more decimals than the currency has, or above
 * MAX_AMOUNT_MINOR), or null when it can. Every money value a caller sends goes through this one check.
 */
export function amountProblem(major: number, currency: string): string | null {
  const tooLarge = `above the maximum amount (${toMajor(MAX_AMOUNT_MINOR, currency)} ${currency})`;
  // 1e308 USD scales to Infinity minor units, which fitsCurrency refuses: it was told "more decimals than USD has"
  if (Number.isFinite(major) && !Number.isFinite(major * 10 ** currencyExponent(currency))) return tooLarge;
  if (!fitsCurrency(major, currency)) return `more decimals than ${currency} has (${currencyExponent(currency)})`;
  if (Math.abs(toMinor(major, currency)) > MAX_AMOUNT_MINOR) return tooLarge;
  return null;
}

/**
 * Why a catalog image URL cannot be served to agents, or null: only http and https (the schema's `format: "uri"` took
 * `javascript:` and `file:` URLs, served back in product reads and the dashboard; audit A3-7).
 */
export function imageUrlProblem(url: string): string | null {
  return /^https?:\/\/[^/]/i.test(url) ? null : "must be an http or https URL";
}

const DATE_TIME = /^(\d{4})-(\d{2})-(\d{2})[Tt ](\d{2}):(\d{2})(?::(\d{2})(?:\.\d+)?)?/;

/**
 * Why a date-time string names no real instant, or null: the calendar date and the clock time must exist as written.
 * `format: "date-time"` and `new Date` take 2027-02-30 and roll it over to 2 March silently (audit A3-8). They also
 * take an expanded year (`+010000-01-01T00:00:00Z`, `-000001-…`) and a time whose offset moves it past 9999-12-31
 * in UTC, which Postgres's timestamptz refuses (audit W-5: a coupon's expiresAt came back as a field-less 400): both
 * are refused here. Another string that does not start with `YYYY-MM-DDThh:mm` is the caller's schema's business.
 */
export function impossibleDateTime(value: string): string | null {
  if (/^[+-]\d/.test(value)) return "the year must be written with four digits (0001 to 9999)";
  const m = DATE_TIME.exec(value);
  if (!m) return null;
  const utcYear = new Date(value).getUTCFullYear();
  if (utcYear > 9999) return "must be before the year 10000 (in UTC)";
  const [y, mo, d, h, mi, sec] = [m[1], m[2], m[3], m[4], m[5], m[6] ?? "0"].map(Number) as [number, number, number, number, number, number];
  const day = new Date(Date.UTC(y, mo - 1, d));
  if (mo < 1 || mo > 12 || day.getUTCFullYear() !== y || day.getUTCMonth() !== mo - 1 || day.getUTCDate() !== d) {
    return `${m[1]}-${m[2]}-${m[3]} is not a date in the calendar`;
  }
  if (h > 23 || mi > 59 || sec > 59) return `${m[4]}:${m[5]}${m[6] === undefined ? "" : `:${m[6]}`} is not a time of day`;
  return null;
}

// A UTF-16 surrogate without its partner (valid JSON: "\ud800"). JSON.stringify writes it back as an escape that
// Postgres text and jsonb refuse ("Unicode low surrogate must follow a high surrogate"), failing the whole
// transaction; plain text parameters turn it into U+FFFD silently. Without the `u` flag the regex sees code units.
const LONE_SURROGATE = /[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/;

function unstorableReason(s: string): string | null {
  if (s.includes("\u0000")) return "must not contain a NUL byte";
  if (LONE_SURROGATE.test(s)) return "must be valid Unicode text (it holds a lone UTF-16 surrogate)";
  return null;
}

/**
 * The first string (value or object key) Postgres cannot store, as a per-item error naming its path, or null: a
 * NUL byte (text and jsonb refuse U+0000) or a lone surrogate (broken Unicode). Such an item is rejected on its own
 * before the write instead of failing the whole batch's transaction (audit A2 MED-3).
 */
export function unstorableField(value: unknown, path = ""): ItemError | null {
  if (typeof value === "string") {
    const message = unstorableReason(value);
    return message ? { field: path || "(item)", message } : null;
  }
  if (Array.isArray(value)) {
    for (let i = 0; i < value.length; i++) {
      const f = unstorableField(value[i], path ? `${path}.${i}` : String(i));
      if (f) return f;
    }
    return null;
  }
  if (value && typeof value === "object") {
    for (const [k, v] of Object.entries(value)) {
      const here = path ? `${path}.${k}` : k;
      const message = unstorableReason(k);
      if (message) return { field: here, message: `key ${message}` };
      const f = unstorableField(v, here);
      if (f) return f;
    }
  }
  return null;
}

/** The path of the first string (value or key) Postgres cannot store (`unstorableField`), or null. */
export function nulField(value: unknown, path = ""): string | null {
  return unstorableField(value, path)?.field ?? null;
}

/**
 * The rules that keep variant identity stable across syncs (`assignVariantIds`): inside one item an `id` and a
 * `sku` name one variant each, and variants with neither must differ in title or options, or a later sync could
 * not tell them apart (audit A2 MED-2).
 */
function variantIdentityErrors(variants: readonly NonNullable<ProductInput["variants"]>[number][]): ItemError[] {
  const errors: ItemError[] = [];
  const ids = new Map<string, number>();
  const skus = new Map<string, number>();
  const looks = new Map<string, number>();
  variants.forEach((v, i) => {
    if (v.id) {
      const first = ids.get(v.id.toLowerCase());
      if (first !== undefined) errors.push({ field: `variants.${i}.id`, message: `repeated in this product (variants.${first}.id)` });
      else ids.set(v.id.toLowerCase(), i);
    }
    if (v.sku) {
      const first = skus.get(v.sku);
      if (first !== undefined) errors.push({ field: `variants.${i}.sku`, message: `repeated in this product (variants.${first}.sku)` });
      else skus.set(v.sku, i);
    }
    if (!v.id && !v.sku) {
      const key = lookKey(v.title, v.options ?? {});
      const first = looks.get(key);
      if (first !== undefined) {
        errors.push({ field: `variants.${i}`, message: `same title and options as variants.${first}; give each an id or a sku` });
      } else looks.set(key, i);
    }
  });
  return errors;
}

/** Title and options (key order ignored): what identifies a variant that has neither id nor sku. */
function lookKey(title: string, options: Record<string, string>): string {
  return JSON.stringify([title, Object.entries(options).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))]);
}

/**
 * Variant ids for a re-synced product, stable across syncs (docs/catalog.md "Variant identity"): a variant keeps
 * the merchant's `id` when given; else takes the stored variant's id with the same `sku` when it has one; else the
 * id of the stored variant without a sku that has the same title and options; else a new id. A stored id is given
 * out at most once (ids the merchant names are reserved first), so two variants never collapse onto one id even
 * when an earlier sync stored duplicates.
 *
 * Of stored variants sharing an id, only the first can pass it on. The old title-only rule gave same-titled variants
 * one id (audit A2 MED-2), and a cart resolves such an id to the first of them (`variants.find` in actors/cart), so
 * a later duplicate matching first would hand the cart's id to another variant when the feed's order changed
 * (review R5-4): the cart's line would then buy the other size.
 */
export function assignVariantIds(incoming: ProductFields["variants"], stored: readonly Variant[]): Variant[] {
  const storedIds = new Set<string>();
  const existing = stored.filter((s) => {
    if (storedIds.has(s.id)) return false;
    storedIds.add(s.id);
    return true;
  });
  const used = new Set(incoming.flatMap((v) => (v.id ? [v.id] : [])));
  const take = (match: (s: Variant) => boolean): string | undefined => {
    const hit = existing.find((s) => !used.has(s.id) && match(s));
    if (hit) used.add(hit.id);
    return hit?.id;
  };
  return incoming.map((v) => {
    const id =
      v.id ??
      (v.sku ? take((s) => s.sku === v.sku) : take((s) => !s.sku && lookKey(s.title, s.options ?? {}) === lookKey(v.title, v.options))) ??
      crypto.randomUUID();
    used.add(id);
    return { ...v, id };
  });
}

/**
 * The refusal of a variant roll-up that the `integer` products.stock_quantity cannot hold (each variant's stock is
 * bounded by the schema, their sum is not), or null. PUT /catalog and PATCH /inventory reject the item with it.
 */
export function rollUpOverflow(stockQuantity: number | null): string | null {
  return stockQuantity !== null && stockQuantity > MAX_STOCK_QUANTITY
    ? `the variants' stock adds up to ${stockQuantity}, more than ${MAX_STOCK_QUANTITY} (the product's stock is their sum)`
    : null;
}

/**
 * A product with variants takes its stock from them (`rollUpVariants`): a product-level `stockQuantity` or
 * `inStock` that says otherwise is refused rather than silently dropped (null counts as "not given").
 */
function stockDisagreement(item: ProductInput, fields: ProductFields): ItemError[] {
  if (fields.variants.length === 0) return [];
  // The roll-up is stored in the `integer` products.stock_quantity: a sum past 2^31 - 1 failed the INSERT and with
  // it the whole batch, good items included, as a field-less 400 (audit W-4). It is this item's rejection.
  const overflow = rollUpOverflow(fields.stockQuantity);
  if (overflow) return [{ field: "variants", message: overflow }];
  const errors: ItemError[] = [];
  if (item.stockQuantity != null && item.stockQuantity !== fields.stockQuantity) {
    const sum = fields.stockQuantity === null ? "untracked: a variant has no stockQuantity" : `their sum is ${fields.stockQuantity}`;
    errors.push({ field: "stockQuantity", message: `a product with variants takes its stock from them (${sum}); omit it` });
  }
  if (item.inStock !== undefined && item.inStock !== fields.inStock) {
    errors.push({ field: "inStock", message: `a product with variants is in stock when one of them is (${fields.inStock}); omit it` });
  }
  return errors;
}

/** The per-item error of a product that is also in its batch's `remove` (`validateCatalogItems`). */
export const UPSERT_AND_REMOVE_MESSAGE = "is also in this batch's remove: send a product in products or in remove, not both (neither was applied)";

/**
 * Splits a raw batch into valid items (converted to record fields, minor units) and rejected ones with every
 * reason. Rules beyond the schema: prices fit the currency's decimals, compareAtPrice is not below price, a
 * variant price fits too, and an externalId repeated inside one batch is rejected after its first occurrence.
 *
 * `remove` is the batch's own list of externalIds to take out. A product named in both `products` and `remove`
 * (an item whose externalId is a remove entry, valid or not) is told both ways at once: neither wins. Its item is
 * rejected on `externalId` (UPSERT_AND_REMOVE_MESSAGE) and its remove entry is left out of `removable`, the distinct
 * entries to apply (helper B, session 22: it was answered as upserted, then removed by the same batch).
 */
export function validateCatalogItems(
  items: readonly unknown[],
  remove: readonly string[] = [],
): { valid: ValidatedItem[]; rejected: RejectedItem[]; removable: string[] } {
  const valid: ValidatedItem[] = [];
  const rejected: RejectedItem[] = [];
  const seen = new Set<string>();
  const removing = new Set(remove);
  const named = new Set<string>();
  items.forEach((raw, index) => {
    const externalId =
      raw && typeof raw === "object" && typeof (raw as { externalId?: unknown }).externalId === "string"
        ? (raw as { externalId: string }).externalId
        : null;
    const errors: ItemError[] = [];
    if (!raw || typeof raw !== "object" || Array.isArray(raw)) {
      rejected.push({ index, externalId: null, errors: [{ field: "(item)", message: "must be an object" }] });
      return;
    }
    errors.push(...schemaErrors(ProductInput, raw, 20));
    if (errors.length === 0) {
      const item = raw as ProductInput;
      const unstorable = unstorableField(item);
      if (unstorable) errors.push(unstorable);
      const badCurrency = currencyProblem(item.currency);
      if (badCurrency) errors.push({ field: "currency", message: badCurrency });
      (item.images ?? []).forEach((url, i) => {
        const p = imageUrlProblem(url);
        if (p) errors.push({ field: `images.${i}`, message: p });
      });
      const priceProblem = amountProblem(item.price, item.currency);
      if (priceProblem) errors.push({ field: "price", message: priceProblem });
      if (item.compareAtPrice != null) {
        const p = amountProblem(item.compareAtPrice, item.currency);
        if (p) errors.push({ field: "compareAtPrice", message: p });
        else if (item.compareAtPrice < item.price) errors.push({ field: "compareAtPrice", message: "must not be below price" });
      }
      (item.variants ?? []).forEach((v, i) => {
        const p = v.price === undefined ? null : amountProblem(v.price, item.currency);
        if (p) errors.push({ field: `variants.${i}.price`, message: p });
      });
      errors.push(...variantIdentityErrors(item.variants ?? []));
      if (errors.length === 0) errors.push(...stockDisagreement(item, productInputToFields(item)));
      if (seen.has(item.externalId)) errors.push({ field: "externalId", message: "repeated in this batch" });
    }
    if (externalId !== null && removing.has(externalId)) {
      named.add(externalId);
      if (!errors.some((e) => e.field === "externalId")) errors.push({ field: "externalId", message: UPSERT_AND_REMOVE_MESSAGE });
    }
    if (errors.length > 0) {
      rejected.push({ index, externalId, errors });
      return;
    }
    const item = raw as ProductInput;
    seen.add(item.externalId);
    valid.push({ index, fields: productInputToFields(item) });
  });
  return { valid, rejected, removable: [...removing].filter((id) => !named.has(id)) };
}

// ------------------------------------------------------------------------------------------------ policies

/** PUT /policies body: the spec's `policies` object (decimal threshold) plus the optional negotiation rules. */
export const PoliciesInput = T.Object(
  {
    acceptsReturns: T.Boolean(),
    returnWindowDays: T.Optional(T.Integer({ minimum: 0, maximum: 3650 })),
    freeShippingThreshold: T.Optional(T.Number({ minimum: 0 })),
    restockingFeePercent: T.Optional(T.Number({ minimum: 0, maximum: 100 })),
    // counted in characters as every bound (docs/conventions.md; they counted UTF-16 units: helper C, session 22)
    shippingEstimateDays: T.Optional(CodePointString({ minLength: 1, maxLength: 50 })),
    supportResponseTimeSla: T.Optional(CodePointString({ minLength: 1, maxLength: 50 })),
    negotiation: T.Optional(T.Union([NegotiationRules, T.Null()])),
  },
  { additionalProperties: false },
);
export type PoliciesInput = Static<typeof PoliciesInput>;

export function policiesFromInput(input: PoliciesInput, storeCurrency: string): Policies {
  // One answer to "can I return this?" (audit A2-F9): /return-policy said 0 days while the profile said 30.
  if (!input.acceptsReturns && input.returnWindowDays !== undefined && input.returnWindowDays > 0) {
    throw fail("validation_error", "Invalid returnWindowDays: a store that does not accept returns has no return window (send 0 or omit it)", {
      field: "returnWindowDays",
    });
  }
  if (input.freeShippingThreshold !== undefined) {
    const problem = amountProblem(input.freeShippingThreshold, storeCurrency);
    if (problem) throw fail("validation_error", `Invalid freeShippingThreshold: ${problem}`, { field: "freeShippingThreshold" });
  }
  const p: Policies = { acceptsReturns: input.acceptsReturns };
  if (input.returnWindowDays !== undefined) p.returnWindowDays = input.returnWindowDays;
  if (input.freeShippingThreshold !== undefined) p.freeShippingThresholdMinor = toMinor(input.freeShippingThreshold, storeCurrency);
  if (input.restockingFeePercent !== undefined) p.restockingFeePercent = input.restockingFeePercent;
  if (input.shippingEstimateDays !== undefined) p.shippingEstimateDays = input.shippingEstimateDays;
  if (input.supportResponseTimeSla !== undefined) p.supportResponseTimeSla = input.supportResponseTimeSla;
  return p;
}

/** The spec's `policies` shape (decimal freeShippingThreshold) from the stored one. */
export interface PoliciesView {
  acceptsReturns: boolean;
  /** policiesView always sets it: the window refund requests are held to. */
  returnWindowDays?: number;
  freeShippingThreshold?: number;
  restockingFeePercent?: number;
  shippingEstimateDays?: string;
  supportResponseTimeSla?: string;
}

/**
 * Every view of a store's policies goes through here. The return window shown is the one refund requests are held to
 * (refunds.ts `refundWindowDays`): 0 days at a store that does not accept returns (rows stored before
 * `policiesFromInput` refused the contradiction said otherwise), the declared window, or the 30-day default at one that
 * accepts returns without declaring a window (review G, session 14: views showed none while requests had 30 days).
 * What the merchant declared is the stored record (`assertStoreWriter`), not this view.
 */
export function policiesView(p: Policies, storeCurrency: string): PoliciesView {
  const v: PoliciesView = { acceptsReturns: p.acceptsReturns, returnWindowDays: refundWindowDays(p) };
  if (p.freeShippingThresholdMinor !== undefined) v.freeShippingThreshold = toMajor(p.freeShippingThresholdMinor, storeCurrency);
  if (p.restockingFeePercent !== undefined) v.restockingFeePercent = p.restockingFeePercent;
  if (p.shippingEstimateDays !== undefined) v.shippingEstimateDays = p.shippingEstimateDays;
  if (p.supportResponseTimeSla !== undefined) v.supportResponseTimeSla = p.supportResponseTimeSla;
  return v;
}

/**
 * What a store's zones say about a destination-less cart (read with the store row, actors/store/reads.ts): how many
 * zones it has, and its cheapest country-wide zone for its own country in its own currency, the zone a cart without
 * a destination is charged by (actors/store/commerce.ts `domesticShipping`, actors/cart/shipping.ts).
 */
export interface ShippingSummary {
  zones: number;
  domestic: { name: string; freeOverMinor: number | null; minDays: number; maxDays: number } | null;
}

/** "3-5", or "2" when the window is one day. */
export const daysText = (minDays: number, maxDays: number): string => (minDays === maxDays ? String(minDays) : `${minDays}-${maxDays}`);

/**
 * The policies agents are shown: `freeShippingThresholdMinor` and `shippingEstimateDays` say what the cart does, so
 * they come from the zones, not from PUT /policies (audit A2-F12: a threshold of 10 was shown while the cart charged
 * 6.99 up to the zone's 60):
 * - a domestic zone: its `freeOver` (none: no threshold, shipping is never free) and its day window;
 * - no zones at all: carts ship free, so the threshold is 0; the estimate stays the merchant's (no zone says otherwise);
 * - zones, none domestic and country-wide: neither (the price depends on the destination: the shipping estimate).
 */
export function agentPolicies(p: Policies, shipping: ShippingSummary): Policies {
  const { freeShippingThresholdMinor: _threshold, shippingEstimateDays: stated, ...rest } = p;
  const d = shipping.domestic;
  if (d) {
    return { ...rest, ...(d.freeOverMinor === null ? {} : { freeShippingThresholdMinor: d.freeOverMinor }), shippingEstimateDays: daysText(d.minDays, d.maxDays) };
  }
  if (shipping.zones === 0) return { ...rest, freeShippingThresholdMinor: 0, ...(stated === undefined ? {} : { shippingEstimateDays: stated }) };
  return rest;
}

// ------------------------------------------------------------------------------------------ shipping zones

/**
 * Either case, as the shipping estimate's `countryCode` and a checkout's `country_code` take it; stored upper case
 * (`zonesFromInput`), the case every zone is matched in (helper B, session 22: `["de"]` was 400 here).
 */
const Country = T.String({ pattern: "^[A-Za-z]{2}$", description: "ISO 3166-1 alpha-2, either case (stored upper case)" });
const Currency = T.String({ pattern: "^[A-Z]{3}$" });

export const ShippingZoneInput = T.Object(
  {
    /** Not blank: checked by `zonesFromInput`, beside the postal prefixes, so the refusal is the zone's own (zones.N.name). */
    name: CodePointString({ minLength: 1, maxLength: 100 }),
    countries: T.Array(Country, { minItems: 1, maxItems: 250 }),
    postalPrefixes: T.Optional(T.Array(CodePointString({ minLength: 1, maxLength: 20 }), { maxItems: 500 })),
    currency: Currency,
    base: T.Number({ minimum: 0 }),
    perItem: T.Optional(T.Number({ minimum: 0 })),
    freeOver: T.Optional(T.Union([T.Number({ minimum: 0 }), T.Null()])),
    minDays: T.Integer({ minimum: 0, maximum: 365 }),
    maxDays: T.Integer({ minimum: 0, maximum: 365 }),
  },
  { additionalProperties: false },
);
export type ShippingZoneInput = Static<typeof ShippingZoneInput>;

export interface ShippingZoneFields {
  name: string;
  countries: string[];
  postalPrefixes: string[];
  currency: string;
  baseMinor: number;
  perItemMinor: number;
  freeOverMinor: number | null;
  minDays: number;
  maxDays: number;
}

/** Validates the semantic rules the schema cannot state; throws a message naming the zone on the first problem. */
export function zonesFromInput(zones: readonly ShippingZoneInput[]): { zones: ShippingZoneFields[]; errors: ItemError[] } {
  const errors: ItemError[] = [];
  const names = new Set<string>();
  const out = zones.map((z, i) => {
    if (z.maxDays < z.minDays) errors.push({ field: `zones.${i}.maxDays`, message: "must be >= minDays" });
    // A name of white space only was stored and shown as the option's title: agents were offered a blank option.
    if (!/\S/.test(z.name)) errors.push({ field: `zones.${i}.name`, message: NOT_BLANK_MESSAGE });
    else if (names.has(z.name)) errors.push({ field: `zones.${i}.name`, message: "repeated zone name" });
    const badCurrency = currencyProblem(z.currency);
    if (badCurrency) errors.push({ field: `zones.${i}.currency`, message: badCurrency });
    z.countries.forEach((c, j) => {
      if (!isIsoCountryCode(c)) errors.push({ field: `zones.${i}.countries.${j}`, message: `${c} is not an ISO 3166-1 alpha-2 country code` });
    });
    // White space is dropped from a prefix ("SW1 A" is "SW1A"): one of white space only would be the empty prefix,
    // which every postal code starts with, so the zone priced every address of its countries, ahead of the
    // country-wide zone (audit W-2).
    (z.postalPrefixes ?? []).forEach((p, j) => {
      if (!/\S/.test(p)) errors.push({ field: `zones.${i}.postalPrefixes.${j}`, message: NOT_BLANK_MESSAGE });
    });
    names.add(z.name);
    for (const [k, v] of [["base", z.base], ["perItem", z.perItem], ["freeOver", z.freeOver]] as const) {
      const problem = typeof v === "number" ? amountProblem(v, z.currency) : null;
      if (problem) errors.push({ field: `zones.${i}.${k}`, message: problem });
    }
    return {
      name: z.name,
      countries: [...new Set(z.countries.map((c) => c.toUpperCase()))],
      postalPrefixes: (z.postalPrefixes ?? []).map((p) => p.toUpperCase().replace(/\s+/g, "")),
      currency: z.currency,
      baseMinor: toMinor(z.base, z.currency),
      perItemMinor: toMinor(z.perItem ?? 0, z.currency),
      freeOverMinor: z.freeOver == null ? null : toMinor(z.freeOver, z.currency),
      minDays: z.minDays,
      maxDays: z.maxDays,
    };
  });
  return { zones: out, errors };
}

// ------------------------------------------------------------------------------------------------ inventory

export const InventoryItemInput = T.Object(
  {
    productId: T.Optional(T.String({ format: "uuid" })),
    externalId: T.Optional(NonBlank(255)),
    variantId: T.Optional(T.String({ format: "uuid" })),
    stockQuantity: T.Union([T.Integer({ minimum: 0, maximum: MAX_STOCK_QUANTITY }), T.Null()]),
    inStock: T.Optional(T.Boolean()),
  },
  { additionalProperties: false },
);
export type InventoryItemInput = Static<typeof InventoryItemInput>;

// ------------------------------------------------------------------------------------------------- orders

export const ORDER_STATUSES = ["pending", "paid", "fulfilled", "shipped", "delivered", "canceled", "refunded"] as const;

export const HumanOrderInput = T.Object(
  {
    externalId: NonBlank(255),
    /** Buyer e-mail or the merchant's customer id; only a hash is stored (unique-buyer counts: a blank one was every blank buyer's). */
    buyer: NonBlank(320),
    status: T.Union(ORDER_STATUSES.map((s) => T.Literal(s))),
    currency: Currency,
    items: T.Array(
      T.Object(
        {
          externalId: T.Optional(NonBlank(255)),
          productId: T.Optional(T.String({ format: "uuid" })),
          title: T.Optional(NonBlank(500)),
          quantity: T.Integer({ minimum: 1, maximum: MAX_STOCK_QUANTITY }),
          unitPrice: T.Number({ minimum: 0 }),
        },
        { additionalProperties: false },
      ),
      { minItems: 1, maxItems: 500 },
    ),
    /** Defaults to the sum of the items. */
    total: T.Optional(T.Number({ minimum: 0 })),
    createdAt: T.Optional(T.String({ format: "date-time" })),
    fulfilledOnTime: T.Optional(T.Union([T.Boolean(), T.Null()])),
    disputed: T.Optional(T.Boolean()),
    refunded: T.Optional(T.Number({ minimum: 0 })),
  },
  { additionalProperties: false },
);
export type HumanOrderInput = Static<typeof HumanOrderInput>;

export interface HumanOrderFields {
  externalId: string;
  buyerRef: string;
  status: (typeof ORDER_STATUSES)[number];
  currency: string;
  totalMinor: number;
  refundedMinor: number;
  createdAt: string | null;
  fulfilledOnTime: boolean | null;
  disputed: boolean;
  items: { externalId?: string; productId?: string; title?: string; quantity: number; unitPriceMinor: number }[];
}

/**
 * How far ahead of the server's clock an order's `createdAt` may be: the merchant's clock may run a little fast,
 * but an order dated in the future would stay inside every "last 90 days" trust window until that date.
 */
export const ORDER_CLOCK_SKEW_MS = 5 * 60_000;

/**
 * Converts one order (major → minor units, buyer → hash); returns errors instead when the numbers do not add up,
 * a string cannot be stored, or it is dated more than `ORDER_CLOCK_SKEW_MS` after `nowMs`.
 */
export function orderFromInput(o: HumanOrderInput, hashBuyer: (b: string) => string, nowMs: number): { order?: HumanOrderFields; errors: ItemError[] } {
  const errors: ItemError[] = [];
  const unstorable = unstorableField(o);
  if (unstorable) errors.push(unstorable);
  const badCurrency = currencyProblem(o.currency);
  if (badCurrency) errors.push({ field: "currency", message: badCurrency });
  const badDate = o.createdAt === undefined ? null : impossibleDateTime(o.createdAt);
  if (badDate) errors.push({ field: "createdAt", message: badDate });
  else if (o.createdAt !== undefined && Date.parse(o.createdAt) > nowMs + ORDER_CLOCK_SKEW_MS) {
    errors.push({ field: "createdAt", message: `must not be in the future (more than ${ORDER_CLOCK_SKEW_MS / 60_000} minutes after the server's clock)` });
  }
  for (const [k, v] of [["total", o.total], ["refunded", o.refunded]] as const) {
    const problem = v === undefined ? null : amountProblem(v, o.currency);
    if (problem) errors.push({ field: k, message: problem });
  }
  const items = o.items.map((it, i) => {
    if (!it.externalId && !it.productId && !it.title) errors.push({ field: `items.${i}`, message: "needs externalId, productId or title" });
    const problem = amountProblem(it.unitPrice, o.currency);
    if (problem) errors.push({ field: `items.${i}.unitPrice`, message: problem });
    return { externalId: it.externalId, productId: it.productId, title: it.title, quantity: it.quantity, unitPriceMinor: toMinor(it.unitPrice, o.currency) };
  });
  const sum = items.reduce((s, it) => s + it.quantity * it.unitPriceMinor, 0);
  if (o.total === undefined && errors.length === 0 && sum > MAX_AMOUNT_MINOR) errors.push({ field: "items", message: `the items add up to more than the maximum amount (${toMajor(MAX_AMOUNT_MINOR, o.currency)} ${o.currency})` });
  const totalMinor = o.total === undefined ? sum : toMinor(o.total, o.currency);
  const refundedMinor = o.refunded === undefined ? 0 : toMinor(o.refunded, o.currency);
  if (refundedMinor > totalMinor) errors.push({ field: "refunded", message: "must not exceed total" });
  if (errors.length > 0) return { errors };
  return {
    errors,
    order: {
      externalId: o.externalId,
      buyerRef: hashBuyer(o.buyer.trim().toLowerCase()),
      status: o.status,
      currency: o.currency,
      totalMinor,
      refundedMinor,
      createdAt: o.createdAt ?? null,
      fulfilledOnTime: o.fulfilledOnTime ?? null,
      disputed: o.disputed ?? false,
      items,
    },
  };
}
