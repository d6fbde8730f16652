/**
 * Checkout answers an agent developer can rely on (audit E): an idempotent retry after success returns the receipt,
 * a checkout session id that is not the caller's is CHECKOUT_SESSION_NOT_FOUND (never another code naming a cart),
 * an unknown sandbox token is a bad argument refused before anything is held, and REST refusals say the REST way.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { ALL_SCOPES, createKey, login, type TestKey } from "../helpers/agents.ts";
import { startServer, type TestServer } from "../helpers/server.ts";
import { accept, connect, errorOf, structured, type Connected } from "../mcp/helpers.ts";

const SKILLET = "399d72f1-303c-5cf3-bc6a-5c82714b85d4"; // DS-0005, tracked stock, demo-store
const BOARD = "5befd987-79cd-540c-8a5d-2ba5a30aed41"; // DS-0011, untracked stock, demo-store
const GREEN = "4ef5cf23-f828-5e3e-bd0b-833653bc4c5a"; // GL-0001, greenleaf-living (card only)
const SUMMIT = "summit-sports-co"; // two shipping methods in the seed
const SF = { country_code: "US", postal_code: "94107" };

let srv: TestServer;
let key: TestKey;
let other: TestKey;
let agent: Connected;

beforeAll(async () => {
  srv = await startServer({ seed: true, config: { RATE_LIMITS_ENABLED: false } });
  key = await createKey(srv, { scopes: ALL_SCOPES });
  other = await createKey(srv, { scopes: ALL_SCOPES });
  agent = await connect(srv, { headers: key.headers, elicit: accept });
}, 120_000);
afterAll(async () => {
  await agent?.close();
  await srv?.stop();
});

async function cart(productId: string, k: TestKey = key): Promise<string> {
  const r = await srv.json("/api/v1/agent/cart", { method: "POST", headers: k.headers, body: { items: [{ product_id: productId, quantity: 1 }] } });
  expect(r.status).toBe(201);
  return r.body.data.id;
}
const preview = (body: Record<string, unknown>, k: TestKey = key) => srv.json("/api/v1/agent/checkout/preview", { method: "POST", headers: k.headers, body });
const checkout = (body: Record<string, unknown>, k: TestKey = key) => srv.json("/api/v1/agent/checkout", { method: "POST", headers: k.headers, body });
const cancelSession = (sid: string, k: TestKey = key) => srv.json(`/api/v1/agent/checkout/${sid}/cancel`, { method: "POST", headers: k.headers });
/** A well-formed session id whose cart nobody ever created. */
const unknownSession = () => `cs_${crypto.randomUUID().replace(/-/g, "")}_1`;

/** The receipt fields a completed checkout's 200 carries, as a retry must see them again. */
function receiptOf(data: Record<string, any>) {
  return {
    checkout_session_id: data.checkout_session_id,
    order_id: data.order_id,
    order_ids: data.order_ids,
    orders: data.orders,
    total: data.total,
    total_minor: data.total_minor,
    currency: data.currency,
    payment_rail: data.payment_rail,
  };
}

