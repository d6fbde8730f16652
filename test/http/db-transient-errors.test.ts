/**
 * Postgres errors that mean "not now" rather than "our bug" answer 503 service_unavailable in the envelope, not 500
 * internal_error: here an operator's lock_timeout (55P03) while a migration-like job holds the catalog's rows, on a
 * plain read route and on a route whose actor turn reads the locked rows (infra/db.ts isDatabaseUnavailable).
 */
import { afterAll, beforeAll, expect, test } from "bun:test";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type postgres from "postgres";
import { boot, type Running } from "../../gateway/boot.ts";
import { createTestDatabase, type TestDatabase } from "../helpers/db.ts";

const BOARD = "5befd987-79cd-540c-8a5d-2ba5a30aed41"; // demo-store product

let db: TestDatabase;
let running: Running;
let dataDir: string;
let key: Record<string, string>;

async function json(path: string, init: { method?: string; headers?: Record<string, string>; body?: unknown } = {}) {
  const res = await fetch(running.url + path, {
    method: init.method ?? "GET",
    headers: { ...(init.body === undefined ? {} : { "content-type": "application/json" }), ...init.headers },
    body: init.body === undefined ? undefined : JSON.stringify(init.body),
  });
  const text = await res.text();
  return { status: res.status, headers: res.headers, body: text ? JSON.parse(text) : undefined };
}

beforeAll(async () => {
  db = await createTestDatabase({ seeded: true }); // migrated and seeded: a copy of a template (test/helpers/db.ts)
  // every connection the service opens waits at most 300 ms for a lock
  await db.sql.unsafe(`ALTER DATABASE ${db.name} SET lock_timeout = '300ms'`);
  dataDir = await mkdtemp(join(tmpdir(), "acs-test-transient-"));
  running = await boot({
    role: "start",
    env: {},
    reminderPollMs: 200,
    config: { DATABASE_URL: db.url, HOST: "127.0.0.1", PORT: 0, DATA_DIR: dataDir, SEED_DEMO: true, LOG_LEVEL: "silent", NODE_ENV: "test", RATE_LIMITS_ENABLED: false },
  });
  const login = await json("/api/v1/auth/login", { method: "POST", body: { email: "admin@example.com", password: "admin-password" } });
  const created = await json("/api/v1/agent-keys", { method: "POST", headers: { authorization: `Bearer ${login.body.data.token}` }, body: { name: "k", tier: "ENTERPRISE" } });
  key = { "x-agent-api-key": created.body.data.key };
}, 120_000);

afterAll(async () => {
  await running?.stop().catch(() => {});
  await db?.drop();
  if (dataDir) await rm(dataDir, { recursive: true, force: true });
}, 60_000);

test("a read or an actor turn that hits the database's lock_timeout answers 503 service_unavailable, not 500", async () => {
  expect((await json(`/api/v1/agent/products/${BOARD}`, { headers: key })).status).toBe(200);
  const conn: postgres.ReservedSql = await db.sql.reserve();
  let read: Awaited<ReturnType<typeof json>>;
  let cart: Awaited<ReturnType<typeof json>>;
  try {
    await conn.unsafe("BEGIN; LOCK TABLE products IN ACCESS EXCLUSIVE MODE");
    read = await json(`/api/v1/agent/products/${BOARD}`, { headers: key });
    cart = await json("/api/v1/agent/cart", { method: "POST", headers: key, body: { items: [{ product_id: BOARD, quantity: 1 }] } });
  } finally {
    await conn.unsafe("ROLLBACK").catch(() => {});
    conn.release();
  }
  for (const r of [read, cart]) {
    expect(r.status).toBe(503);
    expect(r.body).toMatchObject({ success: false, code: "service_unavailable" });
  }
  expect((await json(`/api/v1/agent/products/${BOARD}`, { headers: key })).status).toBe(200);
}, 60_000);
