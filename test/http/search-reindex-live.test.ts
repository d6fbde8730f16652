/**
 * An operator's reindex does not empty search while it runs (audit Q-2). It cleared the gateway's engine and
 * product snapshot and then reloaded them page by page, with an await on Postgres before each page, while searches
 * went on: a search answered meanwhile was 200 with `total: 0` (or too few products). The build is now made beside
 * the live index and swapped in when complete.
 *
 * The reindex is held before its first page by a lock the test takes on `products` (searches do not read the table),
 * so what a search answers in the middle of a reindex is observed deterministically.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { ALL_SCOPES, createKey, login, type TestKey } from "../helpers/agents.ts";
import { startServer, type TestServer } from "../helpers/server.ts";

let srv: TestServer;
let key: TestKey;
let token: string;

beforeAll(async () => {
  srv = await startServer({ seed: true, config: { RATE_LIMITS_ENABLED: false } });
  key = await createKey(srv, { scopes: ALL_SCOPES, tier: "ENTERPRISE" });
  token = await login(srv);
}, 60_000);
afterAll(async () => {
  await srv?.stop();
});

async function search(): Promise<{ total: number; ids: string[] }> {
  const r = await srv.json("/api/v1/agent/search", { method: "POST", headers: key.headers, body: { query: "headphones", filters: { inStock: false }, limit: 100 } });
  expect(r.status).toBe(200);
  return { total: r.body.data.meta.total, ids: (r.body.data.products as { id: string }[]).map((p) => p.id) };
}

/** Whether a statement of another session waits for a lock on `products` (the reindex's first page). */
async function pageWaits(): Promise<boolean> {
  const [r] = await srv.db.sql<{ n: number }[]>`
    SELECT count(*)::int AS n FROM pg_locks l JOIN pg_class c ON c.oid = l.relation
    WHERE c.relname = 'products' AND NOT l.granted AND l.database = (SELECT oid FROM pg_database WHERE datname = current_database())`;
  return r!.n > 0;
}

describe("an operator's reindex", () => {
  test("leaves every search answered while it runs with the whole catalog, and swaps its build in at the end", async () => {
    const before = await search();
    expect(before.total).toBeGreaterThan(0);
    let reindex: Promise<{ status: number; body: any }> | undefined;
    let during: { total: number; ids: string[] }[] = [];
    await srv.db.sql.begin(async (tx) => {
      await tx`LOCK TABLE products IN ACCESS EXCLUSIVE MODE`;
      reindex = srv.json("/api/v1/admin/search/reindex", { method: "POST", headers: { authorization: `Bearer ${token}` } });
      for (let i = 0; i < 200 && !(await pageWaits()); i++) await Bun.sleep(10);
      expect(await pageWaits()).toBe(true);
      during = [await search(), await search()];
    });
    const done = await reindex!;
    expect(done.status).toBe(200);
    expect(done.body.data.products).toBeGreaterThan(0);
    expect(during).toEqual([before, before]);
    expect(await search()).toEqual(before);
  }, 30_000);
});
