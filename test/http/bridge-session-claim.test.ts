/**
 * One write at a time per ACP/UCP session (audit Y4; gateway/bridge/common.ts withSessionClaim, migration 0073), and
 * no change while the session's payment waits or is unknown, through HTTP against the real server. Before, an update
 * and a complete each loaded the session row, did their cart work and saved it back: the last save won, so an update
 * answered 200 with new items that a concurrent complete then dropped (or a paid session pointed at an unpaid cart).
 * A slow step is made with a trigger in the scratch database, as in bridge-idempotency-lease.test.ts. The claim
 * statement returns the session row it claims, so a write reads the row once; only a refused claim reads it again, and
 * must then answer a session that is not the caller's (or none) with the 404 a read gives, never the busy 409 that
 * would tell another agent the session exists, and a NUL in the id with that 404 instead of a 500.
 */
import { describe, expect, test } from "bun:test";
import { ALL_SCOPES, createKey, type TestKey } from "../helpers/agents.ts";
import { ACP, sendAs, UCP } from "../helpers/bridge.ts";
import { GREEN } from "../helpers/partly-paid.ts";
import { continueUrl, decideAt } from "../helpers/sandbox-approval.ts";
import { useServer } from "../helpers/server.ts";

const srv = useServer({ seed: true });

const send = (k: TestKey, method: string, path: string, body?: unknown) => sendAs(srv, k, method, path, body);
const acpComplete = (k: TestKey, id: string, token = "tok_approve") => send(k, "POST", `${ACP}/${id}/complete`, { payment_data: { token, provider: "stripe" } });
const ucpPayment = (token: string) => ({ payment: { instruments: [{ handler_id: "sandbox_card", credential: { token } }] } });
const UCP_PAYMENT = ucpPayment("tok_approve");
const ucpComplete = (k: TestKey, id: string, token = "tok_approve") => send(k, "POST", `${UCP}/${id}/complete`, ucpPayment(token));
const quantities = (session: { line_items: { item: { quantity: number } }[] }) => session.line_items.map((l) => l.item.quantity);
const paidOrders = async (k: TestKey) => (await srv.db.sql<{ n: number }[]>`SELECT count(*)::int AS n FROM orders WHERE agent_key_id = ${k.id} AND status = 'paid'`)[0]!.n;
/** ACP's error shape of the 404. */
const notFound = (id: string) => ({ type: "invalid_request", code: "CHECKOUT_SESSION_NOT_FOUND", message: "No such checkout session.", details: { checkout_session_id: id } });
const claimOf = async (id: string) =>
  (await srv.db.sql<{ claim_id: string | null }[]>`SELECT claim_id::text AS claim_id FROM bridge_sessions WHERE id = ${id}`)[0]!.claim_id;
const cartOf = async (id: string) => (await srv.db.sql<{ cart_id: string }[]>`SELECT cart_id::text AS cart_id FROM bridge_sessions WHERE id = ${id}`)[0]!.cart_id;

