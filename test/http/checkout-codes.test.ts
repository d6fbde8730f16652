/**
 * The payment-path codes of the spec's MCP table, reached over HTTP through their documented sandbox triggers
 * (docs/checkout.md "Sandbox card processor test tokens" and "Enforcement").
 */
import { beforeAll, describe, expect, test } from "bun:test";
import { ALL_SCOPES, createKey, type TestKey } from "../helpers/agents.ts";
import { useServer } from "../helpers/server.ts";

const P = {
  skillet: "399d72f1-303c-5cf3-bc6a-5c82714b85d4", // DS-0005, 36.95, tracked stock, demo-store
  board: "5befd987-79cd-540c-8a5d-2ba5a30aed41", // DS-0011, 26.95, untracked stock, demo-store
  green: "4ef5cf23-f828-5e3e-bd0b-833653bc4c5a", // GL-0001, greenleaf-living (card only)
  northwind: "48fc2333-c01c-50e5-aed8-60601e688c4c", // NW-0004, hosted storefront, no variants
};
const srv = useServer({ seed: true });
let key: TestKey;

beforeAll(async () => {
  key = await createKey(srv, { scopes: ALL_SCOPES });
}, 120_000);

async function cart(items: { product_id: string; quantity: number }[]): Promise<string> {
  const r = await srv.json("/api/v1/agent/cart", { method: "POST", headers: key.headers, body: { items } });
  expect(r.status).toBe(201);
  return r.body.data.id;
}
const checkout = (body: Record<string, unknown>) => srv.json("/api/v1/agent/checkout", { method: "POST", headers: key.headers, body });

describe("captured money that cannot complete an order", () => {
  test("tok_amount_mismatch is 409 PAYMENT_AMOUNT_MISMATCH with the capture reference; the order is never paid and is flagged for reconciliation", async () => {
    const id = await cart([{ product_id: P.skillet, quantity: 1 }]);
    const k = crypto.randomUUID();
    const r = await checkout({ cartId: id, payment_method: "tok_amount_mismatch", idempotency_key: k });
    expect(r.status).toBe(409);
    expect(r.body).toMatchObject({ success: false, code: "PAYMENT_AMOUNT_MISMATCH", details: { merchant_slug: "demo-store", expected_currency: "USD" } });
    expect(r.body.details.captured_minor).toBe(r.body.details.expected_minor + 1);
    expect(r.body.details.capture_reference).toMatch(/^cap_/);
    const [o] = await srv.db.sql<{ status: string; reconciliation: string; capture_ref: string }[]>`SELECT status, reconciliation, capture_ref FROM orders WHERE cart_id = ${id}`;
    expect(o).toEqual({ status: "pending", reconciliation: "amount_mismatch", capture_ref: r.body.details.capture_reference });
    // The same key asks the rail again and gets the same answer: never a second capture, never paid.
    const again = await checkout({ cartId: id, payment_method: "tok_amount_mismatch", idempotency_key: k });
    expect(again.status).toBe(409);
    expect(again.body.code).toBe("PAYMENT_AMOUNT_MISMATCH");
    const [n] = await srv.db.sql<{ n: number }[]>`SELECT count(*)::int AS n FROM sandbox_ledger_intents l JOIN orders o ON o.intent_id = l.intent_id WHERE o.cart_id = ${id}`;
    expect(n.n).toBe(1);
    const [after] = await srv.db.sql<{ status: string }[]>`SELECT status FROM orders WHERE cart_id = ${id}`;
    expect(after.status).toBe("pending");
  });

  test("tok_finalization_fails is 409 PAYMENT_CAPTURED_FINALIZATION_FAILED with the capture reference; the order is flagged finalization_failed", async () => {
    const id = await cart([{ product_id: P.board, quantity: 1 }]);
    const r = await checkout({ cartId: id, payment_method: "tok_finalization_fails", idempotency_key: crypto.randomUUID() });
    expect(r.status).toBe(409); // funds captured: a status the spec does not call retryable
    expect(r.body).toMatchObject({ success: false, code: "PAYMENT_CAPTURED_FINALIZATION_FAILED", details: { merchant_slug: "demo-store" } });
    expect(r.body.details.capture_reference).toMatch(/^cap_/);
    const [o] = await srv.db.sql<{ status: string; reconciliation: string }[]>`SELECT status, reconciliation FROM orders WHERE cart_id = ${id}`;
    expect(o).toEqual({ status: "pending", reconciliation: "finalization_failed" });
    const [ledger] = await srv.db.sql<{ state: string }[]>`SELECT l.state FROM sandbox_ledger_intents l JOIN orders o ON o.intent_id = l.intent_id WHERE o.cart_id = ${id}`;
    expect(ledger.state).toBe("captured");
  });
});

