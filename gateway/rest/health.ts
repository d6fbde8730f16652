/**
 * GET /api/v1/health: 200 when the database answers, 503 when it does not. The probe result is cached for
 * a second so a load balancer polling hard cannot turn health checks into database load.
 */
import { Elysia, t } from "elysia";
import { pingDatabase } from "../../infra/db.ts";
import type { Services } from "../services.ts";

const PROBE_TTL_MS = 1000;
const started = Date.now();

const Health = t.Object({
  success: t.Boolean(),
  data: t.Object({
    status: t.Union([t.Literal("ok"), t.Literal("degraded")]),
    version: t.String(),
    uptimeSeconds: t.Number(),
    database: t.Object({ ok: t.Boolean() }),
    protocols: t.Record(t.String(), t.Boolean()),
    subsystems: t.Record(t.String(), t.Boolean()),
    qtsp: t.Object({ enabled: t.Boolean() }),
  }),
});

export function healthRoutes(svc: Services) {
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

  const handler = async ({ set }: { set: { status?: number | string } }) => {
    const database = await dbOk();
    const subsystems: Record<string, boolean> = { database };
    for (const [name, check] of Object.entries(svc.readiness)) {
      try {
        subsystems[name] = !!(await check());
      } catch {
        subsystems[name] = false;
      }
    }
    set.status = database ? 200 : 503;
    return {
      success: database,
      data: {
        status: database ? ("ok" as const) : ("degraded" as const),
        version: "1.2.0",
        uptimeSeconds: Math.round((Date.now() - started) / 1000),
        database: { ok: database },
        protocols: { rest: true, mcp: true, card: true, x402: true, acp: true, ucp: true, ap2: true },
        subsystems,
        qtsp: { enabled: false },
      },
    };
  };

  return new Elysia({ name: "health" })
    .get("/api/v1/health", handler, {
      response: { 200: Health, 503: Health },
      detail: { tags: ["operations"], summary: "Service health", description: "200 or 503 depending on the database. Reports protocol availability, subsystem readiness and qtsp.enabled (always false: signed_at is asserted by the issuer only)." },
    })
    .get("/health", handler, { detail: { hide: true } });
}
