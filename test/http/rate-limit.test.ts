import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { Elysia } from "elysia";
import { boot } from "../../gateway/boot.ts";
import { admitAnonymous, agentAuth, clientIp } from "../../gateway/plugins/auth.ts";
import type { Services } from "../../gateway/services.ts";
import { createKey, login } from "../helpers/agents.ts";
import { startServer, type TestServer } from "../helpers/server.ts";

/**
 * A probe on a path that is in the route access table (so the agent actor's rules apply) and one public-REST
 * probe that applies the spec's public layer itself. `/api/v1/agent/search` is what every test here calls with a
 * key: its rule needs only the `search` scope. The probe is mounted after the real modules, so it answers even
 * once the real search route lands (the real handler's body validation is not what these tests are about).
 */
const probes = (svc: Services) =>
  new Elysia({ name: "rate-limit-probes" })
    .use(agentAuth(svc))
    .post("/api/v1/agent/search", ({ agent }) => ({ success: true, data: { keyId: agent.keyId } }))
    .get("/api/v1/agent/wallet", ({ agent }) => ({ success: true, data: { keyId: agent.keyId } }));
const publicProbe = (svc: Services) =>
  new Elysia({ name: "public-probe" }).get("/api/v1/test/public", async ({ request, server, set }) => {
    await admitAnonymous(svc, "public-rest", clientIp(request, server), set.headers as Record<string, string>);
    return { success: true, data: {} };
  });

const nowSec = () => Math.floor(Date.now() / 1000);

function expectRateHeaders(h: Headers, limit: number, windowSec: number) {
  expect(h.get("x-ratelimit-limit")).toBe(String(limit));
  expect(Number(h.get("x-ratelimit-remaining"))).toBeGreaterThanOrEqual(0);
  const reset = Number(h.get("x-ratelimit-reset"));
  expect(reset).toBeGreaterThan(nowSec());
  expect(reset).toBeLessThanOrEqual(nowSec() + windowSec + 1);
}

describe("rate-limit headers on every response", () => {
  let srv: TestServer;
  beforeAll(async () => {
    srv = await startServer({ boot: { extraModules: [probes, publicProbe] } });
  }, 60_000);
  afterAll(async () => {
    await srv.stop();
  });

  test("an unknown path and the OpenAPI document carry the global per-IP bucket (500 per 15 min)", async () => {
    for (const path of ["/api/v1/nowhere", "/api/v1/openapi.json"]) {
      const res = await srv.fetch(path);
      expectRateHeaders(res.headers, 500, 900);
      expect(res.headers.get("retry-after")).toBeNull();
    }
  });

  test("each request without its own layer takes exactly one unit from the global bucket", async () => {
    const a = Number((await srv.fetch("/api/v1/nowhere")).headers.get("x-ratelimit-remaining"));
    const b = Number((await srv.fetch("/api/v1/also-nowhere")).headers.get("x-ratelimit-remaining"));
    expect(b).toBe(a - 1);
  });

  test("metrics and the health probes are not rate limited (a load balancer must never see a 429)", async () => {
    for (const path of ["/metrics", "/api/v1/health", "/health"]) {
      const res = await srv.fetch(path);
      expect(res.status).toBe(200);
      expect(res.headers.get("x-ratelimit-limit")).toBeNull();
    }
    const before = Number((await srv.fetch("/api/v1/nowhere")).headers.get("x-ratelimit-remaining"));
    for (let i = 0; i < 5; i++) await srv.fetch("/api/v1/health");
    const after = Number((await srv.fetch("/api/v1/nowhere")).headers.get("x-ratelimit-remaining"));
    expect(after).toBe(before - 1);
  });

  test("a JWT caller is counted in its own per-user global bucket, not the IP's", async () => {
    const token = await login(srv);
    const ipBefore = Number((await srv.fetch("/api/v1/nowhere")).headers.get("x-ratelimit-remaining"));
    const first = await srv.fetch("/api/v1/agent-keys", { headers: { authorization: `Bearer ${token}` } });
    const second = await srv.fetch("/api/v1/agent-keys", { headers: { authorization: `Bearer ${token}` } });
    expect(first.status).toBe(200);
    expectRateHeaders(first.headers, 500, 900);
    expect(Number(second.headers.get("x-ratelimit-remaining"))).toBe(Number(first.headers.get("x-ratelimit-remaining")) - 1);
    const ipAfter = Number((await srv.fetch("/api/v1/nowhere")).headers.get("x-ratelimit-remaining"));
    expect(ipAfter).toBe(ipBefore - 1);
  });

  test("keyed agentic REST shows the key's tier bucket per minute and does not touch the global bucket", async () => {
    const starter = await createKey(srv);
    const growth = await createKey(srv, { tier: "GROWTH" });
    const sandbox = await createKey(srv, { tier: "SANDBOX" });
    const ipBefore = Number((await srv.fetch("/api/v1/nowhere")).headers.get("x-ratelimit-remaining"));
    const s = await srv.fetch("/api/v1/agent/search", { method: "POST", headers: starter.headers });
    expect(s.status).toBe(200);
    expectRateHeaders(s.headers, 100, 60);
    expect(s.headers.get("x-ratelimit-remaining")).toBe("99");
    const g = await srv.fetch("/api/v1/agent/search", { method: "POST", headers: growth.headers });
    expectRateHeaders(g.headers, 500, 60);
    const x = await srv.fetch("/api/v1/agent/search", { method: "POST", headers: sandbox.headers });
    expectRateHeaders(x.headers, 60, 60);
    const ipAfter = Number((await srv.fetch("/api/v1/nowhere")).headers.get("x-ratelimit-remaining"));
    expect(ipAfter).toBe(ipBefore - 1);
  });

  test("a 401 without a key and a 403 for a missing scope carry the bucket they consumed", async () => {
    const none = await srv.json("/api/v1/agent/search", { method: "POST" });
    expect(none.status).toBe(401);
    expect(none.body.code).toBe("unauthorized");
    expectRateHeaders(none.headers, 500, 900);

    const key = await createKey(srv);
    const denied = await srv.json("/api/v1/agent/wallet", { headers: key.headers });
    expect(denied.status).toBe(403);
    expect(denied.body.code).toBe("forbidden");
    expectRateHeaders(denied.headers, 100, 60);
    expect(denied.headers.get("x-ratelimit-remaining")).toBe("99");
  });

  test("a public REST route shows its 30/min bucket and the global bucket is taken once, not twice", async () => {
    const before = Number((await srv.fetch("/api/v1/nowhere")).headers.get("x-ratelimit-remaining"));
    const p = await srv.fetch("/api/v1/test/public");
    expect(p.status).toBe(200);
    expectRateHeaders(p.headers, 30, 60);
    expect(p.headers.get("x-ratelimit-remaining")).toBe("29");
    const after = Number((await srv.fetch("/api/v1/nowhere")).headers.get("x-ratelimit-remaining"));
    expect(after).toBe(before - 2);
  });
});

