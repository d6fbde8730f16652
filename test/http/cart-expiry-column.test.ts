/**
 * The cart retention index's column (migration 0096, `actor_state.expiry_ms`) as a checkout journey through the API
 * writes it: set when the cart is created, left as it was by the preview and the payment (their updates of the cart's
 * row stay HOT), and cleared by the retention run that finds the paid cart past its horizon, so no later run reads it.
 * A cart whose checkout ended without payment is OPEN again and still goes.
 */
import { afterAll, beforeAll, expect, test } from "bun:test";
import { createKey, type TestKey } from "../helpers/agents.ts";
import { startServer, type TestServer } from "../helpers/server.ts";
import { runRetention, type RetentionSettings } from "../../infra/retention.ts";

const BOARD = "5befd987-79cd-540c-8a5d-2ba5a30aed41"; // DS-0011, untracked stock, demo store (MOCK)
const DAY = 24 * 60 * 60 * 1000;
const SETTINGS: RetentionSettings = { RETENTION_BATCH: 100, RETENTION_OAUTH_GRACE_DAYS: 1, RETENTION_CART_GRACE_DAYS: 7, RETENTION_WEBHOOK_EVENT_DAYS: 30 };

let srv: TestServer;
let key: TestKey;
beforeAll(async () => {
  srv = await startServer({ config: { RETENTION_INTERVAL_MS: 0 } });
  key = await createKey(srv, { scopes: ["cart", "checkout"] });
}, 60_000);
afterAll(async () => {
  await srv?.stop();
});

type Row = { expiry_ms: string | null; status: string; expires_at: string };
const row = async (cartId: string): Promise<Row | undefined> =>
  (
    await srv.db.sql<Row[]>`SELECT expiry_ms::text, state->'cart'->>'status' AS status, state->'cart'->>'expiresAt' AS expires_at
      FROM actor_state WHERE kind = 'cart' AND id = ${cartId}`
  )[0];

test("a paid cart's row keeps the expiry its creation wrote while its expiry slides; the retention run past its horizon clears it and keeps the cart", async () => {
  const c = await srv.json("/api/v1/agent/cart", { method: "POST", headers: key.headers, body: { items: [{ product_id: BOARD, quantity: 1 }] } });
  expect(c.status).toBe(201);
  const cartId = c.body.data.id as string;
  const created = await row(cartId);
  expect(created).toMatchObject({ status: "OPEN", expiry_ms: created!.expires_at });
  await Bun.sleep(5);
  const p = await srv.json("/api/v1/agent/checkout/preview", { method: "POST", headers: key.headers, body: { cartId } });
  expect(p.status).toBe(200);
  const pay = await srv.json("/api/v1/agent/checkout", { method: "POST", headers: key.headers, body: { cartId, checkout_session_id: p.body.data.checkout_session_id, payment_method: "MOCK" } });
  expect(pay.status).toBe(200);
  const paid = await row(cartId);
  expect(paid!.status).toBe("COMPLETED");
  expect(Number(paid!.expires_at)).toBeGreaterThan(Number(created!.expires_at));
  expect(paid!.expiry_ms).toBe(created!.expiry_ms);

  const horizonPassed = Number(created!.expiry_ms) + 8 * DAY;
  expect((await runRetention(srv.db.sql, SETTINGS, horizonPassed)).carts).toBe(0);
  expect(await row(cartId)).toMatchObject({ status: "COMPLETED", expiry_ms: null });
}, 30_000);

test("a cart whose checkout was canceled is OPEN again with its expiry in the column, and goes a grace after it", async () => {
  const c = await srv.json("/api/v1/agent/cart", { method: "POST", headers: key.headers, body: { items: [{ product_id: BOARD, quantity: 1 }] } });
  expect(c.status).toBe(201);
  const cartId = c.body.data.id as string;
  const p = await srv.json("/api/v1/agent/checkout/preview", { method: "POST", headers: key.headers, body: { cartId } });
  expect(p.status).toBe(200);
  const sessionId = p.body.data.checkout_session_id as string;
  // a retention run found it checking out and cleared its column (as for a paid cart)
  await srv.db.sql`UPDATE actor_state SET expiry_ms = NULL WHERE kind = 'cart' AND id = ${cartId}`;
  const cancel = await srv.json(`/api/v1/agent/checkout/${sessionId}/cancel`, { method: "POST", headers: key.headers, body: {} });
  expect(cancel.status).toBe(200);
  const open = await row(cartId);
  expect(open).toMatchObject({ status: "OPEN", expiry_ms: open!.expires_at });
  await srv.db.sql`DELETE FROM actor_reminders WHERE kind = 'cart' AND id = ${cartId}`;
  expect((await runRetention(srv.db.sql, SETTINGS, Number(open!.expires_at) + 8 * DAY)).carts).toBeGreaterThanOrEqual(1);
  expect(await row(cartId)).toBeUndefined();
}, 30_000);
