/**
 * A checkout session past its expiry whose timer has not run yet (the reminder poll comes later, a host was down, the
 * poll is busy) is expired, not revived. The completion already said so ("The checkout session has expired; preview
 * the cart again", 404 with `details.status: EXPIRED`), but the preview that answer asks for took the due session for
 * a live one and previewed it again: the same session id came back with the old attempt's idempotency key still bound,
 * so the new key an agent uses for a new session was refused 409 IDEMPOTENCY_KEY_CONFLICT, and the one-call checkout
 * with a new key likewise. docs/checkout.md: an expired session takes no key; a preview opens a new session, which
 * takes a new key. The preview (and the one-call checkout) now ends such a session as its timer would: EXPIRED, its
 * pending orders canceled, `checkout.abandoned` written; then a new session is opened. So does a shipping choice on the
 * cart (MCP get_shipping_rates), which reopened the due session OPEN with its key bound.
 *
 * The server runs without a reminder poll (`reminderPollMs: 0`), so no timer runs behind the test's back; its clock is
 * the test's own.
 */
import { beforeAll, describe, expect, test } from "bun:test";
import { ManualClock } from "../../actors/runtime/clock.ts";
import { ALL_SCOPES, createKey, type TestKey } from "../helpers/agents.ts";
import { useServer } from "../helpers/server.ts";
import { connect } from "../mcp/helpers.ts";

const SKILLET = "399d72f1-303c-5cf3-bc6a-5c82714b85d4"; // demo-store, tracked stock
const READY_LIFETIME_MS = 30 * 60_000; // docs/checkout.md "Expiry": OPEN/READY_FOR_PAYMENT 30 min

const clock = new ManualClock(Date.now());
const srv = useServer({ seed: true, boot: { clock, reminderPollMs: 0 } });
let key: TestKey;

beforeAll(async () => {
  key = await createKey(srv, { scopes: ALL_SCOPES });
}, 120_000);

const cart = async () => {
  const r = await srv.json("/api/v1/agent/cart", { method: "POST", headers: key.headers, body: { items: [{ product_id: SKILLET, quantity: 1 }] } });
  expect(r.status).toBe(201);
  return r.body.data.id as string;
};
const checkout = (body: Record<string, unknown>) => srv.json("/api/v1/agent/checkout", { method: "POST", headers: key.headers, body });
const preview = (cartId: string) => srv.json("/api/v1/agent/checkout/preview", { method: "POST", headers: key.headers, body: { cartId } });

/** A session whose first attempt was declined (its key bound, its order pending), then left past its expiry. */
async function dueSession(): Promise<{ cartId: string; sessionId: string; firstKey: string }> {
  const cartId = await cart();
  const firstKey = crypto.randomUUID();
  const declined = await checkout({ cartId, payment_method: "tok_decline", idempotency_key: firstKey });
  expect(declined.status).toBe(402);
  const sessionId = declined.body.details.checkout_session_id as string;
  clock.advance(READY_LIFETIME_MS);
  return { cartId, sessionId, firstKey };
}

describe("a session past its expiry before its timer ran", () => {
  test("its completion says it expired, and the preview that answer asks for opens a new session that a new key pays", async () => {
    const { cartId, sessionId, firstKey } = await dueSession();
    const expired = await checkout({ cartId, checkout_session_id: sessionId, payment_method: "tok_approve", idempotency_key: firstKey });
    expect(expired.status).toBe(404);
    expect(expired.body.details.status).toBe("EXPIRED");

    const p = await preview(cartId);
    expect(p.status).toBe(200);
    expect(p.body.data.checkout_session_id).not.toBe(sessionId);
    expect(p.body.data.status).toBe("READY_FOR_PAYMENT");

    const paid = await checkout({ cartId, checkout_session_id: p.body.data.checkout_session_id, payment_method: "tok_approve", idempotency_key: crypto.randomUUID() });
    expect(paid.status).toBe(200);
    expect(paid.body.data.status).toBe("COMPLETED");
  });

  test("a one-call checkout with a new key pays in a new session instead of answering IDEMPOTENCY_KEY_CONFLICT", async () => {
    const { cartId, sessionId } = await dueSession();
    const r = await checkout({ cartId, payment_method: "tok_approve", idempotency_key: crypto.randomUUID() });
    expect(r.status).toBe(200);
    expect(r.body.data.status).toBe("COMPLETED");
    expect(r.body.data.checkout_session_id).not.toBe(sessionId);
  });

  test("the due session ends as its timer would end it: EXPIRED, its pending order canceled, checkout.abandoned written", async () => {
    const { cartId, sessionId } = await dueSession();
    const [before] = await srv.db.sql<{ id: string; status: string }[]>`SELECT id, status FROM orders WHERE checkout_session_id = ${sessionId}`;
    expect(before.status).toBe("pending");

    expect((await preview(cartId)).status).toBe(200);
    const [after] = await srv.db.sql<{ status: string }[]>`SELECT status FROM orders WHERE id = ${before.id}`;
    expect(after.status).toBe("canceled");
    const events = await srv.db.sql<{ status: string }[]>`
      SELECT payload->>'status' AS status FROM webhook_events WHERE kind = 'checkout.abandoned' AND payload->>'cartId' = ${cartId}`;
    expect(events.map((e) => e.status)).toEqual(["EXPIRED"]);
  });

  test("an MCP shipping choice (get_shipping_rates with the cart) ends it too instead of reopening it, so the next preview is a new session", async () => {
    const { cartId, sessionId } = await dueSession();
    const mcp = await connect(srv, { headers: key.headers });
    try {
      const rates = await mcp.call("get_shipping_rates", { cart_id: cartId, country_code: "US", postal_code: "10001" });
      expect(rates.isError).toBeFalsy();
    } finally {
      await mcp.close();
    }
    const p = await preview(cartId);
    expect(p.status).toBe(200);
    expect(p.body.data.checkout_session_id).not.toBe(sessionId);
    const paid = await checkout({ cartId, checkout_session_id: p.body.data.checkout_session_id, payment_method: "tok_approve", idempotency_key: crypto.randomUUID() });
    expect(paid.status).toBe(200);
  });

  test("a session one millisecond before its expiry is previewed again as before: the same session, its key still bound", async () => {
    const cartId = await cart();
    const firstKey = crypto.randomUUID();
    const declined = await checkout({ cartId, payment_method: "tok_decline", idempotency_key: firstKey });
    const sessionId = declined.body.details.checkout_session_id as string;
    clock.advance(READY_LIFETIME_MS - 1);
    const p = await preview(cartId);
    expect(p.body.data.checkout_session_id).toBe(sessionId);
    const other = await checkout({ cartId, checkout_session_id: sessionId, payment_method: "tok_approve", idempotency_key: crypto.randomUUID() });
    expect(other.status).toBe(409);
    expect(other.body.code).toBe("IDEMPOTENCY_KEY_CONFLICT");
  });
});
