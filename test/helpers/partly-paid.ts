/**
 * A partly paid cart (review R5-5), through REST against the real server: a two-store cart whose one-call checkout
 * captured demo-store's leg and was declined on greenleaf-living's, then the agent canceled the session. The cart stays
 * CHECKOUT (the paid leg carries over into the next preview). Shared by the REST and MCP tests of that state.
 */
import { expect } from "bun:test";
import type { TestKey } from "./agents.ts";
import type { TestServer } from "./server.ts";

export const BOARD = "5befd987-79cd-540c-8a5d-2ba5a30aed41"; // demo-store
export const GREEN = "4ef5cf23-f828-5e3e-bd0b-833653bc4c5a"; // greenleaf-living

export async function partlyPaidThenCanceled(srv: TestServer, key: TestKey): Promise<{ cartId: string; sid: string; paidOrderId: string }> {
  const c = await srv.json("/api/v1/agent/cart", { method: "POST", headers: key.headers, body: { items: [{ product_id: BOARD, quantity: 1 }, { product_id: GREEN, quantity: 1 }] } });
  expect(c.status).toBe(201);
  const cartId: string = c.body.data.id;
  const r = await srv.json("/api/v1/agent/checkout", {
    method: "POST",
    headers: key.headers,
    body: { cartId, idempotency_key: crypto.randomUUID(), payment_methods: { "demo-store": "tok_approve", "greenleaf-living": "tok_decline" } },
  });
  expect(r.status).toBe(402);
  expect(r.body.details).toMatchObject({ partially_captured: true, captured_merchant_slugs: ["demo-store"] });
  const sid: string = r.body.details.checkout_session_id;
  const paidOrderId: string = r.body.details.order_ids[0];
  expect(typeof paidOrderId).toBe("string");
  const cx = await srv.json(`/api/v1/agent/checkout/${sid}/cancel`, { method: "POST", headers: key.headers, body: {} });
  expect(cx.status).toBe(200);
  expect(cx.body.data.status).toBe("CANCELED");
  return { cartId, sid, paidOrderId };
}

/**
 * A previewed two-store session whose first complete captured demo-store's leg and was declined on greenleaf-living's:
 * READY_FOR_PAYMENT for greenleaf-living, the same idempotency key bound. `items` are the cart's lines (one store each
 * at least). Shared by the tests of a partly paid session's retry (state check, moves of the paid store, P-1).
 */
export async function partlyPaidSession(
  srv: TestServer,
  key: TestKey,
  items: { product_id: string; quantity: number }[],
): Promise<{ cartId: string; sessionId: string; idempotencyKey: string }> {
  const post = (path: string, body: unknown) => srv.json(`/api/v1/agent${path}`, { method: "POST", headers: key.headers, body });
  const cart = await post("/cart", { items });
  expect(cart.status).toBe(201);
  const cartId = cart.body.data.id as string;
  const preview = await post("/checkout/preview", { cartId });
  expect(preview.status).toBe(200);
  const sessionId = preview.body.data.checkout_session_id as string;
  const idempotencyKey = crypto.randomUUID();
  const first = await post("/checkout", {
    cartId,
    checkout_session_id: sessionId,
    idempotency_key: idempotencyKey,
    payment_methods: { "demo-store": "tok_approve", "greenleaf-living": "tok_decline" },
  });
  expect(first.status).toBe(402);
  expect(first.body).toMatchObject({ code: "PAYMENT_DECLINED", details: { status: "READY_FOR_PAYMENT", completed_store_ids: ["demo-store"], partially_captured: true } });
  return { cartId, sessionId, idempotencyKey };
}
