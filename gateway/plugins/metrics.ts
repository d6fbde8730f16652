/** Request counts and latency histograms by route template and status, and GET /metrics (Prometheus text). */
import { Elysia } from "elysia";
import { logEnabled } from "../../infra/log.ts";
import { httpStatsFor, recordHttpRequest, registry } from "../../infra/metrics.ts";
import { learnAgentRoutes, logAnswered, unroutedLabel } from "./request-log.ts";

const debugAccessLog = () => logEnabled("debug");

/** The parts of the after-response context read here; Elysia also passes the thrown `error`, which its type omits. */
interface AfterResponse {
  request: Request;
  route: string;
  set: { status?: number | string; headers: Record<string, unknown> };
  responseValue?: unknown;
  error?: unknown;
}

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
  .onStart((app) => learnAgentRoutes((app as unknown as { routes: ReadonlyArray<{ method: string; path: string }> }).routes))
  .onAfterResponse({ as: "global" }, ({ request, route, set, responseValue, error }: AfterResponse) => {
    const t0 = (request as Stamped)[STARTED];
    // A Response returned as is (e.g. `redirect()`) carries its own status, which `set.status` never sees; Elysia
    // sends `set.status` instead only when that Response says 200.
    const setStatus = typeof set.status === "number" ? set.status : 200;
    const status = responseValue instanceof Response && responseValue.status !== 200 ? responseValue.status : setStatus;
    // a request answered before routing (429, 401, 403, 413) is labelled by its agent route or as refused, not as a 404
    const label = route || unroutedLabel(request.method, request.url, status);
    const seconds = t0 === undefined ? undefined : (performance.now() - t0) / 1000;
    // counted in plain numbers, handed to prom-client at scrape time (infra/metrics.ts)
    recordHttpRequest(httpStatsFor(request.method, label, status), seconds);
    // a 5xx is logged with its request id; an access line only at LOG_LEVEL=debug (request-log.ts)
    if (status >= 500 || debugAccessLog()) {
      logAnswered({ request, route: label, status, requestId: set.headers["x-request-id"] as string | undefined, body: responseValue, error, seconds });
    }
  })
  .get(
    "/metrics",
    async ({ set }) => {
      set.headers["content-type"] = registry.contentType;
      return registry.metrics();
    },
    { detail: { tags: ["operations"], summary: "Prometheus metrics", hide: true } },
  );
