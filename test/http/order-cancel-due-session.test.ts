/**
 * Cancelling a pending order whose checkout session is past its expiry (helper F; follows helper D's 2fedc99 for the
 * session cancel). The agent's order cancel (REST POST /agent/orders/{id}/cancel, MCP cancel_order) and the merchant's
 * (POST /merchant/stores/{slug}/orders/{id}/status canceled) go through the cart's cancel (cancelPendingViaSession),
 * which ends a due session as its timer would (EXPIRED, its order canceled checkout_expired) and refuses. The answer
 * must not depend on whether the reminder poll came first: the same status and code before and after the timer, never
 * a 500, the order canceled by the expiry (not by the agent or the merchant), and no money moved.
 *
 * The server's clock is the test's own; the reminder poll runs. "Before the timer": the session's timer row is moved
 * far ahead, so the poll leaves it alone while the clock passes the session's expiry.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { ManualClock } from "../../actors/runtime/clock.ts";
import { ALL_SCOPES, createKey, login, type TestKey } from "../helpers/agents.ts";
import { startServer, type TestServer } from "../helpers/server.ts";
import { accept, connect, errorOf, type Connected } from "../mcp/helpers.ts";
import { until } from "../helpers/wait.ts";
import { declinedSession, holdSessionTimer, READY_LIFETIME_MS, sessionStatusOf } from "../helpers/due-session.ts";

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

const sessionStatus = (cartId: string) => sessionStatusOf(srv, cartId);
/** The order as it ended: status, the cancel's reason and who canceled it, and whether any money moved. */
const orderEnd = async (orderId: string) =>
  (
    await srv.db.sql<{ status: string; reason: string | null; canceled_by: string | null; money: boolean }[]>`
    SELECT o.status,
      (SELECT e.data->>'reason' FROM order_events e WHERE e.order_id = o.id AND e.to_status = 'canceled' LIMIT 1) AS reason,
      (SELECT e.data->>'canceled_by' FROM order_events e WHERE e.order_id = o.id AND e.to_status = 'canceled' LIMIT 1) AS canceled_by,
      (o.paid_at IS NOT NULL OR o.capture_ref IS NOT NULL OR o.refunded_minor <> 0) AS money
    FROM orders o WHERE o.id = ${orderId}`
  )[0];

/**
 * A pending order whose session is due: its first attempt declined (READY_FOR_PAYMENT, the order pending), then the
 * clock past its expiry. `timerRan`: the session timer ended it (EXPIRED) before the call; else its timer is held.
 */
async function dueSessionOrder(timerRan: boolean): Promise<{ cartId: string; orderId: string }> {
  const { cartId } = await declinedSession(srv, key);
  const [o] = await srv.db.sql<{ id: string; status: string }[]>`SELECT id, status FROM orders WHERE cart_id = ${cartId}`;
  expect(o!.status).toBe("pending");
  if (!timerRan) await holdSessionTimer(srv, cartId);
  clock.advance(READY_LIFETIME_MS);
  if (timerRan) await until("the session timer", () => sessionStatus(cartId), (s) => s === "EXPIRED");
  else expect(await sessionStatus(cartId)).toBe("READY_FOR_PAYMENT");
  return { cartId, orderId: o!.id };
}

type Outcome = { status: number; code: string | null; order_status: unknown; session: string | undefined; order: unknown };
const ENDED = { status: "canceled", reason: "checkout_expired", canceled_by: null, money: false };

/** Runs `call` on a due session's order before and after its timer: what each answered and how the order ended. */
async function beforeAndAfterTimer(call: (orderId: string) => Promise<{ status: number; code: string | null; order_status: unknown }>): Promise<Outcome[]> {
  const out: Outcome[] = [];
  for (const timerRan of [false, true]) {
    const { cartId, orderId } = await dueSessionOrder(timerRan);
    const r = await call(orderId);
    out.push({ ...r, session: await sessionStatus(cartId), order: await orderEnd(orderId) });
  }
  return out;
}

describe("cancelling a pending order whose checkout session is past its expiry", () => {
  test("the agent's REST cancel answers 409 ORDER_NOT_CANCELLABLE (status canceled) before its timer ran as after, the order canceled as expired", async () => {
    const out = await beforeAndAfterTimer(async (orderId) => {
      const r = await srv.json(`/api/v1/agent/orders/${orderId}/cancel`, { method: "POST", headers: key.headers, body: {} });
      return { status: r.status, code: r.body.code ?? null, order_status: r.body.details?.status ?? r.body.data?.status };
    });
    const want = { status: 409, code: "ORDER_NOT_CANCELLABLE", order_status: "canceled", session: "EXPIRED", order: ENDED };
    expect(out).toEqual([want, want]);
  }, 60_000);

  test("MCP cancel_order answers the tool error ORDER_NOT_CANCELLABLE (status canceled) before its timer ran as after, the order canceled as expired", async () => {
    const out = await beforeAndAfterTimer(async (orderId) => {
      const e = errorOf(await mcp.call("cancel_order", { order_id: orderId }));
      return { status: 0, code: e.code ?? null, order_status: e.details?.status };
    });
    const want = { status: 0, code: "ORDER_NOT_CANCELLABLE", order_status: "canceled", session: "EXPIRED", order: ENDED };
    expect(out).toEqual([want, want]);
  }, 60_000);

  test("the merchant's cancel answers 409 conflict (status canceled) before its timer ran as after, the order canceled as expired, not by the merchant", async () => {
    const out = await beforeAndAfterTimer(async (orderId) => {
      // the seeded admin owns demo-store; logged in now, as the test's clock has moved past an earlier token's life
      const merchant = { authorization: `Bearer ${await login(srv)}` };
      const r = await srv.json(`/api/v1/merchant/stores/demo-store/orders/${orderId}/status`, { method: "POST", headers: merchant, body: { status: "canceled" } });
      expect(r.status).not.toBe(500);
      return { status: r.status, code: r.body.code ?? null, order_status: r.body.details?.status ?? r.body.data?.status };
    });
    // the order machine's refusal of a cancel of a canceled order: the merchant's cancel did not cancel it
    const want = { status: 409, code: "conflict", order_status: "canceled", session: "EXPIRED", order: ENDED };
    expect(out).toEqual([want, want]);
  }, 60_000);
});
