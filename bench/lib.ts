/**
 * Shared benchmark helpers: a bare `Bun.serve` baseline measured in the same run, wrk as the load generator
 * (Debian's `wrk`, a separate process so the client does not share the server's event loop), and a report that
 * states every figure as a ratio to the baseline.
 */
import { mkdtemp, readFile, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { freePort } from "../infra/nats/local-cluster.ts";
import { pumpLines } from "../test/helpers/role-process.ts";

export interface LoadResult {
  label: string;
  rps: number;
  p50ms: number;
  p99ms: number;
  errors: number;
}

export interface WrkOptions {
  connections?: number;
  threads?: number;
  durationSec?: number;
  method?: string;
  body?: string;
  headers?: Record<string, string>;
  /** A Lua script to use instead of the generated one (for varying bodies). */
  script?: string;
}

function toMs(v: string, unit: string): number {
  const n = Number(v);
  if (unit === "us") return n / 1000;
  if (unit === "s") return n * 1000;
  if (unit === "m") return n * 60_000;
  return n;
}

export async function wrk(label: string, url: string, opts: WrkOptions = {}): Promise<LoadResult> {
  const args = ["wrk", `-t${opts.threads ?? 2}`, `-c${opts.connections ?? 64}`, `-d${opts.durationSec ?? 10}s`, "--latency"];
  let script = opts.script;
  if (!script && (opts.method || opts.body || opts.headers)) {
    const lines = [`wrk.method = ${JSON.stringify(opts.method ?? "GET")}`];
    if (opts.body !== undefined) lines.push(`wrk.body = ${JSON.stringify(opts.body)}`);
    for (const [k, v] of Object.entries(opts.headers ?? {})) lines.push(`wrk.headers[${JSON.stringify(k)}] = ${JSON.stringify(v)}`);
    script = lines.join("\n");
  }
  if (script) {
    const dir = await mkdtemp(join(tmpdir(), "acs-bench-"));
    const file = join(dir, "script.lua");
    await writeFile(file, script);
    args.push("-s", file);
  }
  args.push(url);
  const proc = Bun.spawn(args, { stdout: "pipe", stderr: "pipe" });
  const out = await new Response(proc.stdout).text();
  const code = await proc.exited;
  if (code !== 0) throw new Error(`wrk failed (${code}): ${await new Response(proc.stderr).text()}`);
  const rps = Number(/Requests\/sec:\s+([\d.]+)/.exec(out)?.[1] ?? 0);
  const pct = (p: string) => {
    const m = new RegExp(`\\s${p}%\\s+([\\d.]+)(us|ms|s|m)`).exec(out);
    return m ? toMs(m[1], m[2]) : NaN;
  };
  const non2xx = Number(/Non-2xx or 3xx responses:\s+(\d+)/.exec(out)?.[1] ?? 0);
  const sockErr = /Socket errors:.*?connect (\d+), read (\d+), write (\d+), timeout (\d+)/.exec(out);
  const errors = non2xx + (sockErr ? sockErr.slice(1).reduce((a, b) => a + Number(b), 0) : 0);
  return { label, rps, p50ms: pct("50"), p99ms: pct("99"), errors };
}

/** The bare baseline: Bun.serve answering a small JSON body, nothing else. */
export function startBareBaseline(): { url: string; stop(): void } {
  const body = JSON.stringify({ success: true, data: { status: "ok" } });
  const server = Bun.serve({
    hostname: "127.0.0.1",
    port: 0,
    fetch: () => new Response(body, { headers: { "content-type": "application/json" } }),
  });
  return { url: `http://127.0.0.1:${server.port}`, stop: () => server.stop(true) };
}

export function report(title: string, baseline: LoadResult, results: LoadResult[]): string {
  const rows = [baseline, ...results].map((r) => {
    const ratio = r === baseline ? "1.00" : (r.rps / baseline.rps).toFixed(2);
    return `| ${r.label} | ${Math.round(r.rps).toLocaleString("en-US")} | ${r.p50ms.toFixed(2)} | ${r.p99ms.toFixed(2)} | ${ratio} | ${r.errors} |`;
  });
  const text = [`### ${title}`, "", "| target | req/s | p50 ms | p99 ms | ratio to bare Bun.serve | errors |", "|---|---|---|---|---|---|", ...rows].join("\n");
  console.log(text);
  return text;
}

export function machineLine(): string {
  const cpus = navigator.hardwareConcurrency;
  return `bun ${Bun.version}, ${cpus} cores, ${new Date().toISOString().slice(0, 10)}`;
}

/**
 * Runs baseline and targets interleaved for `rounds` rounds and keeps, per target, the round with the median
 * throughput: on a shared 2-core machine the load drifts by tens of percent between runs, and measuring the
 * baseline once, first, would let that drift decide the ratio.
 */
export async function interleaved(
  rounds: number,
  runs: { label: string; run: () => Promise<LoadResult> }[],
): Promise<LoadResult[]> {
  const results = runs.map(() => [] as LoadResult[]);
  for (let r = 0; r < rounds; r++) for (let i = 0; i < runs.length; i++) results[i]!.push(await runs[i]!.run());
  return results.map((list) => {
    const sorted = [...list].sort((a, b) => a.rps - b.rps);
    return sorted[Math.floor(sorted.length / 2)]!;
  });
}

/** Clock ticks per second of /proc/<pid>/stat (USER_HZ: 100 on Linux x86_64). */
const TICKS_PER_SECOND = 100;

/** utime + stime of a process in milliseconds (0 when it is gone). */
export async function cpuMsOf(pid: number): Promise<number> {
  const [user, sys] = await cpuSplitOf(pid);
  return user + sys;
}

/** utime and stime of a process in milliseconds ([0, 0] when it is gone). */
export async function cpuSplitOf(pid: number): Promise<[number, number]> {
  try {
    const stat = await readFile(`/proc/${pid}/stat`, "utf8");
    const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
    return [(Number(fields[11]) * 1000) / TICKS_PER_SECOND, (Number(fields[12]) * 1000) / TICKS_PER_SECOND];
  } catch {
    return [0, 0];
  }
}

/** One JetStream-enabled nats-server of our own on a free port (placement lives in a KV bucket). */
export async function startNatsServer(storeDir: string): Promise<{ url: string; proc: ReturnType<typeof Bun.spawn> }> {
  const port = await freePort();
  const bin = Bun.which("nats-server") || "/usr/sbin/nats-server";
  const proc = Bun.spawn([bin, "-a", "127.0.0.1", "-p", String(port), "-js", "-sd", storeDir], { stdout: "ignore", stderr: "ignore" });
  process.once("exit", () => proc.kill("SIGKILL"));
  for (let i = 0; i < 100; i++) {
    const open = await Bun.connect({ hostname: "127.0.0.1", port, socket: { data() {} } }).then(
      (s) => (s.end(), true),
      () => false,
    );
    if (open) return { url: `nats://127.0.0.1:${port}`, proc };
    await Bun.sleep(50);
  }
  throw new Error("nats-server did not start");
}

/** A server's CPU so far, ms: user and kernel time, and the gateways' part of it (in one process: all of it). */
export interface ServerCpuSample {
  user: number;
  system: number;
  gateways: number;
}

/** Server processes a bench started: where they answer, their CPU so far, and their stop. */
export interface ServerProcesses {
  url: string;
  cpu(): Promise<ServerCpuSample>;
  stop(): Promise<void>;
}

/** N gateway processes on one port (REUSE_PORT when N > 1) and one actor host over a private nats-server. */
export async function startGatewaysOnOnePort(databaseUrl: string, dir: string, n: number): Promise<ServerProcesses> {
  const natsDir = await mkdtemp(join(tmpdir(), "acs-bench-search-nats-"));
  const nats = await startNatsServer(natsDir);
  const port = await freePort();
  const url = `http://127.0.0.1:${port}`;
  // DATA_DIR: the sealing key the database's first boot wrote (give the same one); LOG_LEVEL info for the start lines, nothing per request
  const env = {
    ...process.env,
    DATABASE_URL: databaseUrl,
    NATS_URL: nats.url,
    DATA_DIR: dir,
    LOG_LEVEL: "info",
    RATE_LIMITS_ENABLED: "false",
    METRICS_PORT: "0",
    HOST: "127.0.0.1",
    PORT: String(port),
    SITE_URL: url,
    REUSE_PORT: n > 1 ? "true" : "false",
  };
  const root = join(import.meta.dir, "..");
  const procs: ReturnType<typeof Bun.spawn>[] = [];
  const spawnRole = async (role: "actors" | "gateway") => {
    // BENCH_CPU_PROF_DIR: every role process writes a `bun --cpu-prof` profile there when it exits (bench/cpuprofile-top.ts)
    const prof = process.env.BENCH_CPU_PROF_DIR ? ["--cpu-prof", "--cpu-prof-dir", process.env.BENCH_CPU_PROF_DIR] : [];
    const proc = Bun.spawn(["bun", ...prof, "gateway/main.ts", role], { cwd: root, env, stdout: "pipe", stderr: "pipe" });
    procs.push(proc);
    const want = role === "actors" ? "actor host started" : "gateway listening";
    let ready!: () => void;
    const up = new Promise<void>((r) => (ready = r));
    const lines: string[] = [];
    const onLine = (line: string) => {
      lines.push(line);
      if (lines.length > 20) lines.shift();
      if (line.includes(want)) ready();
      else if (line.includes('"level":"error"') || line.includes('"level":"fatal"')) process.stderr.write(`${role}: ${line}\n`);
    };
    void pumpLines(proc.stdout as ReadableStream<Uint8Array>, onLine);
    void pumpLines(proc.stderr as ReadableStream<Uint8Array>, onLine);
    await Promise.race([up, proc.exited.then((code) => Promise.reject(new Error(`${role} exited with ${code}:\n${lines.join("\n")}`))), Bun.sleep(120_000).then(() => Promise.reject(new Error(`${role} not up in 120 s`)))]);
  };
  const stop = async () => {
    for (const p of procs) p.kill("SIGTERM");
    await Promise.race([Promise.all(procs.map((p) => p.exited)), Bun.sleep(10_000)]);
    for (const p of procs) p.kill("SIGKILL");
    nats.proc.kill("SIGKILL");
    await rm(natsDir, { recursive: true, force: true });
  };
  try {
    await spawnRole("actors");
    // one after the other: each builds its index from Postgres, which is most of a start
    for (let i = 0; i < n; i++) await spawnRole("gateway");
    await waitForLogIn(url, 150);
  } catch (err) {
    await stop();
    throw err;
  }
  const gatewayPids = procs.slice(1).map((p) => p.pid);
  const otherPids = [procs[0]!.pid, nats.proc.pid];
  const cpu = async (): Promise<ServerCpuSample> => {
    let user = 0;
    let system = 0;
    let gateways = 0;
    for (const pid of [...gatewayPids, ...otherPids]) {
      const [u, s] = await cpuSplitOf(pid);
      user += u;
      system += s;
      if (gatewayPids.includes(pid)) gateways += u + s;
    }
    return { user, system, gateways };
  };
  return { url, cpu, stop };
}

/**
 * Placement: a gateway's first requests wait until an actor host owns their partitions. Tries the demo operator's
 * log-in every 200 ms, `tries` times at most, until it answers 200.
 */
export async function waitForLogIn(url: string, tries: number): Promise<void> {
  for (let i = 0; i < tries; i++) {
    const r = await fetch(`${url}/api/v1/auth/login`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ email: "admin@example.com", password: "admin-password" }),
    }).catch(() => undefined);
    if (r?.status === 200) return;
    await Bun.sleep(200);
  }
}

