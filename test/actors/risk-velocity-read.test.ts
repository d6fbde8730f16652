/**
 * The risk gate's velocity read (actors/store/commerce.ts `riskColumns`, `risk_recent`): the first order's time of
 * each checkout session of the key with an order in the gate's hour, at most VELOCITY_READ_LIMIT sessions. It used to
 * group every order of the key's hour, so its cost grew with the key's volume (docs/performance.md session 13); it now
 * walks orders_agent_key newest first, one session at a time, and stops at the limit. A multi-store session (one
 * order per store, same instant) counts once.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { VELOCITY_READ_LIMIT } from "../../actors/payments/risk-gate.ts";
import { readRiskInputs, riskColumns } from "../../actors/store/commerce.ts";
import type { Sql } from "../../infra/db.ts";
import { createTestDatabase, type TestDatabase } from "../helpers/db.ts";

let db: TestDatabase;
let sql: Sql;
let stores: string[];
let nowMs: number;

beforeAll(async () => {
  db = await createTestDatabase({ seeded: true });
  sql = db.sql;
  stores = (await sql<{ slug: string }[]>`SELECT slug FROM stores ORDER BY slug LIMIT 2`).map((r) => r.slug);
  nowMs = (await sql<{ t: number }[]>`SELECT (extract(epoch FROM now()) * 1000)::float8 AS t`)[0]!.t;
}, 60_000);
afterAll(async () => {
  await db?.drop();
});

/**
 * `sessions` checkout sessions of `key`, the g-th started `g * spacingSec` seconds before `nowMs`; every `multiEvery`-th
 * has a second store's order at the same instant.
 */
async function sessionsOf(key: string, sessions: number, spacingSec: number, multiEvery = 3, offsetSec = 0): Promise<void> {
  await sql`INSERT INTO orders (store_slug, channel, agent_key_id, buyer_ref, status, total_minor, currency, payment_rail, checkout_session_id, created_at)
    SELECT st, 'agent', ${key}::uuid, 'b', 'paid', 100, 'USD', 'card', 'cs_' || ${key} || '_' || ${offsetSec} || '_' || g,
      to_timestamp(${nowMs / 1000}) - make_interval(secs => ${offsetSec}::float8 + g * ${spacingSec}::float8)
    FROM generate_series(1, ${sessions}) g, unnest(${stores}::text[]) st WHERE st = ${stores[0]!} OR g % ${multiEvery} = 0`;
}

/** What the read returned before the bound: every session of the hour, grouped, for the same clock. */
async function unbounded(key: string): Promise<number[]> {
  const rows = await sql<{ t: number }[]>`SELECT (extract(epoch FROM min(created_at)) * 1000)::float8 AS t FROM orders
    WHERE agent_key_id = ${key}::uuid AND checkout_session_id IS NOT NULL AND created_at > to_timestamp(${nowMs / 1000}) - interval '1 hour'
      AND created_at <= to_timestamp(${nowMs / 1000})
    GROUP BY checkout_session_id`;
  return rows.map((r) => r.t);
}

const sorted = (xs: number[]) => [...xs].sort((a, b) => a - b);

describe("the velocity read", () => {
  test("below the limit it returns what the unbounded grouping returned: each session once, by its first order", async () => {
    const key = crypto.randomUUID();
    await sessionsOf(key, 12, 60); // 12 sessions, 4 of them with two stores: 16 orders
    await sessionsOf(key, 5, 60, 3, 3_700); // older than the hour: not counted
    const read = await readRiskInputs(sql, key, undefined, undefined, nowMs);
    expect(read.recent).toHaveLength(12);
    expect(sorted(read.recent)).toEqual(sorted(await unbounded(key)));
  });

  test("a key with 600 sessions in the hour reads as the limit: the most recently active sessions, every one in the gate's hour", async () => {
    const key = crypto.randomUUID();
    await sessionsOf(key, 600, 5);
    const read = await readRiskInputs(sql, key, undefined, undefined, nowMs);
    expect(read.recent).toHaveLength(VELOCITY_READ_LIMIT);
    expect(read.recent.every((t) => t <= nowMs && nowMs - t < 3_600_000)).toBe(true);
    expect(sorted(read.recent)).toEqual(sorted(await unbounded(key)).slice(-VELOCITY_READ_LIMIT));
  });

  test("orders after the gate's now are not counted, as the gate never counted them", async () => {
    const key = crypto.randomUUID();
    await sessionsOf(key, 40, 5); // 40 sessions in the 200 s before nowMs
    // seen from a clock 102.5 s earlier: the 20 sessions started before it (105 s … 200 s before nowMs)
    const earlier = nowMs - 102_500;
    const read = await readRiskInputs(sql, key, undefined, undefined, earlier);
    expect(read.recent).toHaveLength(20);
    expect(read.recent.every((t) => t <= earlier)).toBe(true);
  });

  test("the plan stops after the limit: one index probe per step on orders_agent_key, however many orders the hour holds (statistics dominated by that key)", async () => {
    const key = crypto.randomUUID();
    await sessionsOf(key, 2_000, 1.5);
    await sql`ANALYZE orders`;
    const plan = (await sql<{ "QUERY PLAN": string }[]>`EXPLAIN (ANALYZE, COSTS OFF) SELECT ${riskColumns(sql, key, nowMs)}`).map((r) => r["QUERY PLAN"]).join("\n");
    expect(plan).toMatch(new RegExp(`Recursive Union \\(actual time=[\\d.]+\\.\\.[\\d.]+ rows=${VELOCITY_READ_LIMIT} loops=1\\)`));
    // each step after the first: one probe of orders_agent_key returning one row
    expect(plan).toMatch(new RegExp(`Index Scan using orders_agent_key on orders orders_\\d+ \\(actual time=[\\d.]+\\.\\.[\\d.]+ rows=1 loops=${VELOCITY_READ_LIMIT - 1}\\)`));
    // never every order of the hour: no scan of the table, no bitmap of the key's orders sorted at each step
    expect(plan).not.toContain("Seq Scan");
    expect(plan).not.toContain("Bitmap Heap Scan");
  });
});
