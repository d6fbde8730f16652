import { beforeAll, describe, expect, test } from "bun:test";
import { createPublicKey, verify as nodeVerify } from "node:crypto";
import { readStoreTrust } from "../../actors/trust/index.ts";
import type { Config } from "../../infra/config.ts";
import { ADMIN, createKey, login, merchantLogin, type TestKey } from "../helpers/agents.ts";
import { useServer } from "../helpers/server.ts";

const srv = useServer();
let key: TestKey;
let admin: string;

/**
 * A verifier that shares no code with jose: parses the compact JWS by hand, finds the key by kid in the JWKS and
 * checks the Ed25519 signature with node:crypto. Returns the payload, or null when anything does not hold.
 */
function independentVerify(jws: string, jwks: { keys: { kid?: string; kty?: string; crv?: string; x?: string }[] }, nowSeconds: number): Record<string, unknown> | null {
  const parts = jws.split(".");
  if (parts.length !== 3) return null;
  let header: { alg?: string; kid?: string };
  let payload: Record<string, unknown>;
  try {
    header = JSON.parse(Buffer.from(parts[0], "base64url").toString("utf8"));
    payload = JSON.parse(Buffer.from(parts[1], "base64url").toString("utf8"));
  } catch {
    return null;
  }
  if (header.alg !== "EdDSA") return null;
  const jwk = jwks.keys.find((k) => k.kid === header.kid);
  if (!jwk || jwk.kty !== "OKP" || jwk.crv !== "Ed25519" || !jwk.x) return null;
  const pub = createPublicKey({ key: { kty: "OKP", crv: "Ed25519", x: jwk.x }, format: "jwk" });
  const sig = Buffer.from(parts[2], "base64url");
  // base64url decoding ignores junk characters: re-encode so a tampered signature string cannot decode to the original
  if (sig.toString("base64url") !== parts[2]) return null;
  if (!nodeVerify(null, Buffer.from(`${parts[0]}.${parts[1]}`, "ascii"), pub, sig)) return null;
  if (typeof payload.exp !== "number" || payload.exp <= nowSeconds) return null;
  return payload;
}

function flip(s: string, index: number): string {
  return s.slice(0, index) + (s[index] === "A" ? "B" : "A") + s.slice(index + 1);
}

const flags = (v41: boolean, coherent: boolean) => {
  const c = srv.running.services.config as Config;
  c.TRUST_SCORE_PUBLIC_V41_ENABLED = v41;
  c.TRUST_SCORE_PUBLIC_COHERENT_ENGINE_ENABLED = coherent;
};

const auth = (token: string) => ({ authorization: `Bearer ${token}` });

beforeAll(async () => {
  admin = await login(srv, ADMIN);
  key = await createKey(srv, { token: admin, scopes: ["merchants:read", "search"] });
}, 60_000);

describe("the methodology document", () => {
  test("is version 4.1.0 with both thresholds at top level, tiers, bands, statuses and the deprecated ladder", async () => {
    const r = await srv.json("/api/v1/trust/methodology");
    expect(r.status).toBe(200);
    expect(r.body.success).toBe(true);
    const d = r.body.data;
    expect(d.version).toBe("4.1.0");
    expect(d.scale).toEqual({ min: 0, max: 100 });
    expect(d.suspension_threshold).toBe(0.2);
    expect(d.agent_threshold).toBe(0.7);
    expect(d.tiers.map((t: { tier: string }) => t.tier)).toEqual(["insufficient_data", "cold_start", "human_established", "agent_verified_thin", "agent_verified"]);
    expect(d.display_bands.map((b: { band: string }) => b.band)).toEqual(["RESTRICTED", "CAUTION", "ACCEPTABLE", "GOOD", "EXCELLENT"]);
    expect(d.operational_statuses.map((s: { status: string }) => s.status)).toEqual(["suspended", "hidden", "deprioritized", "active"]);
    expect(d.legacy_ladder.deprecated).toBe(true);
    expect(d.v2.components).toHaveLength(12);
    expect(d.qtsp.enabled).toBe(false);
  });

  test("keeps the nested v41_methodology block only as a deprecated alias of the top-level fields", async () => {
    const r = await srv.json("/api/v1/trust/methodology");
    const { v41_methodology, ...top } = r.body.data;
    const { deprecated, ...alias } = v41_methodology;
    expect(deprecated).toBe(true);
    expect(alias).toEqual(top);
    expect(r.body.meta.deprecated.v41_methodology).toContain("alias");
  });
});

