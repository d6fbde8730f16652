/**
 * Audit B (session 17), B5: a checkout that carries an x402 payment — `pay_with_wallet: true`, an `x402_payload`, or a
 * `PAYMENT-SIGNATURE` / `X-PAYMENT` header — but no `payment_rail` runs on the default card rail: the x402 payment
 * is ignored and the store's default method (the sandbox's card on file, `tok_approve`) is charged, 200 COMPLETED
 * with `payment_rail: "card"`. The agent asked to pay from its wallet and its card was charged instead. Same class
 * as session 16's A-10 (an ignored payment_methods key charged the default method, MED, now refused with 400).
 * Expected: 400 INVALID_ARGUMENT naming payment_rail, before anything is held or charged.
 */
import { afterAll, beforeAll, expect, test } from "bun:test";
import { ALL_SCOPES, createKey, type TestKey } from "../helpers/agents.ts";
import { startServer, type TestServer } from "../helpers/server.ts";

const STORE = "maple-pine-home"; // card only, default method tok_approve, trust above 0.7
let srv: TestServer;
let key: TestKey;
let productId: string;

beforeAll(async () => {
  srv = await startServer({ seed: true, config: { RATE_LIMITS_ENABLED: false } });
  key = await createKey(srv, { scopes: ALL_SCOPES });
  const [p] = await srv.db.sql<{ id: string }[]>`
    SELECT id FROM products WHERE store_slug = ${STORE} AND in_stock AND active AND variants = '[]'::jsonb ORDER BY id LIMIT 1`;
  productId = p!.id;
  const w = await srv.json("/api/v1/agent/wallet/provision", { method: "POST", headers: key.headers, body: {} });
  expect(w.status).toBe(201);
}, 120_000);
afterAll(async () => {
  await srv?.stop();
}, 30_000);

async function newCart(): Promise<string> {
  const r = await srv.json("/api/v1/agent/cart", { method: "POST", headers: key.headers, body: { items: [{ product_id: productId, quantity: 1 }] } });
  expect(r.status).toBe(201);
  return r.body.data.id;
}

const x402Payload = { x402Version: 2, accepted: {}, payload: {} };
const cases: { name: string; body: Record<string, unknown>; headers?: Record<string, string> }[] = [
  { name: "pay_with_wallet: true", body: { pay_with_wallet: true } },
  { name: "an x402_payload", body: { x402_payload: x402Payload } },
  { name: "a PAYMENT-SIGNATURE header", body: {}, headers: { "PAYMENT-SIGNATURE": Buffer.from(JSON.stringify(x402Payload)).toString("base64") } },
];

for (const c of cases) {
  test(`${c.name} without payment_rail is refused, and the card on file is not charged`, async () => {
    const cartId = await newCart();
    const r = await srv.json("/api/v1/agent/checkout", { method: "POST", headers: { ...key.headers, ...(c.headers ?? {}) }, body: { cartId, ...c.body } });
    const paid = await srv.db.sql`SELECT id FROM orders WHERE cart_id = ${cartId} AND status = 'paid'`;
    // fails now: 200 COMPLETED, payment_rail "card", one paid order
    expect(paid).toHaveLength(0);
    expect(r.status).toBe(400);
    expect(r.body).toMatchObject({ success: false, code: "INVALID_ARGUMENT", details: { field: "payment_rail" } });
  });
}
