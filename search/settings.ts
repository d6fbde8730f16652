/**
 * One schema for everything tunable in search. Engines read the text-matching part, ranking reads the weights.
 * Defaults follow the spec's ranking formula (text 0.55, trust 0.25, freshness 0.10, in stock 0.10).
 */
import { Type, type Static } from "@sinclair/typebox";
import { Value } from "@sinclair/typebox/value";
import { fail } from "../actors/runtime/errors.ts";

const Weight = Type.Number({ minimum: 0, maximum: 1 });
const FieldWeight = Type.Number({ exclusiveMinimum: 0, maximum: 100 });

export const SEARCHABLE_FIELDS = ["title", "brand", "category", "tags", "description"] as const;
export type SearchableField = (typeof SEARCHABLE_FIELDS)[number];

/** One-way, like Meilisearch: `{ sofa: ["couch"] }` makes "sofa" also find "couch". List both ways for mutual. */
const Synonyms = Type.Record(Type.String({ minLength: 1 }), Type.Array(Type.String({ minLength: 1 })));
/** Ignored in queries (and in dedupe keys). */
const StopWords = Type.Array(Type.String({ minLength: 1 }));
const TypoTolerance = Type.Object(
  {
    enabled: Type.Boolean(),
    /** Words at least this long may match with one typo. */
    minWordSizeForOneTypo: Type.Integer({ minimum: 1, maximum: 255 }),
    /** Words at least this long may match with two typos. */
    minWordSizeForTwoTypos: Type.Integer({ minimum: 1, maximum: 255 }),
  },
  { additionalProperties: false },
);
const FieldWeights = Type.Object(
  { title: FieldWeight, brand: FieldWeight, category: FieldWeight, tags: FieldWeight, description: FieldWeight },
  { additionalProperties: false },
);
const CandidateWindow = Type.Integer({ minimum: 1, maximum: 10_000 });
/**
 * Used as given, not normalised: a score is text×w.text + trust×w.trust + freshness×w.freshness + inStock×w.inStock,
 * so its maximum is the weights' sum (1 with the spec's defaults). Each weight is 0..1 and the sum must be above 0
 * (checked in assertSearchSettings: all zero made every score 0 and the ranking meaningless).
 */
const RankingWeights = Type.Object({ text: Weight, trust: Weight, freshness: Weight, inStock: Weight }, { additionalProperties: false });

export const SearchSettingsSchema = Type.Object(
  {
    synonyms: Synonyms,
    stopWords: StopWords,
    typoTolerance: TypoTolerance,
    /** Relative importance of searchable fields; the order title > brand > category > tags > description is the default. */
    fieldWeights: FieldWeights,
    /** Maximum candidates the engine returns to ranking. */
    candidateWindow: CandidateWindow,
    rankingWeights: RankingWeights,
    /** Fraction taken off the final score of a product from a deprioritized store (0.2 → score × 0.8). */
    deprioritizedPenalty: Weight,
  },
  { additionalProperties: false },
);

/**
 * What PUT /api/v1/admin/search/settings accepts: every key optional, nested objects partial, and no key the
 * settings do not have, at any level (a misspelt key was a silent 200 before; a nested one was stored for good,
 * since the stored patch is merged key by key and nothing can remove a key: audit U MED-4).
 */
export const SearchSettingsPatchSchema = Type.Object(
  {
    synonyms: Type.Optional(Synonyms),
    stopWords: Type.Optional(StopWords),
    typoTolerance: Type.Optional(Type.Partial(TypoTolerance, { additionalProperties: false })),
    fieldWeights: Type.Optional(Type.Partial(FieldWeights, { additionalProperties: false })),
    candidateWindow: Type.Optional(CandidateWindow),
    rankingWeights: Type.Optional(Type.Partial(RankingWeights, { additionalProperties: false })),
    deprioritizedPenalty: Type.Optional(Weight),
  },
  { additionalProperties: false, description: "A partial SearchSettings: unknown keys, at any level, are refused (docs/search.md)." },
);

export type SearchSettings = Static<typeof SearchSettingsSchema>;

export const DEFAULT_STOP_WORDS: readonly string[] = [
  "a", "an", "and", "are", "as", "at", "be", "by", "for", "from", "in", "is", "it", "of", "on", "or", "the",
  "to", "with",
];

export const DEFAULT_SEARCH_SETTINGS: SearchSettings = Object.freeze({
  synonyms: {},
  stopWords: [...DEFAULT_STOP_WORDS],
  typoTolerance: { enabled: true, minWordSizeForOneTypo: 5, minWordSizeForTwoTypos: 9 },
  fieldWeights: { title: 5, brand: 4, category: 3, tags: 2, description: 1 },
  candidateWindow: 1000,
  rankingWeights: { text: 0.55, trust: 0.25, freshness: 0.1, inStock: 0.1 },
  deprioritizedPenalty: 0.2,
}) as SearchSettings;

export interface SearchSettingsPatch {
  synonyms?: Record<string, string[]>;
  stopWords?: string[];
  typoTolerance?: Partial<SearchSettings["typoTolerance"]>;
  fieldWeights?: Partial<SearchSettings["fieldWeights"]>;
  candidateWindow?: number;
  rankingWeights?: Partial<SearchSettings["rankingWeights"]>;
  deprioritizedPenalty?: number;
}

