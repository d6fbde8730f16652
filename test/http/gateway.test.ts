import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { Elysia, t } from "elysia";
import { fail } from "../../actors/runtime/errors.ts";
import { startServer, type TestServer } from "../helpers/server.ts";

let srv: TestServer;

const probes = () =>
  new Elysia({ name: "test-probes" })
    .post("/api/v1/test/validate", ({ body }) => ({ success: true, data: body }), {
      body: t.Object({ name: t.String({ minLength: 1 }), qty: t.Integer({ minimum: 1 }) }),
    })
    .get("/api/v1/test/bug", () => {
      throw new Error("secret internal detail at /srv/app.ts:42");
    })
    .get("/api/v1/test/actor-error", () => {
      throw fail("CART_NOT_FOUND", "no such cart", { cartId: "x" });
    });

beforeAll(async () => {
  srv = await startServer({ seed: false, boot: { extraModules: [probes] } });
});
afterAll(async () => {
  await srv.stop();
});

describe("common headers", () => {
  test("every response carries X-Agent-Commerce, X-Initiated-By and X-Request-Id", async () => {
    for (const path of ["/api/v1/health", "/api/v1/nowhere", "/api/v1/openapi.json"]) {
      const res = await srv.fetch(path);
      expect(res.headers.get("x-agent-commerce")).toBe("1");
      expect(res.headers.get("x-initiated-by")).toBe("ai-agent");
      expect(res.headers.get("x-request-id")).toMatch(/^[0-9a-f-]{36}$/);
    }
  });

  test("a state-changing response also carries X-AI-Act-Transparency and a read does not", async () => {
    const post = await srv.fetch("/api/v1/test/validate", { method: "POST", headers: { "content-type": "application/json" }, body: '{"name":"a","qty":1}' });
    expect(post.status).toBe(200);
    expect(post.headers.get("x-ai-act-transparency")).toBe("agent-initiated-transaction");
    const get = await srv.fetch("/api/v1/health");
    expect(get.headers.get("x-ai-act-transparency")).toBeNull();
  });

  test("a sane caller-supplied request id is echoed back", async () => {
    const res = await srv.fetch("/api/v1/health", { headers: { "x-request-id": "trace-abc-12345" } });
    expect(res.headers.get("x-request-id")).toBe("trace-abc-12345");
    const bad = await srv.fetch("/api/v1/health", { headers: { "x-request-id": "<script>" } });
    expect(bad.headers.get("x-request-id")).not.toBe("<script>");
  });
});

describe("the error envelope", () => {
  test("a validation failure is a 400 validation_error naming the field", async () => {
    const r = await srv.json("/api/v1/test/validate", { method: "POST", body: { name: "a", qty: 0 } });
    expect(r.status).toBe(400);
    expect(r.body.success).toBe(false);
    expect(r.body.code).toBe("validation_error");
    expect(typeof r.body.error).toBe("string");
    expect(r.body.details.field).toBe("qty");
  });

  test("malformed JSON is a 400 envelope, not a 500", async () => {
    const r = await srv.json("/api/v1/test/validate", { method: "POST", headers: { "content-type": "application/json" }, body: "{not json" });
    expect(r.status).toBe(400);
    expect(r.body).toMatchObject({ success: false, code: "validation_error" });
  });

  test("an unknown route is a 404 route_not_found envelope", async () => {
    const r = await srv.json("/api/v1/agent/nothing-here");
    expect(r.status).toBe(404);
    expect(r.body).toMatchObject({ success: false, code: "route_not_found" });
  });

  test("a thrown bug is a 500 internal_error without a stack trace or internals", async () => {
    const r = await srv.json("/api/v1/test/bug");
    expect(r.status).toBe(500);
    expect(r.body).toMatchObject({ success: false, code: "internal_error" });
    expect(JSON.stringify(r.body)).not.toContain("/srv/app.ts");
    expect(JSON.stringify(r.body)).not.toContain("secret internal detail");
  });

  test("an ActorError keeps its code, status and details", async () => {
    const r = await srv.json("/api/v1/test/actor-error");
    expect(r.status).toBe(404);
    expect(r.body).toEqual({ success: false, error: "no such cart", code: "CART_NOT_FOUND", details: { cartId: "x" } });
  });
});

