/**
 * F's held-stock event, published by the cart (F's report, "Left" 1): search learned a checkout's hold or release of
 * tracked stock only through its 30 s catch-up, so a product whose every unit a pending checkout held stayed in the
 * in-stock results for up to 30 s (and came back as late after the release). The cart now publishes
 * `heldStockChanged(slug, ids)` after each hold and release of tracked stock (the single-store hold riding in the
 * state statement, the multi-store hold, a declined leg's release, the session's cancel or expiry), and search
 * follows within a second. Untracked stock holds nothing and publishes nothing.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { CATALOG_CHANGED, type CatalogChangedEvent } from "../../actors/store/messages.ts";
import { ALL_SCOPES, createKey, type TestKey } from "../helpers/agents.ts";
import { GREEN } from "../helpers/partly-paid.ts";
import { startServer, type TestServer } from "../helpers/server.ts";

const DEMO = "demo-store";
const BOARD = "5befd987-79cd-540c-8a5d-2ba5a30aed41"; // DS-0011, untracked stock

let srv: TestServer;
let key: TestKey;
const events: CatalogChangedEvent[] = [];
let unsubscribe: () => void = () => undefined;

beforeAll(async () => {
  srv = await startServer({ seed: true, config: { RATE_LIMITS_ENABLED: false } });
  key = await createKey(srv, { scopes: ALL_SCOPES, tier: "ENTERPRISE" });
  unsubscribe = srv.running.transport.subscribe(CATALOG_CHANGED, (e) => void events.push(e as CatalogChangedEvent));
}, 60_000);
afterAll(async () => {
  unsubscribe();
  await srv?.stop();
});

const post = (path: string, body: unknown) => srv.json(path, { method: "POST", headers: key.headers, body: body as Record<string, unknown> });

/** A demo-store product with tracked stock, no variants and nothing held, not used by an earlier test of this file. */
const used = new Set<string>();
async function trackedProduct(): Promise<{ id: string; title: string; stock: number }> {
  const rows = await srv.db.sql<{ id: string; title: string; stock: number }[]>`
    SELECT id, title, stock_quantity AS stock FROM products WHERE store_slug = ${DEMO} AND active AND in_stock
      AND jsonb_array_length(variants) = 0 AND stock_quantity BETWEEN 2 AND 40 AND reserved_quantity = 0
    ORDER BY external_id LIMIT 20`;
  const p = rows.find((r) => !used.has(r.id));
  expect(p).toBeDefined();
  used.add(p!.id);
  return p!;
}

/** Whether search lists the product among the in-stock results for its own title. */
async function inStockResults(p: { id: string; title: string }): Promise<boolean> {
  const r = await post("/api/v1/agent/search", { query: p.title, filters: { inStock: true }, limit: 100 });
  expect(r.status).toBe(200);
  return (r.body.data.products as { id: string }[]).some((x) => x.id === p.id);
}

/** Polls search for up to `ms` (no catch-up is run) until it lists the product in stock or not; how long it took. */
async function searchFollows(p: { id: string; title: string }, inStock: boolean, ms = 1_000): Promise<number> {
  const start = performance.now();
  while (performance.now() - start < ms) {
    if ((await inStockResults(p)) === inStock) return performance.now() - start;
    await Bun.sleep(25);
  }
  throw new Error(`search did not show ${p.id} ${inStock ? "in stock" : "out of stock"} within ${ms} ms`);
}

/** The held-stock events published for these products since `from` (an index into `events`). */
const heldEvents = (from: number, ids: readonly string[]) => events.slice(from).filter((e) => e.held?.some((id) => ids.includes(id)));

describe("search follows a checkout's hold and release of tracked stock within a second", () => {
  test("a one-store checkout holding every unit takes the product out of the in-stock results, and its cancel brings it back", async () => {
    const p = await trackedProduct();
    expect(await inStockResults(p)).toBe(true);
    const from = events.length;
    const c = await post("/api/v1/agent/cart", { items: [{ product_id: p.id, quantity: p.stock }] });
    expect(c.status).toBe(201);
    const r = await post("/api/v1/agent/checkout", { cartId: c.body.data.id, payment_method: "tok_needs_approval", idempotency_key: crypto.randomUUID() });
    expect(r.status).toBe(202);
    await searchFollows(p, false);
    expect(heldEvents(from, [p.id])).toEqual([{ storeSlug: DEMO, upserted: [], removed: [], held: [p.id] }]);

    const canceled = await post(`/api/v1/agent/checkout/${r.body.details.checkout_session_id}/cancel`, {});
    expect(canceled.status).toBe(200);
    await searchFollows(p, true);
    expect(heldEvents(from, [p.id])).toHaveLength(2);
  }, 60_000);

  test("a two-store checkout's hold and its cancel move the tracked product the same way", async () => {
    const p = await trackedProduct();
    const from = events.length;
    const c = await post("/api/v1/agent/cart", { items: [{ product_id: p.id, quantity: p.stock }, { product_id: GREEN, quantity: 1 }] });
    expect(c.status).toBe(201);
    const pv = await post("/api/v1/agent/checkout/preview", { cartId: c.body.data.id });
    expect(pv.status).toBe(200);
    const sid = pv.body.data.checkout_session_id;
    const r = await post("/api/v1/agent/checkout", {
      cartId: c.body.data.id,
      checkout_session_id: sid,
      idempotency_key: crypto.randomUUID(),
      payment_methods: { [DEMO]: "tok_needs_approval", "greenleaf-living": "tok_needs_approval" },
    });
    expect(r.status).toBe(202);
    await searchFollows(p, false);
    expect(heldEvents(from, [p.id])[0]).toEqual({ storeSlug: DEMO, upserted: [], removed: [], held: [p.id] });

    expect((await post(`/api/v1/agent/checkout/${sid}/cancel`, {})).status).toBe(200);
    await searchFollows(p, true);
  }, 60_000);

  test("a declined payment's hold and release are both published, and the product stays in stock", async () => {
    const p = await trackedProduct();
    const from = events.length;
    const c = await post("/api/v1/agent/cart", { items: [{ product_id: p.id, quantity: p.stock }] });
    const r = await post("/api/v1/agent/checkout", { cartId: c.body.data.id, payment_method: "tok_decline", idempotency_key: crypto.randomUUID() });
    expect(r.status).toBe(402);
    expect(r.body.code).toBe("PAYMENT_DECLINED");
    await Bun.sleep(100);
    expect(heldEvents(from, [p.id])).toEqual([
      { storeSlug: DEMO, upserted: [], removed: [], held: [p.id] },
      { storeSlug: DEMO, upserted: [], removed: [], held: [p.id] },
    ]);
    expect(await inStockResults(p)).toBe(true);
  }, 60_000);

  test("a checkout of untracked stock publishes no held-stock event", async () => {
    const from = events.length;
    const c = await post("/api/v1/agent/cart", { items: [{ product_id: BOARD, quantity: 1 }] });
    const r = await post("/api/v1/agent/checkout", { cartId: c.body.data.id, payment_method: "MOCK", idempotency_key: crypto.randomUUID() });
    expect(r.status).toBe(200);
    await Bun.sleep(100);
    expect(events.slice(from).filter((e) => e.held !== undefined)).toEqual([]);
  }, 60_000);
});
