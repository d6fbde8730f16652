/**
 * GET /api/v1/health: 200 when the database answers, 503 when it does not (the spec's rule). The probe result is
 * cached for a second so a load balancer polling hard cannot turn health checks into database load.
 * The report also says whether actor hosts are there (`subsystems.actors`, `actorHosts`): in the distributed roles
 * a gateway with no live host answers every actor call 503 while its database is fine, and `ready` (every
 * subsystem true) is the signal to alert on (audit U LOW-5; docs/operations.md).
 */
import { Elysia, t } from "elysia";
import { anyStoreX402Usable } from "../../actors/payments/x402-config.ts";
import { ActorClient } from "../../actors/runtime/client.ts";
import { ACTOR_KINDS } from "../../infra/actor-kinds.ts";
import { pingDatabase } from "../../infra/db.ts";
import { httpRequests } from "../../infra/metrics.ts";
import { requestIdFor } from "../plugins/request-id.ts";
import type { Services } from "../services.ts";
import { actorHostsProbe, type ActorHostsReport } from "./actor-hosts.ts";

const PROBE_TTL_MS = 1000;
const started = Date.now();

const Report = t.Object({
  status: t.Union([t.Literal("ok"), t.Literal("degraded")]),
  version: t.String(),
  uptimeSeconds: t.Number(),
  database: t.Object({ ok: t.Boolean() }),
  protocols: t.Record(t.String(), t.Boolean()),
  subsystems: t.Record(t.String(), t.Boolean(), { description: "database, search, actors (a live actor host for every partition), …" }),
  /** The status stays the database's (the spec's rule); this is whether every subsystem is ready. */
  ready: t.Boolean({ description: "true when every subsystem is true; status and HTTP code follow the database only" }),
  actorHosts: t.Optional(
    t.Object({
      transport: t.String({ description: "in-process (this process hosts every actor) or nats" }),
      liveHosts: t.Union([t.Integer(), t.Null()], { description: "live actor hosts in the membership bucket; null on the in-process bus or when the bucket did not answer" }),
      unownedPartitions: t.Record(t.String(), t.Integer(), { description: "per actor kind, partitions no live host serves" }),
      ready: t.Boolean(),
    }),
  ),
  qtsp: t.Object({ enabled: t.Boolean() }),
});
const Health = t.Object({ success: t.Literal(true), data: Report });
/** The 503 is an error, so it uses the spec's error envelope; the same report travels in `details`. */
const Unhealthy = t.Object({ success: t.Literal(false), error: t.String(), code: t.Literal("service_unavailable"), details: Report });

type Reporter = ReturnType<typeof makeReporter>;

/**
 * The health report and its status, shared by the Elysia route (documented in OpenAPI) and the native fast
 * path: one reporter per service, so one database probe a second however many paths serve it.
 */
export function healthReporter(svc: Services): Reporter {
  const existing = svc.extras.get("healthReporter") as Reporter | undefined;
  if (existing) return existing;
  const reporter = makeReporter(svc);
  svc.extras.set("healthReporter", reporter);
  return reporter;
}

