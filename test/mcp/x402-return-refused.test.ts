/**
 * MCP onx_create_return of an order paid over x402 (helper C, C-4): NOT_ELIGIBLE `refund_by_merchant` before the human
 * is asked, keyed or not, and no refund request written (the store refuses it too; REST's twin:
 * test/http/x402-refund-request.test.ts). The order stands in for an x402 one by its rail label.
 */
import { afterAll, beforeAll, expect, test } from "bun:test";
import { ALL_SCOPES, createKey, type TestKey } from "../helpers/agents.ts";
import { startServer, type TestServer } from "../helpers/server.ts";
import { accept, connect, counted, DEMO_PRODUCT, errorOf, structured, type Connected } from "./helpers.ts";

let srv: TestServer;
let key: TestKey;
let demo: Connected;

beforeAll(async () => {
  srv = await startServer({ seed: true, config: { RATE_LIMITS_ENABLED: false } });
  key = await createKey(srv, { scopes: ALL_SCOPES, tier: "ENTERPRISE" });
  demo = await connect(srv, { headers: key.headers, elicit: accept });
}, 60_000);
afterAll(async () => {
  await demo?.close();
  await srv?.stop();
});

test("onx_create_return of a paid x402 order is NOT_ELIGIBLE refund_by_merchant without asking the human, with or without an idempotency_key", async () => {
  const cart = structured(await demo.call("create_cart", { items: [{ product_id: DEMO_PRODUCT, quantity: 1 }] }));
  const pv = structured(await demo.call("preview_checkout", { cart_id: cart.cart_id }));
  const paid = structured(await demo.call("complete_checkout", { checkout_session_id: pv.checkout_session_id, idempotency_key: crypto.randomUUID(), payment_method: "MOCK" }));
  expect(paid.status).toBe("COMPLETED");
  await srv.db.sql`UPDATE orders SET payment_rail = 'x402' WHERE id = ${paid.order_id}`;

  for (const extra of [{}, { idempotency_key: crypto.randomUUID() }]) {
    const { result, asked } = await counted(demo, () => demo.call("onx_create_return", { order_id: paid.order_id, reason: "changed my mind", ...extra }));
    const e = errorOf(result);
    expect(e.code).toBe("NOT_ELIGIBLE");
    expect(e.details).toMatchObject({ order_id: paid.order_id, payment_rail: "x402", reason: "refund_by_merchant" });
    expect(asked).toBe(0);
  }
  expect(await srv.db.sql`SELECT id FROM order_refunds WHERE order_id = ${paid.order_id}`).toHaveLength(0);
}, 60_000);
