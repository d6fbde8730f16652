/**
 * bench/search-reindex-memory.ts: resident memory of an operator's reindex on a seeded catalog, and what searches
 * answer while it runs (audit Q-2: the reindex builds beside the live index and swaps it in, so both are in memory
 * until the swap).
 *
 *   bun bench/search-reindex-memory.ts --database-url postgres://postgres@127.0.0.1:5432/DB [--rounds 2]
 *
 * DB: a database seeded with `bun run seed -- --products 100000 --merchants 1000 --migrate --database-url …`.
 * Boots the service on it (start role: the start-up load), then runs `--rounds` reindexes in turn while RSS is sampled
 * every 10 ms and a search runs every 10 ms; prints RSS after the start-up load, the peak during each reindex and RSS
 * after, with the totals the searches saw.
 */
import { mkdtemp } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { parseArgs } from "node:util";
import { boot } from "../gateway/boot.ts";
import { getSearchService } from "../search/service.ts";

const { values } = parseArgs({
  args: process.argv.slice(2),
  options: { "database-url": { type: "string" }, rounds: { type: "string", default: "2" } },
});
const mb = (n: number) => Math.round(n / 1048576);
const running = await boot({
  role: "start",
  env: {},
  config: { DATABASE_URL: values["database-url"]!, PORT: 0, DATA_DIR: await mkdtemp(join(tmpdir(), "bench-reindex-")), SEED_DEMO: false, LOG_LEVEL: "error", RATE_LIMITS_ENABLED: false },
});
try {
  const service = getSearchService(running.services);
  Bun.gc(true);
  const products = service.products.size;
  console.log(`products ${products}; RSS after the start-up load ${mb(process.memoryUsage().rss)} MB, heap ${mb(process.memoryUsage().heapUsed)} MB`);
  const query = { query: "wireless speaker", filters: { inStock: false }, limit: 1 };
  const baseline = (await service.search(query, new Date())).meta.total;
  for (let round = 1; round <= Number(values.rounds); round++) {
    let peak = 0;
    const totals: number[] = [];
    const sample = setInterval(() => {
      peak = Math.max(peak, process.memoryUsage().rss);
      void service.search(query, new Date()).then((r) => totals.push(r.meta.total));
    }, 10);
    const r = await service.reindex(running.services.sql);
    clearInterval(sample);
    peak = Math.max(peak, process.memoryUsage().rss);
    Bun.gc(true);
    const other = totals.filter((t) => t !== baseline);
    console.log(`reindex ${round}: ${r.products} products in ${r.ms} ms; peak RSS ${mb(peak)} MB, after (GC) ${mb(process.memoryUsage().rss)} MB; searches during it ${totals.length}, total other than ${baseline}: ${other.length}`);
  }
} finally {
  await running.stop();
}
