/**
 * Audit M-3 (its second half): an actor host's own `GET /health` (METRICS_PORT) was 200 `{"role":"actors","status":
 * "ok"}` whatever happened, also with its database cut, while the gateway's health said 503 `degraded`. It now
 * reports `database` (asked at most once a second) and `member` (its heartbeat current in the membership bucket) and
 * answers 503 `service_unavailable`, the report in `details`, when either is false, so an orchestrator can use it for
 * readiness (gateway/plugins/metrics.ts actorHostFetch; docs/operations.md).
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { actorHostFetch } from "../../gateway/plugins/metrics.ts";
import { startDeployment, type Deployment } from "../helpers/deployment.ts";
import { PgProxy } from "../helpers/pg-proxy.ts";
import type { RoleProc } from "../helpers/role-process.ts";

const CONFIG = { METRICS_TOKEN: "", NODE_ENV: "test" } as const;
const health = async (fetcher: (r: Request) => Promise<Response>) => {
  const res = await fetcher(new Request("http://host/health"));
  return { status: res.status, body: (await res.json()) as any, requestId: res.headers.get("x-request-id") };
};

describe("actorHostFetch /health", () => {
  test("200 ok with database and member true; 503 service_unavailable naming what is false otherwise", async () => {
    let db = true;
    let member = true;
    const fetcher = actorHostFetch(CONFIG, { database: async () => db, member: () => member });
    expect(await health(fetcher)).toMatchObject({ status: 200, body: { success: true, data: { role: "actors", status: "ok", database: true, member: true } } });

    member = false;
    const notMember = await health(fetcher);
    expect(notMember.status).toBe(503);
    expect(notMember.body).toEqual({
      success: false,
      code: "service_unavailable",
      error: "Actor host not ready: its heartbeat is not current in the membership bucket (NATS or JetStream away).",
      details: { role: "actors", status: "degraded", database: true, member: false },
    });
    expect(notMember.requestId).toBeTruthy();

    const fresh = actorHostFetch(CONFIG, { database: async () => false, member: () => true });
    const noDb = await health(fresh);
    expect(noDb.status).toBe(503);
    expect(noDb.body).toMatchObject({ success: false, code: "service_unavailable", details: { role: "actors", status: "degraded", database: false, member: true } });
    expect(noDb.body.error).toContain("its database does not answer");
  });

  test("the database is asked at most once a second however hard /health is polled; a probe that throws is false", async () => {
    let calls = 0;
    const fetcher = actorHostFetch(CONFIG, { database: async () => (calls++, true) });
    await Promise.all(Array.from({ length: 20 }, () => health(fetcher)));
    for (let i = 0; i < 10; i++) await health(fetcher);
    expect(calls).toBe(1);
    const throwing = actorHostFetch(CONFIG, { database: () => Promise.reject(new Error("boom")) });
    expect((await health(throwing)).status).toBe(503);
  });
});

describe("a real actor host whose database is cut", () => {
  let dep: Deployment | undefined;
  let proxy: PgProxy | undefined;
  let base = "";
  beforeAll(async () => {
    await startDeployment({ prefix: "acs-dist-host-health-", nats: "single", actors: 0, gateways: 0, env: { METRICS_PORT: "0", ACTOR_PARTITIONS: "4" } }, (started) => (dep = started));
    proxy = await PgProxy.toTestServer();
    const host: RoleProc = await dep!.spawnRole("actors", { DATABASE_URL: proxy.via(dep!.db.url) });
    const line = host.output.find((l) => l.includes("actor host started"));
    base = JSON.parse(line!).listener as string;
  }, 60_000);
  afterAll(async () => {
    await dep?.stop();
    await proxy?.down().catch(() => {});
  });

  const get = async () => {
    const r = await fetch(`${base}/health`);
    return { status: r.status, body: (await r.json()) as any };
  };
  async function until(ok: (r: { status: number; body: any }) => boolean, ms = 10_000) {
    const end = Date.now() + ms;
    let last = await get();
    while (!ok(last) && Date.now() < end) {
      await Bun.sleep(200);
      last = await get();
    }
    return last;
  }

  test("answers 503 degraded with database false while Postgres is unreachable, and 200 ok again after", async () => {
    expect(await get()).toEqual({ status: 200, body: { success: true, data: { role: "actors", status: "ok", database: true, member: true } } });
    await proxy!.down();
    const cut = await until((r) => r.status === 503);
    expect(cut.status).toBe(503);
    expect(cut.body).toMatchObject({ success: false, code: "service_unavailable", details: { role: "actors", status: "degraded", database: false, member: true } });
    await proxy!.up();
    const back = await until((r) => r.status === 200);
    expect(back).toEqual({ status: 200, body: { success: true, data: { role: "actors", status: "ok", database: true, member: true } } });
  }, 40_000);
});
