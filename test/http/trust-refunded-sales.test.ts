/**
 * R4-5 through HTTP against the real service and Postgres (demo seed): a merchant could buy from itself and refund
 * everything, and the fully refunded orders still counted as agent orders, GMV and unique buyers, so the tier's
 * floors (agent_verified: 20 agent orders, GMV >= 1,000,000 cents in 90 days, 20 unique buyers) could be bought back
 * for free. greenleaf-living is agent_verified_thin only for its GMV (993,965 before the fix, 979,166 after: two of its
 * seeded orders were refunded): a few self-orders fully refunded lifted it to agent_verified. Now only sales count toward the tier (GMV = captured − refunded), while the
 * refunds stay evidence for refund health. The SQL rule is checked against the pure `saleOf` on one case table.
 * Review R5: a refund of all but a cent kept the order a sale; now a sale counts only when the merchant kept at least
 * half of its capture (cozy-paws-supply below).
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { loadStoreFacts, saleOf, type OrderMoney } from "../../actors/trust/inputs.ts";
import { ALL_SCOPES, createKey, login, merchantLogin, type TestKey } from "../helpers/agents.ts";
import { startServer, type TestServer } from "../helpers/server.ts";

/**
 * Orders and what each is evidence of (`saleOf`): the pure rule and the query's `refunded`, `sale`, `net_minor` are
 * both checked against this one table, so the two implementations cannot drift apart. A sale is kept when at most
 * half of the capture went back (review R5: a refund of all but a cent kept the order a sale).
 */
const REFUND_EVIDENCE_CASES: { name: string; order: OrderMoney; expected: { refunded: boolean; sale: boolean; netMinor: number } }[] = [
  { name: "paid, nothing refunded", order: { status: "delivered", totalMinor: 5000, capturedMinor: null, refundedMinor: 0 }, expected: { refunded: false, sale: true, netMinor: 5000 } },
  { name: "partly refunded", order: { status: "delivered", totalMinor: 5000, capturedMinor: null, refundedMinor: 1200 }, expected: { refunded: true, sale: true, netMinor: 3800 } },
  { name: "half refunded: still a kept sale", order: { status: "partially_refunded", totalMinor: 5000, capturedMinor: null, refundedMinor: 2500 }, expected: { refunded: true, sale: true, netMinor: 2500 } },
  { name: "a cent more than half refunded: no sale", order: { status: "partially_refunded", totalMinor: 5000, capturedMinor: null, refundedMinor: 2501 }, expected: { refunded: true, sale: false, netMinor: 0 } },
  { name: "refunded all but a cent: no sale", order: { status: "partially_refunded", totalMinor: 5000, capturedMinor: null, refundedMinor: 4999 }, expected: { refunded: true, sale: false, netMinor: 0 } },
  { name: "fully refunded (status refunded)", order: { status: "refunded", totalMinor: 5000, capturedMinor: null, refundedMinor: 5000 }, expected: { refunded: true, sale: false, netMinor: 0 } },
  { name: "whole total refunded, status not moved (imported)", order: { status: "delivered", totalMinor: 5000, capturedMinor: null, refundedMinor: 5000 }, expected: { refunded: true, sale: false, netMinor: 0 } },
  { name: "recorded as refunded with no amount", order: { status: "refunded", totalMinor: 5000, capturedMinor: null, refundedMinor: 0 }, expected: { refunded: true, sale: false, netMinor: 0 } },
  { name: "under-capture refunded in full", order: { status: "paid", totalMinor: 5000, capturedMinor: 4000, refundedMinor: 4000 }, expected: { refunded: true, sale: false, netMinor: 0 } },
  { name: "under-capture, part refunded: net of the capture", order: { status: "paid", totalMinor: 5000, capturedMinor: 4000, refundedMinor: 1000 }, expected: { refunded: true, sale: true, netMinor: 3000 } },
  { name: "under-capture, more than half of the capture refunded (less than half of the total): no sale", order: { status: "paid", totalMinor: 5000, capturedMinor: 4000, refundedMinor: 2100 }, expected: { refunded: true, sale: false, netMinor: 0 } },
  { name: "over-capture, the total refunded: a sixth kept, no sale", order: { status: "paid", totalMinor: 5000, capturedMinor: 6000, refundedMinor: 5000 }, expected: { refunded: true, sale: false, netMinor: 0 } },
  { name: "over-capture, half the capture refunded: a sale worth the rest", order: { status: "paid", totalMinor: 5000, capturedMinor: 6000, refundedMinor: 3000 }, expected: { refunded: true, sale: true, netMinor: 3000 } },
  { name: "free order (total 0), nothing refunded", order: { status: "delivered", totalMinor: 0, capturedMinor: null, refundedMinor: 0 }, expected: { refunded: false, sale: true, netMinor: 0 } },
];

