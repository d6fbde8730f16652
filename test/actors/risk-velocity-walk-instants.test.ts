/**
 * The velocity read (actors/store/commerce.ts `riskColumns`, `risk_recent`) returns, for each session it walked, the
 * instant the walk found it at, instead of looking each session's first order up afterwards (30 probes of
 * orders_checkout_session_store, about a third of the read's buffers: docs/performance.md session 13). The gate only
 * counts the times inside its hour (risk-gate.ts `countWithin`), and the walk only visits instants inside that hour,
 * so the count, and every decision and message built on it, is the one the first-order times gave. These tests hold
 * sessions whose orders lie at several instants, some starting before the hour, where the two kinds of time differ.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { countWithin, evaluateRisk, VELOCITY_READ_LIMIT, VELOCITY_WINDOW_MS } from "../../actors/payments/risk-gate.ts";
import { readRiskInputs, riskColumns, VELOCITY_READ_ORDERS } from "../../actors/store/commerce.ts";
import type { Sql } from "../../infra/db.ts";
import { createTestDatabase, type TestDatabase } from "../helpers/db.ts";

let db: TestDatabase;
let sql: Sql;
let stores: string[];
let nowMs: number;

beforeAll(async () => {
  db = await createTestDatabase({ seeded: true });
  sql = db.sql;
  stores = (await sql<{ slug: string }[]>`SELECT slug FROM stores ORDER BY slug LIMIT 4`).map((r) => r.slug);
  nowMs = (await sql<{ t: number }[]>`SELECT (extract(epoch FROM now()) * 1000)::float8 AS t`)[0]!.t;
}, 60_000);
afterAll(async () => {
  await db?.drop();
});

/**
 * `sessions` sessions of `key`, the g-th with a first store's order `g * spacingSec` seconds before `nowMs`; every
 * other one pays a second store's leg `laterSec` seconds after its first (a multi-store session paid in two turns),
 * every third a third store's leg at the first one's instant. With `startsBeforeHour` the first leg of every fourth
 * session lies before the hour, only its later leg inside it.
 */
async function staggeredSessions(key: string, sessions: number, spacingSec: number, laterSec: number, startsBeforeHour = false): Promise<void> {
  const [first, second, third] = stores as [string, string, string];
  await sql`INSERT INTO orders (store_slug, channel, agent_key_id, buyer_ref, status, total_minor, currency, payment_rail, checkout_session_id, created_at)
    SELECT leg.store, 'agent', ${key}::uuid, 'b', 'paid', 100, 'USD', 'card', 'cs_' || ${key} || '_' || g,
      to_timestamp(${nowMs / 1000}) - make_interval(secs => g * ${spacingSec}::float8
        + CASE WHEN ${startsBeforeHour} AND g % 4 = 0 THEN 3700 ELSE 0 END - leg.after)
    FROM generate_series(1, ${sessions}) g,
      LATERAL (VALUES (${first}, 0::float8, true), (${second}, ${laterSec}::float8 + CASE WHEN ${startsBeforeHour} AND g % 4 = 0 THEN 3700 ELSE 0 END, g % 2 = 0), (${third}, 0::float8, g % 3 = 0)) leg (store, after, placed)
    WHERE leg.placed`;
}

/** The sessions of the key with an order in the gate's hour, counted by grouping them all (the read before any bound). */
async function unboundedCount(key: string, now: number): Promise<number> {
  const [r] = await sql<{ n: number }[]>`SELECT count(DISTINCT checkout_session_id)::int AS n FROM orders
    WHERE agent_key_id = ${key}::uuid AND checkout_session_id IS NOT NULL AND created_at > to_timestamp(${(now - VELOCITY_WINDOW_MS) / 1000})
      AND created_at <= to_timestamp(${now / 1000})`;
  return r!.n;
}

const decision = (recent: readonly number[], now: number) =>
  evaluateRisk({ amountMinor: 1_000, currency: "USD", now, keyCreatedAt: 0, recentCheckoutTimes: recent }, "enforce");

