/**
 * Findings of the model-based checkout test (test/http/model-checkout.test.ts), each as a focused regression test.
 * Report: /tmp/notes/P-report.md (session 11).
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { twoTenants, type TestKey } from "../helpers/agents.ts";
import { partlyPaidSession as partlyPaid } from "../helpers/partly-paid.ts";
import { startServer, type TestServer } from "../helpers/server.ts";

let srv: TestServer;
let key: TestKey;

beforeAll(async () => {
  srv = await startServer({ seed: true });
  ({ key } = await twoTenants(srv));
}, 120_000);
afterAll(async () => {
  await srv?.stop();
});

/** A demo-store product with tracked stock and no variants (its whole stock is bought), and an untracked greenleaf one. */
async function products(): Promise<{ tracked: string; stock: number; other: string }> {
  const [t] = await srv.db.sql<{ id: string; s: number }[]>`
    SELECT id, stock_quantity - reserved_quantity AS s FROM products
     WHERE store_slug = 'demo-store' AND active AND in_stock AND stock_quantity - reserved_quantity BETWEEN 2 AND 20
       AND (variants IS NULL OR jsonb_array_length(variants) = 0) ORDER BY id LIMIT 1`;
  const [o] = await srv.db.sql<{ id: string }[]>`
    SELECT id FROM products WHERE store_slug = 'greenleaf-living' AND active AND in_stock AND stock_quantity IS NULL
       AND (variants IS NULL OR jsonb_array_length(variants) = 0) ORDER BY id LIMIT 1`;
  return { tracked: t!.id, stock: t!.s, other: o!.id };
}

const post = (path: string, body: unknown) => srv.json(path, { method: "POST", headers: key.headers, body });

/** A cart of one untracked demo-store product and one greenleaf-living product (no variants), one unit each. */
async function untrackedTwoStoreCart(): Promise<string> {
  const [demo] = await srv.db.sql<{ id: string }[]>`SELECT id FROM products WHERE store_slug = 'demo-store' AND active AND in_stock
    AND stock_quantity IS NULL AND (variants IS NULL OR jsonb_array_length(variants) = 0) ORDER BY id LIMIT 1`;
  const { other } = await products();
  const cart = await post("/api/v1/agent/cart", { items: [{ product_id: demo!.id, quantity: 1 }, { product_id: other, quantity: 1 }] });
  expect(cart.status).toBe(201);
  return cart.body.data.id as string;
}

/**
 * A two-store cart whose demo-store leg buys the product's whole stock and is captured, while the greenleaf leg is
 * declined: the session waits READY_FOR_PAYMENT for greenleaf, demo-store paid and its stock sold.
 */
async function partlyPaidSession(): Promise<{ cartId: string; sessionId: string; idempotencyKey: string }> {
  const p = await products();
  const s = await partlyPaid(srv, key, [{ product_id: p.tracked, quantity: p.stock }, { product_id: p.other, quantity: 1 }]);
  const [left] = await srv.db.sql<{ s: number }[]>`SELECT stock_quantity AS s FROM products WHERE id = ${p.tracked}`;
  expect(left!.s).toBe(0);
  return s;
}

/** P-1, fixed in actors/cart/state-hash.ts `compareStates` (paid stores' lines are not asked for stock). */
const p1 = test;

