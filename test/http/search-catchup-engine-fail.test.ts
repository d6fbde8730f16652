/**
 * Review RZ-1: the search service recorded each row's change_xid as applied before the engine write, so a write the
 * engine failed (a Meilisearch timeout or restart) looked applied: the next catch-up scanned the row, found the same
 * change_xid and skipped it, and the engine kept the old document until the row changed again. A failed catch-up
 * pass, a failed `catalog.changed` apply and a failed reindex page all left the product stale. Rows are now recorded
 * only once the engine took them; a reindex builds beside the live index (audit Q-2), so one that fails part-way is
 * dropped and the live index keeps its horizon (a first load that fails leaves none: the next pass reads every row).
 * A held-stock update (`inStock` only) the engine failed had the same effect: the snapshot kept the new flag, so the
 * catch-up's stock re-read found nothing to send; the snapshot now takes back its old record.
 *
 * The engine is the one dependency made to fail: the server's own engine, its upsert throwing once (what the
 * Meilisearch client throws on its 2 s request timeout). Writes are plain SQL, so no event repairs them.
 */
import { afterAll, beforeAll, expect, test } from "bun:test";
import { heldStockChanged } from "../../actors/store/messages.ts";
import type { SearchEngine } from "../../search/engine.ts";
import { getIndexer } from "../../search/indexer.ts";
import { getSearchService } from "../../search/service.ts";
import { ALL_SCOPES, createKey, type TestKey } from "../helpers/agents.ts";
import { startServer, type TestServer } from "../helpers/server.ts";

let srv: TestServer;
let key: TestKey;

beforeAll(async () => {
  srv = await startServer({ seed: true, config: { RATE_LIMITS_ENABLED: false } });
  key = await createKey(srv, { scopes: ALL_SCOPES, tier: "ENTERPRISE" });
  // no periodic pass (nor event) of the service's own: every pass here is the test's
  await getIndexer(srv.running.services)!.detach();
}, 60_000);
afterAll(async () => {
  await srv?.stop();
});

const service = () => getSearchService(srv.running.services);
const indexer = () => getIndexer(srv.running.services)!;
/** One catch-up pass in the indexer's queue, with what it scanned and read. */
const pass = () => indexer().run("test catch-up", () => service().catchUp(srv.db.sql));

/** Makes the engine's next call of `method` throw, as Meilisearch does when a request times out; later ones go through. */
function failNext(method: "upsert" | "setStock"): void {
  const engine = service().engine as { -readonly [K in keyof SearchEngine]: SearchEngine[K] };
  const real = engine[method];
  engine[method] = async () => {
    engine[method] = real as never;
    throw new Error("engine unavailable (simulated Meilisearch timeout)");
  };
}
const failNextUpsert = () => failNext("upsert");

async function searchIds(query: string): Promise<string[]> {
  const r = await srv.json("/api/v1/agent/search", { method: "POST", headers: key.headers, body: { query, filters: { inStock: false } } });
  expect(r.status).toBe(200);
  expect(r.body.success).toBe(true);
  return (r.body.data.products as { id: string }[]).map((p) => p.id);
}

/** The demo store's active product at `offset` in id order, renamed by SQL to `title`. */
async function rename(offset: number, title: string): Promise<string> {
  const [p] = await srv.db.sql<{ id: string }[]>`
    SELECT id FROM products WHERE active AND store_slug = 'demo-store' ORDER BY id OFFSET ${offset} LIMIT 1`;
  await srv.db.sql`UPDATE products SET title = ${title} WHERE id = ${p!.id}`;
  return p!.id;
}

