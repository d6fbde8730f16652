/**
 * What one caller may hold while its checkouts wait for the buyer's approval (audit X-3, docs/checkout.md "What one
 * caller may hold"): a key the merchant blocked is refused checkout at that store and its waiting holds there go back;
 * a caller has at most CHECKOUT_MAX_PENDING_APPROVALS checkouts holding stock at once; calling complete again while
 * the buyer has not approved does not extend the hold.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { ALL_SCOPES, createKey, login, type TestKey } from "../helpers/agents.ts";
import { IN_FLIGHT_GRACE_SECONDS } from "../../actors/cart/hold-guard.ts";
import { startServer, type TestServer } from "../helpers/server.ts";

const SKILLET = "399d72f1-303c-5cf3-bc6a-5c82714b85d4"; // demo-store DS-0005, tracked stock (12 in the seed)

let srv: TestServer;
let owner: string;
beforeAll(async () => {
  srv = await startServer({ seed: true, config: { RATE_LIMITS_ENABLED: false, CHECKOUT_MAX_PENDING_APPROVALS: 2 } });
  owner = await login(srv); // the operator (the demo store has no merchant account)
}, 120_000);
afterAll(async () => {
  await srv?.stop();
});

const available = async () =>
  (await srv.db.sql<{ n: number }[]>`SELECT (stock_quantity - reserved_quantity)::int AS n FROM products WHERE id = ${SKILLET}`)[0]!.n;
async function cart(k: TestKey, quantity = 1): Promise<string> {
  const r = await srv.json("/api/v1/agent/cart", { method: "POST", headers: k.headers, body: { items: [{ product_id: SKILLET, quantity }] } });
  expect(r.status).toBe(201);
  return r.body.data.id;
}
const pay = (k: TestKey, cartId: string, idempotencyKey: string = crypto.randomUUID(), method = "tok_needs_approval") =>
  srv.json("/api/v1/agent/checkout", { method: "POST", headers: k.headers, body: { cartId, payment_method: method, idempotency_key: idempotencyKey } });
const setStatus = (k: TestKey, status: "allowed" | "blocked") =>
  srv.json(`/api/v1/merchant/stores/demo-store/allowlist/${k.id}`, { method: "POST", headers: { authorization: `Bearer ${owner}` }, body: { status } });
const orderOf = async (cartId: string) => (await srv.db.sql<{ id: string; status: string }[]>`SELECT id, status FROM orders WHERE cart_id = ${cartId}`)[0]!;

describe("a payment waiting for the buyer cannot corner a product", () => {
  test("blocking a key releases the whole stock its unapproved checkout held, and other buyers can buy again", async () => {
    const hoarder = await createKey(srv, { scopes: ALL_SCOPES });
    const buyer = await createKey(srv, { scopes: ALL_SCOPES });
    const cartId = await cart(hoarder, await available());
    const held = await pay(hoarder, cartId);
    expect(held.status).toBe(202);
    expect(await available()).toBe(0);

    const block = await setStatus(hoarder, "blocked");
    expect(block.status).toBe(200);
    expect(block.body).toEqual({ success: true, data: { merchant_slug: "demo-store", key_id: hoarder.id, status: "blocked" } });
    // The session ended CANCELED with nothing captured; its order canceled, the stock back on sale.
    expect(await orderOf(cartId)).toMatchObject({ status: "canceled" });
    expect(await available()).toBeGreaterThan(0);
    const [{ n }] = await srv.db.sql<{ n: number }[]>`SELECT count(*)::int AS n FROM sandbox_ledger_intents WHERE state = 'captured' AND intent_id IN (SELECT intent_id FROM orders WHERE cart_id = ${cartId})`;
    expect(n).toBe(0);

    const other = await srv.json("/api/v1/agent/cart", { method: "POST", headers: buyer.headers, body: { items: [{ product_id: SKILLET, quantity: 1 }] } });
    expect({ status: other.status, reason: other.body?.details?.reason }).toEqual({ status: 201, reason: undefined });
  });

  test("a blocked key's next checkout at that store is 403 NOT_ELIGIBLE agent_blocked_by_merchant before any hold", async () => {
    const k = await createKey(srv, { scopes: ALL_SCOPES });
    expect((await setStatus(k, "blocked")).status).toBe(200);
    const cartId = await cart(k);
    const before = await available();
    const r = await pay(k, cartId);
    expect(r.status).toBe(403);
    expect(r.body).toMatchObject({ success: false, code: "NOT_ELIGIBLE", details: { reason: "agent_blocked_by_merchant", merchant_slugs: ["demo-store"] } });
    expect(await available()).toBe(before);
    expect(await srv.db.sql`SELECT 1 FROM orders WHERE cart_id = ${cartId}`).toHaveLength(0);

    // Allowed again, the same cart pays (the session was left as it was).
    expect((await setStatus(k, "allowed")).status).toBe(200);
    expect((await pay(k, cartId, crypto.randomUUID(), "tok_approve")).status).toBe(200);
  });

  test("a caller with the maximum of checkouts waiting for approval is refused one more with 429 pending_approval_limit until one ends", async () => {
    const k = await createKey(srv, { scopes: ALL_SCOPES });
    const first = await cart(k);
    const second = await cart(k);
    expect((await pay(k, first)).status).toBe(202);
    expect((await pay(k, second)).status).toBe(202);
    // A hold younger than IN_FLIGHT_GRACE_SECONDS may be a payment still running: it does not count yet, so a key
    // running many payments at once is not refused (one CI run refused the 21st of 40 concurrent checkouts).
    const early = await pay(k, await cart(k), undefined, "MOCK");
    expect(`${early.status} ${early.body.data?.status}`).toBe("200 COMPLETED");
    await srv.db.sql`UPDATE stock_reservations SET created_at = created_at - make_interval(secs => ${IN_FLIGHT_GRACE_SECONDS + 5})
      WHERE status = 'held' AND order_id IN (SELECT id FROM orders WHERE agent_key_id = ${k.id}::uuid)`;
    const third = await cart(k);
    const before = await available();
    const refused = await pay(k, third);
    expect(refused.status).toBe(429);
    expect(refused.body).toMatchObject({
      success: false,
      code: "rate_limit_exceeded",
      details: { reason: "pending_approval_limit", limit: 2, holding: 2 },
    });
    expect(refused.body.details.checkout_session_ids).toHaveLength(2);
    expect(refused.body.details.retry_after_seconds).toBeGreaterThan(0);
    expect(refused.headers.get("retry-after")).toBe(String(refused.body.details.retry_after_seconds));
    expect(await available()).toBe(before);

    // Another caller is not affected.
    const someone = await createKey(srv, { scopes: ALL_SCOPES });
    expect((await pay(someone, await cart(someone))).status).toBe(202);

    // The agent cancels one waiting checkout: the third now starts.
    const o = await orderOf(first);
    expect((await srv.json(`/api/v1/agent/orders/${o.id}/cancel`, { method: "POST", headers: k.headers, body: {} })).status).toBe(200);
    expect((await pay(k, third)).status).toBe(202);
  });

  test("calling complete again while the buyer has not approved answers 202 with the same expiry: the hold is not extended", async () => {
    const k = await createKey(srv, { scopes: ALL_SCOPES });
    const cartId = await cart(k);
    const idem = crypto.randomUUID();
    const first = await pay(k, cartId, idem);
    expect(first.status).toBe(202);
    const expiresAt = first.body.details.expires_at;
    expect(typeof expiresAt).toBe("string");
    await Bun.sleep(1100);
    const again = await pay(k, cartId, idem);
    expect(again.status).toBe(202);
    expect(again.body.details.expires_at).toBe(expiresAt);
  });
});

describe("the approval hold is configurable", () => {
  let short: TestServer;
  beforeAll(async () => {
    short = await startServer({ seed: true, config: { RATE_LIMITS_ENABLED: false, CHECKOUT_APPROVAL_HOLD_MS: 120_000 } });
  }, 120_000);
  afterAll(async () => {
    await short?.stop();
  });

  test("with CHECKOUT_APPROVAL_HOLD_MS at 2 min a checkout waiting for the buyer expires 2 min after it asked", async () => {
    const k = await createKey(short, { scopes: ALL_SCOPES });
    const c = await short.json("/api/v1/agent/cart", { method: "POST", headers: k.headers, body: { items: [{ product_id: SKILLET, quantity: 1 }] } });
    expect(c.status).toBe(201);
    const before = Date.now();
    const r = await short.json("/api/v1/agent/checkout", {
      method: "POST",
      headers: k.headers,
      body: { cartId: c.body.data.id, payment_method: "tok_needs_approval", idempotency_key: crypto.randomUUID() },
    });
    expect(r.status).toBe(202);
    const expires = Date.parse(r.body.details.expires_at);
    expect(expires).toBeGreaterThanOrEqual(before + 120_000 - 1000);
    expect(expires).toBeLessThanOrEqual(Date.now() + 120_000 + 1000);
  });
});
