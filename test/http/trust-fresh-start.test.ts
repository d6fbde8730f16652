/**
 * Audit E [trust]: on a fresh start every surface shows and gates on one computed trust number. Before the fix the
 * seed's placeholder stood until someone read GET /stores/{slug}/trust-score (computed on first read), so an
 * anonymous public GET flipped another agent's checkout eligibility (cozy-paws-supply 0.66 → 0.7277) and a store
 * seeded without a score was invisible until read.
 */
import { beforeAll, describe, expect, test } from "bun:test";
import { ALL_SCOPES, createKey, type TestKey } from "../helpers/agents.ts";
import { useServer } from "../helpers/server.ts";

const COZY = "cozy-paws-supply";
const COZY_PRODUCT = "99ee1b26-f18f-5466-beb5-03eed14d5167"; // CP-0003, no variants
const FRESH = "fresh-start-studio"; // seeded with no score (null)

const srv = useServer({ seed: true, config: { RATE_LIMITS_ENABLED: false } });
let key: TestKey;

beforeAll(async () => {
  key = await createKey(srv, { scopes: ALL_SCOPES });
}, 120_000);

const directoryScore = async (slug: string): Promise<number | null> => {
  const r = await srv.json(`/api/v1/agent/merchants/${slug}`, { headers: key.headers });
  expect(r.status).toBe(200);
  return r.body.data.trustScore;
};
const searchScore = async (slug: string): Promise<number | undefined> => {
  const r = await srv.json("/api/v1/agent/search", { method: "POST", headers: key.headers, body: { query: "dog", limit: 50 } });
  expect(r.status).toBe(200);
  return r.body.data.products.find((p: { merchant: { slug: string } }) => p.merchant.slug === slug)?.merchant.trustScore;
};
const checkoutOutcome = async (): Promise<{ status: number; code: string | undefined }> => {
  const cart = await srv.json("/api/v1/agent/cart", { method: "POST", headers: key.headers, body: { items: [{ product_id: COZY_PRODUCT, quantity: 1 }] } });
  expect(cart.status).toBe(201);
  const r = await srv.json("/api/v1/agent/checkout", { method: "POST", headers: key.headers, body: { cartId: cart.body.data.id, payment_method: "tok_approve" } });
  return { status: r.status, code: r.body.code ?? r.body.data?.status };
};

describe("a fresh service", () => {
  test("gives the same score and the same checkout eligibility before and after a public GET of the trust score", async () => {
    const before = { directory: await directoryScore(COZY), search: await searchScore(COZY), checkout: await checkoutOutcome() };
    const pub = await srv.json(`/api/v1/stores/${COZY}/trust-score`);
    expect(pub.status).toBe(200);
    const after = { directory: await directoryScore(COZY), search: await searchScore(COZY), checkout: await checkoutOutcome() };

    expect(after).toEqual(before);
    expect(before.directory).toBe(pub.body.data.score_0to1);
    expect(before.search).toBe(pub.body.data.score_0to1);
    expect(before.checkout.status === 200).toBe(pub.body.data.agent_checkout_allowed);
    // The public read computed nothing new: the number came from the boot's computation.
    const triggers = await srv.db.sql<{ trigger: string }[]>`SELECT DISTINCT trigger FROM trust_score_history WHERE store_slug = ${COZY}`;
    expect(triggers.map((t) => t.trigger)).toEqual(["boot"]);
    const [unscored] = await srv.db.sql<{ n: string }[]>`SELECT count(*) AS n FROM stores s WHERE NOT EXISTS (SELECT 1 FROM trust_current c WHERE c.store_slug = s.slug)`;
    expect(Number(unscored.n)).toBe(0);
  });

  test("a store seeded without a score has its computed score from the start, not only after someone reads it", async () => {
    const [row] = await srv.db.sql<{ trust_score: string | null }[]>`SELECT trust_score FROM stores WHERE slug = ${FRESH}`;
    expect(row.trust_score).not.toBeNull();
    const history = await srv.db.sql<{ trigger: string; score_0to1: string }[]>`SELECT trigger, score_0to1 FROM trust_score_history WHERE store_slug = ${FRESH}`;
    expect([...history]).toEqual([{ trigger: "boot", score_0to1: row.trust_score! }]);
  });
});
