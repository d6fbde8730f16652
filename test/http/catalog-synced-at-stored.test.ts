/**
 * PUT /catalog answers `syncedAt`, "when the store's catalog was last synced" (docs/catalog.md). A batch that wrote
 * something answered the actor host's clock read at the end of its turn, while the store stored the database's
 * `now()` (the transaction's start) as `last_sync_at`: the answer was a few milliseconds (on one machine; on a
 * cluster, the hosts' clock skew) after the time the merchant profile's `lastSyncAt` and the next empty batch then
 * showed for the same sync (helper B, session 22). Now the answer is the stored value.
 */
import { beforeAll, expect, test } from "bun:test";
import { createKey, type TestKey } from "../helpers/agents.ts";
import { useServer } from "../helpers/server.ts";

const srv = useServer({ seed: true, admin: true });
let key: TestKey;
beforeAll(async () => {
  key = await createKey(srv, { scopes: ["search", "merchants:read"] });
}, 60_000);

const putCatalog = (body: unknown) =>
  srv.json("/api/v1/merchant/stores/demo-store/catalog", { method: "PUT", headers: { authorization: `Bearer ${srv.admin}` }, body });

test("a catalog batch that writes answers the sync time the store keeps, which the merchant profile and the next empty batch show", async () => {
  const products = Array.from({ length: 20 }, (_, i) => ({ externalId: `SYNCED-AT-${i}`, title: `Synced item ${i}`, price: 10 + i, currency: "USD", stockQuantity: 5 }));
  const wrote = await putCatalog({ products });
  expect(wrote.status).toBe(200);
  expect(wrote.body.data.accepted).toBe(20);
  const syncedAt = wrote.body.data.syncedAt as string;

  const [row] = await srv.db.sql<{ last_sync_at: Date }[]>`SELECT last_sync_at FROM stores WHERE slug = 'demo-store'`;
  expect(syncedAt).toBe(row!.last_sync_at.toISOString());

  const profile = await srv.json("/api/v1/agent/merchants/demo-store", { headers: { "x-agent-api-key": key.key } });
  expect(profile.status).toBe(200);
  expect(profile.body.data.lastSyncAt).toBe(syncedAt);

  const empty = await putCatalog({ products: [] });
  expect(empty.status).toBe(200);
  expect(empty.body.data).toEqual({ accepted: 0, rejected: [], upserted: [], removed: 0, syncedAt });
});
