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

export const SearchSettingsSchema = Type.Object(
  {
    /** One-way, like Meilisearch: `{ sofa: ["couch"] }` makes "sofa" also find "couch". List both ways for mutual. */
    synonyms: Type.Record(Type.String({ minLength: 1 }), Type.Array(Type.String({ minLength: 1 }))),
    /** Ignored in queries (and in dedupe keys). */
    stopWords: Type.Array(Type.String({ minLength: 1 })),
    typoTolerance: Type.Object({
      enabled: Type.Boolean(),
      /** Words at least this long may match with one typo. */
      minWordSizeForOneTypo: Type.Integer({ minimum: 1, maximum: 255 }),
      /** Words at least this long may match with two typos. */
      minWordSizeForTwoTypos: Type.Integer({ minimum: 1, maximum: 255 }),
    }),
    /** Relative importance of searchable fields; the order title > brand > category > tags > description is the default. */
    fieldWeights: Type.Object({
      title: FieldWeight,
      brand: FieldWeight,
      category: FieldWeight,
      tags: FieldWeight,
      description: FieldWeight,
    }),
    /** Maximum candidates the engine returns to ranking. */
    candidateWindow: Type.Integer({ minimum: 1, maximum: 10_000 }),
    rankingWeights: Type.Object({ text: Weight, trust: Weight, freshness: Weight, inStock: Weight }),
    /** Fraction taken off the final score of a product from a deprioritized store (0.2 → score × 0.8). */
    deprioritizedPenalty: Weight,
  },
  { additionalProperties: false },
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
    throw fail("validation_error", "invalid search settings", { errors });
  }
  const t = s.typoTolerance;
  if (t.minWordSizeForTwoTypos < t.minWordSizeForOneTypo) {
    throw fail("validation_error", "minWordSizeForTwoTypos must be >= minWordSizeForOneTypo", {});
  }
}

/** Searchable fields from most to least important (Meilisearch's searchableAttributes order). */
export function fieldsByWeight(s: SearchSettings): SearchableField[] {
  return [...SEARCHABLE_FIELDS].sort((a, b) => s.fieldWeights[b] - s.fieldWeights[a]);
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
