/**
 * Every REST action that takes no body refuses one that carries keys (helper E's sweep of gateway/rest, session 21,
 * after helper C's three routes in bodyless-routes-refuse-keys.test.ts): a refund's approve/reject, a checkout
 * session's cancel, the sandbox buyer's approve/reject, a webhook delivery's redeliver, the search reindex, and the
 * DELETEs of an agent key (own and the operator's), a coupon and a webhook endpoint. They ignored any body, so
 * `{"amount": 100}` sent to a refund's …/approve refunded the 500 requested and answered 200, and
 * `{"decision": "reject"}` sent to a payment's …/approve approved it. Now (gateway/rest/optional-body.ts `noBody`): no
 * body or `{}` is the action, answered as before; a key is 400 validation_error naming it (allowed: none) with nothing
 * done; a body that is no JSON object is 400.
 */
import { beforeAll, describe, expect, test } from "bun:test";
import { ALL_SCOPES, createKey, type TestKey } from "../helpers/agents.ts";
import { useServer } from "../helpers/server.ts";
import { expectUnknownKey } from "../helpers/unknown-key.ts";

const srv = useServer({ seed: true, admin: true, config: { RATE_LIMITS_ENABLED: false } });
const BOARD = "5befd987-79cd-540c-8a5d-2ba5a30aed41"; // untracked stock, demo-store
const STORE = "/api/v1/merchant/stores/demo-store";
let key: TestKey;
let admin: Record<string, string>;

beforeAll(async () => {
  admin = { authorization: `Bearer ${srv.admin}` };
  key = await createKey(srv, { scopes: ALL_SCOPES });
}, 60_000);

type Init = { headers?: Record<string, string>; body?: unknown };
const call = (method: string, path: string, init: Init = {}) => srv.json(path, { method, ...init });
/** A request with this raw body text (no body at all when undefined). */
const raw = (method: string, path: string, headers: Record<string, string>, body?: string, contentType = "application/json") =>
  fetch(`${srv.url}${path}`, { method, headers: { ...headers, ...(body === undefined ? {} : { "content-type": contentType }) }, ...(body === undefined ? {} : { body }) }).then(async (r) => ({
    status: r.status,
    body: await r.json(),
  }));

const paidCart = async () => {
  const c = await call("POST", "/api/v1/agent/cart", { headers: key.headers, body: { items: [{ product_id: BOARD, quantity: 1 }] } });
  expect(c.status).toBe(201);
  return c.body.data.id as string;
};

describe("the merchant's refund decision", () => {
  test("approve with an amount is 400 naming it and the request stays pending; reject with a reason likewise; approve with no body refunds what was asked", async () => {
    const cartId = await paidCart();
    const paid = await call("POST", "/api/v1/agent/checkout", { headers: key.headers, body: { cartId, payment_method: "MOCK", idempotency_key: crypto.randomUUID() } });
    expect(paid.status).toBe(200);
    const [order] = await srv.db.sql<{ id: string }[]>`SELECT id FROM orders WHERE cart_id = ${cartId}`;
    const asked = await call("POST", `/api/v1/agent/orders/${order!.id}/refund`, { headers: key.headers, body: { amount: 500 } });
    expect(asked.status).toBe(201);
    const refundId = asked.body.data.refund_id as string;
    const status = async () => (await srv.db.sql<{ status: string }[]>`SELECT status FROM order_refunds WHERE id = ${refundId}`)[0]!.status;

    expectUnknownKey(await call("POST", `${STORE}/refunds/${refundId}/approve`, { headers: admin, body: { amount: 100 } }), "amount", []);
    expectUnknownKey(await call("POST", `${STORE}/refunds/${refundId}/reject`, { headers: admin, body: { reason: "damaged" } }), "reason", []);
    expect((await raw("POST", `${STORE}/refunds/${refundId}/reject`, admin, "[1]")).status).toBe(400);
    expect(await status()).toBe("PENDING_APPROVAL");

    const approved = await raw("POST", `${STORE}/refunds/${refundId}/approve`, admin);
    expect(approved.status).toBe(200);
    expect(approved.body.data).toMatchObject({ refund_id: refundId, status: "REFUNDED", amount_minor: 500 });
  }, 30_000);
});

