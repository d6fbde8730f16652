/**
 * A merchant's cancel of its own pending order in a multi-store checkout (review R1-1, HIGH): the cancel goes through
 * the buyer's checkout session, and ending that session would cancel the other merchants' orders too. While another
 * merchant's leg is unpaid the cancel is refused (409 ORDER_NOT_CANCELLABLE, reason shared_checkout) and nothing
 * moves; once every other leg is paid, the cancel ends the session and only this merchant's order with it.
 */
import { afterAll, beforeAll, expect, test } from "bun:test";
import { ALL_SCOPES, createKey, login, merchantLogin, type TestKey } from "../helpers/agents.ts";
import { startServer, type TestServer } from "../helpers/server.ts";
import { approvalLink, decideAt } from "../helpers/sandbox-approval.ts";

const BOARD = "5befd987-79cd-540c-8a5d-2ba5a30aed41"; // demo-store
const GREEN = "4ef5cf23-f828-5e3e-bd0b-833653bc4c5a"; // greenleaf-living
let srv: TestServer;
let key: TestKey;
let green: Record<string, string>;

beforeAll(async () => {
  srv = await startServer({ seed: true });
  key = await createKey(srv, { scopes: ALL_SCOPES });
  green = { authorization: `Bearer ${await login(srv, merchantLogin("greenleaf-living"))}` };
}, 120_000);
afterAll(async () => {
  await srv?.stop();
});

type OrderLite = { id: string; store_slug: string; status: string; intent_id: string | null };

/** A demo-store + greenleaf checkout paid with one token per store: the answer and the two orders. */
async function twoStoreCheckout(tokens: { demo: string; green: string }) {
  const c = await srv.json("/api/v1/agent/cart", { method: "POST", headers: key.headers, body: { items: [{ product_id: BOARD, quantity: 1 }, { product_id: GREEN, quantity: 1 }] } });
  const cartId: string = c.body.data.id;
  const idem = crypto.randomUUID();
  const r = await srv.json("/api/v1/agent/checkout", {
    method: "POST",
    headers: key.headers,
    body: { cartId, idempotency_key: idem, payment_methods: { "demo-store": tokens.demo, "greenleaf-living": tokens.green } },
  });
  const orders = await srv.db.sql<OrderLite[]>`SELECT id, store_slug, status, intent_id FROM orders WHERE cart_id = ${cartId}`;
  return { cartId, idem, answer: r, demo: orders.find((o) => o.store_slug === "demo-store")!, green: orders.find((o) => o.store_slug === "greenleaf-living")! };
}
const statusOf = async (id: string) => (await srv.db.sql<{ status: string }[]>`SELECT status FROM orders WHERE id = ${id}`)[0]!.status;
const greenCancel = (orderId: string) =>
  srv.json(`/api/v1/merchant/stores/greenleaf-living/orders/${orderId}/status`, { method: "POST", headers: green, body: { status: "canceled" } });

test("a merchant cannot cancel its pending order while another merchant's order of the same checkout is unpaid; the buyer can still pay both", async () => {
  const t = await twoStoreCheckout({ demo: "tok_needs_approval", green: "tok_needs_approval" });
  expect(t.answer.status).toBe(202);
  expect([t.demo.status, t.green.status]).toEqual(["pending", "pending"]);

  const m = await greenCancel(t.green.id);
  expect(m.status).toBe(409);
  expect(m.body).toMatchObject({ success: false, code: "ORDER_NOT_CANCELLABLE", details: { status: "pending", reason: "shared_checkout" } });
  expect(typeof m.body.details.expires_at).toBe("string");
  // Nothing names the other merchant.
  expect(JSON.stringify(m.body)).not.toContain("demo-store");
  expect([await statusOf(t.demo.id), await statusOf(t.green.id)]).toEqual(["pending", "pending"]);
  const [ev] = await srv.db.sql<{ n: number }[]>`SELECT count(*)::int AS n FROM order_events WHERE order_id IN ${srv.db.sql([t.demo.id, t.green.id])} AND type = 'cancel'`;
  expect(ev!.n).toBe(0);

  for (const o of [t.demo, t.green]) expect((await decideAt(srv, approvalLink(t.answer, o.store_slug), "approve")).status).toBe(200);
  const done = await srv.json("/api/v1/agent/checkout", { method: "POST", headers: key.headers, body: { cartId: t.cartId, idempotency_key: t.idem } });
  expect(done.status).toBe(200);
  expect([await statusOf(t.demo.id), await statusOf(t.green.id)]).toEqual(["paid", "paid"]);
});

test("once the other merchants' orders are paid, a merchant's cancel of its pending order cancels that order alone", async () => {
  const t = await twoStoreCheckout({ demo: "tok_approve", green: "tok_needs_approval" });
  expect(t.answer.status).toBe(202);
  expect([t.demo.status, t.green.status]).toEqual(["paid", "pending"]);

  const m = await greenCancel(t.green.id);
  expect(m.status).toBe(200);
  expect(m.body.data).toMatchObject({ order_id: t.green.id, status: "canceled" });
  expect([await statusOf(t.demo.id), await statusOf(t.green.id)]).toEqual(["paid", "canceled"]);
});
