/**
 * Helper A (session 21): a search whose words are all stop words ("the", "and of") answered nothing on the embedded
 * engine, while a blank query ("   ", "*") lists every match: the engine dropped every word and had nothing to look
 * for. Meilisearch runs such a query as a placeholder search (every document), so the two engines disagreed too. A
 * query the engines reduce to no word (stop words only, or punctuation only) is now asked of the engine as the
 * wildcard (search/service.ts `engineText`): it lists what a blank query lists, in the same order, and `queryMeta.query`
 * still echoes what was sent. A query with one real word beside stop words is a text search as before.
 */
import { beforeAll, expect, test } from "bun:test";
import { createKey, type TestKey } from "../helpers/agents.ts";
import { useServer } from "../helpers/server.ts";

const srv = useServer({ seed: true, config: { RATE_LIMITS_ENABLED: false } });
let key: TestKey;

async function search(query: string, extra: Record<string, unknown> = {}) {
  const r = await srv.json("/api/v1/agent/search", { method: "POST", headers: key.headers, body: { query, limit: 50, ...extra } });
  expect(r.status).toBe(200);
  return { ids: r.body.data.products.map((p: { id: string }) => p.id) as string[], total: r.body.data.meta.total as number, echoed: r.body.data.queryMeta.query as string };
}

beforeAll(async () => {
  key = await createKey(srv, { scopes: ["search"], tier: "ENTERPRISE" });
}, 60_000);

test("a query of stop words only lists what a blank query lists, in the same order", async () => {
  const blank = await search("   ");
  expect(blank.total).toBeGreaterThan(10);
  for (const q of ["the", "and of", "  The  ", "to the"]) {
    const r = await search(q);
    expect({ q, total: r.total, ids: r.ids }).toEqual({ q, total: blank.total, ids: blank.ids });
    expect(r.echoed).toBe(q);
  }
}, 30_000);

test("with a category filter and a price sort, a stop-word query browses the category like the wildcard", async () => {
  const body = { filters: { category: "Electronics" }, sort: "price_asc" };
  const star = await search("*", body);
  expect(star.total).toBeGreaterThan(0);
  expect(await search("of the", body)).toMatchObject({ total: star.total, ids: star.ids });
}, 30_000);

test("a query of punctuation only is the wildcard too", async () => {
  const blank = await search("   ");
  const r = await search("!!! ?");
  expect({ total: r.total, ids: r.ids }).toEqual({ total: blank.total, ids: blank.ids });
}, 30_000);

test("a real word beside stop words is still a text search", async () => {
  const blank = await search("   ");
  const r = await search("the headphones");
  expect(r.total).toBeGreaterThan(0);
  expect(r.total).toBeLessThan(blank.total);
  expect(r.ids).toEqual((await search("headphones")).ids);
}, 30_000);
