import { describe, expect, test } from "bun:test";
import { Counter, Histogram, Registry } from "prom-client";
import { HTTP_BUCKETS, TURN_BUCKETS, httpRequests, httpStatsFor, recordHttpRequest, recordTurn, registry, turnStatsFor } from "../../infra/metrics.ts";

describe("histogram buckets", () => {
  // docs/operations.md has operators watch the turn p99 against the 3 s per-attempt timeout and the 10 s caller
  // deadline: a bucket must end at each, or every slow turn lands in +Inf alone (audit U MED-2)
  test("actor turn buckets reach 30 s with bounds at the 3 s attempt timeout, the 10 s deadline and the 15 s query deadline", () => {
    for (const b of [1, 2.5, 3, 5, 10, 15, 30]) expect(TURN_BUCKETS).toContain(b);
    expect(TURN_BUCKETS.at(-1)).toBe(30);
    expect(TURN_BUCKETS.length).toBeLessThanOrEqual(17);
  });

  test("HTTP buckets reach 30 s with bounds at 5 s and the 10 s deadline", () => {
    for (const b of [2.5, 5, 10, 30]) expect(HTTP_BUCKETS).toContain(b);
    expect(HTTP_BUCKETS.at(-1)).toBe(30);
    expect(HTTP_BUCKETS.length).toBeLessThanOrEqual(15);
  });

  test("a 4 s turn and a 7 s request are counted below 5 s and 10 s, not only in +Inf", async () => {
    recordTurn(turnStatsFor("metrics-test-slow"), "ok", 4);
    recordHttpRequest(httpStatsFor("POST", "/metrics-test/slow", 503), 7);
    const turns = await registry.getSingleMetricAsString("actor_turn_duration_seconds");
    expect(turns).toContain('actor_turn_duration_seconds_bucket{le="3",kind="metrics-test-slow"} 0');
    expect(turns).toContain('actor_turn_duration_seconds_bucket{le="5",kind="metrics-test-slow"} 1');
    const http = await registry.getSingleMetricAsString("http_request_duration_seconds");
    expect(http).toContain('http_request_duration_seconds_bucket{le="5",method="POST",route="/metrics-test/slow",status="503"} 0');
    expect(http).toContain('http_request_duration_seconds_bucket{le="10",method="POST",route="/metrics-test/slow",status="503"} 1');
  });
});

/** The two turn metrics as prom-client renders them when fed observation by observation (what the host did before). */
function reference(observations: [kind: string, outcome: string, seconds: number][]) {
  const reg = new Registry();
  const messages = new Counter({
    name: "actor_messages_total",
    help: "Messages processed by actor kind and outcome (ok, error code).",
    labelNames: ["kind", "outcome"] as const,
    registers: [reg],
  });
  const duration = new Histogram({
    name: "actor_turn_duration_seconds",
    help: "Time an actor turn takes, including its durable write.",
    labelNames: ["kind"] as const,
    buckets: [...TURN_BUCKETS],
    registers: [reg],
  });
  for (const [kind, outcome, seconds] of observations) {
    duration.labels(kind).observe(seconds);
    messages.labels(kind, outcome).inc();
  }
  return reg;
}

