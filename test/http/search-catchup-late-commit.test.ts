/**
 * Audit Z-2: the search catch-up re-read `updated_at > watermark − 5 s`, but updated_at is now(), the writing
 * transaction's START time. A product write that committed more than 5 s after it began, while other writes moved
 * the watermark on, and whose catalog.changed event was lost, was never applied: search kept the old title until
 * the gateway restarted. The catch-up now follows a transaction-id horizon (products.change_xid, migration 0076),
 * so a late commit is read by the next pass however long its transaction stayed open.
 *
 * Every write here is plain SQL: no catalog.changed event is published, as when an event is lost.
 */
import { beforeAll, describe, expect, test } from "bun:test";
import { getIndexer } from "../../search/indexer.ts";
import { getSearchService } from "../../search/service.ts";
import { ALL_SCOPES, createKey, type TestKey } from "../helpers/agents.ts";
import { useServer } from "../helpers/server.ts";

const srv = useServer({ seed: true, config: { RATE_LIMITS_ENABLED: false } });
let key: TestKey;

beforeAll(async () => {
  key = await createKey(srv, { scopes: ALL_SCOPES, tier: "ENTERPRISE" });
}, 60_000);

const indexer = () => getIndexer(srv.running.services)!;

async function searchTitles(query: string): Promise<{ id: string; title: string }[]> {
  const r = await srv.json("/api/v1/agent/search", { method: "POST", headers: key.headers, body: { query, filters: { inStock: false } } });
  expect(r.status).toBe(200);
  expect(r.body.success).toBe(true);
  return (r.body.data.products as { id: string; title: string }[]).map((p) => ({ id: p.id, title: p.title }));
}

async function products(n: number): Promise<{ id: string; title: string }[]> {
  const rows = await srv.db.sql<{ id: string; title: string }[]>`
    SELECT id, title FROM products WHERE store_slug = 'demo-store' AND active AND jsonb_array_length(variants) = 0
    ORDER BY external_id LIMIT ${n}`;
  expect(rows.length).toBe(n);
  return rows;
}

describe("the search catch-up after a lost catalog event", () => {
  test("a product write whose transaction stayed open longer than the old 5 s margin is found by the next catch-up", async () => {
    const [late, other] = await products(2);
    const conn = await srv.db.sql.reserve();
    try {
      // The late write: begun now, committed only after other writes moved on and a catch-up ran.
      await conn`BEGIN`;
      await conn`UPDATE products SET title = 'Zebracorn Pruning Shears', updated_at = now() WHERE id = ${late!.id}`;
      await Bun.sleep(6_000);
      // Meanwhile another product changes and commits at once, and a catch-up applies it.
      await srv.db.sql`UPDATE products SET title = 'Quokkafruit Garden Gloves', updated_at = now() WHERE id = ${other!.id}`;
      await indexer().catchUp();
      expect(await searchTitles("Quokkafruit")).toEqual([{ id: other!.id, title: "Quokkafruit Garden Gloves" }]);
      expect(await searchTitles("Zebracorn")).toEqual([]); // not committed yet
      await conn`COMMIT`;
    } finally {
      conn.release();
    }
    await indexer().catchUp();

    expect(await searchTitles("Zebracorn")).toEqual([{ id: late!.id, title: "Zebracorn Pruning Shears" }]);
    const detail = await srv.json(`/api/v1/agent/products/${late!.id}`, { headers: key.headers });
    expect(detail.status).toBe(200);
    expect(detail.body.data.title).toBe("Zebracorn Pruning Shears");
  }, 60_000);

  test("a write still open during a catch-up holds the horizon back, and the rows written meanwhile are read again", async () => {
    const [, , held, meanwhile] = await products(4);
    const service = getSearchService(srv.running.services);
    const conn = await srv.db.sql.reserve();
    try {
      await conn`BEGIN`;
      await conn`UPDATE products SET title = 'Axolotl Watering Can', updated_at = now() WHERE id = ${held!.id}`;
      await srv.db.sql`UPDATE products SET title = 'Narwhal Seed Tray', updated_at = now() WHERE id = ${meanwhile!.id}`;
      const [{ xid }] = await conn<{ xid: string }[]>`SELECT pg_current_xact_id()::text AS xid`;
      await indexer().catchUp();
      await indexer().catchUp();
      // the open transaction keeps the horizon at or below its id: nothing it may still commit is skipped
      expect(BigInt(service.horizon!) <= BigInt(xid)).toBe(true);
      expect(await searchTitles("Narwhal")).toEqual([{ id: meanwhile!.id, title: "Narwhal Seed Tray" }]);
      await conn`COMMIT`;
    } finally {
      conn.release();
    }
    await indexer().catchUp();
    expect(await searchTitles("Axolotl")).toEqual([{ id: held!.id, title: "Axolotl Watering Can" }]);
  }, 60_000);

  test("a checkout's hold and release of units is not a catalog change: the row's change_xid stays, its stock is re-read", async () => {
    const [p] = await srv.db.sql<{ id: string; title: string; stock: number }[]>`
      SELECT id, title, stock_quantity AS stock FROM products WHERE store_slug = 'demo-store' AND active AND in_stock
        AND jsonb_array_length(variants) = 0 AND stock_quantity BETWEEN 2 AND 40 AND reserved_quantity = 0
      ORDER BY external_id DESC LIMIT 1`;
    expect(p).toBeDefined();
    const changeXid = async () => (await srv.db.sql<{ x: string | null }[]>`SELECT change_xid::text AS x FROM products WHERE id = ${p!.id}`)[0]!.x;
    const before = await changeXid();
    // held every unit, then given back, the way checkouts do it (only the hold columns move)
    await srv.db.sql`UPDATE products SET reserved_quantity = reserved_quantity + ${p!.stock} WHERE id = ${p!.id}`;
    expect(await changeXid()).toBe(before);
    await indexer().catchUp();
    expect(getSearchService(srv.running.services).products.get(p!.id)?.inStock).toBe(false);
    await srv.db.sql`UPDATE products SET reserved_quantity = reserved_quantity - ${p!.stock} WHERE id = ${p!.id}`;
    expect(await changeXid()).toBe(before);
    await indexer().catchUp();
    expect(getSearchService(srv.running.services).products.get(p!.id)?.inStock).toBe(true);
    // a catalog change of the same row moves it
    await srv.db.sql`UPDATE products SET title = ${p!.title + " "}, updated_at = now() WHERE id = ${p!.id}`;
    expect(await changeXid()).not.toBe(before);
  }, 60_000);
});
