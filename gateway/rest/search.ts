/**
 * POST /api/v1/agent/search: validates the SearchRequest (spec table), reads `deduplicate` from the raw body
 * (as the spec says; the schema lists it, any value, so that any other unknown key can be refused), and asks the gateway's SearchService. Search is a query on
 * the gateway's own index, not an actor message (docs/decisions.md).
 */
import { Elysia, t } from "elysia";
import { fail } from "../../actors/runtime/errors.ts";
import { getSearchService } from "../../search/service.ts";
import type { SortOrder, VerificationLevel } from "../../search/ranking.ts";
import { errorResponses } from "../envelope.ts";
import { cutEcho } from "../../infra/echo.ts";
import { agentAuth } from "../plugins/auth.ts";
import { CodePointString, codePointLength } from "../plugins/schema-formats.ts";
import type { Services } from "../services.ts";
import { strictBody } from "./strict-body.ts";

/** Longest `filters.category` accepted: it is echoed back in queryMeta, and no category name comes close. */
export const SEARCH_CATEGORY_MAX_CHARS = 200;
export const SEARCH_QUERY_MAX_CHARS = 500;
/** Deepest page served: past it a page is empty anyway (the candidate window is 1,000), and 1e308 is no integer meta. */
export const SEARCH_PAGE_MAX = 10_000;

export const SearchFilters = t.Object(
  {
    minPrice: t.Optional(t.Number({ minimum: 0 })),
    maxPrice: t.Optional(t.Number({ minimum: 0 })),
    category: t.Optional(CodePointString({ maxLength: SEARCH_CATEGORY_MAX_CHARS, description: `At most ${SEARCH_CATEGORY_MAX_CHARS} characters; case-, accent- and punctuation-insensitive equality.` })),
    inStock: t.Optional(t.Boolean({ default: true })),
    minTrustScore: t.Optional(t.Number({ minimum: 0, maximum: 1 })),
    verificationLevel: t.Optional(t.Union([t.Literal("BASIC"), t.Literal("STANDARD"), t.Literal("PREMIUM"), t.Literal("QUALIFIED")])),
  },
  { additionalProperties: false, description: "Unknown filter names are refused (400 with details.allowed)." },
);

/** The filter names SearchFilters knows, in its order. */
export const SEARCH_FILTER_NAMES: readonly string[] = Object.keys(SearchFilters.properties);

export { codePointLength };

export const SearchRequest = t.Object(
  {
    query: CodePointString({ minLength: 1, maxLength: SEARCH_QUERY_MAX_CHARS, description: `1 to ${SEARCH_QUERY_MAX_CHARS} characters (Unicode code points)` }),
    filters: t.Optional(SearchFilters),
    sort: t.Optional(
      t.Union([t.Literal("relevance"), t.Literal("price_asc"), t.Literal("price_desc"), t.Literal("trust_score"), t.Literal("newest")], {
        default: "relevance",
      }),
    ),
    page: t.Optional(t.Integer({ minimum: 1, maximum: SEARCH_PAGE_MAX, default: 1, description: `1 to ${SEARCH_PAGE_MAX.toLocaleString("en-US")}` })),
    limit: t.Optional(t.Integer({ minimum: 1, default: 20, description: "1 to 100; anything above 100 is served as 100." })),
    deduplicate: t.Optional(
      t.Unknown({ description: "true (or \"true\") collapses near-duplicate titles across merchants, keeping the highest-scoring one; any other value is ignored. Read from the raw body (the spec)." }),
    ),
  },
  { description: "Any other key, at the top level or in filters, is 400 validation_error naming it (details.field, details.allowed)." },
);

/**
 * Refuses a `filters` key SearchFilters does not know. The gateway's normaliser (TypeBox Clean) would drop it
 * before validation, so `max_price` (the MCP argument name) searched unfiltered with a 200 (audit E); MCP
 * search_products already refuses unknown arguments the same way. Runs on the raw body, before the normaliser.
 */
export function refuseUnknownFilters(raw: unknown): void {
  if (!raw || typeof raw !== "object") return;
  const filters = (raw as Record<string, unknown>).filters;
  if (!filters || typeof filters !== "object" || Array.isArray(filters)) return;
  for (const name of Object.keys(filters)) {
    if (SEARCH_FILTER_NAMES.includes(name)) continue;
    const shown = cutEcho(name);
    throw fail("validation_error", `Invalid body field 'filters.${shown}': unknown filter; allowed: ${SEARCH_FILTER_NAMES.join(", ")}`, {
      location: "body",
      field: `filters.${shown}`,
      allowed: [...SEARCH_FILTER_NAMES],
    });
  }
}

/**
 * A filter sent at the top level of the body, where SearchRequest has no such field: MCP search_products' argument
 * names (max_price, min_price, in_stock_only, category) and the filter names themselves (maxPrice, …). They were
 * dropped and the search ran unfiltered with a 200: wrong results with no hint (audit M-4; audit E fixed the same
 * inside `filters`). Each names where it goes (`details.expected`); any other unknown top-level key is then the
 * `strictBody` 400 (audit W-7: `sortBy` for `sort` was served in relevance order).
 */
const MISPLACED_FILTERS: Readonly<Record<string, string>> = {
  max_price: "maxPrice",
  min_price: "minPrice",
  in_stock_only: "inStock",
  in_stock: "inStock",
  min_trust_score: "minTrustScore",
  verification_level: "verificationLevel",
  ...Object.fromEntries(SEARCH_FILTER_NAMES.map((n) => [n, n])),
};

export function refuseMisplacedFilters(raw: unknown): void {
  if (!raw || typeof raw !== "object" || Array.isArray(raw)) return;
  for (const name of Object.keys(raw)) {
    const filter = Object.hasOwn(MISPLACED_FILTERS, name) ? MISPLACED_FILTERS[name] : undefined;
    if (filter === undefined) continue;
    throw fail("validation_error", `Invalid body field '${name}': filters go inside 'filters' (filters.${filter}); at the top level it would be ignored`, {
      location: "body",
      field: name,
      expected: `filters.${filter}`,
    });
  }
}

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
        // runs before validation: the raw body still holds every field the caller sent. The two named refusals first
        // (their answers say where a filter goes), then any other unknown key (strict-body.ts; a hook of its own, so
        // the OpenAPI document marks this body closed like every strict route's), then the raw `deduplicate`
        transform: [
          ({ body }: { body: unknown }) => {
            refuseUnknownFilters(body);
            refuseMisplacedFilters(body);
          },
          strictBody(SearchRequest),
          ({ body, request }: { body: unknown; request: Request }) => {
            rawFlags.set(request, rawDeduplicate(body));
          },
        ],
        body: SearchRequest,
        response: errorResponses(400, 401, 403, 429),
        detail: {
          tags: ["catalog"],
          summary: "Search the multi-merchant catalog",
          description:
            "Eligible merchants only (BASIC or higher, trust >= 0.3, not suspended). Score = text × 0.55 + trust × 0.25 + freshness × 0.10 + in_stock × 0.10; " +
            "deprioritized stores × 0.8. `deduplicate: true` (raw body) collapses near-duplicate titles across merchants. " +
            "A filter at the top level of the body (maxPrice, or MCP's max_price, min_price, in_stock_only, category) is 400 validation_error naming where it goes (details.expected), never silently ignored; " +
            "any other key the request does not have is 400 validation_error naming it (details.field, details.allowed).",
          security: [{ agentApiKey: [] }],
        },
      },
    );
}