describe("a store's signed trust score", () => {
  test("carries score, scale, engines, confidence level, tier, components, a JWS, signed_at and the next refresh", async () => {
    flags(true, true);
    const r = await srv.json("/api/v1/stores/demo-store/trust-score");
    expect(r.status).toBe(200);
    expect(r.body.success).toBe(true);
    const d = r.body.data;
    expect(d.store_slug).toBe("demo-store");
    expect(d.scale).toEqual({ min: 0, max: 100 });
    expect(d.engines).toEqual({ overall: "v41", breakdown: "v41" });
    expect(d.confidence_level).toBe("agent_verified");
    expect(d.tier).toBe("agent_verified");
    expect(d.score).toBeGreaterThanOrEqual(70);
    expect(d.score_0to1).toBeCloseTo(d.score / 100, 4);
    expect(d.components.engine).toBe("v41");
    expect(d.components.dimensions.map((x: { dimension: string }) => x.dimension)).toEqual(["merchantReliabilityBase", "agenticReadiness", "agenticEvidence"]);
    expect(d.methodology_version).toBe("4.1.0");
    expect(d.agent_checkout_allowed).toBe(true);
    expect(Date.parse(d.signed_at)).toBeGreaterThan(0);
    expect(Date.parse(d.next_refresh_at)).toBeGreaterThan(Date.parse(d.computed_at));
    expect(d.jws.split(".")).toHaveLength(3);
  });

  test("verifies against the published JWKS with an independent node:crypto verifier, and a one-character tamper fails", async () => {
    flags(true, true);
    const score = (await srv.json("/api/v1/stores/demo-store/trust-score")).body.data;
    const jwksRes = await srv.json("/.well-known/jwks.json");
    expect(jwksRes.status).toBe(200);
    const jwks = jwksRes.body;
    expect(jwks.keys.some((k: { kid: string }) => k.kid === score.kid)).toBe(true);
    for (const k of jwks.keys) expect(k.d).toBeUndefined();

    const now = Math.floor(Date.now() / 1000);
    const payload = independentVerify(score.jws, jwks, now);
    expect(payload).not.toBeNull();
    expect(payload).toMatchObject({
      store_slug: "demo-store",
      sub: "demo-store",
      score: score.score,
      scale: "0-100",
      engine: "v41",
      methodology_version: "4.1.0",
      signed_at: score.signed_at,
    });
    expect(payload!.exp).toBe(Date.parse(score.expires_at) / 1000);

    const [h, p, s] = score.jws.split(".");
    expect(independentVerify(`${h}.${flip(p, 10)}.${s}`, jwks, now)).toBeNull();
    expect(independentVerify(`${h}.${p}.${flip(s, 5)}`, jwks, now)).toBeNull();
    expect(independentVerify(`${flip(h, 3)}.${p}.${s}`, jwks, now)).toBeNull();
  });

  test("the JWKS publishes the trust keys only, each under its own kid (the JWT key is at the OAuth jwks_uri)", async () => {
    const jwks = (await srv.json("/.well-known/jwks.json")).body;
    const kids = new Set(jwks.keys.map((k: { kid: string }) => k.kid));
    expect(kids.size).toBe(jwks.keys.length);
    expect(jwks.keys.length).toBeGreaterThanOrEqual(1);
    for (const k of jwks.keys) expect(k).toMatchObject({ kty: "OKP", crv: "Ed25519", alg: "EdDSA", use: "sig" });
  });

  test("an unknown store is 404 store_not_found", async () => {
    const r = await srv.json("/api/v1/stores/no-such-store/trust-score");
    expect(r.status).toBe(404);
    expect(r.body).toMatchObject({ success: false, code: "store_not_found" });
  });
});

