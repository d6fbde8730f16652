/** Request counts and latency histograms by route template and status, and GET /metrics (Prometheus text). */
import { Elysia } from "elysia";
import { httpDuration, httpRequests, registry } from "../../infra/metrics.ts";

const started = new WeakMap<Request, number>();

/** Called by the edge hook when a request arrives. */
export function markRequestStart(request: Request): void {
  started.set(request, performance.now());
}

export const metrics = new Elysia({ name: "metrics" })
  .onAfterResponse({ as: "global" }, ({ request, route, set }) => {
    const t0 = started.get(request);
    const status = String(typeof set.status === "number" ? set.status : 200);
    const labels = { method: request.method, route: route || "unmatched", status };
    httpRequests.inc(labels);
    if (t0 !== undefined) httpDuration.observe(labels, (performance.now() - t0) / 1000);
  })
  .get(
    "/metrics",
    async ({ set }) => {
      set.headers["content-type"] = registry.contentType;
      return registry.metrics();
    },
    { detail: { tags: ["operations"], summary: "Prometheus metrics", hide: true } },
  );