const LEAF = "greenleaf-living";

let srv: TestServer;
let admin: string;
let owner: string;
let key: TestKey;

beforeAll(async () => {
  srv = await startServer({ seed: true, config: { RATE_LIMITS_ENABLED: false } });
  admin = await login(srv);
  owner = await login(srv, merchantLogin(LEAF));
  key = await createKey(srv, { tier: "ENTERPRISE", scopes: ALL_SCOPES, name: "self-buyer" });
}, 120_000);
afterAll(async () => {
  await srv?.stop();
}, 30_000);

const auth = (token: string) => ({ authorization: `Bearer ${token}` });

async function recompute(slug: string): Promise<void> {
  const r = await srv.json("/api/v1/admin/trust/recompute", { method: "POST", headers: auth(admin), body: { slug } });
  expect(r.status).toBe(200);
}

interface Standing {
  tier: string;
  score: number;
  agent: number;
  gmvMinor: number;
  uniqueBuyers: number;
  orders: number;
  refunds: number;
}
async function standing(slug: string): Promise<Standing> {
  await recompute(slug);
  const pub = await srv.json(`/api/v1/stores/${slug}/trust-score`);
  expect(pub.status).toBe(200);
  const [row] = await srv.db.sql<{ facts: { orders: Standing } }[]>`SELECT facts FROM trust_current WHERE store_slug = ${slug}`;
  const o = row!.facts.orders;
  return { tier: pub.body.data.tier, score: pub.body.data.score_0to1, agent: o.agent, gmvMinor: o.gmvMinor, uniqueBuyers: o.uniqueBuyers, orders: o.orders, refunds: o.refunds };
}

async function buy(productId: string, buyer: TestKey = key): Promise<{ orderId: string; totalMinor: number }> {
  const c = await srv.json("/api/v1/agent/cart", { method: "POST", headers: buyer.headers, body: { items: [{ product_id: productId, quantity: 1 }] } });
  expect(c.status).toBe(201);
  const r = await srv.json("/api/v1/agent/checkout", { method: "POST", headers: buyer.headers, body: { cartId: c.body.data.id, payment_method: "tok_approve" } });
  expect(r.status).toBe(200);
  const orderId = r.body.data.order_id as string;
  const [o] = await srv.db.sql<{ total_minor: string }[]>`SELECT total_minor FROM orders WHERE id = ${orderId}`;
  return { orderId, totalMinor: Number(o!.total_minor) };
}

/**
 * The agent (`buyer`) asks for `amount` cents (all when undefined) back, the merchant approves it (the greenleaf owner,
 * or the operator at another store), the rail pays it.
 */
async function refund(orderId: string, amount?: number, buyer: TestKey = key, slug = LEAF): Promise<void> {
  const asked = await srv.json(`/api/v1/agent/orders/${orderId}/refund`, { method: "POST", headers: buyer.headers, body: amount === undefined ? {} : { amount } });
  expect(asked.status).toBe(201);
  const ok = await srv.json(`/api/v1/merchant/stores/${slug}/refunds/${asked.body.data.refund_id}/approve`, { method: "POST", headers: auth(slug === LEAF ? owner : admin) });
  expect(ok.status).toBe(200);
  expect(ok.body.data.status).toBe("REFUNDED");
}

