/**
 * The distributed roles as an operator runs them (docs/operations.md): `bun run seed -- --migrate` into a shared
 * Postgres, one `actors` process and one `gateway` process over NATS. An agent logs in, mints a key and searches
 * through the gateway (every actor message crosses NATS to the host); the actor host's own /metrics shows the
 * partitions it owns.
 */
import { afterAll, expect, test } from "bun:test";
import { createTestDatabase, type TestDatabase } from "../helpers/db.ts";
import { spawnRole, type RoleProc } from "../helpers/role-process.ts";

const root = new URL("../..", import.meta.url).pathname;
const NATS_URL = process.env.TEST_NATS_URL ?? "nats://127.0.0.1:4222";
const procs: RoleProc[] = [];
let db: TestDatabase | undefined;

afterAll(async () => {
  for (const p of procs) p.proc.kill("SIGTERM");
  await Promise.all(procs.map((p) => Promise.race([p.proc.exited, Bun.sleep(5000)])));
  for (const p of procs) p.proc.kill("SIGKILL");
  await db?.drop();
});

async function natsReachable(): Promise<boolean> {
  const u = new URL(NATS_URL.replace(/^nats:/, "http:"));
  return new Promise((resolve) => {
    const sock = require("node:net").connect(Number(u.port || 4222), u.hostname);
    sock.once("connect", () => (sock.destroy(), resolve(true)));
    sock.once("error", () => resolve(false));
  });
}

test("a gateway process and an actor-host process over NATS serve agents from a seeded shared database", async () => {
  if (!(await natsReachable())) throw new Error(`NATS is not reachable at ${NATS_URL} (CI starts it; see .ci/run)`);
  db = await createTestDatabase({ migrate: false });
  const seed = Bun.spawnSync(["bun", "infra/seed/cli.ts", "--database-url", db.url, "--migrate"], { cwd: root, stdout: "pipe", stderr: "pipe" });
  expect(seed.exitCode).toBe(0);

  // Both processes listen on port 0 and are read at the URL their own start line logs: a port picked beforehand
  // (listen on 0, close, pass it on) can be taken by another test file's server in between, and this test then
  // talked to that server (a CI run's 503 from someone else's gateway).
  const env = {
    PATH: process.env.PATH ?? "",
    HOME: process.env.HOME ?? "/tmp",
    DATABASE_URL: db.url,
    NATS_URL,
    LOG_LEVEL: "info",
    DATA_DIR: `/tmp/acs-roles-${db.name}`,
    SECRET_KEY: "ab".repeat(32),
    // a partition count of our own so this test's host does not take partitions of other clusters on this NATS
    ACTOR_PARTITIONS: "7",
    PORT: "0",
    METRICS_PORT: "0",
  };
  const host = await spawnRole("actors", env, procs);
  const gateway = await spawnRole("gateway", env, procs);
  const api = gateway.url!;
  const metricsBase = host.metricsUrl!;
  expect(api).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/);
  expect((await fetch(`${api}/api/v1/health`)).status).toBe(200);
  const login = await fetch(`${api}/api/v1/auth/login`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ email: "admin@example.com", password: "admin-password" }),
  });
  expect(login.status).toBe(200);
  const token = ((await login.json()) as { data: { token: string } }).data.token;
  const key = await fetch(`${api}/api/v1/agent-keys`, {
    method: "POST",
    headers: { "content-type": "application/json", authorization: `Bearer ${token}` },
    body: JSON.stringify({ name: "roles e2e" }),
  });
  expect(key.status).toBe(201);
  const plaintext = ((await key.json()) as { data: { key: string } }).data.key;
  const search = await fetch(`${api}/api/v1/agent/search`, {
    method: "POST",
    headers: { "content-type": "application/json", "x-agent-api-key": plaintext },
    body: JSON.stringify({ query: "headphones" }),
  });
  expect(search.status).toBe(200);
  const body = (await search.json()) as { success: boolean; data: { products: unknown[] } };
  expect(body.success).toBe(true);
  expect(body.data.products.length).toBeGreaterThan(0);
  expect(search.headers.get("x-ratelimit-limit")).toBe("100");

  const metricsAnswer = await fetch(`${metricsBase}/metrics`);
  // the actor host's own answers carry a request id like the gateway's, and its 404 is the service's envelope (audit O-3)
  expect(metricsAnswer.headers.get("x-request-id")).toMatch(/^[0-9a-f-]{36}$/);
  const hostHealth = await fetch(`${metricsBase}/health`);
  expect(hostHealth.headers.get("x-request-id")).toMatch(/^[0-9a-f-]{36}$/);
  const unknown = await fetch(`${metricsBase}/nothing-here`, { headers: { "x-request-id": "trace-0123456789abcdef" } });
  expect(unknown.status).toBe(404);
  expect(unknown.headers.get("x-request-id")).toBe("trace-0123456789abcdef");
  expect((await unknown.json()).code).toBe("route_not_found");
  const metrics = await metricsAnswer.text();
  expect(metrics).toContain('actor_partitions_owned{kind="agent"} 7');
  expect(metrics).toMatch(/actor_activations\{kind="agent"\} [1-9]/);
  // the webhook backlog is read where the fan-out runs (the actor host), and a gateway shows none rather than zeros
  expect(metrics).toContain("\nwebhook_fanout_lag_seconds 0\n");
  expect(metrics).toContain("\nwebhook_deliveries_due 0\n");
  const gatewayMetrics = await (await fetch(`${api}/metrics`)).text();
  expect(gatewayMetrics).toContain("http_requests_total");
  expect(gatewayMetrics).not.toContain("webhook_fanout_lag_seconds");
}, 120_000);
