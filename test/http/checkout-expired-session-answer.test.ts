/**
 * Completing a checkout session past its expiry (helper B, B-5). Before its timer ran, the answer was 404
 * CHECKOUT_SESSION_NOT_FOUND with `details.status: EXPIRED`; once the timer had ended it (EXPIRED), the same call was
 * 409 SESSION_INACTIVE, and with another key 409 IDEMPOTENCY_KEY_CONFLICT. What the caller is told must not depend on
 * when the reminder poll came: both are the spec's CHECKOUT_SESSION_NOT_FOUND ("no such checkout session or expired"),
 * for every key (docs/checkout.md "complete_checkout idempotency").
 *
 * The server's clock is the test's own; the reminder poll runs (every 200 ms). "Before the timer": the session's timer
 * row is moved far ahead, so the poll leaves it alone while the clock passes the session's expiry.
 */
import { beforeAll, describe, expect, test } from "bun:test";
import { ManualClock } from "../../actors/runtime/clock.ts";
import { ALL_SCOPES, createKey, type TestKey } from "../helpers/agents.ts";
import { useServer } from "../helpers/server.ts";
import { until } from "../helpers/wait.ts";
import { declinedSession as declinedFirstAttempt, holdSessionTimer, READY_LIFETIME_MS, sessionStatusOf } from "../helpers/due-session.ts";

const clock = new ManualClock(Date.now());
const srv = useServer({ seed: true, boot: { clock } });
let key: TestKey;

beforeAll(async () => {
  key = await createKey(srv, { scopes: ALL_SCOPES });
}, 120_000);

type Res = { status: number; body: any };
const checkout = (body: Record<string, unknown>) => srv.json("/api/v1/agent/checkout", { method: "POST", headers: key.headers, body });
const sessionStatus = (cartId: string) => sessionStatusOf(srv, cartId);
/** What a caller branches on: status, code and the session's status in details. */
const outcome = (r: Res) => ({ status: r.status, code: r.body.code, session_status: r.body.details?.status, session: r.body.details?.checkout_session_id });

/** A session whose first attempt was declined (its key bound), READY_FOR_PAYMENT; `holdTimer`: its timer moved far ahead. */
async function declinedSession(holdTimer: boolean): Promise<{ cartId: string; sessionId: string; firstKey: string }> {
  const firstKey = crypto.randomUUID();
  const { cartId, sessionId } = await declinedFirstAttempt(srv, key, firstKey);
  if (holdTimer) await holdSessionTimer(srv, cartId);
  return { cartId, sessionId, firstKey };
}

describe("completing a session past its expiry", () => {
  test("before its timer ran, the session's own key and another key are both told 404 CHECKOUT_SESSION_NOT_FOUND with status EXPIRED", async () => {
    const { cartId, sessionId, firstKey } = await declinedSession(true);
    clock.advance(READY_LIFETIME_MS);
    const own = await checkout({ cartId, checkout_session_id: sessionId, payment_method: "tok_approve", idempotency_key: firstKey });
    const other = await checkout({ cartId, checkout_session_id: sessionId, payment_method: "tok_approve", idempotency_key: crypto.randomUUID() });
    // the timer has not run: the session is still stored as it was
    expect(await sessionStatus(cartId)).toBe("READY_FOR_PAYMENT");
    const want = { status: 404, code: "CHECKOUT_SESSION_NOT_FOUND", session_status: "EXPIRED", session: sessionId };
    expect([outcome(own), outcome(other)]).toEqual([want, want]);
  }, 60_000);

  test("after its timer ended it, the same calls get the same answers: 404 CHECKOUT_SESSION_NOT_FOUND with status EXPIRED, not 409", async () => {
    const { cartId, sessionId, firstKey } = await declinedSession(false);
    clock.advance(READY_LIFETIME_MS);
    await until("the session timer", () => sessionStatus(cartId), (s) => s === "EXPIRED");
    const own = await checkout({ cartId, checkout_session_id: sessionId, payment_method: "tok_approve", idempotency_key: firstKey });
    const other = await checkout({ cartId, checkout_session_id: sessionId, payment_method: "tok_approve", idempotency_key: crypto.randomUUID() });
    const want = { status: 404, code: "CHECKOUT_SESSION_NOT_FOUND", session_status: "EXPIRED", session: sessionId };
    expect([outcome(own), outcome(other)]).toEqual([want, want]);
    // nothing was charged, and the cart takes a new checkout
    const paid = await checkout({ cartId, payment_method: "tok_approve", idempotency_key: crypto.randomUUID() });
    expect({ status: paid.status, session: paid.body.data?.status }).toEqual({ status: 200, session: "COMPLETED" });
    expect(paid.body.data.checkout_session_id).not.toBe(sessionId);
  }, 60_000);
});
