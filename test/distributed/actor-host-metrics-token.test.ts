/**
 * An actor host's own listener (role `actors`, METRICS_PORT) served /metrics to anyone, whatever METRICS_TOKEN said
 * (review, session 12 "Known and left"): its text gives actor turns by kind, the same business volume the API port
 * guards. Now it follows the API port's rule (gateway/plugins/metrics.ts checkMetricsScrape; docs/operations.md,
 * Metrics): with METRICS_TOKEN set a scrape needs the bearer (401 with the challenge otherwise), a production host
 * without a token does not serve it (404), and outside production without a token it stays open. /health stays open.
 * Real `bun gateway/main.ts actors` processes over a 1-node NATS.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { startDeployment, type Deployment } from "../helpers/deployment.ts";
import type { RoleProc } from "../helpers/role-process.ts";

const TOKEN = "actor-host-metrics-token-0123456789";
let dep: Deployment | undefined;

beforeAll(async () => {
  await startDeployment(
    { prefix: "acs-dist-host-metrics-", nats: "single", actors: 0, gateways: 0, env: { METRICS_PORT: "0", ACTOR_PARTITIONS: "4" } },
    (started) => (dep = started),
  );
}, 60_000);

afterAll(async () => {
  await dep?.stop();
});

/** The host's start line. */
function startLine(host: RoleProc): { listener: string; metrics: string } {
  for (const line of host.output) if (line.includes("actor host started")) return JSON.parse(line);
  throw new Error(`no start line:\n${host.output.join("\n")}`);
}

/** The host's listener URL, from its start line (`listener`). */
const listenerOf = (host: RoleProc): string => startLine(host).listener;

async function get(url: string, authorization?: string) {
  const r = await fetch(url, { headers: authorization ? { authorization } : {} });
  const text = await r.text();
  return { status: r.status, challenge: r.headers.get("www-authenticate"), requestId: r.headers.get("x-request-id"), text };
}

describe("an actor host with METRICS_TOKEN set", () => {
  let base = "";
  beforeAll(async () => {
    base = listenerOf(await dep!.spawnRole("actors", { METRICS_TOKEN: TOKEN }));
  }, 60_000);

  test("a scrape without the token, with a wrong one or another scheme gets 401 with the Bearer challenge and no metrics", async () => {
    for (const authorization of [undefined, `Bearer ${TOKEN}x`, `Bearer ${TOKEN.slice(0, -1)}`, `Basic ${btoa(`metrics:${TOKEN}`)}`]) {
      for (const path of ["/metrics", "/metrics/"]) {
        const r = await get(base + path, authorization);
        expect({ status: r.status, challenge: r.challenge }).toEqual({ status: 401, challenge: 'Bearer realm="metrics"' });
        const body = JSON.parse(r.text);
        expect({ success: body.success, code: body.code }).toEqual({ success: false, code: "unauthorized" });
        expect(r.text).not.toContain("actor_");
        expect(r.requestId).toBeTruthy();
      }
    }
  });

  test("the operator's scraper with the token reads the host's metrics", async () => {
    const r = await get(`${base}/metrics`, `Bearer ${TOKEN}`);
    expect(r.status).toBe(200);
    expect(r.text).toContain("# TYPE");
  });

  test("/health stays open and other paths are the service's 404", async () => {
    const health = await get(`${base}/health`);
    expect({ status: health.status, body: JSON.parse(health.text) }).toEqual({ status: 200, body: { success: true, data: { role: "actors", status: "ok", database: true, member: true } } });
    const other = await get(`${base}/api/v1/health`, `Bearer ${TOKEN}`);
    expect({ status: other.status, code: JSON.parse(other.text).code }).toEqual({ status: 404, code: "route_not_found" });
  });
});

describe("an actor host in production without METRICS_TOKEN", () => {
  test("does not serve /metrics: 404 route_not_found whatever the caller sends; /health answers", async () => {
    const host = await dep!.spawnRole("actors", { NODE_ENV: "production", METRICS_TOKEN: undefined });
    const base = listenerOf(host);
    // its start line does not point operators at a URL that answers 404 (helper E, session 22)
    expect(startLine(host).metrics).toBe("not served (NODE_ENV=production without METRICS_TOKEN)");
    for (const authorization of [undefined, "Bearer anything-at-all-0123456789"]) {
      const r = await get(`${base}/metrics`, authorization);
      expect({ status: r.status, code: JSON.parse(r.text).code }).toEqual({ status: 404, code: "route_not_found" });
      expect(r.text).not.toContain("# TYPE");
    }
    expect((await get(`${base}/health`)).status).toBe(200);
  }, 60_000);
});

describe("an actor host outside production without METRICS_TOKEN", () => {
  test("serves /metrics openly, as on a fresh machine", async () => {
    const base = listenerOf(await dep!.spawnRole("actors", { METRICS_TOKEN: undefined }));
    const r = await get(`${base}/metrics`);
    expect(r.status).toBe(200);
    expect(r.text).toContain("# TYPE");
  }, 60_000);
});
