/**
 * Two trust inputs helper D left (helper C, session 21), through the merchant's order import and the public score.
 *
 * The v2 `dispute_rate` divided disputes by the orders whose fulfilment was decided, not by the window's orders as the
 * spec says ("dispute tickets / total orders"): one dispute among 21 orders of which 3 were decided read 33 % (score 0)
 * instead of 4.8 % (score 0.048).
 *
 * The agent_verified GMV floor (1,000,000: US cents) was compared with a store's GMV in its own currency's minor units:
 * a KRW store passed at ~700 dollars. Now the floor is per currency (USD, EUR, GBP, CHF: 10,000 units); a currency
 * without one degrades the store to agent_verified_thin, as a missing GMV does. No API creates a store in another
 * currency; the test sets one in the database.
 */
import { beforeAll, expect, test } from "bun:test";
import { login, merchantLogin } from "../helpers/agents.ts";
import { useServer } from "../helpers/server.ts";

const srv = useServer({ seed: true, admin: true, config: { RATE_LIMITS_ENABLED: false } });
const FRESH = "fresh-start-studio"; // 2 delivered orders, no dispute
const GREENLEAF = "greenleaf-living"; // 26 agent orders, 87 buyers, GMV 979,166: just under the floor

const auth = (token: string) => ({ authorization: `Bearer ${token}` });
let admin = "";
beforeAll(async () => {
  admin = await login(srv);
}, 60_000);

async function importOrders(slug: string, orders: Record<string, unknown>[]): Promise<void> {
  const owner = await login(srv, merchantLogin(slug));
  const r = await srv.json(`/api/v1/merchant/stores/${slug}/orders`, { method: "POST", headers: auth(owner), body: { orders } });
  expect(r.status).toBe(201);
  expect(r.body.data.accepted).toBe(orders.length);
}
async function recompute(slug: string): Promise<void> {
  const r = await srv.json("/api/v1/admin/trust/recompute", { method: "POST", headers: auth(admin), body: { slug } });
  expect(r.status).toBe(200);
}
const order = (i: number, over: Record<string, unknown>) => ({
  externalId: `c-trust-${i}-${crypto.randomUUID()}`,
  buyer: `buyer-${i}@example.com`,
  status: "delivered",
  currency: "USD",
  items: [{ title: "mug", quantity: 1, unitPrice: 12 }],
  ...over,
});

test("the v2 dispute_rate divides the window's disputes by all its orders, not only those whose fulfilment is decided", async () => {
  // one disputed order (fulfilment decided) and 18 whose fulfilment is not decided yet
  await importOrders(FRESH, [order(0, { fulfilledOnTime: true, disputed: true }), ...Array.from({ length: 18 }, (_, i) => order(i + 1, { fulfilledOnTime: null }))]);
  await recompute(FRESH);
  const [facts] = await srv.db.sql<{ orders: number; decided: number; disputes: number }[]>`
    SELECT (facts->'orders'->>'orders')::int AS orders, (facts->'orders'->>'decided')::int AS decided, (facts->'orders'->>'disputes')::int AS disputes
    FROM trust_current WHERE store_slug = ${FRESH}`;
  expect(facts).toEqual({ orders: 21, decided: 3, disputes: 1 });

  srv.running.services.config.TRUST_SCORE_PUBLIC_COHERENT_ENGINE_ENABLED = false; // the breakdown is v2's 12 components
  try {
    const r = await srv.json(`/api/v1/stores/${FRESH}/trust-score`);
    expect(r.status).toBe(200);
    expect(r.body.data.components.engine).toBe("v2");
    const byName = Object.fromEntries(r.body.data.components.components.map((c: { name: string; value: number }) => [c.name, c.value]));
    expect(byName.dispute_rate).toBeCloseTo(1 - 1 / 21 / 0.05, 6); // 0.047619; by the decided orders it was 0
    expect(byName.fulfillment_rate).toBeCloseTo(3 / 3, 6); // on time among the decided ones, as before
  } finally {
    srv.running.services.config.TRUST_SCORE_PUBLIC_COHERENT_ENGINE_ENABLED = true;
  }
});

test("a store in a currency without a GMV floor is not agent_verified on a GMV of 1,000,000 of its own minor units, while a USD store is", async () => {
  await recompute(GREENLEAF);
  const tier = async () => {
    const r = await srv.json(`/api/v1/stores/${GREENLEAF}/trust-score`);
    expect(r.status).toBe(200);
    return r.body.data.tier as string;
  };
  expect(await tier()).toBe("agent_verified_thin"); // GMV 979,166 cents: below the floor

  // the same store trading in won, with 50,000 won more: 1,029,166 minor units (~700 dollars) is not 10,000 dollars
  await srv.db.sql`UPDATE stores SET currency = 'KRW' WHERE slug = ${GREENLEAF}`;
  await srv.db.sql`UPDATE orders SET currency = 'KRW' WHERE store_slug = ${GREENLEAF}`;
  await importOrders(GREENLEAF, [order(100, { currency: "KRW", items: [{ title: "tea set", quantity: 1, unitPrice: 50_000 }], fulfilledOnTime: true })]);
  await recompute(GREENLEAF);
  const [krw] = await srv.db.sql<{ gmv: number }[]>`SELECT (facts->'orders'->>'gmvMinor')::bigint AS gmv FROM trust_current WHERE store_slug = ${GREENLEAF}`;
  expect(Number(krw!.gmv)).toBeGreaterThanOrEqual(1_000_000);
  expect(await tier()).toBe("agent_verified_thin");

  // in dollars the same minor units are over the floor: agent_verified
  await srv.db.sql`UPDATE stores SET currency = 'USD' WHERE slug = ${GREENLEAF}`;
  await srv.db.sql`UPDATE orders SET currency = 'USD' WHERE store_slug = ${GREENLEAF}`;
  await recompute(GREENLEAF);
  expect(await tier()).toBe("agent_verified");
});
