/**
 * The service through a database outage that refuses connections (a TCP proxy in front of Postgres that this test
 * closes), with its background loops running (webhook fan-out every 200 ms, reminder poll, search catch-up):
 * - nothing escapes as an unhandled rejection or uncaught exception (either ends a Bun process);
 * - requests, reads and actor turns, keep answering 503 service_unavailable promptly: postgres.js's reconnect backoff grew to 10–20 s
 *   after a few refused attempts (the loops make them several times a second), so a request waited for its
 *   connection's next attempt and got its 503 only at the 15 s query deadline;
 * - the loops log their failure once in a while, not on every tick, and back off;
 * - the service answers 200 within a couple of seconds once the database is back (it waited up to 20 s with
 *   postgres.js's default backoff, and 10 s when the outage closed a connection whose statement was not written yet:
 *   that connection's startup message then never went out, until connect_timeout; patches/postgres@3.4.9.patch,
 *   test/actors/db-pool-reconnect.test.ts). Each recovery attempt is printed when recovery is slow.
 */
import { afterAll, beforeAll, expect, test } from "bun:test";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { Running } from "../../gateway/boot.ts";
import { setLogSink } from "../../infra/log.ts";
import { createKey, type TestKey } from "../helpers/agents.ts";
import { createTestDatabase, type TestDatabase } from "../helpers/db.ts";
import { PgProxy } from "../helpers/pg-proxy.ts";
import { bootService, serverHandle, type TestServer } from "../helpers/server.ts";

const BOARD = "5befd987-79cd-540c-8a5d-2ba5a30aed41"; // demo-store product
const OUTAGE_MS = 6000;

let db: TestDatabase;
let proxy: PgProxy;
let running: Running;
let dataDir: string;
let srv: TestServer;
let key: TestKey;
const logs: { msg: string; level: string }[] = [];
let restoreSink: (() => void) | undefined;
const escaped: unknown[] = [];
const onEscape = (err: unknown) => void escaped.push(err);

beforeAll(async () => {
  db = await createTestDatabase({ seeded: true }); // migrated and seeded: a copy of a template (test/helpers/db.ts)
  proxy = await PgProxy.toTestServer();
  dataDir = await mkdtemp(join(tmpdir(), "acs-test-outage-loops-"));
  restoreSink = setLogSink((line) => {
    try {
      logs.push(JSON.parse(line) as { msg: string; level: string });
    } catch {
      // not ours
    }
  });
  running = await bootService({ databaseUrl: proxy.via(db.url), dataDir, config: { SEED_DEMO: true, LOG_LEVEL: "warn", RATE_LIMITS_ENABLED: false } });
  srv = serverHandle(running, db);
  key = await createKey(srv, { tier: "ENTERPRISE" });
  process.on("unhandledRejection", onEscape);
  process.on("uncaughtException", onEscape);
}, 120_000);

afterAll(async () => {
  await running?.stop().catch(() => {});
  process.off("unhandledRejection", onEscape);
  process.off("uncaughtException", onEscape);
  restoreSink?.();
  await proxy?.down().catch(() => {});
  await db?.drop();
  if (dataDir) await rm(dataDir, { recursive: true, force: true });
}, 60_000);

async function timed(path: string, init: { method?: string; body?: unknown } = {}) {
  const t0 = performance.now();
  const r = await srv.json(path, { ...init, headers: key.headers });
  return { path, status: r.status, code: (r.body as { code?: string } | undefined)?.code, ms: Math.round(performance.now() - t0) };
}

/** A cart for a new id: an actor turn (presumed new, so nothing is loaded first) that reads the catalog. */
const newCart = () => timed("/api/v1/agent/cart", { method: "POST", body: { items: [{ product_id: BOARD, quantity: 1 }] } });

const count = (pattern: RegExp) => logs.filter((l) => pattern.test(l.msg)).length;

test("through a refused-connections outage nothing escapes, requests answer 503 promptly, loops log once in a while, and the service recovers at once", async () => {
  expect((await timed("/api/v1/agent/merchants/demo-store")).status).toBe(200);
  expect((await timed(`/api/v1/agent/products/${BOARD}`)).status).toBe(200);
  expect((await newCart()).status).toBe(201);
  const before = { fanOut: count(/^webhook fan-out failed/), poll: count(/^reminder poll failed/) };

  await proxy.down();
  const answers: Awaited<ReturnType<typeof timed>>[] = [];
  try {
    const until = Date.now() + OUTAGE_MS;
    while (Date.now() < until) {
      answers.push(...(await Promise.all([timed("/api/v1/agent/merchants/demo-store"), timed(`/api/v1/agent/products/${BOARD}`), newCart()])));
      await Bun.sleep(300);
    }
  } finally {
    await proxy.up();
  }
  const t0 = performance.now();
  const logsAtRecovery = logs.length;
  let status = 0;
  const attempts: string[] = [];
  while (status !== 200 && performance.now() - t0 < 25_000) {
    const a = await timed("/api/v1/agent/merchants/demo-store");
    attempts.push(`at ${Math.round(performance.now() - t0 - a.ms)} ms: ${a.status} ${a.code ?? ""} after ${a.ms} ms`);
    status = a.status;
    if (status !== 200) await Bun.sleep(100);
  }
  const recoveredMs = performance.now() - t0;
  if (recoveredMs >= 4000) {
    // what a slow recovery looked like: each attempt, and what the server logged meanwhile (e.g. CONNECT_TIMEOUT)
    console.error("slow recovery", { recoveredMs: Math.round(recoveredMs), attempts, serverLogs: logs.slice(logsAtRecovery) });
  }

  expect(escaped).toEqual([]);
  // every request during the outage: the envelope's 503 service_unavailable, well before the 15 s query deadline
  // (and an actor turn's well before the client's 10 s deadline: it answered actor_unavailable only then)
  expect(answers.filter((a) => a.status !== 503 || a.code !== "service_unavailable" || a.ms > 3000)).toEqual([]);
  expect(status).toBe(200);
  // the backoff is capped at 2 s (jittered): 4 s leaves room for a loaded machine, well below the 10 s of a connection
  // whose startup waited for connect_timeout and the 10–20 s of postgres.js's own backoff
  expect(recoveredMs).toBeLessThan(4000);
  // fan-out ticks every 200 ms and the poll every 200 ms here: without a backoff, ~30 warnings each in 6 s
  expect(count(/^webhook fan-out failed/) - before.fanOut).toBeLessThanOrEqual(2);
  expect(count(/^reminder poll failed/) - before.poll).toBeLessThanOrEqual(2);
}, 90_000);
