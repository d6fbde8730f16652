/**
 * Meilisearch adapter (official client). Settings map onto index settings; filters become Meilisearch filter
 * expressions so the server applies them before ranking; `_rankingScore` (showRankingScore) is the textScore:
 * Meilisearch computes it from its ranking rules (words matched, typos, proximity, attribute, exactness), so it
 * is already an absolute 0..1 figure and not rescaled to the best hit.
 *
 * No Meilisearch server runs on the development machines: `createMeilisearchEngine` checks health first and
 * fails fast with `service_unavailable` naming the URL.
 */
import { Meilisearch, type Settings } from "meilisearch";
import { ActorError, fail } from "../actors/runtime/errors.ts";
import { categoryKey, clamp01, isWildcardText, type Candidate, type EngineQuery, type SearchDoc, type SearchEngine, type StockUpdate } from "./engine.ts";
import { validateSearchDoc } from "./embedded.ts";
import { assertSearchSettings, DEFAULT_SEARCH_SETTINGS, fieldsByWeight, type SearchSettings } from "./settings.ts";

export interface MeilisearchEngineOptions {
  url: string;
  apiKey?: string;
  /** Index uid; default "products". */
  indexUid?: string;
  settings?: SearchSettings;
  /** Per HTTP request; default 2000 ms (the health check is what makes start-up fail fast). */
  requestTimeoutMs?: number;
  /** How long to wait for an indexing task; default 30 s. */
  taskTimeoutMs?: number;
}

interface MeiliRow {
  id: string;
  storeSlug: string;
  title: string;
  description: string;
  category: string | null;
  categoryKey: string | null;
  brand: string | null;
  tags: string[];
  priceMinor: number;
  /** SearchDoc.prices, or [priceMinor]: what the price filter reads. */
  pricesMinor: number[];
  currency: string;
  inStock: boolean;
  createdAt: string;
  /** Epoch ms: Meilisearch sorts numbers, not date strings. */
  createdAtMs: number;
  updatedAt: string;
}

export const FILTERABLE_ATTRIBUTES = ["storeSlug", "categoryKey", "inStock", "priceMinor", "pricesMinor", "currency"] as const;
export const SORTABLE_ATTRIBUTES = ["priceMinor", "createdAtMs"] as const;

/** A Meilisearch string literal. */
export function meiliString(s: string): string {
  return `"${s.replace(/\\/g, "\\\\").replace(/"/g, '\\"')}"`;
}

/** The engine filters as Meilisearch filter expressions (AND-ed array); empty when nothing is filtered. */
export function toMeilisearchFilter(q: Omit<EngineQuery, "text" | "window">): string[] {
  const out: string[] = [];
  if (q.storeSlugs !== undefined) out.push(`storeSlug IN [${q.storeSlugs.map(meiliString).join(", ")}]`);
  if (q.inStock !== undefined) out.push(`inStock = ${q.inStock ? "true" : "false"}`);
  // On `pricesMinor`, every price the cart can charge (SearchDoc.prices): one range condition, so one of them must
  // be inside it; `>= lo AND <= hi` would let one price satisfy the lower bound and another the upper.
  const lo = q.minPriceMinor === undefined ? undefined : Math.trunc(q.minPriceMinor);
  const hi = q.maxPriceMinor === undefined ? undefined : Math.trunc(q.maxPriceMinor);
  if (lo !== undefined && hi !== undefined) out.push(`pricesMinor ${lo} TO ${hi}`);
  else if (lo !== undefined) out.push(`pricesMinor >= ${lo}`);
  else if (hi !== undefined) out.push(`pricesMinor <= ${hi}`);
  if (q.category !== undefined) {
    const key = categoryKey(q.category);
    out.push(key === null ? "categoryKey IS NULL" : `categoryKey = ${meiliString(key)}`);
  }
  return out;
}

/** Index settings derived from SearchSettings. Meilisearch ranks attributes by order only, not by weight. */
export function toMeilisearchSettings(s: SearchSettings): Settings {
  const synonyms: Record<string, string[]> = {};
  for (const [k, v] of Object.entries(s.synonyms)) synonyms[k.toLowerCase()] = v.map((x) => x.toLowerCase());
  return {
    searchableAttributes: fieldsByWeight(s),
    filterableAttributes: [...FILTERABLE_ATTRIBUTES],
    sortableAttributes: [...SORTABLE_ATTRIBUTES],
    synonyms,
    stopWords: s.stopWords.map((w) => w.toLowerCase()),
    typoTolerance: {
      enabled: s.typoTolerance.enabled,
      minWordSizeForTypos: { oneTypo: s.typoTolerance.minWordSizeForOneTypo, twoTypos: s.typoTolerance.minWordSizeForTwoTypos },
    },
    pagination: { maxTotalHits: Math.max(1000, s.candidateWindow) },
  };
}

function toRow(d: SearchDoc): MeiliRow {
  return {
    id: d.id,
    storeSlug: d.storeSlug,
    title: d.title,
    description: d.description,
    category: d.category,
    categoryKey: categoryKey(d.category),
    brand: d.brand,
    tags: [...d.tags],
    priceMinor: d.priceMinor,
    pricesMinor: d.prices !== undefined ? [...d.prices] : [d.priceMinor],
    currency: d.currency,
    inStock: d.inStock,
    createdAt: d.createdAt,
    createdAtMs: Date.parse(d.createdAt) || 0,
    updatedAt: d.updatedAt,
  };
}

