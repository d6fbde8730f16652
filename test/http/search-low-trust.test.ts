/**
 * Audit A7 LOW-4: a store below the agent-checkout trust threshold (0.7) is eligible for search (trust ≥ 0.3) but a
 * checkout there is refused with NOT_ELIGIBLE `trust_below_agent_threshold`; search showed its products like any
 * other. Search results and product detail now carry `merchant.agentCheckout` (false, with
 * `agentCheckoutReason`), and why_ranked says it in a sentence.
 */
import { beforeAll, describe, expect, test } from "bun:test";
import { ALL_SCOPES, createKey, type TestKey } from "../helpers/agents.ts";
import { useServer } from "../helpers/server.ts";

const LOW = "pixel-play-games"; // scored 0.58 at boot: eligible, below the agent threshold
const srv = useServer({ seed: true, config: { RATE_LIMITS_ENABLED: false } });
let key: TestKey;

beforeAll(async () => {
  key = await createKey(srv, { scopes: ALL_SCOPES, tier: "ENTERPRISE" });
}, 60_000);

const post = (path: string, body: unknown) => srv.json(path, { method: "POST", headers: key.headers, body: body as Record<string, unknown> });

async function productOf(slug: string): Promise<{ id: string; title: string }> {
  const [p] = await srv.db.sql<{ id: string; title: string }[]>`
    SELECT id, title FROM products WHERE store_slug = ${slug} AND active AND in_stock AND jsonb_array_length(variants) = 0 ORDER BY external_id LIMIT 1`;
  expect(p).toBeDefined();
  return p!;
}

async function searchHit(p: { id: string; title: string }) {
  const r = await post("/api/v1/agent/search", { query: p.title, limit: 100 });
  expect(r.status).toBe(200);
  const hit = r.body.data.products.find((x: { id: string }) => x.id === p.id);
  expect(hit).toBeDefined();
  return hit;
}

describe("search and product reads flag merchants an agent cannot check out at", () => {
  test("a product of a store below the agent threshold says agentCheckout false with the reason, in search and detail, and checkout refuses it", async () => {
    const [{ trust }] = await srv.db.sql<{ trust: number }[]>`SELECT trust_score::float8 AS trust FROM stores WHERE slug = ${LOW}`;
    expect(trust).toBeGreaterThanOrEqual(0.3);
    expect(trust).toBeLessThan(0.7);
    const p = await productOf(LOW);

    const hit = await searchHit(p);
    expect(hit.merchant).toMatchObject({ slug: LOW, agentCheckout: false, agentCheckoutReason: "trust_below_agent_threshold" });
    expect(hit.why_ranked).toEndWith(`; agent checkout refused: trust ${trust.toFixed(2)} below 0.70`);

    const detail = await srv.json(`/api/v1/agent/products/${p.id}`, { headers: key.headers });
    expect(detail.status).toBe(200);
    expect(detail.body.data.merchant).toMatchObject({ slug: LOW, agentCheckout: false, agentCheckoutReason: "trust_below_agent_threshold" });

    // what the flag announces: the checkout is refused
    const c = await post("/api/v1/agent/cart", { items: [{ product_id: p.id, quantity: 1 }] });
    expect(c.status).toBe(201);
    const r = await post("/api/v1/agent/checkout", { cartId: c.body.data.id, payment_method: "tok_approve", idempotency_key: crypto.randomUUID() });
    expect(r.status).toBe(403);
    expect(r.body).toMatchObject({ success: false, code: "NOT_ELIGIBLE", details: { merchant_slug: LOW, reason: "trust_below_agent_threshold" } });
  }, 60_000);

  test("a product of a store at or above the threshold says agentCheckout true, without a reason or the sentence", async () => {
    const p = await productOf("demo-store");
    const hit = await searchHit(p);
    expect(hit.merchant.agentCheckout).toBe(true);
    expect(hit.merchant.agentCheckoutReason).toBeUndefined();
    expect(hit.why_ranked).not.toContain("agent checkout");
    const detail = await srv.json(`/api/v1/agent/products/${p.id}`, { headers: key.headers });
    expect(detail.body.data.merchant.agentCheckout).toBe(true);
    expect(detail.body.data.merchant.agentCheckoutReason).toBeUndefined();
  }, 60_000);
});
