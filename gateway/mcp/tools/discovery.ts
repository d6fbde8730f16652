/**
 * Discovery tools (public: no credential needed): catalog search and reads of THIS store, merchant facts.
 * Thin: each calls the same application function as its REST twin (gateway/rest/{compare,merchants,products}.ts)
 * or the catalog read model / search service, so a view is defined once.
 */
import { Type as T } from "@sinclair/typebox";
import { fail } from "../../../actors/runtime/errors.ts";
import { checkoutProtocols } from "../../../actors/store/checkout-protocols.ts";
import { policiesView } from "../../../actors/store/ingest.ts";
import { agentHint } from "../../../actors/store/insights.ts";
import { findEligibleProducts, getEligibleProduct, toProductDetail } from "../../../actors/store/reads.ts";
import type { SortOrder } from "../../../search/ranking.ts";
import { categoryKey } from "../../../search/engine.ts";
import { getSearchService } from "../../../search/service.ts";
import { productComparison, resolveComparable } from "../../rest/compare.ts";
import { BRIDGED_PROTOCOLS, merchantProfile, preferredProtocol, protocolEntries, returnPolicy } from "../../rest/merchants.ts";
import { productAvailability, productPriceHistory } from "../../rest/products.ts";
import { SEARCH_CATEGORY_MAX_CHARS, SEARCH_PAGE_MAX, SEARCH_QUERY_MAX_CHARS } from "../../rest/search.ts";
import { CodePointString } from "../../plugins/schema-formats.ts";
import { defineTool, type ToolContext } from "../registry.ts";
import { parseAsk, type AskInterpretation } from "./nlweb.ts";
import { AnyObject, Open, ProductDetail, ProductSummary, SearchOutput, Strict, Uuid } from "./schemas.ts";

const READ = { readOnlyHint: true, destructiveHint: false, idempotentHint: true, openWorldHint: false } as const;

const Sort = T.Union(["relevance", "price_asc", "price_desc", "trust_score", "newest"].map((s) => T.Literal(s)), { description: "Default relevance." });

/** A product of THIS store, else PRODUCT_NOT_FOUND (another store's product is not served here). */
export async function storeProduct(ctx: ToolContext, id: string) {
  const found = await getEligibleProduct(ctx.svc.sql, id).catch(() => null);
  if (!found || found.store.slug !== ctx.store.slug) {
    throw fail("PRODUCT_NOT_FOUND", `No product ${id} in store ${ctx.store.slug}; re-run search_products.`, { product_id: id, store: ctx.store.slug });
  }
  return found;
}

/** Spec input bounds, as REST applies them: search limit default 20, above 100 served as 100 (capped, not refused). */
export const SEARCH_LIMIT = { default: 20, max: 100 } as const;
/** Recommendations: default 5, above 20 served as 20. */
export const RECOMMENDATION_LIMIT = { default: 5, max: 20 } as const;

export function searchLimit(limit: number | undefined): number {
  return Math.min(limit ?? SEARCH_LIMIT.default, SEARCH_LIMIT.max);
}

export async function searchStore(
  ctx: ToolContext,
  a: { query: string; min_price?: number; max_price?: number; category?: string; in_stock_only?: boolean; sort?: string; page?: number; limit?: number },
) {
  if (a.min_price !== undefined && a.max_price !== undefined && a.min_price > a.max_price) {
    throw fail("INVALID_ARGUMENT", "max_price must be >= min_price.", { field: "max_price" });
  }
  const filters = {
    ...(a.min_price !== undefined ? { minPrice: a.min_price } : {}),
    ...(a.max_price !== undefined ? { maxPrice: a.max_price } : {}),
    ...(a.category !== undefined ? { category: a.category } : {}),
    inStock: a.in_stock_only ?? true,
  };
  return getSearchService(ctx.svc).search(
    { query: a.query, storeSlug: ctx.store.slug, filters, sort: a.sort as SortOrder | undefined, page: a.page, limit: searchLimit(a.limit) },
    ctx.now,
  );
}

