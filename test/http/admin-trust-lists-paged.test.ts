/**
 * Helper F (session 20): the operator's trust lists (GET /api/v1/admin/trust/alerts and /appeals) answered at most
 * 500 rows with `meta.total` = the rows answered, and had no paging: past 500 alerts (newest first) the oldest open
 * ones could not be read at all, and the total said 500 whatever the table held. Both are now paged like every other
 * list (limit 1-200, default 50; offset 0-1,000,000; meta {total, limit, offset}, total exact), with an id tie-break so
 * pages neither repeat nor skip rows of the same instant.
 */
import { afterAll, beforeAll, expect, test } from "bun:test";
import { login } from "../helpers/agents.ts";
import { startServer, type TestServer } from "../helpers/server.ts";

const SLUG = "greenleaf-living";
const ROWS = 520;
let srv: TestServer;
let admin: string;
const auth = (t: string) => ({ authorization: `Bearer ${t}` });

beforeAll(async () => {
  srv = await startServer({ config: { RATE_LIMITS_ENABLED: false } });
  admin = await login(srv);
  const [op] = await srv.db.sql<{ id: string }[]>`SELECT id FROM users WHERE role = 'operator' LIMIT 1`;
  // resolved rows, as a long-running deployment accumulates them; half of them share one instant (the tie-break)
  await srv.db.sql`
    INSERT INTO trust_anomaly_alerts (store_slug, kind, history_id, detected_at, engine, from_0to1, to_0to1, delta_0to1, from_band, to_band,
                                      window_hours, status, resolution, note, resolved_by, resolved_at)
    SELECT ${SLUG}, 'rapid_gain', 1, timestamptz '2026-01-01' + (i / 2) * interval '1 minute', 'heuristic', 0.2, 0.5, 0.3, 'low', 'medium',
           24, 'resolved', 'dismissed', 'old', ${op!.id}, now()
    FROM generate_series(1, ${ROWS}) i`;
  await srv.db.sql`
    INSERT INTO trust_appeals (store_slug, filed_by, reason, status, filed_at, review_due_at, decision, decision_note, resolved_by, resolved_at)
    SELECT ${SLUG}, ${op!.id}, 'An old appeal, long decided.', 'resolved', timestamptz '2026-01-01' + (i / 2) * interval '1 minute',
           timestamptz '2026-01-04' + (i / 2) * interval '1 minute', 'rejected', 'no', ${op!.id}, now()
    FROM generate_series(1, ${ROWS}) i`;
}, 120_000);
afterAll(async () => {
  await srv?.stop();
}, 30_000);

for (const list of ["alerts", "appeals"] as const) {
  test(`every one of 520 resolved trust ${list} can be read page by page, with the exact total`, async () => {
    const seen = new Set<string>();
    for (let offset = 0; offset < ROWS + 200; offset += 200) {
      const r = await srv.json(`/api/v1/admin/trust/${list}?status=all&limit=200&offset=${offset}`, { headers: auth(admin) });
      expect(r.status).toBe(200);
      expect(r.body.meta).toEqual({ total: ROWS, limit: 200, offset });
      for (const row of r.body.data) seen.add(row.id);
    }
    expect(seen.size).toBe(ROWS);
    const first = await srv.json(`/api/v1/admin/trust/${list}?status=resolved`, { headers: auth(admin) });
    expect({ rows: first.body.data.length, meta: first.body.meta }).toEqual({ rows: 50, meta: { total: ROWS, limit: 50, offset: 0 } });
  }, 60_000);

  test(`the trust ${list} list refuses a limit or offset out of bounds with 400`, async () => {
    for (const q of ["limit=0", "limit=201", "offset=-1", "offset=1000001", "limit=abc"]) {
      const r = await srv.json(`/api/v1/admin/trust/${list}?${q}`, { headers: auth(admin) });
      expect({ q, status: r.status, code: r.body.code }).toEqual({ q, status: 400, code: "validation_error" });
    }
  }, 60_000);
}
