/**
 * bench/search-inprocess.ts: CPU per search without HTTP, on the same synthetic catalog and query mix as
 * bench/search.ts, built in memory (no Postgres, no seed run), so engine and ranking changes can be measured in
 * seconds and compared response for response.
 *
 *   bun bench/search-inprocess.ts [--sizes 10000,100000] [--merchants 1000] [--queries 300] [--rounds 3]
 *                                 [--dump FILE] [--check FILE] [--window N]
 *   bun bench/search-inprocess.ts --demo [--queries 2000] [--rounds 3] [--dump FILE | --check FILE]
 *
 * Per size: the synthetic stores and products of `bun run seed -- --products N --merchants M` (same generator,
 * same seed), loaded into one SearchService with the embedded engine; then `rounds` passes over `queries` bodies of
 * `queryMix()`, each body timed through the service's own stages: `engineQueryFor` → `engine.query` →
 * `rankProducts` → summaries (what `SearchService.search` does). Reported: CPU ms per query (process.cpuUsage over
 * a whole pass, so garbage collection is included), wall p50/p99 per query, and the engine / ranking split.
 * `--dump` writes every response (with a fixed clock, without tookMs) to FILE; `--check` compares against such a
 * file and exits 1 on the first difference, so a faster engine can be shown to answer exactly as before.
 *
 * `--demo`: the MCP bench's search instead (bench/mcp.ts): the demo seed's catalog in memory, `"wireless
 * headphones"`, limit 10, in the 240-product demo store, plus a few other store-scoped bodies; where a small
 * store's search spends its time is the page (summaries, why_ranked), not the engine.
 */
import { readFile, writeFile } from "node:fs/promises";
import { parseArgs } from "node:util";
import { storeSnapshot } from "../actors/store/reads.ts";
import { productToRow } from "../actors/store/schemas.ts";
import { CATEGORIES, GOOD_QUALITY, generateProduct } from "../infra/seed/catalog.ts";
import { buildDemoData, DEMO_STORE_SLUG } from "../infra/seed/demo.ts";
import { Rng } from "../infra/seed/prng.ts";
import { buildSyntheticStores, SYNTHETIC_SEED } from "../infra/seed/synthetic.ts";
import { createEmbeddedEngine } from "../search/embedded.ts";
import { engineQueryFor, rankProducts } from "../search/ranking.ts";
import { SearchService, type ProductLoadRow, type SearchQuery } from "../search/service.ts";
import { resolveSearchSettings } from "../search/settings.ts";
import { queryMix } from "./search-queries.ts";

const { values } = parseArgs({
  args: import.meta.main ? process.argv.slice(2) : [],
  options: {
    sizes: { type: "string", default: "10000,100000" },
    merchants: { type: "string", default: "1000" },
    queries: { type: "string", default: "300" },
    rounds: { type: "string", default: "3" },
    dump: { type: "string" },
    check: { type: "string" },
    demo: { type: "boolean", default: false },
    /** candidateWindow for this run (default: the settings' 1000), to measure a smaller default. */
    window: { type: "string" },
  },
});

/** The clock of the catalog and of every query, so dumps compare across runs (freshness tiers, "synced 2 h ago"). */
export const NOW = new Date("2025-06-01T12:00:00.000Z");

