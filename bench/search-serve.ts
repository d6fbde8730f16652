/**
 * bench/search-serve.ts: the REST search of bench/search.ts on a catalog seeded once, for repeated and
 * profiled runs (A/B of HTTP-side work, `bun --cpu-prof`).
 *
 *   bun bench/search-serve.ts --create [--products 100000] [--merchants 1000]      # prints the database URL
 *   RATE_LIMITS_ENABLED=false bun [--cpu-prof --cpu-prof-dir DIR] bench/search-serve.ts --database-url URL
 *        [--duration 10] [--rounds 1] [--connections 64] [--queries 500] [--accept-encoding "gzip, zstd"]
 *   bun bench/search-serve.ts --drop URL
 *
 * `--create` makes a scratch database (and `--data-dir`, the sealing key's home, shared by the later runs), boots the service once (migrations, demo seed: the admin user) and runs
 * `bun run seed -- --products N --merchants M` into it. The serve mode boots the gateway on that database (the
 * start-up load builds the index), makes an agent key, warms up with wrk for 2 s, then runs wrk `--rounds` times
 * with the same Lua script and query mix as bench/search.ts and prints the server's CPU ms per request of each
 * round (this process hosts the server; wrk is a child), and that figure net of the process's idle CPU (measured
 * for 5 s before the load: actors' timers and the catch-up, spread over fewer requests the slower the machine).
 * Under `--cpu-prof` the profile covers the whole process: `bun bench/cpuprofile-top.ts FILE --tail SECONDS`
 * keeps the wrk part only.
 *
 * `--accept-encoding VALUE` sends that Accept-Encoding with every search (wrk sends none): answers from 8 KiB up are
 * then compressed (gateway/plugins/compression.ts), so CPU per request can be compared with and without compression;
 * the line printed names the value and the coding the probe search was answered with.
 *
 * `--gateways N` (session 19): the distributed roles instead of the in-process service: a private nats-server, one
 * `actors` process and N `gateway` processes on one port (REUSE_PORT when N > 1, docs/operations.md "Several gateways
 * on one machine"), each with its own search index. CPU per request is then the sum over those processes (from
 * /proc: gateways, actor host, nats-server), and the gateways' share is printed beside it.
 */
