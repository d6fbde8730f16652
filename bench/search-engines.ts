/**
 * Compares the in-process full-text candidates for `search/embedded.ts`: MiniSearch, Orama and FlexSearch.
 * Figures: index build time, incremental upsert/remove, query throughput (typo + prefix + field boosts + filters
 * where the library can do them) and retained heap, for 10k and 100k synthetic products.
 *
 * Run: `bun bench/search-engines.ts` (about a minute on 2 shared cores). `BENCH_SIZES=10000` to shorten.
 * Results are recorded in docs/search.md.
 */
import MiniSearch from "minisearch";
import { create, insertMultiple, remove as oramaRemove, search as oramaSearch, type AnyOrama } from "@orama/orama";
import FlexSearch from "flexsearch";
import type { SearchDoc } from "../search/engine.ts";
import { createEmbeddedEngine } from "../search/embedded.ts";
import { mulberry32 } from "../infra/seed/prng.ts";

// ---------- synthetic catalog ----------

const ADJ = ["wireless", "organic", "premium", "compact", "vintage", "ergonomic", "waterproof", "portable", "classic", "smart", "handmade", "lightweight", "bamboo", "leather", "stainless", "ceramic", "cotton", "merino", "solar", "modular"];
const NOUN = ["headphones", "keyboard", "backpack", "kettle", "sneakers", "jacket", "lamp", "blender", "speaker", "notebook", "bottle", "charger", "mattress", "sofa", "camera", "watch", "wallet", "tent", "mug", "drill"];
const BRAND = ["Acme", "Nordwind", "Solace", "Brightline", "Kestrel", "Umbra", "Tidewater", "Oakhaven", "Lumen", "Vireo"];
const CATEGORY = ["Electronics", "Home & Kitchen", "Outdoors", "Fashion", "Office", "Furniture", "Sports", "Beauty"];
const TAGS = ["gift", "eco", "sale", "new", "bestseller", "travel", "kids", "pro"];
const FILLER = ["designed", "for", "everyday", "use", "with", "durable", "materials", "and", "a", "two", "year", "warranty", "ships", "fast", "from", "our", "warehouse", "quality", "tested", "comfortable"];

function pick<T>(r: () => number, xs: readonly T[]): T {
  return xs[Math.floor(r() * xs.length)];
}

export function syntheticDocs(n: number, seed = 42): SearchDoc[] {
  const r = mulberry32(seed);
  const docs: SearchDoc[] = [];
  for (let i = 0; i < n; i++) {
    const desc: string[] = [];
    for (let k = 0; k < 18; k++) desc.push(pick(r, FILLER));
    desc.splice(5, 0, pick(r, ADJ), pick(r, NOUN));
    const hex = i.toString(16).padStart(12, "0");
    docs.push({
      id: `00000000-0000-4000-8000-${hex}`,
      storeSlug: `store-${Math.floor(r() * 200)}`,
      title: `${pick(r, BRAND)} ${pick(r, ADJ)} ${pick(r, ADJ)} ${pick(r, NOUN)} ${Math.floor(r() * 900 + 100)}`,
      description: desc.join(" "),
      category: pick(r, CATEGORY),
      brand: pick(r, BRAND),
      tags: [pick(r, TAGS), pick(r, TAGS)],
      priceMinor: Math.floor(r() * 50_000) + 100,
      currency: "EUR",
      inStock: r() < 0.8,
      createdAt: new Date(Date.UTC(2025, 0, 1) + Math.floor(r() * 3e10)).toISOString(),
      updatedAt: new Date(Date.UTC(2025, 6, 1)).toISOString(),
    });
  }
  return docs;
}

interface BenchQuery {
  text: string;
  filtered: boolean;
  stores: string[];
}

function syntheticQueries(n: number): BenchQuery[] {
  const r = mulberry32(7);
  const qs: BenchQuery[] = [];
  for (let i = 0; i < n; i++) {
    const kind = i % 4;
    let text: string;
    if (kind === 0) text = `${pick(r, ADJ)} ${pick(r, NOUN)}`;
    else if (kind === 1) text = pick(r, NOUN).replace(/e/, "a"); // one typo
    else if (kind === 2) text = `${pick(r, BRAND)} ${pick(r, NOUN).slice(0, 4)}`; // prefix on last word
    else text = `${pick(r, ADJ)} ${pick(r, ADJ)} ${pick(r, NOUN)}`;
    const stores = Array.from({ length: 150 }, () => `store-${Math.floor(r() * 200)}`);
    qs.push({ text, filtered: i % 2 === 0, stores });
  }
  return qs;
}

// ---------- adapters (raw libraries, comparable options) ----------

interface Lib {
  name: string;
  build(docs: SearchDoc[]): Promise<void>;
  upsert(docs: SearchDoc[]): Promise<void>;
  remove(ids: string[]): Promise<void>;
  query(q: BenchQuery): Promise<number>;
  /** Features this adapter could express natively. */
  notes: string;
}

