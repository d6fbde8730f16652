/**
 * The cart's IDEMPOTENCY_KEY_CONFLICT on ACP and UCP says the way on in the protocol's own terms (engineer B, session
 * 11; follows review S-2). A session's complete always pays under the key the bridge derives from the session, so the
 * cart refuses it as a conflict only when the session's cart was put into payment through another route (here REST,
 * under the agent's own `idempotency_key`). Before, the answer carried REST's text ("retry with the key of its first
 * attempt", "cancel the session and preview the cart again"): a key and calls an ACP/UCP client does not have. Now
 * `forProtocol` (gateway/bridge/index.ts → rollback-text.ts `bridgeKeyConflict`) names the protocol's cancel and a new
 * session where the cart's session accepts a cancel, and a read while that payment runs; code, status and details
 * stay the cart's. A cart paid through the other route is answered with its order (200), not a conflict.
 */
import { beforeAll, describe, expect, test } from "bun:test";
import { ALL_SCOPES, createKey, login, type TestKey } from "../helpers/agents.ts";
import { ACP, UCP, sendAs } from "../helpers/bridge.ts";
import { useServer } from "../helpers/server.ts";

const BOARD = "5befd987-79cd-540c-8a5d-2ba5a30aed41"; // DS-0011, demo-store, 26.95, untracked stock

const srv = useServer({ seed: true, config: { RATE_LIMITS_ENABLED: false } });
let key: TestKey;

beforeAll(async () => {
  key = await createKey(srv, { scopes: ALL_SCOPES, token: await login(srv) });
}, 120_000);

/** What REST and MCP say, which no ACP or UCP client can act on. */
const REST_WORDS = ["idempotency_key", "/api/v1/agent/checkout", "complete_checkout", "key of its first attempt", "preview the cart"];

function expectNoRestWords(text: string): void {
  for (const w of REST_WORDS) expect(text).not.toContain(w);
}

const cartOf = async (sessionId: string) =>
  (await srv.db.sql<{ cart_id: string }[]>`SELECT cart_id::text AS cart_id FROM bridge_sessions WHERE id = ${sessionId}`)[0]!.cart_id;
const paidOrdersOf = async (cartId: string) =>
  (await srv.db.sql<{ id: string }[]>`SELECT id::text AS id FROM orders WHERE cart_id = ${cartId} AND status = 'paid' ORDER BY id`).map((r) => r.id);

/** A REST one-call checkout of `cartId` under the agent's own key (no Idempotency-Key header: the body's key is the one). */
const restCheckout = (cartId: string, token: string, idempotencyKey: string) =>
  srv.json("/api/v1/agent/checkout", { method: "POST", headers: key.headers, body: { cartId, payment_method: token, idempotency_key: idempotencyKey } });

const acpCreate = async (): Promise<string> => {
  const r = await sendAs(srv, key, "POST", ACP, { items: [{ id: BOARD, quantity: 1 }] });
  expect(r.status).toBe(201);
  return r.body.id;
};
const ucpCreate = async (): Promise<string> => {
  const r = await sendAs(srv, key, "POST", UCP, { line_items: [{ item: { id: BOARD }, quantity: 1 }] });
  expect(r.status).toBe(201);
  return r.body.id;
};
const acpComplete = (id: string, token = "tok_approve") => sendAs(srv, key, "POST", `${ACP}/${id}/complete`, { payment_data: { token, provider: "stripe" } });
const ucpComplete = (id: string, token = "tok_approve") =>
  sendAs(srv, key, "POST", `${UCP}/${id}/complete`, { payment: { instruments: [{ handler_id: "sandbox_card", credential: { token } }] } });

/** The session's cart put into payment through REST with `token` under a key of the agent's own. */
async function paidThroughRest(sessionId: string, token: string, expectedStatus: number): Promise<{ cartId: string; firstKey: string; restSessionId: string }> {
  const cartId = await cartOf(sessionId);
  const firstKey = crypto.randomUUID();
  const r = await restCheckout(cartId, token, firstKey);
  expect(r.status).toBe(expectedStatus);
  const restSessionId = (r.body.data?.checkout_session_id ?? r.body.details?.checkout_session_id) as string;
  expect(typeof restSessionId).toBe("string");
  return { cartId, firstKey, restSessionId };
}