describe("fully refunded self-orders buy no tier (R4-5)", () => {
  test("agent orders worth more than the missing GMV, all refunded in full: tier, GMV, agent orders and buyers unchanged; refunds counted", async () => {
    const before = await standing(LEAF);
    expect(before.tier).toBe("agent_verified_thin");
    expect(before.gmvMinor).toBeLessThan(1_000_000);
    expect(before.agent).toBeGreaterThanOrEqual(20);
    expect(before.uniqueBuyers).toBeGreaterThanOrEqual(20);

    const [p] = await srv.db.sql<{ id: string }[]>`SELECT id FROM products WHERE store_slug = ${LEAF} AND active AND in_stock AND stock_quantity IS NULL
      AND jsonb_array_length(COALESCE(variants, '[]'::jsonb)) = 0 AND price_minor > 0 ORDER BY price_minor DESC, id LIMIT 1`;
    let bought = 0;
    const orders: string[] = [];
    while (orders.length < 5 || before.gmvMinor + bought < 1_000_000 + 10_000) {
      const o = await buy(p!.id);
      orders.push(o.orderId);
      bought += o.totalMinor;
    }
    for (const id of orders) await refund(id);
    const statuses = await srv.db.sql<{ status: string; n: number }[]>`SELECT status, count(*)::int AS n FROM orders WHERE id = ANY(${orders}) GROUP BY status`;
    expect([...statuses]).toEqual([{ status: "refunded", n: orders.length }]);

    const after = await standing(LEAF);
    expect(after).toEqual({ ...before, orders: before.orders + orders.length, refunds: before.refunds + orders.length, score: after.score });
    // More refunds lower refund health: the score may only fall.
    expect(after.score).toBeLessThanOrEqual(before.score);
  }, 120_000);

  test("a partly refunded order is a sale worth what was kept: one agent order, one buyer, GMV + total − refunded", async () => {
    const before = await standing(LEAF);
    const [p] = await srv.db.sql<{ id: string }[]>`SELECT id FROM products WHERE store_slug = ${LEAF} AND active AND in_stock AND stock_quantity IS NULL
      AND jsonb_array_length(COALESCE(variants, '[]'::jsonb)) = 0 AND price_minor > 1000 ORDER BY price_minor, id LIMIT 1`;
    const other = await createKey(srv, { tier: "ENTERPRISE", scopes: ALL_SCOPES, name: "partial-buyer" });
    const saved = key;
    key = other;
    try {
      const o = await buy(p!.id);
      await refund(o.orderId, 500);
      const after = await standing(LEAF);
      expect(after).toMatchObject({
        agent: before.agent + 1,
        uniqueBuyers: before.uniqueBuyers + 1,
        gmvMinor: before.gmvMinor + o.totalMinor - 500,
        orders: before.orders + 1,
        refunds: before.refunds + 1,
      });
    } finally {
      key = saved;
    }
  }, 60_000);
});

