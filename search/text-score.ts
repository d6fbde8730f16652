/**
 * The absolute text score shared by the embedded engine: how much of the query a document covers, and how well.
 *
 * For every query word (a "group": the word plus its synonyms) take the best document word that matches it,
 * scored as match quality × field factor:
 *   - quality: exact 1; prefix 0.7 + 0.3 × (query length / word length); n typos 1 − 0.2 n (typos counted by
 *     optimal string alignment: a swap of two adjacent letters is one); a synonym × 0.9
 *   - field factor: sqrt(field weight / top field weight), e.g. title 1, brand 0.89, category 0.77, tags 0.63,
 *     description 0.45 with the default weights
 * coverage = mean over groups (a group nobody matched counts 0).
 * textScore = 0.9 × coverage + 0.1 × (engine score / best engine score in the result set).
 * So 1 needs every word matched exactly in the title; a lone weak match stays low even when it is the only hit,
 * and the small relative part only orders documents of equal coverage (term frequency, field length).
 */
import { boundedOsaDistance, typosCounted } from "./fuzzy.ts";
import { allowedTypos, SEARCHABLE_FIELDS, type SearchableField, type SearchSettings } from "./settings.ts";

export interface QueryGroup {
  /** The query word as typed (processed). */
  word: string;
  /** Alternatives: the word itself first, then synonyms (each possibly several words). */
  alternatives: string[][];
  /** Prefix matching allowed for the word itself (last word of the query). */
  prefix: boolean;
}

export const SYNONYM_FACTOR = 0.9;
/** The longest synonym key, in words, that is matched (Meilisearch fetches synonyms for 1- to 3-word terms only). */
export const MAX_SYNONYM_KEY_WORDS = 3;
export const COVERAGE_SHARE = 0.9;

export function fieldFactors(s: SearchSettings): Record<SearchableField, number> {
  const top = Math.max(...SEARCHABLE_FIELDS.map((f) => s.fieldWeights[f]));
  const out = {} as Record<SearchableField, number>;
  for (const f of SEARCHABLE_FIELDS) out[f] = Math.sqrt(s.fieldWeights[f] / top);
  return out;
}

/** Quality (0..1) of document word `docWord` for query word `q`; 0 when it does not match. */
export function wordQuality(q: string, docWord: string, prefix: boolean, s: SearchSettings): number {
  if (q === docWord) return 1;
  if (prefix && docWord.startsWith(q)) return 0.7 + (0.3 * q.length) / docWord.length;
  const typos = allowedTypos(q, s);
  if (typos > 0) {
    const d = boundedOsaDistance(q, docWord, typos);
    if (typosCounted(q, docWord, d) <= typos) return 1 - 0.2 * d;
  }
  return 0;
}

/**
 * Coverage (0..1) of the query groups by one document, given the engine's match info
 * (document word → fields it occurs in).
 */
export function coverage(
  groups: QueryGroup[],
  match: Record<string, string[]>,
  s: SearchSettings,
  factors: Record<SearchableField, number>,
  cache: Map<string, Map<string, number>> = new Map(),
): number {
  if (groups.length === 0) return 0;
  const words: string[] = [];
  const wordFactors: number[] = [];
  for (const w in match) {
    let f = 0;
    for (const field of match[w]) f = Math.max(f, factors[field as SearchableField] ?? 0);
    words.push(w);
    wordFactors.push(f);
  }
  // quality depends only on (query word, prefix, document word): cached across the documents of one query
  const bestFor = (q: string, prefix: boolean): number => {
    const cacheKey = prefix ? `p:${q}` : `x:${q}`;
    let perWord = cache.get(cacheKey);
    if (!perWord) cache.set(cacheKey, (perWord = new Map()));
    let best = 0;
    for (let i = 0; i < words.length; i++) {
      let quality = perWord.get(words[i]);
      if (quality === undefined) {
        quality = wordQuality(q, words[i], prefix, s);
        perWord.set(words[i], quality);
      }
      const v = quality * wordFactors[i];
      if (v > best) best = v;
    }
    return best;
  };
  let sum = 0;
  for (const g of groups) {
    let best = 0;
    for (let i = 0; i < g.alternatives.length; i++) {
      const alt = g.alternatives[i];
      // a multi-word synonym counts only as well as its weakest word
      let v = Infinity;
      for (const w of alt) v = Math.min(v, bestFor(w, i === 0 && g.prefix));
      v *= i === 0 ? 1 : SYNONYM_FACTOR;
      if (v > best) best = v;
    }
    sum += best;
  }
  return sum / groups.length;
}