describe("the agent's checkout session cancel", () => {
  test("a body with a key is 400 naming it and the session stays; {} cancels it, as before", async () => {
    const cartId = await paidCart();
    const p = await call("POST", "/api/v1/agent/checkout/preview", { headers: key.headers, body: { cartId } });
    expect(p.status).toBe(200);
    const sessionId = p.body.data.checkout_session_id as string;
    expectUnknownKey(await call("POST", `/api/v1/agent/checkout/${sessionId}/cancel`, { headers: key.headers, body: { reason: "changed my mind" } }), "reason", []);
    const text = await raw("POST", `/api/v1/agent/checkout/${sessionId}/cancel`, key.headers, "please", "text/plain");
    expect({ status: text.status, code: text.body.code }).toEqual({ status: 400, code: "validation_error" });
    // the session is still live after the refusals: {} cancels it, and only once
    const canceled = await call("POST", `/api/v1/agent/checkout/${sessionId}/cancel`, { headers: key.headers, body: {} });
    expect(canceled.status).toBe(200);
    const again = await call("POST", `/api/v1/agent/checkout/${sessionId}/cancel`, { headers: key.headers });
    expect({ status: again.status, code: again.body.code }).toEqual({ status: 409, code: "SESSION_INACTIVE" });
  }, 30_000);
});

describe("the sandbox buyer's decision at the approval link", () => {
  test("{decision: reject} sent to …/approve is 400 naming it and the payment still waits; …/reject with no body refuses it", async () => {
    const cartId = await paidCart();
    const asked = await call("POST", "/api/v1/agent/checkout", { headers: key.headers, body: { cartId, idempotency_key: crypto.randomUUID(), payment_method: "tok_needs_approval" } });
    expect({ status: asked.status, code: asked.body.code }).toEqual({ status: 202, code: "user_action_required" });
    const link = new URL(asked.body.details.approval_url as string).pathname;
    const intentId = link.split("/")[5]!;
    const state = async () => (await srv.db.sql<{ state: string }[]>`SELECT state FROM sandbox_ledger_intents WHERE intent_id = ${intentId}`)[0]!.state;
    const before = await state();

    expectUnknownKey(await call("POST", `${link}/approve`, { body: { decision: "reject" } }), "decision", []);
    expect(await state()).toBe(before);

    const refused = await raw("POST", `${link}/reject`, {});
    expect(refused.status).toBe(200);
    expect(refused.body.data).toMatchObject({ intent_id: intentId, decision: "reject", status: "not_approved" });
  }, 30_000);
});

describe("the DELETEs", () => {
  test("an agent key's revoke (the owner's and the operator's) refuses a body with a key and leaves the key active; no body or {} revokes it", async () => {
    const revoked = async (id: string) => (await srv.db.sql<{ r: boolean }[]>`SELECT revoked_at IS NOT NULL AS r FROM agent_keys WHERE id = ${id}`)[0]!.r;
    const own = await createKey(srv, { token: srv.admin });
    expectUnknownKey(await call("DELETE", `/api/v1/agent-keys/${own.id}`, { headers: admin, body: { keep: true } }), "keep", []);
    expect(await revoked(own.id)).toBe(false);
    const gone = await raw("DELETE", `/api/v1/agent-keys/${own.id}`, admin);
    expect(gone.status).toBe(200);
    expect(gone.body.data.revokedAt).not.toBeNull();

    const other = await createKey(srv, { token: srv.admin });
    expectUnknownKey(await call("DELETE", `/api/v1/admin/agent-keys/${other.id}`, { headers: admin, body: { reason: "leaked" } }), "reason", []);
    expect((await raw("DELETE", `/api/v1/admin/agent-keys/${other.id}`, admin, "[]")).status).toBe(400);
    expect(await revoked(other.id)).toBe(false);
    const byOperator = await call("DELETE", `/api/v1/admin/agent-keys/${other.id}`, { headers: admin, body: {} });
    expect(byOperator.status).toBe(200);
    expect(await revoked(other.id)).toBe(true);
  }, 30_000);

  test("a coupon's deactivation refuses {active: true} and the coupon stays active; no body deactivates it", async () => {
    const made = await call("POST", `${STORE}/coupons`, { headers: admin, body: { code: "NOBODY5", kind: "fixed", value: 5 } });
    expect([200, 201]).toContain(made.status);
    const active = async () => ((await call("GET", `${STORE}/coupons`, { headers: admin })).body.data as { code: string; active: boolean }[]).find((c) => c.code === "NOBODY5")!.active;
    expectUnknownKey(await call("DELETE", `${STORE}/coupons/NOBODY5`, { headers: admin, body: { active: true } }), "active", []);
    expect(await active()).toBe(true);
    const off = await raw("DELETE", `${STORE}/coupons/NOBODY5`, admin);
    expect(off.status).toBe(200);
    expect(await active()).toBe(false);
  }, 30_000);

  test("a webhook endpoint's deletion refuses a body with a key and the endpoint stays; no body deletes it", async () => {
    const made = await call("POST", `${STORE}/webhooks`, { headers: admin, body: { url: "http://127.0.0.1:9/hook", events: ["order.created"] } });
    expect(made.status).toBe(201);
    const id = made.body.data.id as string;
    const deleted = async () => (await srv.db.sql<{ d: boolean }[]>`SELECT deleted_at IS NOT NULL AS d FROM webhook_endpoints WHERE id = ${id}`)[0]!.d;
    expectUnknownKey(await call("DELETE", `${STORE}/webhooks/${id}`, { headers: admin, body: { force: true } }), "force", []);
    expect(await deleted()).toBe(false);
    const gone = await raw("DELETE", `${STORE}/webhooks/${id}`, admin);
    expect(gone.status).toBe(200);
    expect(await deleted()).toBe(true);
  }, 30_000);
});