test("a catch-up pass whose engine write failed is repaired by the next pass", async () => {
  await pass();
  const id = await rename(0, "Zyxwvutsrq Gadget");
  failNextUpsert();
  const failed = await pass().then(
    () => "applied",
    (e: Error) => e.message,
  );
  expect(failed).toBe("engine unavailable (simulated Meilisearch timeout)");
  expect(await searchIds("Zyxwvutsrq")).toEqual([]);

  // the failed pass kept its horizon and did not record the row: the next pass reads and indexes it (what it scans
  // depends on other sessions of the Postgres server holding the horizon back; what it reads does not)
  expect((await pass()).products).toBe(1);
  expect(await searchIds("Zyxwvutsrq")).toEqual([id]);
}, 60_000);

test("a catalog.changed event whose engine write failed is repaired by the next catch-up", async () => {
  await pass();
  const id = await rename(3, "Qqplorkington Lamp");
  failNextUpsert();
  await indexer().onCatalogChanged({ storeSlug: "demo-store", upserted: [id], removed: [] });
  expect(await searchIds("Qqplorkington")).toEqual([]);

  expect((await pass()).products).toBe(1);
  expect(await searchIds("Qqplorkington")).toEqual([id]);
}, 60_000);

test("a reindex whose build's engine write failed part-way leaves the live index serving, and the next catch-up applies what changed", async () => {
  await pass();
  const kept = await searchIds("Zyxwvutsrq");
  expect(kept.length).toBe(1);
  const id = await rename(5, "Vexillographic Kettle");
  // the build is made in a new engine beside the live one (audit Q-2): that engine's first upsert fails
  const live = service().engine as { -readonly [K in keyof SearchEngine]: SearchEngine[K] };
  const fresh = live.fresh!;
  live.fresh = (settings) => {
    live.fresh = fresh;
    const built = fresh.call(live, settings) as { -readonly [K in keyof SearchEngine]: SearchEngine[K] };
    built.upsert = async () => {
      throw new Error("engine unavailable (simulated Meilisearch timeout)");
    };
    return built;
  };
  const failed = await service().reindex(srv.db.sql).then(
    () => "applied",
    (e: Error) => e.message,
  );
  expect(failed).toBe("engine unavailable (simulated Meilisearch timeout)");
  // the failed build was dropped: the live index still answers as before it, and the SQL rename is not in it yet
  expect(service().engine).toBe(live);
  expect(await searchIds("Zyxwvutsrq")).toEqual(kept);
  expect(await searchIds("Vexillographic")).toEqual([]);

  // the live index kept its horizon: the next pass reads the one row changed since
  const [{ active }] = await srv.db.sql<{ active: number }[]>`SELECT count(*)::int AS active FROM products WHERE active`;
  expect((await pass()).products).toBe(1);
  expect(service().products.size).toBe(active);
  expect(await searchIds("Vexillographic")).toEqual([id]);
}, 60_000);

test("a held-stock update the engine failed is sent again by the next catch-up", async () => {
  const [p] = await srv.db.sql<{ id: string; title: string }[]>`
    SELECT id, title FROM products WHERE store_slug = 'demo-store' AND active AND in_stock
      AND jsonb_array_length(variants) = 0 AND stock_quantity BETWEEN 2 AND 40 AND reserved_quantity = 0
    ORDER BY id LIMIT 1`;
  const inStockIds = async () => {
    const r = await srv.json("/api/v1/agent/search", { method: "POST", headers: key.headers, body: { query: p!.title, filters: { inStock: true }, limit: 100 } });
    expect(r.status).toBe(200);
    return (r.body.data.products as { id: string }[]).map((x) => x.id);
  };
  expect(await inStockIds()).toContain(p!.id);
  // every unit held by pending checkouts (a hold does not move change_xid: only the stock paths see it)
  await srv.db.sql`UPDATE products SET reserved_quantity = stock_quantity WHERE id = ${p!.id}`;
  failNext("setStock");
  await indexer().onCatalogChanged(heldStockChanged("demo-store", [p!.id])!);
  expect(await inStockIds()).toContain(p!.id);

  await pass();
  expect(await inStockIds()).not.toContain(p!.id);
}, 60_000);
