/**
 * Scenario `mcp`: `tools/call search_products` on the store MCP endpoint (our fast path: shared tool table, own
 * JSON-RPC dispatch, JSON response) against, in the same run and on the same catalog (the demo store's):
 *  - REST search (POST /api/v1/agent/search) on the full gateway; REST searches every eligible store, so every other
 *    store is hidden for the run and both endpoints rank exactly the demo store's products (checked before timing);
 *  - reference MCP servers written like the SDK's stateless example: a new McpServer (tools registered with zod
 *    schemas built inline) + transport per request, calling the same search service — one with our 50 tools (like
 *    for like: the goal's ratio) and one with only search_products (earlier rounds' figure); bench/mcp-reference.ts;
 *  - a bare Bun.serve (the harness's baseline).
 * Goals: >= 10x the reference and >= 50% of REST search throughput.
 *
 * Targets run in BENCH_ROUNDS interleaved rounds (default 3; each keeps its median-throughput round) and every run
 * also reports the server CPU per request: wrk is its own process and all targets are served by this process, so
 * this process's CPU during a run is that target's server work. On a shared machine that figure, not req/s, is
 * the one to compare (other load slows a run down but adds little to its CPU per request).
 */
import { McpServer } from "@modelcontextprotocol/sdk/server/mcp.js";
import { WebStandardStreamableHTTPServerTransport } from "@modelcontextprotocol/sdk/server/webStandardStreamableHttp.js";
import { ALL_TOOLS } from "../gateway/mcp/tools/index.ts";
import { fullToolServer, oneToolServer, type SearchTool } from "./mcp-reference.ts";
import { boot } from "../gateway/boot.ts";
import { getSearchService } from "../search/service.ts";
import { createTestDatabase } from "../test/helpers/db.ts";
import { loadavg } from "node:os";
import { interleaved, machineLine, report, startBareBaseline, wrk, type LoadResult } from "./lib.ts";

const durationSec = Number(process.env.BENCH_SECONDS ?? 8);
const rounds = Number(process.env.BENCH_ROUNDS ?? 3);
const db = process.env.DATABASE_URL ? undefined : await createTestDatabase({ migrate: false });
const running = await boot({
  role: "start",
  env: {},
  config: { DATABASE_URL: process.env.DATABASE_URL ?? db!.url, PORT: 0, DATA_DIR: "/tmp/acs-bench-data", SEED_DEMO: true, LOG_LEVEL: "error", RATE_LIMITS_ENABLED: false },
});
const svc = running.services;
const STORE = "demo-store";

// an agent key through the real API
const login = await (await fetch(`${running.url}/api/v1/auth/login`, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify({ email: "admin@example.com", password: "admin-password" }) })).json();
const created = await (
  await fetch(`${running.url}/api/v1/agent-keys`, {
    method: "POST",
    headers: { "content-type": "application/json", authorization: `Bearer ${login.data.token}` },
    body: JSON.stringify({ name: "bench", tier: "ENTERPRISE", scopes: ["search", "compare", "cart", "checkout", "merchants:read"] }),
  })
).json();
const apiKey: string = created.data.key;

// The references (bench/mcp-reference.ts): per request a new McpServer with zod tools + a stateless transport, as
// the SDK's stateless example does; the Web-standard transport replaces the example's Express one (Bun), as in the
// SDK's Hono example. Both run the same search service as our endpoint.
const searchTool: SearchTool = async ({ query, limit }) =>
  (await getSearchService(svc).search({ query, storeSlug: STORE, limit: limit ?? 10, filters: { inStock: true } }, new Date())) as unknown as Record<string, unknown>;
function referenceServe(build: () => McpServer) {
  return Bun.serve({
    hostname: "127.0.0.1",
    port: 0,
    async fetch(req) {
      const server = build();
      const transport = new WebStandardStreamableHTTPServerTransport({ sessionIdGenerator: undefined, enableJsonResponse: true });
      await server.connect(transport);
      const res = await transport.handleRequest(req);
      void transport.close();
      void server.close();
      return res;
    },
  });
}
const reference = referenceServe(() => oneToolServer(searchTool));
const referenceFull = referenceServe(() => fullToolServer(ALL_TOOLS, searchTool));

// Like for like: a store's MCP endpoint searches that store; REST searches all eligible stores. Hide the others
// (the same path as a trust-status change: the row, then the search snapshot) so both rank the same catalog; the
// statuses are put back at the end (DATABASE_URL may be a database that outlives the run).
const statuses = await svc.sql<{ slug: string; operational_status: string }[]>`SELECT slug, operational_status FROM stores WHERE slug <> ${STORE}`;
async function setStatuses(rows: readonly { slug: string; operational_status: string }[]) {
  for (const r of rows) {
    await svc.sql`UPDATE stores SET operational_status = ${r.operational_status} WHERE slug = ${r.slug}`;
    await getSearchService(svc).refreshStore(svc.sql, r.slug);
  }
}
await setStatuses(statuses.map((r) => ({ slug: r.slug, operational_status: "hidden" })));

