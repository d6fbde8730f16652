/** Request counts and latency histograms by route template and status, and GET /metrics (Prometheus text). */
import { Elysia } from "elysia";
import { httpStatsFor, recordHttpRequest, registry } from "../../infra/metrics.ts";

/**
 * The start stamp rides on the request itself: a WeakMap entry per request cost ~0.1-0.25 us more (its weak
 * entries are extra work for the collector), a symbol-keyed property next to nothing.
 */
const STARTED = Symbol("requestStart");
type Stamped = Request & { [STARTED]?: number };

/** Called by the edge hook when a request arrives. */
export function markRequestStart(request: Request): void {
  (request as Stamped)[STARTED] = performance.now();
}

export const metrics = new Elysia({ name: "metrics" })
  .onAfterResponse({ as: "global" }, ({ request, route, set, responseValue }) => {
    const t0 = (request as Stamped)[STARTED];
    // A Response returned as is (e.g. `redirect()`) carries its own status, which `set.status` never sees; Elysia
    // sends `set.status` instead only when that Response says 200.
    const setStatus = typeof set.status === "number" ? set.status : 200;
    const status = responseValue instanceof Response && responseValue.status !== 200 ? responseValue.status : setStatus;
    // counted in plain numbers, handed to prom-client at scrape time (infra/metrics.ts)
    const stats = httpStatsFor(request.method, route || "unmatched", status);
    recordHttpRequest(stats, t0 === undefined ? undefined : (performance.now() - t0) / 1000);
  })
  .get(
    "/metrics",
    async ({ set }) => {
      set.headers["content-type"] = registry.contentType;
      return registry.metrics();
    },
    { detail: { tags: ["operations"], summary: "Prometheus metrics", hide: true } },
  );
