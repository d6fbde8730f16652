/**
 * A payment leg is idempotent per reservation id, for tracked stock (a reservation row holds it) and for untracked
 * stock (nothing held, so no row until the leg is released or its order canceled). A replay of a released or
 * canceled attempt is refused, and a stale attempt never rewrites an order that another attempt paid.
 */
import { beforeAll, describe, expect, test } from "bun:test";
import { ALL_SCOPES, createKey, type TestKey } from "../helpers/agents.ts";
import { useServer } from "../helpers/server.ts";
import { beginLegRiding, beginLegRows, cancelPendingOrderRows, readCatalog, settleCapturedLegRiding, settleLegRows } from "../../actors/store/commerce.ts";
import type { RidingWrite } from "../../actors/runtime/state-write.ts";

const board = "5befd987-79cd-540c-8a5d-2ba5a30aed41"; // demo-store, untracked stock
const skillet = "399d72f1-303c-5cf3-bc6a-5c82714b85d4"; // demo-store, tracked stock
const srv = useServer({ seed: true });
let key: TestKey;
beforeAll(async () => {
  key = await createKey(srv, { scopes: ALL_SCOPES });
}, 120_000);

async function cartWith(productId: string): Promise<string> {
  const r = await srv.json("/api/v1/agent/cart", { method: "POST", headers: key.headers, body: { items: [{ product_id: productId, quantity: 1 }] } });
  expect(r.status).toBe(201);
  return r.body.data.id;
}
/**
 * A new cart of the product and the ids of a first attempt to pay it, after the catalog read a checkout makes first
 * (it gives the leg the untracked-stock hint).
 */
