/**
 * ACP and UCP sessions whose cart is partly paid, or whose payment is still open (audit Y1, Y3, Y5), through HTTP
 * against the real server. A two-store session paid with a token that needs the buyer's approval: the buyer approves
 * demo-store and refuses greenleaf-living, so the resume answers 402 PAYMENT_NOT_APPROVED with demo-store captured
 * and greenleaf rolled back. Then:
 * - an items update is refused (merchant_already_paid, naming the paid store): it used to move the session to a new
 *   cart holding both stores, whose next complete charged demo-store a second time (Y1);
 * - the session reads ready to pay (the cart's live status), not still waiting for the buyer (Y3);
 * - a read or a cancel names the paid store and its order (Y5).
 * A single store whose capture could not be finalized (tok_finalization_fails: money captured, order escalated to the
 * merchant) reads in progress and refuses an items update (payment_in_progress), so no second capture (Y1, Y3).
 */
import { describe, expect, test } from "bun:test";
import { ALL_SCOPES, createKey, type TestKey } from "../helpers/agents.ts";
import { ACP, sendAs, UCP } from "../helpers/bridge.ts";
import { BOARD, GREEN } from "../helpers/partly-paid.ts";
import { useServer } from "../helpers/server.ts";
import { DEMO, LEAF } from "../helpers/two-store-session.ts";
import { continueUrl, decideAt, decideAtProtocolLinks } from "../helpers/sandbox-approval.ts";

const srv = useServer({ seed: true });

type Res = { status: number; body: any };

/** One protocol's calls on its sessions, for the tests both protocols share. */
interface Bridge {
  name: "ACP" | "UCP";
  create: (k: TestKey, items: string[]) => Promise<Res>;
  update: (k: TestKey, id: string, items: string[]) => Promise<Res>;
  /** An update of the shipping destination only. */
  ship: (k: TestKey, id: string, country: string, postalCode: string) => Promise<Res>;
  complete: (k: TestKey, id: string, token: string) => Promise<Res>;
  get: (k: TestKey, id: string) => Promise<Res>;
  cancel: (k: TestKey, id: string) => Promise<Res>;
  /** The protocol's status names: ready to pay, payment running, canceled. */
  ready: string;
  paying: string;
  /** The error's code and details in the protocol's error shape, and its kind (ACP `type`, UCP `severity`). */
  errorOf: (r: Res) => { code: string; details: Record<string, unknown>; kind: string };
  /** The info messages of a session. */
  infos: (r: Res) => string[];
}

const call = (k: TestKey, method: string, path: string, body?: unknown) => sendAs(srv, k, method, path, body);

const acp: Bridge = {
  name: "ACP",
  create: (k, items) => call(k, "POST", ACP, { items: items.map((id) => ({ id, quantity: 1 })) }),
  update: (k, id, items) => call(k, "POST", `${ACP}/${id}`, { items: items.map((i) => ({ id: i, quantity: 1 })) }),
  ship: (k, id, country, postal_code) => call(k, "POST", `${ACP}/${id}`, { fulfillment_address: { name: "Ada", line_one: "1 Main St", city: "Springfield", country, postal_code } }),
  complete: (k, id, token) => call(k, "POST", `${ACP}/${id}/complete`, { payment_data: { token, provider: "stripe" } }),
  get: (k, id) => srv.json(`${ACP}/${id}`, { headers: k.headers }),
  cancel: (k, id) => call(k, "POST", `${ACP}/${id}/cancel`, {}),
  ready: "ready_for_payment",
  paying: "in_progress",
  errorOf: (r) => ({ code: r.body.code, details: r.body.details, kind: r.body.type }),
  infos: (r) => (r.body.messages as { type: string; content: string }[]).filter((m) => m.type === "info").map((m) => m.content),
};

const ucp: Bridge = {
  name: "UCP",
  create: (k, items) => call(k, "POST", UCP, { line_items: items.map((id) => ({ item: { id }, quantity: 1 })) }),
  update: (k, id, items) => call(k, "PUT", `${UCP}/${id}`, { line_items: items.map((i) => ({ item: { id: i }, quantity: 1 })) }),
  ship: (k, id, address_country, postal_code) => call(k, "PUT", `${UCP}/${id}`, { fulfillment: { methods: [{ destinations: [{ address_country, postal_code }] }] } }),
  complete: (k, id, token) => call(k, "POST", `${UCP}/${id}/complete`, { payment: { instruments: [{ handler_id: "sandbox_card", credential: { token } }] } }),
  get: (k, id) => srv.json(`${UCP}/${id}`, { headers: k.headers }),
  cancel: (k, id) => call(k, "POST", `${UCP}/${id}/cancel`, {}),
  ready: "ready_for_complete",
  paying: "complete_in_progress",
  errorOf: (r) => {
    expect(r.body.messages[0].type).toBe("error");
    return { code: r.body.messages[0].code, details: r.body.messages[0].details, kind: r.body.messages[0].severity };
  },
  infos: (r) => (r.body.messages as { type: string; content: string }[]).filter((m) => m.type === "info").map((m) => m.content),
};

