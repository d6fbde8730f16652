/**
 * Full checkout journeys (create cart → preview → complete with MOCK on the demo store), 64 agents in flight,
 * each with its own key, against the real service, every write durable (synchronous commit). Targets:
 *  - embedded: role `start` on the embedded Postgres (the default);
 *  - external: role `start` on an external Postgres (BENCH_PG_URL, default the local server, a fresh database);
 *  - split:    the `gateway` role in this process and the `actors` role in a child process over a private
 *              single-node NATS server, on the same external Postgres (the work spreads over both cores).
 * The HTTP client runs in this process (fetch), so its cost is part of every figure, as is the gateway's.
 *
 * Besides journeys/s and latency it reports, for the measured window: CPU per journey of this process, of the
 * actor-host child (split) and of the Postgres backends serving the run's database (from /proc), and SQL
 * statements per journey counted by postgres.js's `debug` hook (this process's pool only: in split mode the
 * actor host's statements run in the child and are not counted).
 *
 * The warm-up is 15 s by default: after 2 s the JIT is still compiling (DFG/FTL compiles go on for ~30 s; the
 * JIT thread used ~50 ms of CPU per second at 15 s), which added ~1 ms of Bun CPU per journey to the measured
 * window (engineer E, 2026-11-22: 7.3-7.5 ms with 2 s against 3.9-4.7 ms with 20 s, same code).
 *
 *   bun bench/checkout.ts                  # BENCH_SECONDS (default 10) measured per target after a warm-up
 *                                          # of BENCH_WARMUP_SECONDS (default 15)
 *   BENCH_TARGETS=external,split bun bench/checkout.ts
 *   BENCH_KEYS=1024 bun bench/checkout.ts  # agents take turns over 1,024 keys (default: one key per agent)
 *
 * Diagnostics, off by default (they cost CPU in the window: not for CPU figures): BENCH_TABLE_STATS=1 (rows written
 * per table, WAL, actor_state sizes; with BENCH_STATE_SAMPLE=1 a completed cart's stored state), BENCH_COUNT_STRINGIFY=1
 * (JSON.stringify calls and characters per journey in this process), BENCH_STATEMENT_TEXTS=1 (each statement text's
 * calls per journey, length and parameters: the SQL postgres.js builds).
 *
 * Key history: a completion reads the risk gate's velocity input (every checkout session of the key in the last hour,
 * grouped) and the hold guard (the key's pending orders of two days), both in proportion to the key's orders. With one
 * key per agent each key places journeys/s ÷ 64 orders a second, so the longer or faster a run, the more each read
 * costs (session 13: ~2–3 µs of Postgres CPU per order of the key, ~0.3–0.5 ms per journey at 150 orders per key).
 * The run reports the mean orders per key in the last hour at the window's end; compare runs at similar values, or
 * spread the journeys over more keys with BENCH_KEYS to measure the journey without the per-key history.
 */
