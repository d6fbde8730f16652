/**
 * A gateway process's health report says whether actor hosts are there (audit U LOW-5): with no live host every
 * actor call is 503 while the database is fine, so the status (the database's, as the spec says) stays "ok" and
 * `subsystems.actors` / `ready` turn false. One `bun gateway/main.ts actors` and one `… gateway` over a 1-node NATS.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { Subprocess } from "bun";
import { createServer } from "node:net";
import { connect as natsConnect } from "@nats-io/transport-node";
import { jetstreamManager } from "@nats-io/jetstream";
import { spawnRole as spawnRoleProcess, type RoleProc } from "../helpers/role-process.ts";
import { createTestDatabase, type TestDatabase } from "../helpers/db.ts";

let nats: Subprocess | undefined;
let db: TestDatabase;
let dir: string;
let env: Record<string, string>;
const procs: RoleProc[] = [];

const spawnRole = (role: "actors" | "gateway") => spawnRoleProcess(role, env, procs);

function freePort(): Promise<number> {
  return new Promise((res, rej) => {
    const srv = createServer();
    srv.listen(0, "127.0.0.1", () => {
      const addr = srv.address();
      srv.close(() => (typeof addr === "object" && addr ? res(addr.port) : rej(new Error("no port"))));
    });
  });
}

/** One private nats-server with JetStream (cheaper than the 3-node local cluster; nothing here needs a quorum). */
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

async function health(gateway: string): Promise<{ status: number; body: any }> {
  const res = await fetch(`${gateway}/api/v1/health`);
  return { status: res.status, body: await res.json() };
}

/** Polls until `ok` holds (the report is cached for a second; a host that leaves is gone from the view at once). */
async function eventually(gateway: string, ok: (b: any) => boolean, ms = 10_000): Promise<{ status: number; body: any }> {
  const until = Date.now() + ms;
  let last = await health(gateway);
  while (!ok(last.body) && Date.now() < until) {
    await Bun.sleep(250);
    last = await health(gateway);
  }
  return last;
}

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), "acs-dist-health-"));
  let natsUrl: string;
  [natsUrl, db] = await Promise.all([startNats(join(dir, "nats")), createTestDatabase()]);
  env = {
    NATS_URL: natsUrl,
    DATABASE_URL: db.url,
    SECRET_KEY: "ab".repeat(32),
    DATA_DIR: join(dir, "data"),
    HOST: "127.0.0.1",
    PORT: "0",
    METRICS_PORT: "0",
    ACTOR_PARTITIONS: "8",
    LOG_LEVEL: "info",
    SEED_DEMO: "false",
    NODE_ENV: "test",
    SITE_URL: "http://shop.test",
    ACTOR_ASK_TIMEOUT_MS: "2000", // the login with no host answers 503 after 2 s of retries instead of 10 s
  };
}, 60_000);

afterAll(async () => {
  for (const p of procs) p.proc.kill("SIGKILL");
  await Promise.all(procs.map((p) => p.proc.exited));
  nats?.kill("SIGKILL");
  await nats?.exited;
  await db?.drop().catch(() => {});
  if (dir) await rm(dir, { recursive: true, force: true }).catch(() => {});
});

describe("health on a gateway process", () => {
  test("reports the live actor hosts, and actors false with status ok once the only host has stopped", async () => {
    const host = await spawnRole("actors");
    const gw = (await spawnRole("gateway")).url!;

    const up = await eventually(gw, (b) => b.data?.subsystems?.actors === true);
    expect(up.status).toBe(200);
    expect(up.body.data.status).toBe("ok");
    expect(up.body.data.subsystems.actors).toBe(true);
    expect(up.body.data.ready).toBe(true);
    expect(up.body.data.actorHosts).toEqual({ transport: "nats", liveHosts: 1, unownedPartitions: {}, ready: true });

    host.proc.kill("SIGTERM");
    await host.proc.exited;
    const down = await eventually(gw, (b) => b.data?.subsystems?.actors === false);
    // the spec's rule: 200 and "ok" while the database answers
    expect(down.status).toBe(200);
    expect(down.body.data.status).toBe("ok");
    expect(down.body.data.subsystems).toMatchObject({ database: true, actors: false });
    expect(down.body.data.ready).toBe(false);
    expect(down.body.data.actorHosts.liveHosts).toBe(0);
    expect(down.body.data.actorHosts.ready).toBe(false);
    // what the operator's alert is for: an actor call on that gateway fails
    const login = await fetch(`${gw}/api/v1/auth/login`, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify({ email: "a@b.example", password: "x" }), signal: AbortSignal.timeout(20_000) });
    expect(login.status).toBe(503);
  }, 90_000);
});
