/**
 * Agent merchant reads from the read model. Only eligible merchants exist here (BASIC+, trust >= 0.3, not
 * suspended or hidden); any other slug is 404 store_not_found. /trust-explanation belongs to the trust module.
 */
import { Elysia, t } from "elysia";
import { activeProductCount, getEligibleStore, isEuQualified, merchantSummary } from "../../actors/store/reads.ts";
import { policiesView } from "../../actors/store/ingest.ts";
import { fail } from "../../actors/runtime/errors.ts";
import type { StoreRecord } from "../../actors/store/schemas.ts";
import type { Sql } from "../../infra/db.ts";
import { freshnessTier } from "../../search/ranking.ts";
import { errorResponses, ok } from "../envelope.ts";
import { agentAuth } from "../plugins/auth.ts";
import type { Services } from "../services.ts";
import { loadStoreX402Configs } from "../../actors/payments/x402-config.ts";

/** Other agent-payment protocols the bridge maps onto this store's checkout (gateway/bridge, docs/protocols.md). */
const BRIDGED_PROTOCOLS = [
  { id: "acp", name: "Agentic Commerce Protocol", endpoint: "/api/v1/agent/acp/checkout_sessions" },
  { id: "ap2", name: "Agent Payments Protocol (payment mandates)", endpoint: "/api/v1/agent/ap2/payment-mandates" },
  { id: "ucp", name: "Universal Commerce Protocol", endpoint: "/api/v1/agent/ucp/checkout-sessions" },
];

const Slug = t.Object({ slug: t.String({ minLength: 1 }) });

/** A slug outside the stores table's format names no store: 404 like an unknown one (a NUL byte would be a 500 in SQL). */
function slugOrNotFound(slug: string): string {
  if (!/^[a-z0-9][a-z0-9-]{0,62}$/.test(slug)) throw fail("store_not_found", "Merchant not found or not eligible.");
  return slug;
}
const sec = [{ agentApiKey: [] }];

/** Names and descriptions of the payment protocols a store may list (REST protocols route and MCP get_supported_protocols). */
export const PROTOCOLS: Record<string, { name: string; description: string }> = {
  card: { name: "Card checkout", description: "Card-processor checkout (the default)." },
  x402: { name: "x402", description: "Stablecoin settlement over x402 v2 (USDC on Base)." },
  MOCK: { name: "Mock payments", description: "Simulated payment: no money moves (demo store)." },
};

/** The protocol an agent should pick when it may choose: card when offered, else the store's first. */
export function preferredProtocol(store: Pick<StoreRecord, "paymentMethods">): string | null {
  return store.paymentMethods.includes("card") ? "card" : (store.paymentMethods[0] ?? null);
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
    paymentProtocols: store.paymentMethods,
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
        const x402 = (await loadStoreX402Configs(svc.sql, [store.slug])).get(store.slug);
        const list = store.paymentMethods.map((id) => ({
          id,
          ...(PROTOCOLS[id] ?? { name: id, description: "" }),
          // x402 is payable only with the merchant's server-side wallet (actors/payments/x402-config.ts).
          ...(id === "x402" ? { version: 2, scheme: "exact", configured: x402 !== undefined, network: x402?.network ?? null, asset: x402?.asset.address ?? null } : {}),
        }));
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