const SearchArgs = {
  // Counted in characters (code points) with REST's bounds (review R3-6): 500 emoji are a valid query on both surfaces.
  query: CodePointString({ minLength: 1, maxLength: SEARCH_QUERY_MAX_CHARS, description: "What the shopper wants, in a few words (e.g. 'wireless headphones')." }),
  max_price: T.Optional(T.Number({ minimum: 0, description: "Highest price, in the product's currency (decimal)." })),
  min_price: T.Optional(T.Number({ minimum: 0, description: "Lowest price (decimal)." })),
  category: T.Optional(CodePointString({ minLength: 1, maxLength: SEARCH_CATEGORY_MAX_CHARS, description: "Category name as shown by browse_categories." })),
  in_stock_only: T.Optional(T.Boolean({ description: "Default true: only products in stock." })),
  sort: T.Optional(Sort),
  // REST's bound (audit Q-1): past it the answer is empty anyway, and 1e300 echoed as meta.page is not an integer in
  // JSON; every search tool spreads these arguments, so search_products(_enriched) and ucp_search_catalog all get it
  page: T.Optional(T.Integer({ minimum: 1, maximum: SEARCH_PAGE_MAX, description: `Default 1; at most ${SEARCH_PAGE_MAX.toLocaleString("en-US")}.` })),
  limit: T.Optional(T.Integer({ minimum: 1, description: "Default 20; values above 100 are served as 100." })),
};

export const searchProducts = defineTool({
  name: "search_products",
  title: "Search products",
  description:
    "Search this store's catalog. Returns ranked products (price as a decimal with its currency, stock, merchant trust, " +
    "freshness and a why_ranked explanation). Use it first to find product ids, then get_product_details for one product " +
    "or compare_products for several. Only in-stock products unless in_stock_only is false.",
  group: "discovery",
  input: T.Object(SearchArgs, Strict),
  output: SearchOutput,
  annotations: READ,
  auth: "public",
  scopes: ["search"],
  confirmation: false,
  rateBucket: "search_products",
  errors: { INVALID_ARGUMENT: "max_price below min_price, limit below 1, empty query" },
  async handler(a, ctx) {
    return searchStore(ctx, a);
  },
});

export const searchProductsEnriched = defineTool({
  name: "search_products_enriched",
  title: "Search products (enriched)",
  description:
    "Like search_products, but each result also carries what an agent checks before buying: stock quantity and an " +
    "agentHint about stock reliability, the return policy summary and the shipping estimate of the merchant. Slower; " +
    "use it when you will pick a product directly from the results.",
  group: "discovery",
  input: T.Object(SearchArgs, Strict),
  output: T.Object({ products: T.Array(T.Intersect([ProductSummary, T.Object({ enrichment: AnyObject })])), meta: AnyObject, queryMeta: AnyObject }, Open),
  annotations: READ,
  auth: "public",
  scopes: ["search"],
  confirmation: false,
  rateBucket: "search_products_enriched",
  async handler(a, ctx) {
    const res = await searchStore(ctx, a);
    const found = await findEligibleProducts(ctx.svc.sql, res.products.map((p) => p.id));
    const policies = policiesView(ctx.store.policies, ctx.store.currency);
    return {
      ...res,
      products: res.products.map((p) => {
        const rec = found.get(p.id)?.product;
        const stockQuantity = rec?.stockQuantity ?? null;
        return {
          ...p,
          enrichment: {
            stockQuantity,
            agentHint: agentHint({ inStock: p.inStock, stockQuantity, tier: p.freshnessTier, confidence: p.stockConfidence }),
            returns: policies.acceptsReturns ? `returns within ${policies.returnWindowDays ?? "?"} days` : "no returns",
            shippingEstimateDays: policies.shippingEstimateDays ?? null,
            freeShippingThreshold: policies.freeShippingThreshold ?? null,
          },
        };
      }),
    };
  },
});

export const getProductDetails = defineTool({
  name: "get_product_details",
  title: "Get product details",
  description:
    "Full record of one product of this store by id (from search results): description, images, variants with their " +
    "ids and prices, attributes, stock quantity, the merchant's return/shipping policies and data freshness. Use the " +
    "variant ids when adding a specific variant to a cart.",
  group: "discovery",
  input: T.Object({ product_id: Uuid }, Strict),
  output: ProductDetail,
  annotations: READ,
  auth: "public",
  scopes: ["search"],
  confirmation: false,
  errors: { PRODUCT_NOT_FOUND: "an id that is not an active product of this store", INVALID_ARGUMENT: "product_id is not a UUID" },
  async handler(a, ctx) {
    const { product, store } = await storeProduct(ctx, a.product_id);
    return toProductDetail(product, store, ctx.now);
  },
});

