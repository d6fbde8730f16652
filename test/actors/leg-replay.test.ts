/**
 * A payment leg is idempotent per reservation id, for tracked stock (a reservation row holds it) and for untracked
 * stock (nothing held, so no row until the leg is released or its order canceled). A replay of a released or
 * canceled attempt is refused, and a stale attempt never rewrites an order that another attempt paid.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { ALL_SCOPES, createKey, type TestKey } from "../helpers/agents.ts";
import { startServer, type TestServer } from "../helpers/server.ts";
import { beginLegRows, cancelPendingOrderRows, readCatalog, settleLegRows } from "../../actors/store/commerce.ts";

const board = "5befd987-79cd-540c-8a5d-2ba5a30aed41"; // demo-store, untracked stock
const skillet = "399d72f1-303c-5cf3-bc6a-5c82714b85d4"; // demo-store, tracked stock
let srv: TestServer;
let key: TestKey;
beforeAll(async () => {
  srv = await startServer({ seed: true });
  key = await createKey(srv, { scopes: ALL_SCOPES });
}, 120_000);
afterAll(async () => {
  await srv?.stop();
});

async function cartWith(productId: string): Promise<string> {
  const r = await srv.json("/api/v1/agent/cart", { method: "POST", headers: key.headers, body: { items: [{ product_id: productId, quantity: 1 }] } });
  expect(r.status).toBe(201);
  return r.body.data.id;
}
const leg = (cartId: string, orderId: string, reservationId: string, productId: string) => ({
  orderId, checkoutSessionId: `sess-${orderId}`, cartId, reservationId, agentKeyId: key.id, currency: "USD",
  paymentRail: "card", paymentMethod: "MOCK", couponCode: null, subtotalMinor: 100, discountMinor: 0, shippingMinor: 0, taxMinor: 0,
  totalMinor: 100, lines: [{ productId, variantId: null, title: "x", quantity: 1, unitPriceMinor: 100 }],
});
async function codeOf(p: Promise<unknown>): Promise<string | null> {
  try {
    await p;
    return null;
  } catch (e) {
    return (e as { code?: string }).code ?? "thrown";
  }
}

for (const [kind, productId] of [["tracked", skillet], ["untracked", board]] as const) {
  describe(`a leg of ${kind} stock`, () => {
    test("begun again after its release is refused with conflict", async () => {
      const sql = srv.db.sql;
      await readCatalog(sql, [productId], key.id); // the untracked hint, as a checkout has it
      const cart = await cartWith(productId);
      const orderId = crypto.randomUUID();
      const r1 = `r1-${crypto.randomUUID()}`;
      await beginLegRows(sql, "demo-store", leg(cart, orderId, r1, productId), Date.now());
      await settleLegRows(sql, "demo-store", { orderId, reservationId: r1, outcome: "released" }, Date.now());
      expect(await codeOf(beginLegRows(sql, "demo-store", leg(cart, orderId, r1, productId), Date.now()))).toBe("conflict");
    });

    test("begun again after its order was canceled is refused with conflict", async () => {
      const sql = srv.db.sql;
      await readCatalog(sql, [productId], key.id);
      const cart = await cartWith(productId);
      const orderId = crypto.randomUUID();
      const r1 = `r1-${crypto.randomUUID()}`;
      await beginLegRows(sql, "demo-store", leg(cart, orderId, r1, productId), Date.now());
      const c = await cancelPendingOrderRows(sql, "demo-store", { orderId, totalMinor: 100, currency: "USD", reason: "session_expired" }, Date.now());
      expect(c.status).toBe("canceled");
      expect(await codeOf(beginLegRows(sql, "demo-store", leg(cart, orderId, r1, productId), Date.now()))).toBe("conflict");
    });

    test("a stale begin of the first attempt leaves the order the second attempt paid as it is", async () => {
      const sql = srv.db.sql;
      await readCatalog(sql, [productId], key.id);
      const cart = await cartWith(productId);
      const orderId = crypto.randomUUID();
      const r1 = `r1-${crypto.randomUUID()}`;
      const r2 = `r2-${crypto.randomUUID()}`;
      await beginLegRows(sql, "demo-store", leg(cart, orderId, r1, productId), Date.now());
      await settleLegRows(sql, "demo-store", { orderId, reservationId: r1, outcome: "released" }, Date.now());
      await beginLegRows(sql, "demo-store", leg(cart, orderId, r2, productId), Date.now());
      const paid = await settleLegRows(sql, "demo-store", { orderId, reservationId: r2, outcome: "captured", intentId: r2, captureRef: "cap" } as never, Date.now());
      expect(paid.status).toBe("paid");
      await codeOf(beginLegRows(sql, "demo-store", leg(cart, orderId, r1, productId), Date.now()));
      const [o] = await sql<{ intent_id: string; status: string }[]>`SELECT intent_id, status FROM orders WHERE id = ${orderId}`;
      expect(o).toEqual({ intent_id: r2, status: "paid" });
      const attempts = await sql<{ n: number }[]>`SELECT count(*)::int AS n FROM order_events WHERE order_id = ${orderId} AND type = 'payment_attempt'`;
      expect(attempts[0].n).toBe(1); // the second attempt's, none from the stale replay
    });
  });
}
