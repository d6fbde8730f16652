/** POST /api/v1/agent/compare: 1 to 10 product ids; unknown or ineligible ids are listed, not fatal unless none resolve (400). */
import { Elysia, t } from "elysia";
import { compareProducts, type CompareItem } from "../../actors/store/insights.ts";
import { findEligibleProducts, merchantSummary, toProductDetail, type EligibleProduct } from "../../actors/store/reads.ts";
import type { Sql } from "../../infra/db.ts";
import { toMajor } from "../../actors/store/schemas.ts";
import { fail } from "../../actors/runtime/errors.ts";
import { policiesView } from "../../actors/store/ingest.ts";
import { errorResponses, ok } from "../envelope.ts";
import { agentAuth } from "../plugins/auth.ts";
import type { Services } from "../services.ts";
import { strictJsonBody } from "./strict-body.ts";

/** The body, also the route's `strictJsonBody`: a misspelt key (`product_ids`, MCP's name) is 400 naming it, not dropped (audit W-7). */
const CompareBody = t.Object({ productIds: t.Array(t.String({ format: "uuid" }), { minItems: 1, maxItems: 10 }) });

/**
 * The ids of a comparison (deduplicated, lower case) split into eligible products and the rest; with `storeSlug`,
 * only that store's products count (the MCP tool compares within its store). Shared by REST and MCP.
 */
export async function resolveComparable(sql: Sql, productIds: readonly string[], storeSlug?: string): Promise<{ resolved: EligibleProduct[]; notFound: string[] }> {
  const ids = [...new Set(productIds.map((id) => id.toLowerCase()))];
  const found = await findEligibleProducts(sql, ids);
  const resolved: EligibleProduct[] = [];
  const notFound: string[] = [];
  for (const id of ids) {
    const f = found.get(id);
    if (f && (storeSlug === undefined || f.store.slug === storeSlug)) resolved.push(f);
    else notFound.push(id);
  }
  return { resolved, notFound };
}

/** The side-by-side view of resolved products: each product's key facts plus price range, best picks and a recommendation. */
export function productComparison(resolved: readonly EligibleProduct[], now: Date) {
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
  return {
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
    ...compareProducts(items, toMajor),
  };
}

export function compareRoutes(svc: Services) {
  return new Elysia({ name: "compare-routes" })
    .use(agentAuth(svc))
    .post(
      "/api/v1/agent/compare",
      async ({ body }) => {
        const { resolved, notFound } = await resolveComparable(svc.sql, body.productIds);
        // The spec's table answers compare with 200 or 400 only: ids none of which resolve are a bad input (as MCP
        // compare_products says, INSUFFICIENT_INPUT), not a missing resource (docs/decisions.md, audit A-6).
        if (resolved.length === 0) throw fail("INSUFFICIENT_INPUT", "None of the products exists or is available to compare.", { field: "productIds", notFound });
        return ok({ ...productComparison(resolved, new Date(svc.clock.now())), notFound });
      },
      {
        ...strictJsonBody(CompareBody),
        response: errorResponses(400, 401, 403),
        detail: { tags: ["catalog"], summary: "Compare 1 to 10 products", security: [{ agentApiKey: [] }] },
      },
    );
}