describe("a partly paid checkout whose paid store sold the last units (model finding P-1)", () => {
  p1("the retry with the same key and another method for the declined store completes: the paid store's own sale does not block it", async () => {
    const s = await partlyPaidSession();
    const retry = await post("/api/v1/agent/checkout", {
      cartId: s.cartId,
      checkout_session_id: s.sessionId,
      idempotency_key: s.idempotencyKey,
      payment_methods: { "greenleaf-living": "tok_approve" },
    });
    expect({ status: retry.status, code: retry.body.code ?? null }).toEqual({ status: 200, code: null });
    expect(retry.body.data.status).toBe("COMPLETED");
    const paid = await srv.db.sql<{ store_slug: string }[]>`SELECT store_slug FROM orders WHERE cart_id = ${s.cartId} AND paid_at IS NOT NULL ORDER BY store_slug`;
    expect(paid.map((r) => r.store_slug)).toEqual(["demo-store", "greenleaf-living"]);
  });

  p1("after the session is canceled, the cart's next preview and payment pay the remaining store as the docs say", async () => {
    const s = await partlyPaidSession();
    expect((await post(`/api/v1/agent/checkout/${s.sessionId}/cancel`, {})).status).toBe(200);
    const preview = await post("/api/v1/agent/checkout/preview", { cartId: s.cartId });
    expect(preview.status).toBe(200);
    const pay = await post("/api/v1/agent/checkout", {
      cartId: s.cartId,
      checkout_session_id: preview.body.data.checkout_session_id,
      idempotency_key: crypto.randomUUID(),
      payment_methods: { "greenleaf-living": "tok_approve" },
    });
    expect({ status: pay.status, code: pay.body.code ?? null }).toEqual({ status: 200, code: null });
    const paid = await srv.db.sql<{ store_slug: string; n: number }[]>`
      SELECT store_slug, count(*)::int AS n FROM orders WHERE cart_id = ${s.cartId} AND paid_at IS NOT NULL GROUP BY 1 ORDER BY 1`;
    expect(paid.map((r) => ({ store_slug: r.store_slug, n: r.n }))).toEqual([{ store_slug: "demo-store", n: 1 }, { store_slug: "greenleaf-living", n: 1 }]);
  });
});

/** P-2, fixed in actors/cart/index.ts (every escalated leg is flagged, not only the first). */
const p2 = test;

describe("two legs of one attempt escalated to their merchants (model finding P-2)", () => {
  p2("a leg captured with another amount beside a leg whose finalization failed is flagged amount_mismatch, never paid at the authorised amount", async () => {
    const [demo] = await srv.db.sql<{ id: string }[]>`SELECT id FROM products WHERE store_slug = 'demo-store' AND active AND in_stock
      AND stock_quantity IS NULL AND (variants IS NULL OR jsonb_array_length(variants) = 0) ORDER BY id LIMIT 1`;
    const { other } = await products();
    const cart = await post("/api/v1/agent/cart", { items: [{ product_id: demo!.id, quantity: 1 }, { product_id: other, quantity: 2 }] });
    expect(cart.status).toBe(201);
    const cartId = cart.body.data.id as string;
    // demo-store is charged first (slug order): its capture's finalization fails; greenleaf's capture is one unit more
    const pay = await post("/api/v1/agent/checkout", {
      cartId,
      idempotency_key: crypto.randomUUID(),
      payment_methods: { "demo-store": "tok_finalization_fails", "greenleaf-living": "tok_amount_mismatch" },
    });
    expect(pay.status).toBe(409);
    expect(pay.body.code).toBe("PAYMENT_CAPTURED_FINALIZATION_FAILED");
    const rows = await srv.db.sql<{ store_slug: string; status: string; reconciliation: string | null; paid: boolean; total: string; captured: string }[]>`
      SELECT o.store_slug, o.status, o.reconciliation, o.paid_at IS NOT NULL AS paid, COALESCE(o.captured_minor, o.total_minor) AS total, l.amount_minor AS captured
        FROM orders o JOIN sandbox_ledger_intents l ON l.intent_id = o.intent_id WHERE o.cart_id = ${cartId} ORDER BY o.store_slug`;
    expect(rows.map((r) => ({ store: r.store_slug, status: r.status, reconciliation: r.reconciliation, paid: r.paid }))).toEqual([
      { store: "demo-store", status: "pending", reconciliation: "finalization_failed", paid: false },
      { store: "greenleaf-living", status: "pending", reconciliation: "amount_mismatch", paid: false },
    ]);
    // nothing is recorded as paid for an amount other than the one captured
    for (const r of rows.filter((x) => x.paid)) expect(Number(r.total)).toBe(Number(r.captured));
  });
});

/**
 * Not a finding: the model once expected the second of these two calls to be refused for the stock the second call
 * had itself just held (a model error, session 11 P2). The docs' answer, checked here: the pair answers as the same
 * two calls in sequence, the refusal at the link and then a new link, with one attempt holding the stock once.
 */