const BOOST = { title: 5, brand: 4, category: 3, tags: 2, description: 1 };
const MIN_PRICE = 5_000;
const MAX_PRICE = 30_000;

function miniSearchLib(): Lib {
  let ms: MiniSearch<SearchDoc>;
  const make = () =>
    new MiniSearch<SearchDoc>({
      fields: ["title", "brand", "category", "tags", "description"],
      storeFields: ["storeSlug", "priceMinor", "inStock"],
      extractField: (d, f) => {
        const v = (d as unknown as Record<string, unknown>)[f];
        return Array.isArray(v) ? v.join(" ") : (v as string);
      },
    });
  return {
    name: "minisearch",
    notes: "typo per word length, prefix, field boosts, filter callback, match info, discard/replace",
    async build(docs) {
      ms = make();
      ms.addAll(docs);
    },
    async upsert(docs) {
      for (const d of docs) ms.has(d.id) ? ms.replace(d) : ms.add(d);
    },
    async remove(ids) {
      for (const id of ids) if (ms.has(id)) ms.discard(id);
    },
    async query(q) {
      const allow = new Set(q.stores);
      const res = ms.search(q.text, {
        boost: BOOST,
        prefix: (_t, i, terms) => i === terms.length - 1,
        fuzzy: (t) => (t.length >= 9 ? 2 : t.length >= 5 ? 1 : 0),
        filter: q.filtered
          ? (r) => allow.has(r.storeSlug) && r.inStock === true && r.priceMinor >= MIN_PRICE && r.priceMinor <= MAX_PRICE
          : undefined,
      });
      return Math.min(res.length, 1000);
    },
  };
}

function oramaLib(): Lib {
  let db: AnyOrama;
  const make = () =>
    create({
      schema: {
        id: "string",
        storeSlug: "enum",
        title: "string",
        brand: "string",
        category: "string",
        tags: "string[]",
        description: "string",
        priceMinor: "number",
        inStock: "boolean",
      } as const,
    });
  const row = (d: SearchDoc) => ({ ...d, brand: d.brand ?? "", category: d.category ?? "" });
  return {
    name: "orama",
    notes: "one tolerance per query (not per word length), prefix always on, field boosts, native where (range/enum/boolean)",
    async build(docs) {
      db = make();
      await insertMultiple(db, docs.map(row), 1000);
    },
    async upsert(docs) {
      for (const d of docs) {
        await oramaRemove(db, d.id);
        await insertMultiple(db, [row(d)]);
      }
    },
    async remove(ids) {
      for (const id of ids) await oramaRemove(db, id);
    },
    async query(q) {
      const res = await oramaSearch(db, {
        term: q.text,
        properties: ["title", "brand", "category", "tags", "description"],
        boost: BOOST,
        tolerance: 1,
        limit: 1000,
        where: q.filtered
          ? { storeSlug: { in: q.stores }, inStock: true, priceMinor: { between: [MIN_PRICE, MAX_PRICE] } }
          : undefined,
      });
      return res.hits.length;
    },
  };
}

function flexSearchLib(): Lib {
  let idx: InstanceType<typeof FlexSearch.Document>;
  const byId = new Map<string, SearchDoc>();
  const make = () =>
    new FlexSearch.Document({
      tokenize: "forward",
      document: { id: "id", index: ["title", "brand", "category", "tags", "description"], tag: ["storeSlug"] },
    });
  const row = (d: SearchDoc) => ({ ...d, brand: d.brand ?? "", category: d.category ?? "", tags: d.tags.join(" ") });
  return {
    name: "flexsearch",
    notes: "prefix (forward tokenizer), no edit-distance typos, no scores, tag filters only (price/stock filtered after)",
    async build(docs) {
      idx = make();
      byId.clear();
      for (const d of docs) {
        idx.add(row(d));
        byId.set(d.id, d);
      }
    },
    async upsert(docs) {
      for (const d of docs) {
        idx.update(row(d));
        byId.set(d.id, d);
      }
    },
    async remove(ids) {
      for (const id of ids) {
        idx.remove(id);
        byId.delete(id);
      }
    },
    async query(q) {
      const res = idx.search({ query: q.text, limit: 1000, suggest: true, merge: true }) as unknown as Array<{ id: string }>;
      if (!q.filtered) return res.length;
      const allow = new Set(q.stores);
      let n = 0;
      for (const r of res) {
        const d = byId.get(String(r.id));
        if (d && allow.has(d.storeSlug) && d.inStock && d.priceMinor >= MIN_PRICE && d.priceMinor <= MAX_PRICE) n++;
      }
      return n;
    },
  };
}

/**
 * Our engine (own typed-array inverted index, MiniSearch's radix tree as the term dictionary, the same scores as
 * the former MiniSearch wrapper + absolute text score + synonyms), to compare with the raw libraries.
 */