import { mkdir, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { parseArgs } from "node:util";
import postgres from "postgres";
import { boot } from "../gateway/boot.ts";
import { ownCpu, searchLuaScript, startGatewaysOnOnePort, wrkScript, type ServerProcesses } from "./lib.ts";
import { queryMix } from "./search-queries.ts";

const { values } = parseArgs({
  args: process.argv.slice(2),
  options: {
    create: { type: "boolean", default: false },
    drop: { type: "string" },
    products: { type: "string", default: "100000" },
    merchants: { type: "string", default: "1000" },
    "database-url": { type: "string" },
    duration: { type: "string", default: "10" },
    rounds: { type: "string", default: "1" },
    connections: { type: "string", default: "64" },
    queries: { type: "string", default: "500" },
    /** 0: the service in this process (role start); N >= 1: N gateway processes + an actor host over NATS. */
    gateways: { type: "string", default: "0" },
    /** Sent as Accept-Encoding with every search (none when absent, as wrk does on its own). */
    "accept-encoding": { type: "string" },
    /** The service's DATA_DIR (its sealing key): give --create and every serve run of one database the same one. */
    "data-dir": { type: "string", default: join(tmpdir(), "bench-search-serve") },
    "admin-url": { type: "string", default: process.env.TEST_DATABASE_ADMIN_URL ?? "postgres://postgres@127.0.0.1:5432/postgres" },
  },
});

async function json(url: string, init: { method?: string; headers?: Record<string, string>; body?: unknown } = {}) {
  const res = await fetch(url, { method: init.method, headers: { "content-type": "application/json", ...init.headers }, body: init.body === undefined ? undefined : JSON.stringify(init.body) });
  return { status: res.status, body: (await res.json()) as any };
}

const adminUrl = values["admin-url"]!;

if (values.drop) {
  const name = new URL(values.drop).pathname.slice(1);
  const a = postgres(adminUrl, { max: 1, onnotice: () => {} });
  await a.unsafe(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
  await a.end();
  process.exit(0);
}

if (values.create) {
  const name = `bench_search_${crypto.randomUUID().replace(/-/g, "").slice(0, 12)}`;
  const a = postgres(adminUrl, { max: 1, onnotice: () => {} });
  await a.unsafe(`CREATE DATABASE ${name}`);
  await a.end();
  const url = new URL(adminUrl);
  url.pathname = `/${name}`;
  const dataDir = values["data-dir"]!;
  await mkdir(dataDir, { recursive: true });
  const first = await boot({ role: "start", env: {}, config: { DATABASE_URL: url.toString(), PORT: 0, DATA_DIR: dataDir, SEED_DEMO: true, LOG_LEVEL: "error", RATE_LIMITS_ENABLED: false } });
  await first.stop();
  const seed = Bun.spawn(["bun", "infra/seed/cli.ts", "--products", values.products!, "--merchants", values.merchants!, "--database-url", url.toString()], { stdout: "inherit", stderr: "inherit" });
  if ((await seed.exited) !== 0) throw new Error("seed failed");
  console.log(url.toString());
  process.exit(0);
}

const dbUrl = values["database-url"];
if (!dbUrl) throw new Error("--database-url (or --create / --drop)");
const dataDir = values["data-dir"]!;
const gatewayCount = Number(values.gateways);
const service = gatewayCount > 0 ? await startGatewaysOnOnePort(dbUrl, dataDir, gatewayCount) : await startInProcess(dbUrl, dataDir);
try {
  const token = (await json(`${service.url}/api/v1/auth/login`, { method: "POST", body: { email: "admin@example.com", password: "admin-password" } })).body.data.token;
  const key = (await json(`${service.url}/api/v1/agent-keys`, { method: "POST", headers: { authorization: `Bearer ${token}` }, body: { name: "bench", tier: "ENTERPRISE" } })).body.data.key as string;
  const bodies = queryMix(Number(values.queries));
  const script = join(dataDir, "search.lua");
  const acceptEncoding = values["accept-encoding"];
  await writeFile(script, searchLuaScript(key, bodies, acceptEncoding));
  const probe = await json(`${service.url}/api/v1/agent/search`, { method: "POST", headers: { "x-agent-api-key": key }, body: bodies[0] });
  if (probe.status !== 200) throw new Error(`probe search failed: ${probe.status} ${JSON.stringify(probe.body)}`);
  // what the load's searches are answered with: the same search asked with the load's Accept-Encoding only (fetch
  // sends its own unless told not to decompress)
  const encodedProbe = await fetch(`${service.url}/api/v1/agent/search`, {
    method: "POST",
    headers: { "content-type": "application/json", "x-agent-api-key": key, ...(acceptEncoding === undefined ? {} : { "accept-encoding": acceptEncoding }) },
    body: JSON.stringify(bodies[0]),
    decompress: false,
  } as RequestInit);
  const encoding = { acceptEncoding: acceptEncoding ?? null, contentEncoding: encodedProbe.headers.get("content-encoding"), probeBytes: (await encodedProbe.arrayBuffer()).byteLength };
  if (gatewayCount === 0) Bun.gc(true);
  // the server's CPU with no request in flight (actors' timers, catch-up, pools): spread over few requests on a
  // saturated machine it inflates CPU per request, so it is printed and subtracted too
  const idle0 = await service.cpu();
  const idleT0 = performance.now();
  await Bun.sleep(5_000);
  const idle1 = await service.cpu();
  const idleMsPerSec = (idle1.user + idle1.system - idle0.user - idle0.system) / ((performance.now() - idleT0) / 1000);
  await wrkScript(service.url, script, Number(values.connections), 2, service.cpu);
  for (let r = 0; r < Number(values.rounds); r++) {
    const w = await wrkScript(service.url, script, Number(values.connections), Number(values.duration), service.cpu);
    const load = (await Bun.file("/proc/loadavg").text()).split(" ").slice(0, 3).join(" ");
    const netOfIdle = w.cpuMsPerRequest - idleMsPerSec / w.rps;
    const r3 = (x: number) => Math.round(x * 1000) / 1000;
    console.log(
      JSON.stringify({
        round: r + 1,
        gateways: gatewayCount,
        rps: Math.round(w.rps),
        p50: w.p50,
        p99: w.p99,
        errors: w.errors,
        cpuMsPerRequest: r3(w.cpuMsPerRequest),
        sysMsPerRequest: r3(w.sysMsPerRequest),
        ...(gatewayCount > 0 ? { gatewaysCpuMsPerRequest: r3(w.gatewaysCpuMsPerRequest) } : {}),
        idleCpuMsPerSec: r3(idleMsPerSec),
        cpuMsPerRequestNetOfIdle: r3(netOfIdle),
        load,
        ...encoding,
      }),
    );
  }
} finally {
  await service.stop().catch(() => {});
}
process.exit(0);

async function startInProcess(databaseUrl: string, dir: string): Promise<ServerProcesses> {
  const running = await boot({ role: "start", env: {}, config: { DATABASE_URL: databaseUrl, PORT: 0, DATA_DIR: dir, SEED_DEMO: false, LOG_LEVEL: "error", RATE_LIMITS_ENABLED: false } });
  return { url: running.url, cpu: ownCpu, stop: () => running.stop() };
}