describe("a sale counts toward the tier only when the merchant kept at least half of it (review R5)", () => {
  // cozy-paws-supply is human_established with 3 agent sales: two more make the 5 agent_verified_thin needs. Before,
  // two agent orders by two new keys, each refunded all but a cent, bought that tier for two cents.
  const PAWS = "cozy-paws-supply";
  let buyers: TestKey[];
  let before: Standing;
  const cheapestPlainProduct = async () =>
    (
      await srv.db.sql<{ id: string }[]>`SELECT id FROM products WHERE store_slug = ${PAWS} AND active AND in_stock AND stock_quantity IS NULL
        AND jsonb_array_length(COALESCE(variants, '[]'::jsonb)) = 0 AND price_minor >= 100 ORDER BY price_minor, id LIMIT 1`
    )[0]!.id;

  test("two agent orders by two new buyers, each refunded all but a cent: no agent order, buyer or GMV toward the tier, the refunds counted, the tier kept", async () => {
    before = await standing(PAWS);
    expect(before).toMatchObject({ tier: "human_established", agent: 3 });
    const product = await cheapestPlainProduct();
    buyers = [await createKey(srv, { tier: "ENTERPRISE", scopes: ALL_SCOPES, name: "cent-buyer-1" }), await createKey(srv, { tier: "ENTERPRISE", scopes: ALL_SCOPES, name: "cent-buyer-2" })];
    const bought = [];
    for (const b of buyers) bought.push({ buyer: b, ...(await buy(product, b)) });
    for (const o of bought) await refund(o.orderId, o.totalMinor - 1, o.buyer, PAWS);
    const rows = await srv.db.sql<{ status: string; kept: number }[]>`SELECT status, (total_minor - refunded_minor)::int AS kept FROM orders WHERE id = ANY(${bought.map((o) => o.orderId)})`;
    expect([...rows]).toEqual([
      { status: "paid", kept: 1 },
      { status: "paid", kept: 1 },
    ]);
    const after = await standing(PAWS);
    expect(after).toEqual({ ...before, orders: before.orders + 2, refunds: before.refunds + 2, score: after.score });
  }, 120_000);

  test("the same buyers' next orders refunded by half are kept sales: two agent orders, two buyers, GMV + what was kept, agent_verified_thin", async () => {
    const product = await cheapestPlainProduct();
    const bought = [];
    for (const b of buyers) bought.push({ buyer: b, ...(await buy(product, b)) });
    for (const o of bought) await refund(o.orderId, Math.floor(o.totalMinor / 2), o.buyer, PAWS);
    const after = await standing(PAWS);
    expect(after).toEqual({
      tier: "agent_verified_thin",
      score: after.score,
      agent: before.agent + 2,
      gmvMinor: before.gmvMinor + bought.reduce((sum, o) => sum + o.totalMinor - Math.floor(o.totalMinor / 2), 0),
      uniqueBuyers: before.uniqueBuyers + 2,
      orders: before.orders + 4,
      refunds: before.refunds + 4,
    });
  }, 120_000);
});

describe("the query applies saleOf", () => {
  // Each case as one human order of a new buyer at fresh-start-studio: the store's facts move by exactly what the pure
  // rule says the order is evidence of.
  for (const c of REFUND_EVIDENCE_CASES) {
    test(c.name, async () => {
      const slug = "fresh-start-studio";
      const now = Date.now();
      const facts = async () => (await loadStoreFacts(srv.db.sql, [slug], now)).get(slug)!.orders;
      const before = await facts();
      const [store] = await srv.db.sql<{ currency: string }[]>`SELECT currency FROM stores WHERE slug = ${slug}`;
      const o = c.order;
      const [row] = await srv.db.sql<{ id: string }[]>`INSERT INTO orders (store_slug, channel, buyer_ref, status, total_minor, captured_minor, currency,
          payment_rail, fulfilled_on_time, disputed, refunded_minor, created_at, updated_at)
        VALUES (${slug}, 'human', ${`case-${crypto.randomUUID()}`}, ${o.status}, ${o.totalMinor}, ${o.capturedMinor}, ${store!.currency}, 'merchant',
          true, false, ${o.refundedMinor}, now() - interval '1 day', now() - interval '1 day') RETURNING id`;
      try {
        const after = await facts();
        const e = saleOf(o);
        expect(e).toEqual(c.expected);
        expect({
          human: after.human - before.human,
          gmvMinor: after.gmvMinor - before.gmvMinor,
          uniqueBuyers: after.uniqueBuyers - before.uniqueBuyers,
          orders: after.orders - before.orders,
          refunds: after.refunds - before.refunds,
          humanGood: after.humanGood - before.humanGood,
        }).toEqual({ human: e.sale ? 1 : 0, gmvMinor: e.netMinor, uniqueBuyers: e.sale ? 1 : 0, orders: 1, refunds: e.refunded ? 1 : 0, humanGood: e.refunded ? 0 : 1 });
      } finally {
        await srv.db.sql`DELETE FROM orders WHERE id = ${row!.id}`;
      }
    });
  }
});
