/**
 * What an agent key may do: scopes, tiers, the feature-tier table and the route access table for
 * `/api/v1/agent/*`. Pure data and functions; the gateway's auth plugin calls `checkAccess` once per request
 * after the key is looked up. docs/access.md is the human-readable copy of these tables.
 */
import { cutEcho, preview } from "../../infra/echo.ts";
import { fail } from "../runtime/errors.ts";
import { featureTierNextStep, planFeatureNextStep, SANDBOX_NEXT_STEP } from "./refusal-text.ts";

// ---------------------------------------------------------------------------------------------- scopes

export const SCOPES = [
  "search",
  "compare",
  "cart",
  "checkout",
  "checkout:delegate",
  "orders:read",
  "merchants:read",
  "protocols:discover",
] as const;
export type Scope = (typeof SCOPES)[number];

export const DEFAULT_SCOPES: readonly Scope[] = ["search", "compare", "cart", "merchants:read"];

/** Names from an older listing of the spec. Refused like any unknown value, with a hint in the message. */
export const LEGACY_SCOPES: readonly string[] = ["agent:read", "agent:cart", "agent:checkout"];

/** 'A', 'B', 'C': the allowed values as a validation message names them. */
export function quoted(values: readonly string[]): string {
  return values.map((v) => `'${v}'`).join(", ");
}

export function isScope(value: unknown): value is Scope {
  return typeof value === "string" && (SCOPES as readonly string[]).includes(value);
}

/**
 * Validates the `scopes` of a key-creation request.
 * - omitted (undefined/null): the default scopes;
 * - otherwise: exactly the requested set (deduplicated, in canonical order), so a developer can mint a narrower
 *   key than the default; an empty list is refused because such a key could call nothing.
 * Any value outside SCOPES gives 400 validation_error naming it.
 */
export function validateScopes(input: unknown): Scope[] {
  if (input === undefined || input === null) return [...DEFAULT_SCOPES];
  if (!Array.isArray(input)) {
    throw fail("validation_error", "scopes must be an array of scope names", { field: "scopes", allowed: [...SCOPES] });
  }
  if (input.length === 0) {
    throw fail("validation_error", "scopes must name at least one scope (omit it for the defaults)", {
      field: "scopes",
      allowed: [...SCOPES],
    });
  }
  for (const [i, value] of input.entries()) {
    if (!isScope(value)) {
      // the house form of a schema 400, the value cut to ECHO_MAX_CHARS (review R2-3: it was echoed whole, twice)
      const legacy = typeof value === "string" && LEGACY_SCOPES.includes(value);
      throw fail(
        "validation_error",
        `Invalid body field 'scopes.${i}': must be one of ${quoted(SCOPES)} (got ${preview(value)})` +
          (legacy ? "; the agent:* scope names are retired" : ""),
        { location: "body", field: `scopes.${i}`, scope: typeof value === "string" ? cutEcho(value) : preview(value), allowed: [...SCOPES] },
      );
    }
  }
  const requested = new Set<string>(input as string[]);
  return SCOPES.filter((s) => requested.has(s));
}

// ----------------------------------------------------------------------------------------------- tiers

export const TIERS = ["STARTER", "GROWTH", "PRO", "ENTERPRISE", "SANDBOX"] as const;
export type Tier = (typeof TIERS)[number];
/** The paid/plan tiers in ascending order; SANDBOX sits outside the ladder. */
export const PLAN_TIERS: readonly Tier[] = ["STARTER", "GROWTH", "PRO", "ENTERPRISE"];
export const DEFAULT_TIER: Tier = "STARTER";
export const SANDBOX_LIFETIME_MS = 24 * 60 * 60 * 1000;

export function isTier(value: unknown): value is Tier {
  return typeof value === "string" && (TIERS as readonly string[]).includes(value);
}

/** Accepts a tier name in any case; FREE is the spec's alias of STARTER. Omitted → STARTER. */
export function normalizeTier(input: unknown): Tier {
  if (input === undefined || input === null) return DEFAULT_TIER;
  if (typeof input === "string") {
    const upper = input.trim().toUpperCase();
    if (upper === "FREE") return "STARTER";
    if (isTier(upper)) return upper;
  }
  throw fail("validation_error", `Invalid body field 'tier': must be one of ${quoted([...TIERS, "FREE"])} (got ${preview(input)})`, {
    location: "body",
    field: "tier",
    allowed: [...TIERS, "FREE"],
  });
}

/** When a key of this tier stops working: SANDBOX keys 24 h after creation, the others never (null). */
export function keyExpiresAt(tier: Tier, createdAt: Date): Date | null {
  return tier === "SANDBOX" ? new Date(createdAt.getTime() + SANDBOX_LIFETIME_MS) : null;
}

// -------------------------------------------------------------------------------------- feature tiers

