/**
 * Cancelling a checkout session past its expiry (helper D; the class of helper B's B-5). Before its timer ran, the
 * cancel answered 200 CANCELED (its orders canceled by the agent); once the timer had ended it (EXPIRED), the same call
 * was 409 SESSION_INACTIVE. An expired session cannot be canceled: both paths answer 409 SESSION_INACTIVE with
 * details.status EXPIRED, the session ends EXPIRED and its orders are canceled as the expiry cancels them, on REST
 * and on MCP's cancel_checkout (refused before the human is asked).
 *
 * The server's clock is the test's own; the reminder poll runs. "Before the timer": the session's timer row is moved
 * far ahead, so the poll leaves it alone while the clock passes the session's expiry.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { ManualClock } from "../../actors/runtime/clock.ts";
import { ALL_SCOPES, createKey, type TestKey } from "../helpers/agents.ts";
import { startServer, type TestServer } from "../helpers/server.ts";
import { accept, connect, counted, errorOf, type Connected } from "../mcp/helpers.ts";
import { UCP } from "../helpers/bridge.ts";
import { until } from "../helpers/wait.ts";
import { declinedSession, holdSessionTimer, READY_LIFETIME_MS, SKILLET, sessionStatusOf } from "../helpers/due-session.ts";

const clock = new ManualClock(Date.now());
let srv: TestServer;
let key: TestKey;
let mcp: Connected;

beforeAll(async () => {
  srv = await startServer({ seed: true, boot: { clock }, config: { RATE_LIMITS_ENABLED: false } });
  key = await createKey(srv, { scopes: ALL_SCOPES, tier: "ENTERPRISE" });
  mcp = await connect(srv, { headers: key.headers, elicit: accept });
}, 120_000);
afterAll(async () => {
  await mcp?.close();
  await srv?.stop();
});

type Res = { status: number; body: any };
const sessionStatus = (cartId: string) => sessionStatusOf(srv, cartId);
const orderOf = async (cartId: string) =>
  (await srv.db.sql<{ status: string; reason: string | null }[]>`
    SELECT o.status, (SELECT e.data->>'reason' FROM order_events e WHERE e.order_id = o.id AND e.to_status = 'canceled' LIMIT 1) AS reason
    FROM orders o WHERE o.cart_id = ${cartId}`)[0];
const outcome = (r: Res) => ({ status: r.status, code: r.body.code ?? null, session_status: r.body.details?.status ?? r.body.data?.status });

/** A session whose first attempt was declined (READY_FOR_PAYMENT, its order pending); `holdTimer`: its timer moved far ahead. */
async function previewedSession(holdTimer: boolean): Promise<{ cartId: string; sessionId: string }> {
  const session = await declinedSession(srv, key);
  expect(await orderOf(session.cartId)).toEqual({ status: "pending", reason: null });
  if (holdTimer) await holdSessionTimer(srv, session.cartId);
  return session;
}

const cancel = (sessionId: string) => srv.json(`/api/v1/agent/checkout/${sessionId}/cancel`, { method: "POST", headers: key.headers });
const WANT = { status: 409, code: "SESSION_INACTIVE", session_status: "EXPIRED" };

describe("cancelling a session past its expiry", () => {
  test("after its timer ended it, the cancel is 409 SESSION_INACTIVE with status EXPIRED", async () => {
    const { cartId, sessionId } = await previewedSession(false);
    clock.advance(READY_LIFETIME_MS);
    await until("the session timer", () => sessionStatus(cartId), (s) => s === "EXPIRED");
    expect(outcome(await cancel(sessionId))).toEqual(WANT);
    expect(await sessionStatus(cartId)).toBe("EXPIRED");
  }, 60_000);

  test("before its timer ran, the REST cancel gets the same answer, and the session ends EXPIRED with its order canceled as expired", async () => {
    const { cartId, sessionId } = await previewedSession(true);
    clock.advance(READY_LIFETIME_MS);
    expect(await sessionStatus(cartId)).toBe("READY_FOR_PAYMENT");
    expect(outcome(await cancel(sessionId))).toEqual(WANT);
    // ended as its timer would end it, not canceled
    expect(await sessionStatus(cartId)).toBe("EXPIRED");
    expect(await orderOf(cartId)).toEqual({ status: "canceled", reason: "checkout_expired" });
    // asked again: the same answer
    expect(outcome(await cancel(sessionId))).toEqual(WANT);
    // the cart takes a new checkout
    const pv = await srv.json("/api/v1/agent/checkout/preview", { method: "POST", headers: key.headers, body: { cartId } });
    expect(pv.status).toBe(200);
    expect(pv.body.data.checkout_session_id).not.toBe(sessionId);
  }, 60_000);

  test("before its timer ran, MCP cancel_checkout is refused SESSION_INACTIVE with status EXPIRED without asking the human", async () => {
    const { cartId, sessionId } = await previewedSession(true);
    clock.advance(READY_LIFETIME_MS);
    const { result, asked } = await counted(mcp, () => mcp.call("cancel_checkout", { checkout_session_id: sessionId }));
    const e = errorOf(result);
    expect({ code: e.code, status: e.details?.status, asked }).toEqual({ code: "SESSION_INACTIVE", status: "EXPIRED", asked: 0 });
    // nothing was canceled: the session is still as stored until its cancel or its timer ends it
    expect(await sessionStatus(cartId)).toBe("READY_FOR_PAYMENT");
  }, 60_000);

  test("a UCP cancel of a session whose cart's checkout is due answers 200 canceled before its timer ran as after it (the cart's refusal is 'already ended')", async () => {
    const answers: unknown[] = [];
    for (const holdTimer of [true, false]) {
      const r = await srv.json(UCP, { method: "POST", headers: { ...key.headers, "idempotency-key": crypto.randomUUID() }, body: { line_items: [{ item: { id: SKILLET }, quantity: 1 }] } });
      expect(r.status).toBe(201);
      const [row] = await srv.db.sql<{ cart_id: string }[]>`SELECT cart_id FROM bridge_sessions WHERE id = ${r.body.id}`;
      const cartId = row!.cart_id;
      expect(await sessionStatus(cartId)).toBe("READY_FOR_PAYMENT");
      if (holdTimer) await srv.db.sql`UPDATE actor_reminders SET due_at = now() + interval '10 years' WHERE kind = 'cart' AND id = ${cartId}`;
      clock.advance(READY_LIFETIME_MS);
      if (!holdTimer) await until("the session timer", () => sessionStatus(cartId), (st) => st === "EXPIRED");
      const c = await srv.json(`${UCP}/${r.body.id}/cancel`, { method: "POST", headers: { ...key.headers, "idempotency-key": crypto.randomUUID() } });
      answers.push({ status: c.status, ucp_status: c.body.status, cart_session: await sessionStatus(cartId) });
    }
    const want = { status: 200, ucp_status: "canceled", cart_session: "EXPIRED" };
    expect(answers).toEqual([want, want]);
  }, 60_000);
});
