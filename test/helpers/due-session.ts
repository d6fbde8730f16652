/**
 * Checkout sessions a test takes past their expiry (docs/checkout.md "Expiry"): the cart's stored session status, a
 * session whose first attempt was declined (READY_FOR_PAYMENT, its order pending), and its timer held back so a call
 * can come after the expiry but before the reminder poll ends the session.
 */
import { expect } from "bun:test";
import type { TestKey } from "./agents.ts";
import type { TestServer } from "./server.ts";

export const SKILLET = "399d72f1-303c-5cf3-bc6a-5c82714b85d4"; // demo-store, tracked stock
export const READY_LIFETIME_MS = 30 * 60_000; // docs/checkout.md "Expiry": OPEN/READY_FOR_PAYMENT 30 min

/** The checkout session status the cart has stored (what its timer, or a call, last wrote). */
export const sessionStatusOf = async (srv: Pick<TestServer, "db">, cartId: string): Promise<string | undefined> =>
  (await srv.db.sql<{ s: string }[]>`SELECT state->'session'->>'status' AS s FROM actor_state WHERE kind = 'cart' AND id = ${cartId}`)[0]?.s;

/** Moves the cart's session timer ten years ahead: the reminder poll leaves the session alone past its expiry. */
export async function holdSessionTimer(srv: Pick<TestServer, "db">, cartId: string): Promise<void> {
  await srv.db.sql`UPDATE actor_reminders SET due_at = now() + interval '10 years' WHERE kind = 'cart' AND id = ${cartId}`;
}

/** A cart of one skillet whose one-call checkout under `idempotencyKey` was declined (402): its session waits READY_FOR_PAYMENT. */
export async function declinedSession(srv: Pick<TestServer, "json">, key: TestKey, idempotencyKey: string = crypto.randomUUID()): Promise<{ cartId: string; sessionId: string }> {
  const c = await srv.json("/api/v1/agent/cart", { method: "POST", headers: key.headers, body: { items: [{ product_id: SKILLET, quantity: 1 }] } });
  expect(c.status).toBe(201);
  const cartId = c.body.data.id as string;
  const declined = await srv.json("/api/v1/agent/checkout", {
    method: "POST",
    headers: key.headers,
    body: { cartId, payment_method: "tok_decline", idempotency_key: idempotencyKey },
  });
  expect(declined.status).toBe(402);
  return { cartId, sessionId: declined.body.details.checkout_session_id as string };
}
