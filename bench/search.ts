/**
 * bench/search.ts: REST search throughput and latency on a synthetic catalog, in one run, against
 *  (1) the service with the embedded engine (the default),
 *  (2) the same service with the Postgres full-text baseline engine (search/pg-baseline.ts) swapped in,
 *  (3) a bare Bun.serve answering a canned JSON body (the ceiling of this machine and load generator),
 *  (4) `--gateways N` (default 2, 0 skips it; session 19): N gateway processes on one port (REUSE_PORT) and an actor
 *      host over a private nats-server, on the same database: a machine's cores all serving search, each process
 *      with its own index; CPU per request summed over those processes (/proc).
 *
 *   RATE_LIMITS_ENABLED=false bun bench/search.ts [--sizes 10000,100000] [--merchants 1000] [--duration 10]
 *                                                  [--connections 64] [--queries 500]
 *                                                  [--admin-url postgres://postgres@127.0.0.1:5432/postgres] [--embedded-only]
 *                                                  [--gateways 2] [--accept-encoding "gzip, deflate, br, zstd"]
 *
 * Per size: a scratch database on the local Postgres, the demo seed (users, demo merchants) by booting the
 * service once, then `bun run seed -- --products N --merchants M`, then a timed full index build, then wrk
 * (64 connections, a Lua script rotating `--queries` distinct POST bodies from `queryMix`: item names, brands,
 * typos, prefixes, intents; half filtered, some sorted/paged/deduplicated) against each target. Prints a Markdown
 * table; the scratch database is dropped at the end.
 *
 * `--accept-encoding VALUE` sends that Accept-Encoding with every request of every target (wrk sends none, most HTTP
 * clients send one): the service then compresses answers from 8 KiB (gateway/plugins/compression.ts), which matters
 * most for target (4), whose large identity answers Bun writes uncorked (docs/performance.md "Session 19").
 */
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { parseArgs } from "node:util";
import { boot, type Running } from "../gateway/boot.ts";
import postgres from "postgres";
import { PgBaselineEngine } from "../search/pg-baseline.ts";
import { getSearchService, SearchService, setSearchService } from "../search/service.ts";
import { searchLuaScript, startGatewaysOnOnePort, wrkScript, type ScriptedLoad } from "./lib.ts";
import { queryMix } from "./search-queries.ts";

const { values } = parseArgs({
  args: import.meta.main ? process.argv.slice(2) : [],
  options: {
    sizes: { type: "string", default: "10000,100000" },
    merchants: { type: "string", default: "1000" },
    duration: { type: "string", default: "10" },
    connections: { type: "string", default: "64" },
    queries: { type: "string", default: "500" },
    "admin-url": { type: "string", default: process.env.TEST_DATABASE_ADMIN_URL ?? "postgres://postgres@127.0.0.1:5432/postgres" },
    /** Only the embedded engine (for interleaved before/after runs of search work: the baseline takes minutes). */
    "embedded-only": { type: "boolean", default: false },
    /** Gateway processes on one port for target (4); 0 skips it. */
    gateways: { type: "string", default: "2" },
    /** Sent with every request (wrk sends none): e.g. "gzip, deflate, br, zstd", as HTTP libraries do. */
    "accept-encoding": { type: "string" },
  },
});

export { queryMix };

const QUERIES = queryMix(Number(values.queries));

function luaScript(key: string): string {
  return searchLuaScript(key, QUERIES, values["accept-encoding"]);
}

async function json(url: string, init: Omit<RequestInit, "body"> & { body?: unknown } = {}) {
  const res = await fetch(url, { ...init, headers: { "content-type": "application/json", ...(init.headers as Record<string, string>) }, body: init.body === undefined ? undefined : JSON.stringify(init.body) });
  return { status: res.status, body: (await res.json()) as any };
}