describe("merchant enforcement rules", () => {
  test("an order above the merchant's max_order_minor is 403 CHECKOUT_BLOCKED_BY_POLICY with rule_code; nothing is held or charged", async () => {
    await srv.db.sql`UPDATE stores SET checkout_enforcement = '{"max_order_minor": 5000}'::jsonb WHERE slug = 'greenleaf-living'`;
    try {
      const id = await cart([{ product_id: P.green, quantity: 10 }]);
      const r = await checkout({ cartId: id, payment_method: "tok_approve" });
      expect(r.status).toBe(403);
      expect(r.body).toMatchObject({ success: false, code: "CHECKOUT_BLOCKED_BY_POLICY", details: { merchant_slug: "greenleaf-living", rule_code: "MERCHANT_MAX_ORDER_AMOUNT", limit_minor: 5000 } });
      const orders = await srv.db.sql`SELECT id FROM orders WHERE cart_id = ${id}`;
      expect(orders).toHaveLength(0);
      const small = await cart([{ product_id: P.green, quantity: 1 }]);
      const ok = await checkout({ cartId: small, payment_method: "tok_approve" });
      expect(ok.status).toBe(200);
    } finally {
      await srv.db.sql`UPDATE stores SET checkout_enforcement = NULL WHERE slug = 'greenleaf-living'`;
    }
  });

  test("rules that cannot be read refuse fail-closed: 503 ENFORCEMENT_UNAVAILABLE, retryable, nothing held", async () => {
    await srv.db.sql`UPDATE stores SET checkout_enforcement = '{"unavailable": true}'::jsonb WHERE slug = 'greenleaf-living'`;
    try {
      const id = await cart([{ product_id: P.green, quantity: 1 }]);
      const r = await checkout({ cartId: id, payment_method: "tok_approve" });
      expect(r.status).toBe(503);
      expect(r.body).toMatchObject({ success: false, code: "ENFORCEMENT_UNAVAILABLE", details: { merchant_slug: "greenleaf-living" } });
      expect(await srv.db.sql`SELECT id FROM orders WHERE cart_id = ${id}`).toHaveLength(0);
      await srv.db.sql`UPDATE stores SET checkout_enforcement = NULL WHERE slug = 'greenleaf-living'`;
      const retry = await checkout({ cartId: id, payment_method: "tok_approve" });
      expect(retry.status).toBe(200);
    } finally {
      await srv.db.sql`UPDATE stores SET checkout_enforcement = NULL WHERE slug = 'greenleaf-living'`;
    }
  });
});

describe("hosted storefronts", () => {
  test("a hosted-storefront merchant refuses another rail: 403 NATIVE_CHECKOUT_REQUIRED with details.checkout_url", async () => {
    await srv.db.sql`UPDATE stores SET hosted_checkout_url = 'https://northwind.example/checkout' WHERE slug = 'northwind-outfitters'`;
    const id = await cart([{ product_id: P.northwind, quantity: 1 }]);
    const r = await checkout({
      cartId: id,
      payment_rail: "x402",
      x402_config: { merchant_wallet_address: "0x0000000000000000000000000000000000000001", network: "base-sepolia", facilitator_url: "https://facilitator.example" },
    });
    expect(r.status).toBe(403);
    expect(r.body).toMatchObject({
      success: false,
      code: "NATIVE_CHECKOUT_REQUIRED",
      details: { merchant_slug: "northwind-outfitters", rail: "x402", checkout_url: "https://northwind.example/checkout" },
    });
  });
});