export function combineTextScore(cov: number, engineScore: number, bestEngineScore: number): number {
  const rel = bestEngineScore > 0 ? engineScore / bestEngineScore : 0;
  const v = COVERAGE_SHARE * cov + (1 - COVERAGE_SHARE) * rel;
  return Math.min(1, Math.max(0, v));
}

/**
 * Stop words as a set per settings object (settings are replaced, never mutated): built once, not per query. Also
 * what search/service.ts `engineText` asks whether a query has a word the engines keep.
 */
const stopSets = new WeakMap<SearchSettings, { list: readonly string[]; set: Set<string> }>();
export function stopSet(s: SearchSettings): Set<string> {
  const hit = stopSets.get(s);
  if (hit !== undefined && hit.list === s.stopWords) return hit.set;
  const set = new Set(s.stopWords.map((w) => w.toLowerCase()));
  stopSets.set(s, { list: s.stopWords, set });
  return set;
}

/**
 * Query words after stop-word removal, each with its synonyms (one-way, as in Meilisearch: the word's own key, and
 * the keys of 2 to `maxKeyWords` consecutive query words that include it, addPhraseSynonyms). Only the last word may
 * match as a prefix (search-as-you-type; Meilisearch does the same).
 */
export function queryGroups(words: string[], s: SearchSettings, synonymsOf: (key: string) => string[][], maxKeyWords = 1): QueryGroup[] {
  const stop = stopSet(s);
  const kept = words.filter((w) => !stop.has(w));
  const groups = kept.map((word, i) => ({
    word,
    alternatives: [[word], ...synonymsOf(word).filter((alt) => alt.length > 0 && !(alt.length === 1 && alt[0] === word))],
    prefix: i === kept.length - 1,
  }));
  if (maxKeyWords > 1 && groups.length > 0) addPhraseSynonyms(words, stop, groups, synonymsOf, Math.min(maxKeyWords, MAX_SYNONYM_KEY_WORDS));
  return groups;
}

/**
 * Multi-word synonym keys ("tee shirt": ["tshirt"]), as Meilisearch matches them: a key is matched against 2 to 3
 * consecutive words of the query (stop words included, as typed, after tokenize), and each of its synonyms becomes
 * an alternative of every query word the key covers (stop words have no group). So a document with "tshirt" covers
 * both "tee" and "shirt" (each as a synonym, × 0.9); one with "tee shirt" still covers them better. Keys of more
 * than MAX_SYNONYM_KEY_WORDS words are refused by the settings PUT (Meilisearch never matches them either).
 */
function addPhraseSynonyms(words: string[], stop: Set<string>, groups: QueryGroup[], synonymsOf: (key: string) => string[][], maxWords: number): void {
  const groupOf: number[] = [];
  let g = 0;
  for (const w of words) groupOf.push(stop.has(w) ? -1 : g++);
  for (let n = 2; n <= maxWords; n++) {
    for (let i = 0; i + n <= words.length; i++) {
      const alts = synonymsOf(words.slice(i, i + n).join(" "));
      if (alts.length === 0) continue;
      for (let k = i; k < i + n; k++) {
        const group = groups[groupOf[k]!];
        if (group === undefined) continue;
        for (const alt of alts) {
          if (alt.length === 0 || group.alternatives.some((a) => a.length === alt.length && a.every((x, j) => x === alt[j]))) continue;
          group.alternatives.push(alt);
        }
      }
    }
  }
}
