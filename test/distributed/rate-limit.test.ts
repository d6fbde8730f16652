/**
 * Rate limits and revocation across processes: one actor host and two gateways (`bun gateway/main.ts actors` and
 * `… gateway`, separate processes) over a local 3-node NATS cluster. A key's buckets live in its one actor, so
 * admission is exact however the requests are spread over gateways, and a revocation is seen by every gateway
 * at once.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { hashPassword } from "../../infra/passwords.ts";
import { startLocalCluster, type LocalCluster } from "../../infra/nats/local-cluster.ts";
import { spawnRole as spawnRoleProcess, type RoleProc } from "../helpers/role-process.ts";
import { createTestDatabase, type TestDatabase } from "../helpers/db.ts";

const EMAIL = "ops@example.com";
const PASSWORD = "distributed-password";
const SITE = "http://shop.test";

let cluster: LocalCluster;
let db: TestDatabase;
let dir: string;
const procs: RoleProc[] = [];
let gw: [string, string];

const spawnRole = (role: "actors" | "gateway", env: Record<string, string>) => spawnRoleProcess(role, env, procs);

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), "acs-dist-rl-"));
  [cluster, db] = await Promise.all([startLocalCluster({ dir: join(dir, "nats") }), createTestDatabase()]);
  await db.sql`INSERT INTO users (email, password_hash, role) VALUES (${EMAIL}, ${await hashPassword(PASSWORD)}, 'operator')`;
  const env = {
    NATS_URL: cluster.url,
    DATABASE_URL: db.url,
    SECRET_KEY: "ab".repeat(32),
    DATA_DIR: join(dir, "data"),
    HOST: "127.0.0.1",
    PORT: "0",
    ACTOR_PARTITIONS: "16",
    LOG_LEVEL: "info",
    SEED_DEMO: "false",
    NODE_ENV: "test",
    // one public origin for the deployment, as docs/operations.md requires: the issuer of every gateway's tokens
    SITE_URL: SITE,
  };
  await spawnRole("actors", env);
  const [a, b] = await Promise.all([spawnRole("gateway", env), spawnRole("gateway", env)]);
  gw = [a.url!, b.url!];
  expect(gw[0]).not.toBe(gw[1]);
}, 90_000);

afterAll(async () => {
  for (const p of procs) p.proc.kill("SIGKILL");
  await Promise.all(procs.map((p) => p.proc.exited));
  await cluster?.stop().catch(() => {});
  await db?.drop().catch(() => {});
  if (dir) await rm(dir, { recursive: true, force: true }).catch(() => {});
});

async function json(url: string, init: { method?: string; headers?: Record<string, string>; body?: unknown } = {}) {
  const res = await fetch(url, {
    method: init.method ?? "GET",
    headers: { ...(init.body !== undefined ? { "content-type": "application/json" } : {}), ...init.headers },
    body: init.body !== undefined ? JSON.stringify(init.body) : undefined,
  });
  const text = await res.text();
  return { status: res.status, headers: res.headers, body: text ? JSON.parse(text) : undefined };
}

async function newKey(gateway: string): Promise<{ id: string; key: string; token: string }> {
  const login = await json(`${gateway}/api/v1/auth/login`, { method: "POST", body: { email: EMAIL, password: PASSWORD } });
  expect(login.status).toBe(200);
  const token = login.body.data.token;
  const created = await json(`${gateway}/api/v1/agent-keys`, { method: "POST", headers: { authorization: `Bearer ${token}` }, body: { name: "dist" } });
  expect(created.status).toBe(201);
  return { id: created.body.data.id, key: created.body.data.key, token };
}

describe("two gateway processes over NATS", () => {
  test("200 concurrent requests against a fresh 100/min key bucket, spread over two gateways, admit exactly 100", async () => {
    const { key } = await newKey(gw[0]);
    // A route in the access table; no store is seeded, so an admitted request is a 404 and a refused one a 429.
    const results = await Promise.all(
      Array.from({ length: 200 }, (_, i) => json(`${gw[i % 2]}/api/v1/agent/merchants/no-such-store`, { headers: { "x-agent-api-key": key } })),
    );
    const statuses = results.map((r) => r.status);
    expect(statuses.filter((s) => s === 429).length).toBe(100);
    expect(statuses.filter((s) => s !== 429).length).toBe(100);
    expect(new Set(statuses.filter((s) => s !== 429))).toEqual(new Set([404]));
    for (const r of results.filter((x) => x.status === 429)) {
      expect(r.body.code).toBe("rate_limit_exceeded");
      expect(Number(r.headers.get("retry-after"))).toBeGreaterThanOrEqual(1);
      expect(r.headers.get("x-ratelimit-remaining")).toBe("0");
    }
    const remaining = results.filter((r) => r.status === 404).map((r) => Number(r.headers.get("x-ratelimit-remaining"))).sort((a, b) => a - b);
    expect(remaining).toEqual(Array.from({ length: 100 }, (_, i) => i));
  }, 60_000);

  test("a key revoked through one gateway is refused with 401 by the other at once", async () => {
    const { id, key, token } = await newKey(gw[0]);
    expect((await json(`${gw[1]}/api/v1/agent/merchants/no-such-store`, { headers: { "x-agent-api-key": key } })).status).toBe(404);
    const del = await json(`${gw[0]}/api/v1/agent-keys/${id}`, { method: "DELETE", headers: { authorization: `Bearer ${token}` } });
    expect(del.status).toBe(200);
    const r = await json(`${gw[1]}/api/v1/agent/merchants/no-such-store`, { headers: { "x-agent-api-key": key } });
    expect(r.status).toBe(401);
    expect(r.body).toMatchObject({ success: false, code: "unauthorized", details: { reason: "revoked" } });
  }, 60_000);

  test("a bearer token issued by one gateway is accepted by the other, both sharing the deployment's SITE_URL as issuer", async () => {
    const login = await json(`${gw[0]}/api/v1/auth/login`, { method: "POST", body: { email: EMAIL, password: PASSWORD } });
    expect(login.status).toBe(200);
    const token: string = login.body.data.token;
    const claims = JSON.parse(Buffer.from(token.split(".")[1], "base64url").toString());
    const other = await json(`${gw[1]}/api/v1/agent-keys`, { headers: { authorization: `Bearer ${token}` } });
    expect({ iss: claims.iss, status: other.status, success: other.body.success }).toEqual({ iss: SITE, status: 200, success: true });
  }, 60_000);

  // last: it uses up this IP's global bucket, which login needs
  test("the global per-IP bucket is shared by both gateways: 600 anonymous requests admit exactly the 500-minus-used remainder", async () => {
    const probe = await fetch(`${gw[1]}/api/v1/nowhere`);
    const left = Number(probe.headers.get("x-ratelimit-remaining"));
    expect(probe.headers.get("x-ratelimit-limit")).toBe("500");
    const results = await Promise.all(Array.from({ length: 600 }, (_, i) => fetch(`${gw[i % 2]}/api/v1/nowhere`).then((r) => r.status)));
    expect(results.filter((s) => s === 404).length).toBe(left);
    expect(results.filter((s) => s === 429).length).toBe(600 - left);
  }, 60_000);
});