function makeReporter(svc: Services) {
  const actorHosts: (() => Promise<ActorHostsReport>) | undefined = svc.actors instanceof ActorClient ? actorHostsProbe(svc.actors.transport, ACTOR_KINDS) : undefined;
  let last = { at: 0, ok: false };
  let inflight: Promise<boolean> | undefined;
  const dbOk = async (): Promise<boolean> => {
    if (Date.now() - last.at < PROBE_TTL_MS) return last.ok;
    inflight ??= pingDatabase(svc.sql).then((ok) => {
      last = { at: Date.now(), ok };
      inflight = undefined;
      return ok;
    });
    return inflight;
  };
  // protocols.x402: true only when some store can actually settle over x402 (a facilitator of its own or one the
  // operator allows); cached like the database probe.
  let x402Last = { at: 0, ok: false };
  const x402Ok = async (database: boolean): Promise<boolean> => {
    if (!database) return false;
    if (Date.now() - x402Last.at < PROBE_TTL_MS) return x402Last.ok;
    const ok = await anyStoreX402Usable(svc.sql, { allowlist: svc.config.X402_FACILITATOR_ALLOWLIST, allowPrivate: svc.config.ALLOW_PRIVATE_URLS }).catch(() => false);
    x402Last = { at: Date.now(), ok };
    return ok;
  };
  return async () => {
    const database = await dbOk();
    const [x402, hosts] = await Promise.all([x402Ok(database), actorHosts?.()]);
    const subsystems: Record<string, boolean> = { database };
    if (hosts) subsystems.actors = hosts.ready;
    for (const [name, check] of Object.entries(svc.readiness)) {
      try {
        subsystems[name] = !!(await check());
      } catch {
        subsystems[name] = false;
      }
    }
    const report = {
      status: database ? ("ok" as const) : ("degraded" as const),
      version: "1.2.0",
      uptimeSeconds: Math.round((Date.now() - started) / 1000),
      database: { ok: database },
      protocols: { rest: true, mcp: true, card: true, x402, acp: true, ucp: true, ap2: true },
      subsystems,
      ready: Object.values(subsystems).every(Boolean),
      ...(hosts ? { actorHosts: hosts } : {}),
      qtsp: { enabled: false },
    };
    return database
      ? { status: 200, body: { success: true as const, data: report } }
      : {
          status: 503,
          body: {
            success: false as const,
            error: "The database is not answering; retry after 30 seconds.",
            code: "service_unavailable" as const,
            details: report,
          },
        };
  };
}

/**
 * GET health as a native Bun route, ahead of the Elysia pipeline: load balancers call it constantly, so it does
 * only what the spec asks of it — the report, X-Request-Id and the transparency headers — and records the same
 * request metrics. (Every other method on the path still goes through Elysia.)
 */
export function nativeHealthRoute(svc: Services, path: string) {
  const report = healthReporter(svc);
  // The report is rebuilt at most once per PROBE_TTL_MS (the database probe is cached that long anyway), so a
  // probe in between costs a header map and a counter increment.
  let cached: { at: number; status: number; json: string } | undefined;
  let refreshing: Promise<void> | undefined;
  const refresh = () =>
    (refreshing ??= report().then((r) => {
      cached = { at: Date.now(), status: r.status, json: JSON.stringify(r.body) };
      refreshing = undefined;
    }));
  // request counts only: the latency of serving a cached report says nothing about the service
  const metrics = { 200: httpRequests.labels("GET", path, "200"), 503: httpRequests.labels("GET", path, "503") };
  const respond = (req: Request): Response => {
    const c = cached!;
    const res = new Response(c.json, {
      status: c.status,
      headers: {
        "content-type": "application/json;charset=utf-8",
        "x-request-id": requestIdFor(req),
        "x-agent-commerce": "1",
        "x-initiated-by": "ai-agent",
        // as every answer under /api (docs/conventions.md "Caching"): this route is served before the edge hook adds it
        "cache-control": "no-store",
        ...(c.status === 503 ? { "retry-after": "30" } : {}),
      },
    });
    (c.status === 200 ? metrics[200] : metrics[503]).inc();
    return res;
  };
  return (req: Request): Response | Promise<Response> => {
    if (cached && Date.now() - cached.at < PROBE_TTL_MS) return respond(req);
    return refresh().then(() => respond(req));
  };
}

export function healthRoutes(svc: Services) {
  const report = healthReporter(svc);
  const handler = async ({ set }: { set: { status?: number | string } }) => {
    const r = await report();
    set.status = r.status;
    return r.body;
  };

  return new Elysia({ name: "health" })
    .get("/api/v1/health", handler, {
      response: { 200: Health, 503: Unhealthy },
      detail: { tags: ["operations"], summary: "Service health", description: "200 or 503 depending on the database (the 503 in the error envelope, the report in details). Reports protocol availability, subsystem readiness and qtsp.enabled (always false: signed_at is asserted by the issuer only)." },
    })
    .get("/health", handler, { detail: { hide: true } });
}
