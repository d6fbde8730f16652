/**
 * The `checkout:delegate` scope: delegated checkout through the protocol bridges only (docs/access.md, Scopes).
 *
 * It granted nothing (audit X-4): actors/agent/access.ts accepted it only when a request said `delegated: true`,
 * which no admission ever did, so every ACP/UCP/AP2 route answered 403 "lacks the checkout scope" to a key made for
 * it, and the MCP `ucp_*` checkout tools listed only `checkout`. A bridge path is a delegated checkout by its route
 * alone, so its rule now takes `checkout` or `checkout:delegate`; `POST /agent/checkout` stays `checkout` only
 * (admission runs before the body that would say which protocol it speaks is read). Each surface here is driven by a
 * key of `search cart checkout:delegate` (cart: a bridged create makes a cart, docs/decisions.md F7).
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { generateKeyPair } from "jose";
import * as ap2 from "../helpers/ap2.ts";
import { createKey, login, type TestKey } from "../helpers/agents.ts";
import { startServer, type TestServer } from "../helpers/server.ts";
import { accept, connect, DEMO, errorOf, structured } from "../mcp/helpers.ts";

const BOARD = "5befd987-79cd-540c-8a5d-2ba5a30aed41"; // demo-store, 26.95, untracked stock

let srv: TestServer;
let admin: string;
let delegateOnly: TestKey;
let userKey: CryptoKey;

beforeAll(async () => {
  srv = await startServer({ seed: true, config: { RATE_LIMITS_ENABLED: false } });
  admin = await login(srv);
  delegateOnly = await createKey(srv, { scopes: ["search", "cart", "checkout:delegate"], token: admin });
  const pair = await generateKeyPair("ES256", { extractable: true });
  userKey = pair.privateKey;
  expect((await ap2.registerUserKey(srv, admin, delegateOnly.id, "phone", pair)).status).toBe(200);
}, 120_000);
afterAll(async () => {
  await srv?.stop();
});

const send = (method: string, path: string, body?: unknown) =>
  srv.json(`/api/v1/agent${path}`, { method, headers: delegateOnly.headers, ...(body === undefined ? {} : { body }) });
const orderStatus = async (orderId: string) => (await srv.db.sql<{ status: string }[]>`SELECT status FROM orders WHERE id = ${orderId}`)[0]?.status;

describe("a key with checkout:delegate (and cart) checks out through every protocol bridge", () => {
  test("ACP: it creates, reads and completes a session, and the order is paid", async () => {
    const created = await send("POST", "/acp/checkout_sessions", { items: [{ id: BOARD, quantity: 1 }] });
    expect({ status: created.status, code: created.body?.code }).toEqual({ status: 201, code: undefined });
    const read = await send("GET", `/acp/checkout_sessions/${created.body.id}`);
    expect(read.status).toBe(200);
    expect(read.body.id).toBe(created.body.id);
    const done = await send("POST", `/acp/checkout_sessions/${created.body.id}/complete`, { payment_data: { token: "tok_approve", provider: "stripe" } });
    expect(done.status).toBe(200);
    expect(done.body.status).toBe("completed");
    expect(await orderStatus(done.body.order.id)).toBe("paid");
  });

  test("UCP: it creates, updates, reads and completes a session, and the order is paid", async () => {
    const created = await send("POST", "/ucp/checkout-sessions", { line_items: [{ item: { id: BOARD }, quantity: 1 }], currency: "USD" });
    expect(created.status).toBe(201);
    const id = created.body.id as string;
    const updated = await send("PUT", `/ucp/checkout-sessions/${id}`, { id, line_items: [{ item: { id: BOARD }, quantity: 2 }], currency: "USD" });
    expect(updated.status).toBe(200);
    expect((await send("GET", `/ucp/checkout-sessions/${id}`)).status).toBe(200);
    const done = await send("POST", `/ucp/checkout-sessions/${id}/complete`, {
      payment: { instruments: [{ id: "pi_1", handler_id: "sandbox_card", credential: { type: "token", token: "tok_approve" } }] },
    });
    expect(done.status).toBe(200);
    expect(done.body.status).toBe("completed");
    expect(await orderStatus(done.body.order.id)).toBe("paid");
  });

  test("AP2: it pays a cart under a payment mandate the user signed", async () => {
    const cart = await send("POST", "/cart", { items: [{ product_id: BOARD, quantity: 1 }] });
    expect(cart.status).toBe(201);
    const forCart = await ap2.demoStoreMandate(userKey, `pm_${crypto.randomUUID()}`);
    const paid = await send("POST", "/ap2/payment-mandates", forCart(cart.body.data.id));
    expect(paid.status).toBe(200);
    expect(paid.body.data.order_ids).toHaveLength(1);
    expect(await orderStatus(paid.body.data.order_ids[0])).toBe("paid");
  });

  test("MCP: the ucp_* checkout tools create, read and complete a checkout, while the native complete_checkout is forbidden", async () => {
    const c = await connect(srv, { headers: delegateOnly.headers, elicit: accept });
    try {
      const created = structured(await c.call("ucp_create_checkout", { line_items: [{ product_id: BOARD, quantity: 1 }] }));
      const session = created.checkout_session_id as string;
      expect(structured(await c.call("ucp_get_checkout", { checkout_session_id: session })).checkout_session_id).toBe(session);
      expect(structured(await c.call("ucp_update_checkout", { checkout_session_id: session })).checkout_session_id).toBe(session);
      const native = errorOf(await c.call("complete_checkout", { checkout_session_id: session, idempotency_key: crypto.randomUUID(), payment_method: "MOCK" }));
      expect(native).toMatchObject({ code: "forbidden", details: { scope: "checkout" } });
      const done = structured(await c.call("ucp_complete_checkout", { checkout_session_id: session, idempotency_key: crypto.randomUUID(), payment_method: "MOCK" }));
      expect(done.status).toBe("COMPLETED");
      expect(await orderStatus(done.order_id as string)).toBe("paid");
    } finally {
      await c.close();
    }
  }, 60_000);
});

describe("an OAuth token with checkout:delegate (client_credentials) on the MCP endpoint", () => {
  test("pays through ucp_complete_checkout; complete_checkout is 403 insufficient_scope asking for checkout", async () => {
    const reg = await srv.json("/api/v1/oauth/register", {
      method: "POST",
      headers: { authorization: `Bearer ${admin}` },
      body: { client_name: "bridge-only m2m", grant_types: ["client_credentials"], token_endpoint_auth_method: "client_secret_basic", scope: "search cart checkout:delegate" },
    });
    expect(reg.status).toBe(201);
    const basic = btoa(`${encodeURIComponent(reg.body.client_id)}:${encodeURIComponent(reg.body.client_secret)}`);
    const t = await srv.json("/api/v1/oauth/token", {
      method: "POST",
      headers: { "content-type": "application/x-www-form-urlencoded", authorization: `Basic ${basic}` },
      body: new URLSearchParams({ grant_type: "client_credentials", scope: "search cart checkout:delegate", resource: `${srv.url}/${DEMO}/mcp` }).toString(),
    });
    expect(t.status).toBe(200);
    const headers = { authorization: `Bearer ${t.body.access_token}` };
    const c = await connect(srv, { headers, elicit: accept });
    let session: string;
    try {
      session = structured(await c.call("ucp_create_checkout", { line_items: [{ product_id: BOARD, quantity: 1 }] })).checkout_session_id;
    } finally {
      await c.close();
    }
    // the native tool: HTTP 403 with the scope challenge (MCP authorization), before anything is asked or paid
    const native = await srv.fetch(`/${DEMO}/mcp`, {
      method: "POST",
      headers: { ...headers, "content-type": "application/json", accept: "application/json, text/event-stream", "mcp-protocol-version": "2025-11-25" },
      body: JSON.stringify({ jsonrpc: "2.0", id: 1, method: "tools/call", params: { name: "complete_checkout", arguments: { checkout_session_id: session, idempotency_key: crypto.randomUUID(), payment_method: "MOCK" } } }),
    });
    expect(native.status).toBe(403);
    expect(native.headers.get("www-authenticate")).toContain('error="insufficient_scope"');
    expect(native.headers.get("www-authenticate")).toContain('scope="search cart checkout:delegate checkout"');
    await native.arrayBuffer();
    const again = await connect(srv, { headers, elicit: accept });
    try {
      const done = structured(await again.call("ucp_complete_checkout", { checkout_session_id: session, idempotency_key: crypto.randomUUID(), payment_method: "MOCK" }));
      expect(done.status).toBe("COMPLETED");
      expect(await orderStatus(done.order_id as string)).toBe("paid");
    } finally {
      await again.close();
    }
  }, 60_000);
});

describe("checkout:delegate is bridge-only", () => {
  test("a direct REST checkout is 403 forbidden naming the checkout scope", async () => {
    const cart = await send("POST", "/cart", { items: [{ product_id: BOARD, quantity: 1 }] });
    expect(cart.status).toBe(201);
    const r = await send("POST", "/checkout", { cartId: cart.body.data.id, payment_method: "MOCK" });
    expect(r.status).toBe(403);
    expect(r.body).toMatchObject({ code: "forbidden", details: { scope: "checkout", acceptedScopes: ["checkout"] } });
  });

  test("a direct REST checkout with another protocol's body is refused the same way, in that protocol's shape", async () => {
    const r = await send("POST", "/checkout", { line_items: [{ item: { id: BOARD }, quantity: 1 }] });
    expect(r.status).toBe(403);
    expect(r.body.messages).toEqual([expect.objectContaining({ type: "error", code: "forbidden", details: { scope: "checkout", acceptedScopes: ["checkout"] } })]);
  });

  test("a key without either checkout scope is 403 on a bridge, naming checkout and accepting both", async () => {
    const none = await createKey(srv, { scopes: ["search", "cart"], token: admin });
    const r = await srv.json("/api/v1/agent/acp/checkout_sessions", { method: "POST", headers: none.headers, body: { items: [{ id: BOARD, quantity: 1 }] } });
    expect(r.status).toBe(403);
    expect(r.body).toMatchObject({ code: "forbidden", details: { scope: "checkout", acceptedScopes: ["checkout", "checkout:delegate"] } });
  });
});
