/**
 * Agent product reads (from the catalog read model, eligibility applied: an ineligible store's product is 404)
 * and the product-level actions: recommendations, negotiate (store actor), shipping estimate, search by image
 * (reserved: always 501).
 */
import { Elysia, t } from "elysia";
import { storeActor } from "../../actors/store/index.ts";
import { amountProblem } from "../../actors/store/ingest.ts";
import { estimateShipping, ruleQuote } from "../../actors/cart/shipping.ts";
import { linePricing } from "../../actors/cart/offer-rule.ts";
import { unitPriceOf } from "../../actors/cart/totals.ts";
import { readCatalog } from "../../actors/store/commerce.ts";
import { agentHint, priceTrend, sustainabilityScore } from "../../actors/store/insights.ts";
import { getEligibleProduct, getEligibleStore, priceHistory, shippingZonesOf, toProductDetail } from "../../actors/store/reads.ts";
import { currencyProblem, isIsoCountryCode, toMajor, toMinor, type ProductRecord, type ShippingZone, type StoreRecord } from "../../actors/store/schemas.ts";
import type { Sql } from "../../infra/db.ts";
import { fail } from "../../actors/runtime/errors.ts";
import { freshnessTier, stockConfidence } from "../../search/ranking.ts";
import { getSearchService } from "../../search/service.ts";
import { errorResponses, ok } from "../envelope.ts";
import { agentAuth } from "../plugins/auth.ts";
import { NON_BLANK_NO_NUL_PATTERN } from "../../infra/validation-message.ts";
import type { Services } from "../services.ts";
import { strictJsonBody } from "./strict-body.ts";
import { ACCEPTED_OFFER_USE, negotiationMessage } from "../negotiation-use.ts";

const Uuid = t.String({ format: "uuid" });
const sec = [{ agentApiKey: [] }];

// The agent POST bodies' schemas, each also the route's `strictJsonBody`: a misspelt key is 400 naming it, not dropped
// (audit W-7): `variant_id` for `variantId` estimated the lowest-priced variant, `qty` for `quantity` one unit.
const RecommendationsBody = t.Object({ productId: Uuid, limit: t.Optional(t.Number({ exclusiveMinimum: 0, description: "> 0, default 5, capped at 20; counted in whole products, rounded down, at least 1 (0.5 answers one)" })) });
const NegotiateBody = t.Object({
  productId: Uuid,
  merchantSlug: t.String({ minLength: 1 }),
  bidPrice: t.Number({ exclusiveMinimum: 0 }),
  currency: t.String({ pattern: "^[A-Z]{3}$" }),
});
const ShippingEstimateBody = t.Object({
  productId: Uuid,
  // white space only is no postal code (it matched country-wide zones only; helper D), and a NUL is none either: as MCP's
  postalCode: t.String({ minLength: 1, maxLength: 20, pattern: NON_BLANK_NO_NUL_PATTERN }),
  countryCode: t.String({ pattern: "^[A-Za-z]{2}$", description: "ISO 3166-1 alpha-2" }),
  quantity: t.Optional(t.Integer({ minimum: 1, maximum: 1000 })),
  variantId: t.Optional(
    t.String({
      format: "uuid",
      description:
        "The variant the units are (its own price decides free shipping, as in the cart); 404 when the product has no such variant. " +
        "Without it, a product whose variants differ in price is estimated at its lowest-priced variant (docs/catalog.md).",
    }),
  ),
});

export const PRICE_HISTORY_DAYS = [30, 60, 90] as const;
export const PRICE_HISTORY_DEFAULT_DAYS = 30;
const PRICE_HISTORY_TEXTS = ["30", "60", "90"] as const satisfies readonly `${(typeof PRICE_HISTORY_DAYS)[number]}`[];
export const RECOMMENDATIONS_MAX = 20;
export const RECOMMENDATIONS_DEFAULT = 5;

/** Stock as we know it, with data freshness and an agentHint on how far to trust it (REST and MCP get_availability). */
export function productAvailability(product: ProductRecord, store: StoreRecord, now: Date) {
  const tier = freshnessTier(store.lastSyncAt, now);
  const confidence = stockConfidence({ lastSyncAt: store.lastSyncAt }, now);
  return {
    productId: product.id,
    inStock: product.inStock,
    stockQuantity: product.stockQuantity,
    stockTracked: product.stockQuantity !== null,
    variants: product.variants.map((v) => ({ id: v.id, title: v.title, inStock: v.inStock, stockQuantity: v.stockQuantity })),
    lastSyncAt: store.lastSyncAt,
    productSyncedAt: product.syncedAt,
    freshnessTier: tier,
    stockConfidence: confidence,
    agentHint: agentHint({ inStock: product.inStock, stockQuantity: product.stockQuantity, tier, confidence }),
  };
}

