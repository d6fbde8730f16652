/** POST /api/v1/agent/compare: 1 to 10 product ids; unknown or ineligible ids are listed, not fatal unless none resolve. */
import { Elysia, t } from "elysia";
import { compareProducts, type CompareItem } from "../../actors/store/insights.ts";
import { findEligibleProducts, merchantSummary, toProductDetail } from "../../actors/store/reads.ts";
import { toMajor } from "../../actors/store/schemas.ts";
import { fail } from "../../actors/runtime/errors.ts";
import { policiesView } from "../../actors/store/ingest.ts";
import { errorResponses, ok } from "../envelope.ts";
import { agentAuth } from "../plugins/auth.ts";
import type { Services } from "../services.ts";

export function compareRoutes(svc: Services) {
  return new Elysia({ name: "compare-routes" })
    .use(agentAuth(svc))
    .post(
      "/api/v1/agent/compare",
      async ({ body }) => {
        const ids = [...new Set(body.productIds.map((id) => id.toLowerCase()))];
        const found = await findEligibleProducts(svc.sql, ids);
        if (found.size === 0) throw fail("not_found", "None of the products exists or is available.", { notFound: ids });
        const now = new Date(svc.clock.now());
        const resolved = ids.flatMap((id) => (found.has(id) ? [found.get(id)!] : []));
        const items: CompareItem[] = resolved.map(({ product, store }) => ({
          id: product.id,
          title: product.title,
          priceMinor: product.priceMinor,
          currency: product.currency,
          inStock: product.inStock,
          trustScore: store.trustScore,
          merchantSlug: store.slug,
          policies: policiesView(store.policies, store.currency),
          freeShippingThresholdMinor: store.policies.freeShippingThresholdMinor ?? null,
        }));
        const comparison = compareProducts(items, toMajor);
        return ok({
          products: resolved.map(({ product, store }) => {
            const d = toProductDetail(product, store, now);
            return {
              id: d.id,
              title: d.title,
              price: d.price,
              compareAtPrice: d.compareAtPrice,
              currency: d.currency,
              inStock: d.inStock,
              category: d.category,
              merchant: merchantSummary(store),
              policies: d.policies,
              freshnessTier: d.freshnessTier,
            };
          }),
          ...comparison,
          notFound: ids.filter((id) => !found.has(id)),
        });
      },
      {
        body: t.Object({ productIds: t.Array(t.String({ format: "uuid" }), { minItems: 1, maxItems: 10 }) }),
        response: errorResponses(400, 401, 403, 404),
        detail: { tags: ["catalog"], summary: "Compare 1 to 10 products", security: [{ agentApiKey: [] }] },
      },
    );
}
