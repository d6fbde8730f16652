/**
 * REST refusals name their next step (review AD-9), as CART_NOT_MUTABLE and ORDER_NOT_CANCELLABLE do: a feature
 * outside the key's tier names the tier to mint, a SANDBOX key names the key that can buy, a missing wallet names the
 * route that provisions one, and a second idempotency_key on a checkout session says not to repeat that call (the
 * spec's remedy stop) and which calls go on (AD-3).
 */
import { describe, expect, test } from "bun:test";
import { ALL_SCOPES, createKey } from "../helpers/agents.ts";
import { useServer } from "../helpers/server.ts";

const BOARD = "5befd987-79cd-540c-8a5d-2ba5a30aed41"; // DS-0011, 26.95, demo-store
const srv = useServer({ seed: true, config: { RATE_LIMITS_ENABLED: false } });

describe("refusals with the way on", () => {
  test("a STARTER key's negotiate is feature_not_in_tier naming a PRO key to mint", async () => {
    const key = await createKey(srv, { scopes: ALL_SCOPES, tier: "STARTER" });
    const r = await srv.json("/api/v1/agent/negotiate", { method: "POST", headers: key.headers, body: { productId: BOARD, merchantSlug: "demo-store", bidPrice: 20, currency: "USD" } });
    expect(r.status).toBe(403);
    expect(r.body.code).toBe("feature_not_in_tier");
    expect(r.body.error).toContain('POST /api/v1/agent-keys {"tier":"PRO"}');
  });

  test("a SANDBOX key's cart is sandbox_not_allowed naming a STARTER key", async () => {
    const key = await createKey(srv, { scopes: ALL_SCOPES, tier: "SANDBOX" });
    const r = await srv.json("/api/v1/agent/cart", { method: "POST", headers: key.headers, body: { items: [{ product_id: BOARD, quantity: 1 }] } });
    expect(r.status).toBe(403);
    expect(r.body.code).toBe("sandbox_not_allowed");
    expect(r.body.error).toContain("STARTER key or higher");
  });

  test("GET /agent/wallet without a wallet names the provisioning route", async () => {
    const key = await createKey(srv, { scopes: ALL_SCOPES, tier: "PRO" });
    const r = await srv.json("/api/v1/agent/wallet", { headers: key.headers });
    expect(r.status).toBe(404);
    expect(r.body.error).toContain("POST /api/v1/agent/wallet/provision");
  });

  test("a second idempotency_key on a session is IDEMPOTENCY_KEY_CONFLICT: remedy stop for that call, the message says so and names the calls that go on", async () => {
    const key = await createKey(srv, { scopes: ALL_SCOPES, tier: "PRO" });
    const cart = await srv.json("/api/v1/agent/cart", { method: "POST", headers: key.headers, body: { items: [{ product_id: BOARD, quantity: 1 }] } });
    const checkout = (body: Record<string, unknown>) => srv.json("/api/v1/agent/checkout", { method: "POST", headers: key.headers, body: { cartId: cart.body.data.id, ...body } });
    const declined = await checkout({ payment_method: "tok_decline", idempotency_key: crypto.randomUUID() });
    expect(declined.status).toBe(402);
    const r = await checkout({ payment_method: "tok_approve", idempotency_key: crypto.randomUUID(), checkout_session_id: declined.body.details.checkout_session_id });
    expect(r.status).toBe(409);
    expect(r.body.code).toBe("IDEMPOTENCY_KEY_CONFLICT");
    expect(r.body.error).toContain("Do not repeat this call with this key");
    expect(r.body.error).toContain("including retries with another payment method");
  });
});