describe("the operator's and merchant's other actions", () => {
  test("a delivery's redeliver refuses a body with a key before looking for it; with no body an unknown delivery is 404 as before", async () => {
    const made = await call("POST", `${STORE}/webhooks`, { headers: admin, body: { url: "http://127.0.0.1:9/hook", events: ["order.created"] } });
    expect(made.status).toBe(201);
    const path = `${STORE}/webhooks/${made.body.data.id}/deliveries/${crypto.randomUUID()}/redeliver`;
    expectUnknownKey(await call("POST", path, { headers: admin, body: { endpoint: "http://elsewhere.example" } }), "endpoint", []);
    const missing = await raw("POST", path, admin);
    expect({ status: missing.status, code: missing.body.code }).toEqual({ status: 404, code: "not_found" });
  }, 30_000);

  test("the search reindex refuses {slug} (it rebuilds everything, not one store) and rebuilds with no body or {}", async () => {
    expectUnknownKey(await call("POST", "/api/v1/admin/search/reindex", { headers: admin, body: { slug: "demo-store" } }), "slug", []);
    expect((await raw("POST", "/api/v1/admin/search/reindex", admin)).status).toBe(200);
    expect((await call("POST", "/api/v1/admin/search/reindex", { headers: admin, body: {} })).status).toBe(200);
  }, 60_000);
});

describe("the OAuth and AP2 management routes outside gateway/rest", () => {
  const registerClient = async () => {
    const r = await call("POST", "/api/v1/oauth/register", {
      headers: admin,
      body: { client_name: "no-body m2m", grant_types: ["client_credentials"], token_endpoint_auth_method: "client_secret_basic", scope: "search" },
    });
    expect(r.status).toBe(201);
    return r.body.client_id as string;
  };
  const listed = async (clientId: string) => {
    const list = await call("GET", "/api/v1/oauth/clients", { headers: admin });
    expect(list.status).toBe(200);
    return (list.body.data as { clientId: string }[]).some((c) => c.clientId === clientId);
  };

  test("an OAuth client's secret replacement refuses {secret} and issues none; no body replaces it, as before", async () => {
    const id = await registerClient();
    const refused = await call("POST", `/api/v1/oauth/clients/${id}/secret`, { headers: admin, body: { secret: "mine" } });
    expectUnknownKey(refused, "secret", []);
    expect(JSON.stringify(refused.body)).not.toContain("mcps_");
    const replaced = await raw("POST", `/api/v1/oauth/clients/${id}/secret`, admin);
    expect(replaced.status).toBe(200);
    expect(replaced.body.data.clientSecret).toStartWith("mcps_");
  }, 30_000);

  test("an OAuth client's deletion refuses a body with a key and the client stays listed; no body deletes it", async () => {
    const id = await registerClient();
    expectUnknownKey(await call("DELETE", `/api/v1/oauth/clients/${id}`, { headers: admin, body: { force: true } }), "force", []);
    expect(await listed(id)).toBe(true);
    expect((await raw("DELETE", `/api/v1/oauth/clients/${id}`, admin)).status).toBe(200);
    expect(await listed(id)).toBe(false);
  }, 30_000);

  test("a grant's revoke, a client's unblock and an AP2 user key's removal refuse a key before looking anything up; with no body an unknown one is 404 as before", async () => {
    const grant = "/api/v1/oauth/grants/00000000-0000-4000-8000-000000000001";
    const unblock = `/api/v1/admin/oauth/blocked-clients/${encodeURIComponent("https://agent.example/client.json")}`;
    const ap2 = `/api/v1/agent-keys/${key.id}/ap2-user-keys/kid-none`;
    for (const path of [grant, unblock, ap2]) {
      expectUnknownKey(await call("DELETE", path, { headers: admin, body: { reason: "x" } }), "reason", []);
      const missing = await raw("DELETE", path, admin);
      expect({ path, status: missing.status, code: missing.body.code }).toEqual({ path, status: 404, code: "not_found" });
    }
  }, 30_000);
});
