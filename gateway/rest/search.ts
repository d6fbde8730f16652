/**
 * POST /api/v1/agent/search: validates the SearchRequest (spec table), reads `deduplicate` from the raw body
 * (outside the validated schema, as the spec says), and asks the gateway's SearchService. Search is a query on
 * the gateway's own index, not an actor message (docs/decisions.md).
 */
import { Elysia, t } from "elysia";
import { fail } from "../../actors/runtime/errors.ts";
import { getSearchService } from "../../search/service.ts";
import type { SortOrder, VerificationLevel } from "../../search/ranking.ts";
import { errorResponses } from "../envelope.ts";
import { agentAuth } from "../plugins/auth.ts";
import type { Services } from "../services.ts";

export const SearchFilters = t.Object(
  {
    minPrice: t.Optional(t.Number({ minimum: 0 })),
    maxPrice: t.Optional(t.Number({ minimum: 0 })),
    category: t.Optional(t.String()),
    inStock: t.Optional(t.Boolean({ default: true })),
    minTrustScore: t.Optional(t.Number({ minimum: 0, maximum: 1 })),
    verificationLevel: t.Optional(t.Union([t.Literal("BASIC"), t.Literal("STANDARD"), t.Literal("PREMIUM"), t.Literal("QUALIFIED")])),
  },
  { additionalProperties: false },
);

export const SEARCH_QUERY_MAX_CHARS = 500;

/** Characters as a person counts them (code points), not UTF-16 units. */
export function codePointLength(s: string): number {
  let n = 0;
  for (const _ of s) n++;
  return n;
}

export const SearchRequest = t.Object(
  {
    // The spec bounds the query at 500 characters; the handler counts code points (like the refund reason), so
    // the schema only caps UTF-16 units at twice that (an emoji is two units, one character).
    query: t.String({ minLength: 1, maxLength: 2 * SEARCH_QUERY_MAX_CHARS, description: "1 to 500 characters (Unicode code points)" }),
    filters: t.Optional(SearchFilters),
    sort: t.Optional(
      t.Union([t.Literal("relevance"), t.Literal("price_asc"), t.Literal("price_desc"), t.Literal("trust_score"), t.Literal("newest")], {
        default: "relevance",
      }),
    ),
    page: t.Optional(t.Integer({ minimum: 1, default: 1 })),
    limit: t.Optional(t.Integer({ minimum: 1, default: 20, description: "1 to 100; anything above 100 is served as 100." })),
  },
  { additionalProperties: true },
);

/** The spec's `deduplicate`: read from the raw body, outside the validated schema; only `true` (or "true") turns it on. */
export function rawDeduplicate(raw: unknown): boolean {
  if (!raw || typeof raw !== "object") return false;
  const v = (raw as Record<string, unknown>).deduplicate;
  return v === true || v === "true";
}

export function searchRoutes(svc: Services) {
  const rawFlags = new WeakMap<Request, boolean>();
  return new Elysia({ name: "search-routes" })
    .use(agentAuth(svc))
    .post(
      "/api/v1/agent/search",
      async ({ body, request }) => {
        if (codePointLength(body.query) > SEARCH_QUERY_MAX_CHARS) {
          throw fail("validation_error", `Invalid body field 'query': at most ${SEARCH_QUERY_MAX_CHARS} characters`, { location: "body", field: "query" });
        }
        const f = body.filters;
        if (f?.minPrice !== undefined && f.maxPrice !== undefined && f.minPrice > f.maxPrice) {
          throw fail("validation_error", "Invalid body field 'filters.maxPrice': must be >= filters.minPrice", { location: "body", field: "filters.maxPrice" });
        }
        const search = getSearchService(svc);
        const res = await search.search(
          {
            query: body.query,
            filters: f ? { ...f, verificationLevel: f.verificationLevel as VerificationLevel | undefined } : undefined,
            sort: body.sort as SortOrder | undefined,
            page: body.page,
            limit: body.limit,
            deduplicate: rawFlags.get(request) === true,
          },
          new Date(svc.clock.now()),
        );
        return { success: true as const, data: res };
      },
      {
        // runs before validation: the raw body still holds every field the caller sent
        transform({ body, request }) {
          rawFlags.set(request, rawDeduplicate(body));
        },
        body: SearchRequest,
        response: errorResponses(400, 401, 403, 429),
        detail: {
          tags: ["catalog"],
          summary: "Search the multi-merchant catalog",
          description:
            "Eligible merchants only (BASIC or higher, trust >= 0.3, not suspended). Score = text × 0.55 + trust × 0.25 + freshness × 0.10 + in_stock × 0.10; " +
            "deprioritized stores × 0.8. `deduplicate: true` (raw body) collapses near-duplicate titles across merchants.",
          security: [{ agentApiKey: [] }],
        },
      },
    );
}
