/**
 * A partly paid checkout session (one store captured, another declined) whose PAID store moves afterwards: its lines
 * were bought by that capture, so its price, shipping or policy version moving must neither block nor ask to reconfirm
 * the remaining store's payment (session 11, engineer C; follow-up of model finding P-1, which covered the paid store's
 * stock). The state check compares only the unpaid stores, and the reconfirmation hash covers only what it compares,
 * so a paid store moving between a reconfirmation and its retry does not ask again (actors/cart/state-hash.ts
 * `compareStates`).
 */
import { afterAll, afterEach, beforeAll, describe, expect, test } from "bun:test";
import { ALL_SCOPES, createKey, type TestKey } from "../helpers/agents.ts";
// BOARD: DS-0011, demo-store, untracked stock; GREEN: GL-0001, greenleaf-living (card only)
import { BOARD, GREEN, partlyPaidSession as partlyPaid } from "../helpers/partly-paid.ts";
import { startServer, type TestServer } from "../helpers/server.ts";

let srv: TestServer;
let key: TestKey;
const restore: (() => Promise<unknown>)[] = [];

beforeAll(async () => {
  srv = await startServer({ seed: true, config: { RATE_LIMITS_ENABLED: false } });
  key = await createKey(srv, { scopes: ALL_SCOPES });
}, 120_000);
afterEach(async () => {
  while (restore.length) await restore.pop()!();
});
afterAll(async () => {
  await srv?.stop();
});

const post = (path: string, body: unknown) => srv.json(`/api/v1/agent${path}`, { method: "POST", headers: key.headers, body });

async function priceOf(productId: string): Promise<number> {
  const [p] = await srv.db.sql<{ price: number }[]>`SELECT price_minor::int AS price FROM products WHERE id = ${productId}`;
  return p!.price;
}

/** Moves a product's price for this test only. */
async function setPrice(productId: string, minor: number): Promise<void> {
  const was = await priceOf(productId);
  restore.push(() => srv.db.sql`UPDATE products SET price_minor = ${was}, updated_at = now() WHERE id = ${productId}`);
  await srv.db.sql`UPDATE products SET price_minor = ${minor}, updated_at = now() WHERE id = ${productId}`;
}

/** Publishes a new policy version of the store for this test only. */
async function bumpPolicyVersion(slug: string): Promise<void> {
  const [s] = await srv.db.sql<{ v: number }[]>`SELECT policy_version AS v FROM stores WHERE slug = ${slug}`;
  restore.push(() => srv.db.sql`UPDATE stores SET policy_version = ${s!.v} WHERE slug = ${slug}`);
  await srv.db.sql`UPDATE stores SET policy_version = ${s!.v + 1} WHERE slug = ${slug}`;
}

/** demo-store (one BOARD) captured, greenleaf-living (one GREEN) declined: READY_FOR_PAYMENT for greenleaf. */
async function partlyPaidSession(): Promise<{ cartId: string; sessionId: string; idempotencyKey: string; demoOrder: { id: string; total: number } }> {
  const s = await partlyPaid(srv, key, [{ product_id: BOARD, quantity: 1 }, { product_id: GREEN, quantity: 1 }]);
  const [o] = await srv.db.sql<{ id: string; total: number }[]>`SELECT id, total_minor::int AS total FROM orders WHERE cart_id = ${s.cartId} AND store_slug = 'demo-store' AND paid_at IS NOT NULL`;
  return { ...s, demoOrder: o! };
}

const retry = (s: { cartId: string; sessionId: string; idempotencyKey: string }, extra: Record<string, unknown> = {}) =>
  post("/checkout", { cartId: s.cartId, checkout_session_id: s.sessionId, idempotency_key: s.idempotencyKey, payment_methods: { "greenleaf-living": "tok_approve" }, ...extra });

async function paidOrders(cartId: string): Promise<{ store: string; id: string; total: number }[]> {
  const rows = await srv.db.sql<{ store: string; id: string; total: number }[]>`
    SELECT store_slug AS store, id, total_minor::int AS total FROM orders WHERE cart_id = ${cartId} AND paid_at IS NOT NULL ORDER BY store_slug`;
  return rows.map((r) => ({ store: r.store, id: r.id, total: r.total }));
}

describe("a partly paid session whose paid store moved after its capture", () => {
  test("the paid store's price moved beyond the blocking cut: the retry pays the remaining store, and the paid order stays as paid", async () => {
    const s = await partlyPaidSession();
    await setPrice(BOARD, (await priceOf(BOARD)) * 3);
    const r = await retry(s);
    expect({ status: r.status, code: r.body.code ?? null }).toEqual({ status: 200, code: null });
    expect(r.body.data.status).toBe("COMPLETED");
    const paid = await paidOrders(s.cartId);
    expect(paid.map((o) => o.store)).toEqual(["demo-store", "greenleaf-living"]);
    expect(paid[0]).toEqual({ store: "demo-store", ...s.demoOrder });
  });

  test("the paid store's price moved within the cut: no reconfirmation is asked for a line already bought", async () => {
    const s = await partlyPaidSession();
    await setPrice(BOARD, (await priceOf(BOARD)) + 100);
    const r = await retry(s);
    expect({ status: r.status, code: r.body.code ?? null }).toEqual({ status: 200, code: null });
    expect(r.body.data.status).toBe("COMPLETED");
  });

  test("the paid store published a new policy version: the retry pays the remaining store", async () => {
    const s = await partlyPaidSession();
    await bumpPolicyVersion("demo-store");
    const r = await retry(s);
    expect({ status: r.status, code: r.body.code ?? null }).toEqual({ status: 200, code: null });
    expect((await paidOrders(s.cartId)).map((o) => o.store)).toEqual(["demo-store", "greenleaf-living"]);
  });

  test("the remaining store's own move still counts: its policy version blocks, with only its reason", async () => {
    const s = await partlyPaidSession();
    await bumpPolicyVersion("greenleaf-living");
    await setPrice(BOARD, (await priceOf(BOARD)) * 3);
    const r = await retry(s);
    expect(r.status).toBe(409);
    expect(r.body.code).toBe("STATE_EXECUTION_BLOCKED");
    expect(r.body.details.reasons.map((x: { code: string; store_id?: string }) => [x.code, x.store_id ?? null])).toEqual([["policy_version_changed", "greenleaf-living"]]);
  });

  test("a reconfirmation for the remaining store's price stays valid while the paid store moves: the retry with its hash pays (no second reconfirmation)", async () => {
    const s = await partlyPaidSession();
    await setPrice(GREEN, (await priceOf(GREEN)) + 100);
    const asked = await retry(s);
    expect(asked.status).toBe(409);
    expect(asked.body.code).toBe("STATE_RECONFIRMATION_REQUIRED");
    expect(asked.body.details.reasons.every((x: { store_id?: string }) => x.store_id === undefined || x.store_id === "greenleaf-living")).toBe(true);
    const hash = asked.body.details.reconfirm_state_hash as string;
    // the paid store moves between the question and the answer
    await setPrice(BOARD, (await priceOf(BOARD)) + 500);
    await bumpPolicyVersion("demo-store");
    const r = await retry(s, { reconfirmed_state_hash: hash });
    expect({ status: r.status, code: r.body.code ?? null }).toEqual({ status: 200, code: null });
    const paid = await paidOrders(s.cartId);
    expect(paid.map((o) => o.store)).toEqual(["demo-store", "greenleaf-living"]);
    expect(paid[0]).toEqual({ store: "demo-store", ...s.demoOrder });
  });
});