export class MeilisearchSearchEngine implements SearchEngine {
  readonly name = "meilisearch";
  private readonly client: Meilisearch;
  private readonly indexUid: string;
  private readonly url: string;
  private readonly taskTimeoutMs: number;

  constructor(opts: MeilisearchEngineOptions) {
    this.url = opts.url;
    this.indexUid = opts.indexUid ?? "products";
    this.taskTimeoutMs = opts.taskTimeoutMs ?? 30_000;
    this.client = new Meilisearch({ host: opts.url, apiKey: opts.apiKey, timeout: opts.requestTimeoutMs ?? 2000 });
  }

  /** Throws `service_unavailable` quickly when the server cannot be reached or is not healthy. */
  async ping(): Promise<void> {
    await this.call("health check", async () => {
      const h = await this.client.health();
      if (h.status !== "available") throw new Error(`status ${h.status}`);
    });
  }

  async upsert(docs: SearchDoc[]): Promise<void> {
    if (docs.length === 0) return;
    for (const d of docs) validateSearchDoc(d);
    // last write wins inside one batch, like the embedded engine
    const rows = [...new Map(docs.map((d) => [d.id, toRow(d)])).values()];
    await this.task("upsert", () => this.index().addDocuments(rows, { primaryKey: "id" }));
  }

  async remove(ids: string[]): Promise<void> {
    if (ids.length === 0) return;
    await this.task("remove", () => this.index().deleteDocuments(ids));
  }

  async setStock(updates: readonly StockUpdate[]): Promise<void> {
    if (updates.length === 0) return;
    // a partial update (documents keep their other fields); last write wins inside one batch, as in upsert
    const rows = [...new Map(updates.map((u) => [u.id, { id: u.id, inStock: u.inStock }])).values()];
    await this.task("stock", () => this.index().updateDocuments(rows, { primaryKey: "id" }));
  }

  async applySettings(s: SearchSettings): Promise<void> {
    assertSearchSettings(s);
    await this.task("settings", () => this.index().updateSettings(toMeilisearchSettings(s)));
  }

  async count(): Promise<number> {
    return this.call("count", async () => {
      try {
        return (await this.index().getStats()).numberOfDocuments;
      } catch (e) {
        if (isIndexNotFound(e)) return 0;
        throw e;
      }
    });
  }

  async clear(): Promise<void> {
    await this.task("clear", () => this.index().deleteAllDocuments());
  }

  async query(q: EngineQuery): Promise<Candidate[]> {
    const window = Math.max(0, Math.floor(q.window));
    if (window === 0 || (q.storeSlugs !== undefined && q.storeSlugs.length === 0)) return [];
    const wildcard = isWildcardText(q.text);
    const filter = toMeilisearchFilter(q);
    const res = await this.call("search", () =>
      this.index().search(wildcard ? "" : q.text, {
        filter: filter.length > 0 ? filter : undefined,
        limit: window,
        attributesToRetrieve: ["id"],
        showRankingScore: true,
        matchingStrategy: "last",
        ...(wildcard ? { sort: ["createdAtMs:desc"] } : {}),
      }),
    );
    return res.hits.map((h) => ({ id: String(h.id), textScore: wildcard ? 0 : clamp01(h._rankingScore ?? 0) }));
  }

  private index() {
    return this.client.index<MeiliRow>(this.indexUid);
  }

  private async task(what: string, enqueue: () => { waitTask: (o?: { timeout?: number }) => Promise<{ status: string; error?: { message: string } | null }> }): Promise<void> {
    const task = await this.call(what, () => enqueue().waitTask({ timeout: this.taskTimeoutMs }));
    if (task.status !== "succeeded") {
      throw fail("internal_error", `Meilisearch ${what} task ${task.status}: ${task.error?.message ?? "no detail"}`, { index: this.indexUid });
    }
  }

  private async call<T>(what: string, f: () => Promise<T>): Promise<T> {
    try {
      return await f();
    } catch (e) {
      if (e instanceof ActorError) throw e;
      const name = e instanceof Error ? e.name : "";
      const msg = e instanceof Error ? e.message : String(e);
      if (name === "MeilisearchApiError") {
        throw fail("internal_error", `Meilisearch ${what} failed: ${msg}`, { url: this.url, index: this.indexUid });
      }
      throw fail("service_unavailable", `Meilisearch unreachable at ${this.url} (${what}): ${msg}`, { url: this.url });
    }
  }
}

function isIndexNotFound(e: unknown): boolean {
  const cause = (e as { cause?: { code?: string } } | null)?.cause;
  return cause?.code === "index_not_found";
}

/** Connects (health check, fails fast), applies settings, and returns the engine. */
export async function createMeilisearchEngine(opts: MeilisearchEngineOptions): Promise<SearchEngine> {
  const engine = new MeilisearchSearchEngine(opts);
  await engine.ping();
  await engine.applySettings(opts.settings ?? DEFAULT_SEARCH_SETTINGS);
  return engine;
}