describe("engine selection by flags, per request", () => {
  test("both flags on: the number and the breakdown are v4.1", async () => {
    flags(true, true);
    const d = (await srv.json("/api/v1/stores/maple-pine-home/trust-score")).body.data;
    expect(d.engines).toEqual({ overall: "v41", breakdown: "v41" });
    expect(d.model_version).toBe("4.1.0");
    expect(d.components.engine).toBe("v41");
  });

  test("V41 on and COHERENT off: a v4.1 number with the 12 v2 components", async () => {
    flags(true, false);
    const d = (await srv.json("/api/v1/stores/maple-pine-home/trust-score")).body.data;
    expect(d.engines).toEqual({ overall: "v41", breakdown: "v2" });
    expect(d.components.engine).toBe("v2");
    expect(d.components.components).toHaveLength(12);
  });

  test("V41 off: the v2 fallback produces the number and the breakdown, and the JWS names engine v2", async () => {
    flags(false, true);
    const d = (await srv.json("/api/v1/stores/maple-pine-home/trust-score")).body.data;
    expect(d.engines).toEqual({ overall: "v2", breakdown: "v2" });
    expect(d.model_version).toBe("2.0");
    expect(d.confidence_level).toBe("agent_verified_thin");
    const payload = JSON.parse(Buffer.from(d.jws.split(".")[1], "base64url").toString("utf8"));
    expect(payload).toMatchObject({ engine: "v2", methodology_version: "2.0", score: d.score });
    flags(true, true);
    const again = (await srv.json("/api/v1/stores/maple-pine-home/trust-score")).body.data;
    expect(again.engines.overall).toBe("v41");
    expect(again.computed_at).toBe(d.computed_at); // same stored score, another engine chosen
  });
});

describe("the agent trust explanation", () => {
  test("lists strengths, weaknesses, trend and a recommendation for an eligible merchant", async () => {
    flags(true, true);
    const r = await srv.json("/api/v1/agent/merchants/demo-store/trust-explanation", { headers: key.headers });
    expect(r.status).toBe(200);
    expect(r.body.success).toBe(true);
    const d = r.body.data;
    expect(d.merchant).toBe("demo-store");
    expect(d.strengths.length).toBeGreaterThan(0);
    expect(Array.isArray(d.weaknesses)).toBe(true);
    for (const s of d.strengths) expect(s.value).toBeGreaterThanOrEqual(0.8);
    expect(["improving", "declining", "stable", "insufficient_history"]).toContain(d.trend);
    expect(typeof d.recommendation).toBe("string");
    expect(["proceed", "proceed_with_caution"]).toContain(d.recommendation_code);
  });

  test("is 404 store_not_found for unknown, hidden, suspended and unverified merchants", async () => {
    for (const slug of ["no-such-store", "lowtrust-bazaar", "suspended-goods", "unverified-outlet"]) {
      const r = await srv.json(`/api/v1/agent/merchants/${slug}/trust-explanation`, { headers: key.headers });
      expect(r.status).toBe(404);
      expect(r.body).toMatchObject({ success: false, code: "store_not_found" });
    }
  });

  test("needs an agent key", async () => {
    const r = await srv.json("/api/v1/agent/merchants/demo-store/trust-explanation");
    expect(r.status).toBe(401);
    expect(r.body).toMatchObject({ success: false, code: "unauthorized" });
  });
});