export const FEATURES = [
  "price_history",
  "sustainability",
  "recommendations",
  "negotiate",
  "shipping_estimate",
  "search_by_image",
  "apply_coupon",
  "return_policy",
] as const;
export type Feature = (typeof FEATURES)[number];

/**
 * Which key tiers include which feature. Principles:
 * - facts an agent needs to buy responsibly (shipping cost, return policy) and coupons are in every plan;
 * - analytical enrichments (price history, sustainability, recommendations) start at GROWTH;
 * - negotiate (BETA, sends bids to merchants) and search_by_image (reserved, compute-heavy) start at PRO;
 * - ENTERPRISE has everything;
 * - SANDBOX is for evaluation: every read-only feature, nothing that writes (no coupon, no negotiation) and not
 *   the reserved image search.
 */
export const FEATURE_TIERS: Readonly<Record<Feature, readonly Tier[]>> = {
  shipping_estimate: ["STARTER", "GROWTH", "PRO", "ENTERPRISE", "SANDBOX"],
  return_policy: ["STARTER", "GROWTH", "PRO", "ENTERPRISE", "SANDBOX"],
  apply_coupon: ["STARTER", "GROWTH", "PRO", "ENTERPRISE"],
  price_history: ["GROWTH", "PRO", "ENTERPRISE", "SANDBOX"],
  sustainability: ["GROWTH", "PRO", "ENTERPRISE", "SANDBOX"],
  recommendations: ["GROWTH", "PRO", "ENTERPRISE", "SANDBOX"],
  negotiate: ["PRO", "ENTERPRISE"],
  search_by_image: ["PRO", "ENTERPRISE"],
};

export function tierHasFeature(tier: Tier, feature: Feature): boolean {
  return FEATURE_TIERS[feature].includes(tier);
}

export function featuresOfTier(tier: Tier): Feature[] {
  return FEATURES.filter((f) => tierHasFeature(tier, f));
}

/**
 * Whether a key has a feature: its tier must include it, and so must its account's plan when the key carries one
 * (review R2-1: a SANDBOX key is minted on any plan, and without this it had GROWTH's features on a STARTER plan).
 * `plan` null or absent: no cap (an operator's key, an OAuth caller).
 */
export function keyHasFeature(tier: Tier, plan: Tier | null | undefined, feature: Feature): boolean {
  return tierHasFeature(tier, feature) && (plan == null || tierHasFeature(plan, feature));
}

/** The cheapest plan tier that includes a feature (for "upgrade to X" messages). */
export function lowestTierWith(feature: Feature): Tier {
  return PLAN_TIERS.find((t) => tierHasFeature(t, feature)) ?? "ENTERPRISE";
}

// ------------------------------------------------------------------------------------ route access table

export type HttpMethod = "GET" | "POST" | "PUT";

export interface RouteRule {
  method: HttpMethod;
  /** Path below `/api/v1/agent`, with `:param` segments. */
  path: string;
  /** The key needs at least ONE of these scopes. The first is the one named in errors. */
  scopes: readonly Scope[];
  feature?: Feature;
  /** SANDBOX keys get 403 sandbox_not_allowed whatever their scopes. */
  sandboxRefused: boolean;
}

export const AGENT_API_BASE = "/api/v1/agent";

const r = (
  method: HttpMethod,
  path: string,
  scopes: readonly Scope[],
  opts: { feature?: Feature; sandboxRefused?: boolean } = {},
): RouteRule => ({
  method,
  path,
  scopes,
  ...(opts.feature ? { feature: opts.feature } : {}),
  sandboxRefused: opts.sandboxRefused ?? false,
});

/**
 * Every keyed route under /api/v1/agent. Catalog reads need `search`; everything that creates or touches a cart
 * needs `cart`; anything that moves money or holds a payment instrument (checkout, refund, wallet) needs
 * `checkout`; those transactional routes are refused for SANDBOX keys. Reading an order is `orders:read`, but a key
 * with `checkout` may also read the orders it placed (an agent that can buy must be able to follow up).
 */
/**
 * The scopes of a delegated checkout through the protocol bridge (ACP, UCP, AP2; REST routes and the MCP `ucp_*`
 * checkout tools): `checkout` first (the one named in a refusal), or the bridge-only `checkout:delegate`.
 */
export const BRIDGE_SCOPES: readonly Scope[] = ["checkout", "checkout:delegate"];

