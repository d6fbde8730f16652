/**
 * bench/search-ab.ts: two builds of the search code in ONE process, on the same synthetic catalog, passes
 * alternated (A B B A …), so a shared, busy machine's drift hits both alike; separate runs of
 * bench/search-inprocess.ts moved ±25 % from run to run at load 10–18.
 *
 *   bun bench/search-ab.ts --a /tmp/wt-start --b . [--size 100000] [--merchants 1000] [--queries 500] [--pairs 10]
 *
 * `--a` / `--b` are checkouts (a `git worktree` of the older commit, and this one): each side's
 * bench/search-inprocess.ts (catalog loader), search/service.ts and search/embedded.ts are imported from its own
 * directory, so each side runs its own engine and ranking. A pass = every body through `SearchService.search` plus
 * the response's JSON, as the route does; CPU per query from process.cpuUsage (GC included). Prints each side's
 * median CPU ms per query and the median of the per-pair ratios B/A. Both sides' responses are compared too (the
 * first pass's, without tookMs): any difference is printed and the exit code is 1.
 *
 * `--engine`: the embedded engines alone instead (session 13). Each side's `search/embedded.ts` is loaded with the
 * same documents (those side A's service indexes), every body's EngineQuery (built by side A's ranking.ts) is run
 * through both engines' `queryWindow`, unordered and ordered, and the windows are compared as (id, text score at
 * full precision): responses round scores for the wire, so a change in the last bits of a text score (a sum taken
 * in another order) can pass the response check and still show here. Timed passes are queryWindow calls only.
 */
import { resolve } from "node:path";
import { parseArgs } from "node:util";
import { queryMix } from "./search-queries.ts";

const { values } = parseArgs({
  args: process.argv.slice(2),
  options: {
    a: { type: "string" },
    b: { type: "string", default: "." },
    size: { type: "string", default: "100000" },
    merchants: { type: "string", default: "1000" },
    queries: { type: "string", default: "500" },
    pairs: { type: "string", default: "10" },
    engine: { type: "boolean", default: false },
  },
});
if (!values.a) throw new Error("--a DIR (the other checkout)");

interface Side {
  name: string;
  svc: any;
  now: Date;
}

async function side(name: string, dir: string): Promise<Side> {
  const root = resolve(dir);
  const bench = await import(`${root}/bench/search-inprocess.ts`);
  const { SearchService } = await import(`${root}/search/service.ts`);
  const { createEmbeddedEngine } = await import(`${root}/search/embedded.ts`);
  const svc = new SearchService(createEmbeddedEngine());
  const size = Number(values.size);
  const merchants = Math.min(Number(values.merchants), Math.max(1, Math.floor(size / 10)));
  const ms = await bench.loadSynthetic(svc, size, merchants);
  process.stderr.write(`${name} (${root}): ${size} products loaded in ${(ms / 1000).toFixed(1)} s\n`);
  return { name, svc, now: bench.NOW };
}

const bodies = queryMix(Number(values.queries));

async function pass(s: Side, out?: string[]): Promise<number> {
  const cpu0 = process.cpuUsage();
  for (const body of bodies) {
    const r = await s.svc.search(body, s.now);
    const json = JSON.stringify({ success: true, data: r });
    if (out) {
      delete r.queryMeta.tookMs;
      out.push(JSON.stringify(r));
    } else if (json.length === 0) throw new Error("empty");
  }
  const cpu = process.cpuUsage(cpu0);
  return (cpu.user + cpu.system) / 1000 / bodies.length;
}

if (values.engine) await engineOnly();