describe("an idempotent retry after success returns the existing receipt", () => {
  test("REST: the one-call checkout repeated with the same cart and key is 409 CHECKOUT_ALREADY_IN_PROGRESS whose details carry the 200's receipt", async () => {
    const id = await cart(BOARD);
    const idem = crypto.randomUUID();
    const first = await checkout({ cartId: id, payment_method: "tok_approve", idempotency_key: idem });
    expect(first.status).toBe(200);
    const o = first.body.data.orders[0];
    expect(o).toMatchObject({ status: "paid", currency: "USD" });
    expect(o.capture_reference).toBeString();

    const again = await checkout({ cartId: id, payment_method: "tok_approve", idempotency_key: idem });
    expect(again.status).toBe(409);
    expect(again.body).toMatchObject({ success: false, code: "CHECKOUT_ALREADY_IN_PROGRESS", details: { status: "COMPLETED", ...receiptOf(first.body.data) } });
    const [n] = await srv.db.sql<{ n: number }[]>`SELECT count(*)::int AS n FROM orders WHERE cart_id = ${id}`;
    expect(n.n).toBe(1);
  });

  test("REST: a completed session retried with its checkout_session_id shows each order as it stands now", async () => {
    const id = await cart(BOARD);
    const p = await preview({ cartId: id });
    const sid = p.body.data.checkout_session_id;
    const idem = crypto.randomUUID();
    const first = await checkout({ cartId: id, checkout_session_id: sid, payment_method: "MOCK", idempotency_key: idem });
    expect(first.status).toBe(200);
    const admin = await login(srv);
    const moved = await srv.json(`/api/v1/merchant/stores/demo-store/orders/${first.body.data.order_id}/status`, {
      method: "POST",
      headers: { authorization: `Bearer ${admin}` },
      body: { status: "fulfilled" },
    });
    expect(moved.status).toBe(200);

    const again = await checkout({ cartId: id, checkout_session_id: sid, payment_method: "MOCK", idempotency_key: idem });
    expect(again.status).toBe(409);
    expect(again.body.code).toBe("CHECKOUT_ALREADY_IN_PROGRESS");
    expect(again.body.details.orders).toEqual([{ ...first.body.data.orders[0], status: "fulfilled" }]);
    expect(again.body.details).toMatchObject({ status: "COMPLETED", order_id: first.body.data.order_id, total_minor: first.body.data.total_minor });
  });

  test("REST: another idempotency_key on the completed session learns nothing of the receipt (409 IDEMPOTENCY_KEY_CONFLICT)", async () => {
    const id = await cart(BOARD);
    expect((await checkout({ cartId: id, payment_method: "MOCK", idempotency_key: crypto.randomUUID() })).status).toBe(200);
    const r = await checkout({ cartId: id, payment_method: "MOCK", idempotency_key: crypto.randomUUID() });
    expect(r.status).toBe(409);
    expect(r.body.code).toBe("IDEMPOTENCY_KEY_CONFLICT");
    expect(r.body.details.orders).toBeUndefined();
  });

  test("MCP: complete_checkout repeated with the same session and key answers CHECKOUT_ALREADY_IN_PROGRESS with the first answer's orders", async () => {
    const c = structured(await agent.call("create_cart", { items: [{ product_id: BOARD, quantity: 1 }] }));
    const p = structured(await agent.call("preview_checkout", { cart_id: c.cart_id ?? c.id }));
    const args = { checkout_session_id: p.checkout_session_id, idempotency_key: crypto.randomUUID(), payment_method: "MOCK" };
    const first = structured(await agent.call("complete_checkout", args));
    expect(first.status).toBe("COMPLETED");
    const again = errorOf(await agent.call("complete_checkout", args));
    expect(again.code).toBe("CHECKOUT_ALREADY_IN_PROGRESS");
    expect(again.details).toMatchObject({ status: "COMPLETED", ...receiptOf(first) });
  }, 60_000);
});

