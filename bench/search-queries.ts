/**
 * The request bodies of the search benchmarks (bench/search.ts over HTTP, bench/search-inprocess.ts without it):
 * a deterministic mix kept in its own module so the in-process bench does not load the whole gateway.
 */
import { CATEGORIES } from "../infra/seed/catalog.ts";
import { Rng } from "../infra/seed/prng.ts";

/** The original 12 bodies; kept inside the mix below. */
const FIXED_QUERIES: Array<Record<string, unknown>> = [
  { query: "wireless earbuds" },
  { query: "merino wool sweater", filters: { maxPrice: 150 } },
  { query: "yoga mat" },
  { query: "cast iron skillet", filters: { minTrustScore: 0.7 } },
  { query: "trail running shoes", sort: "price_asc" },
  { query: "bluetooth speaker", filters: { category: "Electronics" } },
  { query: "organic cotton t-shirt" },
  { query: "dog bed", filters: { verificationLevel: "STANDARD" } },
  { query: "coffee", filters: { minPrice: 20, maxPrice: 60 } },
  { query: "mechanical keyboard", limit: 10 },
  { query: "sunscreen spf" },
  { query: "backpacking tent", filters: { inStock: false } },
];

const ADJECTIVES = ["classic", "everyday", "pro", "essential", "premium", "compact", "eco", "lightweight", "heritage", "signature"];
const INTENT_WORDS = ["gift", "travel", "kids", "outdoor", "home", "office", "cheap", "durable", "waterproof", "organic"];

/** One typo: a letter dropped, doubled or two swapped (in the middle of the word). */
function typo(rng: Rng, word: string): string {
  if (word.length < 5) return word;
  const i = rng.int(1, word.length - 2);
  const kind = rng.int(0, 2);
  if (kind === 0) return word.slice(0, i) + word.slice(i + 1);
  if (kind === 1) return word.slice(0, i) + word[i] + word.slice(i);
  return word.slice(0, i) + word[i + 1] + word[i] + word.slice(i + 2);
}

/**
 * A varied, deterministic mix of request bodies, as many agents would send: item names, brand + item,
 * adjective + item, single words, one-typo words, typed prefixes, intent-like phrases and a few words the
 * catalog does not have; half filtered (price ranges, category, trust, verification level, stock), some sorted,
 * paged, with other limits or deduplicate. Distinct bodies, so a result cache cannot hide the engine's cost.
 */
export function queryMix(count = 500, seed = 7): Array<Record<string, unknown>> {
  const rng = new Rng(seed).fork("search-bench-queries");
  const nouns = CATEGORIES.flatMap((c) => c.items.map((i) => ({ noun: i.noun.replace(/\(.*?\)|["°]/g, "").trim().toLowerCase(), cat: c })));
  const out: Array<Record<string, unknown>> = [...FIXED_QUERIES];
  const seen = new Set(out.map((b) => JSON.stringify(b)));
  while (out.length < count) {
    const { noun, cat } = rng.pick(nouns);
    const words = noun.split(/\s+/);
    const kind = rng.weighted<string>([["noun", 3], ["brand", 2], ["adjective", 1], ["word", 1], ["typo", 1], ["prefix", 1], ["intent", 1], ["unknown", 0.3]]);
    let query: string;
    if (kind === "noun") query = noun;
    else if (kind === "brand") query = `${rng.pick(cat.brands).toLowerCase()} ${noun}`;
    else if (kind === "adjective") query = `${rng.pick(ADJECTIVES)} ${noun}`;
    else if (kind === "word") query = rng.pick(words);
    else if (kind === "typo") query = words.map((w) => (w.length >= 5 && rng.chance(0.6) ? typo(rng, w) : w)).join(" ");
    else if (kind === "prefix") {
      const last = words[words.length - 1]!;
      query = [...words.slice(0, -1), last.slice(0, Math.max(2, Math.ceil(last.length * rng.range(0.4, 0.8))))].join(" ");
    } else if (kind === "intent") query = `${words[words.length - 1]} for ${rng.pick(INTENT_WORDS)}`;
    else query = rng.pick(["gaming laptop", "espresso grinder burr", "vinyl record player", "ski goggles", "baby stroller"]);

    const body: Record<string, unknown> = { query };
    if (rng.chance(0.5)) {
      const f: Record<string, unknown> = {};
      const which = rng.weighted<string>([["maxPrice", 2], ["range", 2], ["category", 2], ["trust", 1], ["level", 1], ["stock", 1], ["combo", 1]]);
      if (which === "maxPrice" || which === "combo") f.maxPrice = rng.pick([25, 50, 100, 150, 300]);
      if (which === "range") {
        const lo = rng.pick([10, 20, 40, 80]);
        f.minPrice = lo;
        f.maxPrice = lo * rng.pick([2, 3, 5]);
      }
      if (which === "category" || which === "combo") f.category = rng.chance(0.85) ? cat.name : rng.pick(CATEGORIES).name;
      if (which === "trust") f.minTrustScore = rng.pick([0.6, 0.7, 0.8, 0.9]);
      if (which === "level" || (which === "combo" && rng.chance(0.5))) f.verificationLevel = rng.pick(["STANDARD", "PREMIUM", "QUALIFIED"]);
      if (which === "stock") f.inStock = false;
      body.filters = f;
    }
    if (rng.chance(0.25)) body.sort = rng.pick(["price_asc", "price_desc", "trust_score", "newest"]);
    if (rng.chance(0.15)) body.limit = rng.pick([5, 10, 50, 100]);
    if (rng.chance(0.1)) body.page = rng.int(2, 4);
    if (rng.chance(0.1)) body.deduplicate = true;
    const key = JSON.stringify(body);
    if (seen.has(key)) continue;
    seen.add(key);
    out.push(body);
  }
  return out;
}