/** --engine: the two sides' embedded engines on the same documents, windows compared exactly, queryWindow timed. */
async function engineOnly(): Promise<never> {
  const rootA = resolve(values.a!);
  const rootB = resolve(values.b!);
  const bench = await import(`${rootA}/bench/search-inprocess.ts`);
  const { SearchService } = await import(`${rootA}/search/service.ts`);
  const { engineQueryFor } = await import(`${rootA}/search/ranking.ts`);
  const engA = (await import(`${rootA}/search/embedded.ts`)).createEmbeddedEngine();
  const engB = (await import(`${rootB}/search/embedded.ts`)).createEmbeddedEngine();
  const svc = new SearchService(engA);
  const docs: unknown[] = [];
  const upsert = engA.upsert.bind(engA);
  engA.upsert = async (d: unknown[]) => {
    docs.push(...d);
    return upsert(d);
  };
  const size = Number(values.size);
  await bench.loadSynthetic(svc, size, Math.min(Number(values.merchants), Math.max(1, Math.floor(size / 10))));
  await engB.upsert(docs);
  const queries = bodies.map((body: any) => engineQueryFor(body.query, body, svc.allowedSlugs(body), svc.settings, svc.currencies));
  const windowOf = (e: any, q: any, unordered: boolean): string[] => {
    const w = e.queryWindow({ ...q, unordered });
    const out = Array.from({ length: w.length }, (_, i) => `${w.ids[i]}:${w.textScores[i]}`);
    return unordered ? out.sort() : out;
  };
  let diffs = 0;
  for (let i = 0; i < queries.length; i++) {
    for (const unordered of [true, false]) {
      const a = windowOf(engA, queries[i], unordered).join(" ");
      const b = windowOf(engB, queries[i], unordered).join(" ");
      if (a !== b && diffs++ < 3) console.error(`window ${i} (${JSON.stringify(bodies[i])}, unordered ${unordered}) differs:\n  A ${a.slice(0, 300)}\n  B ${b.slice(0, 300)}`);
    }
  }
  console.log(diffs === 0 ? `engine windows: all ${queries.length * 2} identical` : `engine windows: ${diffs} of ${queries.length * 2} differ`);
  const timed = queries.map((q: any) => ({ ...q, unordered: true }));
  const run = (e: any): number => {
    const cpu0 = process.cpuUsage();
    for (const q of timed) e.queryWindow(q);
    const cpu = process.cpuUsage(cpu0);
    return (cpu.user + cpu.system) / 1000 / timed.length;
  };
  run(engA);
  run(engB);
  const a: number[] = [];
  const b: number[] = [];
  const ratios: number[] = [];
  for (let p = 0; p < Number(values.pairs); p++) {
    // A B in even pairs, B A in odd ones
    let ca: number;
    let cb: number;
    if (p % 2 === 0) {
      ca = run(engA);
      cb = run(engB);
    } else {
      cb = run(engB);
      ca = run(engA);
    }
    a.push(ca);
    b.push(cb);
    ratios.push(cb / ca);
  }
  const med = (xs: number[]) => [...xs].sort((x, y) => x - y)[Math.floor(xs.length / 2)]!;
  const load = (await Bun.file("/proc/loadavg").text()).split(" ").slice(0, 3).join(" ");
  console.log(`${size.toLocaleString("en-US")} products, ${timed.length} engine queries, ${a.length} pairs, load ${load}`);
  console.log(`engine CPU ms/query median: A ${med(a).toFixed(3)}  B ${med(b).toFixed(3)}  median B/A ${med(ratios).toFixed(3)} (B lower in ${ratios.filter((r) => r < 1).length} of ${ratios.length} pairs)`);
  process.exit(diffs === 0 ? 0 : 1);
}

const A = await side("A", values.a);
const B = await side("B", values.b!);
const outA: string[] = [];
const outB: string[] = [];
await pass(A, outA); // warm-up (JIT, caches), and the responses to compare
await pass(B, outB);
let diffs = 0;
for (let i = 0; i < bodies.length; i++) {
  if (outA[i] !== outB[i] && diffs++ < 3) console.error(`response ${i} differs:\n  A ${outA[i]?.slice(0, 400)}\n  B ${outB[i]?.slice(0, 400)}`);
}
console.log(diffs === 0 ? `responses: all ${bodies.length} identical` : `responses: ${diffs} of ${bodies.length} differ`);

const a: number[] = [];
const b: number[] = [];
const ratios: number[] = [];
for (let p = 0; p < Number(values.pairs); p++) {
  // A B in even pairs, B A in odd ones
  let ca: number;
  let cb: number;
  if (p % 2 === 0) {
    ca = await pass(A);
    cb = await pass(B);
  } else {
    cb = await pass(B);
    ca = await pass(A);
  }
  a.push(ca);
  b.push(cb);
  ratios.push(cb / ca);
  process.stderr.write(`pair ${p + 1}: A ${ca.toFixed(3)}  B ${cb.toFixed(3)}  B/A ${(cb / ca).toFixed(3)}\n`);
}
const med = (xs: number[]) => [...xs].sort((x, y) => x - y)[Math.floor(xs.length / 2)]!;
const load = (await Bun.file("/proc/loadavg").text()).split(" ").slice(0, 3).join(" ");
console.log(`${Number(values.size).toLocaleString("en-US")} products, ${bodies.length} queries, ${a.length} pairs, load ${load}`);
console.log(`CPU ms/query median: A ${med(a).toFixed(3)}  B ${med(b).toFixed(3)}  median B/A ${med(ratios).toFixed(3)}`);
process.exit(diffs === 0 ? 0 : 1);