export const browseCategories = defineTool({
  name: "browse_categories",
  title: "Browse categories",
  description:
    "List this store's product categories with how many active products (and how many in stock) each holds. Use a " +
    "category name as the `category` argument of search_products. Products without a category are counted apart " +
    "(`uncategorized`): search_products finds them without a category filter.",
  group: "discovery",
  input: T.Object({}, Strict),
  output: T.Object(
    {
      store: T.String(),
      categories: T.Array(T.Object({ name: T.String(), productCount: T.Integer(), inStockCount: T.Integer() }, Open)),
      uncategorized: T.Object({ productCount: T.Integer(), inStockCount: T.Integer() }, Open),
    },
    Open,
  ),
  annotations: READ,
  auth: "public",
  scopes: ["search"],
  confirmation: false,
  async handler(_a, ctx) {
    // A grouped read of the store's own catalog (no REST twin): the read model has no per-category function. In
    // stock is what can be bought (actors/store/reads.ts buyableStock: tracked stock less the units pending checkouts
    // hold), as search_products' in_stock_only and product reads count it, not the raw `in_stock` column (review R-4).
    const rows = await ctx.svc.sql<{ name: string | null; n: number; in_stock: number }[]>`
      SELECT category AS name, count(*)::int AS n,
        count(*) FILTER (WHERE in_stock AND (stock_quantity IS NULL OR stock_quantity - reserved_quantity > 0))::int AS in_stock
      FROM products WHERE store_slug = ${ctx.store.slug} AND active GROUP BY category ORDER BY category NULLS LAST`;
    return { store: ctx.store.slug, ...categoriesBySearchKey(rows) };
  },
});

/**
 * The categories as search_products' `category` filter sees them (helper A, session 20): spellings with one
 * `categoryKey` ("Apparel", "apparel ") are one entry, named by its most used spelling, counting all of them; a
 * category without a key (none, "", white space or punctuation only), which no filter matches, is counted in
 * `uncategorized` instead of listed under a name the filter does not find ("Uncategorized" found nothing).
 */
export function categoriesBySearchKey(rows: readonly { name: string | null; n: number; in_stock: number }[]) {
  const byKey = new Map<string, { name: string; top: number; productCount: number; inStockCount: number }>();
  const uncategorized = { productCount: 0, inStockCount: 0 };
  for (const r of rows) {
    const key = categoryKey(r.name);
    if (key === null) {
      uncategorized.productCount += r.n;
      uncategorized.inStockCount += r.in_stock;
      continue;
    }
    const c = byKey.get(key);
    if (!c) byKey.set(key, { name: r.name!, top: r.n, productCount: r.n, inStockCount: r.in_stock });
    else {
      if (r.n > c.top) [c.name, c.top] = [r.name!, r.n];
      c.productCount += r.n;
      c.inStockCount += r.in_stock;
    }
  }
  const categories = [...byKey.values()]
    .map(({ name, productCount, inStockCount }) => ({ name, productCount, inStockCount }))
    .sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
  return { categories, uncategorized };
}

export const compareProductsTool = defineTool({
  name: "compare_products",
  title: "Compare products",
  description:
    "Compare 2 to 10 products of this store side by side: price range, best value, best return policy, best shipping, " +
    "and a recommendation with reasons. Needs at least two ids that resolve to products here (else INSUFFICIENT_INPUT).",
  group: "discovery",
  input: T.Object({ product_ids: T.Array(Uuid, { minItems: 1, maxItems: 10, description: "2 to 10 product ids from search results." }) }, Strict),
  output: T.Object({ products: T.Array(AnyObject), recommendation: AnyObject, notFound: T.Array(T.String()) }, Open),
  annotations: READ,
  auth: "public",
  scopes: ["compare"],
  confirmation: false,
  errors: { INSUFFICIENT_INPUT: "fewer than two of the ids resolve to products of this store" },
  async handler(a, ctx) {
    const { resolved, notFound } = await resolveComparable(ctx.svc.sql, a.product_ids, ctx.store.slug);
    if (resolved.length < 2) {
      throw fail("INSUFFICIENT_INPUT", "A comparison needs at least two products of this store.", { resolved: resolved.length, notFound });
    }
    return { ...productComparison(resolved, ctx.now), notFound };
  },
});

