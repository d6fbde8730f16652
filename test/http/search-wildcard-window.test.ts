/**
 * A wildcard query (`"*"`: browse, usually with a category) has no text to choose the candidate window by: every
 * match scores 0 on text. The embedded engine filled the window with the matches of the smallest ids, and ranking
 * then sorted those, so past `candidateWindow` matches `sort: "price_asc"` did not start with the cheapest match,
 * `newest` with the newest, `trust_score` or `relevance` with the best (helper A, session 20: 3 of the 10 cheapest
 * Electronics with a window of 10). A wildcard's window is now the first `candidateWindow` matches of the requested
 * order; `total` stays bounded by the window.
 *
 * The seeded catalog has fewer matches than the default window (1,000), so the full listing at that window is the
 * truth; the window is then set to 10 through the operator endpoint.
 */
import { beforeAll, describe, expect, test } from "bun:test";
import { createKey, type TestKey } from "../helpers/agents.ts";
import { useServer } from "../helpers/server.ts";

const srv = useServer({ seed: true, admin: true, config: { RATE_LIMITS_ENABLED: false } });
const SORTS = ["price_asc", "price_desc", "newest", "trust_score", "relevance"] as const;
const WINDOW = 10;
let key: TestKey;
const full = new Map<string, string[]>();

async function listing(body: Record<string, unknown>): Promise<{ ids: string[]; total: number }> {
  const r = await srv.json("/api/v1/agent/search", { method: "POST", headers: key.headers, body: { query: "*", limit: 100, ...body } });
  expect(r.status).toBe(200);
  return { ids: r.body.data.products.map((p: { id: string }) => p.id), total: r.body.data.meta.total };
}

const setWindow = async (candidateWindow: number) => {
  const r = await srv.json("/api/v1/admin/search/settings", { method: "PUT", headers: { authorization: `Bearer ${srv.admin}` }, body: { candidateWindow } });
  expect(r.status).toBe(200);
};

beforeAll(async () => {
  key = await createKey(srv, { scopes: ["search"], tier: "ENTERPRISE" });
  for (const sort of SORTS) {
    const { ids, total } = await listing({ sort, filters: { category: "Electronics" } });
    expect(total).toBeGreaterThan(WINDOW * 2); // more matches than the window set below
    expect(total).toBeLessThanOrEqual(100); // the whole listing on one page
    full.set(sort, ids);
  }
  await setWindow(WINDOW);
}, 60_000);

describe("a wildcard listing with more matches than the candidate window", () => {
  for (const sort of SORTS) {
    test(`sorted by ${sort}, it shows the first matches of that order and counts only the window`, async () => {
      const { ids, total } = await listing({ sort, filters: { category: "Electronics" } });
      expect(total).toBe(WINDOW);
      expect(ids).toEqual(full.get(sort)!.slice(0, WINDOW));
    });
  }

  test("its pages stay inside the window: the second page of 4 continues the first, the third ends at the window", async () => {
    const pages: string[][] = [];
    for (const page of [1, 2, 3, 4]) pages.push((await listing({ sort: "price_asc", limit: 4, page, filters: { category: "Electronics" } })).ids);
    expect(pages.map((p) => p.length)).toEqual([4, 4, 2, 0]);
    expect(pages.flat()).toEqual(full.get("price_asc")!.slice(0, WINDOW));
  });

  test("deduplicate collapses inside that window: at most the window, and its first match is the first of the order", async () => {
    const { ids, total } = await listing({ sort: "price_asc", deduplicate: true, filters: { category: "Electronics" } });
    expect(total).toBeLessThanOrEqual(WINDOW);
    expect(ids.length).toBe(total);
    expect(ids[0]).toBe(full.get("price_asc")![0]!);
  });

  test("a text query still takes its window by text relevance", async () => {
    const { total } = await listing({ query: "wireless", sort: "price_asc" });
    expect(total).toBeLessThanOrEqual(WINDOW);
  });
});