const bare = startBareBaseline();
const restBody = JSON.stringify({ query: "wireless headphones", limit: 10 });
const call = JSON.stringify({ jsonrpc: "2.0", id: 1, method: "tools/call", params: { name: "search_products", arguments: { query: "wireless headphones", limit: 10 } } });
const mcpHeaders = { "content-type": "application/json", accept: "application/json, text/event-stream", "x-agent-api-key": apiKey };
try {
  // sanity: every target answers the same kind of thing
  const totals: Record<string, number> = {};
  for (const url of [`${running.url}/${STORE}/mcp`, `http://127.0.0.1:${reference.port}/`, `http://127.0.0.1:${referenceFull.port}/`]) {
    const r = await fetch(url, { method: "POST", headers: mcpHeaders, body: call });
    const text = await r.text();
    if (r.status !== 200 || !text.includes("why_ranked")) throw new Error(`${url} answered ${r.status}: ${text.slice(0, 200)}`);
    totals[url] = (JSON.parse(text) as { result: { structuredContent: { meta: { total: number } } } }).result.structuredContent.meta.total;
  }
  const restProbe = (await (await fetch(`${running.url}/api/v1/agent/search`, { method: "POST", headers: { "content-type": "application/json", "x-agent-api-key": apiKey }, body: restBody })).json()) as {
    data: { products: { merchant: { slug: string } }[]; meta: { total: number } };
  };
  const mcpTotal = totals[`${running.url}/${STORE}/mcp`];
  if (restProbe.data.meta.total !== mcpTotal || restProbe.data.products.some((p) => p.merchant.slug !== STORE)) {
    throw new Error(`REST and MCP do not search the same catalog: REST total ${restProbe.data.meta.total}, MCP total ${mcpTotal}`);
  }
  console.log(`same catalog: ${STORE} only, ${mcpTotal} matches for the query on MCP, REST and the reference`);
  await wrk("warm-up", `${running.url}/${STORE}/mcp`, { durationSec: 2, method: "POST", body: call, headers: mcpHeaders });
  const cpu = new Map<string, number[]>();
  const measured = async (label: string, run: () => Promise<LoadResult>) => {
    const c0 = process.cpuUsage();
    const r = await run();
    const c = process.cpuUsage(c0);
    cpu.set(label, [...(cpu.get(label) ?? []), (c.user + c.system) / Math.max(1, r.rps * durationSec)]);
    return r;
  };
  const restHeaders = { "content-type": "application/json", "x-agent-api-key": apiKey };
  const [baseline, ours, rest, ref, refFull] = await interleaved(rounds, [
    { label: "bare", run: () => measured("bare", () => wrk("bare Bun.serve", bare.url, { durationSec })) },
    {
      label: "mcp",
      run: () => measured("mcp", () => wrk("MCP tools/call search_products (fast path)", `${running.url}/${STORE}/mcp`, { durationSec, method: "POST", body: call, headers: mcpHeaders })),
    },
    {
      label: "rest",
      run: () => measured("rest", () => wrk("REST POST /api/v1/agent/search", `${running.url}/api/v1/agent/search`, { durationSec, method: "POST", body: restBody, headers: restHeaders })),
    },
    {
      label: "reference",
      run: () =>
        measured("reference", () =>
          wrk("reference, one tool: SDK stateless example (McpServer + zod tool + transport per request)", `http://127.0.0.1:${reference.port}/`, {
            durationSec,
            method: "POST",
            body: call,
            headers: mcpHeaders,
          }),
        ),
    },
    {
      label: "reference-full",
      run: () =>
        measured("reference-full", () =>
          wrk(`reference, our ${ALL_TOOLS.length} tools: SDK stateless example (McpServer + zod tools + transport per request)`, `http://127.0.0.1:${referenceFull.port}/`, {
            durationSec,
            method: "POST",
            body: call,
            headers: mcpHeaders,
          }),
        ),
    },
  ]);
  console.log(`${machineLine()}, load average ${loadavg().map((l) => l.toFixed(2)).join(" ")}, median of ${rounds} interleaved rounds of ${durationSec} s`);
  report("mcp", baseline!, [ours!, rest!, ref!, refFull!]);
  const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
  const c = (k: string) => median(cpu.get(k)!);
  console.log(
    `\nserver CPU per request (median of rounds): bare ${c("bare").toFixed(1)} µs, MCP ${c("mcp").toFixed(1)} µs, REST ${c("rest").toFixed(1)} µs, reference (one tool) ${c("reference").toFixed(1)} µs, reference (${ALL_TOOLS.length} tools) ${c("reference-full").toFixed(1)} µs`,
  );
  console.log(
    `\nMCP / reference with the same ${ALL_TOOLS.length} tools (like for like): ${(ours!.rps / refFull!.rps).toFixed(1)}x by req/s, ${(c("reference-full") / c("mcp")).toFixed(1)}x by server CPU per request (goal >= 10x)`,
  );
  console.log(`MCP / reference with one tool: ${(ours!.rps / ref!.rps).toFixed(1)}x by req/s, ${(c("reference") / c("mcp")).toFixed(1)}x by server CPU per request`);
  console.log(`MCP / REST search: ${((ours!.rps / rest!.rps) * 100).toFixed(0)}% by req/s, ${((c("rest") / c("mcp")) * 100).toFixed(0)}% by server CPU per request (goal >= 50%)`);
} finally {
  await setStatuses(statuses);
  bare.stop();
  reference.stop(true);
  referenceFull.stop(true);
  await running.stop();
  await db?.drop();
}