/** This process's CPU so far, as a server sample (the in-process service or bare Bun.serve: wrk is a child process). */
export async function ownCpu(): Promise<ServerCpuSample> {
  const c = process.cpuUsage();
  return { user: c.user / 1000, system: c.system / 1000, gateways: (c.user + c.system) / 1000 };
}

/**
 * The REST search load of bench/search.ts and bench/search-serve.ts as a wrk Lua script: `bodies` rotated as POST
 * bodies with the agent key, and `acceptEncoding` on every request when given (wrk sends none; HTTP libraries do).
 */
export function searchLuaScript(key: string, bodies: readonly unknown[], acceptEncoding?: string): string {
  // a header value written into a Lua string literal: plain token characters only
  if (acceptEncoding !== undefined && !/^[\w*.,;= -]*$/.test(acceptEncoding)) throw new Error(`--accept-encoding: unexpected characters in ${JSON.stringify(acceptEncoding)}`);
  const extra = acceptEncoding === undefined ? "" : `, ["Accept-Encoding"] = "${acceptEncoding}"`;
  return `local bodies = {\n${bodies.map((q) => `  [[${JSON.stringify(q)}]]`).join(",\n")}\n}
local i = 0
request = function()
  i = (i % #bodies) + 1
  return wrk.format("POST", "/api/v1/agent/search", { ["Content-Type"] = "application/json", ["X-Agent-Api-Key"] = "${key}"${extra} }, bodies[i])
end
`;
}

