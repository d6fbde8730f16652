/**
 * Shared set-up of the distributed tests: a 3-node NATS cluster and actor-host processes (separate processes,
 * Bun.spawn), a fresh test database, and a gateway-side ActorClient over NatsTransport in the test process.
 * Everything started here is killed by `teardown()` (and on process exit, should a test crash).
 */
import { copyFile, mkdir, mkdtemp, readdir, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { Subprocess } from "bun";
import { ActorClient } from "../../actors/runtime/client.ts";
import { NatsTransport } from "../../actors/transport/nats.ts";
import { partitionOf, rendezvousOwner } from "../../actors/transport/placement.ts";
import { startLocalCluster, type LocalCluster } from "../../infra/nats/local-cluster.ts";
import { applyMigrations } from "../../infra/db.ts";
import { createTestDatabase, type TestDatabase } from "../helpers/db.ts";
import { pumpLines } from "../helpers/role-process.ts";
import { ledger } from "./fixtures/ledger.ts";

export const PARTITIONS = 16;
export const HEARTBEAT_MS = 1000;
export const TTL_MS = 3000;
const FIXTURE = join(import.meta.dir, "fixtures", "host-process.ts");

export interface HostProc {
  id: string;
  proc: Subprocess<"pipe", "pipe", "pipe">;
  output: string[];
  /** Error-level log lines, kept apart from `output` so later chatter cannot push them out. */
  errors: string[];
}

export interface HostStats {
  hostId: string;
  fencing: number;
  server: string;
  owned: number[];
  live: string[];
  activations: number;
}

export class Env {
  cluster!: LocalCluster;
  db!: TestDatabase;
  dir!: string;
  hosts = new Map<string, HostProc>();
  gateway!: NatsTransport;
  client!: ActorClient;
  readonly bucket = `actor_hosts`;
  private readonly onExit = () => this.killAllSync();

  static async start(opts: { hosts: string[]; hostServers?: (urls: string[], i: number) => string[]; gatewayServers?: (urls: string[]) => string[] }): Promise<Env> {
    const env = new Env();
    process.once("exit", env.onExit);
    try {
      env.dir = await mkdtemp(join(tmpdir(), "acs-dist-"));
      const [cluster, db] = await Promise.allSettled([startClusterRetrying(join(env.dir, "nats")), runtimeDatabase(join(env.dir, "migrations"))]);
      if (cluster.status === "fulfilled") env.cluster = cluster.value;
      if (db.status === "fulfilled") env.db = db.value;
      if (cluster.status === "rejected") throw cluster.reason;
      if (db.status === "rejected") throw db.reason;
      const urls = env.cluster.urls;
      await Promise.all(opts.hosts.map((id, i) => env.spawnHost(id, opts.hostServers?.(urls, i) ?? urls)));
      const gwServers = opts.gatewayServers?.(urls) ?? urls;
      env.gateway = await NatsTransport.connect({ servers: gwServers, partitions: PARTITIONS, noRandomize: !!opts.gatewayServers, name: "gateway" });
      env.client = new ActorClient(env.gateway, { attemptTimeoutMs: 1000, defaultTimeoutMs: 20_000 });
      await env.waitPlacement(opts.hosts);
      return env;
    } catch (err) {
      // a failed start must not leave processes behind (afterAll never sees this env)
      await env.teardown();
      throw err;
    }
  }

  async spawnHost(id: string, servers: string[]): Promise<HostProc> {
    const proc = Bun.spawn(["bun", FIXTURE], {
      env: {
        ...process.env,
        NATS_URL: servers.join(","),
        DATABASE_URL: this.db.url,
        HOST_ID: id,
        ACTOR_PARTITIONS: String(PARTITIONS),
        HEARTBEAT_MS: String(HEARTBEAT_MS),
        TTL_MS: String(TTL_MS),
        NO_RANDOMIZE: "1",
        LOG_LEVEL: process.env.DIST_LOG_LEVEL ?? "warn",
      },
      stdin: "pipe", // the host exits when this pipe closes, so it never outlives the test process
      stdout: "pipe",
      stderr: "pipe",
    });
    const h: HostProc = { id, proc, output: [], errors: [] };
    this.hosts.set(id, h);
    let ready!: () => void;
    const readyP = new Promise<void>((r) => (ready = r));
    const pump = (stream: ReadableStream<Uint8Array>, tag: string) =>
      pumpLines(stream, (line) => {
        if (line.startsWith(`READY ${id}`)) ready();
        h.output.push(`${tag} ${line}`);
        if (line.includes('"level":"error"') && h.errors.length < 100) h.errors.push(line.slice(0, 600));
        if (h.output.length > 400) h.output.shift();
        if (process.env.DIST_VERBOSE) console.log(`[${id}] ${line}`);
      });
    void pump(proc.stdout, "out");
    void pump(proc.stderr, "err");
    const timeout = Bun.sleep(20_000).then(() => {
      throw new Error(`host ${id} not ready in 20 s:\n${h.output.join("\n")}`);
    });
    const died = proc.exited.then((code) => {
      throw new Error(`host ${id} exited with ${code} before ready:\n${h.output.join("\n")}`);
    });
    await Promise.race([readyP, timeout, died]);
    return h;
  }

  /** Waits until every listed host reports the same live set and together they own each partition once. */
  async waitPlacement(hostIds: string[], timeoutMs = 15_000): Promise<void> {
    const end = Date.now() + timeoutMs;
    let last: HostStats[] = [];
    while (Date.now() < end) {
      try {
        last = await Promise.all(hostIds.map((id) => this.stats(id)));
        const owned = last.flatMap((s) => s.owned).sort((a, b) => a - b);
        const agree = last.every((s) => s.live.join() === [...hostIds].sort().join());
        if (agree && owned.length === PARTITIONS && owned.every((p, i) => p === i)) return;
      } catch {
        // a host not answering yet
      }
      await Bun.sleep(100);
    }
    throw new Error(`placement did not settle on ${hostIds.join(",")}: ${JSON.stringify(last)}`);
  }

  async stats(hostId: string, timeoutMs = 1000): Promise<HostStats> {
    const m = await this.gateway.nc.request(`fixture.${hostId}.stats`, "", { timeout: timeoutMs });
    return m.json<HostStats>();
  }

  /** Which host owns account `id` when exactly `live` hosts are alive. */
  ownerOf(id: string, live: string[]): string {
    return rendezvousOwner(ledger.kind, partitionOf(id, PARTITIONS), live)!;
  }

  signal(hostId: string, sig: NodeJS.Signals): void {
    this.hosts.get(hostId)!.proc.kill(sig);
  }

  /** Final state of every ledger account, read straight from Postgres. */
  async ledgers(): Promise<Map<string, { version: number; refs: string[]; balance: number }>> {
    const rows = await this.db.sql<{ id: string; version: number; state: { refs: string[]; balance: number } }[]>`
      SELECT id, version, state FROM actor_state WHERE kind = 'ledger'`;
    return new Map(rows.map((r) => [r.id, { version: Number(r.version), refs: r.state.refs, balance: r.state.balance }]));
  }

  private killAllSync(): void {
    for (const h of this.hosts.values()) {
      try {
        h.proc.kill("SIGKILL");
      } catch {
        // already gone
      }
    }
    for (const pid of this.cluster?.pids() ?? []) {
      try {
        process.kill(pid, "SIGKILL");
      } catch {
        // already gone
      }
    }
  }

  async teardown(): Promise<void> {
    process.removeListener("exit", this.onExit);
    this.killAllSync();
    await Promise.all([...this.hosts.values()].map((h) => h.proc.exited));
    // the cluster goes next anyway: do not let a drain wait on it
    await Promise.race([this.gateway?.close().catch(() => {}), Bun.sleep(2000)]);
    await this.cluster?.stop().catch(() => {});
    await this.db?.drop().catch(() => {});
    if (this.dir) await rm(this.dir, { recursive: true, force: true }).catch(() => {});
  }

  /**
   * Error-level log lines of the hosts (their LOG_LEVEL is warn unless DIST_LOG_LEVEL says otherwise). An actor turn
   * that failed answered internal_error to some caller, which does not retry it: even when another reply to that
   * request won the race, such a line is a bug the load test should fail on.
   */
  hostErrors(): string[] {
    return [...this.hosts.values()].flatMap((h) => h.errors.map((l) => `${h.id} ${l}`));
  }

  dump(): string {
    return [...this.hosts.values()].map((h) => `--- ${h.id}\n${h.output.slice(-60).join("\n")}`).join("\n");
  }
}

/** Free ports are picked before the servers bind them; on a busy machine another process can win one. */
async function startClusterRetrying(dir: string): Promise<LocalCluster> {
  for (let attempt = 1; ; attempt++) {
    try {
      return await startLocalCluster({ dir: `${dir}-${attempt}` });
    } catch (err) {
      if (attempt >= 3) throw err;
      console.warn(`local NATS cluster failed to start (attempt ${attempt}): ${(err as Error).message}`);
    }
  }
}

/**
 * A fresh database with only the actor runtime's migrations: these tests need nothing else. They are 0001–0009 and
 * 0096, which gave `actor_state` the `expiry_ms` column every state write names (actors/runtime/state-write.ts).
 */
async function runtimeDatabase(dir: string): Promise<TestDatabase> {
  const db = await createTestDatabase({ migrate: false, poolSize: 4 });
  const src = join(import.meta.dir, "..", "..", "infra", "migrations");
  await mkdir(dir, { recursive: true });
  for (const f of await readdir(src)) if (/^(000\d|0096)_.+\.sql$/.test(f)) await copyFile(join(src, f), join(dir, f));
  await applyMigrations(db.sql, dir);
  return db;
}

export interface Outcome {
  ref: string;
  account: string;
  start: number;
  end: number;
  ok: boolean;
  error?: string;
}

/**
 * Concurrent deposits: `workers` loops, each sending one deposit at a time to accounts in turn, until `stop()`
 * returns true. Every outcome is recorded (acknowledged or not) for the invariants checked afterwards.
 */
export async function runLoad(env: Env, opts: { accounts: string[]; workers: number; stop: () => boolean; tag: string }): Promise<Outcome[]> {
  const out: Outcome[] = [];
  let n = 0;
  await Promise.all(
    Array.from({ length: opts.workers }, async (_, w) => {
      let i = w;
      while (!opts.stop()) {
        const account = opts.accounts[i++ % opts.accounts.length];
        const ref = `${opts.tag}-${w}-${n++}`;
        const start = Date.now();
        try {
          await env.client.ask(ledger, account, "deposit", { ref, amount: 1 }, { timeoutMs: 12_000 });
          out.push({ ref, account, start, end: Date.now(), ok: true });
        } catch (err) {
          out.push({ ref, account, start, end: Date.now(), ok: false, error: String((err as Error)?.message ?? err) });
        }
      }
    }),
  );
  return out;
}

/** Every acknowledged deposit is present exactly once; no deposit at all appears twice. */
export function checkLedgers(outcomes: Outcome[], ledgers: Map<string, { refs: string[]; balance: number }>): { acked: number; failed: number; problems: string[] } {
  const problems: string[] = [];
  const seen = new Map<string, number>();
  for (const [id, l] of ledgers) {
    for (const r of l.refs) seen.set(r, (seen.get(r) ?? 0) + 1);
    if (l.balance !== l.refs.length) problems.push(`${id}: balance ${l.balance} != ${l.refs.length} deposits`);
  }
  for (const [ref, c] of seen) if (c > 1) problems.push(`${ref} applied ${c} times`);
  let acked = 0;
  let failed = 0;
  for (const o of outcomes) {
    if (o.ok) {
      acked++;
      if (!seen.has(o.ref)) problems.push(`acknowledged ${o.ref} (${o.account}) is missing`);
    } else failed++;
  }
  return { acked, failed, problems: problems.slice(0, 20) };
}
