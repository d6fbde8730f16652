import { describe, expect, test } from "bun:test";
import {
  assertKeyActive,
  checkAccess,
  DEFAULT_SCOPES,
  FEATURE_TIERS,
  FEATURES,
  featuresOfTier,
  findRouteRule,
  keyExpiresAt,
  normalizeTier,
  ROUTE_RULES,
  SCOPES,
  tierHasFeature,
  TIERS,
  validateScopes,
  type Feature,
  type KeyAccess,
  type Scope,
  type Tier,
} from "../../actors/agent/access.ts";
import { ActorError } from "../../actors/runtime/errors.ts";

function errorOf(fn: () => unknown): ActorError {
  try {
    fn();
  } catch (e) {
    if (e instanceof ActorError) return e;
    throw e;
  }
  throw new Error("expected an ActorError, nothing was thrown");
}

describe("scopes", () => {
  test("a key created without scopes gets search, compare, cart and merchants:read", () => {
    expect(validateScopes(undefined)).toEqual(["search", "compare", "cart", "merchants:read"]);
    expect(validateScopes(null)).toEqual([...DEFAULT_SCOPES]);
  });

  test("every listed scope is accepted on its own", () => {
    for (const s of SCOPES) expect(validateScopes([s])).toEqual([s]);
  });

  test("the requested scopes are exactly the key's scopes, deduplicated in canonical order", () => {
    expect(validateScopes(["checkout", "search", "search"])).toEqual(["search", "checkout"]);
    expect(validateScopes([...SCOPES].reverse())).toEqual([...SCOPES]);
  });

  test.each(["agent:read", "agent:cart", "agent:checkout"])("the retired scope %s is refused with 400", (s) => {
    const e = errorOf(() => validateScopes(["search", s]));
    expect(e.code).toBe("validation_error");
    expect(e.http).toBe(400);
    expect(e.message).toContain(s);
    expect(e.details?.scope).toBe(s);
  });

  test.each(["admin", "Search", "orders", "checkout:*", "", " search"])("the unknown scope %p is refused, named", (s) => {
    const e = errorOf(() => validateScopes([s]));
    expect(e.code).toBe("validation_error");
    expect(e.details?.scope).toBe(s);
  });

  test("a non-string scope is refused", () => {
    expect(errorOf(() => validateScopes([42])).code).toBe("validation_error");
  });

  test("scopes that are not an array are refused", () => {
    expect(errorOf(() => validateScopes("search")).code).toBe("validation_error");
  });

  test("an empty scope list is refused", () => {
    expect(errorOf(() => validateScopes([])).code).toBe("validation_error");
  });
});

describe("tiers", () => {
  test("FREE is an alias of STARTER", () => {
    expect(normalizeTier("FREE")).toBe("STARTER");
    expect(normalizeTier("free")).toBe("STARTER");
  });

  test("every tier name is accepted in any case, and omitted means STARTER", () => {
    for (const t of TIERS) {
      expect(normalizeTier(t)).toBe(t);
      expect(normalizeTier(t.toLowerCase())).toBe(t);
    }
    expect(normalizeTier(undefined)).toBe("STARTER");
  });

  test("an unknown tier is refused with 400", () => {
    expect(errorOf(() => normalizeTier("PLATINUM")).code).toBe("validation_error");
    expect(errorOf(() => normalizeTier(3)).code).toBe("validation_error");
  });

  test("a SANDBOX key expires 24 hours after creation and the others never", () => {
    const created = new Date("2025-03-01T10:00:00Z");
    expect(keyExpiresAt("SANDBOX", created)?.toISOString()).toBe("2025-03-02T10:00:00.000Z");
    for (const t of ["STARTER", "GROWTH", "PRO", "ENTERPRISE"] as const) expect(keyExpiresAt(t, created)).toBeNull();
  });

  test("an expired or revoked key is unauthorized", () => {
    const now = new Date("2025-03-02T10:00:00Z");
    expect(() => assertKeyActive({ expiresAt: new Date("2025-03-02T10:00:01Z"), revokedAt: null }, now)).not.toThrow();
    expect(errorOf(() => assertKeyActive({ expiresAt: now, revokedAt: null }, now)).code).toBe("unauthorized");
    const revoked = errorOf(() => assertKeyActive({ expiresAt: null, revokedAt: new Date("2025-01-01") }, now));
    expect(revoked.code).toBe("unauthorized");
    expect(revoked.details?.reason).toBe("revoked");
  });
});