/**
 * Price observations over the last `days` in the product's current currency, with the opening, lowest and highest
 * price and a trend (REST price-history route and MCP get_price_history).
 */
export async function productPriceHistory(sql: Sql, product: ProductRecord, days: number, now: Date) {
  const cur = product.currency;
  // bounded (audit Q-3): at most PRICE_HISTORY_MAX_POINTS points, lowest and highest over every observation from SQL,
  // compared one by one (a spread of the whole series as call arguments overflowed the stack past ~1,000,000: a 500)
  const { opening, first, points: series, lowestMinor, highestMinor } = await priceHistory(sql, product.id, cur, days, now);
  const start = opening?.currency === cur ? opening.priceMinor : (first?.priceMinor ?? product.priceMinor);
  const lowest = Math.min(start, product.priceMinor, lowestMinor ?? product.priceMinor);
  const highest = Math.max(start, product.priceMinor, highestMinor ?? product.priceMinor);
  const { trend, changePercent } = priceTrend(start, product.priceMinor);
  return {
    productId: product.id,
    currency: cur,
    days,
    currentPrice: toMajor(product.priceMinor, cur),
    openingPrice: toMajor(start, cur),
    lowestPrice: toMajor(lowest, cur),
    highestPrice: toMajor(highest, cur),
    trend,
    changePercent,
    points: series.map((p) => ({ price: toMajor(p.priceMinor, cur), recordedAt: p.recordedAt })),
  };
}

/**
 * Shipping cost and delivery window of `quantity` units to a destination from the merchant's zones; not shipping
 * there is an answer (`shippable: false`), not an error (REST shipping-estimate and MCP get_shipping_rates).
 * Zone and price are the cart's (actors/cart/shipping.ts `estimateShipping`): the most specific zones in the
 * product's currency, the cheapest of them when the merchant has several methods there; a store with no zones at all
 * ships free (no zone, no delivery window). So the estimate is what a preview of the same product, quantity and
 * destination charges (audit A-1; the zone-less store: K's leftover, engineer Q).
 */
/**
 * The unit price a cart of this key charges for the product's units: the line's list price (the variant's own price
 * when `variantId` names a variant that has one, else the product's), or the key's live accepted negotiated offer
 * where the cart lets it price the line (read as the cart reads it, `readCatalog`; priced by the cart's rule,
 * offer-rule.ts `linePricing` and `unitPriceOf`). The estimate's free-shipping decision is made on it, or it said
 * "free" where the key's cart pays shipping (audit A-6, session 16; a variant's own price, audit A leftover,
 * session 17).
 *
 * Without `variantId` on a product with variants (a cart needs one; the estimate does not): the lowest unit price
 * any of its variants is charged, so the estimate never calls free what some variant's cart line would pay shipping
 * on (cost otherwise does not depend on the price). A `variantId` the product does not have is `onMissing`'s error.
 */
export async function estimateUnitPriceMinor(
  sql: Sql,
  product: ProductRecord,
  keyId: string,
  now: Date,
  variantId?: string,
  onMissing: (variantId: string) => Error = (id) => fail("not_found", "No such variant of this product.", { productId: product.id, variantId: id, field: "variantId" }),
): Promise<number> {
  const offer = (await readCatalog(sql, [product.id], keyId)).get(product.id)?.negotiated ?? null;
  const unitOf = (vid: string | undefined, variant: ProductRecord["variants"][number] | undefined) => {
    const { listPriceMinor, negotiated } = linePricing(product.priceMinor, vid, variant, offer);
    return unitPriceOf({ storeId: product.storeSlug, productId: product.id, quantity: 1, listPriceMinor, currency: product.currency, negotiated }, now.getTime()).unitPriceMinor;
  };
  if (variantId !== undefined) {
    // ids compare lowercased, as the cart's lines do (review R-9: an upper-case id the cart accepts was 404 here)
    const id = variantId.toLowerCase();
    const variant = product.variants.find((v) => v.id === id);
    if (variant === undefined) throw onMissing(variantId);
    return unitOf(id, variant);
  }
  if (product.variants.length === 0) return unitOf(undefined, undefined);
  let lowest = Infinity;
  for (const v of product.variants) lowest = Math.min(lowest, unitOf(v.id, v));
  return lowest;
}

