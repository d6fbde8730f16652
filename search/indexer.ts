/**
 * The indexer: keeps a gateway's SearchService in step with the catalog and trust data.
 *
 * - Boot: load every store and active product (SearchService.loadAll).
 * - Live: `catalog.changed` {storeSlug, upserted, removed} re-reads those products and the store row (its
 *   last_sync_at); its `held` ids (units held or given back by checkouts) have only their buyable stock re-read
 *   and applied as a stock-only engine update; `trust.score` updates the
 *   store snapshot in place; `store.changed` re-reads the store row.
 * - Durable: events are best-effort (a node that was down or disconnected misses them), so a catch-up re-reads
 *   products changed by transactions at or past its horizon (a transaction id, so a write that commits late is
 *   still read; only the rows whose change_xid moved since they were applied: SearchService.catchUp), the stock
 *   of products holding units (or that held some when last read: a hold or release is not a catalog change),
 *   every store row and the settings version, every
 *   CATCH_UP_INTERVAL_MS and right after boot. An update made while a node was down is applied when it returns
 *   (at boot) or within one interval (after a network split). Documented in docs/decisions.md.
 */
import type { BootHook } from "../infra/boot-hooks.ts";
import type { Sql } from "../infra/db.ts";
import { log } from "../infra/log.ts";
import { CATALOG_CHANGED, STORE_CHANGED, type CatalogChangedEvent } from "../actors/store/messages.ts";
import type { Transport } from "../actors/transport/transport.ts";
import { createEmbeddedEngine } from "./embedded.ts";
import type { SearchEngine } from "./engine.ts";
import { SearchService, setSearchService, type TrustScoreEvent } from "./service.ts";

export const TRUST_SCORE_TOPIC = "trust.score";
export const CATCH_UP_INTERVAL_MS = 30_000;

/**
 * Serializes index mutations (events, catch-ups, the operator's full rebuild) so they never interleave inside the
 * engine or the service's snapshots.
 */
export class Indexer {
  private chain: Promise<void> = Promise.resolve();
  private unsubs: (() => void)[] = [];
  private timer: ReturnType<typeof setInterval> | null = null;
  applied = 0;

  constructor(
    readonly service: SearchService,
    private readonly sql: Sql,
  ) {
    service.serializeWith((what, fn) => this.run(what, fn));
  }

  private enqueue(what: string, fn: () => Promise<unknown>): Promise<void> {
    this.run(what, fn).catch(() => {}); // logged by run
    return this.chain;
  }

  /** Runs `fn` in the queue, after everything queued before it, and answers its result or error to the caller too. */
  run<T>(what: string, fn: () => Promise<T>): Promise<T> {
    const result = this.chain.then(fn);
    this.chain = result.then(
      () => {
        this.applied++;
      },
      (err) => log.warn("search indexer step failed", { what, error: err as Error }),
    );
    return result;
  }

  onCatalogChanged(ev: CatalogChangedEvent): Promise<void> {
    // The store row too: a catalog write moves its last_sync_at, which search shows (MerchantSummary.lastSyncAt)
    // and ranks by (freshness tier). Without it search lagged the merchant profile until the catch-up, up to 30 s
    // (audit A2 LOW-4). One primary-key read per event.
    return this.enqueue(CATALOG_CHANGED, async () => {
      const changed = [...ev.upserted, ...ev.removed];
      // Held units only (a checkout's hold or release): a stock read of those products, no re-index, and no store
      // re-read (a hold does not move the store's last_sync_at).
      if (ev.held?.length) await this.service.refreshHeldStock(this.sql, ev.held);
      if (changed.length === 0) return;
      await this.service.refreshProducts(this.sql, changed);
      await this.service.refreshStore(this.sql, ev.storeSlug);
    });
  }

  onTrustScore(ev: TrustScoreEvent): Promise<void> {
    return this.enqueue(TRUST_SCORE_TOPIC, async () => this.service.applyTrustScore(ev));
  }

  onStoreChanged(ev: { storeSlug: string }): Promise<void> {
    return this.enqueue(STORE_CHANGED, () => this.service.refreshStore(this.sql, ev.storeSlug));
  }

  catchUp(): Promise<void> {
    return this.enqueue("catch-up", () => this.service.catchUp(this.sql));
  }

  /** Resolves when everything queued so far has been applied (tests, benchmarks). */
  idle(): Promise<void> {
    return this.chain;
  }

  attach(transport: Transport, intervalMs = CATCH_UP_INTERVAL_MS): void {
    this.unsubs.push(
      transport.subscribe(CATALOG_CHANGED, (e) => void this.onCatalogChanged(e as CatalogChangedEvent)),
      transport.subscribe(TRUST_SCORE_TOPIC, (e) => void this.onTrustScore(e as TrustScoreEvent)),
      transport.subscribe(STORE_CHANGED, (e) => void this.onStoreChanged(e as { storeSlug: string })),
    );
    if (intervalMs > 0) {
      this.timer = setInterval(() => void this.catchUp(), intervalMs);
      (this.timer as { unref?: () => void }).unref?.();
    }
  }

  async detach(): Promise<void> {
    for (const u of this.unsubs.splice(0)) u();
    if (this.timer) clearInterval(this.timer);
    this.timer = null;
    await this.chain;
  }
}

export const INDEXER_KEY = "searchIndexer";

export function getIndexer(svc: { extras: Map<string, unknown> }): Indexer | undefined {
  return svc.extras.get(INDEXER_KEY) as Indexer | undefined;
}

async function makeEngine(config: { MEILISEARCH_URL: string; MEILISEARCH_KEY: string }): Promise<SearchEngine> {
  if (config.MEILISEARCH_URL) {
    const { createMeilisearchEngine } = await import("./meilisearch.ts");
    return createMeilisearchEngine({ url: config.MEILISEARCH_URL, apiKey: config.MEILISEARCH_KEY || undefined });
  }
  return createEmbeddedEngine();
}

/** Start-up: build the engine, load the catalog, follow events, catch up periodically. Gateways only. */
export const searchBootHook: BootHook = {
  name: "search",
  roles: ["start", "gateway"],
  async run({ services, transport }) {
    const engine = await makeEngine(services.config);
    const service = new SearchService(engine);
    const indexer = new Indexer(service, services.sql);
    // Subscribe before loading so nothing published during the load is lost (a re-read is idempotent); the load runs
    // in the queue, so those events are applied after it instead of interleaving with its pages.
    indexer.attach(transport);
    const loaded = await indexer.run("load", () => service.loadAll(services.sql));
    log.info("search index loaded", { engine: engine.name, ...loaded });
    // anything that changed while the pages were read is re-read once
    void indexer.catchUp();
    setSearchService(services, service);
    services.extras.set(INDEXER_KEY, indexer);
    services.readiness.search = () => true;
    return () => indexer.detach();
  },
};