describe("operator recompute and the seeded merchants", () => {
  test("a recompute scores every store, writes history and keeps each seeded merchant's intended visibility", async () => {
    flags(true, true);
    const events: unknown[] = [];
    const unsubscribe = srv.running.transport.subscribe("trust.score", (e) => void events.push(e));
    const before = Number((await srv.db.sql`SELECT count(*) AS n FROM trust_score_history`)[0].n);
    const r = await srv.json("/api/v1/admin/trust/recompute", { method: "POST", headers: auth(admin), body: {} });
    expect(r.status).toBe(200);
    const stores = Number((await srv.db.sql`SELECT count(*) AS n FROM stores`)[0].n);
    expect(r.body.data.stores).toBe(stores);
    const after = Number((await srv.db.sql`SELECT count(*) AS n FROM trust_score_history`)[0].n);
    expect(after - before).toBe(stores);

    const rows = await srv.db.sql<{ slug: string; trust_score: string; operational_status: string; verification_level: string }[]>`
      SELECT slug, trust_score, operational_status, verification_level FROM stores`;
    const by = new Map(rows.map((s) => [s.slug, s]));
    expect(Number(by.get("demo-store")!.trust_score)).toBeGreaterThanOrEqual(0.7);
    expect(by.get("demo-store")!.operational_status).toBe("active");
    expect(by.get("lowtrust-bazaar")!.operational_status).toBe("hidden");
    expect(by.get("suspended-goods")!.operational_status).toBe("suspended");
    expect(by.get("deprioritized-depot")!.operational_status).toBe("deprioritized");
    expect(by.get("unverified-outlet")!.verification_level).toBe("UNVERIFIED");
    for (const s of ["northwind-outfitters", "qualified-eu-shop", "greenleaf-living", "brightside-electronics", "maple-pine-home", "summit-sports-co"]) {
      expect(Number(by.get(s)!.trust_score)).toBeGreaterThanOrEqual(0.7);
    }

    await Bun.sleep(50);
    unsubscribe();
    const demo = events.find((e) => (e as { slug: string }).slug === "demo-store") as Record<string, unknown>;
    expect(Object.keys(demo).sort()).toEqual(["computedAt", "operationalStatus", "slug", "trustScore"]);
    expect(demo.trustScore).toBe(Number(by.get("demo-store")!.trust_score));
    expect(demo.operationalStatus).toBe("active");
  });

  test("the recompute endpoint is for operators only", async () => {
    const merchant = await login(srv, merchantLogin("cozy-paws-supply"));
    const r = await srv.json("/api/v1/admin/trust/recompute", { method: "POST", headers: auth(merchant), body: {} });
    expect(r.status).toBe(403);
    expect(r.body).toMatchObject({ success: false, code: "forbidden" });
    const anon = await srv.json("/api/v1/admin/trust/recompute", { method: "POST", body: {} });
    expect(anon.status).toBe(401);
  });

  // The agent-checkout gate itself is the cart actor's (assertStoresPayable: 403 NOT_ELIGIBLE, reason
  // trust_below_agent_threshold or merchant_not_eligible; test/http/contract-leftovers.test.ts for a suspended store).
  test("a store's published trust allows agent checkout at 0.7 and above, and never for a hidden or suspended store", async () => {
    const sql = srv.db.sql;
    expect((await readStoreTrust(sql, "demo-store"))?.agentCheckoutAllowed).toBe(true);
    expect(await readStoreTrust(sql, "pixel-play-games")).toMatchObject({ slug: "pixel-play-games", agentCheckoutAllowed: false });
    expect((await readStoreTrust(sql, "suspended-goods"))?.agentCheckoutAllowed).toBe(false);
    expect((await readStoreTrust(sql, "lowtrust-bazaar"))?.agentCheckoutAllowed).toBe(false);
    expect(await readStoreTrust(sql, "no-such-store")).toBeNull();
  });
});

describe("anomaly alerts", () => {
  test("a rapid suspicious gain raises an alert an operator lists and resolves", async () => {
    flags(true, true);
    const sql = srv.db.sql;
    await srv.json("/api/v1/admin/trust/recompute", { method: "POST", headers: auth(admin), body: { slug: "suspended-goods" } });
    // The merchant's record turns spotless overnight: exactly what the rule is there to catch.
    await sql`UPDATE orders SET fulfilled_on_time = true, disputed = false, refunded_minor = 0,
                status = CASE WHEN status = 'canceled' THEN 'delivered' ELSE status END WHERE store_slug = 'suspended-goods'`;
    await sql`UPDATE stores SET last_sync_at = now(), verification_level = 'PREMIUM',
                policies = '{"acceptsReturns": true, "returnWindowDays": 30, "freeShippingThresholdMinor": 5000, "restockingFeePercent": 0, "shippingEstimateDays": "2-3", "supportResponseTimeSla": "24h"}'::jsonb
              WHERE slug = 'suspended-goods'`;
    const r = await srv.json("/api/v1/admin/trust/recompute", { method: "POST", headers: auth(admin), body: { slug: "suspended-goods" } });
    expect(r.status).toBe(200);
    expect(r.body.data.alerts).toBeGreaterThanOrEqual(1);

    const list = await srv.json("/api/v1/admin/trust/alerts", { headers: auth(admin) });
    expect(list.status).toBe(200);
    const alert = list.body.data.find((a: { storeSlug: string; kind: string }) => a.storeSlug === "suspended-goods" && a.kind === "rapid_gain");
    expect(alert).toBeDefined();
    expect(alert.status).toBe("open");
    expect(alert.delta0to1).toBeGreaterThanOrEqual(0.15);

    const res = await srv.json(`/api/v1/admin/trust/alerts/${alert.id}/resolve`, {
      method: "POST",
      headers: auth(admin),
      body: { resolution: "confirmed_manipulation", note: "order history rewritten" },
    });
    expect(res.status).toBe(200);
    expect(res.body.data).toMatchObject({ id: alert.id, status: "resolved", resolution: "confirmed_manipulation" });
    const again = await srv.json(`/api/v1/admin/trust/alerts/${alert.id}/resolve`, { method: "POST", headers: auth(admin), body: { resolution: "dismissed", note: "x" } });
    expect(again.status).toBe(409);
    expect(again.body.code).toBe("conflict");
    const open = await srv.json("/api/v1/admin/trust/alerts?status=open", { headers: auth(admin) });
    expect(open.body.data.some((a: { id: string }) => a.id === alert.id)).toBe(false);
    const missing = await srv.json(`/api/v1/admin/trust/alerts/${crypto.randomUUID()}/resolve`, { method: "POST", headers: auth(admin), body: { resolution: "dismissed", note: "x" } });
    expect(missing.status).toBe(404);
    expect(missing.body.code).toBe("not_found");
  });
});