describe("two identical calls at once after the buyer refused at the approval link", () => {
  test("one answers the refusal and the other asks the buyer again with a new link, holding the stock once", async () => {
    const p = await products();
    const quantity = 2;
    const cart = await post("/api/v1/agent/cart", { items: [{ product_id: p.tracked, quantity }] });
    expect(cart.status).toBe(201);
    const cartId = cart.body.data.id as string;
    const idempotencyKey = crypto.randomUUID();
    const [before] = await srv.db.sql<{ r: number }[]>`SELECT reserved_quantity AS r FROM products WHERE id = ${p.tracked}`;
    const asked = await post("/api/v1/agent/checkout", { cartId, idempotency_key: idempotencyKey, payment_method: "tok_needs_approval" });
    expect({ status: asked.status, code: asked.body.code }).toEqual({ status: 202, code: "user_action_required" });
    const refused = await srv.json(`${new URL(asked.body.details.approval_url as string).pathname}/reject`, { method: "POST", body: {} });
    expect(refused.body.data?.status).toBe("not_approved");

    const body = { cartId, checkout_session_id: asked.body.details.checkout_session_id, idempotency_key: idempotencyKey };
    const pair = await Promise.all([post("/api/v1/agent/checkout", body), post("/api/v1/agent/checkout", body)]);
    const outcomes = pair.map((r) => ({ status: r.status, code: r.body.code, refused_at_approval_link: r.body.details?.refused_at_approval_link ?? false }));
    expect(outcomes.sort((a, b) => b.status - a.status)).toEqual([
      { status: 402, code: "PAYMENT_NOT_APPROVED", refused_at_approval_link: true },
      { status: 202, code: "user_action_required", refused_at_approval_link: false },
    ]);
    const link = pair.find((r) => r.status === 202)!.body.details.approval_url as string;
    expect(link).not.toBe(asked.body.details.approval_url);

    // the refused attempt's hold was released before the new one held the units: one hold, of the cart's quantity
    const holds = await srv.db.sql<{ status: string }[]>`
      SELECT r.status FROM stock_reservations r JOIN orders o ON o.id = r.order_id WHERE o.cart_id = ${cartId} AND r.status = 'held'`;
    expect(holds.length).toBe(1);
    const [after] = await srv.db.sql<{ r: number }[]>`SELECT reserved_quantity AS r FROM products WHERE id = ${p.tracked}`;
    expect(after!.r - before!.r).toBe(quantity);
  });
});

describe("two identical calls at once naming another method after the buyer refused at the approval link", () => {
  test("one answers the refusal and the other pays with the named method once, selling the units once", async () => {
    const p = await products();
    const quantity = 1;
    const cart = await post("/api/v1/agent/cart", { items: [{ product_id: p.tracked, quantity }] });
    expect(cart.status).toBe(201);
    const cartId = cart.body.data.id as string;
    const idempotencyKey = crypto.randomUUID();
    const [before] = await srv.db.sql<{ s: number; r: number }[]>`SELECT stock_quantity AS s, reserved_quantity AS r FROM products WHERE id = ${p.tracked}`;
    const asked = await post("/api/v1/agent/checkout", { cartId, idempotency_key: idempotencyKey, payment_method: "tok_needs_approval" });
    expect({ status: asked.status, code: asked.body.code }).toEqual({ status: 202, code: "user_action_required" });
    const refused = await srv.json(`${new URL(asked.body.details.approval_url as string).pathname}/reject`, { method: "POST", body: {} });
    expect(refused.body.data?.status).toBe("not_approved");

    // the buyer chose the demo store's simulated method instead: the same key names it
    const body = { cartId, checkout_session_id: asked.body.details.checkout_session_id, idempotency_key: idempotencyKey, payment_method: "MOCK" };
    const pair = await Promise.all([post("/api/v1/agent/checkout", body), post("/api/v1/agent/checkout", body)]);
    const outcomes = pair.map((r) => ({ status: r.status, code: r.body.code ?? null }));
    expect(outcomes.sort((a, b) => b.status - a.status)).toEqual([
      { status: 402, code: "PAYMENT_NOT_APPROVED" },
      { status: 200, code: null },
    ]);
    const paid = await srv.db.sql<{ n: number }[]>`SELECT count(*)::int AS n FROM orders WHERE cart_id = ${cartId} AND paid_at IS NOT NULL`;
    expect(paid[0]!.n).toBe(1);
    const [after] = await srv.db.sql<{ s: number; r: number }[]>`SELECT stock_quantity AS s, reserved_quantity AS r FROM products WHERE id = ${p.tracked}`;
    expect({ sold: before!.s - after!.s, held: after!.r - before!.r }).toEqual({ sold: quantity, held: 0 });
  });
});