/**
 * A question's price bounds low to high (audit Q-5): "between 500 and 5" read as min 500 > max 5 made searchStore
 * answer INVALID_ARGUMENT on `max_price`, an argument nlweb_ask does not take, so the agent had nothing to fix. The
 * bounds are the tool's own reading of the question: a range given high to low is searched low to high and
 * `interpreted` says so (`note`), as it does for a currency the store does not price in.
 */
export function orderedBounds(parsed: AskInterpretation): AskInterpretation & { swapped: boolean } {
  const { minPrice, maxPrice } = parsed;
  if (minPrice === undefined || maxPrice === undefined || minPrice <= maxPrice) return { ...parsed, swapped: false };
  return { ...parsed, minPrice: maxPrice, maxPrice: minPrice, swapped: true };
}

export const nlwebAsk = defineTool({
  name: "nlweb_ask",
  title: "Ask in natural language",
  description:
    "Ask for products in plain language, e.g. 'waterproof jacket under 80 euros in stock'. The question is turned into " +
    "a structured search (query words, price bounds, stock filter, sort) which is returned as `interpreted`, together " +
    "with the results. Served only on stores that enable it; needs a STANDARD-or-higher verified merchant.",
  group: "discovery",
  input: T.Object({ question: CodePointString({ minLength: 1, maxLength: SEARCH_QUERY_MAX_CHARS, description: "The shopper's request in their words." }), limit: T.Optional(T.Integer({ minimum: 1, description: "Default 20; values above 100 are served as 100 (as search_products)." })) }, Strict),
  output: T.Object({ interpreted: AnyObject, products: T.Array(ProductSummary), meta: AnyObject }, Open),
  annotations: READ,
  auth: "public",
  scopes: ["search"],
  confirmation: false,
  errors: {
    PLAN_UPGRADE_REQUIRED: "the store's verification plan is BASIC (semantic search is part of STANDARD and above)",
    INSUFFICIENT_INPUT: "the question holds no searchable words (only stop words, prices or filters)",
  },
  async handler(a, ctx) {
    if (ctx.store.verificationLevel === "BASIC" || ctx.store.verificationLevel === "UNVERIFIED") {
      throw fail("PLAN_UPGRADE_REQUIRED", `${ctx.store.name}'s plan does not include natural-language search; use search_products.`, { store: ctx.store.slug, plan: ctx.store.verificationLevel, requiredPlan: "STANDARD" });
    }
    const { swapped, ...parsed } = orderedBounds(parseAsk(a.question));
    if (!parsed.query) throw fail("INSUFFICIENT_INPUT", "The question names nothing to search for.", { interpreted: parsed });
    const res = await searchStore(ctx, {
      query: parsed.query,
      ...(parsed.maxPrice !== undefined ? { max_price: parsed.maxPrice } : {}),
      ...(parsed.minPrice !== undefined ? { min_price: parsed.minPrice } : {}),
      in_stock_only: parsed.inStockOnly,
      ...(parsed.sort ? { sort: parsed.sort } : {}),
      // the spec's search limit, like the other search tools (review H, N1): default 20, capped at 100
      limit: a.limit,
    });
    const notes = [
      ...(swapped ? [`the price bounds were given high to low; searched from ${parsed.minPrice} to ${parsed.maxPrice}`] : []),
      ...(parsed.currency && parsed.currency !== ctx.store.currency ? [`prices are in ${ctx.store.currency}; the ${parsed.currency} bound was applied as a number`] : []),
    ];
    return { interpreted: { ...parsed, ...(notes.length ? { note: notes.join("; ") } : {}) }, products: res.products, meta: res.meta };
  },
});

