/**
 * The distributed roles as an operator runs them (docs/operations.md): `bun run seed -- --migrate` into a shared
 * Postgres, one `actors` process and one `gateway` process over NATS. An agent logs in, mints a key and searches
 * through the gateway (every actor message crosses NATS to the host); the actor host's own /metrics shows the
 * partitions it owns.
 */
import { afterAll, expect, test } from "bun:test";
import { createServer } from "node:net";
import { createTestDatabase, type TestDatabase } from "../helpers/db.ts";

const root = new URL("../..", import.meta.url).pathname;
const NATS_URL = process.env.TEST_NATS_URL ?? "nats://127.0.0.1:4222";
const procs: ReturnType<typeof Bun.spawn>[] = [];
let db: TestDatabase | undefined;

afterAll(async () => {
  for (const p of procs) p.kill("SIGTERM");
  await Promise.all(procs.map((p) => Promise.race([p.exited, Bun.sleep(5000)])));
  for (const p of procs) p.kill("SIGKILL");
  await db?.drop();
});

async function freePort(): Promise<number> {
  return new Promise((resolve) => {
    const s = createServer();
    s.listen(0, "127.0.0.1", () => {
      const a = s.address() as { port: number };
      s.close(() => resolve(a.port));
    });
  });
}

async function natsReachable(): Promise<boolean> {
  const u = new URL(NATS_URL.replace(/^nats:/, "http:"));
  return new Promise((resolve) => {
    const sock = require("node:net").connect(Number(u.port || 4222), u.hostname);
    sock.once("connect", () => (sock.destroy(), resolve(true)));
    sock.once("error", () => resolve(false));
  });
}

async function waitFor(url: string): Promise<Response> {
  for (let i = 0; i < 120; i++) {
    const r = await fetch(url).catch(() => undefined);
    if (r) return r;
    await Bun.sleep(250);
  }
  throw new Error(`nothing answered at ${url}`);
}

test("a gateway process and an actor-host process over NATS serve agents from a seeded shared database", async () => {
  if (!(await natsReachable())) throw new Error(`NATS is not reachable at ${NATS_URL} (CI starts it; see .ci/run)`);
  db = await createTestDatabase({ migrate: false });
  const seed = Bun.spawnSync(["bun", "infra/seed/cli.ts", "--database-url", db.url, "--migrate"], { cwd: root, stdout: "pipe", stderr: "pipe" });
  expect(seed.exitCode).toBe(0);

  const [apiPort, metricsPort] = [await freePort(), await freePort()];
  const env = {
    PATH: process.env.PATH ?? "",
    HOME: process.env.HOME ?? "/tmp",
    DATABASE_URL: db.url,
    NATS_URL,
    LOG_LEVEL: "warn",
    DATA_DIR: `/tmp/acs-roles-${apiPort}`,
    SECRET_KEY: "ab".repeat(32),
    // a partition count of our own so this test's host does not take partitions of other clusters on this NATS
    ACTOR_PARTITIONS: "7",
  };
  procs.push(Bun.spawn(["bun", "gateway/main.ts", "actors"], { cwd: root, env: { ...env, METRICS_PORT: String(metricsPort) }, stdout: "ignore", stderr: "inherit" }));
  procs.push(Bun.spawn(["bun", "gateway/main.ts", "gateway"], { cwd: root, env: { ...env, PORT: String(apiPort) }, stdout: "ignore", stderr: "inherit" }));

  const api = `http://127.0.0.1:${apiPort}`;
  expect((await waitFor(`${api}/api/v1/health`)).status).toBe(200);
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

  const metricsAnswer = await waitFor(`http://127.0.0.1:${metricsPort}/metrics`);
  // the actor host's own answers carry a request id like the gateway's, and its 404 is the service's envelope (audit O-3)
  expect(metricsAnswer.headers.get("x-request-id")).toMatch(/^[0-9a-f-]{36}$/);
  const hostHealth = await fetch(`http://127.0.0.1:${metricsPort}/health`);
  expect(hostHealth.headers.get("x-request-id")).toMatch(/^[0-9a-f-]{36}$/);
  const unknown = await fetch(`http://127.0.0.1:${metricsPort}/nothing-here`, { headers: { "x-request-id": "trace-0123456789abcdef" } });
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
