/**
 * An ACP/UCP session whose cart waits for the buyer's approval of a payment started through REST (docs/review.md
 * session 11, "known and left"): the read said "The buyer must approve the payment at <URL>, then complete the session
 * again", but that complete is the cart's key conflict (the waiting payment is bound to REST's key, not the one the
 * session pays under). Now the read tells such a payment from the session's own (its intent is derived from the key it
 * was started under: index.ts `sessionsOwnIntent`) and says the way on: finish it through the route that started it,
 * or cancel the session and create a new one, in the protocol's own operations; the session's own waiting payment
 * still says to complete again. Through HTTP against the real server, with real Postgres.
 */
import { beforeAll, describe, expect, test } from "bun:test";
import { ALL_SCOPES, createKey, login, type TestKey } from "../helpers/agents.ts";
import { ACP, UCP, sendAs } from "../helpers/bridge.ts";
import { BOARD } from "../helpers/partly-paid.ts";
import { continueUrl, decideAt } from "../helpers/sandbox-approval.ts";
import { useServer } from "../helpers/server.ts";

const srv = useServer({ seed: true, config: { RATE_LIMITS_ENABLED: false } });
let key: TestKey;

beforeAll(async () => {
  key = await createKey(srv, { scopes: ALL_SCOPES, token: await login(srv) });
}, 120_000);

const cartOf = async (sessionId: string) =>
  (await srv.db.sql<{ cart_id: string }[]>`SELECT cart_id::text AS cart_id FROM bridge_sessions WHERE id = ${sessionId}`)[0]!.cart_id;

/** The session's cart put into payment through REST with a token that asks the buyer's approval (202). */
async function waitingThroughRest(sessionId: string): Promise<string> {
  const r = await srv.json("/api/v1/agent/checkout", { method: "POST", headers: key.headers, body: { cartId: await cartOf(sessionId), payment_method: "tok_needs_approval", idempotency_key: crypto.randomUUID() } });
  expect(r.status).toBe(202);
  return String(r.body.details.approval_url);
}

const texts = (body: { messages: { content: string }[] }) => body.messages.map((m) => m.content).join("\n");

