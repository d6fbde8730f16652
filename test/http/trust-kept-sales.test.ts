/**
 * Review R5 (docs/review.md "Known and left"): a refund of all but a cent kept an order a sale toward the trust tier.
 * R4-5 took out only orders refunded in full, so a merchant buying from itself could still lift its tier for a cent
 * an order: cozy-paws-supply (human_established, 3 agent sales) bought two agent orders, refunded each but one cent,
 * and became agent_verified_thin. Now an order counts toward the tier's order counts, unique buyers and GMV only when
 * the merchant kept at least half of its capture (`saleMaxRefundedShare`, docs/trust.md), while the refunds stay
 * evidence for refund health. Against the real service and Postgres (demo seed).
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { ALL_SCOPES, createKey, login, merchantLogin, type TestKey } from "../helpers/agents.ts";
import { startServer, type TestServer } from "../helpers/server.ts";

const PAWS = "cozy-paws-supply";

let srv: TestServer;
let admin: string;
let owner: string;

beforeAll(async () => {
  srv = await startServer({ seed: true, config: { RATE_LIMITS_ENABLED: false } });
  admin = await login(srv);
  owner = await login(srv, merchantLogin(PAWS));
}, 120_000);
afterAll(async () => {
  await srv?.stop();
}, 30_000);

const auth = (token: string) => ({ authorization: `Bearer ${token}` });

interface Standing {
  tier: string;
  agent: number;
  gmvMinor: number;
  uniqueBuyers: number;
  orders: number;
  refunds: number;
}

async function standing(): Promise<Standing> {
  const r = await srv.json("/api/v1/admin/trust/recompute", { method: "POST", headers: auth(admin), body: { slug: PAWS } });
  expect(r.status).toBe(200);
  const pub = await srv.json(`/api/v1/stores/${PAWS}/trust-score`);
  expect(pub.status).toBe(200);
  const [row] = await srv.db.sql<{ facts: { orders: Standing } }[]>`SELECT facts FROM trust_current WHERE store_slug = ${PAWS}`;
  const o = row!.facts.orders;
  return { tier: pub.body.data.tier, agent: o.agent, gmvMinor: o.gmvMinor, uniqueBuyers: o.uniqueBuyers, orders: o.orders, refunds: o.refunds };
}

async function buy(key: TestKey, productId: string): Promise<{ orderId: string; totalMinor: number }> {
  const c = await srv.json("/api/v1/agent/cart", { method: "POST", headers: key.headers, body: { items: [{ product_id: productId, quantity: 1 }] } });
  expect(c.status).toBe(201);
  const r = await srv.json("/api/v1/agent/checkout", { method: "POST", headers: key.headers, body: { cartId: c.body.data.id, payment_method: "tok_approve" } });
  expect(r.status).toBe(200);
  const orderId = r.body.data.order_id as string;
  const [o] = await srv.db.sql<{ total_minor: string }[]>`SELECT total_minor FROM orders WHERE id = ${orderId}`;
  return { orderId, totalMinor: Number(o!.total_minor) };
}

/** The agent asks for `amount` cents back, the store's owner approves it, the rail pays it. */
async function refund(key: TestKey, orderId: string, amount: number): Promise<void> {
  const asked = await srv.json(`/api/v1/agent/orders/${orderId}/refund`, { method: "POST", headers: key.headers, body: { amount } });
  expect(asked.status).toBe(201);
  const ok = await srv.json(`/api/v1/merchant/stores/${PAWS}/refunds/${asked.body.data.refund_id}/approve`, { method: "POST", headers: auth(owner) });
  expect(ok.status).toBe(200);
  expect(ok.body.data.status).toBe("REFUNDED");
}

async function cheapestPlainProduct(): Promise<string> {
  const [p] = await srv.db.sql<{ id: string }[]>`SELECT id FROM products WHERE store_slug = ${PAWS} AND active AND in_stock AND stock_quantity IS NULL
    AND jsonb_array_length(COALESCE(variants, '[]'::jsonb)) = 0 AND price_minor >= 100 ORDER BY price_minor, id LIMIT 1`;
  return p!.id;
}

let keys: TestKey[];
let before: Standing;

describe("a kept sale is one the merchant kept at least half of", () => {
  test("two agent orders by two new buyers, each refunded all but a cent: no agent order, buyer or GMV toward the tier, the refunds counted, the tier kept", async () => {
    before = await standing();
    expect(before.tier).toBe("human_established");
    // Two more agent sales would make the 5 agent_verified_thin needs.
    expect(before.agent).toBe(3);
    const product = await cheapestPlainProduct();
    keys = [await createKey(srv, { tier: "ENTERPRISE", scopes: ALL_SCOPES, name: "cent-buyer-1" }), await createKey(srv, { tier: "ENTERPRISE", scopes: ALL_SCOPES, name: "cent-buyer-2" })];
    const bought = [];
    for (const k of keys) bought.push({ key: k, ...(await buy(k, product)) });
    for (const b of bought) await refund(b.key, b.orderId, b.totalMinor - 1);
    const rows = await srv.db.sql<{ status: string; kept: number }[]>`SELECT status, (total_minor - refunded_minor)::int AS kept FROM orders WHERE id = ANY(${bought.map((b) => b.orderId)})`;
    expect([...rows]).toEqual([
      { status: "paid", kept: 1 },
      { status: "paid", kept: 1 },
    ]);
    expect(await standing()).toEqual({ ...before, orders: before.orders + 2, refunds: before.refunds + 2 });
  }, 120_000);

  test("the same buyers' next orders refunded by half are kept sales: two agent orders, two buyers, GMV + what was kept, agent_verified_thin", async () => {
    const product = await cheapestPlainProduct();
    const bought = [];
    for (const k of keys) bought.push({ key: k, ...(await buy(k, product)) });
    for (const b of bought) await refund(b.key, b.orderId, Math.floor(b.totalMinor / 2));
    expect(await standing()).toEqual({
      tier: "agent_verified_thin",
      agent: before.agent + 2,
      gmvMinor: before.gmvMinor + bought.reduce((s, b) => s + b.totalMinor - Math.floor(b.totalMinor / 2), 0),
      uniqueBuyers: before.uniqueBuyers + 2,
      orders: before.orders + 4,
      refunds: before.refunds + 4,
    });
  }, 120_000);
});