function ourEngineLib(): Lib {
  let engine = createEmbeddedEngine();
  return {
    name: "embedded (ours)",
    notes: "search/embedded.ts: own postings + MiniSearch radix-tree dictionary, synonyms, absolute textScore, top-k window",
    async build(docs) {
      engine = createEmbeddedEngine();
      await engine.upsert(docs);
    },
    upsert: (docs) => engine.upsert(docs),
    remove: (ids) => engine.remove(ids),
    async query(q) {
      const res = await engine.query({
        text: q.text,
        window: 1000,
        ...(q.filtered ? { storeSlugs: q.stores, inStock: true, minPriceMinor: MIN_PRICE, maxPriceMinor: MAX_PRICE } : {}),
      });
      return res.length;
    },
  };
}

// ---------- harness ----------

function heapMb(): number {
  Bun.gc(true);
  return process.memoryUsage().heapUsed / 1024 / 1024;
}

async function time<T>(f: () => Promise<T>): Promise<[number, T]> {
  const t0 = performance.now();
  const v = await f();
  return [performance.now() - t0, v];
}

interface Row {
  engine: string;
  docs: number;
  buildMs: number;
  heapMb: number;
  upsert1kMs: number;
  remove1kMs: number;
  qps: number;
  p50Ms: number;
  p95Ms: number;
  avgHits: number;
}

/** Runs `op` one item at a time until done or 1.5 s spent; returns milliseconds per 1000 items (extrapolated if cut short). */
async function perThousand<T>(items: T[], op: (batch: T[]) => Promise<void>): Promise<number> {
  const t0 = performance.now();
  let done = 0;
  while (done < items.length && performance.now() - t0 < 1500) {
    await op(items.slice(done, done + 1));
    done += 1;
  }
  return ((performance.now() - t0) / done) * 1000;
}

async function benchOne(lib: Lib, docs: SearchDoc[], queries: BenchQuery[]): Promise<Row> {
  const before = heapMb();
  const [buildMs] = await time(() => lib.build(docs));
  const heap = heapMb() - before;
  // replace existing docs (changed price/title), then remove others; time-boxed, reported per 1000 docs
  const changed = docs.slice(0, 1000).map((d) => ({ ...d, title: `${d.title} v2`, priceMinor: d.priceMinor + 1 }));
  const upsertMs = await perThousand(changed, (batch) => lib.upsert(batch));
  const removeMs = await perThousand(docs.slice(1000, 2000).map((d) => d.id), (batch) => lib.remove(batch));
  for (const q of queries.slice(0, 20)) await lib.query(q); // warm-up
  const lat: number[] = [];
  let hits = 0;
  const qStart = performance.now();
  for (const q of queries) {
    if (performance.now() - qStart > 3000) break; // slow engines answer fewer of the 200 queries
    const t0 = performance.now();
    hits += await lib.query(q);
    lat.push(performance.now() - t0);
  }
  const total = lat.reduce((a, b) => a + b, 0);
  lat.sort((a, b) => a - b);
  return {
    engine: lib.name,
    docs: docs.length,
    buildMs: Math.round(buildMs),
    heapMb: Math.round(heap),
    upsert1kMs: Math.round(upsertMs),
    remove1kMs: Math.round(removeMs),
    qps: Math.round((lat.length / total) * 1000),
    p50Ms: +lat[Math.floor(lat.length * 0.5)].toFixed(2),
    p95Ms: +lat[Math.floor(lat.length * 0.95)].toFixed(2),
    avgHits: Math.round(hits / lat.length),
  };
}

async function main(): Promise<void> {
  const sizes = (process.env.BENCH_SIZES ?? "10000,100000").split(",").map(Number);
  const only = process.env.BENCH_ENGINES?.split(",");
  const queries = syntheticQueries(200);
  const libs = [miniSearchLib, oramaLib, flexSearchLib, ourEngineLib];
  const rows: Row[] = [];
  for (const n of sizes) {
    const docs = syntheticDocs(n);
    for (const makeLib of libs) {
      const lib = makeLib();
      if (only && !only.includes(lib.name)) continue;
      const row = await benchOne(lib, docs, queries);
      rows.push(row);
      console.error(`${lib.name} ${n}: ${JSON.stringify(row)}`);
    }
  }
  console.log("| engine | docs | build ms | heap MB | upsert 1k ms | remove 1k ms | queries/s | p50 ms | p95 ms | avg hits |");
  console.log("|---|---|---|---|---|---|---|---|---|---|");
  for (const r of rows) {
    console.log(`| ${r.engine} | ${r.docs} | ${r.buildMs} | ${r.heapMb} | ${r.upsert1kMs} | ${r.remove1kMs} | ${r.qps} | ${r.p50Ms} | ${r.p95Ms} | ${r.avgHits} |`);
  }
}

if (import.meta.main) await main();
