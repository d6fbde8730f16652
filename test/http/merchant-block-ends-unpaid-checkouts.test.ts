/**
 * A key the merchant blocked is never paid at that store (audit M-2). Blocking cancels every unpaid checkout of the key
 * at the store, not only those holding stock (actors/store/commerce.ts releaseBlockedKeyHolds): a checkout of an
 * untracked product holds nothing and was left waiting for the buyer, whose approval then paid it. And the cart reads
 * the block again right before it asks the processor to capture (actors/cart/index.ts runPayment), so a block whose
 * cancel has not reached the cart yet is refused too: 403 NOT_ELIGIBLE agent_blocked_by_merchant, nothing captured.
 */
import { afterAll, beforeAll, expect, test } from "bun:test";
import { ALL_SCOPES, createKey, login, merchantLogin, type TestKey } from "../helpers/agents.ts";
import { approvalLink, decideAt, linkPath } from "../helpers/sandbox-approval.ts";
import { startServer, type TestServer } from "../helpers/server.ts";

const SKILLET = "399d72f1-303c-5cf3-bc6a-5c82714b85d4"; // demo-store DS-0005, made untracked below
const GREEN = "4ef5cf23-f828-5e3e-bd0b-833653bc4c5a"; // greenleaf-living, tracked stock

let srv: TestServer;
let owner: string;
beforeAll(async () => {
  srv = await startServer({ seed: true, config: { RATE_LIMITS_ENABLED: false } });
  owner = await login(srv); // the operator (the demo store has no merchant account)
  // The merchant stops tracking the product's stock: a checkout of it holds nothing.
  const inv = await merchant("/inventory", "PATCH", { items: [{ productId: SKILLET, stockQuantity: null, inStock: true }] });
  expect(inv.status).toBe(200);
}, 120_000);
afterAll(async () => {
  await srv?.stop();
});

const merchant = (path: string, method: string, body: unknown) =>
  srv.json(`/api/v1/merchant/stores/demo-store${path}`, { method, headers: { authorization: `Bearer ${owner}` }, body });

/** A checkout of the key waiting for the buyer's approval (202), with what completing it again needs. */
async function waitingCheckout(key: TestKey) {
  const cart = await srv.json("/api/v1/agent/cart", { method: "POST", headers: key.headers, body: { items: [{ product_id: SKILLET, quantity: 1 }] } });
  expect(cart.status).toBe(201);
  const idem = crypto.randomUUID();
  const r = await srv.json("/api/v1/agent/checkout", { method: "POST", headers: key.headers, body: { cartId: cart.body.data.id, payment_method: "tok_needs_approval", idempotency_key: idem } });
  expect(r.status).toBe(202);
  const session = r.body.details.checkout_session_id as string;
  return {
    session,
    link: r.body.details.approval_url as string,
    approve: async () => expect((await fetch(`${r.body.details.approval_url}/approve`, { method: "POST" })).status).toBe(200),
    complete: () => srv.json("/api/v1/agent/checkout", { method: "POST", headers: key.headers, body: { cartId: cart.body.data.id, checkout_session_id: session, idempotency_key: idem } }),
  };
}

const orderOf = async (session: string) =>
  (await srv.db.sql<{ status: string; capture_ref: string | null }[]>`SELECT status, capture_ref FROM orders WHERE checkout_session_id = ${session}`)[0];

test("blocking a key cancels its checkout waiting for the buyer even when it holds no stock, and the approval then pays nothing", async () => {
  const key = await createKey(srv, { scopes: ALL_SCOPES });
  const w = await waitingCheckout(key);

  const block = await merchant(`/allowlist/${key.id}`, "POST", { status: "blocked" });
  expect(block.status).toBe(200);
  expect(await orderOf(w.session)).toEqual({ status: "canceled", capture_ref: null });

  // the buyer's link refuses: the checkout it belongs to ended (helper B, B-4: it answered "approved" for nothing)
  const late = await srv.json(`${linkPath(w.link)}/approve`, { method: "POST", body: {} });
  expect({ status: late.status, code: late.body.code, reason: late.body.details?.reason }).toEqual({ status: 409, code: "conflict", reason: "checkout_ended" });
  const done = await w.complete();
  expect(done.status).toBe(409);
  expect(done.body.code).toBe("SESSION_INACTIVE");
  expect(await orderOf(w.session)).toEqual({ status: "canceled", capture_ref: null });
}, 60_000);