async function firstAttempt(productId: string) {
  const sql = srv.db.sql;
  await readCatalog(sql, [productId], key.id);
  return { sql, cart: await cartWith(productId), orderId: crypto.randomUUID(), r1: `r1-${crypto.randomUUID()}` };
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
      const { sql, cart, orderId, r1 } = await firstAttempt(productId);
      await beginLegRows(sql, "demo-store", leg(cart, orderId, r1, productId), Date.now());
      await settleLegRows(sql, "demo-store", { orderId, reservationId: r1, outcome: "released" }, Date.now());
      expect(await codeOf(beginLegRows(sql, "demo-store", leg(cart, orderId, r1, productId), Date.now()))).toBe("conflict");
    });

    test("begun again after its order was canceled is refused with conflict", async () => {
      const { sql, cart, orderId, r1 } = await firstAttempt(productId);
      await beginLegRows(sql, "demo-store", leg(cart, orderId, r1, productId), Date.now());
      const c = await cancelPendingOrderRows(sql, "demo-store", { orderId, reason: "session_expired" }, Date.now());
      expect(c.status).toBe("canceled");
      expect(await codeOf(beginLegRows(sql, "demo-store", leg(cart, orderId, r1, productId), Date.now()))).toBe("conflict");
    });

    test("a stale begin of the first attempt leaves the order the second attempt paid as it is", async () => {
      const { sql, cart, orderId, r1 } = await firstAttempt(productId);
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

/** A riding write run on its own (as the cart's state statement carries it, minus the state): its SQLSTATE or null. */
async function ride(write: RidingWrite): Promise<string | null> {
  return codeOf(srv.db.sql`WITH ${write.ctes} SELECT ${write.select}`);
}
const eventsOf = async (orderId: string) => (await srv.db.sql<{ n: number }[]>`SELECT count(*)::int AS n FROM order_events WHERE order_id = ${orderId}`)[0].n;

for (const [kind, productId] of [["tracked", skillet], ["untracked", board]] as const) {
  describe(`a leg of ${kind} stock riding in the cart's state statement`, () => {
    test("goes ahead for a first attempt: the order pending, and the settle then pays it", async () => {
      const { sql, cart, orderId, r1 } = await firstAttempt(productId);
      const begin = beginLegRiding(sql, "demo-store", leg(cart, orderId, r1, productId), Date.now());
      expect(await ride(begin.write)).toBeNull();
      expect((await sql`SELECT status FROM orders WHERE id = ${orderId}`).map((r) => r.status)).toEqual(["pending"]);
      const settle = settleCapturedLegRiding(sql, "demo-store", { orderId, reservationId: r1, outcome: "captured", intentId: r1, captureRef: "cap", simulated: true, totalMinor: 100, currency: "USD" }, Date.now());
      expect(await ride(settle.write)).toBeNull();
      expect((await sql`SELECT status FROM orders WHERE id = ${orderId}`).map((r) => r.status)).toEqual(["paid"]);
    });

    test("begun again with the same reservation refuses (AF002) and writes nothing; the general path answers it", async () => {
      const { sql, cart, orderId, r1 } = await firstAttempt(productId);
      await beginLegRows(sql, "demo-store", leg(cart, orderId, r1, productId), Date.now());
      const events = await eventsOf(orderId);
      const again = beginLegRiding(sql, "demo-store", leg(cart, orderId, r1, productId), Date.now());
      expect(await ride(again.write)).toBe("AF002");
      expect(await eventsOf(orderId)).toBe(events);
      expect(await beginLegRows(sql, "demo-store", leg(cart, orderId, r1, productId), Date.now())).toEqual({ orderId, created: false });
    });

    test("a settle of an order that is no longer pending refuses (AF002) and writes nothing", async () => {
      const { sql, cart, orderId, r1 } = await firstAttempt(productId);
      await beginLegRows(sql, "demo-store", leg(cart, orderId, r1, productId), Date.now());
      const body = { orderId, reservationId: r1, outcome: "captured" as const, intentId: r1, captureRef: "cap", simulated: true, totalMinor: 100, currency: "USD" };
      expect((await settleLegRows(sql, "demo-store", body, Date.now())).status).toBe("paid");
      const events = await eventsOf(orderId);
      expect(await ride(settleCapturedLegRiding(sql, "demo-store", body, Date.now()).write)).toBe("AF002");
      expect(await eventsOf(orderId)).toBe(events);
    });
  });
}

describe("a riding hold that cannot go ahead", () => {
  test("on stock that became tracked after the catalog read refuses and writes nothing; the general path then holds it", async () => {
    const sql = srv.db.sql;
    await readCatalog(sql, [board], key.id); // seen untracked: the riding hold takes the shape that holds nothing
    const cart = await cartWith(board);
    await sql`UPDATE products SET stock_quantity = 5 WHERE id = ${board}`;
    try {
      const orderId = crypto.randomUUID();
      const r1 = `r1-${crypto.randomUUID()}`;
      expect(await ride(beginLegRiding(sql, "demo-store", leg(cart, orderId, r1, board), Date.now()).write)).toBe("AF002");
      expect(await sql`SELECT 1 FROM orders WHERE id = ${orderId}`).toHaveLength(0);
      expect(await beginLegRows(sql, "demo-store", leg(cart, orderId, r1, board), Date.now())).toEqual({ orderId, created: true });
      expect((await sql<{ r: number }[]>`SELECT reserved_quantity AS r FROM products WHERE id = ${board}`)[0].r).toBe(1);
    } finally {
      await sql`UPDATE products SET stock_quantity = NULL, reserved_quantity = 0 WHERE id = ${board}`;
    }
  });

  test("on a shortage refuses and writes nothing: no order, nothing held", async () => {
    const sql = srv.db.sql;
    const cart = await cartWith(skillet);
    const [{ s: stock, r: held }] = await sql<{ s: number; r: number }[]>`SELECT stock_quantity AS s, reserved_quantity AS r FROM products WHERE id = ${skillet}`;
    const orderId = crypto.randomUUID();
    const body = leg(cart, orderId, `r1-${crypto.randomUUID()}`, skillet);
    // two lines: the board (untracked, covered) and more skillets than can be held
    body.lines = [
      { productId: board, variantId: null, title: "board", quantity: 1, unitPriceMinor: 100 },
      { productId: skillet, variantId: null, title: "skillet", quantity: stock - held + 1, unitPriceMinor: 100 },
    ];
    expect(await ride(beginLegRiding(sql, "demo-store", body, Date.now()).write)).toBe("AF002");
    expect(await sql`SELECT 1 FROM orders WHERE id = ${orderId}`).toHaveLength(0);
    expect((await sql<{ r: number }[]>`SELECT reserved_quantity AS r FROM products WHERE id = ${skillet}`)[0].r).toBe(held);
  });
});