describe("a session whose cart waits on a payment started through REST", () => {
  test("ACP: the read shows the link and says to finish that payment through its route or cancel, not to complete again; the cancel it names works", async () => {
    const made = await sendAs(srv, key, "POST", ACP, { items: [{ id: BOARD, quantity: 1 }] });
    const id = made.body.id as string;
    await waitingThroughRest(id);
    const read = await sendAs(srv, key, "GET", `${ACP}/${id}`);
    expect(read.status).toBe(200);
    expect(continueUrl(read)).toMatch(/\/api\/v1\/sandbox\/payments\//);
    const text = texts(read.body);
    expect(text).not.toContain("then complete the session again");
    expect(text).toContain("started through another route of this service");
    expect(text).toContain("finish it through the route that started it");
    expect(text).toContain("cancel this checkout session (POST /checkout_sessions/{id}/cancel");

    // the way it names: the session's cancel is accepted
    const canceled = await sendAs(srv, key, "POST", `${ACP}/${id}/cancel`);
    expect({ status: canceled.status, state: canceled.body.status }).toEqual({ status: 200, state: "canceled" });
  }, 60_000);

  test("ACP: once the buyer decided at that link, the read does not say to complete again either", async () => {
    const made = await sendAs(srv, key, "POST", ACP, { items: [{ id: BOARD, quantity: 1 }] });
    const id = made.body.id as string;
    const link = await waitingThroughRest(id);
    expect((await decideAt(srv, link, "approve")).status).toBe(200);
    const read = await sendAs(srv, key, "GET", `${ACP}/${id}`);
    // a payment running (another route's), not ready_for_payment: this session's complete is the cart's key conflict
    expect(read.status).toBe(200);
    expect(read.body.status).toBe("in_progress");
    expect(read.body.continue_url).toBeUndefined();
    const text = texts(read.body);
    expect(text).not.toContain("complete the session again");
    expect(text).toContain("Finish it through the route that started it");
    // and an update's refusal says the same way on
    const update = await sendAs(srv, key, "POST", `${ACP}/${id}`, { buyer: { first_name: "Ada", last_name: "Lovelace", email: "ada@example.com" } });
    expect({ status: update.status, code: update.body.code }).toEqual({ status: 409, code: "CHECKOUT_ALREADY_IN_PROGRESS" });
    expect(update.body.message).not.toContain("complete the session again");
    expect(update.body.message).toContain("Finish it through the route that started it");
  }, 60_000);

  test("UCP: requires_escalation with the continue_url and a message naming UCP's cancel, not a bare link to complete after", async () => {
    const made = await sendAs(srv, key, "POST", UCP, { line_items: [{ item: { id: BOARD }, quantity: 1 }] });
    const id = made.body.id as string;
    await waitingThroughRest(id);
    const read = await sendAs(srv, key, "GET", `${UCP}/${id}`);
    expect(read.body.status).toBe("requires_escalation");
    expect(read.body.continue_url).toMatch(/\/api\/v1\/sandbox\/payments\//);
    expect(read.body.messages).toContainEqual(expect.objectContaining({ type: "info", code: "payment_started_elsewhere", content: expect.stringContaining("cancel this checkout session (POST /checkout-sessions/{id}/cancel") }));
  }, 60_000);

  test("ACP 2026-04-17: once the buyer decided at that link, the session reads in_progress, and the complete a ready_for_payment would invite is refused", async () => {
    const made = await sendAs(srv, key, "POST", ACP, { items: [{ id: BOARD, quantity: 1 }] });
    const id = made.body.id as string;
    expect((await decideAt(srv, await waitingThroughRest(id), "approve")).status).toBe(200);
    const v26 = { ...key.headers, "api-version": "2026-04-17" };
    const read = await srv.json(`${ACP}/${id}`, { headers: v26 });
    expect(read.status).toBe(200);
    expect(read.body.status).toBe("in_progress");
    expect(read.body.continue_url).toBeUndefined();
    expect(texts(read.body)).toContain("Finish it through the route that started it");
    const complete = await srv.json(`${ACP}/${id}/complete`, {
      method: "POST",
      headers: { ...v26, "idempotency-key": crypto.randomUUID() },
      body: { payment_data: { handler_id: "h", instrument: { type: "card", credential: { type: "spt", token: "tok_approve" } } } },
    });
    expect({ status: complete.status, type: complete.body.type, code: complete.body.code }).toEqual({ status: 409, type: "invalid_request", code: "IDEMPOTENCY_KEY_CONFLICT" });
  }, 60_000);

  test("UCP: once the buyer decided at that link, the session reads complete_in_progress, not ready_for_complete, and says the way on", async () => {
    const made = await sendAs(srv, key, "POST", UCP, { line_items: [{ item: { id: BOARD }, quantity: 1 }] });
    const id = made.body.id as string;
    expect((await decideAt(srv, await waitingThroughRest(id), "approve")).status).toBe(200);
    const read = await sendAs(srv, key, "GET", `${UCP}/${id}`);
    expect(read.status).toBe(200);
    expect(read.body.status).toBe("complete_in_progress");
    expect(read.body.continue_url).toBeUndefined();
    expect(read.body.messages).toContainEqual(expect.objectContaining({ type: "info", content: expect.stringContaining("Finish it through the route that started it") }));
  }, 60_000);

  test("the session's own waiting payment still says to complete again", async () => {
    const made = await sendAs(srv, key, "POST", ACP, { items: [{ id: BOARD, quantity: 1 }] });
    const waiting = await sendAs(srv, key, "POST", `${ACP}/${made.body.id}/complete`, { payment_data: { token: "tok_needs_approval", provider: "stripe" } });
    expect(waiting.body.status).toBe("in_progress");
    const read = await sendAs(srv, key, "GET", `${ACP}/${made.body.id}`);
    expect(texts(read.body)).toContain("then complete the session again");
    expect(texts(read.body)).not.toContain("another route");
  }, 60_000);
});