describe("actor turn metrics", () => {
  test("turns counted in plain numbers render the same /metrics text as prom-client's own counter and histogram", async () => {
    const observations: [string, string, number][] = [];
    const kinds = ["metrics-test-a", "metrics-test-b", "metrics-test-c"];
    const outcomes = ["ok", "ok", "ok", "not_found", "rate_limit_exceeded"];
    // every bucket, its bounds exactly, and past the last one (counted only in +Inf, sum and count)
    const durations = [0.00005, 0.0001, 0.0003, 0.0005, 0.0009, 0.002, 0.004, 0.008, 0.02, 0.04, 0.09, 0.3, 0.9, 1, 2.5, 7, 12, 29, 45];
    for (let i = 0; i < 500; i++) {
      observations.push([kinds[(i * 7) % 3]!, outcomes[(i * 3) % outcomes.length]!, durations[(i * 5) % durations.length]! * (1 + (i % 3) / 10)]);
    }
    for (const [kind, outcome, seconds] of observations) recordTurn(turnStatsFor(kind), outcome, seconds);

    const ours = (await registry.getSingleMetricAsString("actor_messages_total")) + "\n" + (await registry.getSingleMetricAsString("actor_turn_duration_seconds"));
    const ref = reference(observations);
    const theirs = (await ref.getSingleMetricAsString("actor_messages_total")) + "\n" + (await ref.getSingleMetricAsString("actor_turn_duration_seconds"));
    // other tests' kinds may share this process's registry: compare the lines of this test's kinds and the headers
    const lines = (text: string) => text.split("\n").filter((l) => l.startsWith("#") || kinds.some((k) => l.includes(`kind="${k}"`)));
    expect(lines(ours)).toEqual(lines(theirs));
    const pairs = new Set(observations.map(([k, o]) => `${k}/${o}`)).size;
    // one counter line per (kind, outcome); per kind one line per bucket, +Inf, sum and count
    expect(lines(ours).filter((l) => !l.startsWith("#")).length).toBe(pairs + kinds.length * (TURN_BUCKETS.length + 3));
  });

  test("a second scrape after more turns shows the new totals", async () => {
    const s = turnStatsFor("metrics-test-d");
    recordTurn(s, "ok", 0.0002);
    const first = await registry.getSingleMetricAsString("actor_messages_total");
    expect(first).toContain('actor_messages_total{kind="metrics-test-d",outcome="ok"} 1');
    recordTurn(s, "ok", 0.2);
    recordTurn(s, "internal_error", 0.2);
    const counter = await registry.getSingleMetricAsString("actor_messages_total");
    expect(counter).toContain('actor_messages_total{kind="metrics-test-d",outcome="ok"} 2');
    expect(counter).toContain('actor_messages_total{kind="metrics-test-d",outcome="internal_error"} 1');
    const histogram = await registry.getSingleMetricAsString("actor_turn_duration_seconds");
    expect(histogram).toContain('actor_turn_duration_seconds_bucket{le="0.0005",kind="metrics-test-d"} 1');
    expect(histogram).toContain('actor_turn_duration_seconds_bucket{le="0.5",kind="metrics-test-d"} 3');
    expect(histogram).toContain('actor_turn_duration_seconds_count{kind="metrics-test-d"} 3');
  });
});

/** The two HTTP metrics as prom-client renders them when fed request by request (what the metrics plugin did before). */
function httpReference(requests: [method: string, route: string, status: string, seconds: number | undefined][]) {
  const reg = new Registry();
  const counter = new Counter({
    name: "http_requests_total",
    help: "HTTP requests by route template, method and status.",
    labelNames: ["method", "route", "status"] as const,
    registers: [reg],
  });
  const histogram = new Histogram({
    name: "http_request_duration_seconds",
    help: "HTTP request latency by route template, method and status.",
    labelNames: ["method", "route", "status"] as const,
    buckets: [...HTTP_BUCKETS],
    registers: [reg],
  });
  for (const [method, route, status, seconds] of requests) {
    const labels = { method, route, status };
    counter.inc(labels);
    if (seconds !== undefined) histogram.observe(labels, seconds);
  }
  return reg;
}

const httpText = async (reg: Registry) =>
  (await reg.getSingleMetricAsString("http_requests_total")) + "\n" + (await reg.getSingleMetricAsString("http_request_duration_seconds"));