const cartOf = async (sessionId: string) => (await srv.db.sql<{ cart_id: string }[]>`SELECT cart_id::text AS cart_id FROM bridge_sessions WHERE id = ${sessionId}`)[0]!.cart_id;

/** Every order of the key with its status, and the sandbox processor's captures of them (money moved). */
async function moneyOf(k: TestKey): Promise<{ orders: { store: string; status: string }[]; captures: number }> {
  const orders = await srv.db.sql<{ store: string; status: string }[]>`
    SELECT store_slug AS store, status FROM orders WHERE agent_key_id = ${k.id} ORDER BY store_slug, created_at`;
  const [c] = await srv.db.sql<{ n: number }[]>`
    SELECT count(*)::int AS n FROM sandbox_ledger_intents WHERE state = 'captured'
      AND intent_id IN (SELECT intent_id FROM orders WHERE agent_key_id = ${k.id})`;
  return { orders: orders.map((o) => ({ ...o })), captures: c!.n };
}

/**
 * A two-store session (demo-store + greenleaf-living) whose buyer approved demo-store and refused greenleaf: the
 * resume answers 402 PAYMENT_NOT_APPROVED, demo-store captured and kept, greenleaf rolled back.
 */
async function partlyPaidSession(b: Bridge, k: TestKey): Promise<{ id: string; paidOrderId: string }> {
  const created = await b.create(k, [BOARD, GREEN]);
  expect(created.status).toBe(201);
  const id: string = created.body.id;
  const waiting = await b.complete(k, id, "tok_needs_approval");
  expect(waiting.status).toBe(200);
  const legs = await srv.db.sql<{ id: string; store_slug: string; intent_id: string }[]>`SELECT id::text AS id, store_slug, intent_id FROM orders WHERE cart_id = ${await cartOf(id)}`;
  expect(legs.map((l) => l.store_slug).sort()).toEqual([DEMO, LEAF]);
  // The buyer decides at the links the protocol hands out (review RA-5).
  await decideAtProtocolLinks(srv, waiting, () => b.get(k, id), (store) => (store === DEMO ? "approve" : "reject"), 2);
  const resumed = await b.complete(k, id, "tok_needs_approval");
  expect(resumed.status).toBe(402);
  return { id, paidOrderId: legs.find((l) => l.store_slug === DEMO)!.id };
}