test("a block that has not yet canceled the checkout still stops the capture after the buyer approves", async () => {
  const key = await createKey(srv, { scopes: ALL_SCOPES });
  const w = await waitingCheckout(key);
  // The block committed, its cancel not yet run (it waits for the cart's turn): the binding alone, as setAllowlist
  // writes it first.
  await srv.db.sql`UPDATE store_agent_allowlist SET status = 'blocked', updated_at = now() WHERE store_slug = 'demo-store' AND agent_key_id = ${key.id}`;

  await w.approve();
  const done = await w.complete();
  expect(done.status).toBe(403);
  expect(done.body.code).toBe("NOT_ELIGIBLE");
  expect(done.body.details).toMatchObject({ reason: "agent_blocked_by_merchant", merchant_slugs: ["demo-store"], checkout_session_id: w.session });
  expect(await orderOf(w.session)).toEqual({ status: "pending", capture_ref: null });
  // Nothing was captured at the processor either: the session is back to READY_FOR_PAYMENT, with nothing held.
  const [leg] = await srv.db.sql<{ status: string }[]>`SELECT r.status FROM stock_reservations r JOIN orders o ON o.id = r.order_id WHERE o.checkout_session_id = ${w.session}`;
  expect(leg?.status ?? "released").toBe("released");
}, 60_000);

test("a block the cancel cannot apply (another merchant's leg unpaid) refuses the resumed payment at both stores, nothing captured", async () => {
  const key = await createKey(srv, { scopes: ALL_SCOPES });
  const green = { authorization: `Bearer ${await login(srv, merchantLogin("greenleaf-living"))}` };
  const c = await srv.json("/api/v1/agent/cart", { method: "POST", headers: key.headers, body: { items: [{ product_id: SKILLET, quantity: 1 }, { product_id: GREEN, quantity: 1 }] } });
  expect(c.status).toBe(201);
  const idem = crypto.randomUUID();
  const body = { cartId: c.body.data.id, idempotency_key: idem, payment_methods: { "demo-store": "tok_needs_approval", "greenleaf-living": "tok_needs_approval" } };
  const waiting = await srv.json("/api/v1/agent/checkout", { method: "POST", headers: key.headers, body });
  expect(waiting.status).toBe(202);
  const session = waiting.body.details.checkout_session_id as string;

  // greenleaf blocks the key: the block stands, but ending the session would cancel demo-store's order (shared_checkout).
  const block = await srv.json(`/api/v1/merchant/stores/greenleaf-living/allowlist/${key.id}`, { method: "POST", headers: green, body: { status: "blocked" } });
  expect(block.status).toBe(200);
  const orders = () => srv.db.sql<{ store_slug: string; status: string; capture_ref: string | null }[]>`
    SELECT store_slug, status, capture_ref FROM orders WHERE checkout_session_id = ${session} ORDER BY store_slug`;
  expect((await orders()).map((o) => o.status)).toEqual(["pending", "pending"]);

  for (const store of ["demo-store", "greenleaf-living"]) expect((await decideAt(srv, approvalLink(waiting, store), "approve")).status).toBe(200);
  const done = await srv.json("/api/v1/agent/checkout", { method: "POST", headers: key.headers, body: { cartId: c.body.data.id, checkout_session_id: session, idempotency_key: idem } });
  expect(done.status).toBe(403);
  expect(done.body).toMatchObject({ code: "NOT_ELIGIBLE", details: { reason: "agent_blocked_by_merchant", merchant_slugs: ["greenleaf-living"] } });
  expect([...(await orders())]).toEqual([
    { store_slug: "demo-store", status: "pending", capture_ref: null },
    { store_slug: "greenleaf-living", status: "pending", capture_ref: null },
  ]);
  // greenleaf's stock is back on sale: its hold was released with the attempt
  const holds = await srv.db.sql<{ status: string }[]>`SELECT r.status FROM stock_reservations r JOIN orders o ON o.id = r.order_id
    WHERE o.checkout_session_id = ${session} AND o.store_slug = 'greenleaf-living'`;
  expect(holds.map((h) => h.status)).toEqual(["released"]);
}, 60_000);