describe("HTTP request metrics", () => {
  test("requests counted in plain numbers render the same /metrics text as prom-client's own counter and histogram", async () => {
    const routes = ["/metrics-test/a", "/metrics-test/b/:id", "/metrics-test/c"];
    const methods = ["GET", "POST", "DELETE"];
    const statuses = [200, 200, 201, 404, 429, 500];
    // every bucket, its bounds exactly, past the last one (only +Inf, sum and count), and requests without a start stamp
    const durations = [0.0001, 0.0005, 0.0007, 0.001, 0.002, 0.0025, 0.004, 0.009, 0.02, 0.04, 0.09, 0.2, 0.4, 0.9, 2, 2.5, 6, 11, 40, undefined];
    const requests: [string, string, string, number | undefined][] = [];
    for (let i = 0; i < 700; i++) {
      const d = durations[(i * 5) % durations.length];
      requests.push([methods[(i * 7) % 3]!, routes[(i * 11) % 3]!, String(statuses[(i * 13) % statuses.length]), d === undefined ? undefined : d * (1 + (i % 3) / 10)]);
    }
    // a route only ever counted, never timed (as the native health route does, through prom-client's own API)
    const countedOnly = httpRequests.labels("GET", "/metrics-test/counted", "200");
    for (let i = 0; i < requests.length; i++) {
      const [method, route, status, seconds] = requests[i]!;
      recordHttpRequest(httpStatsFor(method, route, Number(status)), seconds);
      if (i % 100 === 50) countedOnly.inc();
    }
    httpRequests.inc({ method: "GET", route: "/metrics-test/counted", status: "503" }, 2);

    const ref = httpReference(requests);

    const lines = (text: string) => text.split("\n").filter((l) => l.startsWith("#") || routes.some((r) => l.includes(`route="${r}"`)));
    expect(lines(await httpText(registry))).toEqual(lines(await httpText(ref)));
    const sets = new Set(requests.map(([m, r, s]) => `${m} ${r} ${s}`)).size;
    const timed = new Set(requests.filter((q) => q[3] !== undefined).map(([m, r, s]) => `${m} ${r} ${s}`)).size;
    // one counter line per label set; per timed label set one line per bucket, +Inf, sum and count
    expect(lines(await httpText(registry)).filter((l) => !l.startsWith("#")).length).toBe(sets + timed * (HTTP_BUCKETS.length + 3));

    const counter = await registry.getSingleMetricAsString("http_requests_total");
    expect(counter).toContain('http_requests_total{method="GET",route="/metrics-test/counted",status="200"} 7');
    expect(counter).toContain('http_requests_total{method="GET",route="/metrics-test/counted",status="503"} 2');
    expect(await registry.getSingleMetricAsString("http_request_duration_seconds")).not.toContain("/metrics-test/counted");
  });

  test("a second scrape after more requests shows the new totals", async () => {
    const s = httpStatsFor("PUT", "/metrics-test/d", 200);
    recordHttpRequest(s, 0.0003);
    expect(await registry.getSingleMetricAsString("http_requests_total")).toContain('http_requests_total{method="PUT",route="/metrics-test/d",status="200"} 1');
    recordHttpRequest(httpStatsFor("PUT", "/metrics-test/d", 200), 0.3);
    recordHttpRequest(httpStatsFor("PUT", "/metrics-test/d", "200"));
    httpRequests.labels("PUT", "/metrics-test/d", "200").inc();
    const counter = await registry.getSingleMetricAsString("http_requests_total");
    expect(counter).toContain('http_requests_total{method="PUT",route="/metrics-test/d",status="200"} 4');
    const histogram = await registry.getSingleMetricAsString("http_request_duration_seconds");
    expect(histogram).toContain('http_request_duration_seconds_bucket{le="0.0005",method="PUT",route="/metrics-test/d",status="200"} 1');
    expect(histogram).toContain('http_request_duration_seconds_bucket{le="0.5",method="PUT",route="/metrics-test/d",status="200"} 2');
    expect(histogram).toContain('http_request_duration_seconds_count{method="PUT",route="/metrics-test/d",status="200"} 2');
    expect(() => httpRequests.inc({ method: "PUT", route: "/metrics-test/d", status: "200" }, -1)).toThrow();
  });
});

describe("the status an HTTP request is counted with", () => {
  test("is the status sent: a returned Response's own status, or set.status when that Response says 200", async () => {
    const { Elysia } = await import("elysia");
    const { edge } = await import("../../gateway/plugins/edge.ts");
    const { metrics } = await import("../../gateway/plugins/metrics.ts");
    const app = new Elysia()
      .use(edge)
      .use(metrics)
      .get("/probe-created", ({ set }) => {
        set.status = 201;
        return new Response("ok");
      })
      .get("/probe-moved", () => new Response(null, { status: 302, headers: { location: "/" } }));
    app.listen(0);
    try {
      const created = await fetch(`http://127.0.0.1:${app.server!.port}/probe-created`);
      await created.text();
      const moved = await fetch(`http://127.0.0.1:${app.server!.port}/probe-moved`, { redirect: "manual" });
      await moved.text();
      expect([created.status, moved.status]).toEqual([201, 302]);
      await Bun.sleep(20);
      const lines = (await registry.metrics()).split("\n").filter((l) => l.startsWith("http_requests_total") && l.includes("/probe-"));
      expect(lines.sort()).toEqual([
        'http_requests_total{method="GET",route="/probe-created",status="201"} 1',
        'http_requests_total{method="GET",route="/probe-moved",status="302"} 1',
      ]);
    } finally {
      app.stop(true);
    }
  });
});
