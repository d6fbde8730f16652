/**
 * bench/cpuprofile-top.ts: the top self-time functions and modules of a `bun --cpu-prof` profile.
 *
 *   bun bench/cpuprofile-top.ts FILE.cpuprofile [--tail SECONDS] [--top 40] [--filter SUBSTRING]
 *
 * `--tail` keeps only the samples of the profile's last SECONDS (bench/search-serve.ts exits right after its wrk
 * rounds, so the tail is the load, not the start-up). Self time is per sampled leaf frame; "total" per module is
 * the share of samples with that module anywhere on the stack. `--filter` lists the callers' paths (leaf first) of
 * samples whose leaf ("name  module:line") contains SUBSTRING.
 */
import { readFile } from "node:fs/promises";
import { parseArgs } from "node:util";

const { values, positionals } = parseArgs({
  args: process.argv.slice(2),
  allowPositionals: true,
  options: { tail: { type: "string" }, top: { type: "string", default: "40" }, filter: { type: "string" } },
});

interface Node {
  id: number;
  callFrame: { functionName: string; url: string; lineNumber: number };
  children?: number[];
}
const prof = JSON.parse(await readFile(positionals[0]!, "utf8")) as { nodes: Node[]; samples: number[]; timeDeltas: number[]; startTime: number; endTime: number };
const byId = new Map(prof.nodes.map((n) => [n.id, n]));
const parent = new Map<number, number>();
for (const n of prof.nodes) for (const c of n.children ?? []) parent.set(c, n.id);

const times: number[] = [];
let t = prof.startTime;
for (const d of prof.timeDeltas) times.push((t += d));
const end = times[times.length - 1] ?? prof.endTime;
const from = values.tail ? end - Number(values.tail) * 1e6 : -Infinity;

const short = (url: string) => url.replace(/^.*\/work\/main\//, "").replace(/^.*\/wt-[^/]+\//, "").replace(/^.*node_modules\//, "nm:") || "(native)";
const self = new Map<string, number>();
const mod = new Map<string, number>();
const modTotal = new Map<string, number>();
const paths = new Map<string, number>();
let n = 0;
for (let i = 0; i < prof.samples.length; i++) {
  if (times[i]! < from) continue;
  n++;
  const leaf = byId.get(prof.samples[i]!)!;
  const f = leaf.callFrame;
  const key = `${f.functionName || "(anon)"}  ${short(f.url)}:${f.lineNumber + 1}`;
  self.set(key, (self.get(key) ?? 0) + 1);
  mod.set(short(f.url), (mod.get(short(f.url)) ?? 0) + 1);
  const seen = new Set<string>();
  const chain: string[] = [];
  for (let id: number | undefined = leaf.id; id !== undefined; id = parent.get(id)) {
    const cf = byId.get(id)!.callFrame;
    const m = short(cf.url);
    if (!seen.has(m)) (seen.add(m), modTotal.set(m, (modTotal.get(m) ?? 0) + 1));
    if (values.filter && chain.length < 12) chain.push(`${cf.functionName || "(anon)"}@${m}:${cf.lineNumber + 1}`);
  }
  if (values.filter && key.includes(values.filter)) {
    const k = chain.join(" < ");
    paths.set(k, (paths.get(k) ?? 0) + 1);
  }
}
const top = Number(values.top);
const pct = (x: number) => ((100 * x) / n).toFixed(1).padStart(5) + " %";
console.log(`${n} samples`);
console.log("\n## self time by function");
for (const [k, v] of [...self].sort((a, b) => b[1] - a[1]).slice(0, top)) console.log(`${pct(v)}  ${k}`);
console.log("\n## self time by module");
for (const [k, v] of [...mod].sort((a, b) => b[1] - a[1]).slice(0, top)) console.log(`${pct(v)}  ${k}`);
console.log("\n## samples with the module on the stack");
for (const [k, v] of [...modTotal].sort((a, b) => b[1] - a[1]).slice(0, top)) console.log(`${pct(v)}  ${k}`);
if (values.filter) {
  console.log(`\n## stacks of leaves matching ${values.filter}`);
  for (const [k, v] of [...paths].sort((a, b) => b[1] - a[1]).slice(0, 15)) console.log(`${pct(v)}  ${k}`);
}