describe("trust appeals", () => {
  test("the store owner files an appeal due for review 72 hours later; an operator resolves it", async () => {
    const owner = await login(srv, merchantLogin("cozy-paws-supply"));
    const r = await srv.json("/api/v1/trust/appeal", {
      method: "POST",
      headers: auth(owner),
      body: { storeSlug: "cozy-paws-supply", reason: "Our fulfilment data misses the carrier's late scans.", evidenceUrls: ["https://example.com/scan-report.pdf"] },
    });
    expect(r.status).toBe(201);
    expect(r.body.success).toBe(true);
    const a = r.body.data;
    expect(a).toMatchObject({ storeSlug: "cozy-paws-supply", status: "open", decision: null });
    expect(Date.parse(a.reviewDueAt) - Date.parse(a.filedAt)).toBe(72 * 3_600_000);

    const dup = await srv.json("/api/v1/trust/appeal", { method: "POST", headers: auth(owner), body: { storeSlug: "cozy-paws-supply", reason: "Second appeal while one is open." } });
    expect(dup.status).toBe(409);
    expect(dup.body.code).toBe("conflict");

    const list = await srv.json("/api/v1/admin/trust/appeals", { headers: auth(admin) });
    expect(list.status).toBe(200);
    expect(list.body.data.some((x: { id: string }) => x.id === a.id)).toBe(true);
    const forbidden = await srv.json("/api/v1/admin/trust/appeals", { headers: auth(owner) });
    expect(forbidden.status).toBe(403);

    const done = await srv.json(`/api/v1/admin/trust/appeals/${a.id}/resolve`, { method: "POST", headers: auth(admin), body: { decision: "rejected", note: "Scans confirm the delays." } });
    expect(done.status).toBe(200);
    expect(done.body.data).toMatchObject({ id: a.id, status: "resolved", decision: "rejected", decisionNote: "Scans confirm the delays." });
  });

  test("another merchant's store is refused with 403, an unknown store with 404, no token with 401", async () => {
    const owner = await login(srv, merchantLogin("cozy-paws-supply"));
    const other = await srv.json("/api/v1/trust/appeal", { method: "POST", headers: auth(owner), body: { storeSlug: "demo-store", reason: "Not my store but let me try." } });
    expect(other.status).toBe(403);
    expect(other.body.code).toBe("forbidden");
    const unknown = await srv.json("/api/v1/trust/appeal", { method: "POST", headers: auth(owner), body: { storeSlug: "no-such-store", reason: "There is no such store here." } });
    expect(unknown.status).toBe(404);
    expect(unknown.body.code).toBe("store_not_found");
    const anon = await srv.json("/api/v1/trust/appeal", { method: "POST", body: { storeSlug: "cozy-paws-supply", reason: "Anonymous appeal attempt." } });
    expect(anon.status).toBe(401);
    const short = await srv.json("/api/v1/trust/appeal", { method: "POST", headers: auth(owner), body: { storeSlug: "cozy-paws-supply", reason: "short" } });
    expect(short.status).toBe(400);
    expect(short.body.code).toBe("validation_error");
  });
});

describe("public limits", () => {
  test("the public trust endpoints allow 30 requests per minute per IP, then 429 rate_limit_exceeded", async () => {
    let last: { status: number; headers: Headers; body: any } | undefined;
    let ok = 0;
    for (let i = 0; i < 40; i++) {
      last = await srv.json(i % 2 ? "/api/v1/trust/methodology" : "/api/v1/stores/demo-store/trust-score");
      if (last.status === 200) ok++;
      else break;
    }
    expect(ok).toBeLessThanOrEqual(30);
    expect(last!.status).toBe(429);
    expect(last!.body).toMatchObject({ success: false, code: "rate_limit_exceeded" });
    expect(last!.headers.get("x-ratelimit-limit")).toBe("30");
    expect(last!.headers.get("retry-after")).not.toBeNull();
  });
});