describe("an ACP items update racing a complete", () => {
  test("the complete that comes while the update moves the session is 409 CHECKOUT_ALREADY_IN_PROGRESS; the update's items stand and are what the next complete pays", async () => {
    const k = await createKey(srv, { scopes: ALL_SCOPES });
    const created = await send(k, "POST", ACP, { items: [{ id: GREEN, quantity: 1 }] });
    const id: string = created.body.id;
    // The update's save of the moved session (a new cart_id) waits 1.5 s: the complete comes in meanwhile.
    await srv.db.sql.unsafe(`
      CREATE FUNCTION m_slow_move() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN PERFORM pg_sleep(1.5); RETURN NEW; END $$;
      CREATE TRIGGER m_slow_move BEFORE UPDATE ON bridge_sessions FOR EACH ROW
        WHEN (NEW.id = '${id}' AND NEW.cart_id IS DISTINCT FROM OLD.cart_id) EXECUTE FUNCTION m_slow_move();`);
    try {
      const update = send(k, "POST", `${ACP}/${id}`, { items: [{ id: GREEN, quantity: 2 }] });
      await Bun.sleep(700);
      const complete = await acpComplete(k, id);
      expect(complete.status).toBe(409);
      expect(complete.body).toMatchObject({ type: "request_not_idempotent", code: "CHECKOUT_ALREADY_IN_PROGRESS", details: { checkout_session_id: id, reason: "session_busy" } });
      const updated = await update;
      expect(updated.status).toBe(200);
      expect(quantities(updated.body)).toEqual([2]);
    } finally {
      await srv.db.sql.unsafe(`DROP TRIGGER m_slow_move ON bridge_sessions; DROP FUNCTION m_slow_move();`);
    }
    const read = await srv.json(`${ACP}/${id}`, { headers: k.headers });
    expect(read.body).toMatchObject({ status: "ready_for_payment" });
    expect(quantities(read.body)).toEqual([2]);
    const paid = await acpComplete(k, id);
    expect(paid.status).toBe(200);
    expect(paid.body.status).toBe("completed");
    expect(quantities(paid.body)).toEqual([2]);
    expect(await paidOrders(k)).toBe(1);
  });

  test("started a few milliseconds apart, an update that answers 200 is never dropped: what is paid is its items, once", async () => {
    const k = await createKey(srv, { scopes: ALL_SCOPES });
    for (const delay of [0, 2, 4, 6, 10]) {
      const created = await send(k, "POST", ACP, { items: [{ id: GREEN, quantity: 1 }] });
      const id: string = created.body.id;
      const [update, complete] = await Promise.all([
        send(k, "POST", `${ACP}/${id}`, { items: [{ id: GREEN, quantity: 2 }] }),
        Bun.sleep(delay).then(() => acpComplete(k, id)),
      ]);
      for (const r of [update, complete]) if (r.status !== 200) expect(r.status).toBe(409);
      // An update that answered 200 ran before the payment (after it, the session refuses changes): it is what was paid.
      const expected = [update.status === 200 ? 2 : 1];
      if (complete.status === 200) expect(quantities(complete.body)).toEqual(expected);
      const again = await acpComplete(k, id);
      expect(again.status).toBe(200);
      if (complete.status === 200) expect(again.body.order.id).toBe(complete.body.order.id);
      expect(quantities(again.body)).toEqual(expected);
    }
    expect(await paidOrders(k)).toBe(5);
  });
});

