/**
 * Price-history storage is bounded per product (review Session 14 "Search and reads (P)"; migration 0098). Every
 * catalog write that changed a price added a row and nothing ever deleted one, so a merchant re-pricing a product
 * without end grew its rows, and its reads' cost, without bound. Now a write folds into the product's row of the same
 * hour and currency (the finest span a read answers), keeping that hour's lowest, highest and first price, and the
 * retention job deletes rows older than the longest window (90 days) and a day, except each product's last one
 * before that cut (the price a 90-day window opens at). Answers are exact at the read's grain: the window starts on
 * its span's grid, so an hour's row lies wholly inside it or before it.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { PRICE_HISTORY_LONGEST_DAYS } from "../../actors/store/reads.ts";
import { PRICE_HISTORY_DAYS } from "../../gateway/rest/products.ts";
import { DELETE_STATEMENTS, runRetention, type RetentionSettings } from "../../infra/retention.ts";
import { ALL_SCOPES, createKey, login, merchantLogin, type TestKey } from "../helpers/agents.ts";
import { startServer, type TestServer } from "../helpers/server.ts";

const SLUG = "greenleaf-living";
const DAY = 86_400_000;
const SETTINGS: RetentionSettings = {
  RETENTION_BATCH: 2,
  RETENTION_OAUTH_GRACE_DAYS: 1,
  RETENTION_CART_GRACE_DAYS: 7,
  RETENTION_WEBHOOK_EVENT_DAYS: 30,
};
let srv: TestServer;
let key: TestKey;
let owner: Record<string, string>;

beforeAll(async () => {
  srv = await startServer({ seed: true, config: { RATE_LIMITS_ENABLED: false, RETENTION_INTERVAL_MS: 0 } });
  key = await createKey(srv, { scopes: ALL_SCOPES, tier: "ENTERPRISE" });
  owner = { authorization: `Bearer ${await login(srv, merchantLogin(SLUG))}` };
}, 60_000);
afterAll(async () => {
  await srv?.stop();
});

/** Waits out the last 20 s of a `seconds` grid step of the database's clock, so the writes that follow share a step. */
async function awayFromStepEnd(seconds = 3600): Promise<void> {
  const [r] = await srv.db.sql<{ left: number }[]>`SELECT ${seconds}::float8 - mod(date_part('epoch', clock_timestamp())::numeric, ${seconds})::float8 AS left`;
  if (r!.left < 20) await Bun.sleep(r!.left * 1000 + 500);
}

/** One catalog write of one product at `price` in `currency`; the product's id. */
async function put(externalId: string, price: number, currency = "USD"): Promise<string> {
  const r = await srv.json(`/api/v1/merchant/stores/${SLUG}/catalog`, {
    method: "PUT",
    headers: owner,
    body: { products: [{ externalId, title: `Planter ${externalId}`, price, currency, stockQuantity: 4 }] },
  });
  expect(r.status).toBe(200);
  return r.body.data.upserted[0].id;
}

const rowsOf = (id: string) =>
  srv.db.sql<{ price_minor: string; currency: string; lo_minor: string | null; hi_minor: string | null; first_minor: string | null }[]>`
    SELECT price_minor::text, currency, lo_minor::text, hi_minor::text, first_minor::text FROM product_price_history
    WHERE product_id = ${id} ORDER BY recorded_at, id`;
const history = (id: string, days = 30) => srv.json(`/api/v1/agent/products/${id}/price-history?days=${days}`, { headers: key.headers });

