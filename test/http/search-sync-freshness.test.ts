/**
 * Audit A2 LOW-4: after a catalog upload, search showed the store's previous lastSyncAt (and ranked by its old
 * freshness tier) until the indexer's 30-s catch-up, while the merchant profile showed the new one at once. The
 * `catalog.changed` event now re-reads the store row as well as the products.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { getIndexer } from "../../search/indexer.ts";
import { ALL_SCOPES, createKey, login, merchantLogin, type TestKey } from "../helpers/agents.ts";
import { startServer, type TestServer } from "../helpers/server.ts";

const SLUG = "summit-sports-co";
let srv: TestServer;
let key: TestKey;

beforeAll(async () => {
  srv = await startServer({ config: { RATE_LIMITS_ENABLED: false } });
  key = await createKey(srv, { scopes: ALL_SCOPES });
}, 120_000);
afterAll(async () => {
  await srv?.stop();
});

describe("search after a catalog upload", () => {
  test("shows the store's new lastSyncAt as soon as the upload's event is applied, like the merchant profile", async () => {
    // An old sync time, as the index knows it (the catch-up that ran at boot has read this row).
    await srv.db.sql`UPDATE stores SET last_sync_at = now() - interval '3 days' WHERE slug = ${SLUG}`;
    await getIndexer(srv.running.services)!.catchUp();

    const owner = await login(srv, merchantLogin(SLUG));
    const title = `Quokkabrand Trail Gaiter ${Date.now()}`;
    const put = await srv.json(`/api/v1/merchant/stores/${SLUG}/catalog`, {
      method: "PUT",
      headers: { authorization: `Bearer ${owner}` },
      body: { products: [{ externalId: `fresh-${Date.now()}`, title, price: 12, currency: "USD" }] },
    });
    expect(put.status).toBe(200);
    await getIndexer(srv.running.services)!.idle();

    const profile = await srv.json(`/api/v1/agent/merchants/${SLUG}`, { headers: key.headers });
    expect(profile.status).toBe(200);
    const search = await srv.json("/api/v1/agent/search", { method: "POST", headers: key.headers, body: { query: title } });
    expect(search.status).toBe(200);
    const hit = search.body.data.products.find((p: { title: string }) => p.title === title);
    expect(hit).toBeDefined();
    expect(hit.merchant.lastSyncAt).toBe(profile.body.data.lastSyncAt);
    expect(Date.now() - Date.parse(hit.merchant.lastSyncAt)).toBeLessThan(60_000);
  });
});