describe("feature tiers", () => {
  const table: Record<Feature, Tier[]> = {
    shipping_estimate: ["STARTER", "GROWTH", "PRO", "ENTERPRISE", "SANDBOX"],
    return_policy: ["STARTER", "GROWTH", "PRO", "ENTERPRISE", "SANDBOX"],
    apply_coupon: ["STARTER", "GROWTH", "PRO", "ENTERPRISE"],
    price_history: ["GROWTH", "PRO", "ENTERPRISE", "SANDBOX"],
    sustainability: ["GROWTH", "PRO", "ENTERPRISE", "SANDBOX"],
    recommendations: ["GROWTH", "PRO", "ENTERPRISE", "SANDBOX"],
    negotiate: ["PRO", "ENTERPRISE"],
    search_by_image: ["PRO", "ENTERPRISE"],
  };

  test("the table names every feature", () => {
    expect(Object.keys(FEATURE_TIERS).sort()).toEqual([...FEATURES].sort());
  });

  for (const feature of FEATURES) {
    for (const tier of TIERS) {
      const has = table[feature].includes(tier);
      test(`${tier} ${has ? "includes" : "does not include"} ${feature}`, () => {
        expect(tierHasFeature(tier, feature)).toBe(has);
      });
    }
  }

  test("ENTERPRISE includes every feature", () => {
    expect(featuresOfTier("ENTERPRISE")).toEqual([...FEATURES]);
  });

  test("each plan tier includes everything the tier below it has", () => {
    const ladder: Tier[] = ["STARTER", "GROWTH", "PRO", "ENTERPRISE"];
    for (let i = 1; i < ladder.length; i++) {
      for (const f of featuresOfTier(ladder[i - 1]!)) expect(tierHasFeature(ladder[i]!, f)).toBe(true);
    }
  });

  test("SANDBOX gets no feature that writes", () => {
    expect(tierHasFeature("SANDBOX", "apply_coupon")).toBe(false);
    expect(tierHasFeature("SANDBOX", "negotiate")).toBe(false);
  });
});