describe("ACP: the cart's key conflict names ACP's own operations", () => {
  test("after a REST attempt declined (READY_FOR_PAYMENT) a complete under another Idempotency-Key is 409 request_not_idempotent offering ACP's cancel and a new session, and that way works", async () => {
    const id = await acpCreate();
    const rest = await paidThroughRest(id, "tok_decline", 402);
    const r = await acpComplete(id);
    expect(r.status).toBe(409);
    expect(r.body).toMatchObject({ type: "request_not_idempotent", code: "IDEMPOTENCY_KEY_CONFLICT" });
    expect(r.body.details).toEqual({ status: "READY_FOR_PAYMENT", next: ["retry_with_first_key", "cancel_checkout_then_preview"], checkout_session_id: rest.restSessionId });
    expect(r.body.param).toBeUndefined();
    const text = r.body.message as string;
    expect(text).toContain("started through another route of this service");
    expect(text).toContain("cancel this checkout session (POST /checkout_sessions/{id}/cancel");
    expect(text).toContain("create a new checkout session (POST /checkout_sessions)");
    expect(text).not.toContain("/checkout-sessions");
    expectNoRestWords(text);
    expect(JSON.stringify(r.body)).not.toContain(rest.firstKey);
    expect(await paidOrdersOf(rest.cartId)).toEqual([]);

    // the way it names: the session's cancel is accepted, and a new session pays
    const canceled = await sendAs(srv, key, "POST", `${ACP}/${id}/cancel`);
    expect(canceled.status).toBe(200);
    expect(canceled.body.status).toBe("canceled");
    const fresh = await acpCreate();
    const paid = await acpComplete(fresh);
    expect(paid.status).toBe(200);
    expect(paid.body.status).toBe("completed");
  });

  test("while the REST payment's answer is lost (SETTLEMENT_UNKNOWN) the 409 says to read the session until it settles and offers no cancel, which is refused", async () => {
    const id = await acpCreate();
    const rest = await paidThroughRest(id, "tok_lost_response", 503);
    const r = await acpComplete(id);
    expect(r.status).toBe(409);
    expect(r.body).toMatchObject({ type: "request_not_idempotent", code: "IDEMPOTENCY_KEY_CONFLICT" });
    expect(r.body.details).toEqual({ status: "SETTLEMENT_UNKNOWN", next: ["retry_with_first_key"], checkout_session_id: rest.restSessionId });
    const text = r.body.message as string;
    expect(text).toContain("That payment is running (details.status): read this checkout session (GET /checkout_sessions/{id}) until it has settled");
    expect(text).not.toContain("/cancel");
    expectNoRestWords(text);
    const read = await sendAs(srv, key, "GET", `${ACP}/${id}`);
    expect(read.body.status).toBe("in_progress");
    const cancel = await sendAs(srv, key, "POST", `${ACP}/${id}/cancel`);
    expect({ status: cancel.status, code: cancel.body.code }).toEqual({ status: 409, code: "CHECKOUT_STATUS_INVALID" });

    // once that payment has settled (here its route asks again), completing the session answers with its order
    const settled = await restCheckout(rest.cartId, "tok_lost_response", rest.firstKey);
    expect(settled.status).toBe(200);
    const done = await acpComplete(id);
    expect(done.status).toBe(200);
    expect(done.body.status).toBe("completed");
    expect(done.body.order.id).toBe(settled.body.data.order_id);
    expect(await paidOrdersOf(rest.cartId)).toEqual([settled.body.data.order_id]);
  });
});

