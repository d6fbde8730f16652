/**
 * The risk gate's velocity rules through HTTP, with the velocity read bounded (actors/store/commerce.ts `riskColumns`
 * reads at most VELOCITY_READ_LIMIT sessions): ten checkout sessions of the key in the last hour step the next
 * checkout up, thirty block it, a multi-store session counts once, and a key far past thirty is blocked "at least 30".
 * The key's earlier sessions are written as order rows (in enforce mode the 11th to 30th checkouts would be stepped up
 * and leave no order).
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { ALL_SCOPES, createKey, type TestKey } from "../helpers/agents.ts";
import { startServer, type TestServer } from "../helpers/server.ts";

const BOARD = "5befd987-79cd-540c-8a5d-2ba5a30aed41"; // DS-0011, 26.95, untracked stock

let srv: TestServer;
let stores: string[];
beforeAll(async () => {
  srv = await startServer({ seed: true, config: { SPEC005_KYAI_GATE_MODE: "enforce", RATE_LIMITS_ENABLED: false } });
  stores = (await srv.db.sql<{ slug: string }[]>`SELECT slug FROM stores ORDER BY slug LIMIT 2`).map((r) => r.slug);
}, 120_000);
afterAll(async () => {
  await srv?.stop();
});

/** `sessions` earlier checkout sessions of the key within the last hour; every other one paid two stores. */
async function earlierSessions(key: TestKey, sessions: number): Promise<void> {
  await srv.db.sql`INSERT INTO orders (store_slug, channel, agent_key_id, buyer_ref, status, total_minor, currency, payment_rail, checkout_session_id, created_at)
    SELECT st, 'agent', ${key.id}::uuid, 'b', 'paid', 100, 'USD', 'card', 'cs_earlier_' || ${key.id} || '_' || g, now() - g * interval '1 minute'
    FROM generate_series(1, ${sessions}) g, unnest(${stores}::text[]) st WHERE st = ${stores[0]!} OR g % 2 = 0`;
}

async function checkoutAs(key: TestKey) {
  const cart = await srv.json("/api/v1/agent/cart", { method: "POST", headers: key.headers, body: { items: [{ product_id: BOARD, quantity: 1 }] } });
  return srv.json("/api/v1/agent/checkout", { method: "POST", headers: key.headers, body: { cartId: cart.body.data.id, payment_method: "MOCK" } });
}

describe("the velocity rules with the bounded read", () => {
  test("nine earlier sessions let the checkout through", async () => {
    const key = await createKey(srv, { scopes: ALL_SCOPES });
    await earlierSessions(key, 9); // 13 orders
    expect((await checkoutAs(key)).status).toBe(200);
  });

  test("ten earlier sessions, five of them multi-store (15 orders), step the checkout up counting ten", async () => {
    const key = await createKey(srv, { scopes: ALL_SCOPES });
    await earlierSessions(key, 10);
    const r = await checkoutAs(key);
    expect(r.status).toBe(202);
    expect(r.body).toMatchObject({ code: "user_action_required", details: { rule_codes: ["VELOCITY_STEP_UP"] } });
    expect(r.body.details.signals).toEqual([{ rule_code: "VELOCITY_STEP_UP", decision: "step_up", message: "10 checkouts by this key in the last hour" }]);
  });

  test("twenty-nine earlier sessions (43 orders) still step up, not block: sessions are counted, not orders", async () => {
    const key = await createKey(srv, { scopes: ALL_SCOPES });
    await earlierSessions(key, 29);
    const r = await checkoutAs(key);
    expect(r.status).toBe(202);
    expect(r.body.details.signals).toEqual([{ rule_code: "VELOCITY_STEP_UP", decision: "step_up", message: "29 checkouts by this key in the last hour" }]);
  });

  test("thirty earlier sessions block the checkout, and so do 500, both reported as at least 30", async () => {
    for (const sessions of [30, 500]) {
      const key = await createKey(srv, { scopes: ALL_SCOPES });
      await earlierSessions(key, sessions);
      const r = await checkoutAs(key);
      expect(r.status).toBe(403);
      expect(r.body).toMatchObject({ code: "policy_blocked", details: { rule_code: "VELOCITY_BLOCK" } });
      expect(r.body.details.signals).toEqual([{ rule_code: "VELOCITY_BLOCK", decision: "block", message: "at least 30 checkouts by this key in the last hour" }]);
      const orders = await srv.db.sql`SELECT count(*)::int AS n FROM orders WHERE agent_key_id = ${key.id}::uuid AND checkout_session_id NOT LIKE 'cs_earlier_%'`;
      expect(orders[0]!.n).toBe(0);
    }
  });
});
