/**
 * Audit A7 MED-2 (held stock, first part): units held by a pending checkout are not buyable, and product reads said
 * so, but search's index kept on-hand stock until the next catalog change: its inStock filter, in-stock term and
 * summary still offered the product. The index now reads buyable stock (stock − held) on every refresh, a
 * held-stock event (`catalog.changed` with `held`) flips only the stock, and the catch-up re-reads the stock of
 * products holding units (holds do not move updated_at).
 */
import { beforeAll, describe, expect, test } from "bun:test";
import { heldStockChanged } from "../../actors/store/messages.ts";
import { getIndexer } from "../../search/indexer.ts";
import { getSearchService } from "../../search/service.ts";
import { ALL_SCOPES, createKey, type TestKey } from "../helpers/agents.ts";
import { useServer } from "../helpers/server.ts";

const srv = useServer({ seed: true, config: { RATE_LIMITS_ENABLED: false } });
let key: TestKey;

beforeAll(async () => {
  key = await createKey(srv, { scopes: ALL_SCOPES, tier: "ENTERPRISE" });
}, 60_000);

const post = (path: string, body: unknown) => srv.json(path, { method: "POST", headers: key.headers, body: body as Record<string, unknown> });
const indexer = () => getIndexer(srv.running.services)!;

/** A checkout left awaiting the buyer's approval: its units stay held until it is approved, canceled or expires. */
async function hold(productId: string, quantity: number): Promise<void> {
  const c = await post("/api/v1/agent/cart", { items: [{ product_id: productId, quantity }] });
  expect(c.status).toBe(201);
  const r = await post("/api/v1/agent/checkout", { cartId: c.body.data.id, payment_method: "tok_needs_approval", idempotency_key: crypto.randomUUID() });
  expect(r.status).toBe(202);
}

/** The product as search returns it for its own title, with the given inStock filter (undefined: not in the results). */
async function searched(p: { id: string; title: string }, inStock: boolean) {
  const r = await post("/api/v1/agent/search", { query: p.title, filters: { inStock }, limit: 100 });
  expect(r.status).toBe(200);
  return (r.body.data.products as { id: string; inStock: boolean; why_ranked: string }[]).find((x) => x.id === p.id);
}

async function trackedProduct(): Promise<{ id: string; title: string; stock: number }> {
  const [p] = await srv.db.sql<{ id: string; title: string; stock: number }[]>`
    SELECT id, title, stock_quantity AS stock FROM products WHERE store_slug = 'demo-store' AND active AND in_stock
      AND jsonb_array_length(variants) = 0 AND stock_quantity BETWEEN 2 AND 40 AND reserved_quantity = 0
    ORDER BY external_id OFFSET ${Math.floor(Math.random() * 5)} LIMIT 1`;
  expect(p).toBeDefined();
  return p!;
}

describe("search shows the stock that can be bought", () => {
  test("a product whose every unit is held leaves the in-stock results after the catch-up, as product detail says", async () => {
    const p = await trackedProduct();
    expect(await searched(p, true)).toMatchObject({ id: p.id, inStock: true });
    await hold(p.id, p.stock);
    await indexer().catchUp();

    const detail = await srv.json(`/api/v1/agent/products/${p.id}`, { headers: key.headers });
    expect(detail.body.data).toMatchObject({ inStock: false, stockQuantity: 0 });
    expect(await searched(p, true)).toBeUndefined();
    const shown = await searched(p, false);
    expect(shown).toMatchObject({ id: p.id, inStock: false });
    expect(shown!.why_ranked).toContain("out of stock +0.00");

    // A catalog change of the product re-reads it whole: still what can be bought, not the on-hand stock.
    await indexer().onCatalogChanged({ storeSlug: "demo-store", upserted: [p.id], removed: [] });
    expect(await searched(p, true)).toBeUndefined();
  }, 60_000);

  test("a held-stock event alone moves the product, without a catalog change or a catch-up; nothing held is no event", async () => {
    const p = await trackedProduct();
    const svc = getSearchService(srv.running.services);
    await hold(p.id, p.stock);
    // what a hold publishes: the stock is re-read, nothing re-indexed
    const event = heldStockChanged("demo-store", [p.id, p.id])!;
    expect(event).toEqual({ storeSlug: "demo-store", upserted: [], removed: [], held: [p.id] });
    await indexer().onCatalogChanged(event);
    expect(svc.products.get(p.id)?.inStock).toBe(false);
    expect(await searched(p, true)).toBeUndefined();

    // given back (the hold's release): the next event brings it back
    await srv.db.sql`UPDATE products SET reserved_quantity = 0 WHERE id = ${p.id}`;
    await indexer().onCatalogChanged(heldStockChanged("demo-store", [p.id])!);
    expect(await searched(p, true)).toMatchObject({ id: p.id, inStock: true });
    expect(heldStockChanged("demo-store", [])).toBeNull();
  }, 60_000);

  test("the catch-up brings back a product whose units were released while its event was missed", async () => {
    const p = await trackedProduct();
    await hold(p.id, p.stock);
    await indexer().catchUp();
    expect(await searched(p, true)).toBeUndefined();
    // released without an event (missed by this node): reserved_quantity is 0 again, updated_at unchanged
    await srv.db.sql`UPDATE products SET reserved_quantity = 0 WHERE id = ${p.id}`;
    await indexer().catchUp();
    expect(await searched(p, true)).toMatchObject({ id: p.id, inStock: true });
  }, 60_000);
});