/**
 * Not a finding (the model once refused it up front, session 11 P2): the resume checks only that a named token exists;
 * whether the rolled-back store takes the method is its new attempt's check, made once the approved leg is captured.
 */
describe("a resume naming a method the rolled-back store does not take", () => {
  test("answers the 202 again while the buyer decides, and after the approval captures the approved store and refuses the other PAYMENT_METHOD_NOT_CONFIGURED", async () => {
    const cartId = await untrackedTwoStoreCart();
    const idempotencyKey = crypto.randomUUID();
    const asked = await post("/api/v1/agent/checkout", { cartId, idempotency_key: idempotencyKey, payment_methods: { "demo-store": "tok_needs_approval", "greenleaf-living": "tok_fail" } });
    expect({ status: asked.status, code: asked.body.code }).toEqual({ status: 202, code: "user_action_required" });
    const body = { cartId, checkout_session_id: asked.body.details.checkout_session_id, idempotency_key: idempotencyKey, payment_method: "MOCK" };

    const waiting = await post("/api/v1/agent/checkout", body);
    expect({ status: waiting.status, code: waiting.body.code }).toEqual({ status: 202, code: "user_action_required" });
    // a token the processor does not know is refused at once, as the docs say
    const bogus = await post("/api/v1/agent/checkout", { ...body, payment_method: "tok_bogus" });
    expect({ status: bogus.status, code: bogus.body.code, reason: bogus.body.details?.reason }).toEqual({ status: 400, code: "INVALID_ARGUMENT", reason: "invalid_test_token" });

    const approved = await srv.json(`${new URL(asked.body.details.approval_url as string).pathname}/approve`, { method: "POST", body: {} });
    expect(approved.body.data?.status).toBe("approved");
    const resumed = await post("/api/v1/agent/checkout", body);
    expect({ status: resumed.status, code: resumed.body.code }).toEqual({ status: 400, code: "PAYMENT_METHOD_NOT_CONFIGURED" });
    expect(resumed.body.details).toMatchObject({ merchant_slug: "greenleaf-living", checkout_status: "READY_FOR_PAYMENT", partially_captured: true, completed_store_ids: ["demo-store"] });
    const paid = await post("/api/v1/agent/checkout", { ...body, payment_method: undefined, payment_methods: { "greenleaf-living": "tok_approve" } });
    expect({ status: paid.status, code: paid.body.code ?? null, session: paid.body.data?.status }).toEqual({ status: 200, code: null, session: "COMPLETED" });
  });
});

