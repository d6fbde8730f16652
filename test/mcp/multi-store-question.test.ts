/**
 * A payment's question names every store it charges and each one's amount (helper AC's report on audit V): a cart
 * shared by two stores is paid in one complete_checkout on either store's endpoint, and the human was asked to "Pay
 * <whole total> to <this endpoint's store>" while both stores were charged; a partly paid session (one store already
 * captured) was asked the whole cart's total under this store's name while only the other store was left to charge.
 * The amounts are the approved state's legs (the cart's precheck `session.charges`), so they are what is captured.
 * Through the SDK client against the real server; two-store carts are made over REST, the only way to make one.
 */
import { afterAll, beforeAll, expect, test } from "bun:test";
import { deriveIntentId } from "../../actors/payments/rail.ts";
import { ALL_SCOPES, createKey, type TestKey } from "../helpers/agents.ts";
import { BOARD, GREEN, partlyPaidThenCanceled } from "../helpers/partly-paid.ts";
import { startServer, type TestServer } from "../helpers/server.ts";
import { accept, connect, structured, type Connected } from "./helpers.ts";
import { decideIntent } from "../helpers/sandbox-approval.ts";

const DEMO = "demo-store";
const LEAF = "greenleaf-living";

let srv: TestServer;
let key: TestKey;
let demo: Connected;
let leaf: Connected;
let names: Record<string, string>;

beforeAll(async () => {
  srv = await startServer({ seed: true, config: { RATE_LIMITS_ENABLED: false } });
  key = await createKey(srv, { scopes: ALL_SCOPES, tier: "ENTERPRISE" });
  demo = await connect(srv, { path: `/${DEMO}/mcp`, headers: key.headers, elicit: accept });
  leaf = await connect(srv, { path: `/${LEAF}/mcp`, headers: key.headers, elicit: accept });
  const rows = await srv.db.sql<{ slug: string; name: string }[]>`SELECT slug, name FROM stores WHERE slug IN (${DEMO}, ${LEAF})`;
  names = Object.fromEntries(rows.map((r) => [r.slug, r.name]));
}, 120_000);
afterAll(async () => {
  await demo?.close();
  await leaf?.close();
  await srv?.stop();
});

const usd = (minor: number) => `${(minor / 100).toFixed(2)} USD`;

/** A demo-store + greenleaf cart (REST), previewed on `on`. */
async function twoStoreSession(on: Connected): Promise<{ cartId: string; sid: string }> {
  const c = await srv.json("/api/v1/agent/cart", { method: "POST", headers: key.headers, body: { items: [{ product_id: BOARD, quantity: 1 }, { product_id: GREEN, quantity: 1 }] } });
  expect(c.status).toBe(201);
  const pv = await on.call("preview_checkout", { cart_id: c.body.data.id });
  expect(pv.isError).toBeFalsy();
  return { cartId: c.body.data.id, sid: structured(pv).checkout_session_id };
}

/** What each store's order of the cart was charged (total_minor by store). */
async function charged(cartId: string): Promise<Record<string, number>> {
  const rows = await srv.db.sql<{ store_slug: string; total_minor: string; status: string }[]>`SELECT store_slug, total_minor, status FROM orders WHERE cart_id = ${cartId}`;
  return Object.fromEntries(rows.map((r) => [r.store_slug, Number(r.total_minor)]));
}