describe("UCP: the cart's key conflict names UCP's own operations", () => {
  test("after a REST attempt declined (READY_FOR_PAYMENT) a complete under another Idempotency-Key is UCP's error message offering its cancel and a new checkout; finishing the REST payment makes the next complete answer its order", async () => {
    const id = await ucpCreate();
    const rest = await paidThroughRest(id, "tok_decline", 402);
    const r = await ucpComplete(id);
    expect(r.status).toBe(409);
    expect(r.body.messages).toHaveLength(1);
    const m = r.body.messages[0];
    expect(m).toMatchObject({ type: "error", code: "IDEMPOTENCY_KEY_CONFLICT", severity: "requires_buyer_input" });
    expect(m.details).toEqual({ status: "READY_FOR_PAYMENT", next: ["retry_with_first_key", "cancel_checkout_then_preview"], checkout_session_id: rest.restSessionId });
    expect(m.path).toBeUndefined();
    const text = m.content as string;
    expect(text).toContain("finish that payment through the route that started it");
    expect(text).toContain("cancel this checkout session (POST /checkout-sessions/{id}/cancel");
    expect(text).toContain("create a new checkout session (POST /checkout-sessions)");
    expect(text).not.toContain("/checkout_sessions");
    expectNoRestWords(text);

    // the other way it names: the payment finished through the route that started it
    const finished = await restCheckout(rest.cartId, "tok_approve", rest.firstKey);
    expect(finished.status).toBe(200);
    const done = await ucpComplete(id);
    expect(done.status).toBe(200);
    expect(done.body.status).toBe("completed");
    expect(done.body.order.id).toBe(finished.body.data.order_id);
    expect(await paidOrdersOf(rest.cartId)).toEqual([finished.body.data.order_id]);
  });

  test("while the REST payment waits for the buyer (PENDING_EXTERNAL_CONFIRMATION) the 409 offers UCP's cancel, which is accepted", async () => {
    const id = await ucpCreate();
    const rest = await paidThroughRest(id, "tok_needs_approval", 202);
    const r = await ucpComplete(id);
    expect(r.status).toBe(409);
    const m = r.body.messages[0];
    expect(m).toMatchObject({ type: "error", code: "IDEMPOTENCY_KEY_CONFLICT" });
    expect(m.details).toEqual({ status: "PENDING_EXTERNAL_CONFIRMATION", next: ["retry_with_first_key", "cancel_checkout_then_preview"], checkout_session_id: rest.restSessionId });
    expect(m.content).toContain("cancel this checkout session (POST /checkout-sessions/{id}/cancel");
    expectNoRestWords(m.content);
    const canceled = await sendAs(srv, key, "POST", `${UCP}/${id}/cancel`);
    expect(canceled.status).toBe(200);
    expect(canceled.body.status).toBe("canceled");
    expect(await paidOrdersOf(rest.cartId)).toEqual([]);
  });
});

describe("what the rewrite leaves alone", () => {
  test("a cart COMPLETED through REST is answered on ACP and UCP with its order (200 completed), not a key conflict; nothing is charged again", async () => {
    for (const [create, complete] of [
      [acpCreate, acpComplete],
      [ucpCreate, ucpComplete],
    ] as const) {
      const id = await create();
      const rest = await paidThroughRest(id, "MOCK", 200);
      const paid = await paidOrdersOf(rest.cartId);
      expect(paid).toHaveLength(1);
      const r = await complete(id);
      expect(r.status).toBe(200);
      expect(r.body.status).toBe("completed");
      expect(r.body.order.id).toBe(paid[0]!);
      expect(await paidOrdersOf(rest.cartId)).toEqual(paid);
    }
  });

  test("an ACP Idempotency-Key reused with another request keeps the bridge's own text", async () => {
    const id = await acpCreate();
    const idem = { "idempotency-key": crypto.randomUUID() };
    const first = await srv.json(`${ACP}/${id}/complete`, { method: "POST", headers: { ...key.headers, ...idem }, body: { payment_data: { token: "tok_decline", provider: "stripe" } } });
    expect(first.status).toBe(402);
    const other = await srv.json(`${ACP}/${id}/complete`, { method: "POST", headers: { ...key.headers, ...idem }, body: { payment_data: { token: "tok_approve", provider: "stripe" } } });
    expect(other.status).toBe(409);
    expect(other.body).toMatchObject({ type: "request_not_idempotent", code: "IDEMPOTENCY_KEY_CONFLICT", message: "This Idempotency-Key was used with a different request.", details: { field: "Idempotency-Key" } });
  });
});