export function shippingEstimate(
  zones: readonly ShippingZone[],
  product: ProductRecord,
  store: StoreRecord,
  dest: { countryCode: string; postalCode: string; quantity?: number },
  now: Date,
  unitPriceMinor: number = product.priceMinor,
) {
  const quote = estimateShipping(zones, dest, product.currency);
  const quantity = dest.quantity ?? 1;
  const countryCode = dest.countryCode.toUpperCase();
  const base = { productId: product.id, merchantSlug: store.slug, countryCode, postalCode: dest.postalCode, quantity };
  if (quote.status === "not_shippable") {
    return { ...base, shippable: false, reason: `${store.name} does not ship to ${countryCode} ${dest.postalCode}.`, zone: null, cost: null, currency: null, freeShipping: false, minDays: null, maxDays: null, estimatedDelivery: null };
  }
  const { costMinor, free } = ruleQuote(quote.rule, quantity, unitPriceMinor * quantity);
  const zone: ShippingZone | null = quote.zone;
  const currency = zone?.currency ?? product.currency;
  const day = (d: number) => new Date(now.getTime() + d * 86_400_000).toISOString().slice(0, 10);
  return {
    ...base,
    shippable: true,
    zone: zone?.name ?? null,
    cost: toMajor(costMinor, currency),
    currency,
    freeShipping: free,
    freeShippingOver: zone?.freeOverMinor == null ? null : toMajor(zone.freeOverMinor, zone.currency),
    // A store without zones has set no delivery window: none is made up.
    minDays: zone?.minDays ?? null,
    maxDays: zone?.maxDays ?? null,
    estimatedDelivery: zone ? { earliest: day(zone.minDays), latest: day(zone.maxDays) } : null,
  };
}

