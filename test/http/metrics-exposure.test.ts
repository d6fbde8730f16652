/**
 * Who may read GET /metrics on the API port (audit X-5). It answered anyone, outside every rate limit, although its
 * Prometheus text gives traffic by route and status: e.g. how many POST /api/v1/agent/checkout succeeded, i.e. the
 * service's checkout volume. Now (docs/operations.md, Metrics):
 * - with METRICS_TOKEN set, a scrape needs `Authorization: Bearer <token>`; a refused one is 401 and is counted per
 *   address in the public bucket (30 a minute), so the token cannot be guessed at speed; an admitted one takes no
 *   bucket (a scraper must never see a 429);
 * - NODE_ENV=production without METRICS_TOKEN: not served on the API port (404);
 * - otherwise (a fresh machine: development, listening on 127.0.0.1) it stays open, as test/http/rate-limit.test.ts
 *   and the other /metrics tests rely on.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { ALL_SCOPES, createKey, placeOrder } from "../helpers/agents.ts";
import { startServer, type TestServer } from "../helpers/server.ts";

const BOARD = "5befd987-79cd-540c-8a5d-2ba5a30aed41"; // demo-store
const TOKEN = "metrics-scrape-token-0123456789abcdef";
const CHECKOUT_LINE = 'http_requests_total{method="POST",route="/api/v1/agent/checkout"';

const checkoutLines = (text: string) => text.split("\n").filter((l) => l.startsWith(CHECKOUT_LINE));

describe("with METRICS_TOKEN set (rate limits on, as deployed)", () => {
  let srv: TestServer;
  beforeAll(async () => {
    srv = await startServer({ seed: true, config: { METRICS_TOKEN: TOKEN } });
    await placeOrder(srv, await createKey(srv, { scopes: ALL_SCOPES }), BOARD);
  }, 120_000);
  afterAll(async () => {
    await srv?.stop();
  });

  test("an anonymous caller gets 401 with a Bearer challenge and no checkout volume", async () => {
    for (const path of ["/metrics", "/metrics/"]) {
      const r = await srv.fetch(path);
      const body = await r.json();
      expect({ status: r.status, challenge: r.headers.get("www-authenticate"), code: body.code, success: body.success }).toEqual({
        status: 401,
        challenge: 'Bearer realm="metrics"',
        code: "unauthorized",
        success: false,
      });
      expect(JSON.stringify(body)).not.toContain("http_requests_total");
    }
  });

  test("a wrong token, another scheme or the token with a suffix are refused the same way", async () => {
    for (const authorization of [`Bearer ${TOKEN.slice(0, -1)}x`, `Basic ${btoa(`metrics:${TOKEN}`)}`, `Bearer ${TOKEN}x`, `Bearer`]) {
      const r = await srv.fetch("/metrics", { headers: { authorization } });
      expect(r.status).toBe(401);
      expect((await r.json()).code).toBe("unauthorized");
    }
  });

  test("the operator's scraper with the token reads the text, and is not rate limited", async () => {
    const r = await srv.fetch("/metrics", { headers: { authorization: `Bearer ${TOKEN}` } });
    expect(r.status).toBe(200);
    expect(r.headers.get("content-type")).toStartWith("text/plain");
    expect(r.headers.get("x-ratelimit-limit")).toBeNull();
    expect(checkoutLines(await r.text()).length).toBeGreaterThan(0);
  });

  test("refused scrapes are counted per address: 429 once the public bucket (30 a minute) is spent; the token still scrapes", async () => {
    const statuses: number[] = [];
    for (let i = 0; i < 40; i++) {
      const r = await srv.fetch("/metrics");
      statuses.push(r.status);
      await r.arrayBuffer();
    }
    expect(new Set(statuses)).toEqual(new Set([401, 429]));
    expect(statuses.indexOf(429)).toBeLessThanOrEqual(30);
    const limited = await srv.fetch("/metrics");
    expect({ status: limited.status, code: (await limited.json()).code, limit: limited.headers.get("x-ratelimit-limit") }).toEqual({ status: 429, code: "rate_limit_exceeded", limit: "30" });
    const scraper = await srv.fetch("/metrics", { headers: { authorization: `Bearer ${TOKEN}` } });
    expect(scraper.status).toBe(200);
    await scraper.arrayBuffer();
  }, 60_000);
});

describe("NODE_ENV=production without METRICS_TOKEN", () => {
  let srv: TestServer;
  beforeAll(async () => {
    srv = await startServer({ seed: true, config: { NODE_ENV: "production" } });
  }, 120_000);
  afterAll(async () => {
    await srv?.stop();
  });

  test("/metrics is not served on the API port: 404 route_not_found, whatever the caller sends", async () => {
    for (const headers of [{}, { authorization: "Bearer anything-at-all-0123456789" }] as Record<string, string>[]) {
      const r = await srv.fetch("/metrics", { headers });
      const body = await r.json();
      expect({ status: r.status, code: body.code }).toEqual({ status: 404, code: "route_not_found" });
      expect(JSON.stringify(body)).not.toContain("http_requests_total");
    }
  });
});

describe("with METRICS_TOKEN set and rate limits off (benchmarks)", () => {
  let srv: TestServer;
  beforeAll(async () => {
    srv = await startServer({ seed: false, config: { METRICS_TOKEN: TOKEN, RATE_LIMITS_ENABLED: false } });
  }, 120_000);
  afterAll(async () => {
    await srv?.stop();
  });

  test("the token is still required: 401 without it, 200 with it", async () => {
    const anonymous = await srv.fetch("/metrics");
    expect({ status: anonymous.status, code: (await anonymous.json()).code }).toEqual({ status: 401, code: "unauthorized" });
    const scraper = await srv.fetch("/metrics", { headers: { authorization: `bearer ${TOKEN}` } });
    expect(scraper.status).toBe(200);
    expect(await scraper.text()).toContain("http_requests_total");
  });
});