/** Not a finding (the model once bound the key here, session 11 P2): a refused start binds nothing. */
describe("a partly paid cart's new session refused for a shortage before any key was bound", () => {
  test("answers a second key the same STATE_EXECUTION_BLOCKED, not IDEMPOTENCY_KEY_CONFLICT, and stays READY_FOR_PAYMENT", async () => {
    const [t] = await srv.db.sql<{ id: string; s: number }[]>`
      SELECT id, stock_quantity - reserved_quantity AS s FROM products
       WHERE store_slug = 'demo-store' AND active AND in_stock AND stock_quantity - reserved_quantity BETWEEN 3 AND 20
         AND (variants IS NULL OR jsonb_array_length(variants) = 0) ORDER BY id LIMIT 1`;
    const { other } = await products();
    const cart = await post("/api/v1/agent/cart", { items: [{ product_id: t!.id, quantity: 2 }, { product_id: other, quantity: 1 }] });
    expect(cart.status).toBe(201);
    const cartId = cart.body.data.id as string;
    const first = await post("/api/v1/agent/checkout", { cartId, idempotency_key: crypto.randomUUID(), payment_methods: { "demo-store": "tok_decline", "greenleaf-living": "tok_approve" } });
    expect({ status: first.status, code: first.body.code }).toEqual({ status: 402, code: "PAYMENT_DECLINED" });
    expect((await post(`/api/v1/agent/checkout/${first.body.details.checkout_session_id}/cancel`, {})).status).toBe(200);
    const preview = await post("/api/v1/agent/checkout/preview", { cartId });
    expect(preview.status).toBe(200);
    const sessionId = preview.body.data.checkout_session_id as string;
    // another buyer takes all but one unit meanwhile
    const rival = await post("/api/v1/agent/cart", { items: [{ product_id: t!.id, quantity: t!.s - 1 }] });
    const bought = await post("/api/v1/agent/checkout", { cartId: rival.body.data.id, idempotency_key: crypto.randomUUID(), payment_method: "MOCK" });
    expect(bought.status).toBe(200);

    for (const attempt of [1, 2]) {
      const r = await post("/api/v1/agent/checkout", { cartId, checkout_session_id: sessionId, idempotency_key: crypto.randomUUID(), payment_method: "tok_approve" });
      expect({ attempt, status: r.status, code: r.body.code, session: r.body.details?.checkout_status }).toEqual({ attempt, status: 409, code: "STATE_EXECUTION_BLOCKED", session: "READY_FOR_PAYMENT" });
    }
  });
});

/** Not a finding (the model once captured nothing here, session 11 P2): each leg is resumed on its own. */
describe("a resume when one of two stores' buyers approved and the other has not decided", () => {
  test("captures the approved store, answers the 202 for the other, and completes after its approval", async () => {
    const cartId = await untrackedTwoStoreCart();
    const idempotencyKey = crypto.randomUUID();
    const asked = await post("/api/v1/agent/checkout", { cartId, idempotency_key: idempotencyKey, payment_method: "tok_needs_approval" });
    expect({ status: asked.status, code: asked.body.code }).toEqual({ status: 202, code: "user_action_required" });
    const links = new Map((asked.body.details.approval_urls as { merchant_slug: string; url: string }[]).map((u) => [u.merchant_slug, new URL(u.url).pathname]));
    expect((await srv.json(`${links.get("demo-store")}/approve`, { method: "POST", body: {} })).body.data?.status).toBe("approved");

    const body = { cartId, checkout_session_id: asked.body.details.checkout_session_id, idempotency_key: idempotencyKey };
    const waiting = await post("/api/v1/agent/checkout", body);
    expect({ status: waiting.status, code: waiting.body.code, paid: waiting.body.details?.completed_store_ids }).toEqual({ status: 202, code: "user_action_required", paid: ["demo-store"] });
    const paidNow = await srv.db.sql<{ store_slug: string }[]>`SELECT store_slug FROM orders WHERE cart_id = ${cartId} AND paid_at IS NOT NULL`;
    expect(paidNow.map((r) => r.store_slug)).toEqual(["demo-store"]);

    expect((await srv.json(`${links.get("greenleaf-living")}/approve`, { method: "POST", body: {} })).body.data?.status).toBe("approved");
    const done = await post("/api/v1/agent/checkout", body);
    expect({ status: done.status, code: done.body.code ?? null, session: done.body.data?.status }).toEqual({ status: 200, code: null, session: "COMPLETED" });
    const paid = await srv.db.sql<{ store_slug: string; n: number }[]>`
      SELECT store_slug, count(*)::int AS n FROM orders WHERE cart_id = ${cartId} AND paid_at IS NOT NULL GROUP BY 1 ORDER BY 1`;
    expect(paid.map((r) => ({ store: r.store_slug, n: r.n }))).toEqual([{ store: "demo-store", n: 1 }, { store: "greenleaf-living", n: 1 }]);
  });
});
