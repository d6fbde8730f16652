/**
 * The price-history answer is bounded (audit Q-3). Every catalog write that changes a price adds an observation,
 * with no bound on how many, and the read returned every one of the window as a point (200,000 in 30 days: a
 * 10.5 MB answer; past ~1,000,000 Math.min(...all) overflowed the stack: a 500). Now a window holding more than
 * PRICE_HISTORY_MAX_POINTS (720) observations answers one point per 1/720 of the window, the last observation of that
 * span; lowest and highest stay exact over every observation; a window within the bound answers every observation.
 * The shape is unchanged (REST and MCP get_price_history share the function).
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { PRICE_HISTORY_MAX_POINTS } from "../../actors/store/reads.ts";
import { ALL_SCOPES, createKey, login, merchantLogin, type TestKey } from "../helpers/agents.ts";
import { startServer, type TestServer } from "../helpers/server.ts";

const SLUG = "greenleaf-living";
let srv: TestServer;
let key: TestKey;
let owner: Record<string, string>;

beforeAll(async () => {
  srv = await startServer({ seed: true, config: { RATE_LIMITS_ENABLED: false } });
  key = await createKey(srv, { scopes: ALL_SCOPES, tier: "ENTERPRISE" });
  owner = { authorization: `Bearer ${await login(srv, merchantLogin(SLUG))}` };
}, 60_000);
afterAll(async () => {
  await srv?.stop();
});

/**
 * A product of the store re-priced by `n` catalog writes (21, 20, 21, …); its id. With `hourly`, the rows written so
 * far are moved an hour back before each write, as if the writes were an hour apart: writes within one hour fold into
 * one row (migration 0098; test/http/price-history-storage.test.ts).
 */
async function repriced(externalId: string, n: number, hourly = false): Promise<string> {
  let id = "";
  for (let i = 0; i < n; i++) {
    if (hourly && id) await srv.db.sql`UPDATE product_price_history SET recorded_at = recorded_at - interval '1 hour' WHERE product_id = ${id}`;
    const r = await srv.json(`/api/v1/merchant/stores/${SLUG}/catalog`, {
      method: "PUT",
      headers: owner,
      body: { products: [{ externalId, title: `Planter ${externalId}`, price: i % 2 ? 20 : 21, currency: "USD", stockQuantity: 4 }] },
    });
    expect(r.status).toBe(200);
    id = r.body.data.upserted[0].id;
  }
  return id;
}

const history = (id: string, days = 30) => srv.json(`/api/v1/agent/products/${id}/price-history?days=${days}`, { headers: key.headers });

describe("price history", () => {
  test("answers every observation of a window within the bound", async () => {
    const id = await repriced("GL-PH-SMALL", 6, true);
    const r = await history(id);
    expect(r.status).toBe(200);
    expect(r.body.data.points.map((p: { price: number }) => p.price)).toEqual([21, 20, 21, 20, 21, 20]);
    expect(r.body.data).toMatchObject({ currency: "USD", currentPrice: 20, openingPrice: 21, lowestPrice: 20, highestPrice: 21 });
  }, 30_000);

  test("answers at most one point per 1/720 of the window when re-pricing wrote more, with exact lowest and highest", async () => {
    const id = await repriced("GL-PH-MANY", 2);
    // 3,000 more observations within the 30 days (one every 860 s: the oldest after the window's start, which is on the
    // hour grid, up to an hour later than 30 days ago), stand-ins for the rows the writes above add, and
    // a low (1.00) and a high (99.00) one, each a millisecond before one of them: not the last of its span
    await srv.db.sql`INSERT INTO product_price_history (product_id, price_minor, currency, recorded_at)
      SELECT ${id}::uuid, 2000 + (g % 2) * 100, 'USD', now() - interval '1 hour' - (g * 860 || ' seconds')::interval
      FROM generate_series(1, 3000) g
      UNION ALL SELECT ${id}::uuid, 100, 'USD', now() - interval '1 hour' - make_interval(secs => 1500 * 860) - interval '1 millisecond'
      UNION ALL SELECT ${id}::uuid, 9900, 'USD', now() - interval '1 hour' - make_interval(secs => 2000 * 860) - interval '1 millisecond'`;
    const r = await history(id);
    expect(r.status).toBe(200);
    const points = r.body.data.points as { price: number; recordedAt: string }[];
    expect(points.length).toBeLessThanOrEqual(PRICE_HISTORY_MAX_POINTS);
    expect(points.length).toBeGreaterThan(PRICE_HISTORY_MAX_POINTS - 10);
    const times = points.map((p) => p.recordedAt);
    expect([...times].sort()).toEqual(times);
    expect(new Set(times).size).toBe(times.length);
    expect(points.some((p) => p.price === 1 || p.price === 99)).toBe(false);
    // the first observation of the window opens it (nothing before it); the spikes count
    expect(r.body.data).toMatchObject({ currentPrice: 20, openingPrice: 20, lowestPrice: 1, highestPrice: 99 });
    // the newest point is the latest observation: the last catalog write's
    expect(points.at(-1)!.price).toBe(20);
  }, 30_000);
});