describe("a checkout session id that is not the caller's is CHECKOUT_SESSION_NOT_FOUND", () => {
  test("REST cancel: a well-formed id nobody created and another key's real session get the same 404 CHECKOUT_SESSION_NOT_FOUND, without a cart id", async () => {
    const nobody = unknownSession();
    const r = await cancelSession(nobody);
    expect(r.status).toBe(404);
    expect(r.body).toEqual({ success: false, error: expect.any(String), code: "CHECKOUT_SESSION_NOT_FOUND", details: { checkout_session_id: nobody } });

    const theirs = (await preview({ cartId: await cart(BOARD, other) }, other)).body.data.checkout_session_id;
    const t = await cancelSession(theirs);
    expect(t.status).toBe(404);
    expect(t.body).toEqual({ success: false, error: r.body.error, code: "CHECKOUT_SESSION_NOT_FOUND", details: { checkout_session_id: theirs } });
    // and the other key's session is untouched
    const still = await srv.json(`/api/v1/agent/cart/${theirs.slice(3, 35).replace(/^(.{8})(.{4})(.{4})(.{4})(.{12})$/, "$1-$2-$3-$4-$5")}`, { headers: other.headers });
    expect(still.body.data.checkout_status).toBe("READY_FOR_PAYMENT");
  });

  test("REST complete: another key's session sent with its cart id is 404 CHECKOUT_SESSION_NOT_FOUND, and nothing is charged", async () => {
    const theirCart = await cart(BOARD, other);
    const theirs = (await preview({ cartId: theirCart }, other)).body.data.checkout_session_id;
    const r = await checkout({ cartId: theirCart, checkout_session_id: theirs, payment_method: "MOCK", idempotency_key: crypto.randomUUID() });
    expect(r.status).toBe(404);
    expect(r.body).toMatchObject({ code: "CHECKOUT_SESSION_NOT_FOUND", details: { checkout_session_id: theirs } });
    expect(r.body.details.cart_id).toBeUndefined();
    expect(await srv.db.sql`SELECT id FROM orders WHERE cart_id = ${theirCart}`).toHaveLength(0);
  });

  test("MCP complete_checkout and cancel_checkout: a session id nobody created is CHECKOUT_SESSION_NOT_FOUND without a cart id", async () => {
    const nobody = unknownSession();
    const c = errorOf(await agent.call("complete_checkout", { checkout_session_id: nobody, idempotency_key: crypto.randomUUID(), payment_method: "MOCK" }));
    expect(c.code).toBe("CHECKOUT_SESSION_NOT_FOUND");
    expect(c.details).toEqual({ checkout_session_id: nobody });
    const x = errorOf(await agent.call("cancel_checkout", { checkout_session_id: nobody }));
    expect(x.code).toBe("CHECKOUT_SESSION_NOT_FOUND");
    expect(x.details).toEqual({ checkout_session_id: nobody });
  }, 60_000);
});

describe("an unknown sandbox test token", () => {
  test("is 400 INVALID_ARGUMENT invalid_test_token with the valid tokens, before any stock is held or any intent created; the same key then pays", async () => {
    const [before] = await srv.db.sql<{ r: number }[]>`SELECT reserved_quantity AS r FROM products WHERE id = ${SKILLET}`;
    const [intents] = await srv.db.sql<{ n: number }[]>`SELECT count(*)::int AS n FROM sandbox_ledger_intents`;
    const id = await cart(SKILLET);
    const idem = crypto.randomUUID();
    const r = await checkout({ cartId: id, payment_method: "tok_bogus", idempotency_key: idem });
    expect(r.status).toBe(400);
    expect(r.body).toMatchObject({ success: false, code: "INVALID_ARGUMENT", details: { field: "payment_method", reason: "invalid_test_token" } });
    expect(r.body.details.valid_tokens).toEqual(expect.arrayContaining(["tok_approve", "tok_decline", "tok_needs_approval", "MOCK"]));
    const [after] = await srv.db.sql<{ r: number }[]>`SELECT reserved_quantity AS r FROM products WHERE id = ${SKILLET}`;
    expect(after.r).toBe(before.r);
    expect(await srv.db.sql`SELECT id FROM orders WHERE cart_id = ${id}`).toHaveLength(0);
    const [intentsAfter] = await srv.db.sql<{ n: number }[]>`SELECT count(*)::int AS n FROM sandbox_ledger_intents`;
    expect(intentsAfter.n).toBe(intents.n);

    const ok = await checkout({ cartId: id, payment_method: "tok_approve", idempotency_key: idem });
    expect(ok.status).toBe(200);
    expect(ok.body.data.status).toBe("COMPLETED");
  });

  test("a per-merchant token names its field (payment_methods.<slug>)", async () => {
    const id = await cart(GREEN);
    const r = await checkout({ cartId: id, payment_methods: { "greenleaf-living": "tok_visa" } });
    expect(r.status).toBe(400);
    expect(r.body).toMatchObject({ code: "INVALID_ARGUMENT", details: { field: "payment_methods.greenleaf-living", reason: "invalid_test_token" } });
  });
});