describe("operations endpoints", () => {
  test("health reports the database, protocols, subsystems and qtsp.enabled false", async () => {
    const r = await srv.json("/api/v1/health");
    expect(r.status).toBe(200);
    expect(r.body.data.database.ok).toBe(true);
    expect(r.body.data.qtsp).toEqual({ enabled: false });
    expect(r.body.data.protocols.mcp).toBe(true);
  });

  test("the OpenAPI document declares 3.1.0 and API version 1.2.0", async () => {
    const r = await srv.json("/api/v1/openapi.json");
    expect(r.status).toBe(200);
    expect(r.body.openapi).toBe("3.1.0");
    expect(r.body.info.version).toBe("1.2.0");
    expect(Object.keys(r.body.paths)).toContain("/api/v1/health");
  });

  test("the docs UI is served at /api/docs", async () => {
    const res = await srv.fetch("/api/docs");
    expect(res.status).toBe(200);
    expect(res.headers.get("content-type")).toContain("text/html");
  });

  test("GET /agent/docs redirects 302 to the OpenAPI document without authentication", async () => {
    const res = await srv.fetch("/api/v1/agent/docs", { redirect: "manual" });
    expect(res.status).toBe(302);
    expect(res.headers.get("location")).toBe("/api/v1/openapi.json");
  });

  test("metrics are Prometheus text with request counts by route and status", async () => {
    await srv.fetch("/api/v1/health");
    const text = await (await srv.fetch("/metrics")).text();
    expect(text).toContain('http_requests_total{method="GET",route="/api/v1/health",status="200"}');
    expect(text).toContain("http_request_duration_seconds_bucket");
    expect(text).toContain("actor_activations");
  });

  test("a redirect is counted with its own status, not 200", async () => {
    const res = await srv.fetch("/api/v1/agent/docs", { redirect: "manual" });
    expect(res.status).toBe(302);
    const text = await (await srv.fetch("/metrics")).text();
    expect(text).toContain('http_requests_total{method="GET",route="/api/v1/agent/docs",status="302"}');
    expect(text).not.toContain('http_requests_total{method="GET",route="/api/v1/agent/docs",status="200"}');
  });

  test("request counts and the latency histogram go up by one per request between scrapes", async () => {
    const labels = 'method="GET",route="/api/v1/openapi.json",status="200"';
    const value = (text: string, line: string) => Number(text.split("\n").find((l) => l.startsWith(line + " "))?.slice(line.length + 1) ?? 0);
    const scrape = async () => {
      const text = await (await srv.fetch("/metrics")).text();
      return {
        requests: value(text, `http_requests_total{${labels}}`),
        timed: value(text, `http_request_duration_seconds_count{${labels}}`),
        inf: value(text, `http_request_duration_seconds_bucket{le="+Inf",${labels}}`),
        health: value(text, 'http_requests_total{method="GET",route="/api/v1/health",status="200"}'),
      };
    };
    await srv.fetch("/api/v1/openapi.json");
    const before = await scrape();
    expect(before.requests).toBeGreaterThan(0);
    await srv.fetch("/api/v1/openapi.json");
    await srv.fetch("/api/v1/openapi.json");
    await srv.fetch("/api/v1/health");
    const after = await scrape();
    expect(after.requests).toBe(before.requests + 2);
    expect(after.timed).toBe(before.timed + 2);
    expect(after.inf).toBe(after.timed);
    expect(after.health).toBe(before.health + 1);
  });
});

describe("health when the database is down", () => {
  test("health answers 503 once the database stops answering", async () => {
    const other = await startServer({ seed: false });
    try {
      expect((await other.json("/api/v1/health")).status).toBe(200);
      // kill the database under the running server
      const { connect } = await import("../../infra/db.ts");
      const { serverUrl } = await import("../helpers/db.ts");
      const admin = connect(await serverUrl(), 1);
      await admin.unsafe(`DROP DATABASE ${other.db.name} WITH (FORCE)`);
      await admin.end();
      let status = 0;
      for (let i = 0; i < 30 && status !== 503; i++) {
        await Bun.sleep(200);
        status = (await other.json("/api/v1/health")).status;
      }
      expect(status).toBe(503);
      const r = await other.json("/api/v1/health");
      // the 503 is an error: the spec's error envelope, with the report in details
      expect(r.body).toMatchObject({ success: false, code: "service_unavailable", details: { status: "degraded", database: { ok: false } } });
      expect(typeof r.body.error).toBe("string");
    } finally {
      await other.stop();
    }
  });
});