/** An empty database on the local server; the service applies the migrations itself at boot. */
async function emptyDatabase(adminUrl: string): Promise<{ url: string; drop(): Promise<void> }> {
  const name = `bench_search_${crypto.randomUUID().replace(/-/g, "").slice(0, 12)}`;
  const admin = postgres(adminUrl, { max: 1, onnotice: () => {} });
  await admin.unsafe(`CREATE DATABASE ${name}`);
  await admin.end();
  const url = new URL(adminUrl);
  url.pathname = `/${name}`;
  return {
    url: url.toString(),
    async drop() {
      const a = postgres(adminUrl, { max: 1, onnotice: () => {} });
      await a.unsafe(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
      await a.end();
    },
  };
}

const rssMb = () => Math.round(process.memoryUsage().rss / 1048576);

async function runSize(products: number, merchants: number, duration: number, connections: number) {
  const db = await emptyDatabase(values["admin-url"]!);
  const dataDir = await mkdtemp(join(tmpdir(), "bench-search-"));
  let running: Running | undefined;
  const rows: string[] = [];
  try {
    // 1. demo seed (admin user) through the real start-up, then the synthetic catalog through the seed CLI
    const first = await boot({ role: "start", env: {}, config: { DATABASE_URL: db.url, PORT: 0, DATA_DIR: dataDir, SEED_DEMO: true, LOG_LEVEL: "error", RATE_LIMITS_ENABLED: false } });
    await first.stop();
    const seedStarted = performance.now();
    const seed = Bun.spawn(["bun", "infra/seed/cli.ts", "--products", String(products), "--merchants", String(merchants), "--database-url", db.url], { stdout: "inherit", stderr: "inherit" });
    if ((await seed.exited) !== 0) throw new Error("seed failed");
    const seedSecs = (performance.now() - seedStarted) / 1000;

    // 2. the service on that catalog; a timed full rebuild of the index
    running = await boot({ role: "start", env: {}, config: { DATABASE_URL: db.url, PORT: 0, DATA_DIR: dataDir, SEED_DEMO: false, LOG_LEVEL: "error", RATE_LIMITS_ENABLED: false } });
    const svc = running.services;
    const embedded = getSearchService(svc);
    Bun.gc(true);
    const build = await embedded.reindex(svc.sql);
    Bun.gc(true);
    const rssAfterBuild = rssMb();

    const token = (await json(`${running.url}/api/v1/auth/login`, { method: "POST", body: { email: "admin@example.com", password: "admin-password" } })).body.data.token;
    const key = (await json(`${running.url}/api/v1/agent-keys`, { method: "POST", headers: { authorization: `Bearer ${token}` }, body: { name: "bench", tier: "ENTERPRISE" } })).body.data.key as string;
    const script = join(dataDir, "search.lua");
    await writeFile(script, luaScript(key));
    const probe = await json(`${running.url}/api/v1/agent/search`, { method: "POST", headers: { "x-agent-api-key": key }, body: QUERIES[0] });
    if (probe.status !== 200) throw new Error(`probe search failed: ${probe.status} ${JSON.stringify(probe.body)}`);

    // warm-up, then the embedded engine
    await wrkScript(running.url, script, connections, 2);
    const emb = await wrkScript(running.url, script, connections, duration);
    const rssAfterLoad = rssMb();
    const loadAverage = (await Bun.file("/proc/loadavg").text()).split(" ").slice(0, 3).join(" ");

    // 2b. the same catalog served by N gateway processes on one port (this process's service idles meanwhile)
    let multi: ScriptedLoad | undefined;
    const gatewayCount = Number(values.gateways);
    if (gatewayCount > 0) {
      const procs = await startGatewaysOnOnePort(db.url, dataDir, gatewayCount);
      try {
        await wrkScript(procs.url, script, connections, 2, () => procs.cpu());
        multi = await wrkScript(procs.url, script, connections, duration, () => procs.cpu());
      } finally {
        await procs.stop();
      }
    }
    const multiName = `REST search, ${gatewayCount} gateway processes on one port (REUSE_PORT) + actor host over NATS`;

    if (values["embedded-only"]) {
      rows.push(`| ${products.toLocaleString("en-US")} | REST search, embedded engine | ${Math.round(emb.rps).toLocaleString("en-US")} | ${emb.p50.toFixed(2)} | ${emb.p99.toFixed(2)} | ${emb.errors} | ${emb.cpuMsPerRequest.toFixed(3)} |`);
      if (multi) rows.push(`| ${products.toLocaleString("en-US")} | ${multiName} | ${Math.round(multi.rps).toLocaleString("en-US")} | ${multi.p50.toFixed(2)} | ${multi.p99.toFixed(2)} | ${multi.errors} | ${multi.cpuMsPerRequest.toFixed(3)} |`);
      return { rows, summary: { products, merchants, indexBuildMs: build.ms, rssAfterBuildMb: rssAfterBuild, rssAfterLoadMb: rssAfterLoad, embeddedCpuMsPerRequest: Math.round(emb.cpuMsPerRequest * 1000) / 1000, loadAverageAfterEmbedded: loadAverage } };
    }

    // 3. the Postgres full-text baseline behind the same route
    const pgEngine = new PgBaselineEngine(svc.sql);
    const idxStarted = performance.now();
    await pgEngine.ensureIndex();
    const pgIndexSecs = (performance.now() - idxStarted) / 1000;
    const pgService = new SearchService(pgEngine, embedded.settings);
    await pgService.loadAll(svc.sql);
    setSearchService(svc, pgService);
    await wrkScript(running.url, script, connections, 2);
    const pg = await wrkScript(running.url, script, connections, duration);
    setSearchService(svc, embedded);

    // 4. bare Bun.serve with a canned search answer of the same size
    const canned = JSON.stringify(probe.body);
    const bare = Bun.serve({ port: 0, hostname: "127.0.0.1", fetch: async (req) => (await req.text(), new Response(canned, { headers: { "content-type": "application/json" } })) });
    const base = await wrkScript(`http://127.0.0.1:${bare.port}`, script, connections, duration);
    bare.stop(true);

    const fmt = (name: string, r: ScriptedLoad) =>
      `| ${products.toLocaleString("en-US")} | ${name} | ${Math.round(r.rps).toLocaleString("en-US")} | ${r.p50.toFixed(2)} | ${r.p99.toFixed(2)} | ${r.errors} | ${r.cpuMsPerRequest.toFixed(3)} |`;
    rows.push(fmt("REST search, embedded engine", emb), ...(multi ? [fmt(multiName, multi)] : []), fmt("REST search, Postgres FTS baseline", pg), fmt("bare Bun.serve (canned body)", base));
    return {
      rows,
      summary: {
        products,
        merchants,
        seedSecs: Math.round(seedSecs * 10) / 10,
        indexBuildMs: build.ms,
        pgIndexSecs: Math.round(pgIndexSecs * 10) / 10,
        rssAfterBuildMb: rssAfterBuild,
        rssAfterLoadMb: rssAfterLoad,
        embeddedVsPg: Math.round((emb.rps / pg.rps) * 10) / 10,
        embeddedVsBare: Math.round((emb.rps / base.rps) * 100) / 100,
        embeddedCpuMsPerRequest: Math.round(emb.cpuMsPerRequest * 1000) / 1000,
        ...(multi ? { gateways: gatewayCount, gatewaysRps: Math.round(multi.rps), gatewaysP99: multi.p99, gatewaysCpuMsPerRequest: Math.round(multi.cpuMsPerRequest * 1000) / 1000 } : {}),
        loadAverageAfterEmbedded: loadAverage,
      },
    };
  } finally {
    await running?.stop().catch(() => {});
    await db.drop().catch(() => {});
    await rm(dataDir, { recursive: true, force: true });
  }
}

if (import.meta.main) {
  const sizes = values.sizes!.split(",").map((s) => Number(s.replace(/_/g, "")));
  const out: string[] = ["| products | target | req/s | p50 ms | p99 ms | errors | server CPU ms/req |", "|---|---|---|---|---|---|---|"];
  const summaries: unknown[] = [];
  for (const n of sizes) {
    const r = await runSize(n, Math.min(Number(values.merchants), Math.max(1, Math.floor(n / 10))), Number(values.duration), Number(values.connections));
    out.push(...r.rows);
    summaries.push(r.summary);
    process.stderr.write(`${JSON.stringify(r.summary)}\n`);
  }
  if (values["accept-encoding"] !== undefined) console.log(`Every request sent Accept-Encoding: ${values["accept-encoding"]} (answers from 8 KiB compressed)`);
  console.log(out.join("\n"));
  console.log(JSON.stringify(summaries, null, 2));
  process.exit(0);
}
