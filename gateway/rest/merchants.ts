/**
 * Agent merchant reads from the read model. Only eligible merchants exist here (BASIC+, trust >= 0.3, not
 * suspended or hidden); any other slug is 404 store_not_found. /trust-explanation belongs to the trust module.
 */
import { Elysia, t } from "elysia";
import { activeProductCount, getEligibleStore, isEligibleStore, isEuQualified, listStores, merchantSummary } from "../../actors/store/reads.ts";
import { policiesView } from "../../actors/store/ingest.ts";
import { fail } from "../../actors/runtime/errors.ts";
import { checkoutProtocols } from "../../actors/store/checkout-protocols.ts";
import type { StoreRecord } from "../../actors/store/schemas.ts";
import type { Sql } from "../../infra/db.ts";
import { freshnessTier } from "../../search/ranking.ts";
import { errorResponses, ok } from "../envelope.ts";
import { admitAnonymous, agentAuth, clientIp } from "../plugins/auth.ts";
import type { Services } from "../services.ts";
import { loadStoreX402Configs, X402_SETTLED_CURRENCIES, x402Availability, type StoreX402Config, type X402AvailabilityPolicy } from "../../actors/payments/x402-config.ts";
import { isStoreSlug } from "../../actors/store/slug.ts";

/**
 * Other agent-payment protocols the bridge maps onto this store's checkout (gateway/bridge, docs/protocols.md): the
 * `bridge` of REST's protocols read and of MCP get_supported_protocols alike (audit M-6: the tool gave ["acp", …],
 * another JSON type under the same name).
 */
export const BRIDGED_PROTOCOLS: readonly { id: string; name: string; endpoint: string }[] = [
  { id: "acp", name: "Agentic Commerce Protocol", endpoint: "/api/v1/agent/acp/checkout_sessions" },
  { id: "ap2", name: "Agent Payments Protocol (payment mandates)", endpoint: "/api/v1/agent/ap2/payment-mandates" },
  { id: "ucp", name: "Universal Commerce Protocol", endpoint: "/api/v1/agent/ucp/checkout-sessions" },
];

const Slug = t.Object({ slug: t.String({ minLength: 1 }) });

/** A slug outside the stores table's format names no store: 404 like an unknown one (a NUL byte would be a 500 in SQL). */
function slugOrNotFound(slug: string): string {
  if (!isStoreSlug(slug)) throw fail("store_not_found", "Merchant not found or not eligible.");
  return slug;
}
const sec = [{ agentApiKey: [] }];

/** Names and descriptions of the payment protocols a store may list (REST protocols route and MCP get_supported_protocols). */
export const PROTOCOLS: Record<string, { name: string; description: string }> = {
  card: { name: "Card checkout", description: "Card-processor checkout (the default)." },
  x402: { name: "x402", description: "Stablecoin settlement over x402 v2 (USDC on Base)." },
  MOCK: { name: "Mock payments", description: "Simulated payment: no money moves (demo store)." },
};

/** The protocol an agent should pick when it may choose: card when offered, else the first a checkout here accepts. */
export function preferredProtocol(store: Pick<StoreRecord, "paymentMethods" | "hostedStorefront">): string | null {
  const accepted = checkoutProtocols(store);
  return accepted.includes("card") ? "card" : (accepted[0] ?? null);
}

/** The merchant profile an agent reads before buying (REST merchant route and MCP get_merchant_profile). */
export async function merchantProfile(sql: Sql, store: StoreRecord, now: Date) {
  return {
    ...merchantSummary(store),
    verificationLevelDetail: store.verificationLevel,
    euQualified: isEuQualified(store),
    country: store.country,
    currency: store.currency,
    platform: store.platform,
    freshnessTier: freshnessTier(store.lastSyncAt, now),
    policies: policiesView(store.policies, store.currency),
    // only what a checkout here accepts: a hosted storefront's x402 would be refused (NATIVE_CHECKOUT_REQUIRED)
    paymentProtocols: checkoutProtocols(store),
    negotiation: store.negotiationRules?.enabled === true,
    reviews: store.reviewRatingAvg === null ? null : { average: store.reviewRatingAvg, count: store.reviewCount },
    productCount: await activeProductCount(sql, store.slug),
    memberSince: store.createdAt,
  };
}