describe("a session whose payment waits for the buyer", () => {
  test("ACP: an items update and an address update are 409 CHECKOUT_ALREADY_IN_PROGRESS payment_in_progress; the session stays on its cart", async () => {
    const k = await createKey(srv, { scopes: ALL_SCOPES });
    const created = await send(k, "POST", ACP, { items: [{ id: GREEN, quantity: 1 }] });
    const id: string = created.body.id;
    const cartId = await cartOf(id);
    const waiting = await acpComplete(k, id, "tok_needs_approval");
    expect(waiting.body.status).toBe("in_progress");
    for (const change of [{ items: [{ id: GREEN, quantity: 2 }] }, { fulfillment_address: { name: "Ada", line_one: "1 Main St", city: "Springfield", postal_code: "12345", country: "US" } }]) {
      const r = await send(k, "POST", `${ACP}/${id}`, change);
      expect(r.status).toBe(409);
      expect(r.body).toMatchObject({ type: "request_not_idempotent", code: "CHECKOUT_ALREADY_IN_PROGRESS", details: { reason: "payment_in_progress", status: "PENDING_EXTERNAL_CONFIRMATION", checkout_session_id: id } });
    }
    expect(await cartOf(id)).toBe(cartId);
  });

  test("UCP: a line_items update is 409 CHECKOUT_ALREADY_IN_PROGRESS payment_in_progress in UCP's error shape, for the buyer to review (approve at the link)", async () => {
    const k = await createKey(srv, { scopes: ALL_SCOPES });
    const created = await send(k, "POST", UCP, { line_items: [{ item: { id: GREEN }, quantity: 1 }] });
    const id: string = created.body.id;
    const waiting = await ucpComplete(k, id, "tok_needs_approval");
    expect(waiting.body.status).toBe("requires_escalation");
    const r = await send(k, "PUT", `${UCP}/${id}`, { line_items: [{ item: { id: GREEN }, quantity: 2 }] });
    expect(r.status).toBe(409);
    expect(r.body.messages[0]).toMatchObject({ type: "error", code: "CHECKOUT_ALREADY_IN_PROGRESS", severity: "requires_buyer_review", details: { reason: "payment_in_progress", status: "PENDING_EXTERNAL_CONFIRMATION" } });
  });

  test("an update refused payment_in_progress under an Idempotency-Key is not kept for that key: once the buyer refused, the same update with the same key answers 200", async () => {
    const k = await createKey(srv, { scopes: ALL_SCOPES });
    const created = await send(k, "POST", ACP, { items: [{ id: GREEN, quantity: 1 }] });
    const id: string = created.body.id;
    const waiting = await acpComplete(k, id, "tok_needs_approval");
    expect(waiting.body.status).toBe("in_progress");
    const key = crypto.randomUUID();
    const update = () => srv.json(`${ACP}/${id}`, { method: "POST", headers: { ...k.headers, "idempotency-key": key }, body: { items: [{ id: GREEN, quantity: 2 }] } });
    const refused = await update();
    expect(refused.status).toBe(409);
    expect(refused.body).toMatchObject({ code: "CHECKOUT_ALREADY_IN_PROGRESS", details: { reason: "payment_in_progress" } });

    expect((await decideAt(srv, continueUrl(waiting)!, "reject")).status).toBe(200);
    expect((await acpComplete(k, id, "tok_needs_approval")).status).toBe(402);
    expect((await srv.json(`${ACP}/${id}`, { headers: k.headers })).body.status).toBe("ready_for_payment");

    const retried = await update();
    expect(retried.status).toBe(200);
    expect(retried.headers.get("idempotent-replayed")).toBeNull();
    expect(quantities(retried.body)).toEqual([2]);
  });

  test("UCP: while a capture awaits the merchant's decision, an update's 409 payment_in_progress is recoverable (the buyer can do nothing)", async () => {
    const k = await createKey(srv, { scopes: ALL_SCOPES });
    const created = await send(k, "POST", UCP, { line_items: [{ item: { id: GREEN }, quantity: 1 }] });
    const id: string = created.body.id;
    expect((await ucpComplete(k, id, "tok_finalization_fails")).status).toBe(409);
    const r = await send(k, "PUT", `${UCP}/${id}`, { line_items: [{ item: { id: GREEN }, quantity: 2 }] });
    expect(r.status).toBe(409);
    expect(r.body.messages[0]).toMatchObject({ type: "error", code: "CHECKOUT_ALREADY_IN_PROGRESS", severity: "recoverable", details: { reason: "payment_in_progress", status: "SETTLEMENT_UNKNOWN" } });
  });
});

describe("the session claim's lease", () => {
  test("a claim held by a request still running refuses a UCP update with 409; one whose lease ran out (its request died) is taken over", async () => {
    const k = await createKey(srv, { scopes: ALL_SCOPES });
    const created = await send(k, "POST", UCP, { line_items: [{ item: { id: GREEN }, quantity: 1 }] });
    const id: string = created.body.id;
    await srv.db.sql`UPDATE bridge_sessions SET claim_id = ${crypto.randomUUID()}, claimed_until = now() + interval '1 minute' WHERE id = ${id}`;
    const busy = await send(k, "PUT", `${UCP}/${id}`, { line_items: [{ item: { id: GREEN }, quantity: 2 }] });
    expect(busy.status).toBe(409);
    expect(busy.body.messages[0]).toMatchObject({ type: "error", code: "CHECKOUT_ALREADY_IN_PROGRESS", severity: "recoverable", details: { reason: "session_busy" } });

    await srv.db.sql`UPDATE bridge_sessions SET claimed_until = now() - interval '1 second' WHERE id = ${id}`;
    const taken = await send(k, "PUT", `${UCP}/${id}`, { line_items: [{ item: { id: GREEN }, quantity: 2 }] });
    expect(taken.status).toBe(200);
    expect(taken.body.line_items[0].quantity).toBe(2);
    expect(await claimOf(id)).toBeNull(); // given back when done
  });
});

