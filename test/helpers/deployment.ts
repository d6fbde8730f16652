/**
 * One set-up for the multi-process tests (test/distributed/): a temp dir, NATS (the 3-node local cluster or one
 * private nats-server with JetStream), a test database with seeded users, the role env block, actor hosts then
 * gateways spawned as processes (test/helpers/role-process.ts), and `stop()` that kills them all and cleans up.
 */
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { Subprocess } from "bun";
import { connect as natsConnect } from "@nats-io/transport-node";
import { jetstreamManager } from "@nats-io/jetstream";
import { hashPassword } from "../../infra/passwords.ts";
import { freePort, startLocalCluster, type LocalCluster } from "../../infra/nats/local-cluster.ts";
import { spawnRole as spawnRoleProcess, type RoleProc } from "./role-process.ts";
import { createTestDatabase, type TestDatabase } from "./db.ts";

export type Role = "actors" | "gateway";

export interface DeploymentOptions {
  /** mkdtemp prefix, e.g. "acs-dist-plan-". */
  prefix: string;
  /** "cluster": the 3-node local cluster (default); "single": one private nats-server with JetStream. */
  nats?: "cluster" | "single";
  /** Actor hosts spawned first, one after the other (default 1). */
  actors?: number;
  /** Gateways spawned next, all at once (default 1). */
  gateways?: number;
  /** Over the base env block; a key set to undefined is left out. */
  env?: Record<string, string | undefined>;
  /** Inserted (passwords hashed) before any role starts. */
  users?: { email: string; password: string; role: string }[];
  /** createTestDatabase({ seeded }). */
  seeded?: boolean;
  /** More rows before any role starts. */
  seed?: (db: TestDatabase) => Promise<void>;
}

export interface Deployment {
  dir: string;
  db: TestDatabase;
  natsUrl: string;
  cluster?: LocalCluster;
  /** The single nats-server's max_payload ("single" only). */
  maxPayload: number;
  env: Record<string, string>;
  procs: RoleProc[];
  actors: RoleProc[];
  gatewayProcs: RoleProc[];
  /** The gateways' URLs, in spawn order. */
  gateways: string[];
  /** Spawns one more role with the deployment's env and `env` over it (a key set to undefined is left out). */
  spawnRole(role: Role, env?: Record<string, string | undefined>): Promise<RoleProc>;
  stop(): Promise<void>;
}

function merge(base: Record<string, string>, over: Record<string, string | undefined> = {}): Record<string, string> {
  const out: Record<string, string> = { ...base };
  for (const [k, v] of Object.entries(over)) {
    if (v === undefined) delete out[k];
    else out[k] = v;
  }
  return out;
}

/** One private nats-server with JetStream, waited for until JetStream answers. */
export async function startSingleNats(storeDir: string): Promise<{ url: string; proc: Subprocess; maxPayload: number }> {
  const port = await freePort();
  const proc = Bun.spawn(["/usr/sbin/nats-server", "-js", "-a", "127.0.0.1", "-p", String(port), "-sd", storeDir], { stdout: "ignore", stderr: "ignore" });
  const url = `nats://127.0.0.1:${port}`;
  for (let i = 0; ; i++) {
    try {
      const nc = await natsConnect({ servers: url, timeout: 1000 });
      try {
        const maxPayload = nc.info!.max_payload;
        await (await jetstreamManager(nc, { timeout: 1000 })).getAccountInfo();
        return { url, proc, maxPayload };
      } finally {
        await nc.close();
      }
    } catch (err) {
      if (i > 100) {
        proc.kill("SIGKILL");
        throw err;
      }
      await Bun.sleep(100);
    }
  }
}

/**
 * Starts the deployment (from beforeAll). `onStarted` gets it as soon as NATS and the database are up, before any
 * role starts, so the caller's afterAll can `stop()` it even when a role never comes up and this rejects.
 */
export async function startDeployment(opts: DeploymentOptions, onStarted?: (d: Deployment) => void): Promise<Deployment> {
  const dir = await mkdtemp(join(tmpdir(), opts.prefix));
  const procs: RoleProc[] = [];
  let natsProc: Subprocess | undefined;
  let cluster: LocalCluster | undefined;
  let db: TestDatabase | undefined;
  const stop = async () => {
    for (const p of procs) p.proc.kill("SIGKILL");
    await Promise.all(procs.map((p) => p.proc.exited));
    await cluster?.stop().catch(() => {});
    natsProc?.kill("SIGKILL");
    await natsProc?.exited;
    await db?.drop().catch(() => {});
    await rm(dir, { recursive: true, force: true }).catch(() => {});
  };
  const natsStart =
    opts.nats === "single"
      ? startSingleNats(join(dir, "nats")).then((n) => ((natsProc = n.proc), n))
      : startLocalCluster({ dir: join(dir, "nats") }).then((c) => ((cluster = c), { url: c.url, maxPayload: 0 }));
  const dbStart = createTestDatabase(opts.seeded ? { seeded: true } : undefined).then((d) => (db = d));
  let nats: { url: string; maxPayload: number };
  try {
    [nats] = await Promise.all([natsStart, dbStart]);
  } catch (err) {
    await Promise.allSettled([natsStart, dbStart]);
    await stop();
    throw err;
  }
  const env = merge(
    {
      NATS_URL: nats.url,
      DATABASE_URL: db!.url,
      SECRET_KEY: "ab".repeat(32),
      DATA_DIR: join(dir, "data"),
      HOST: "127.0.0.1",
      PORT: "0",
      ACTOR_PARTITIONS: "16",
      LOG_LEVEL: "info",
      SEED_DEMO: "false",
      NODE_ENV: "test",
      // one public origin for the deployment, as docs/operations.md requires: the issuer of every gateway's tokens
      SITE_URL: "http://shop.test",
    },
    opts.env,
  );
  const dep: Deployment = {
    dir,
    db: db!,
    natsUrl: nats.url,
    cluster,
    maxPayload: nats.maxPayload,
    env,
    procs,
    actors: [],
    gatewayProcs: [],
    gateways: [],
    spawnRole: (role, over) => spawnRoleProcess(role, merge(env, over), procs),
    stop,
  };
  onStarted?.(dep);
  for (const u of opts.users ?? []) {
    await db!.sql`INSERT INTO users (email, password_hash, role) VALUES (${u.email}, ${await hashPassword(u.password)}, ${u.role})`;
  }
  await opts.seed?.(db!);
  for (let i = 0; i < (opts.actors ?? 1); i++) dep.actors.push(await dep.spawnRole("actors"));
  dep.gatewayProcs.push(...(await Promise.all(Array.from({ length: opts.gateways ?? 1 }, () => dep.spawnRole("gateway")))));
  dep.gateways.push(...dep.gatewayProcs.map((p) => p.url!));
  return dep;
}

/** fetch with a JSON body and a parsed JSON answer. */
export async function json(url: string, init: { method?: string; headers?: Record<string, string>; body?: unknown } = {}) {
  const res = await fetch(url, {
    method: init.method ?? "GET",
    headers: { ...(init.body !== undefined ? { "content-type": "application/json" } : {}), ...init.headers },
    body: init.body !== undefined ? JSON.stringify(init.body) : undefined,
  });
  const text = await res.text();
  return { status: res.status, headers: res.headers, body: text ? JSON.parse(text) : undefined };
}