export const getMerchantProfile = defineTool({
  name: "get_merchant_profile",
  title: "Get merchant profile",
  description:
    "Who sells here: trust score (0 to 1), verification level, store status, country, currency, policies (returns, " +
    "shipping, support SLA), accepted payment protocols, reviews and catalog size. Check it before buying.",
  group: "discovery",
  input: T.Object({}, Strict),
  output: T.Object({ slug: T.String(), name: T.String(), trustScore: T.Union([T.Number(), T.Null()]), verificationLevel: T.String(), policies: AnyObject }, Open),
  annotations: READ,
  auth: "public",
  scopes: ["merchants:read"],
  confirmation: false,
  async handler(_a, ctx) {
    return merchantProfile(ctx.svc.sql, ctx.store, ctx.now);
  },
});

export const getAvailability = defineTool({
  name: "get_availability",
  title: "Get availability",
  description:
    "Live-as-we-know-it stock of one product: inStock, stockQuantity, per-variant stock, when the merchant last synced, " +
    "a freshness tier and an agentHint telling how far to trust the stock figure. Call it right before create_cart.",
  group: "discovery",
  input: T.Object({ product_id: Uuid }, Strict),
  output: T.Object({ productId: T.String(), inStock: T.Boolean(), freshnessTier: T.String(), agentHint: T.String() }, Open),
  annotations: READ,
  auth: "public",
  scopes: ["search"],
  confirmation: false,
  async handler(a, ctx) {
    const { product, store } = await storeProduct(ctx, a.product_id);
    return productAvailability(product, store, ctx.now);
  },
});

export const getPriceHistory = defineTool({
  name: "get_price_history",
  title: "Get price history",
  description:
    "Price observations of one product over the last 30, 60 or 90 days, with lowest/highest, opening price and a trend " +
    "(rising, falling, stable). Use it to tell the shopper whether now is a good price. Needs a key whose tier includes " +
    "price_history (GROWTH and above).",
  group: "discovery",
  input: T.Object({ product_id: Uuid, days: T.Optional(T.Union([T.Literal(30), T.Literal(60), T.Literal(90)], { description: "30, 60 or 90; default 30." })) }, Strict),
  output: T.Object({ productId: T.String(), currency: T.String(), trend: T.String(), points: T.Array(AnyObject) }, Open),
  annotations: READ,
  auth: "key",
  scopes: ["search"],
  feature: "price_history",
  confirmation: false,
  async handler(a, ctx) {
    const { product } = await storeProduct(ctx, a.product_id);
    return productPriceHistory(ctx.svc.sql, product, a.days ?? 30, ctx.now);
  },
});

export const getRecommendations = defineTool({
  name: "get_recommendations",
  title: "Get recommendations",
  description:
    "Related products at OTHER merchants for one product of this store (same category, similar title; for a product " +
    "without a category, those matching about half of its title or more, possibly none), ranked by the search formula. " +
    "Use it to offer alternatives. Needs a key whose tier includes recommendations.",
  group: "discovery",
  input: T.Object({ product_id: Uuid, limit: T.Optional(T.Integer({ minimum: 1, description: "Default 5; values above 20 are served as 20." })) }, Strict),
  output: T.Object({ productId: T.String(), products: T.Array(ProductSummary) }, Open),
  annotations: READ,
  auth: "key",
  scopes: ["search"],
  feature: "recommendations",
  confirmation: false,
  async handler(a, ctx) {
    const { product } = await storeProduct(ctx, a.product_id);
    const limit = Math.min(a.limit ?? RECOMMENDATION_LIMIT.default, RECOMMENDATION_LIMIT.max);
    const products = await getSearchService(ctx.svc).related(product, limit, ctx.now);
    return { productId: product.id, limit, products };
  },
});

export const getReturnPolicy = defineTool({
  name: "get_return_policy",
  title: "Get return policy",
  description:
    "This merchant's structured return and refund policy: whether returns are accepted, the window in days, restocking " +
    "fee, refund method and who approves refunds. Read it before onx_create_return.",
  group: "discovery",
  input: T.Object({}, Strict),
  output: T.Object({ slug: T.String(), acceptsReturns: T.Boolean(), summary: T.String() }, Open),
  annotations: READ,
  auth: "public",
  scopes: ["merchants:read"],
  confirmation: false,
  async handler(_a, ctx) {
    return returnPolicy(ctx.store, { tool: "onx_create_return", approval: "merchant" });
  },
});