describe("a claim refused on an ACP session", () => {
  test("while the owner's request holds the claim, another agent's update, complete and cancel are 404 CHECKOUT_SESSION_NOT_FOUND, not 409, and the owner's claim stays", async () => {
    const owner = await createKey(srv, { scopes: ALL_SCOPES });
    const stranger = await createKey(srv, { scopes: ALL_SCOPES });
    const created = await send(owner, "POST", ACP, { items: [{ id: GREEN, quantity: 1 }] });
    expect(created.status).toBe(201);
    const id: string = created.body.id;
    const held = crypto.randomUUID();
    await srv.db.sql`UPDATE bridge_sessions SET claim_id = ${held}, claimed_until = now() + interval '1 minute' WHERE id = ${id}`;
    for (const [path, body] of [
      [`${ACP}/${id}`, { items: [{ id: GREEN, quantity: 2 }] }],
      [`${ACP}/${id}/complete`, { payment_data: { token: "tok_approve", provider: "stripe" } }],
      [`${ACP}/${id}/cancel`, {}],
    ] as const) {
      const r = await send(stranger, "POST", path, body);
      expect({ path, status: r.status, body: r.body }).toEqual({ path, status: 404, body: notFound(id) });
    }
    expect(await claimOf(id)).toBe(held);
    // The owner's own write meanwhile is the busy 409.
    const busy = await send(owner, "POST", `${ACP}/${id}`, { items: [{ id: GREEN, quantity: 2 }] });
    expect(busy.status).toBe(409);
    expect(busy.body).toMatchObject({ code: "CHECKOUT_ALREADY_IN_PROGRESS", details: { checkout_session_id: id, reason: "session_busy" } });
  });

  test("an update of a session id that names no session is 404 CHECKOUT_SESSION_NOT_FOUND naming that id", async () => {
    const k = await createKey(srv, { scopes: ALL_SCOPES });
    const none = `cs_${"0".repeat(32)}`;
    const r = await send(k, "POST", `${ACP}/${none}`, { items: [{ id: GREEN, quantity: 1 }] });
    expect(r.status).toBe(404);
    expect(r.body).toEqual(notFound(none));
  });

  test("a cancel of a session id holding a NUL byte is 404 CHECKOUT_SESSION_NOT_FOUND naming the id without it, never a database error", async () => {
    const k = await createKey(srv, { scopes: ALL_SCOPES });
    const r = await send(k, "POST", `${ACP}/cs_%00abc/cancel`, {});
    expect(r.status).toBe(404);
    expect(r.body).toEqual(notFound("cs_abc"));
  });
});

describe("a claim refused on a UCP session", () => {
  test("while the owner's request holds the claim, another agent's update, complete and cancel are 404 CHECKOUT_SESSION_NOT_FOUND in UCP's shape, and the owner's claim stays", async () => {
    const owner = await createKey(srv, { scopes: ALL_SCOPES });
    const stranger = await createKey(srv, { scopes: ALL_SCOPES });
    const created = await send(owner, "POST", UCP, { line_items: [{ item: { id: GREEN }, quantity: 1 }] });
    expect(created.status).toBe(201);
    const id: string = created.body.id;
    const held = crypto.randomUUID();
    await srv.db.sql`UPDATE bridge_sessions SET claim_id = ${held}, claimed_until = now() + interval '1 minute' WHERE id = ${id}`;
    for (const [method, path, body] of [
      ["PUT", `${UCP}/${id}`, { line_items: [{ item: { id: GREEN }, quantity: 2 }] }],
      ["POST", `${UCP}/${id}/complete`, UCP_PAYMENT],
      ["POST", `${UCP}/${id}/cancel`, {}],
    ] as const) {
      const r = await send(stranger, method, path, body);
      expect({ path, status: r.status, message: r.body.messages?.[0] }).toEqual({
        path,
        status: 404,
        message: { type: "error", code: "CHECKOUT_SESSION_NOT_FOUND", content: "No such checkout session.", severity: "requires_buyer_input", details: { checkout_session_id: id } },
      });
    }
    expect(await claimOf(id)).toBe(held);
  });
});