describe("route access", () => {
  type Row = [method: string, path: string, scopes: Scope[], feature: Feature | null, sandboxRefused: boolean];
  const rows: Row[] = [
    ["POST", "/search", ["search"], null, false],
    ["GET", "/products/1b7c", ["search"], null, false],
    ["GET", "/availability/sku-1", ["search"], null, false],
    ["GET", "/products/1b7c/price-history", ["search"], "price_history", false],
    ["GET", "/products/1b7c/sustainability", ["search"], "sustainability", false],
    ["POST", "/compare", ["compare"], null, false],
    ["POST", "/recommendations", ["search"], "recommendations", false],
    ["POST", "/negotiate", ["cart"], "negotiate", true],
    ["POST", "/shipping-estimate", ["search"], "shipping_estimate", false],
    ["POST", "/search-by-image", ["search"], "search_by_image", false],
    ["POST", "/cart", ["cart"], null, true],
    ["GET", "/cart/3f2a", ["cart"], null, true],
    ["POST", "/apply-coupon", ["cart"], "apply_coupon", true],
    ["POST", "/cart/apply-coupon", ["cart"], "apply_coupon", true],
    ["POST", "/checkout", ["checkout"], null, true],
    ["GET", "/orders/9a1e", ["orders:read", "checkout"], null, true],
    ["POST", "/orders/9a1e/refund", ["checkout"], null, true],
    ["POST", "/wallet/provision", ["checkout"], null, true],
    ["GET", "/wallet", ["checkout"], null, true],
    ["POST", "/checkout/preview", ["checkout"], null, true],
    ["POST", "/checkout/cs_1/cancel", ["checkout"], null, true],
    ["POST", "/orders/9a1e/cancel", ["checkout"], null, true],
    ["POST", "/acp/checkout_sessions", ["checkout", "checkout:delegate"], null, true],
    ["POST", "/acp/checkout_sessions/cs_1", ["checkout", "checkout:delegate"], null, true],
    ["POST", "/acp/checkout_sessions/cs_1/complete", ["checkout", "checkout:delegate"], null, true],
    ["POST", "/acp/checkout_sessions/cs_1/cancel", ["checkout", "checkout:delegate"], null, true],
    ["GET", "/acp/checkout_sessions/cs_1", ["checkout", "checkout:delegate"], null, true],
    ["POST", "/ucp/checkout-sessions", ["checkout", "checkout:delegate"], null, true],
    ["POST", "/ucp/checkout-sessions/cs_1/complete", ["checkout", "checkout:delegate"], null, true],
    ["POST", "/ucp/checkout-sessions/cs_1/cancel", ["checkout", "checkout:delegate"], null, true],
    ["GET", "/ucp/checkout-sessions/cs_1", ["checkout", "checkout:delegate"], null, true],
    ["PUT", "/ucp/checkout-sessions/cs_1", ["checkout", "checkout:delegate"], null, true],
    ["POST", "/ap2/payment-mandates", ["checkout", "checkout:delegate"], null, true],
    ["GET", "/merchants/demo-store", ["merchants:read"], null, false],
    ["GET", "/merchants/demo-store/protocols", ["protocols:discover"], null, false],
    ["GET", "/merchants/demo-store/return-policy", ["merchants:read"], "return_policy", false],
    ["GET", "/merchants/demo-store/trust-explanation", ["merchants:read"], null, false],
  ];

  test("the table has one rule per agent route", () => {
    expect(ROUTE_RULES).toHaveLength(rows.length);
    for (const [method, path] of rows) expect(findRouteRule(method, path)).toBeDefined();
  });

  for (const [method, path, scopes, feature, sandboxRefused] of rows) {
    const full = `/api/v1/agent${path}`;
    describe(`${method} ${full}`, () => {
      test(`needs ${scopes.join(" or ")}${feature ? ` and the ${feature} feature` : ""}`, () => {
        const rule = findRouteRule(method, full)!;
        expect(rule.scopes).toEqual(scopes);
        expect(rule.feature ?? null).toBe(feature);
        expect(rule.sandboxRefused).toBe(sandboxRefused);
      });

      test("an ENTERPRISE key holding each accepted scope alone gets through", () => {
        for (const s of scopes) expect(() => checkAccess({ scopes: [s], tier: "ENTERPRISE" }, { method, path: full })).not.toThrow();
      });

      test("a key with every other scope is forbidden, naming the scope", () => {
        const others = SCOPES.filter((s) => !scopes.includes(s));
        const e = errorOf(() => checkAccess({ scopes: others, tier: "ENTERPRISE" }, { method, path: full }));
        expect(e.code).toBe("forbidden");
        expect(e.http).toBe(403);
        expect(e.details?.scope).toBe(scopes[0]);
      });

      if (feature) {
        const without = TIERS.find((t) => t !== "SANDBOX" && !tierHasFeature(t, feature));
        if (without) {
          test(`a ${without} key gets feature_not_in_tier`, () => {
            const e = errorOf(() => checkAccess({ scopes: [...SCOPES], tier: without }, { method, path: full }));
            expect(e.code).toBe("feature_not_in_tier");
            expect(e.http).toBe(403);
            expect(e.details?.feature).toBe(feature);
          });
        }
      }

      const sandbox: KeyAccess = { scopes: [...SCOPES], tier: "SANDBOX" };
      if (sandboxRefused) {
        test("a SANDBOX key is refused with sandbox_not_allowed even with every scope", () => {
          const e = errorOf(() => checkAccess(sandbox, { method, path: full }));
          expect(e.code).toBe("sandbox_not_allowed");
          expect(e.http).toBe(403);
        });
      } else if (!feature || tierHasFeature("SANDBOX", feature)) {
        test("a SANDBOX key with the scope gets through", () => {
          expect(() => checkAccess(sandbox, { method, path: full })).not.toThrow();
        });
      } else {
        test("a SANDBOX key is refused for the feature", () => {
          expect(errorOf(() => checkAccess(sandbox, { method, path: full })).code).toBe("feature_not_in_tier");
        });
      }
    });
  }

  test("a default key can search, compare, read merchants and create carts, but not check out", () => {
    const key: KeyAccess = { scopes: validateScopes(undefined), tier: "STARTER" };
    for (const [method, path] of [["POST", "/search"], ["POST", "/compare"], ["POST", "/cart"], ["GET", "/merchants/x"]]) {
      expect(() => checkAccess(key, { method: method!, path: path! })).not.toThrow();
    }
    expect(errorOf(() => checkAccess(key, { method: "POST", path: "/checkout" })).details?.scope).toBe("checkout");
    expect(errorOf(() => checkAccess(key, { method: "GET", path: "/orders/1" })).details?.scope).toBe("orders:read");
  });

  test("checkout:delegate alone opens every bridge route and never the direct checkout", () => {
    const key: KeyAccess = { scopes: ["checkout:delegate"], tier: "PRO" };
    for (const [method, path] of [["POST", "/acp/checkout_sessions"], ["PUT", "/ucp/checkout-sessions/cs_1"], ["GET", "/acp/checkout_sessions/cs_1"], ["POST", "/ap2/payment-mandates"]]) {
      expect(() => checkAccess(key, { method: method!, path: path! })).not.toThrow();
    }
    expect(errorOf(() => checkAccess(key, { method: "POST", path: "/checkout" })).details).toEqual({ scope: "checkout", acceptedScopes: ["checkout"] });
  });

  test("a query string does not change the matched rule", () => {
    expect(findRouteRule("GET", "/api/v1/agent/products/1/price-history?days=60")?.feature).toBe("price_history");
  });

  test("an unknown route or method is refused, never open", () => {
    const key: KeyAccess = { scopes: [...SCOPES], tier: "ENTERPRISE" };
    expect(errorOf(() => checkAccess(key, { method: "GET", path: "/api/v1/agent/admin" })).code).toBe("route_not_found");
    expect(errorOf(() => checkAccess(key, { method: "DELETE", path: "/api/v1/agent/cart" })).code).toBe("route_not_found");
    expect(errorOf(() => checkAccess(key, { method: "GET", path: "/api/v1/agent/products/1/price-history/x" })).code).toBe(
      "route_not_found",
    );
  });

  test("the SANDBOX refusal is reported before a missing scope", () => {
    expect(errorOf(() => checkAccess({ scopes: ["search"], tier: "SANDBOX" }, { method: "POST", path: "/cart" })).code).toBe(
      "sandbox_not_allowed",
    );
  });

  test("a missing scope is reported before a missing feature", () => {
    const e = errorOf(() => checkAccess({ scopes: ["compare"], tier: "STARTER" }, { method: "POST", path: "/recommendations" }));
    expect(e.code).toBe("forbidden");
  });
});
