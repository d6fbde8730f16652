/**
 * A one-call checkout (cart id, no session id) naming another key than the one its live session is bound to is
 * refused before its preview (review V2-3): the refusal says "nothing was done", and nothing is: the session's
 * approved state (and its expiry) stay as they were, so a price move beyond the blocking cut still blocks the first
 * key instead of being paid without reconfirmation.
 */
import { beforeAll, describe, expect, test } from "bun:test";
import { ALL_SCOPES, createKey, type TestKey } from "../helpers/agents.ts";
import { useServer } from "../helpers/server.ts";

const BOARD = "5befd987-79cd-540c-8a5d-2ba5a30aed41"; // demo-store, stock not tracked

const srv = useServer({ seed: true, config: { RATE_LIMITS_ENABLED: false } });
let key: TestKey;
beforeAll(async () => {
  key = await createKey(srv, { scopes: ALL_SCOPES, tier: "ENTERPRISE" });
}, 120_000);

const post = (path: string, body: unknown) => srv.json(path, { method: "POST", headers: key.headers, body });

/** A previewed session whose first attempt (key k1) was declined: READY_FOR_PAYMENT, bound to k1. */
async function declinedOnce() {
  const cart = await post("/api/v1/agent/cart", { items: [{ product_id: BOARD, quantity: 1 }] });
  expect(cart.status).toBe(201);
  const cartId = cart.body.data.id as string;
  const preview = await post("/api/v1/agent/checkout/preview", { cartId });
  expect(preview.status).toBe(200);
  const sessionId = preview.body.data.checkout_session_id as string;
  const k1 = crypto.randomUUID();
  const declined = await post("/api/v1/agent/checkout", { cartId, checkout_session_id: sessionId, idempotency_key: k1, payment_method: "tok_decline" });
  expect(declined.status).toBe(402);
  return { cartId, sessionId, k1 };
}

async function sessionRow(sessionId: string) {
  const [row] = await srv.db.sql<{ state: { session: { id: string; stateHash: string; expiresAt: number | null; status: string } } }[]>`
    SELECT state FROM actor_state WHERE kind = 'cart' AND state->'session'->>'id' = ${sessionId}`;
  return row?.state.session;
}

describe("a one-call checkout with another key than its session's", () => {
  test("is refused with IDEMPOTENCY_KEY_CONFLICT naming the session, and the first key is still blocked by a price move beyond the cut", async () => {
    const [p] = await srv.db.sql<{ price: number }[]>`SELECT price_minor::int AS price FROM products WHERE id = ${BOARD}`;
    const { cartId, sessionId, k1 } = await declinedOnce();
    const before = await sessionRow(sessionId);
    await srv.db.sql`UPDATE products SET price_minor = ${Math.round(p!.price * 1.5)}, updated_at = now() WHERE id = ${BOARD}`;
    try {
      const stray = await post("/api/v1/agent/checkout", { cartId, idempotency_key: crypto.randomUUID(), payment_method: "tok_approve" });
      expect(stray.status).toBe(409);
      expect(stray.body.code).toBe("IDEMPOTENCY_KEY_CONFLICT");
      expect(stray.body.error).toContain("nothing was done");
      expect(stray.body.details).toEqual({ status: "READY_FOR_PAYMENT", next: ["retry_with_first_key", "cancel_checkout_then_preview"], checkout_session_id: sessionId });
      // Nothing was done: the approved state and the expiry are the ones of the preview.
      const after = await sessionRow(sessionId);
      expect(after?.stateHash).toBe(before!.stateHash);
      expect(after?.expiresAt).toBe(before!.expiresAt);
      const pay = await post("/api/v1/agent/checkout", { cartId, checkout_session_id: sessionId, idempotency_key: k1, payment_method: "tok_approve" });
      expect(pay.status).toBe(409);
      expect(pay.body.code).toBe("STATE_EXECUTION_BLOCKED");
      expect(await srv.db.sql`SELECT 1 FROM orders WHERE cart_id = ${cartId} AND status = 'paid'`).toHaveLength(0);
    } finally {
      await srv.db.sql`UPDATE products SET price_minor = ${p!.price}, updated_at = now() WHERE id = ${BOARD}`;
    }
  }, 60_000);

  test("is refused before its card tokens are checked, and the first key's one-call then pays the session", async () => {
    const { cartId, sessionId, k1 } = await declinedOnce();
    const stray = await post("/api/v1/agent/checkout", { cartId, idempotency_key: crypto.randomUUID(), payment_method: "tok_bogus" });
    expect(stray.status).toBe(409);
    expect(stray.body.code).toBe("IDEMPOTENCY_KEY_CONFLICT");
    const pay = await post("/api/v1/agent/checkout", { cartId, idempotency_key: k1, payment_method: "tok_approve" });
    expect(pay.status).toBe(200);
    expect(pay.body.data.status).toBe("COMPLETED");
    expect(pay.body.data.checkout_session_id).toBe(sessionId);
  }, 60_000);
});