/** Defaults overlaid with a patch, validated; an invalid result throws `validation_error` with the schema errors. */
export function resolveSearchSettings(patch: SearchSettingsPatch = {}, base: SearchSettings = DEFAULT_SEARCH_SETTINGS): SearchSettings {
  const merged: SearchSettings = {
    synonyms: { ...(patch.synonyms ?? base.synonyms) },
    stopWords: [...(patch.stopWords ?? base.stopWords)],
    typoTolerance: { ...base.typoTolerance, ...patch.typoTolerance },
    fieldWeights: { ...base.fieldWeights, ...patch.fieldWeights },
    candidateWindow: patch.candidateWindow ?? base.candidateWindow,
    rankingWeights: { ...base.rankingWeights, ...patch.rankingWeights },
    deprioritizedPenalty: patch.deprioritizedPenalty ?? base.deprioritizedPenalty,
  };
  assertSearchSettings(merged);
  return merged;
}

export function assertSearchSettings(s: unknown): asserts s is SearchSettings {
  if (!Value.Check(SearchSettingsSchema, s)) {
    const errors = [...Value.Errors(SearchSettingsSchema, s)].slice(0, 10).map((e) => ({ path: e.path, message: e.message }));
    // Named like every other 400 (`details.field`, dotted: typoTolerance.minWordSizeForOneTypo; audit W-3).
    const field = errors[0] ? errors[0].path.replace(/^\//, "").replace(/\//g, ".") : "";
    throw fail("validation_error", `invalid search settings${field ? `: ${field} ${errors[0]!.message}` : ""}`, { ...(field ? { field } : {}), errors });
  }
  const t = s.typoTolerance;
  if (t.minWordSizeForTwoTypos < t.minWordSizeForOneTypo) {
    // The field named is the one that, with the stored or patched other, breaks the order (audit W-3: details was {}).
    throw fail("validation_error", `minWordSizeForTwoTypos (${t.minWordSizeForTwoTypos}) must be >= minWordSizeForOneTypo (${t.minWordSizeForOneTypo})`, {
      field: "typoTolerance.minWordSizeForTwoTypos",
      minWordSizeForOneTypo: t.minWordSizeForOneTypo,
      minWordSizeForTwoTypos: t.minWordSizeForTwoTypos,
    });
  }
  const w = s.rankingWeights;
  if (!(w.text + w.trust + w.freshness + w.inStock > 0)) {
    throw fail("validation_error", "rankingWeights must not all be 0 (every score would be 0)", { field: "rankingWeights", rankingWeights: w });
  }
}

/**
 * A stored patch with every key the patch schema does not know removed. Patches stored before the schema was
 * strict can hold such keys; they never had an effect, and keeping them would make every later merge invalid.
 */
export function cleanStoredPatch(raw: unknown): SearchSettingsPatch {
  if (raw === null || typeof raw !== "object" || Array.isArray(raw)) return {};
  return Value.Clean(SearchSettingsPatchSchema, structuredClone(raw)) as SearchSettingsPatch;
}

/** Searchable fields from most to least important (Meilisearch's searchableAttributes order). */
export function fieldsByWeight(s: SearchSettings): SearchableField[] {
  return [...SEARCHABLE_FIELDS].sort((a, b) => s.fieldWeights[b] - s.fieldWeights[a]);
}

/**
 * The checks a new `synonyms` map passes before it is stored (PUT /api/v1/admin/search/settings, both engines): every
 * key has 1 to MAX_SYNONYM_KEY_WORDS words once tokenized. A key of more words is never matched (Meilisearch looks
 * synonyms up for 1- to 3-word terms only; the embedded engine does the same), one without a word ("!!!") never
 * either: both were stored and silently ignored (audit A, session 16). Not part of assertSearchSettings, so a patch
 * stored before keeps loading (its long keys stay unmatched) instead of dropping every setting to the defaults.
 */
export function assertSynonymKeys(synonyms: Record<string, string[]> | undefined, maxWords: number, words: (text: string) => string[]): void {
  if (synonyms === undefined) return;
  for (const key of Object.keys(synonyms)) {
    const n = words(key).length;
    if (n === 0 || n > maxWords) {
      throw fail(
        "validation_error",
        n === 0
          ? `synonyms key ${JSON.stringify(key.slice(0, 100))} has no word: it could never match a query`
          : `synonyms key ${JSON.stringify(key.slice(0, 100))} has ${n} words: keys of at most ${maxWords} words are matched (Meilisearch ignores longer ones); split it or use a shorter key`,
        { location: "body", field: "synonyms", key: key.slice(0, 100), words: n, maxWords },
      );
    }
  }
}

/** How many typos a query word of this length may carry under the settings. */
export function allowedTypos(word: string, s: SearchSettings): 0 | 1 | 2 {
  const t = s.typoTolerance;
  if (!t.enabled) return 0;
  const n = [...word].length;
  if (n >= t.minWordSizeForTwoTypos) return 2;
  if (n >= t.minWordSizeForOneTypo) return 1;
  return 0;
}