describe("exact admission", () => {
  let srv: TestServer;
  beforeAll(async () => {
    srv = await startServer({ seed: true, boot: { extraModules: [probes] } });
  }, 60_000);
  afterAll(async () => {
    await srv.stop();
  });

  test("200 concurrent requests against a fresh 100/min key bucket admit exactly 100; the rest are 429 with Retry-After", async () => {
    const key = await createKey(srv);
    const results = await Promise.all(
      Array.from({ length: 200 }, () => srv.json("/api/v1/agent/search", { method: "POST", headers: key.headers })),
    );
    const ok = results.filter((r) => r.status === 200);
    const limited = results.filter((r) => r.status === 429);
    expect(ok.length).toBe(100);
    expect(limited.length).toBe(100);
    const remaining = ok.map((r) => Number(r.headers.get("x-ratelimit-remaining"))).sort((a, b) => a - b);
    expect(remaining).toEqual(Array.from({ length: 100 }, (_, i) => i));
    for (const r of limited) {
      expect(r.body).toMatchObject({ success: false, code: "rate_limit_exceeded" });
      expect(typeof r.body.error).toBe("string");
      expect(r.headers.get("x-ratelimit-limit")).toBe("100");
      expect(r.headers.get("x-ratelimit-remaining")).toBe("0");
      const retry = Number(r.headers.get("retry-after"));
      expect(retry).toBeGreaterThanOrEqual(1);
      expect(retry).toBeLessThanOrEqual(60);
      expect(Number(r.headers.get("x-ratelimit-reset"))).toBeLessThanOrEqual(nowSec() + 61);
    }
  });

  test("two keys have independent buckets", async () => {
    const a = await createKey(srv);
    const b = await createKey(srv);
    await Promise.all(Array.from({ length: 100 }, () => srv.fetch("/api/v1/agent/search", { method: "POST", headers: a.headers })));
    expect((await srv.fetch("/api/v1/agent/search", { method: "POST", headers: a.headers })).status).toBe(429);
    expect((await srv.fetch("/api/v1/agent/search", { method: "POST", headers: b.headers })).status).toBe(200);
  });

  test("the global per-IP layer admits exactly 500 of 600 concurrent anonymous requests", async () => {
    const fresh = await startServer({ seed: false });
    try {
      const results = await Promise.all(Array.from({ length: 600 }, () => fresh.json("/api/v1/nowhere")));
      expect(results.filter((r) => r.status === 404).length).toBe(500);
      const limited = results.filter((r) => r.status === 429);
      expect(limited.length).toBe(100);
      expect(limited[0]!.body.code).toBe("rate_limit_exceeded");
      expect(limited[0]!.headers.get("x-ratelimit-limit")).toBe("500");
      expect(Number(limited[0]!.headers.get("retry-after"))).toBeGreaterThan(800);
    } finally {
      await fresh.stop();
    }
  }, 60_000);
});

describe("RATE_LIMITS_ENABLED=false", () => {
  test("nothing is refused but the headers are still sent", async () => {
    const srv = await startServer({ config: { RATE_LIMITS_ENABLED: false }, boot: { extraModules: [probes] } });
    try {
      const key = await createKey(srv);
      const results = await Promise.all(Array.from({ length: 150 }, () => srv.fetch("/api/v1/agent/search", { method: "POST", headers: key.headers })));
      expect(results.every((r) => r.status === 200)).toBe(true);
      expectRateHeaders(results[0]!.headers, 100, 60);
      expectRateHeaders((await srv.fetch("/api/v1/nowhere")).headers, 500, 900);
    } finally {
      await srv.stop();
    }
  }, 60_000);

  test("start-up refuses it when NODE_ENV=production", async () => {
    await expect(boot({ env: { NODE_ENV: "production", RATE_LIMITS_ENABLED: "false" } })).rejects.toThrow(/RATE_LIMITS_ENABLED/);
  });
});
