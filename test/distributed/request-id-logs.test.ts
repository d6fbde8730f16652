/**
 * Over NATS between processes, an operator holding a request's X-Request-Id finds the actor host's lines of it: one
 * `bun gateway/main.ts actors` and one `… gateway` over a private 1-node NATS, the actor host's stderr read line by
 * line. The id rides in the actor message's envelope (`requestId`); the host's turn lines — a handler's and the
 * host's own for an actor that cannot be activated — carry it (docs/operations.md, logs).
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { Subprocess } from "bun";
import { createServer } from "node:net";
import { connect as natsConnect } from "@nats-io/transport-node";
import { jetstreamManager } from "@nats-io/jetstream";
import { hashPassword } from "../../infra/passwords.ts";
import { ALL_SCOPES } from "../helpers/agents.ts";
import { spawnRole as spawnRoleProcess, type RoleProc } from "../helpers/role-process.ts";
import { createTestDatabase, type TestDatabase } from "../helpers/db.ts";

const EMAIL = "ops@example.com";
const PASSWORD = "distributed-password";

let nats: Subprocess | undefined;
let db: TestDatabase;
let dir: string;
const procs: RoleProc[] = [];
let host: RoleProc;
let gw: string;

function freePort(): Promise<number> {
  return new Promise((res, rej) => {
    const srv = createServer();
    srv.listen(0, "127.0.0.1", () => {
      const addr = srv.address();
      srv.close(() => (typeof addr === "object" && addr ? res(addr.port) : rej(new Error("no port"))));
    });
  });
}

/** One private nats-server with JetStream (as test/distributed/health-actor-hosts.test.ts). */
async function startNats(storeDir: string): Promise<string> {
  const port = await freePort();
  nats = Bun.spawn(["/usr/sbin/nats-server", "-js", "-a", "127.0.0.1", "-p", String(port), "-sd", storeDir], { stdout: "ignore", stderr: "ignore" });
  const url = `nats://127.0.0.1:${port}`;
  for (let i = 0; ; i++) {
    try {
      const nc = await natsConnect({ servers: url, timeout: 1000 });
      try {
        await (await jetstreamManager(nc, { timeout: 1000 })).getAccountInfo();
        return url;
      } finally {
        await nc.close();
      }
    } catch (err) {
      if (i > 100) throw err;
      await Bun.sleep(100);
    }
  }
}

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), "acs-dist-rid-"));
  let natsUrl: string;
  [natsUrl, db] = await Promise.all([startNats(join(dir, "nats")), createTestDatabase()]);
  await db.sql`INSERT INTO users (email, password_hash, role) VALUES (${EMAIL}, ${await hashPassword(PASSWORD)}, 'operator')`;
  const env = {
    NATS_URL: natsUrl,
    DATABASE_URL: db.url,
    SECRET_KEY: "ab".repeat(32),
    DATA_DIR: join(dir, "data"),
    HOST: "127.0.0.1",
    PORT: "0",
    METRICS_PORT: "0",
    ACTOR_PARTITIONS: "8",
    // idle activations passivate at once, so the next message loads the actor again
    ACTOR_IDLE_MS: "200",
    ACTOR_ASK_TIMEOUT_MS: "2000", // the unreadable wallet's 503 after 2 s of retries instead of 10 s
    LOG_LEVEL: "info",
    SEED_DEMO: "false",
    NODE_ENV: "test",
    SITE_URL: "http://shop.test",
  };
  host = await spawnRoleProcess("actors", env, procs);
  gw = (await spawnRoleProcess("gateway", env, procs)).url!;
}, 90_000);

afterAll(async () => {
  for (const p of procs) p.proc.kill("SIGKILL");
  await Promise.all(procs.map((p) => p.proc.exited));
  nats?.kill("SIGKILL");
  await nats?.exited;
  await db?.drop().catch(() => {});
  if (dir) await rm(dir, { recursive: true, force: true }).catch(() => {});
});

async function json(path: string, init: { method?: string; headers?: Record<string, string>; body?: unknown } = {}) {
  const res = await fetch(gw + path, {
    method: init.method ?? "GET",
    headers: { ...(init.body !== undefined ? { "content-type": "application/json" } : {}), ...init.headers },
    body: init.body !== undefined ? JSON.stringify(init.body) : undefined,
  });
  const text = await res.text();
  return { status: res.status, headers: res.headers, body: text ? JSON.parse(text) : undefined };
}

/** The actor host's JSON lines matching `pred`, waited for up to `ms` (its stderr arrives through a pipe). */
async function hostLines(pred: (l: Record<string, unknown>) => boolean, ms = 5000): Promise<Record<string, unknown>[]> {
  const until = Date.now() + ms;
  for (;;) {
    const found = host.output.flatMap((line) => {
      try {
        const l = JSON.parse(line) as Record<string, unknown>;
        return pred(l) ? [l] : [];
      } catch {
        return [];
      }
    });
    if (found.length > 0 || Date.now() > until) return found;
    await Bun.sleep(50);
  }
}

describe("the actor host's lines over NATS", () => {
  test("a turn's line on the actor host names the X-Request-Id of the gateway request that sent its message", async () => {
    const login = await json("/api/v1/auth/login", { method: "POST", body: { email: EMAIL, password: PASSWORD } });
    expect(login.status).toBe(200);
    const created = await json("/api/v1/agent-keys", { method: "POST", headers: { authorization: `Bearer ${login.body.data.token}` }, body: { name: "dist", scopes: ALL_SCOPES } });
    expect(created.status).toBe(201);
    const key = { id: created.body.data.id as string, headers: { "x-agent-api-key": created.body.data.key as string } };

    const requestId = "dist-trace-wallet-0001";
    const provisioned = await json("/api/v1/agent/wallet/provision", { method: "POST", headers: { ...key.headers, "x-request-id": requestId }, body: {} });
    expect(provisioned.status).toBe(201);
    expect(provisioned.headers.get("x-request-id")).toBe(requestId);
    const [line, ...more] = await hostLines((l) => l.msg === "wallet provisioned" && l.agentKeyId === key.id);
    expect(more).toEqual([]);
    expect(line).toMatchObject({ level: "info", requestId, actor: `wallet/${key.id}`, address: provisioned.body.data.address });

    // the wallet's state made unreadable after its activation passivated: the host cannot activate it
    await Bun.sleep(500);
    await db.sql`UPDATE actor_state SET state = 'null'::jsonb WHERE kind = 'wallet' AND id = ${key.id}`;
    const failing = "dist-trace-activation-01";
    const read = await json("/api/v1/agent/wallet", { headers: { ...key.headers, "x-request-id": failing } });
    expect(read.status).toBe(503);
    expect(read.headers.get("x-request-id")).toBe(failing);
    const failed = await hostLines((l) => l.msg === "could not activate an actor" && l.id === key.id);
    expect(failed.length).toBeGreaterThanOrEqual(1);
    for (const l of failed) expect(l).toMatchObject({ level: "error", kind: "wallet", requestId: failing });
  }, 60_000);
});
