/**
 * Ownership: another tenant gets 404 (never 403, never the data) and changes nothing, for the routes and id
 * combinations the feature tests do not already cover: a merchant naming another store's webhook endpoint, refund,
 * order or allowlist (through the other store's slug and through its own), another user's agent keys, another
 * agent's bridged checkout sessions, carts and coupons, and customer identity tokens for someone else's store.
 */
import { beforeAll, describe, expect, test } from "bun:test";
import { ALL_SCOPES, createKey, login, merchantLogin, setPlan, type TestKey } from "../helpers/agents.ts";
import { useServer } from "../helpers/server.ts";

const BOARD = "5befd987-79cd-540c-8a5d-2ba5a30aed41"; // a demo-store product (DS-0011)
const STRANGER_STORE = "greenleaf-living";

const srv = useServer({ seed: true, config: { RATE_LIMITS_ENABLED: false } });
let admin: string; // operator, owner of demo-store
let stranger: string; // owner of greenleaf-living only
let key: TestKey;
let other: TestKey;

beforeAll(async () => {
  admin = await login(srv);
  stranger = await login(srv, merchantLogin(STRANGER_STORE));
  key = await createKey(srv, { scopes: ALL_SCOPES, tier: "ENTERPRISE", token: admin });
  await setPlan(srv, merchantLogin(STRANGER_STORE).email, "ENTERPRISE", admin);
  other = await createKey(srv, { scopes: ALL_SCOPES, tier: "ENTERPRISE", token: stranger });
}, 120_000);

const bearer = (token: string) => ({ authorization: `Bearer ${token}` });
const asMerchant = (token: string, path: string, init: { method?: string; body?: unknown } = {}) =>
  srv.json(`/api/v1/merchant/stores/${path}`, { method: init.method ?? "GET", headers: bearer(token), body: init.body });

function expectHidden(r: { status: number; body: any }, what: string) {
  expect({ what, status: r.status, success: r.body?.success }).toEqual({ what, status: 404, success: false });
  expect(typeof r.body.code).toBe("string");
}

async function placeOrder(k: TestKey): Promise<string> {
  const c = await srv.json("/api/v1/agent/cart", { method: "POST", headers: k.headers, body: { items: [{ product_id: BOARD, quantity: 1 }] } });
  expect(c.status).toBe(201);
  const r = await srv.json("/api/v1/agent/checkout", { method: "POST", headers: k.headers, body: { cartId: c.body.data.id, payment_method: "MOCK" } });
  expect(r.status).toBe(200);
  return r.body.data.order_id;
}

describe("webhook endpoints of another store", () => {
  test("another merchant cannot delete, rotate, list deliveries of or redeliver an endpoint, by either store's slug: 404, and nothing changes", async () => {
    const created = await asMerchant(admin, "demo-store/webhooks", { method: "POST", body: { url: "http://127.0.0.1:9/hooks", events: ["order.created"] } });
    expect(created.status).toBe(201);
    const id: string = created.body.data.id;
    const delivery = crypto.randomUUID();
    for (const slug of ["demo-store", STRANGER_STORE]) {
      const base = `${slug}/webhooks/${id}`;
      expectHidden(await asMerchant(stranger, base, { method: "DELETE" }), `delete via ${slug}`);
      expectHidden(await asMerchant(stranger, `${base}/rotate-secret`, { method: "POST", body: {} }), `rotate via ${slug}`);
      expectHidden(await asMerchant(stranger, `${base}/deliveries`), `deliveries via ${slug}`);
      expectHidden(await asMerchant(stranger, `${base}/deliveries/${delivery}/redeliver`, { method: "POST" }), `redeliver via ${slug}`);
    }
    const mine = await asMerchant(stranger, `${STRANGER_STORE}/webhooks`);
    expect(mine.status).toBe(200);
    expect(mine.body.data.map((e: { id: string }) => e.id)).not.toContain(id);
    const owner = await asMerchant(admin, "demo-store/webhooks");
    const still = owner.body.data.find((e: { id: string }) => e.id === id);
    expect(still).toBeDefined();
    // a rotation would have left a retiring secret with an expiry behind
    expect(still.previousSecretExpiresAt).toBeNull();
    expect(JSON.stringify(still)).not.toContain("whsec_");
  });
});

describe("refunds, orders and the allowlist of another store", () => {
  let orderId: string;
  let refundId: string;

  beforeAll(async () => {
    orderId = await placeOrder(key);
    const r = await srv.json(`/api/v1/agent/orders/${orderId}/refund`, { method: "POST", headers: key.headers, body: { reason: "ownership test" } });
    expect(r.status).toBe(201);
    refundId = r.body.data.refund_id;
    expect(typeof refundId).toBe("string");
  });

  test("another merchant cannot approve or reject a refund through either store's slug, and the refund stays pending", async () => {
    for (const slug of ["demo-store", STRANGER_STORE]) {
      for (const decision of ["approve", "reject"]) {
        expectHidden(await asMerchant(stranger, `${slug}/refunds/${refundId}/${decision}`, { method: "POST" }), `${decision} via ${slug}`);
      }
    }
    const list = await asMerchant(admin, "demo-store/refunds");
    const row = list.body.data.find((r: { refund_id: string }) => r.refund_id === refundId);
    expect(row?.status).toBe("PENDING_APPROVAL");
    const theirs = await asMerchant(stranger, `${STRANGER_STORE}/refunds`);
    expect(theirs.status).toBe(200);
    expect(JSON.stringify(theirs.body.data)).not.toContain(refundId);
  });

  test("another merchant cannot move an order through either store's slug, and its status is unchanged", async () => {
    for (const slug of ["demo-store", STRANGER_STORE]) {
      expectHidden(await asMerchant(stranger, `${slug}/orders/${orderId}/status`, { method: "POST", body: { status: "canceled" } }), `cancel via ${slug}`);
    }
    const read = await srv.json(`/api/v1/agent/orders/${orderId}`, { headers: key.headers });
    expect(read.status).toBe(200);
    expect(String(read.body.data.status).toLowerCase()).not.toBe("canceled");
  });

  test("another merchant cannot read or change a store's allowlist: 404", async () => {
    expectHidden(await asMerchant(stranger, "demo-store/allowlist"), "allowlist read");
    expectHidden(await asMerchant(stranger, `demo-store/allowlist/${key.id}`, { method: "POST", body: { status: "blocked" } }), "allowlist write");
    // the agent's refund requests to demo-store still pass the allowlist
    const again = await srv.json(`/api/v1/agent/orders/${await placeOrder(key)}/refund`, { method: "POST", headers: key.headers, body: { reason: "still allowed" } });
    expect(again.status).toBe(201);
  });

  test("another agent key cannot read the order or ask for its refund: 404", async () => {
    expectHidden(await srv.json(`/api/v1/agent/orders/${orderId}`, { headers: other.headers }), "order read");
    expectHidden(await srv.json(`/api/v1/agent/orders/${orderId}/refund`, { method: "POST", headers: other.headers, body: { amount: 1 } }), "refund");
  });
});