describe("price-history writes", () => {
  test("forty re-pricings within an hour keep one row, answering the hour's last price with exact opening, lowest and highest", async () => {
    await awayFromStepEnd();
    const prices = [21, ...Array.from({ length: 38 }, (_, i) => (i === 10 ? 5 : i === 20 ? 99 : 30 + (i % 3))), 20];
    let id = "";
    for (const p of prices) id = await put("GL-PHS-FOLD", p);
    expect([...(await rowsOf(id))]).toEqual([{ price_minor: "2000", currency: "USD", lo_minor: "500", hi_minor: "9900", first_minor: "2100" }]);
    for (const days of PRICE_HISTORY_DAYS) {
      const r = await history(id, days);
      expect(r.status).toBe(200);
      expect(r.body.data).toMatchObject({ currentPrice: 20, openingPrice: 21, lowestPrice: 5, highestPrice: 99, trend: "falling" });
      expect(r.body.data.points.map((p: { price: number }) => p.price)).toEqual([20]);
    }
  }, 60_000);

  test("re-pricings that switch currency within an hour keep one row per currency, each with its own lowest and highest", async () => {
    await awayFromStepEnd();
    let id = "";
    for (const [p, c] of [[21, "USD"], [30, "EUR"], [25, "USD"], [31, "EUR"], [22, "USD"], [29, "EUR"], [23, "USD"]] as const) id = await put("GL-PHS-CUR", p, c);
    expect((await rowsOf(id)).map((r) => [r.currency, r.price_minor, r.lo_minor, r.hi_minor, r.first_minor])).toEqual([
      ["EUR", "2900", "2900", "3100", "3000"],
      ["USD", "2300", "2100", "2500", "2100"],
    ]);
    const r = await history(id);
    expect(r.status).toBe(200);
    // the opening is the window's first USD observation (no row precedes the window); EUR's prices are not USD's
    expect(r.body.data).toMatchObject({ currency: "USD", currentPrice: 23, openingPrice: 21, lowestPrice: 21, highestPrice: 25 });
    expect(r.body.data.points.map((p: { price: number }) => p.price)).toEqual([23]);
  }, 60_000);

  test("a re-pricing in a later hour starts a row and leaves the earlier hour's as it was", async () => {
    await awayFromStepEnd();
    const id = await put("GL-PHS-HOURS", 40);
    await put("GL-PHS-HOURS", 44);
    // the hour's row as if written two hours ago
    await srv.db.sql`UPDATE product_price_history SET recorded_at = recorded_at - interval '2 hours' WHERE product_id = ${id}`;
    await put("GL-PHS-HOURS", 42);
    await put("GL-PHS-HOURS", 41);
    expect([...(await rowsOf(id))]).toEqual([
      { price_minor: "4400", currency: "USD", lo_minor: "4000", hi_minor: "4400", first_minor: "4000" },
      { price_minor: "4100", currency: "USD", lo_minor: "4100", hi_minor: "4200", first_minor: "4200" },
    ]);
    const r = await history(id);
    expect(r.body.data).toMatchObject({ currentPrice: 41, openingPrice: 40, lowestPrice: 40, highestPrice: 44 });
    expect(r.body.data.points.map((p: { price: number }) => p.price)).toEqual([44, 41]);
  }, 60_000);
});

describe("price-history reads", () => {
  test("a window starts on its span's grid: an hour before it counts only as the opening, an hour inside it wholly", async () => {
    await awayFromStepEnd(3 * 3600);
    const id = await put("GL-PHS-GRID", 50);
    await srv.db.sql`DELETE FROM product_price_history WHERE product_id = ${id}`;
    // the 90-day window's start as the read computes it: 90 days ago, rounded up to the 3-hour grid
    const span = 3 * 3600 * 1000;
    const since = Math.ceil((Date.now() - 90 * DAY) / span) * span;
    await srv.db.sql`INSERT INTO product_price_history (product_id, price_minor, currency, recorded_at, lo_minor, hi_minor, first_minor) VALUES
      (${id}, 3000, 'USD', ${new Date(since - 10 * 60_000)}, 200, 9000, 3500),
      (${id}, 4500, 'USD', ${new Date(since + 10 * 60_000)}, 4000, 6000, 4800),
      (${id}, 5000, 'USD', now() - interval '1 day', NULL, NULL, NULL)`;
    const r = await history(id, 90);
    expect(r.status).toBe(200);
    // the row before the window opens it at its hour's last price (30); its hour's 2 and 90 are not the window's
    expect(r.body.data).toMatchObject({ currentPrice: 50, openingPrice: 30, lowestPrice: 30, highestPrice: 60, trend: "rising" });
    expect(r.body.data.points.map((p: { price: number }) => p.price)).toEqual([45, 50]);
  }, 60_000);
});