for (const b of [acp, ucp]) {
  describe(`${b.name}: a session whose cart is partly paid`, () => {
    test("refuses an items update with 409 CHECKOUT_STATUS_INVALID merchant_already_paid naming the paid store, and the next complete charges only the other store", async () => {
      const k = await createKey(srv, { scopes: ALL_SCOPES });
      const { id, paidOrderId } = await partlyPaidSession(b, k);
      const cartId = await cartOf(id);

      const update = await b.update(k, id, [BOARD, GREEN]);
      expect(update.status).toBe(409);
      const err = b.errorOf(update);
      expect(err.code).toBe("CHECKOUT_STATUS_INVALID");
      expect(err.kind).toBe(b.name === "ACP" ? "invalid_request" : "requires_buyer_input");
      expect(err.details).toMatchObject({ reason: "merchant_already_paid", completed_store_ids: [DEMO], order_ids: [paidOrderId], checkout_session_id: id });
      expect(await cartOf(id)).toBe(cartId); // the session stays on its cart

      const done = await b.complete(k, id, "tok_approve");
      expect(done.status).toBe(200);
      expect(done.body.status).toBe("completed");
      const money = await moneyOf(k);
      expect(money.orders).toEqual([
        { store: DEMO, status: "paid" },
        { store: LEAF, status: "paid" },
      ]);
      expect(money.captures).toBe(2); // one capture per store: demo-store was not charged again
    });

    test("refuses a shipping update with 409 merchant_already_paid also after the cart's checkout was canceled through REST, and the next complete pays the other store on the shipping approved before", async () => {
      const k = await createKey(srv, { scopes: ALL_SCOPES });
      const { id, paidOrderId } = await partlyPaidSession(b, k);
      const cart = await srv.json(`/api/v1/agent/cart/${await cartOf(id)}`, { headers: k.headers });
      const restCancel = await srv.json(`/api/v1/agent/checkout/${cart.body.data.checkout_session_id}/cancel`, { method: "POST", headers: k.headers, body: {} });
      expect(restCancel.status).toBe(200);

      const moved = await b.ship(k, id, "DE", "10115");
      expect(moved.status).toBe(409);
      const err = b.errorOf(moved);
      expect(err.code).toBe("CHECKOUT_STATUS_INVALID");
      expect(err.details).toMatchObject({ reason: "merchant_already_paid", completed_store_ids: [DEMO], order_ids: [paidOrderId], checkout_session_id: id });

      const done = await b.complete(k, id, "tok_approve");
      expect(done.status).toBe(200);
      expect(done.body.status).toBe("completed");
      const shipped = await srv.db.sql<{ store: string; shipping: number }[]>`
        SELECT store_slug AS store, shipping_minor::int AS shipping FROM orders WHERE cart_id = ${await cartOf(id)} AND status = 'paid' ORDER BY store_slug`;
      expect(shipped.map((o) => o.store)).toEqual([DEMO, LEAF]);
      expect((await moneyOf(k)).captures).toBe(2);
      expect(cart.body.data.shipping).toBeNull(); // never given a destination: both stores ship on their domestic default
    });

    test("reads as ready to pay (not waiting for the buyer), with the paid store's order and an info message naming it", async () => {
      const k = await createKey(srv, { scopes: ALL_SCOPES });
      const { id, paidOrderId } = await partlyPaidSession(b, k);
      const read = await b.get(k, id);
      expect(read.status).toBe(200);
      expect(read.body.status).toBe(b.ready);
      expect(read.body.order.id).toBe(paidOrderId);
      expect(b.infos(read)).toEqual([`${DEMO} was paid (order ${paidOrderId}) and stays paid; completing the session pays the remaining stores only.`]);
      if (b.name === "UCP") {
        expect(read.body.order.order_ids).toEqual([paidOrderId]);
        expect(read.body.messages.find((m: { type: string }) => m.type === "info")).toMatchObject({ code: "merchant_already_paid", details: { completed_store_ids: [DEMO], order_ids: [paidOrderId] } });
      }
    });

    test("a cancel answers canceled with the paid store's order and says the other store was not charged; a read afterwards says the same", async () => {
      const k = await createKey(srv, { scopes: ALL_SCOPES });
      const { id, paidOrderId } = await partlyPaidSession(b, k);
      const canceled = await b.cancel(k, id);
      expect(canceled.status).toBe(200);
      expect(canceled.body.status).toBe("canceled");
      expect(canceled.body.order.id).toBe(paidOrderId);
      const note = `${DEMO} was paid (order ${paidOrderId}) and stays paid; the other stores were not charged.`;
      expect(b.infos(canceled)).toEqual([note]);
      const read = await b.get(k, id);
      expect(read.body).toMatchObject({ status: "canceled", order: { id: paidOrderId } });
      expect(b.infos(read)).toEqual([note]);
      expect((await moneyOf(k)).orders).toEqual([
        { store: DEMO, status: "paid" },
        { store: LEAF, status: "canceled" },
      ]);
    });
  });

  describe(`${b.name}: a session whose capture is escalated to the merchant`, () => {
    test("reads as in progress with a message naming the captured order that awaits the merchant, and refuses an items update with 409 payment_in_progress, so nothing is captured twice", async () => {
      const k = await createKey(srv, { scopes: ALL_SCOPES });
      const created = await b.create(k, [GREEN]);
      const id: string = created.body.id;
      const first = await b.complete(k, id, "tok_finalization_fails");
      expect(first.status).toBe(409);
      expect(b.errorOf(first).code).toBe("PAYMENT_CAPTURED_FINALIZATION_FAILED");
      const [pending] = await srv.db.sql<{ id: string }[]>`SELECT id::text AS id FROM orders WHERE cart_id = ${await cartOf(id)} AND status = 'pending' AND reconciliation IS NOT NULL`;

      const read = await b.get(k, id);
      expect(read.body.status).toBe(b.paying);
      expect(read.body.order).toBeUndefined(); // not paid until the merchant decides
      expect(b.infos(read)).toEqual([
        `The payment was captured for ${LEAF} (order ${pending!.id}) but the order could not be confirmed; the merchant decides (accepts or refunds). Do not pay again.`,
      ]);

      const update = await b.update(k, id, [GREEN]);
      expect(update.status).toBe(409);
      const err = b.errorOf(update);
      expect(err.code).toBe("CHECKOUT_ALREADY_IN_PROGRESS");
      expect(err.kind).toBe(b.name === "ACP" ? "request_not_idempotent" : "recoverable");
      expect(err.details).toMatchObject({ reason: "payment_in_progress", status: "SETTLEMENT_UNKNOWN", checkout_session_id: id });

      // the same session's complete answers for the capture it already made, and charges nothing
      const again = await b.complete(k, id, "tok_approve");
      expect(again.status).toBe(409);
      expect(b.errorOf(again).code).toBe("PAYMENT_CAPTURED_FINALIZATION_FAILED");
      expect((await moneyOf(k)).captures).toBe(1);
    });
  });

  describe(`${b.name}: a two-store session paid in full`, () => {
    test("names every store's order in an info message, since one order per store was paid", async () => {
      const k = await createKey(srv, { scopes: ALL_SCOPES });
      const created = await b.create(k, [BOARD, GREEN]);
      const id: string = created.body.id;
      const done = await b.complete(k, id, "tok_approve");
      expect(done.status).toBe(200);
      expect(done.body.status).toBe("completed");
      const orders = await srv.db.sql<{ id: string; store_slug: string }[]>`SELECT id::text AS id, store_slug FROM orders WHERE cart_id = ${await cartOf(id)} ORDER BY created_at, store_slug`;
      expect(orders.map((o) => o.store_slug)).toEqual([DEMO, LEAF]);
      const note = `Paid as one order per store: ${DEMO} (order ${orders[0]!.id}), ${LEAF} (order ${orders[1]!.id}).`;
      for (const r of [done, await b.get(k, id)]) {
        expect(b.infos(r)).toEqual([note]);
        expect(r.body.order.id).toBe(orders[0]!.id);
      }
    });
  });

  describe(`${b.name}: a session whose payment waits for the buyer's approval`, () => {
    test("a read shows the approval link the complete answered", async () => {
      const k = await createKey(srv, { scopes: ALL_SCOPES });
      const created = await b.create(k, [GREEN]);
      const id: string = created.body.id;
      const waiting = await b.complete(k, id, "tok_needs_approval");
      expect(waiting.status).toBe(200);
      const linkOf = (r: Res): string | undefined => (b.name === "UCP" ? r.body.continue_url : continueUrl(r));
      const url = linkOf(waiting);
      expect(url).toMatch(/^http:\/\/127\.0\.0\.1:\d+\/api\/v1\/sandbox\/payments\/pi_[0-9a-f]{40}\/[0-9a-f]{64}$/);
      const read = await b.get(k, id);
      expect(read.body.status).toBe(b.name === "UCP" ? "requires_escalation" : "in_progress");
      expect(linkOf(read)).toBe(url);
      // the link decides the payment: approved there, the next complete pays
      const approved = await decideAt(srv, url!, "approve");
      expect(approved.status).toBe(200);
      expect(approved.body.data).toMatchObject({ decision: "approve", status: "approved" });
      const done = await b.complete(k, id, "tok_needs_approval");
      expect(done.status).toBe(200);
      expect(done.body.status).toBe("completed");
    });
  });

  describe(`${b.name}: a session after a refused approval`, () => {
    test("reads as ready to pay again, not as still waiting for the buyer", async () => {
      const k = await createKey(srv, { scopes: ALL_SCOPES });
      const created = await b.create(k, [GREEN]);
      const id: string = created.body.id;
      const waiting = await b.complete(k, id, "tok_needs_approval");
      expect(waiting.status).toBe(200);
      expect((await decideAt(srv, continueUrl(waiting)!, "reject")).status).toBe(200);
      const refused = await b.complete(k, id, "tok_needs_approval");
      expect(refused.status).toBe(402);
      const read = await b.get(k, id);
      expect(read.body.status).toBe(b.ready);
      expect(read.body.order).toBeUndefined();
      expect(b.infos(read)).toEqual([]);
      expect(read.body.continue_url).toBeUndefined(); // the link is shown only while the buyer may still approve
      if (b.name === "ACP") expect(continueUrl(read)).toBeUndefined();
    });
  });
}