/**
 * The structured return and refund policy; `refundRequest` says how this surface asks for a refund (a REST
 * endpoint or an MCP tool). Shared by the REST route and MCP get_return_policy.
 */
export function returnPolicy<R extends { approval: "merchant" }>(store: StoreRecord, refundRequest: R) {
  const p = policiesView(store.policies, store.currency);
  return {
    slug: store.slug,
    acceptsReturns: p.acceptsReturns,
    returnWindowDays: p.acceptsReturns ? (p.returnWindowDays ?? null) : 0,
    restockingFeePercent: p.restockingFeePercent ?? 0,
    refundMethod: "original_payment_method",
    refundRequest,
    supportResponseTimeSla: p.supportResponseTimeSla ?? null,
    policyVersion: store.policyVersion,
    summary: p.acceptsReturns
      ? `Returns accepted within ${p.returnWindowDays ?? "an unspecified number of"} days${p.restockingFeePercent ? `, ${p.restockingFeePercent}% restocking fee` : ", no restocking fee"}.`
      : "This merchant does not accept returns.",
  };
}

export const DIRECTORY_DEFAULT_LIMIT = 20;
export const DIRECTORY_MAX_LIMIT = 100;
/** Deepest page served, as search's (SEARCH_PAGE_MAX): a larger one is 400, so `meta.page` is always the exact integer sent (1e20 was echoed as 100000000000000000000). */
export const DIRECTORY_PAGE_MAX = 10_000;

const MerchantSummarySchema = t.Object({
  slug: t.String(),
  name: t.String(),
  trustScore: t.Union([t.Number(), t.Null()]),
  verificationLevel: t.String({ description: "BASIC, STANDARD or PREMIUM (QUALIFIED shows as PREMIUM)" }),
  storeStatus: t.String({ description: "active or deprioritized" }),
  lastSyncAt: t.Union([t.String({ format: "date-time" }), t.Null()]),
});

/** One page of the public directory: eligible merchants only (the spec's eligibility rule), by slug. */
export function directoryPage(stores: readonly StoreRecord[], page: number, limit: number) {
  const eligible = stores.filter(isEligibleStore).sort((a, b) => (a.slug < b.slug ? -1 : a.slug > b.slug ? 1 : 0));
  const capped = Math.min(limit, DIRECTORY_MAX_LIMIT);
  const total = eligible.length;
  return {
    merchants: eligible.slice((page - 1) * capped, page * capped).map(merchantSummary),
    meta: { total, page, limit: capped, totalPages: Math.ceil(total / capped) },
  };
}

/**
 * The public merchant directory (spec: public without any credential, 30 requests per minute per IP, like the
 * public trust endpoints; the spec names no path, docs/catalog.md says why GET /api/v1/merchants).
 */
export function merchantDirectoryRoutes(svc: Services) {
  return new Elysia({ name: "merchant-directory-routes" }).get(
    "/api/v1/merchants",
    async ({ query, request, server, set }) => {
      await admitAnonymous(svc, "public-rest", clientIp(request, server), set.headers as Record<string, string | number>);
      const { merchants, meta } = directoryPage(await listStores(svc.sql), query.page ?? 1, query.limit ?? DIRECTORY_DEFAULT_LIMIT);
      return { success: true as const, data: merchants, meta };
    },
    {
      query: t.Object({
        page: t.Optional(t.Integer({ minimum: 1, maximum: DIRECTORY_PAGE_MAX, description: "1 to 10,000, default 1" })),
        limit: t.Optional(t.Integer({ minimum: 1, description: "1 to 100, default 20; above 100 is served as 100" })),
      }),
      response: {
        200: t.Object({
          success: t.Literal(true),
          data: t.Array(MerchantSummarySchema),
          meta: t.Object({ total: t.Integer(), page: t.Integer(), limit: t.Integer(), totalPages: t.Integer() }),
        }),
        ...errorResponses(400, 429),
      },
      detail: {
        tags: ["merchants"],
        summary: "Public merchant directory (no credential; 30 requests per minute per IP)",
        description:
          "Eligible merchants only (verification BASIC or higher, trust score >= 0.3, not suspended or hidden) as MerchantSummary, " +
          "ordered by slug, paginated (meta: total, page, limit, totalPages).",
      },
    },
  );
}