/** The catalog `seedSynthetic` writes, as the rows the service loads (same generator, seed and product spread). */
export async function loadSynthetic(svc: SearchService, products: number, merchants: number): Promise<number> {
  const stores = buildSyntheticStores(merchants, SYNTHETIC_SEED, NOW);
  for (const s of stores) svc.stores.set(s.slug, storeSnapshot(s));
  const root = new Rng(SYNTHETIC_SEED).fork("synthetic-products");
  const perStore = Math.ceil(products / merchants);
  const started = performance.now();
  let batch: ProductLoadRow[] = [];
  for (let n = 0; n < products; n++) {
    const store = stores[Math.floor(n / perStore)]!;
    const p = generateProduct(root.fork(String(n)), {
      idSpace: `synthetic:${SYNTHETIC_SEED}`,
      storeSlug: store.slug,
      externalId: `SYN-${String(n + 1).padStart(8, "0")}`,
      currency: store.currency,
      category: CATEGORIES[n % CATEGORIES.length]!,
      quality: GOOD_QUALITY,
      now: NOW,
      syncedAt: new Date(store.lastSyncAt!),
    });
    const row = productToRow(p);
    batch.push({ ...row, price_minor: Number(row.price_minor), compare_at_price_minor: row.compare_at_price_minor === null ? null : Number(row.compare_at_price_minor), created_at: new Date(row.created_at), updated_at: new Date(row.updated_at) });
    if (batch.length === 5000) {
      await svc.applyRows(batch);
      batch = [];
    }
  }
  if (batch.length) await svc.applyRows(batch);
  return performance.now() - started;
}

/** The demo seed's stores and products (what `bun run seed` writes), as the rows the service loads. */
export async function loadDemo(svc: SearchService): Promise<void> {
  const data = buildDemoData(undefined, { now: NOW });
  for (const s of data.stores) svc.stores.set(s.slug, storeSnapshot(s));
  const rows: ProductLoadRow[] = data.products.map((p) => {
    const row = productToRow(p);
    return { ...row, price_minor: Number(row.price_minor), compare_at_price_minor: row.compare_at_price_minor === null ? null : Number(row.compare_at_price_minor), created_at: new Date(row.created_at), updated_at: new Date(row.updated_at) };
  });
  await svc.applyRows(rows);
}

/** Store-scoped bodies: the MCP bench's one first (the MCP tool asks in-stock only), then a few others. */
export function demoBodies(count: number): SearchQuery[] {
  const base: SearchQuery[] = [
    { query: "wireless headphones", storeSlug: DEMO_STORE_SLUG, limit: 10, filters: { inStock: true } },
    { query: "headphones", storeSlug: DEMO_STORE_SLUG, limit: 10, filters: { inStock: true } },
    { query: "usb charger", storeSlug: DEMO_STORE_SLUG, limit: 20 },
    { query: "keyboard", storeSlug: DEMO_STORE_SLUG, limit: 10, sort: "price_asc", filters: { inStock: false } },
    { query: "wireless headphones", limit: 10 },
  ];
  return Array.from({ length: count }, (_, i) => base[i % 10 < 6 ? 0 : i % base.length]!);
}

interface Pass {
  /** CPU per query of what the route does: SearchService.search, then JSON of the response envelope. */
  cpuMsPerQuery: number;
  /** Wall time per query of the same. */
  wall: number[];
  /** Wall time per query of the engine query and of ranking alone (a second, staged run over the bodies). */
  engineMs: number;
  rankMs: number;
  jsonMs: number;
}

/** One pass over the bodies: the service as the route calls it (timed for CPU), then staged for the split. */
async function pass(svc: SearchService, bodies: SearchQuery[], out?: string[]): Promise<Pass> {
  const wall: number[] = [];
  let jsonMs = 0;
  const cpu0 = process.cpuUsage();
  for (const body of bodies) {
    const t0 = performance.now();
    const r = await svc.search(body, NOW);
    const t1 = performance.now();
    JSON.stringify({ success: true, data: r });
    const t2 = performance.now();
    wall.push(t2 - t0);
    jsonMs += t2 - t1;
    if (out) {
      delete r.queryMeta.tookMs;
      out.push(JSON.stringify({ body, total: r.meta.total, r }));
    }
  }
  const cpu = process.cpuUsage(cpu0);
  let engineMs = 0;
  let rankMs = 0;
  for (const body of bodies) {
    const t0 = performance.now();
    const eq = engineQueryFor(body.query, body, svc.allowedSlugs(body), svc.settings, svc.currencies);
    eq.unordered = true; // as SearchService.search asks
    const window = svc.engine.queryWindow?.(eq); // as SearchService.search asks the embedded engine
    const candidates = window === undefined ? await svc.engine.query(eq) : [];
    const t1 = performance.now();
    rankProducts({ candidates, window, products: svc.products, columns: svc.columns, stores: svc.stores, request: body, now: NOW, settings: svc.settings });
    engineMs += t1 - t0;
    rankMs += performance.now() - t1;
  }
  const n = bodies.length;
  return { cpuMsPerQuery: (cpu.user + cpu.system) / 1000 / n, wall, engineMs: engineMs / n, rankMs: rankMs / n, jsonMs: jsonMs / n };
}

