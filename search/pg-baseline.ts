/**
 * A third SearchEngine: Postgres full-text search (tsvector + ts_rank) straight over the `products` table. It is
 * the baseline bench/search.ts measures the embedded engine against, with the same filters pushed down and the
 * same ranking formula applied afterwards (search/ranking.ts); it can be swapped into a SearchService like the
 * other two.
 *
 * The table is the index: upsert/remove/clear are no-ops (the store actor already wrote the rows), and
 * `ensureIndex` creates the weighted GIN expression index once. Text: title A, brand B, category C, description D,
 * 'simple' configuration (no stemming, like the embedded engine); the last query word matches as a prefix, words
 * are OR-ed (like MiniSearch's OR query) and `textScore` = ts_rank / best ts_rank in the window (relative, so not
 * as absolute as the embedded engine's coverage score).
 */
import { withoutDeadline, type Sql } from "../infra/db.ts";
import { categoryKey, isWildcardText, tokenize, type Candidate, type EngineQuery, type SearchDoc, type SearchEngine, type StockUpdate } from "./engine.ts";
import { DEFAULT_SEARCH_SETTINGS, DEFAULT_STOP_WORDS, type SearchSettings } from "./settings.ts";

const VECTOR = `(setweight(to_tsvector('simple'::regconfig, title), 'A') ||
  setweight(to_tsvector('simple'::regconfig, coalesce(brand, '')), 'B') ||
  setweight(to_tsvector('simple'::regconfig, coalesce(category, '')), 'C') ||
  setweight(to_tsvector('simple'::regconfig, description), 'D'))`;

const CATEGORY_KEY = `trim(regexp_replace(lower(coalesce(category, '')), '[^a-z0-9]+', ' ', 'g'))`;

export class PgBaselineEngine implements SearchEngine {
  readonly name = "postgres-fts";
  private settings: SearchSettings = DEFAULT_SEARCH_SETTINGS;

  constructor(private readonly sql: Sql) {}

  /** Creates the GIN expression index the queries use (idempotent; minutes on a large table, so run it once). */
  async ensureIndex(): Promise<void> {
    // a build, not a request: it may take longer than the pool's per-query deadline (50 s at 1M products)
    await withoutDeadline(this.sql).unsafe(`CREATE INDEX IF NOT EXISTS products_fts_baseline ON products USING gin (${VECTOR}) WHERE active`);
  }

  async upsert(_docs: SearchDoc[]): Promise<void> {}
  async remove(_ids: string[]): Promise<void> {}
  async setStock(_updates: readonly StockUpdate[]): Promise<void> {}
  async clear(): Promise<void> {}

  async applySettings(s: SearchSettings): Promise<void> {
    this.settings = s;
  }

  async count(): Promise<number> {
    const [r] = await this.sql<{ n: number }[]>`SELECT count(*)::int AS n FROM products WHERE active`;
    return r?.n ?? 0;
  }

  /** `wireless head` → `wireless | head:*` over words that are not stop words (tsquery syntax stripped by tokenize). */
  tsQuery(text: string): string | null {
    const stop = new Set([...DEFAULT_STOP_WORDS, ...this.settings.stopWords]);
    const words = tokenize(text).filter((w) => !stop.has(w));
    if (words.length === 0) return null;
    return words.map((w, i) => (i === words.length - 1 ? `${w}:*` : w)).join(" | ");
  }

  async query(q: EngineQuery): Promise<Candidate[]> {
    const window = Math.max(0, Math.floor(q.window));
    if (window === 0 || (q.storeSlugs !== undefined && q.storeSlugs.length === 0)) return [];
    const where: string[] = ["active"];
    const params: unknown[] = [];
    const p = (v: unknown) => {
      params.push(v);
      return `$${params.length}`;
    };
    if (q.storeSlugs) where.push(`store_slug = ANY(${p(q.storeSlugs)}::text[])`);
    if (q.inStock !== undefined) where.push(`in_stock = ${p(q.inStock)}`);
    if (q.minPriceMinor !== undefined) where.push(`price_minor >= ${p(q.minPriceMinor)}`);
    if (q.maxPriceMinor !== undefined) where.push(`price_minor <= ${p(q.maxPriceMinor)}`);
    if (q.category !== undefined) where.push(`${CATEGORY_KEY} = ${p(categoryKey(q.category) ?? "")}`);
    if (isWildcardText(q.text)) {
      const rows = await this.sql.unsafe<{ id: string }[]>(`SELECT id FROM products WHERE ${where.join(" AND ")} ORDER BY id LIMIT ${window}`, params as never[]);
      return rows.map((r) => ({ id: r.id, textScore: 0 }));
    }
    const tsq = this.tsQuery(q.text);
    if (!tsq) return [];
    const qp = p(tsq);
    const rows = await this.sql.unsafe<{ id: string; rank: number }[]>(
      `SELECT id, ts_rank('{0.1, 0.2, 0.4, 1.0}', ${VECTOR}, to_tsquery('simple', ${qp})) AS rank
       FROM products WHERE ${where.join(" AND ")} AND ${VECTOR} @@ to_tsquery('simple', ${qp})
       ORDER BY rank DESC, id LIMIT ${window}`,
      params as never[],
    );
    const best = rows[0]?.rank ?? 0;
    return rows.map((r) => ({ id: r.id, textScore: best > 0 ? Math.min(1, Number(r.rank) / best) : 0 }));
  }
}