describe("the velocity read's times", () => {
  for (const [sessions, label] of [[9, "9 sessions"], [10, "10 sessions"], [29, "29 sessions"], [30, "30 sessions"], [200, "200 sessions"]] as const) {
    test(`with ${label} paid in several turns, some begun before the hour, the gate counts what grouping every order counted and decides the same`, async () => {
      const key = crypto.randomUUID();
      await staggeredSessions(key, sessions, 20, 7, true);
      const read = await readRiskInputs(sql, key, undefined, undefined, nowMs);
      const expected = Math.min(await unboundedCount(key, nowMs), VELOCITY_READ_LIMIT);
      expect(read.recent).toHaveLength(expected);
      // every time returned is one the gate counts: inside (now − 1 h, now]
      expect(countWithin(read.recent, nowMs, VELOCITY_WINDOW_MS)).toBe(expected);
      // the decision and messages the same count of first-order times gave (capped at the limit as the read is)
      const sameAsFull = decision(Array.from({ length: expected }, () => nowMs - 1_000), nowMs);
      const got = decision(read.recent, nowMs);
      expect(got.decision).toBe(sameAsFull.decision);
      expect(got.signals).toEqual(sameAsFull.signals);
    });
  }

  test("seen from an earlier clock, a session whose later leg lies after that clock counts by the leg inside the hour", async () => {
    const key = crypto.randomUUID();
    await staggeredSessions(key, 40, 5, 60);
    const earlier = nowMs - 102_500;
    const read = await readRiskInputs(sql, key, undefined, undefined, earlier);
    expect(read.recent).toHaveLength(Math.min(await unboundedCount(key, earlier), VELOCITY_READ_LIMIT));
    expect(read.recent.every((t) => t <= earlier && earlier - t < VELOCITY_WINDOW_MS)).toBe(true);
  });

  test("the read looks no session up by its id: the walk's own probes of orders_agent_key and nothing else", async () => {
    const key = crypto.randomUUID();
    await staggeredSessions(key, 2_000, 1.5, 0.5);
    await sql`ANALYZE orders`;
    const plan = (await sql<{ "QUERY PLAN": string }[]>`EXPLAIN (ANALYZE, COSTS OFF) SELECT ${riskColumns(sql, key, nowMs)}`).map((r) => r["QUERY PLAN"]).join("\n");
    expect(plan).not.toContain("orders_checkout_session_store");
    expect(plan).not.toContain("Seq Scan");
    expect(plan).not.toContain("Bitmap Heap Scan");
    const read = await readRiskInputs(sql, key, undefined, undefined, nowMs);
    expect(read.recent).toHaveLength(VELOCITY_READ_LIMIT);
  });
});

/**
 * `sessions` sessions of `key` with `legs` orders each (one per store, each at its own instant, the legs 10 ms apart),
 * session g starting `g * spacingSec` seconds before `nowMs`.
 */
async function legsApart(key: string, sessions: number, legs: number, spacingSec: number): Promise<void> {
  await sql`INSERT INTO orders (store_slug, channel, agent_key_id, buyer_ref, status, total_minor, currency, payment_rail, checkout_session_id, created_at)
    SELECT (${stores}::text[])[l], 'agent', ${key}::uuid, 'b', 'paid', 100, 'USD', 'card', 'cs_' || ${key} || '_' || g,
      to_timestamp(${nowMs / 1000}) - make_interval(secs => g * ${spacingSec}::float8 - l * 0.01)
    FROM generate_series(1, ${sessions}) g, generate_series(1, ${legs}) l`;
}

describe("the read of a key with few orders in the hour", () => {
  test("a key with fewer orders in the hour than the read groups is answered by grouping them, without walking", async () => {
    const key = crypto.randomUUID();
    await staggeredSessions(key, 40, 60, 7, true); // 40 sessions over 40 min, some multi-store, some begun before the hour
    await sql`ANALYZE orders`;
    const plan = (await sql<{ "QUERY PLAN": string }[]>`EXPLAIN (ANALYZE, COSTS OFF) SELECT ${riskColumns(sql, key, nowMs)}`).map((r) => r["QUERY PLAN"]).join("\n");
    expect(plan).toMatch(/Recursive Union \(never executed\)/);
    const read = await readRiskInputs(sql, key, undefined, undefined, nowMs);
    expect(read.recent).toHaveLength(Math.min(await unboundedCount(key, nowMs), VELOCITY_READ_LIMIT));
    expect(countWithin(read.recent, nowMs, VELOCITY_WINDOW_MS)).toBe(read.recent.length);
  });

  for (const [sessions, legs, label] of [
    [VELOCITY_READ_ORDERS / 4 - 1, 4, "one session fewer than fills the grouped orders (grouped)"],
    [VELOCITY_READ_ORDERS / 4, 4, "exactly the grouped orders, fewer than 30 sessions (walked)"],
    [VELOCITY_READ_ORDERS / 4 + 3, 4, "more orders than it groups, fewer than 30 sessions (walked)"],
    [Math.ceil(VELOCITY_READ_ORDERS / 3), 3, "sessions of three legs, just past the grouped orders (walked to 30)"],
    [Math.floor((VELOCITY_READ_ORDERS - 1) / 3), 3, "sessions of three legs, just under the grouped orders (grouped, 30 of 33)"],
  ] as const) {
    test(`at the grouped orders' edge, ${label}: the gate counts what grouping every order counted`, async () => {
      const key = crypto.randomUUID();
      await legsApart(key, sessions, legs, 30);
      const read = await readRiskInputs(sql, key, undefined, undefined, nowMs);
      const expected = Math.min(await unboundedCount(key, nowMs), VELOCITY_READ_LIMIT);
      expect(read.recent).toHaveLength(expected);
      expect(countWithin(read.recent, nowMs, VELOCITY_WINDOW_MS)).toBe(expected);
    });
  }
});
