/**
 * The floor of issue #5's latency goal on this machine: the search engine, ranking and response JSON behind a bare
 * `Bun.serve`, with nothing of the service around them (no Elysia, authentication, admission, validation, request
 * ids, metrics or logs), under bench/search.ts's load (wrk, 2 threads, 64 connections, the same 500-body mix).
 *
 * The catalog is the synthetic one of `bun run seed -- --products N --merchants M`, built in memory as
 * bench/search-inprocess.ts does (no Postgres). If this floor cannot answer at p99 <= 20 ms, no gateway in front of
 * the same engine can: the goal then needs a cheaper search, not a cheaper service.
 *
 * `--processes N` (default 1): N such servers on one port (SO_REUSEPORT), each with its own index, as N gateways on
 * one machine would be (docs/operations.md "Several gateways on one machine"); their CPU is summed from /proc.
 *
 *   bun bench/search-floor.ts [--size 100000] [--merchants 1000] [--duration 10] [--connections 64] [--processes 1]
 */
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { parseArgs } from "node:util";
import { createEmbeddedEngine } from "../search/embedded.ts";
import { SearchService, type SearchQuery } from "../search/service.ts";
import { cpuSplitOf, machineLine, searchLuaScript, startBareBaseline, wrk, wrkScript, type ServerCpuSample } from "./lib.ts";
import { loadSynthetic, NOW } from "./search-inprocess.ts";
import { queryMix } from "./search-queries.ts";

const { values } = parseArgs({
  args: process.argv.slice(2),
  options: {
    size: { type: "string", default: "100000" },
    merchants: { type: "string", default: "1000" },
    duration: { type: "string", default: "10" },
    connections: { type: "string", default: "64" },
    processes: { type: "string", default: "1" },
    /** internal: this process is one of the servers of `--processes`, on this port */
    "serve-port": { type: "string" },
  },
});
const servePort = values["serve-port"] === undefined ? undefined : Number(values["serve-port"]);
const processes = Math.max(1, Number(values.processes));

const size = Number(values.size!.replace(/_/g, ""));
const merchants = Math.min(Number(values.merchants), Math.max(1, Math.floor(size / 10)));
const svc = new SearchService(createEmbeddedEngine());
const loadMs = await loadSynthetic(svc, size, merchants);
process.stderr.write(`${size} products / ${merchants} merchants loaded in ${(loadMs / 1000).toFixed(1)} s\n`);

const server = Bun.serve({
  port: servePort ?? 0,
  reusePort: servePort !== undefined || processes > 1,
  routes: {
    "/api/v1/agent/search": {
      async POST(req) {
        const body = (await req.json()) as SearchQuery;
        return Response.json({ success: true, data: await svc.search(body, NOW) });
      },
    },
  },
});

if (servePort !== undefined) {
  process.stdout.write("serving\n");
  await new Promise(() => {}); // until the parent kills it
}

/** The other servers of `--processes`, on this one's port, each loading its own catalog. */
const children: ReturnType<typeof Bun.spawn>[] = [];
for (let i = 1; i < processes; i++) {
  const child = Bun.spawn(["bun", import.meta.path, "--size", String(size), "--merchants", String(merchants), "--serve-port", String(server.port)], { stdout: "pipe", stderr: "inherit" });
  children.push(child);
  const out = child.stdout.getReader();
  for (let text = ""; !text.includes("serving"); ) {
    const { value, done } = await out.read();
    if (done) throw new Error("a server process exited before serving");
    text += new TextDecoder().decode(value);
  }
  out.releaseLock();
}
const serversCpu = async (): Promise<ServerCpuSample> => {
  const own = process.cpuUsage();
  let user = own.user / 1000;
  let system = own.system / 1000;
  for (const c of children) {
    const [u, s] = await cpuSplitOf(c.pid);
    user += u;
    system += s;
  }
  return { user, system, gateways: user + system };
};

const dir = await mkdtemp(join(tmpdir(), "acs-search-floor-"));
try {
  const script = join(dir, "search.lua");
  await writeFile(script, searchLuaScript("unused", queryMix(500)));
  const url = `http://127.0.0.1:${server.port}`;
  // warm-up: JIT, the engine's expansion caches, per-store terms
  await wrkScript(url, script, Number(values.connections), 5, serversCpu);
  const r = await wrkScript(url, script, Number(values.connections), Number(values.duration), serversCpu);
  // the bare baseline of every bench (a canned small body), in the same run
  const bare = startBareBaseline();
  const base = await wrk("bare Bun.serve", bare.url, { connections: Number(values.connections), durationSec: Number(values.duration) }).finally(() => bare.stop());
  console.log(machineLine());
  console.log(`search floor (engine + ranking + JSON behind bare Bun.serve; ${processes} process${processes > 1 ? "es on one port" : ""}; ${size.toLocaleString("en-US")} products, ${values.connections} connections, ${values.duration} s)`);
  console.log(
    `  ${Math.round(r.rps)} req/s, p50 ${r.p50.toFixed(1)} ms, p99 ${r.p99.toFixed(1)} ms, ${r.errors} errors; ` +
      `server CPU ${r.cpuMsPerRequest.toFixed(3)} ms a search (kernel ${r.sysMsPerRequest.toFixed(3)})`,
  );
  console.log(`  bare Bun.serve (canned body): ${Math.round(base.rps)} req/s, p50 ${base.p50ms.toFixed(1)} ms, p99 ${base.p99ms.toFixed(1)} ms; the floor is ${(r.rps / base.rps).toFixed(3)} of it`);
} finally {
  for (const c of children) c.kill("SIGKILL");
  server.stop(true);
  await rm(dir, { recursive: true, force: true });
}
process.exit(0);
