/**
 * A store's agent-key allowlist is read one page at a time (audit M-1). Every key that ever started a payment at a
 * store is bound to it and nothing deletes a binding, so the whole list was the answer of
 * GET /merchant/stores/{slug}/allowlist (20,000 keys: 3 MB) and the body of the dashboard's settings page (12 MB).
 * Now the route is paged like /refunds (status, limit 1-200 default 50, offset; meta total, limit, offset), newest
 * first, and the settings page shows one page with links to the next and a status filter.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { login, merchantLogin } from "../helpers/agents.ts";
import { dashboardSession, type DashboardSession } from "../helpers/dashboard.ts";
import { startServer, type TestServer } from "../helpers/server.ts";

const STORE = "greenleaf-living";
/** Past the REST maximum (200) and five dashboard pages (50), the least that shows both bounds. */
const N = 230;

interface Binding {
  key_id: string;
  status: string;
  created_at: string;
}

let srv: TestServer;
let owner: string;
/** Every binding of the store, newest first, ties by key id (the order the pages must follow). */
let expected: Binding[];

beforeAll(async () => {
  srv = await startServer({ seed: true });
  owner = await login(srv, merchantLogin(STORE));
  await srv.db.sql`DELETE FROM store_agent_allowlist WHERE store_slug = ${STORE}`;
  // Two bindings per instant, so pages must break ties to neither repeat nor skip one; every fifth key blocked.
  await srv.db.sql`INSERT INTO store_agent_allowlist (store_slug, agent_key_id, status, created_at, updated_at)
    SELECT ${STORE}, gen_random_uuid(), CASE WHEN g % 5 = 0 THEN 'blocked' ELSE 'allowed' END,
      now() - (g / 2) * interval '1 second', now()
    FROM generate_series(1, ${N}) g`;
  const rows = await srv.db.sql<{ agent_key_id: string; status: string; created_at: Date }[]>`
    SELECT agent_key_id, status, created_at FROM store_agent_allowlist WHERE store_slug = ${STORE}`;
  expected = rows
    .map((r) => ({ key_id: r.agent_key_id, status: r.status, created_at: r.created_at.toISOString() }))
    .sort((a, b) => b.created_at.localeCompare(a.created_at) || a.key_id.localeCompare(b.key_id));
}, 60_000);
afterAll(async () => {
  await srv?.stop();
});

const allowlist = (query = "") => srv.json(`/api/v1/merchant/stores/${STORE}/allowlist${query}`, { headers: { authorization: `Bearer ${owner}` } });
const keys = (data: Binding[]) => data.map((b) => b.key_id);

describe("GET /merchant/stores/{slug}/allowlist", () => {
  test("answers the 50 newest bindings with meta total, limit and offset", async () => {
    const r = await allowlist();
    expect(r.status).toBe(200);
    expect(r.body.success).toBe(true);
    expect(r.body.meta).toEqual({ total: N, limit: 50, offset: 0 });
    expect(keys(r.body.data)).toEqual(keys(expected.slice(0, 50)));
    expect(Object.keys(r.body.data[0]).sort()).toEqual(["created_at", "key_id", "status", "updated_at"]);
  });

  test("pages through every binding once, at most 200 at a time", async () => {
    const seen: string[] = [];
    for (let offset = 0; offset < N; offset += 45) {
      const r = await allowlist(`?limit=45&offset=${offset}`);
      expect(r.body.meta).toEqual({ total: N, limit: 45, offset });
      seen.push(...keys(r.body.data));
    }
    expect(seen).toEqual(keys(expected));
    const widest = await allowlist("?limit=200&offset=200");
    expect(widest.body.meta).toEqual({ total: N, limit: 200, offset: 200 });
    expect(keys(widest.body.data)).toEqual(keys(expected.slice(200)));
    const past = await allowlist(`?offset=${N}`);
    expect(past.status).toBe(200);
    expect(past.body.data).toEqual([]);
  });

  test("filters by status, and the total counts only the bindings that match", async () => {
    const blocked = expected.filter((b) => b.status === "blocked");
    const r = await allowlist("?status=blocked&limit=200");
    expect(r.body.meta).toEqual({ total: blocked.length, limit: 200, offset: 0 });
    expect(keys(r.body.data)).toEqual(keys(blocked));
    const allowed = await allowlist("?status=allowed&limit=1");
    expect(allowed.body.meta).toEqual({ total: N - blocked.length, limit: 1, offset: 0 });
    expect(allowed.body.data[0].status).toBe("allowed");
  });

  test("a limit outside 1-200 or an unknown status is 400 validation_error", async () => {
    for (const q of ["?limit=201", "?limit=0", "?offset=-1", "?status=pending"]) {
      const r = await allowlist(q);
      expect({ q, status: r.status, success: r.body.success, code: r.body.code }).toEqual({ q, status: 400, success: false, code: "validation_error" });
    }
  });

  test("the OpenAPI description documents the paging parameters", async () => {
    const doc = await srv.json("/api/v1/openapi.json");
    const op = doc.body.paths["/api/v1/merchant/stores/{slug}/allowlist"].get;
    const params = (op.parameters as { name: string; in: string }[]).filter((p) => p.in === "query").map((p) => p.name).sort();
    expect(params).toEqual(["limit", "offset", "status"]);
    expect(op.description).toContain("Paged with limit (1-200, default 50) and offset; meta carries total, limit and offset.");
  });
});