/**
 * The protocols page's x402 entry. `configured` is true only when an x402 checkout can settle: the merchant's
 * server-side wallet and a facilitator (its own, or one the operator allows), the same rule the checkout applies
 * (x402Availability), so an agent is never shown a rail every payment on which is refused. The values an agent
 * puts in `x402_config` are here too (the merchant's configuration overrides them anyway), and `currencies`, the cart
 * currencies x402 settles: a cart is judged by its own currency (its products'), not the store's (review Y-6).
 */
async function x402Entry(slug: string, store: StoreX402Config | undefined, policy: X402AvailabilityPolicy) {
  const a = await x402Availability(slug, store, policy);
  return {
    version: 2,
    scheme: "exact",
    configured: a.usable,
    ...(a.usable ? {} : { reason: a.reason, message: a.message }),
    network: store?.network ?? null,
    asset: store?.asset.address ?? null,
    merchant_wallet_address: store?.payTo ?? null,
    facilitator_url: a.facilitatorUrl,
    allowed_facilitators: a.allowedFacilitators,
    currencies: X402_SETTLED_CURRENCIES,
  };
}

/**
 * The store's protocols list as REST's protocols page and MCP's get_supported_protocols show it: one list, so the
 * x402 entry says `configured` by the same rule (x402Availability) on every surface (review R3-3). Like the
 * profile's `paymentProtocols`, only what a checkout here accepts (checkoutProtocols: no x402 on a hosted storefront).
 */
export async function protocolEntries(svc: Services, store: Pick<StoreRecord, "slug" | "paymentMethods" | "hostedStorefront">) {
  const accepted = checkoutProtocols(store);
  const x402 = accepted.includes("x402") ? (await loadStoreX402Configs(svc.sql, [store.slug])).get(store.slug) : undefined;
  // the merchant's own facilitator passes the SSRF guard here as at checkout (audit B-4, session 17)
  const x402Fields = accepted.includes("x402")
    ? await x402Entry(store.slug, x402, { allowlist: svc.config.X402_FACILITATOR_ALLOWLIST, allowPrivate: svc.config.ALLOW_PRIVATE_URLS })
    : {};
  return accepted.map((id) => ({
    id,
    ...(PROTOCOLS[id] ?? { name: id, description: "" }),
    ...(id === "x402" ? x402Fields : {}),
  }));
}

export function merchantRoutes(svc: Services) {
  return new Elysia({ name: "merchant-routes" })
    .use(agentAuth(svc))
    .get(
      "/api/v1/agent/merchants/:slug",
      async ({ params }) => {
        const store = await getEligibleStore(svc.sql, slugOrNotFound(params.slug));
        return ok(await merchantProfile(svc.sql, store, new Date(svc.clock.now())));
      },
      { params: Slug, response: errorResponses(401, 403, 404), detail: { tags: ["merchants"], summary: "Merchant profile", security: sec } },
    )
    .get(
      "/api/v1/agent/merchants/:slug/protocols",
      async ({ params }) => {
        const store = await getEligibleStore(svc.sql, slugOrNotFound(params.slug));
        const list = await protocolEntries(svc, store);
        const preferred = preferredProtocol(store);
        return ok({
          slug: store.slug,
          protocols: list,
          preferred,
          bridge: BRIDGED_PROTOCOLS,
          mcp: { endpoint: `${svc.siteUrl}/${store.slug}/mcp` },
        });
      },
      { params: Slug, response: errorResponses(401, 403, 404), detail: { tags: ["merchants"], summary: "Supported payment protocols and the preferred one", security: sec } },
    )
    .get(
      "/api/v1/agent/merchants/:slug/return-policy",
      async ({ params }) => {
        const store = await getEligibleStore(svc.sql, slugOrNotFound(params.slug));
        return ok(returnPolicy(store, { endpoint: "POST /api/v1/agent/orders/{orderId}/refund", approval: "merchant" }));
      },
      { params: Slug, response: errorResponses(401, 403, 404), detail: { tags: ["merchants"], summary: "Structured return and refund policy (feature tier: return_policy)", security: sec } },
    );
}
