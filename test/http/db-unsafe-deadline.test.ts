/**
 * Reads built with `sql.unsafe` on the shared pool carry the same query deadline as tagged ones (infra/db.ts): the
 * admin trust lists waited as long as their rows stayed locked (a stalled database looks the same), and the HTTP
 * client got an empty reply when the socket's idle timeout closed it. Now they answer 503 service_unavailable at
 * the deadline, and the query already sent is left to finish on its connection (never cancelled). The webhook
 * deliveries list, whose columns are an `unsafe` fragment inside a tagged query, is bounded the same way.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import type postgres from "postgres";
import { ADMIN, login } from "../helpers/agents.ts";
import { startServer, type TestServer } from "../helpers/server.ts";

const DEADLINE_MS = 1500;

let srv: TestServer;
let admin: Record<string, string>;
let endpointId: string;

beforeAll(async () => {
  srv = await startServer({ boot: { queryDeadlineMs: DEADLINE_MS } });
  admin = { authorization: `Bearer ${await login(srv, ADMIN)}` };
  const ep = await srv.json("/api/v1/merchant/stores/demo-store/webhooks", {
    method: "POST",
    headers: admin,
    body: { url: "http://127.0.0.1:9/hook", events: ["order.created"] },
  });
  expect(ep.status).toBe(201);
  endpointId = ep.body.data.id;
}, 120_000);

afterAll(async () => {
  await srv?.stop();
}, 60_000);

/** Holds an ACCESS EXCLUSIVE lock on `tables` (every read of them waits) until the returned function is called. */
async function lockTables(tables: string[]): Promise<() => Promise<void>> {
  const conn: postgres.ReservedSql = await srv.db.sql.reserve();
  await conn.unsafe(`BEGIN; LOCK TABLE ${tables.join(", ")} IN ACCESS EXCLUSIVE MODE`);
  let released: Promise<void> | undefined;
  const unlock = () =>
    (released ??= (async () => {
      clearTimeout(timer);
      await conn.unsafe("ROLLBACK").catch(() => {});
      conn.release();
    })());
  // an unbounded read would wait for the lock forever: let go after a while, so such a read answers (late) instead
  const timer = setTimeout(() => void unlock(), DEADLINE_MS + 5000);
  return unlock;
}

async function timed(path: string) {
  const t0 = performance.now();
  const r = await srv.json(path, { headers: admin });
  return { ...r, ms: performance.now() - t0 };
}

describe("reads on locked rows", () => {
  const routes = {
    "trust alerts (unsafe)": ["/api/v1/admin/trust/alerts", ["trust_anomaly_alerts"]],
    "trust appeals (unsafe)": ["/api/v1/admin/trust/appeals?status=all", ["trust_appeals"]],
    "webhook deliveries (unsafe fragment)": [`/api/v1/merchant/stores/demo-store/webhooks/{id}/deliveries`, ["webhook_deliveries"]],
  } as const;

  for (const [name, [template, tables]] of Object.entries(routes)) {
    test(`the ${name} list answers 503 service_unavailable at the query deadline and 200 once the lock is gone`, async () => {
      const path = template.replace("{id}", endpointId);
      expect((await timed(path)).status).toBe(200);
      const unlock = await lockTables([...tables]);
      let r: Awaited<ReturnType<typeof timed>>;
      try {
        r = await timed(path);
      } finally {
        await unlock();
      }
      expect(r.status).toBe(503);
      expect(r.body).toMatchObject({ success: false, code: "service_unavailable" });
      expect(r.headers.get("retry-after")).toBe("30");
      expect(r.ms).toBeGreaterThanOrEqual(DEADLINE_MS - 50);
      expect(r.ms).toBeLessThan(DEADLINE_MS + 3000);
      // the abandoned query finished on its connection after the unlock; the pool answers in step
      expect((await timed(path)).status).toBe(200);
    }, 30_000);
  }
});