const pct = (xs: number[], p: number) => {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.floor((p / 100) * s.length))]!;
};
const f2 = (x: number) => x.toFixed(2);

if (import.meta.main) {
  const demo = values.demo === true;
  const bodies = demo ? demoBodies(values.queries === "300" ? 2000 : Number(values.queries)) : (queryMix(Number(values.queries)) as unknown as SearchQuery[]);
  const rounds = Number(values.rounds);
  const lines = ["| products | CPU ms/query | wall p50 ms | wall p99 ms | engine ms | ranking ms | JSON ms | load avg |", "|---|---|---|---|---|---|---|---|"];
  const dump: string[] = [];
  for (const size of demo ? [0] : values.sizes!.split(",").map((s) => Number(s.replace(/_/g, "")))) {
    const svc = new SearchService(createEmbeddedEngine());
    if (values.window !== undefined) {
      svc.settings = resolveSearchSettings({ candidateWindow: Number(values.window) });
      await svc.engine.applySettings(svc.settings);
    }
    if (demo) {
      await loadDemo(svc);
      process.stderr.write(`demo catalog: ${svc.products.size} products\n`);
    } else {
      const merchants = Math.min(Number(values.merchants), Math.max(1, Math.floor(size / 10)));
      const loadMs = await loadSynthetic(svc, size, merchants);
      process.stderr.write(`${size} products / ${merchants} merchants loaded in ${(loadMs / 1000).toFixed(1)} s\n`);
    }
    await pass(svc, bodies); // warm-up: JIT, expansion cache, store terms
    const passes: Pass[] = [];
    for (let r = 0; r < rounds; r++) passes.push(await pass(svc, bodies));
    // the median pass by CPU, so one pass disturbed by a neighbour does not decide the figure
    const mid = [...passes].sort((a, b) => a.cpuMsPerQuery - b.cpuMsPerQuery)[Math.floor(passes.length / 2)]!;
    const load = (await readFile("/proc/loadavg", "utf8")).split(" ").slice(0, 3).join(" ");
    lines.push(`| ${demo ? "demo store" : size.toLocaleString("en-US")} | ${f2(mid.cpuMsPerQuery)} | ${f2(pct(mid.wall, 50))} | ${f2(pct(mid.wall, 99))} | ${f2(mid.engineMs)} | ${f2(mid.rankMs)} | ${f2(mid.jsonMs)} | ${load} |`);
    process.stderr.write(`${lines[lines.length - 1]}\n`);
    if (values.dump || values.check) {
      const out: string[] = [];
      await pass(svc, bodies, out);
      dump.push(...out.map((l) => `${size} ${l}`));
    }
  }
  console.log(lines.join("\n"));
  if (values.dump) await writeFile(values.dump, dump.join("\n") + "\n");
  if (values.check) {
    const expected = (await readFile(values.check, "utf8")).trimEnd().split("\n");
    let diffs = 0;
    for (let i = 0; i < Math.max(expected.length, dump.length); i++) {
      if (expected[i] !== dump[i]) {
        if (diffs++ < 3) console.error(`response ${i} differs:\n  expected ${expected[i]?.slice(0, 600)}\n  got      ${dump[i]?.slice(0, 600)}`);
      }
    }
    console.log(diffs === 0 ? `check: all ${dump.length} responses identical` : `check: ${diffs} of ${dump.length} responses differ`);
    process.exit(diffs === 0 ? 0 : 1);
  }
  process.exit(0);
}

