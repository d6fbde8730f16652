/**
 * bench/relevance.ts: nDCG@10 of POST /api/v1/agent/search over the seeded demo catalog.
 *
 *   bun bench/relevance.ts            # boots the service on a fresh database (demo seed), runs the labelled set
 *   bun bench/relevance.ts --build    # regenerates bench/relevance-set.json from the seed (judgments, not results)
 *   bun bench/relevance.ts --window N # the same with candidateWindow N (to judge a smaller default)
 *
 * Labels (bench/relevance-set.json): each query names the item type(s) it asks for; a product is judged
 * relevant (grade 2) when it is that item type, and partially relevant (grade 1) when it is in the judged
 * category but another item (only for broad queries). Judgments come from the seed's item templates, never from
 * the engine, and cover eligible merchants only (ineligible ones must not appear at all). Queries mix plain item
 * names, brand + item, typos, prefixes, paraphrases and the cross-merchant shared items.
 * Search runs with inStock false (stock is not relevance) and relevance sort.
 */
import { writeFile } from "node:fs/promises";
import { join } from "node:path";
import { isStoreEligible } from "../search/ranking.ts";
import { buildDemoData } from "../infra/seed/demo.ts";
import { CATEGORIES } from "../infra/seed/catalog.ts";
import { SHARED_ITEMS } from "../infra/seed/merchants.ts";

const SET_FILE = join(import.meta.dir, "relevance-set.json");

interface Labelled {
  query: string;
  kind: string;
  /** product id → grade (2 relevant, 1 partially relevant). */
  judgments: Record<string, number>;
}