describe("agent keys of another user", () => {
  test("a user's key list holds only that user's keys", async () => {
    const mine = await srv.json("/api/v1/agent-keys", { headers: bearer(stranger) });
    expect(mine.status).toBe(200);
    const ids = mine.body.data.map((k: { id: string }) => k.id);
    expect(ids).toContain(other.id);
    expect(ids).not.toContain(key.id);
    expect(JSON.stringify(mine.body)).not.toContain("agnt_");
  });
});

describe("carts and bridged checkout sessions of another agent", () => {
  test("another agent's cart is 404 for coupons and checkout preview, and the cart is unchanged", async () => {
    const c = await srv.json("/api/v1/agent/cart", { method: "POST", headers: key.headers, body: { items: [{ product_id: BOARD, quantity: 1 }] } });
    const cartId = c.body.data.id;
    expectHidden(await srv.json("/api/v1/agent/apply-coupon", { method: "POST", headers: other.headers, body: { cartId, code: "WELCOME10" } }), "coupon");
    expectHidden(await srv.json("/api/v1/agent/cart/apply-coupon", { method: "POST", headers: other.headers, body: { cartId, code: "WELCOME10" } }), "coupon alias");
    expectHidden(await srv.json("/api/v1/agent/checkout/preview", { method: "POST", headers: other.headers, body: { cartId } }), "preview");
    expectHidden(await srv.json("/api/v1/agent/checkout", { method: "POST", headers: other.headers, body: { cartId, payment_method: "MOCK" } }), "checkout");
    const mine = await srv.json(`/api/v1/agent/cart/${cartId}`, { headers: key.headers });
    expect(mine.status).toBe(200);
    expect(JSON.stringify(mine.body.data)).not.toMatch(/WELCOME10/);
  });

  test("another agent cannot update, complete or cancel an ACP checkout session: 404, and it stays open", async () => {
    const created = await srv.json("/api/v1/agent/acp/checkout_sessions", { method: "POST", headers: key.headers, body: { items: [{ id: BOARD, quantity: 1 }] } });
    expect(created.status).toBe(201);
    const id = created.body.id;
    const base = `/api/v1/agent/acp/checkout_sessions/${id}`;
    for (const [path, body] of [
      [base, { items: [{ id: BOARD, quantity: 2 }] }],
      [`${base}/complete`, { payment_data: { token: "tok_approve", provider: "sandbox" } }],
      [`${base}/cancel`, {}],
    ] as const) {
      const r = await srv.json(path, { method: "POST", headers: other.headers, body });
      expect({ path, status: r.status }).toEqual({ path, status: 404 });
    }
    const mine = await srv.json(base, { headers: key.headers });
    expect(mine.status).toBe(200);
    expect(mine.body.status).not.toMatch(/canceled|completed/);
  });

  test("another agent cannot read, complete or cancel a UCP checkout session: 404, and it stays open", async () => {
    const created = await srv.json("/api/v1/agent/ucp/checkout-sessions", {
      method: "POST",
      headers: key.headers,
      body: { line_items: [{ item: { id: BOARD }, quantity: 1 }], currency: "USD" },
    });
    expect(created.status).toBe(201);
    const base = `/api/v1/agent/ucp/checkout-sessions/${created.body.id}`;
    expect((await srv.json(base, { headers: other.headers })).status).toBe(404);
    const payment = { payment: { instruments: [{ id: "pi_1", handler_id: "sandbox_card", credential: { type: "token", token: "tok_approve" } }] } };
    for (const [path, body] of [
      [`${base}/complete`, payment],
      [`${base}/cancel`, {}],
    ] as const) {
      const r = await srv.json(path, { method: "POST", headers: other.headers, body });
      expect({ path, status: r.status }).toEqual({ path, status: 404 });
    }
    const mine = await srv.json(base, { headers: key.headers });
    expect(mine.status).toBe(200);
    expect(mine.body.status).toBe("ready_for_complete");
  });
});

describe("customer identity tokens", () => {
  test("a merchant cannot mint customer identity tokens for another merchant's store: 404", async () => {
    const r = await srv.json("/api/v1/merchant/stores/demo-store/customer-tokens", { method: "POST", headers: bearer(stranger), body: { customer_id: "c-1" } });
    expectHidden(r, "customer token");
    expect(JSON.stringify(r.body)).not.toContain("eyJ");
  });
});