/** One wrk run of a Lua script, with the server's CPU over it (`serverCpu` sampled before and after). */
export interface ScriptedLoad {
  rps: number;
  p50: number;
  p99: number;
  errors: number;
  requests: number;
  /**
   * The server's CPU per completed request (this process, or the processes `serverCpu` sums): on a shared machine it
   * moves far less than req/s, which follows whatever else the cores are doing.
   */
  cpuMsPerRequest: number;
  /** Its kernel part. */
  sysMsPerRequest: number;
  /** The gateways' part (all of it in one process). */
  gatewaysCpuMsPerRequest: number;
}

/** wrk (2 threads) with `scriptPath` against `url`, and the server's CPU per request over the run. */
export async function wrkScript(url: string, scriptPath: string, connections: number, durationSec: number, serverCpu: () => Promise<ServerCpuSample> = ownCpu): Promise<ScriptedLoad> {
  const before = await serverCpu();
  const p = Bun.spawn(["wrk", "-t2", `-c${connections}`, `-d${durationSec}s`, "--latency", "-s", scriptPath, url], { stdout: "pipe", stderr: "pipe" });
  const out = await new Response(p.stdout).text();
  await p.exited;
  const after = await serverCpu();
  const requests = Number(/(\d+) requests in/.exec(out)?.[1] ?? 0);
  const per = (ms: number) => (requests > 0 ? ms / requests : NaN);
  const pct = (p: string) => {
    const m = new RegExp(`\\s${p}%\\s+([\\d.]+)(us|ms|s|m)`).exec(out);
    return m ? toMs(m[1]!, m[2]!) : NaN;
  };
  const non2xx = Number(/Non-2xx or 3xx responses:\s+(\d+)/.exec(out)?.[1] ?? 0);
  const sock = /Socket errors: connect (\d+), read (\d+), write (\d+), timeout (\d+)/.exec(out);
  return {
    rps: Number(/Requests\/sec:\s+([\d.]+)/.exec(out)?.[1] ?? NaN),
    p50: pct("50"),
    p99: pct("99"),
    errors: non2xx + (sock ? sock.slice(1).reduce((sum, x) => sum + Number(x), 0) : 0),
    requests,
    cpuMsPerRequest: per(after.user + after.system - before.user - before.system),
    sysMsPerRequest: per(after.system - before.system),
    gatewaysCpuMsPerRequest: per(after.gateways - before.gateways),
  };
}