export const ROUTE_RULES: readonly RouteRule[] = [
  r("POST", "/search", ["search"]),
  r("GET", "/products/:id", ["search"]),
  r("GET", "/availability/:id", ["search"]),
  r("GET", "/products/:id/price-history", ["search"], { feature: "price_history" }),
  r("GET", "/products/:id/sustainability", ["search"], { feature: "sustainability" }),
  r("POST", "/compare", ["compare"]),
  r("POST", "/recommendations", ["search"], { feature: "recommendations" }),
  r("POST", "/negotiate", ["cart"], { feature: "negotiate", sandboxRefused: true }),
  r("POST", "/shipping-estimate", ["search"], { feature: "shipping_estimate" }),
  r("POST", "/search-by-image", ["search"], { feature: "search_by_image" }),
  r("POST", "/cart", ["cart"], { sandboxRefused: true }),
  r("GET", "/cart/:id", ["cart"], { sandboxRefused: true }),
  r("POST", "/apply-coupon", ["cart"], { feature: "apply_coupon", sandboxRefused: true }),
  r("POST", "/cart/apply-coupon", ["cart"], { feature: "apply_coupon", sandboxRefused: true }),
  // Direct checkout (and x402, chosen by the body's payment_rail) is `checkout` only: admission runs before the body
  // is read, and `checkout:delegate` is the bridge-only grant (docs/access.md, "checkout:delegate").
  r("POST", "/checkout", ["checkout"], { sandboxRefused: true }),
  r("POST", "/checkout/preview", ["checkout"], { sandboxRefused: true }),
  r("POST", "/checkout/:sessionId/cancel", ["checkout"], { sandboxRefused: true }),
  r("POST", "/orders/:orderId/cancel", ["checkout"], { sandboxRefused: true }),
  r("GET", "/orders/:id", ["orders:read", "checkout"], { sandboxRefused: true }),
  r("POST", "/orders/:orderId/refund", ["checkout"], { sandboxRefused: true }),
  r("POST", "/wallet/provision", ["checkout"], { sandboxRefused: true }),
  r("GET", "/wallet", ["checkout"], { sandboxRefused: true }),
  // Protocol bridge (gateway/bridge): other protocols' checkouts, transactional like /checkout. A bridge path is a
  // delegated checkout by its route alone, so it takes `checkout` or the bridge-only `checkout:delegate` (reads of a
  // session included: a key that may open one must be able to follow it).
  ...(["/acp/checkout_sessions", "/acp/checkout_sessions/:id", "/acp/checkout_sessions/:id/complete", "/acp/checkout_sessions/:id/cancel",
    "/ucp/checkout-sessions", "/ucp/checkout-sessions/:id/complete", "/ucp/checkout-sessions/:id/cancel", "/ap2/payment-mandates"] as const).map((p) =>
    r("POST", p, BRIDGE_SCOPES, { sandboxRefused: true }),
  ),
  // UCP's update is a PUT (its REST binding); transactional like the bridge's POSTs.
  r("PUT", "/ucp/checkout-sessions/:id", BRIDGE_SCOPES, { sandboxRefused: true }),
  r("GET", "/acp/checkout_sessions/:id", BRIDGE_SCOPES, { sandboxRefused: true }),
  r("GET", "/ucp/checkout-sessions/:id", BRIDGE_SCOPES, { sandboxRefused: true }),
  r("GET", "/merchants/:slug", ["merchants:read"]),
  r("GET", "/merchants/:slug/protocols", ["protocols:discover"]),
  r("GET", "/merchants/:slug/return-policy", ["merchants:read"], { feature: "return_policy" }),
  r("GET", "/merchants/:slug/trust-explanation", ["merchants:read"]),
];

/** Routes under /api/v1/agent that need no key at all. */
export const PUBLIC_AGENT_ROUTES: readonly { method: HttpMethod; path: string }[] = [{ method: "GET", path: "/docs" }];

function splitPath(path: string): string[] {
  return path.split("/").filter((s) => s.length > 0);
}