for (const [endpoint, on] of [[DEMO, () => demo], [LEAF, () => leaf]] as const) {
  test(`on ${endpoint}'s endpoint, a two-store payment's question names both stores and each one's amount, whose sum is the total asked and charged`, async () => {
    const c = on();
    const s = await twoStoreSession(c);
    const asked = c.elicitations.length;
    const r = await c.call("complete_checkout", { checkout_session_id: s.sid, idempotency_key: crypto.randomUUID(), payment_method: "tok_approve" });
    expect(r.isError).toBeFalsy();
    expect(structured(r).status).toBe("COMPLETED");
    expect(c.elicitations.length).toBe(asked + 1);
    const question = c.elicitations.at(-1)!.message;
    const paid = await charged(s.cartId);
    expect(Object.keys(paid).sort()).toEqual([DEMO, LEAF]);
    const total = paid[DEMO]! + paid[LEAF]!;
    expect(question.split("\n")[0]).toStartWith(`Pay ${usd(total)} to 2 stores for 2 item(s) with tok_approve: `);
    expect(question).toContain(`${usd(paid[DEMO]!)} to ${names[DEMO]}`);
    expect(question).toContain(`${usd(paid[LEAF]!)} to ${names[LEAF]}`);
    expect(question).toContain(`- merchants: `);
  }, 60_000);
}

test("a partly paid session's question names only the store left to charge and its amount, not the whole cart under this store's name", async () => {
  const { cartId } = await partlyPaidThenCanceled(srv, key); // demo-store captured, greenleaf declined, session canceled
  const pv = await demo.call("preview_checkout", { cart_id: cartId });
  expect(pv.isError).toBeFalsy();
  const sid = structured(pv).checkout_session_id as string;
  const asked = demo.elicitations.length;
  const r = await demo.call("complete_checkout", { checkout_session_id: sid, idempotency_key: crypto.randomUUID(), payment_method: "tok_approve" });
  expect(r.isError).toBeFalsy();
  expect(structured(r).status).toBe("COMPLETED");
  expect(demo.elicitations.length).toBe(asked + 1);
  const paid = await charged(cartId);
  expect(demo.elicitations.at(-1)!.message.split("\n")[0]).toBe(`Pay ${usd(paid[LEAF]!)} to 1 store for 1 item(s) with tok_approve: ${usd(paid[LEAF]!)} to ${names[LEAF]}.`);
}, 60_000);

test("a single-store payment's question is unchanged: its store, its total", async () => {
  const c = await srv.json("/api/v1/agent/cart", { method: "POST", headers: key.headers, body: { items: [{ product_id: BOARD, quantity: 1 }] } });
  const pv = await demo.call("preview_checkout", { cart_id: c.body.data.id });
  const r = await demo.call("complete_checkout", { checkout_session_id: structured(pv).checkout_session_id, idempotency_key: crypto.randomUUID(), payment_method: "tok_approve" });
  expect(structured(r).status).toBe("COMPLETED");
  const paid = await charged(c.body.data.id);
  expect(demo.elicitations.at(-1)!.message.split("\n")[0]).toBe(`Pay ${usd(paid[DEMO]!)} to ${names[DEMO]} for 1 item(s) with tok_approve.`);
}, 60_000);

// a resume charges the legs the session has not captured: once a resume found one store captured, the next call's
// question is about the store still waiting
test("a resume after one store was captured asks about the store still waiting, with its amount", async () => {
  const s = await twoStoreSession(demo);
  const ik = crypto.randomUUID();
  const pay = () => demo.call("complete_checkout", { checkout_session_id: s.sid, idempotency_key: ik, payment_method: "tok_needs_approval" });
  const approve = async (store: string) => expect((await decideIntent(srv, deriveIntentId(s.sid, ik, store, 1), "approve")).status).toBe(200);
  expect(structured(await pay()).status).toBe("PENDING_EXTERNAL_CONFIRMATION");
  await approve(LEAF);
  expect(structured(await pay()).completed_store_ids).toEqual([LEAF]);
  await approve(DEMO);
  const third = await pay();
  expect(third.isError).toBeFalsy();
  expect(structured(third).status).toBe("COMPLETED");
  const paid = await charged(s.cartId);
  expect(demo.elicitations.at(-1)!.message.split("\n")[0]).toBe(`Pay ${usd(paid[DEMO]!)} to ${names[DEMO]} for 1 item(s) with tok_needs_approval.`);
}, 60_000);