/** Item nouns without sizes and counts: `Cast Iron Skillet 10"` → `cast iron skillet`. */
function plainNoun(noun: string): string {
  return noun
    .replace(/\(.*?\)/g, "")
    .replace(/\b\d+(\.\d+)?\s*(mm|ml|l|lb|ft|gal|pc|tb|w|mah|°f)?\b/gi, "")
    .replace(/["'°]/g, "")
    .replace(/\s+/g, " ")
    .trim()
    .toLowerCase();
}

/** Paraphrase / intent queries, each judged by the template nouns it means. */
const INTENTS: { query: string; nouns: string[] }[] = [
  { query: "headphones for long flights", nouns: ["Noise-Cancelling Headphones"] },
  { query: "charger for laptop and phone", nouns: ["USB-C Charger 65W", "Power Bank 20000mAh"] },
  { query: "keep coffee warm bottle", nouns: ["Insulated Water Bottle 750ml"] },
  { query: "plastic-free toothbrush", nouns: ["Bamboo Toothbrush 4-Pack"] },
  { query: "sleeping bag cold nights", nouns: ["Down Sleeping Bag 20°F"] },
  { query: "jacket for rain", nouns: ["Rain Shell Jacket"] },
  { query: "board game for family", nouns: ["Strategy Board Game", "Party Card Game"] },
  { query: "cat toy", nouns: ["Interactive Cat Toy", "Cat Scratching Post"] },
  { query: "garden watering can", nouns: ["Galvanized Watering Can 2 gal"] },
  { query: "reef safe sunscreen", nouns: ["Mineral Sunscreen SPF 50"] },
];

const TYPOS: { query: string; noun: string }[] = [
  { query: "wireles earbuds", noun: "Wireless Earbuds" },
  { query: "mechanicl keyboard", noun: "Mechanical Keyboard" },
  { query: "merino wol sweater", noun: "Merino Wool Sweater" },
  { query: "trekking pols", noun: "Carbon Trekking Poles" },
  { query: "bluetoth speaker", noun: "Bluetooth Speaker" },
  { query: "skillet cast irn", noun: 'Cast Iron Skillet 10"' },
];

const PREFIXES: { query: string; noun: string }[] = [
  { query: "smartwat", noun: "Smartwatch" },
  { query: "dumbb", noun: "Adjustable Dumbbell 25 lb" },
  { query: "french pre", noun: "French Press 1L" },
  { query: "jigsaw puz", noun: "1000-Piece Jigsaw Puzzle" },
];

export function buildSet(): Labelled[] {
  const data = buildDemoData();
  const eligible = new Set(
    data.stores
      .filter((s) => isStoreEligible({ trustScore: s.trustScore, verificationLevel: s.verificationLevel, storeStatus: s.operationalStatus }))
      .map((s) => s.slug),
  );
  const products = data.products.filter((p) => p.active && eligible.has(p.storeSlug));
  // Which template a product comes from: its title ends with the (possibly suffixed) noun; shared items carry
  // their own titles, so they are matched through SHARED_ITEMS.
  const nounOf = new Map<string, string>();
  const allNouns = CATEGORIES.flatMap((c) => c.items.map((i) => i.noun)).sort((a, b) => b.length - a.length);
  for (const p of products) {
    const n = allNouns.find((noun) => p.title.includes(noun));
    if (n) nounOf.set(p.id, n);
  }
  for (const s of SHARED_ITEMS) {
    for (const [slug, title] of Object.entries(s.titles)) {
      const p = products.find((x) => x.storeSlug === slug && x.title === title);
      if (p) nounOf.set(p.id, s.templateNoun);
    }
  }
  const byNoun = (nouns: string[], partialCategory?: string): Record<string, number> => {
    const j: Record<string, number> = {};
    for (const p of products) {
      if (nouns.includes(nounOf.get(p.id) ?? "")) j[p.id] = 2;
      else if (partialCategory && p.category === partialCategory) j[p.id] = 1;
    }
    return j;
  };

  const set: Labelled[] = [];
  for (const c of CATEGORIES) {
    for (const item of c.items) {
      const j = byNoun([item.noun]);
      if (Object.keys(j).length === 0) continue;
      set.push({ query: plainNoun(item.noun), kind: "item", judgments: j });
    }
  }
  for (const s of SHARED_ITEMS) {
    const j: Record<string, number> = {};
    for (const [slug, title] of Object.entries(s.titles)) {
      const p = products.find((x) => x.storeSlug === slug && x.title === title);
      if (p) j[p.id] = 2;
    }
    for (const p of products) if (!(p.id in j) && nounOf.get(p.id) === s.templateNoun) j[p.id] = 1;
    set.push({ query: s.titles["demo-store"]!, kind: "shared-item", judgments: j });
  }
  for (const i of INTENTS) set.push({ query: i.query, kind: "intent", judgments: byNoun(i.nouns) });
  for (const t of TYPOS) set.push({ query: t.query, kind: "typo", judgments: byNoun([t.noun]) });
  for (const p of PREFIXES) set.push({ query: p.query, kind: "prefix", judgments: byNoun([p.noun]) });
  return set.filter((q) => Object.values(q.judgments).some((g) => g === 2));
}

function dcg(grades: number[]): number {
  return grades.reduce((s, g, i) => s + (2 ** g - 1) / Math.log2(i + 2), 0);
}

export function ndcgAt(k: number, ranked: string[], judgments: Record<string, number>): number {
  const got = ranked.slice(0, k).map((id) => judgments[id] ?? 0);
  const ideal = Object.values(judgments).sort((a, b) => b - a).slice(0, k);
  const idcg = dcg(ideal);
  return idcg === 0 ? 0 : dcg(got) / idcg;
}

async function main(): Promise<void> {
  if (process.argv.includes("--build")) {
    const set = buildSet();
    await writeFile(SET_FILE, JSON.stringify({ generatedFrom: "buildDemoData() (seed 20250601)", queries: set }, null, 1) + "\n");
    console.log(`wrote ${set.length} labelled queries to ${SET_FILE}`);
    return;
  }
  const { startServer } = await import("../test/helpers/server.ts");
  const { createKey } = await import("../test/helpers/agents.ts");
  const set = (JSON.parse(await Bun.file(SET_FILE).text()) as { queries: Labelled[] }).queries;
  const srv = await startServer({ seed: true, config: { RATE_LIMITS_ENABLED: false } });
  try {
    // --window N: the same set with another candidate window (evaluating a smaller default; not stored)
    const w = process.argv.indexOf("--window");
    if (w > 0) {
      const { getSearchService } = await import("../search/service.ts");
      const { resolveSearchSettings } = await import("../search/settings.ts");
      const search = getSearchService(srv.running.services);
      const settings = resolveSearchSettings({ candidateWindow: Number(process.argv[w + 1]) });
      await search.engine.applySettings(settings);
      search.settings = settings;
      console.log(`candidate window: ${settings.candidateWindow}`);
    }
    const key = await createKey(srv, { tier: "ENTERPRISE" });
    const byKind = new Map<string, number[]>();
    const all: number[] = [];
    const worst: { q: string; v: number }[] = [];
    for (const q of set) {
      const r = await srv.json("/api/v1/agent/search", { method: "POST", headers: key.headers, body: { query: q.query, limit: 10, filters: { inStock: false } } });
      if (r.status !== 200) throw new Error(`search failed for ${q.query}: ${r.status}`);
      const v = ndcgAt(10, (r.body.data.products as { id: string }[]).map((p) => p.id), q.judgments);
      all.push(v);
      byKind.set(q.kind, [...(byKind.get(q.kind) ?? []), v]);
      worst.push({ q: q.query, v });
    }
    const mean = (xs: number[]) => xs.reduce((s, x) => s + x, 0) / Math.max(1, xs.length);
    console.log(`queries: ${set.length}, mean nDCG@10: ${mean(all).toFixed(3)}`);
    console.log("| kind | queries | nDCG@10 |\n|---|---|---|");
    for (const [k, xs] of byKind) console.log(`| ${k} | ${xs.length} | ${mean(xs).toFixed(3)} |`);
    console.log(`| all | ${all.length} | ${mean(all).toFixed(3)} |`);
    console.log("weakest:", worst.sort((a, b) => a.v - b.v).slice(0, 5).map((w) => `${w.q} ${w.v.toFixed(2)}`).join("; "));
  } finally {
    await srv.stop();
  }
}

if (import.meta.main) await main();
