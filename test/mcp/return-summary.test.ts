/**
 * onx_create_return asks the human to approve the amount the store then requests (audit A1 L1): without `amount`,
 * what is still refundable (captured − refunded − in flight, refunds.ts), not total − refunded; the store's refusals
 * come before the question.
 */
import { afterAll, beforeAll, expect, test } from "bun:test";
import { login } from "../helpers/agents.ts";
import type { TestServer } from "../helpers/server.ts";
import { counted, DEMO_PRODUCT, errorOf, startBuyingAgent, structured, type Connected } from "./helpers.ts";

let srv: TestServer;
let agent: Connected;

beforeAll(async () => {
  ({ srv, agent } = await startBuyingAgent());
}, 120_000);
afterAll(async () => {
  await agent?.close();
  await srv?.stop();
});

async function buy(): Promise<{ id: string; total: number }> {
  const cart = structured(await agent.call("create_cart", { items: [{ product_id: DEMO_PRODUCT, quantity: 1 }] }));
  const pv = structured(await agent.call("preview_checkout", { cart_id: cart.cart_id }));
  const o = structured(await agent.call("complete_checkout", { checkout_session_id: pv.checkout_session_id, idempotency_key: crypto.randomUUID(), payment_method: "MOCK" }));
  const [row] = await srv.db.sql<{ total_minor: number }[]>`SELECT total_minor::int AS total_minor FROM orders WHERE id = ${o.order_id}`;
  return { id: o.order_id, total: row.total_minor };
}

const usd = (minor: number) => `${(minor / 100).toFixed(2)} USD`;

test("without amount, the human approves what is left after the requests in flight, and that is what is requested", async () => {
  const o = await buy();
  expect(structured(await agent.call("onx_create_return", { order_id: o.id, amount: 1000, reason: "dent" })).amount_minor).toBe(1000);
  const before = agent.elicitations.length;
  const rest = structured(await agent.call("onx_create_return", { order_id: o.id, reason: "rest" }));
  expect(rest.amount_minor).toBe(o.total - 1000);
  expect(agent.elicitations.slice(before).map((e) => e.message)).toEqual([expect.stringContaining(`Request a refund of ${usd(o.total - 1000)} for order ${o.id}`)]);
}, 60_000);

test("the bound is what was captured: an accepted over-capture is asked and requested in full", async () => {
  const o = await buy();
  await srv.db.sql`UPDATE orders SET captured_minor = ${o.total + 500} WHERE id = ${o.id}`;
  const before = agent.elicitations.length;
  const all = structured(await agent.call("onx_create_return", { order_id: o.id }));
  expect(all.amount_minor).toBe(o.total + 500);
  expect(agent.elicitations[before]?.message).toContain(`Request a refund of ${usd(o.total + 500)} `);
}, 60_000);

test("with 5 requests open the call is refused before the human is asked (NOT_ELIGIBLE, open_refunds)", async () => {
  const o = await buy();
  for (let i = 0; i < 5; i++) await agent.call("onx_create_return", { order_id: o.id, amount: 1 });
  const { result, asked } = await counted(agent, () => agent.call("onx_create_return", { order_id: o.id, amount: 1 }));
  expect(asked).toBe(0);
  expect(errorOf(result)).toMatchObject({ code: "NOT_ELIGIBLE", details: { reason: "too_many_open_refunds", open_refunds: 5 } });
}, 60_000);

test("a retry with a used idempotency key shows the first request's amount, which it answers, even once nothing is left", async () => {
  const o = await buy();
  const k = crypto.randomUUID();
  const first = structured(await agent.call("onx_create_return", { order_id: o.id, idempotency_key: k }));
  expect(first.amount_minor).toBe(o.total);
  // Refunded since: nothing is left, yet the retry is answered with its first request (the store's idempotency rule).
  const admin = await login(srv);
  const approved = await srv.json(`/api/v1/merchant/stores/demo-store/refunds/${first.refund_id}/approve`, { method: "POST", headers: { authorization: `Bearer ${admin}` } });
  expect(approved.body.data.status).toBe("REFUNDED");
  const before = agent.elicitations.length;
  const again = structured(await agent.call("onx_create_return", { order_id: o.id, idempotency_key: k }));
  expect(again.refund_id).toBe(first.refund_id);
  expect(agent.elicitations[before]?.message).toContain(`Request a refund of ${usd(o.total)} `);
}, 60_000);