import { chmod, mkdtemp, readFile, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { boot } from "../gateway/boot.ts";
import { connect, type Sql } from "../infra/db.ts";
import { setLogLevel } from "../infra/log.ts";
import { cpuMsOf, cpuSplitOf, machineLine, startNatsServer, waitForLogIn } from "./lib.ts";

setLogLevel("error");
const SECONDS = Number(process.env.BENCH_SECONDS ?? 10);
const WARMUP_SECONDS = Number(process.env.BENCH_WARMUP_SECONDS ?? 15);
const AGENTS = Number(process.env.BENCH_AGENTS ?? 64);
/** Agent keys the journeys spread over (agent w's i-th journey uses key (w + i·AGENTS) mod KEYS); default one per agent. */
const KEYS = Math.max(1, Number(process.env.BENCH_KEYS ?? AGENTS));
const PG = process.env.BENCH_PG_URL ?? "postgres://postgres@127.0.0.1:5432/postgres";
const TARGETS = (process.env.BENCH_TARGETS ?? (process.env.BENCH_ONLY_EXTERNAL === "1" ? "external" : "embedded,external,split")).split(",");
const ROOT = join(import.meta.dir, "..");
const SECRET_KEY = "c0".repeat(32);
/** Linux clock ticks per second (USER_HZ) for /proc/<pid>/stat times. */

interface Result {
  target: string;
  journeys: number;
  perSec: number;
  p50: number;
  p99: number;
  errors: number;
  /** CPU milliseconds per completed journey: this process, the actor-host child (split), Postgres backends. */
  cpuSelf: number;
  cpuChild: number | null;
  cpuPostgres: number;
  /** Statements per journey through this process's pool (null when the actor host runs elsewhere). */
  statements: number | null;
  load: string;
  /** Where the CPU and the writes go, per journey (see `Work`). */
  work: Work;
  /** Mean orders per agent key created in the last hour, at the window's end (see "Key history" above). */
  ordersPerKey: number;
}

/**
 * Per completed journey, besides the table's CPU figures: the split of this process's and the backends' CPU into user
 * and kernel time, the whole Postgres server's CPU (embedded only: every process pg_stat_activity lists, so WAL
 * writer, checkpointer, I/O workers and the autovacuum launcher count too; the external server is shared), and the
 * server's WAL (embedded: exact; external: every database's writes count).
 */
interface Work {
  selfUser: number;
  selfSys: number;
  backendUser: number;
  backendSys: number;
  server: number | null;
  walBytes: number;
  walRecords: number;
  walFpi: number;
  /** Shared buffers the run's database's backends touched (hit + read, pg_stat_database): a count, not a time. */
  buffers: number;
}

/** A running service under test: where to send requests, its pool, and processes whose CPU counts. */
interface Service {
  url: string;
  sql: Sql;
  childPid?: number;
  actorsInProcess: boolean;
  /** The service runs its own embedded Postgres (the whole server is the run's). */
  embedded?: boolean;
  stop(): Promise<void>;
}

async function json(url: string, path: string, init: { method?: string; headers?: Record<string, string>; body?: unknown } = {}) {
  const res = await fetch(url + path, {
    method: init.method ?? "GET",
    headers: { "content-type": "application/json", ...init.headers },
    body: init.body === undefined ? undefined : JSON.stringify(init.body),
  });
  return { status: res.status, body: (await res.json()) as any };
}

async function backendCpu(sql: Sql, pids: number[]): Promise<Map<number, [number, number]>> {
  const out = new Map<number, [number, number]>();
  for (const pid of pids) out.set(pid, await cpuSplitOf(pid));
  return out;
}

/** Summed CPU growth (user, kernel) of the processes in `before`, a process gone since counting nothing more. */
function cpuGrowth(before: Map<number, [number, number]>, after: Map<number, [number, number]>): [number, number] {
  let user = 0;
  let sys = 0;
  for (const [pid, [u, s]] of before) {
    const [u2, s2] = after.get(pid) ?? [u, s];
    user += Math.max(0, u2 - u);
    sys += Math.max(0, s2 - s);
  }
  return [user, sys];
}

/**
 * The server's WAL so far: the insert position in bytes (exact at the moment it is read), and records and full-page
 * images from pg_stat_wal (each backend adds its counts when it goes idle, at most once a second: read at both ends of
 * a steady window, the lag cancels out).
 */
async function walCounters(sql: Sql): Promise<[number, number, number]> {
  const [w] = await sql<{ lsn: string; wal_records: string; wal_fpi: string }[]>`
    SELECT pg_current_wal_insert_lsn() - '0/0'::pg_lsn AS lsn, wal_records, wal_fpi FROM pg_stat_wal`;
  return [Number(w!.lsn), Number(w!.wal_records), Number(w!.wal_fpi)];
}

/**
 * Shared-buffer accesses (hit + read) of the run's database so far, from pg_stat_database: like the WAL's counters
 * each backend adds its counts when it goes idle, at most once a second (the lag cancels out over a steady window).
 * Deterministic where CPU is not: what a change to a statement saves shows here on a loaded machine.
 */
async function bufferCounter(sql: Sql): Promise<number> {
  const [d] = await sql<{ n: string }[]>`SELECT blks_hit + blks_read AS n FROM pg_stat_database WHERE datname = current_database()`;
  return Number(d!.n);
}

const TABLE_STATS = process.env.BENCH_TABLE_STATS === "1";
type TableCounters = Map<string, number[]>;
const COUNTERS = ["n_tup_ins", "n_tup_upd", "n_tup_hot_upd", "n_tup_del"] as const;

/** Row counters of every table of the run's database (BENCH_TABLE_STATS=1): which writes a journey makes. */
async function tableStats(sql: Sql): Promise<TableCounters> {
  // WAL of the whole server (other databases' writes count too): records, full-page images, bytes
  const [w] = await sql<{ wal_records: string; wal_fpi: string; wal_bytes: string }[]>`SELECT wal_records, wal_fpi, wal_bytes FROM pg_stat_wal`;
  const rows = await sql<{ relname: string; n_tup_ins: string; n_tup_upd: string; n_tup_hot_upd: string; n_tup_del: string }[]>`
    SELECT relname, n_tup_ins, n_tup_upd, n_tup_hot_upd, n_tup_del FROM pg_stat_user_tables`;
  const m = new Map(rows.map((r) => [r.relname, COUNTERS.map((c) => Number(r[c]))]));
  m.set("(server WAL: records, fpi, kB, -)", [Number(w!.wal_records), Number(w!.wal_fpi), Number(w!.wal_bytes) / 1024, 0]);
  return m;
}

/** Per journey (approximate: the counters lag by up to a second): inserts, updates (HOT among them), deletes. */
function printTableStats(target: string, before: TableCounters, after: TableCounters, journeys: number): void {
  const lines: string[] = [];
  for (const [name, a] of after) {
    const b = before.get(name) ?? [0, 0, 0, 0];
    const d = a.map((x, i) => (x - b[i]!) / journeys);
    if (d.every((x) => x < 0.005)) continue;
    lines.push(`  ${name.padEnd(28)} ins ${d[0]!.toFixed(2)}  upd ${d[1]!.toFixed(2)} (hot ${d[2]!.toFixed(2)})  del ${d[3]!.toFixed(2)}`);
  }
  console.error(`table writes per journey, ${target}:\n${lines.sort().join("\n")}`);
}

async function loadAverage(): Promise<string> {
  return (await readFile("/proc/loadavg", "utf8")).split(" ").slice(0, 3).join(" ");
}

async function run(target: string, svc: Service): Promise<Result> {
  const url = svc.url;
  const token = (await json(url, "/api/v1/auth/login", { method: "POST", body: { email: "admin@example.com", password: "admin-password" } })).body.data.token;
  const keys: string[] = [];
  for (let i = 0; i < KEYS; i++) {
    const r = await json(url, "/api/v1/agent-keys", { method: "POST", headers: { authorization: `Bearer ${token}` }, body: { name: `bench-${i}`, scopes: ["cart", "checkout"] } });
    keys.push(r.body.data.key);
  }
  // Untracked-stock demo-store products, so the bench measures checkout, not a sell-out.
  const products = (await svc.sql<{ id: string }[]>`SELECT id FROM products WHERE store_slug = 'demo-store' AND active AND in_stock
    AND stock_quantity IS NULL AND jsonb_array_length(variants) = 0 ORDER BY id LIMIT 20`).map((r) => r.id);
  let measuring = false;
  let stop = false;
  const lat: number[] = [];
  let errors = 0;
  let statements = 0;
  let finished = 0;
  // BENCH_COUNT_STRINGIFY=1: JSON.stringify calls and characters printed in this process (gateway, actors, client)
  const printed = { calls: 0, chars: 0 };
  if (process.env.BENCH_COUNT_STRINGIFY === "1") {
    const original = JSON.stringify;
    JSON.stringify = function (this: unknown, ...args: Parameters<typeof JSON.stringify>) {
      const out = original.apply(this, args);
      if (measuring) {
        printed.calls++;
        printed.chars += out?.length ?? 0;
      }
      return out;
    } as typeof JSON.stringify;
  }
  // BENCH_STATEMENT_TEXTS=1: each statement text's calls, length and parameters (what postgres.js builds per journey)
  const texts = process.env.BENCH_STATEMENT_TEXTS === "1" ? new Map<string, { calls: number; params: number }>() : null;
  svc.sql.options.debug = (_conn: number, text: string, params: unknown[]) => {
    if (!measuring) return;
    statements++;
    if (texts) {
      const t = texts.get(text) ?? { calls: 0, params: params.length };
      t.calls++;
      texts.set(text, t);
    }
  };
  const journey = async (w: number, i: number) => {
    const headers = { "x-agent-api-key": keys[(w + i * AGENTS) % KEYS]! };
    const t0 = performance.now();
    const c = await json(url, "/api/v1/agent/cart", { method: "POST", headers, body: { items: [{ product_id: products[(w + i) % products.length], quantity: 1 }] } });
    const p = await json(url, "/api/v1/agent/checkout/preview", { method: "POST", headers, body: { cartId: c.body.data?.id } });
    const d = await json(url, "/api/v1/agent/checkout", {
      method: "POST",
      headers,
      body: { cartId: c.body.data?.id, checkout_session_id: p.body.data?.checkout_session_id, payment_method: "MOCK", idempotency_key: crypto.randomUUID() },
    });
    if (d.status === 200) finished++;
    if (!measuring) return;
    if (d.status === 200 && d.body.data.status === "COMPLETED") lat.push(performance.now() - t0);
    else errors++;
  };
  const workers = Array.from({ length: AGENTS }, async (_, w) => {
    for (let i = 0; !stop; i++) await journey(w, i).catch(() => measuring && errors++);
  });
  await Bun.sleep(WARMUP_SECONDS * 1000);
  // the pool is warm by now: its backends are the ones that serve the measured window
  const backends = (await svc.sql<{ pid: number }[]>`SELECT pid FROM pg_stat_activity WHERE datname = current_database() AND pid <> pg_backend_pid()`).map((r) => r.pid);
  // the whole server (embedded only: the external one serves other databases too), auxiliary processes included
  // (read together with the backends, from the same /proc snapshot, so that the server's figure includes theirs)
  const serverPids = svc.embedded ? (await svc.sql<{ pid: number }[]>`SELECT pid FROM pg_stat_activity WHERE pid <> pg_backend_pid()`).map((r) => r.pid) : [];
  const watched = [...new Set([...backends, ...serverPids])];
  const cpuBefore = await backendCpu(svc.sql, watched);
  const walBefore = await walCounters(svc.sql);
  const buffersBefore = await bufferCounter(svc.sql);
  const tablesBefore = TABLE_STATS ? await tableStats(svc.sql) : null;
  const finishedBefore = finished;
  const childBefore = svc.childPid ? await cpuMsOf(svc.childPid) : 0;
  const selfBefore = process.cpuUsage();
  measuring = true;
  const start = performance.now();
  await Bun.sleep(SECONDS * 1000);
  measuring = false;
  const elapsed = (performance.now() - start) / 1000;
  const finishedAtStop = finished;
  const self = process.cpuUsage(selfBefore);
  const childAfter = svc.childPid ? await cpuMsOf(svc.childPid) : 0;
  const cpuAfter = await backendCpu(svc.sql, watched);
  const walAfter = await walCounters(svc.sql);
  const buffersAfter = await bufferCounter(svc.sql);
  const load = await loadAverage();
  const [history] = await svc.sql<{ n: number }[]>`SELECT (count(*)::float8 / ${KEYS}) AS n FROM orders WHERE agent_key_id IS NOT NULL AND created_at > now() - interval '1 hour'`;
  stop = true;
  await Promise.all(workers);
  if (tablesBefore) await Bun.sleep(1200); // backends flush their table counters at most once a second
  const tablesAfter = tablesBefore ? await tableStats(svc.sql) : null;
  svc.sql.options.debug = false;
  const finishedInWindow = Math.max(1, finishedAtStop - finishedBefore);
  lat.sort((a, b) => a - b);
  const pct = (p: number) => lat[Math.min(lat.length - 1, Math.floor((p / 100) * lat.length))] ?? NaN;
  const n = Math.max(1, lat.length);
  const only = (m: Map<number, [number, number]>, pids: number[]) => new Map(pids.map((pid) => [pid, m.get(pid) ?? ([0, 0] as [number, number])]));
  const [pgUser, pgSys] = cpuGrowth(only(cpuBefore, backends), cpuAfter);
  const pgMs = pgUser + pgSys;
  const [serverUser, serverSys] = cpuGrowth(only(cpuBefore, serverPids), cpuAfter);
  if (tablesBefore && tablesAfter) {
    printTableStats(target, tablesBefore, tablesAfter, finished - finishedBefore);
    const sizes = await svc.sql`SELECT kind, count(*)::int AS n, avg(pg_column_size(state))::int AS state_bytes, avg(pg_column_size(s.*))::int AS row_bytes,
      (SELECT avg(pg_column_size(reply))::int FROM actor_inbox i WHERE i.kind = s.kind) AS reply_bytes FROM actor_state s GROUP BY kind`;
    console.error(sizes.map((r) => `  ${r.kind}: ${r.n} rows, state ${r.state_bytes} B stored, row ${r.row_bytes} B, inbox reply ${r.reply_bytes} B`).join("\n"));
    // BENCH_STATE_SAMPLE=1: the state of a cart with the most writes (a completed journey's), as stored (what the 4 state writes of a journey carry)
    if (process.env.BENCH_STATE_SAMPLE === "1") {
      const [sample] = await svc.sql<{ state: string }[]>`SELECT state::text AS state FROM actor_state WHERE kind = 'cart' ORDER BY version DESC, updated_at LIMIT 1`;
      console.error(`  a completed cart's state (${sample?.state.length ?? 0} characters of jsonb text): ${sample?.state ?? "none"}`);
    }
  }
  if (printed.calls > 0) {
    console.error(`  JSON.stringify per journey: ${(printed.calls / finishedInWindow).toFixed(2)} calls, ${Math.round(printed.chars / finishedInWindow)} characters`);
  }
  if (texts) {
    const rows = [...texts].map(([text, t]) => ({ text, perJourney: t.calls / finishedInWindow, chars: text.length, params: t.params }));
    const total = rows.reduce((a, r) => a + r.perJourney * r.chars, 0);
    console.error(`  statement texts per journey: ${rows.reduce((a, r) => a + r.perJourney, 0).toFixed(2)} statements, ${Math.round(total)} characters of SQL text`);
    for (const r of rows.sort((a, b) => b.perJourney * b.chars - a.perJourney * a.chars).slice(0, 12)) {
      console.error(`    ${r.perJourney.toFixed(2)} × ${r.chars} chars, ${r.params} params: ${r.text.replace(/\s+/g, " ").slice(0, 110)}`);
    }
  }
  return {
    target,
    journeys: lat.length,
    perSec: lat.length / elapsed,
    p50: pct(50),
    p99: pct(99),
    errors,
    cpuSelf: (self.user + self.system) / 1000 / n,
    cpuChild: svc.childPid ? (childAfter - childBefore) / n : null,
    cpuPostgres: pgMs / n,
    statements: svc.actorsInProcess ? statements / n : null,
    load,
    ordersPerKey: Number(history?.n ?? 0),
    work: {
      selfUser: self.user / 1000 / n,
      selfSys: self.system / 1000 / n,
      backendUser: pgUser / n,
      backendSys: pgSys / n,
      server: svc.embedded ? (serverUser + serverSys) / n : null,
      // per journey completed in the window (those in flight at either end about cancel out)
      walBytes: (walAfter[0] - walBefore[0]) / finishedInWindow,
      walRecords: (walAfter[1] - walBefore[1]) / finishedInWindow,
      walFpi: (walAfter[2] - walBefore[2]) / finishedInWindow,
      buffers: (buffersAfter - buffersBefore) / finishedInWindow,
    },
  };
}

/** A fresh database on the external server; `drop` removes it. */
async function scratchDatabase(): Promise<{ url: string; drop(): Promise<void> }> {
  const admin = connect(PG, 1);
  const name = `bench_checkout_${Date.now().toString(36)}`;
  await admin.unsafe(`CREATE DATABASE ${name}`);
  // Experiments only (never server-wide): BENCH_PG_SETTINGS="commit_delay=100;commit_siblings=2" applies to the run's database.
  for (const setting of (process.env.BENCH_PG_SETTINGS ?? "").split(";").filter((x) => x.trim())) {
    await admin.unsafe(`ALTER DATABASE ${name} SET ${setting}`);
  }
  const u = new URL(PG);
  u.pathname = `/${name}`;
  return {
    url: u.toString(),
    async drop() {
      await admin.unsafe(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`).catch(() => {});
      await admin.end();
    },
  };
}

async function startInProcess(databaseUrl: string): Promise<Service> {
  const embedded = !databaseUrl;
  const dir = await mkdtemp(join(tmpdir(), "acs-bench-checkout-"));
  await chmod(dir, 0o755); // embedded Postgres may run initdb as another user
  const running = await boot({
    role: "start",
    env: {},
    config: { DATA_DIR: dir, DATABASE_URL: databaseUrl, HOST: "127.0.0.1", PORT: 0, RATE_LIMITS_ENABLED: false, LOG_LEVEL: "error", SECRET_KEY },
  });
  return {
    url: running.url,
    sql: running.db.sql,
    actorsInProcess: true,
    embedded,
    async stop() {
      await running.stop();
      await rm(dir, { recursive: true, force: true });
    },
  };
}

/** Gateway role here, actors role in a child process, over a private NATS server (never the shared :4222). */
async function startSplit(databaseUrl: string): Promise<Service> {
  const seed = Bun.spawnSync(["bun", "infra/seed/cli.ts", "--database-url", databaseUrl, "--migrate"], { cwd: ROOT, stdout: "pipe", stderr: "pipe" });
  if (seed.exitCode !== 0) throw new Error(`seed failed: ${seed.stderr.toString()}`);
  const dir = await mkdtemp(join(tmpdir(), "acs-bench-checkout-"));
  const nats = await startNatsServer(join(dir, "nats"));
  const env = { ...process.env, DATABASE_URL: databaseUrl, NATS_URL: nats.url, SECRET_KEY, LOG_LEVEL: "error", DATA_DIR: dir, RATE_LIMITS_ENABLED: "false", METRICS_PORT: "0" };
  const actors = Bun.spawn(["bun", "gateway/main.ts", "actors"], { cwd: ROOT, env, stdout: "ignore", stderr: "inherit" });
  const running = await boot({
    role: "gateway",
    env: {},
    config: { DATA_DIR: dir, DATABASE_URL: databaseUrl, NATS_URL: nats.url, HOST: "127.0.0.1", PORT: 0, RATE_LIMITS_ENABLED: false, LOG_LEVEL: "error", SECRET_KEY },
  });
  await waitForLogIn(running.url, 100);
  return {
    url: running.url,
    sql: running.db.sql,
    childPid: actors.pid,
    actorsInProcess: false,
    async stop() {
      await running.stop();
      actors.kill("SIGTERM");
      await Promise.race([actors.exited, Bun.sleep(5000)]);
      actors.kill("SIGKILL");
      nats.proc.kill("SIGKILL");
      await rm(dir, { recursive: true, force: true });
    },
  };
}

const LABELS: Record<string, string> = {
  embedded: "embedded default (embedded Postgres)",
  external: "external Postgres (DATABASE_URL)",
  split: "split: gateway + actors processes over NATS, external Postgres",
};

const results: Result[] = [];
for (const target of TARGETS) {
  if (!(target in LABELS)) throw new Error(`unknown target ${target} (embedded, external, split)`);
  const db = target === "embedded" ? undefined : await scratchDatabase();
  const svc = target === "split" ? await startSplit(db!.url) : await startInProcess(db?.url ?? "");
  try {
    results.push(await run(LABELS[target]!, svc));
  } finally {
    await svc.stop();
    await db?.drop();
  }
}

const f = (x: number | null, digits = 1) => (x === null ? "—" : x.toFixed(digits));
console.log(`### Checkout journeys (${AGENTS} agents over ${KEYS} keys, ${SECONDS} s each; ${machineLine()})\n`);
console.log("| target | completed journeys/s | p50 ms | p99 ms | journeys | errors | CPU ms/journey: bench process | actor host | Postgres | statements/journey | load avg |");
console.log("|---|---|---|---|---|---|---|---|---|---|---|");
for (const r of results) {
  console.log(
    `| ${r.target} | ${r.perSec.toFixed(0)} | ${r.p50.toFixed(1)} | ${r.p99.toFixed(1)} | ${r.journeys} | ${r.errors} | ${f(r.cpuSelf, 2)} | ${f(r.cpuChild, 2)} | ${f(r.cpuPostgres, 2)} | ${f(r.statements)} | ${r.load} |`,
  );
}
console.log("\nPer completed journey: CPU ms user / kernel (bench process; Postgres backends of the run's database), the whole");
console.log("embedded server's CPU ms (every process pg_stat_activity lists), the server's WAL (external: all its databases) and the");
console.log("shared buffers the run's database touched (hit + read).\n");
console.log("| target | bench user / kernel | backends user / kernel | whole server (embedded) | WAL bytes | WAL records | full-page images | shared buffers | orders per key, last hour |");
console.log("|---|---|---|---|---|---|---|---|---|");
for (const r of results) {
  const w = r.work;
  console.log(
    `| ${r.target} | ${w.selfUser.toFixed(2)} / ${w.selfSys.toFixed(2)} | ${w.backendUser.toFixed(2)} / ${w.backendSys.toFixed(2)} | ${f(w.server, 2)} | ${w.walBytes.toFixed(0)} | ${w.walRecords.toFixed(1)} | ${w.walFpi.toFixed(2)} | ${w.buffers.toFixed(0)} | ${r.ordersPerKey.toFixed(0)} |`,
  );
}
process.exit(0);