export const getSupportedProtocols = defineTool({
  name: "get_supported_protocols",
  title: "Get supported protocols",
  description:
    "Payment and agent-commerce protocols this store accepts (card, x402, MOCK on the demo store), the preferred one, " +
    "the bridged request shapes (ACP, AP2, UCP) and this store's MCP endpoints.",
  group: "discovery",
  input: T.Object({}, Strict),
  output: T.Object({ slug: T.String(), protocols: T.Array(AnyObject), preferred: T.Union([T.String(), T.Null()]) }, Open),
  annotations: READ,
  auth: "public",
  scopes: ["protocols:discover"],
  confirmation: false,
  async handler(_a, ctx) {
    const s = ctx.store;
    const base = `${ctx.svc.siteUrl}/${s.slug}/mcp`;
    return {
      slug: s.slug,
      protocols: await protocolEntries(ctx.svc, s),
      preferred: preferredProtocol(s),
      bridge: BRIDGED_PROTOCOLS,
      mcp: { endpoint: base, discovery: `${base}/discovery`, customer: `${base}/customer`, checkout: `${base}/checkout`, protocolVersion: "2025-11-25" },
    };
  },
});

/** The sandbox card processor's tokens (actors/payments/card-sandbox.ts) and what complete_checkout answers for each. */
export const CARD_TEST_TOKENS: readonly { payment_method: string; result: string }[] = [
  { payment_method: "tok_approve", result: "captured: COMPLETED with order_id" },
  { payment_method: "tok_decline", result: "declined: PAYMENT_DECLINED, nothing captured, the session can be paid again" },
  { payment_method: "tok_fail", result: "failed: PAYMENT_FAILED_ROLLED_BACK, nothing captured, retry with a fresh token" },
  { payment_method: "tok_needs_approval", result: "PENDING_EXTERNAL_CONFIRMATION with approval_url; after the buyer approves, call again with the same session and idempotency_key" },
  { payment_method: "tok_not_approved", result: "the payer refuses: PAYMENT_NOT_APPROVED, nothing captured" },
  { payment_method: "tok_lost_response", result: "captured, but the first answer is lost (UPSTREAM_UNAVAILABLE); the same call again returns the order, never a second charge" },
  { payment_method: "tok_amount_mismatch", result: "captures another amount: PAYMENT_AMOUNT_MISMATCH, the order is flagged for the merchant to reconcile" },
  { payment_method: "tok_finalization_fails", result: "captured, the order cannot be finalised: PAYMENT_CAPTURED_FINALIZATION_FAILED, flagged for refund or reconciliation" },
];

export const getPaymentMethods = defineTool({
  name: "get_payment_methods",
  title: "Get payment methods",
  description:
    "The payment_method values complete_checkout accepts on this store (e.g. MOCK on the demo store, card test tokens, " +
    "x402); for cards, test_tokens lists each sandbox token and what complete_checkout answers for it. Call it when " +
    "complete_checkout answers PAYMENT_METHOD_NOT_CONFIGURED.",
  group: "discovery",
  input: T.Object({}, Strict),
  output: T.Object(
    {
      store: T.String(),
      methods: T.Array(T.Object({ id: T.String(), description: T.String(), test_tokens: T.Optional(T.Array(T.Object({ payment_method: T.String(), result: T.String() }))) }, Open)),
    },
    Open,
  ),
  annotations: READ,
  auth: "public",
  confirmation: false,
  async handler(_a, ctx) {
    const describe: Record<string, string> = {
      MOCK: "Simulated payment, no money moves. Pass payment_method 'MOCK'.",
      card: "Card processor (the sandbox). Pass one of test_tokens as payment_method: tok_approve pays; the others rehearse each outcome.",
      x402: "x402 stablecoin settlement through REST POST /api/v1/agent/checkout with payment_rail x402.",
    };
    // The table itself, not a pointer to a document the agent cannot fetch (audit E): what each token does.
    return {
      store: ctx.store.slug,
      // only what a checkout here accepts (a hosted storefront refuses x402: NATIVE_CHECKOUT_REQUIRED)
      methods: checkoutProtocols(ctx.store).map((id) => ({ id, description: describe[id] ?? id, ...(id === "card" ? { test_tokens: CARD_TEST_TOKENS } : {}) })),
    };
  },
});