function stripToAgentPath(path: string): string {
  let p = path.split(/[?#]/, 1)[0] ?? "";
  if (p.startsWith(AGENT_API_BASE + "/") || p === AGENT_API_BASE) p = p.slice(AGENT_API_BASE.length);
  return p;
}

interface CompiledRule {
  segments: readonly string[];
  /** Literal (non-parameter) segments: more literal segments win when two rules match. */
  literals: number;
  rule: RouteRule;
}

/**
 * ROUTE_RULES compiled once per method, most literal first, so a lookup splits the request path once and
 * compares segments without allocating (this runs on every agent request).
 */
const COMPILED: ReadonlyMap<string, readonly CompiledRule[]> = (() => {
  const byMethod = new Map<string, CompiledRule[]>();
  for (const rule of ROUTE_RULES) {
    const segments = splitPath(rule.path);
    const list = byMethod.get(rule.method) ?? [];
    list.push({ segments, literals: segments.filter((s) => !s.startsWith(":")).length, rule });
    byMethod.set(rule.method, list);
  }
  for (const list of byMethod.values()) list.sort((a, b) => b.literals - a.literals);
  return byMethod;
})();

function matchesSegments(want: readonly string[], got: readonly string[]): boolean {
  if (want.length !== got.length) return false;
  for (let i = 0; i < want.length; i++) {
    const seg = want[i]!;
    if (seg.charCodeAt(0) === 58 /* ":" */ ? got[i]!.length === 0 : seg !== got[i]) return false;
  }
  return true;
}

/**
 * The rule for a request, or undefined. `path` may be the full path (`/api/v1/agent/cart/…`) or the part below
 * the base; a query string is ignored; HEAD finds the GET rule. Literal segments win over parameters, whatever the
 * order of ROUTE_RULES.
 */
export function findRouteRule(method: string, path: string): RouteRule | undefined {
  const upper = method.toUpperCase();
  // RFC 9110 §9.3.2: HEAD is GET without the body, so it needs exactly what GET needs (scope, tier, sandbox)
  const list = COMPILED.get(upper === "HEAD" ? "GET" : upper);
  if (!list) return undefined;
  const got = splitPath(stripToAgentPath(path));
  for (const c of list) if (matchesSegments(c.segments, got)) return c.rule;
  return undefined;
}

// ------------------------------------------------------------------------------------------------ checks

export interface KeyAccess {
  scopes: readonly string[];
  tier: Tier;
  /** The account's plan the key is capped at (agent_keys.plan); null or absent: no cap. */
  plan?: Tier | null;
}

export interface RouteRequest {
  method: string;
  path: string;
}

/**
 * Throws unless the key may call the route. Order of checks, most permanent first:
 * 1. unknown route → route_not_found (fail closed: a route missing from the table is never open);
 * 2. SANDBOX on a transactional route → sandbox_not_allowed (no scope can fix that);
 * 3. missing scope → forbidden with details.scope (and acceptedScopes);
 * 4. tier lacks the feature → feature_not_in_tier with details.feature and the cheapest tier that has it;
 *    the tier has it but the key's plan does not (a SANDBOX key) → the same, with details.planTier.
 */
export function checkAccess(key: KeyAccess, route: RouteRequest | RouteRule): RouteRule {
  const rule = "scopes" in route ? route : findRouteRule(route.method, route.path);
  if (!rule) {
    const shown = "scopes" in route ? route.path : `${route.method} ${route.path}`;
    throw fail("route_not_found", `no agent route ${shown}`);
  }
  // the route as the docs and the OpenAPI document write it ({orderId}), not the router's form (:orderId)
  const where = `${rule.method} ${AGENT_API_BASE}${rule.path.replace(/:([A-Za-z_]\w*)/g, "{$1}")}`;
  if (rule.sandboxRefused && key.tier === "SANDBOX") {
    throw fail("sandbox_not_allowed", `SANDBOX keys cannot call ${where}. ${SANDBOX_NEXT_STEP}`, { tier: key.tier });
  }
  const accepted = rule.scopes;
  if (!accepted.some((s) => key.scopes.includes(s))) {
    throw fail("forbidden", `the key lacks the "${accepted[0]}" scope needed for ${where}`, {
      scope: accepted[0],
      acceptedScopes: [...accepted],
    });
  }
  if (rule.feature && !tierHasFeature(key.tier, rule.feature)) {
    throw fail("feature_not_in_tier", `the ${key.tier} tier does not include ${rule.feature}. ${featureTierNextStep(lowestTierWith(rule.feature))}`, {
      feature: rule.feature,
      tier: key.tier,
      requiredTier: lowestTierWith(rule.feature),
    });
  }
  if (rule.feature && !keyHasFeature(key.tier, key.plan, rule.feature)) throw planLacksFeature(key.tier, key.plan!, rule.feature);
  return rule;
}

/** 403 feature_not_in_tier for a key whose tier has the feature but whose account's plan does not. */
export function planLacksFeature(tier: Tier, plan: Tier, feature: Feature) {
  return fail("feature_not_in_tier", `the ${tier} key of an account on the ${plan} plan does not include ${feature}. ${planFeatureNextStep(lowestTierWith(feature))}`, {
    feature,
    tier,
    planTier: plan,
    requiredTier: lowestTierWith(feature),
  });
}

export interface KeyLifecycle {
  expiresAt: Date | null;
  revokedAt: Date | null;
}

/** A revoked or expired key is as good as no key: 401 unauthorized (the message says which, for the developer). */
export function assertKeyActive(key: KeyLifecycle, now: Date): void {
  if (key.revokedAt && key.revokedAt.getTime() <= now.getTime()) {
    throw fail("unauthorized", "the API key has been revoked", { reason: "revoked" });
  }
  if (key.expiresAt && key.expiresAt.getTime() <= now.getTime()) {
    throw fail("unauthorized", "the API key has expired", { reason: "expired" });
  }
}