describe("price-history retention", () => {
  test("keeps the longest window a read answers", () => {
    expect(Math.max(...PRICE_HISTORY_DAYS)).toBe(PRICE_HISTORY_LONGEST_DAYS);
  });

  test("deletes rows older than 90 days and a day except each product's last one before the cut, and no answer changes", async () => {
    const a = await put("GL-PHS-OLD-A", 15);
    const b = await put("GL-PHS-OLD-B", 9);
    await srv.db.sql`DELETE FROM product_price_history WHERE product_id IN (${a}, ${b})`;
    await srv.db.sql`INSERT INTO product_price_history (product_id, price_minor, currency, recorded_at)
      SELECT ${a}::uuid, 1000 + d, 'USD', now() - make_interval(days => d) FROM unnest(ARRAY[400, 200, 150, 120, 100, 92, 50, 0]) d
      UNION ALL SELECT ${b}::uuid, 900, 'USD', now() - interval '300 days'`;
    const answers = async () => Promise.all([a, b].flatMap((id) => PRICE_HISTORY_DAYS.map(async (d) => (await history(id, d)).body)));
    const before = await answers();
    const deleted = await runRetention(srv.db.sql, SETTINGS, Date.now());
    expect(deleted.product_price_history).toBeGreaterThanOrEqual(5);
    const days = async (id: string) =>
      (await srv.db.sql<{ d: number }[]>`SELECT round(date_part('epoch', now() - recorded_at) / 86400)::int AS d FROM product_price_history WHERE product_id = ${id} ORDER BY recorded_at`).map((r) => r.d);
    // 92 days old is the last before the cut (91 days ago): the 90-day window opens at it
    expect(await days(a)).toEqual([92, 50, 0]);
    // a product never re-priced keeps its only row, however old
    expect(await days(b)).toEqual([300]);
    expect(await answers()).toEqual(before);
    expect((await history(a, 90)).body.data).toMatchObject({ openingPrice: 10.92 });
    expect((await runRetention(srv.db.sql, SETTINGS, Date.now())).product_price_history).toBe(0);
  }, 60_000);

  test("walks rows written at the same instant in id order, batch after batch, and keeps each product's last", async () => {
    // one catalog write stamps all its rows with one time: four products re-priced together, three times long ago
    const ids = await Promise.all(["GL-PHS-TIE-1", "GL-PHS-TIE-2", "GL-PHS-TIE-3", "GL-PHS-TIE-4"].map((x) => put(x, 7)));
    await srv.db.sql`DELETE FROM product_price_history WHERE product_id = ANY(${ids}::uuid[])`;
    await srv.db.sql`INSERT INTO product_price_history (product_id, price_minor, currency, recorded_at)
      SELECT p, 700 + d, 'USD', date_trunc('day', now()) - make_interval(days => d) FROM unnest(${ids}::uuid[]) p, unnest(ARRAY[200, 150, 95]) d`;
    await runRetention(srv.db.sql, { ...SETTINGS, RETENTION_BATCH: 3 }, Date.now());
    const left = await srv.db.sql<{ n: number; price: string }[]>`SELECT count(*)::int AS n, min(price_minor)::text AS price FROM product_price_history
      WHERE product_id = ANY(${ids}::uuid[]) GROUP BY product_id`;
    expect([...left]).toEqual(ids.map(() => ({ n: 1, price: "795" })));
  }, 60_000);

  test("a run's scan reads only rows older than the cut, however many recent rows there are", async () => {
    const id = await put("GL-PHS-SCAN", 12);
    await srv.db.sql`INSERT INTO product_price_history (product_id, price_minor, currency, recorded_at)
      SELECT ${id}::uuid, 1000 + g, 'USD', now() - make_interval(hours => g) FROM generate_series(1, 2000) g`;
    const [{ old }] = await srv.db.sql<{ old: number }[]>`SELECT count(*)::int AS old FROM product_price_history WHERE recorded_at < now() - interval '91 days'`;
    // the rows the earlier tests' runs deleted leave the index with the vacuum (a bitmap scan counts dead entries)
    await srv.db.sql`VACUUM product_price_history`;
    const walked: { rows: number; loops: number }[] = [];
    const rollback = new Error("rollback");
    await srv.db.sql
      .begin(async (tx) => {
        // as on a table of real size (this one is small enough for a sequential scan); JIT off: the huge costs
        await tx`SET LOCAL enable_seqscan = off`;
        await tx`SET LOCAL jit = off`;
        type Node = { "Index Name"?: string; "Actual Rows": number; "Actual Loops": number; Plans?: Node[] };
        const [row] = await tx<{ "QUERY PLAN": { Plan: Node }[] }[]>`EXPLAIN (ANALYZE, FORMAT JSON) ${DELETE_STATEMENTS.product_price_history(srv.db.sql, SETTINGS, Date.now(), 1000)}`;
        const visit = (n: Node) => {
          if (n["Index Name"] === "product_price_history_time") walked.push({ rows: n["Actual Rows"], loops: n["Actual Loops"] });
          for (const c of n.Plans ?? []) visit(c);
        };
        visit(row!["QUERY PLAN"][0]!.Plan);
        throw rollback;
      })
      .catch((e: unknown) => {
        if (e !== rollback) throw e;
      });
    // the scan of old rows, and on a table this small the planner may also probe for later rows through the index,
    // once per old row (CI at 194c6df: 19 rows over the loops for 6 old rows): each pass reads old rows only, never
    // the 2,000 recent ones
    expect(walked.length).toBeGreaterThan(0);
    expect(walked[0]!.rows * walked[0]!.loops).toBe(Math.min(old, 1000));
    for (const w of walked) expect(w.rows).toBeLessThanOrEqual(old);
  }, 60_000);
});
