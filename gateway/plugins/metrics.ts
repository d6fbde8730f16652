/** Request counts and latency histograms by route template and status, and GET /metrics (Prometheus text). */
import { createHash, timingSafeEqual } from "node:crypto";
import { Elysia } from "elysia";
import { ActorError, fail } from "../../actors/runtime/errors.ts";
import type { Config } from "../../infra/config.ts";
import { logEnabled } from "../../infra/log.ts";
import { httpStatsFor, recordHttpRequest, registry } from "../../infra/metrics.ts";
import { errorBody } from "../envelope.ts";
import { requestIdFor } from "./request-id.ts";
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

/** The path of the scrape endpoint on the API port. */
export const METRICS_PATH = "/metrics";

/** The paths Elysia answers with the /metrics route (it matches a trailing slash too: strictPath is off). */
export function isMetricsPath(path: string): boolean {
  return path === METRICS_PATH || path === METRICS_PATH + "/";
}

/** What a scrape of /metrics needs, on a gateway's API port and an actor host's METRICS_PORT alike (docs/operations.md, "Metrics"; audit X-5). */
export type MetricsAccess = "open" | "token" | "off";

/**
 * - `METRICS_TOKEN` set: `Authorization: Bearer <METRICS_TOKEN>`, in every environment;
 * - unset, NODE_ENV=production: not served on the API port (a 404 like any unknown path): the text gives traffic by
 *   route and status, i.e. business volume, which the internet must not read; set a token to scrape it;
 * - unset otherwise: open, as on a fresh machine (the default HOST is 127.0.0.1, so only the machine itself reaches it).
 * The actor role's separate listener (METRICS_PORT, `actorHostFetch`) applies the same rule: its text gives the same
 * volumes (actor turns by kind), and "that port is the operators'" held only where someone firewalled it.
 */
export function metricsAccess(config: Pick<Config, "METRICS_TOKEN" | "NODE_ENV">): MetricsAccess {
  if (config.METRICS_TOKEN) return "token";
  return config.NODE_ENV === "production" ? "off" : "open";
}

const digest = (s: string) => createHash("sha256").update(s).digest();

/**
 * Throws unless the request may read /metrics (a gateway's API port, an actor host's METRICS_PORT): 401 `unauthorized`
 * (with a Bearer challenge) for a missing or wrong token, 404 `route_not_found` where /metrics is off. Compared in
 * constant time (over digests, so the token's length does not show either).
 */
export function checkMetricsScrape(config: Pick<Config, "METRICS_TOKEN" | "NODE_ENV">, request: Request, headers: Record<string, string | number>): void {
  const access = metricsAccess(config);
  if (access === "open") return;
  if (access === "off") throw fail("route_not_found", "No /metrics on a production gateway or actor host without METRICS_TOKEN (docs/operations.md, Metrics).");
  const presented = /^Bearer\s+(\S+)\s*$/i.exec(request.headers.get("authorization") ?? "")?.[1];
  if (presented !== undefined && timingSafeEqual(digest(presented), digest(config.METRICS_TOKEN))) return;
  headers["www-authenticate"] = 'Bearer realm="metrics"';
  throw fail("unauthorized", "GET /metrics needs Authorization: Bearer <METRICS_TOKEN>.");
}

/** What an actor host's `/health` reports besides its role (gateway/boot.ts passes both). */
export interface ActorHostHealthProbes {
  /** Whether the database answers (pingDatabase: 1 s timeout); asked at most once a second, like the gateway's. */
  database?: () => Promise<boolean>;
  /** Whether this host is a serving member of placement: its heartbeat current in the bucket (NatsTransport.isMember). */
  member?: () => boolean;
}

const HOST_HEALTH_TTL_MS = 1000;

/**
 * The request handler of an actor host's own listener (role `actors` has no API port; METRICS_PORT): `/metrics` (and
 * `/metrics/`, as on the API port) under `checkMetricsScrape`, `/health` for anyone, the service's 404 envelope for
 * anything else. Every answer carries X-Request-Id like the gateway's (audit O-3). No rate limit here (an actor host
 * has no buckets of its own): a guess at a 16+ character token is not a practical attack.
 *
 * `/health` is a readiness check (audit M-3): 200 `{role: "actors", status: "ok", database: true, member: true}` while
 * the database answers and the host's heartbeat is current in the membership bucket, else 503 `service_unavailable`
 * with the same report (`status: "degraded"`) in `details`, as the gateway's health does. It was 200 `ok` whatever
 * the database did. The database probe is cached a second, so a hard-polling orchestrator adds no database load.
 */
export function actorHostFetch(config: Pick<Config, "METRICS_TOKEN" | "NODE_ENV">, probes: ActorHostHealthProbes = {}): (req: Request) => Promise<Response> {
  let last = { at: -Infinity, ok: false };
  let inflight: Promise<boolean> | undefined;
  const databaseOk = async (): Promise<boolean> => {
    if (!probes.database) return true;
    if (performance.now() - last.at < HOST_HEALTH_TTL_MS) return last.ok;
    inflight ??= probes.database().then(
      (ok) => {
        last = { at: performance.now(), ok };
        inflight = undefined;
        return ok;
      },
      () => {
        last = { at: performance.now(), ok: false };
        inflight = undefined;
        return false;
      },
    );
    return inflight;
  };
  return async (req) => {
    const path = new URL(req.url).pathname;
    const headers: Record<string, string> = { "x-request-id": requestIdFor(req) };
    if (isMetricsPath(path)) {
      try {
        checkMetricsScrape(config, req, headers);
      } catch (err) {
        if (!(err instanceof ActorError)) throw err;
        return Response.json(errorBody(err.code, err.message), { status: err.http, headers });
      }
      return new Response(await registry.metrics(), { headers: { ...headers, "content-type": registry.contentType } });
    }
    if (path === "/health") {
      const database = await databaseOk();
      const member = probes.member?.() ?? true;
      if (database && member) return Response.json({ success: true, data: { role: "actors", status: "ok", database, member } }, { headers });
      const why = !database ? "its database does not answer" : "its heartbeat is not current in the membership bucket (NATS or JetStream away)";
      const report = { role: "actors", status: "degraded", database, member };
      return Response.json(errorBody("service_unavailable", `Actor host not ready: ${why}.`, report), { status: 503, headers });
    }
    return Response.json(errorBody("route_not_found", "No such route on an actor host: it answers /metrics and /health."), { status: 404, headers });
  };
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
  // who may read it is checked before routing, with the rate admission (rate-limit.ts, checkMetricsScrape)
  .get(
    METRICS_PATH,
    async ({ set }) => {
      set.headers["content-type"] = registry.contentType;
      return registry.metrics();
    },
    { detail: { tags: ["operations"], summary: "Prometheus metrics", hide: true } },
  );