describe("the dashboard's settings page", () => {
  let d: DashboardSession;
  const rowsOf = (html: string) => [...html.matchAll(/aria-label="(?:Block|Allow) key ([0-9a-f-]{36})"/g)].map((m) => m[1]!);
  const nextOf = (html: string) => /<a href="([^"]+)" rel="next">Next<\/a>/.exec(html)?.[1]?.replaceAll("&amp;", "&");
  const get = async (path: string) => {
    const r = await srv.fetch(path, { headers: { cookie: d.cookie } });
    return { status: r.status, html: await r.text() };
  };

  beforeAll(async () => {
    d = await dashboardSession(srv, STORE);
  }, 30_000);

  test("shows one page of 50 bindings and links to the next until the last", async () => {
    let page = await get(`/dashboard/s/${STORE}/settings`);
    expect(page.status).toBe(200);
    expect(page.html).toContain(`Page 1 of 5 (${N} in all)`);
    const seen = rowsOf(page.html);
    expect(seen).toEqual(keys(expected.slice(0, 50)));
    for (let n = 2; n <= 5; n++) {
      const next = nextOf(page.html);
      expect(next).toBe(`/dashboard/s/${STORE}/settings?allowlist_page=${n}#allow`);
      page = await get(next!);
      expect(page.status).toBe(200);
      seen.push(...rowsOf(page.html));
    }
    expect(page.html).toContain(`Page 5 of 5 (${N} in all)`);
    expect(nextOf(page.html)).toBeUndefined();
    expect(seen).toEqual(keys(expected));
  });

  test("filters to the blocked keys, and their pages keep the filter", async () => {
    const blocked = expected.filter((b) => b.status === "blocked");
    const page = await get(`/dashboard/s/${STORE}/settings?allowlist_status=blocked`);
    expect(page.html).toContain(`Page 1 of 1 (${blocked.length} in all)`);
    expect(rowsOf(page.html)).toEqual(keys(blocked));
    expect(page.html).toContain('aria-label="Allow key ');
    expect(page.html).not.toContain('aria-label="Block key ');
    const allowed = await get(`/dashboard/s/${STORE}/settings?allowlist_status=allowed`);
    expect(nextOf(allowed.html)).toBe(`/dashboard/s/${STORE}/settings?allowlist_status=allowed&allowlist_page=2#allow`);
  });

  test("a page past the last shows no rows and a way back", async () => {
    const page = await get(`/dashboard/s/${STORE}/settings?allowlist_page=9`);
    expect(page.status).toBe(200);
    expect(rowsOf(page.html)).toEqual([]);
    expect(page.html).toContain("No key on this page.");
    expect(page.html).toContain(`href="/dashboard/s/${STORE}/settings?allowlist_page=5#allow" rel="prev"`);
  });
});
