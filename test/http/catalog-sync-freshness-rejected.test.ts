/**
 * Audit A: a PUT /catalog whose every item is rejected (or that carries no product at all) still sets the store's
 * last_sync_at (actors/store/index.ts ingestCatalog: the UPDATE stores … last_sync_at runs unconditionally), so a
 * merchant whose feed fails validation, or who pings an empty batch, keeps every product "fresh": +0.10 in ranking,
 * high stock and price confidence ("a claim an agent may act on without re-checking", docs/search.md), and the trust
 * components catalog_freshness / integrationFreshness ("age of last successful sync", spec v2 table) at their best.
 * PATCH /inventory already moves it only when a product was written (`if (touched.size)`).
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { createKey, login, type TestKey } from "../helpers/agents.ts";
import { startServer, type TestServer } from "../helpers/server.ts";

const CHARGER = "2175690a-af60-5f3a-ba23-b7091aed9157"; // brightside-electronics
let srv: TestServer;
let key: TestKey;
let token: string;
beforeAll(async () => {
  srv = await startServer({ seed: true, config: { RATE_LIMITS_ENABLED: false } });
  key = await createKey(srv, { tier: "ENTERPRISE" });
  token = await login(srv);
}, 120_000);
afterAll(async () => {
  await srv?.stop();
});

const STALE = new Date(Date.now() - 4 * 24 * 3600_000);
const stale = () => srv.db.sql`UPDATE stores SET last_sync_at = ${STALE} WHERE slug = 'brightside-electronics'`;
const lastSync = async () => (await srv.db.sql<{ t: Date }[]>`SELECT last_sync_at AS t FROM stores WHERE slug = 'brightside-electronics'`)[0]!.t.getTime();
const putCatalog = (body: unknown) =>
  srv.json("/api/v1/merchant/stores/brightside-electronics/catalog", { method: "PUT", headers: { authorization: `Bearer ${token}` }, body });

describe("only a sync that writes something counts as a sync", () => {
  test("a batch whose only item is rejected leaves last_sync_at and the products' freshness as they were", async () => {
    await stale();
    const r = await putCatalog({ products: [{ externalId: "AUDIT-BAD", title: "x", price: 5, currency: "USD", compareAtPrice: 4 }] });
    expect(r.status).toBe(200);
    expect(r.body.data.accepted).toBe(0);
    expect(r.body.data.rejected.length).toBe(1);
    expect(await lastSync()).toBe(STALE.getTime());
    expect(r.body.data.syncedAt).toBe(STALE.toISOString()); // the answer names the store's last sync, not now
    const p = await srv.json(`/api/v1/agent/products/${CHARGER}`, { headers: key.headers });
    expect(p.body.data.freshnessTier).toBe("very_stale");
  });

  test("an empty batch leaves last_sync_at as it was", async () => {
    await stale();
    const r = await putCatalog({ products: [] });
    expect(r.status).toBe(200);
    expect(await lastSync()).toBe(STALE.getTime());
    expect(r.body.data.syncedAt).toBe(STALE.toISOString());
  });

  test("a batch that accepts one item is a sync: last_sync_at and the answer move to now", async () => {
    await stale();
    const before = Date.now();
    const r = await putCatalog({ products: [{ externalId: "AUDIT-GOOD", title: "Audit USB-C Cable", price: 5, currency: "USD", stockQuantity: 3, category: "Electronics" }] });
    expect(r.status).toBe(200);
    expect(r.body.data.accepted).toBe(1);
    expect(await lastSync()).toBeGreaterThanOrEqual(before - 1_000);
    expect(Date.parse(r.body.data.syncedAt)).toBeGreaterThanOrEqual(before - 1_000);
  });
});