describe("REST refusals say the REST way to proceed", () => {
  let summitProduct: string;
  beforeAll(async () => {
    const [p] = await srv.db.sql<{ id: string }[]>`
      SELECT id FROM products WHERE store_slug = ${SUMMIT} AND active AND in_stock AND (stock_quantity IS NULL OR stock_quantity >= 5) ORDER BY id LIMIT 1`;
    summitProduct = p!.id;
  });

  test("PRECONDITION_NOT_MET for a shipping pick names shipping on /checkout/preview, not an MCP tool", async () => {
    const id = await cart(summitProduct);
    const bare = await preview({ cartId: id });
    expect(bare.status).toBe(409);
    expect(bare.body).toMatchObject({ code: "PRECONDITION_NOT_MET", details: { reason: "shipping_destination_required", merchant_slugs: [SUMMIT] } });
    expect(bare.body.error).toContain("POST /api/v1/agent/checkout/preview");
    expect(bare.body.error).not.toContain("get_shipping_rates");

    const noPick = await preview({ cartId: id, shipping: SF });
    expect(noPick.status).toBe(409);
    expect(noPick.body.details.reason).toBe("shipping_option_required");
    expect(noPick.body.error).toContain("option_id");
    expect(noPick.body.error).toContain("POST /api/v1/agent/checkout/preview");
    expect(noPick.body.error).not.toContain("get_shipping_rates");

    const oneCall = await checkout({ cartId: id, payment_method: "tok_approve" });
    expect(oneCall.status).toBe(409);
    expect(oneCall.body.error).not.toContain("get_shipping_rates");
  });

  test("STATE_RECONFIRMATION_REQUIRED says to send details.reconfirm_state_hash back as reconfirmed_state_hash with the same idempotency_key", async () => {
    const id = await cart(GREEN);
    const p = await preview({ cartId: id });
    const [{ price_minor }] = await srv.db.sql<{ price_minor: number }[]>`SELECT price_minor FROM products WHERE id = ${GREEN}`;
    await srv.db.sql`UPDATE products SET price_minor = ${Math.round(Number(price_minor) * 1.02)} WHERE id = ${GREEN}`; // +2 %
    try {
      const sid = p.body.data.checkout_session_id;
      const idem = crypto.randomUUID();
      const r = await checkout({ cartId: id, checkout_session_id: sid, payment_method: "tok_approve", idempotency_key: idem });
      expect(r.status).toBe(409);
      expect(r.body.code).toBe("STATE_RECONFIRMATION_REQUIRED");
      expect(r.body.error).toContain("reconfirmed_state_hash");
      expect(r.body.error).toContain("details.reconfirm_state_hash");
      expect(r.body.error).toContain("idempotency_key");
      // doing what it says completes
      const done = await checkout({ cartId: id, checkout_session_id: sid, payment_method: "tok_approve", idempotency_key: idem, reconfirmed_state_hash: r.body.details.reconfirm_state_hash });
      expect(done.status).toBe(200);
    } finally {
      await srv.db.sql`UPDATE products SET price_minor = ${price_minor} WHERE id = ${GREEN}`;
    }
  });

  test("CART_NOT_MUTABLE on a cart frozen by a preview carries the checkout_session_id and says cancelling it unfreezes the cart", async () => {
    const id = await cart(BOARD);
    const sid = (await preview({ cartId: id })).body.data.checkout_session_id;
    const r = await srv.json("/api/v1/agent/apply-coupon", { method: "POST", headers: key.headers, body: { cartId: id, code: "WELCOME10" } });
    expect(r.status).toBe(409);
    expect(r.body).toMatchObject({ code: "CART_NOT_MUTABLE", details: { reason: "checkout_in_progress", checkout_session_id: sid, checkout_status: "READY_FOR_PAYMENT" } });
    expect(r.body.error).toContain(`POST /api/v1/agent/checkout/${sid}/cancel`);
    // doing what it says unfreezes the cart
    expect((await cancelSession(sid)).status).toBe(200);
    const again = await srv.json("/api/v1/agent/apply-coupon", { method: "POST", headers: key.headers, body: { cartId: id, code: "WELCOME10" } });
    expect(again.status).toBe(200);
  });
});