export function productRoutes(svc: Services) {
  const now = () => new Date(svc.clock.now());
  return new Elysia({ name: "product-routes" })
    .use(agentAuth(svc))
    .get(
      "/api/v1/agent/products/:id",
      async ({ params }) => {
        const { product, store } = await getEligibleProduct(svc.sql, params.id);
        return ok(toProductDetail(product, store, now()));
      },
      { params: t.Object({ id: Uuid }), response: errorResponses(400, 401, 403, 404), detail: { tags: ["catalog"], summary: "Product detail (ProductDetail)", security: sec } },
    )
    .get(
      "/api/v1/agent/availability/:id",
      async ({ params }) => {
        const { product, store } = await getEligibleProduct(svc.sql, params.id);
        return ok(productAvailability(product, store, now()));
      },
      { params: t.Object({ id: t.String({ minLength: 1 }) }), response: errorResponses(401, 403, 404), detail: { tags: ["catalog"], summary: "Stock and data freshness with an agentHint", security: sec } },
    )
    .get(
      "/api/v1/agent/products/:id/price-history",
      async ({ params, query }) => {
        // The schema admits only "30", "60" or "90" (default "30"), so the number is one of PRICE_HISTORY_DAYS.
        const days = Number(query.days ?? PRICE_HISTORY_DEFAULT_DAYS);
        const { product } = await getEligibleProduct(svc.sql, params.id);
        return ok(await productPriceHistory(svc.sql, product, days, now()));
      },
      {
        params: t.Object({ id: Uuid }),
        // The spec's enum and default in the served schema (audit S-4), as text: a query value is a string. A
        // UnionEnum (JSON Schema `enum`), not a union of literals: the OpenAPI plugin rewrites a query parameter's
        // literal union to a bare enum and drops its default and description. The 400 names the allowed values.
        query: t.Object({
          days: t.Optional(t.UnionEnum(PRICE_HISTORY_TEXTS, { default: String(PRICE_HISTORY_DEFAULT_DAYS), description: "30, 60 or 90 (default 30)" })),
        }),
        response: errorResponses(400, 401, 403, 404),
        detail: { tags: ["catalog"], summary: "Price history and trend (feature tier: price_history)", security: sec },
      },
    )
    .get(
      "/api/v1/agent/products/:id/sustainability",
      async ({ params }) => {
        const { product, store } = await getEligibleProduct(svc.sql, params.id);
        const s = sustainabilityScore({ attributes: product.attributes, tags: product.tags, description: product.description, storeCountry: store.country });
        return ok({ productId: product.id, ...s });
      },
      { params: t.Object({ id: Uuid }), response: errorResponses(400, 401, 403, 404), detail: { tags: ["catalog"], summary: "ESG sustainability score (feature tier: sustainability)", security: sec } },
    )
    .post(
      "/api/v1/agent/recommendations",
      async ({ body }) => {
        const { product } = await getEligibleProduct(svc.sql, body.productId);
        // Counted in whole products, rounded down but at least one: the spec's bound is "> 0", so 0.5 is a valid limit
        // (audit A-9: it was 400 while the OpenAPI schema published exclusiveMinimum 0).
        const limit = Math.min(RECOMMENDATIONS_MAX, Math.max(1, Math.floor(body.limit ?? RECOMMENDATIONS_DEFAULT)));
        const products = await getSearchService(svc).related(product, limit, now());
        return ok({ productId: product.id, limit, products });
      },
      {
        ...strictJsonBody(RecommendationsBody),
        response: errorResponses(400, 401, 403, 404),
        detail: { tags: ["catalog"], summary: "Cross-merchant related products (feature tier: recommendations)", security: sec },
      },
    )
    .post(
      "/api/v1/agent/negotiate",
      async ({ body, agent }) => {
        // ISO 4217 first (the one list, actors/store/schemas.ts): the decimals below depend on the currency.
        const badCurrency = currencyProblem(body.currency);
        if (badCurrency) throw fail("validation_error", `Invalid body field 'currency': ${badCurrency}`, { location: "body", field: "currency" });
        // The one money check of every input (decimals, and the business maximum): 1e-9 is not a bid of 0.
        const bidProblem = amountProblem(body.bidPrice, body.currency);
        if (bidProblem) throw fail("validation_error", `Invalid body field 'bidPrice': ${bidProblem}`, { location: "body", field: "bidPrice" });
        const { product, store } = await getEligibleProduct(svc.sql, body.productId);
        if (store.slug !== body.merchantSlug) throw fail("not_found", "Product not found at this merchant or not available.", { productId: body.productId });
        const r = await svc.actors.ask(storeActor, store.slug, "negotiate", {
          productId: product.id,
          agentKeyId: agent.keyId,
          bidMinor: toMinor(body.bidPrice, body.currency),
          currency: body.currency,
        });
        const m = (v: number | null) => (v === null ? null : toMajor(v, r.currency));
        return ok({
          offerId: r.offerId,
          status: r.status,
          productId: product.id,
          merchantSlug: store.slug,
          currency: r.currency,
          listPrice: m(r.listPriceMinor),
          bidPrice: body.bidPrice,
          counterPrice: m(r.counterPriceMinor),
          negotiatedPrice: m(r.negotiatedPriceMinor),
          expiresAt: r.expiresAt,
          usableInCart: r.status === "accepted",
          round: r.round,
          maxRounds: r.maxRounds,
          reason: r.reason,
          message: negotiationMessage(r.status, r.message),
          beta: true,
        });
      },
      {
        ...strictJsonBody(NegotiateBody),
        response: errorResponses(400, 401, 403, 404),
        detail: {
          tags: ["catalog"],
          summary: "Negotiate a price (BETA; feature tier: negotiate)",
          description:
            "The merchant's rules answer accepted (negotiatedPrice, expiresAt, usableInCart true), countered (counterPrice: bid it to " +
            `accept) or rejected (reason). An accepted price: ${ACCEPTED_OFFER_USE}`,
          security: sec,
        },
      },
    )
    .post(
      "/api/v1/agent/shipping-estimate",
      async ({ body, agent }) => {
        if (!isIsoCountryCode(body.countryCode)) {
          throw fail("validation_error", `Invalid body field 'countryCode': ${body.countryCode} is not an ISO 3166-1 alpha-2 country code`, { location: "body", field: "countryCode" });
        }
        const { product, store } = await getEligibleProduct(svc.sql, body.productId);
        const unit = await estimateUnitPriceMinor(svc.sql, product, agent.keyId, now(), body.variantId);
        return ok(shippingEstimate(await shippingZonesOf(svc.sql, store.slug), product, store, body, now(), unit));
      },
      {
        ...strictJsonBody(ShippingEstimateBody),
        response: errorResponses(400, 401, 403, 404),
        detail: { tags: ["catalog"], summary: "Shipping cost and delivery time from the merchant's zones (feature tier: shipping_estimate)", security: sec },
      },
    )
    .post(
      "/api/v1/agent/search-by-image",
      () => {
        throw fail("not_implemented", "Search by image is reserved and not implemented.", { feature: "search_by_image" });
      },
      { response: errorResponses(401, 403, 501), detail: { tags: ["catalog"], summary: "Reserved: always 501", security: sec } },
    );
}
