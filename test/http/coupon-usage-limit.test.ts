/**
 * A coupon's usage limit holds under concurrency (audit Y2; docs/checkout.md "Coupons and totals"). The order's
 * payment leg claims one use of its coupon in the leg's hold statement (conditional on `used_count < usage_limit`),
 * before any money moves; a leg that finds no use left is refused (409 STATE_EXECUTION_BLOCKED, `coupon_exhausted`)
 * with nothing charged, and the next preview shows the coupon exhausted and the total without it. The use goes back
 * when the hold is released (decline, failure, an unpaid order canceled) and a retry never claims twice. Before, the
 * use was counted at capture with no condition: four concurrent checkouts used a one-use coupon four times.
 */
import { describe, expect, test } from "bun:test";
import { ALL_SCOPES, createKey, type TestKey } from "../helpers/agents.ts";
import { GREEN } from "../helpers/partly-paid.ts";
import { useServer } from "../helpers/server.ts";
import { DEMO, LEAF, TRACKED_BOARD } from "../helpers/two-store-session.ts";

const srv = useServer({ seed: true, config: { RATE_LIMITS_ENABLED: false }, admin: true });

type Res = { status: number; body: any };
const STORE = "demo-store";
const newKey = () => createKey(srv, { tier: "ENTERPRISE", scopes: ALL_SCOPES });
const post = (k: TestKey, path: string, body: unknown): Promise<Res> => srv.json(`/api/v1${path}`, { method: "POST", headers: k.headers, body });

/** A new demo-store product at $100 (`stock` null: untracked, so the leg holds nothing and takes the light hold). */
async function newProduct(stock: number | null): Promise<string> {
  const r = await srv.json(`/api/v1/merchant/stores/${STORE}/catalog`, {
    method: "PUT",
    headers: { authorization: `Bearer ${srv.admin}` },
    body: { products: [{ externalId: `y2-${crypto.randomUUID()}`, title: "Y2 Kettle", category: "Kitchen", price: 100, currency: "USD", stockQuantity: stock, inStock: true }] },
  });
  expect(r.status).toBe(200);
  return r.body.data.upserted[0].id as string;
}

/** A 10 % coupon of demo-store with this usage limit; its code. */
async function newCoupon(limit: number): Promise<string> {
  const code = `Y2${crypto.randomUUID().slice(0, 8).toUpperCase()}`;
  await srv.db.sql`INSERT INTO coupons (store_slug, code, kind, value, min_spend_minor, currency, usage_limit, active) VALUES (${STORE}, ${code}, 'percent', 10, 0, 'USD', ${limit}, true)`;
  return code;
}

const usage = async (code: string) => {
  const [c] = await srv.db.sql<{ used: number; claims: number }[]>`
    SELECT used_count AS used, (SELECT count(*)::int FROM coupon_claims WHERE store_slug = ${STORE} AND code = ${code}) AS claims
    FROM coupons WHERE store_slug = ${STORE} AND code = ${code}`;
  return c!;
};

interface Buyer {
  k: TestKey;
  cartId: string;
  sid: string;
  total: number;
}

/** A buyer with a cart of one $100 product, the coupon applied and a preview: the session and its discounted total. */
async function buyerWithCoupon(productId: string, code: string): Promise<Buyer> {
  const k = await newKey();
  const c = await post(k, "/agent/cart", { items: [{ product_id: productId, quantity: 1 }] });
  expect(c.status).toBe(201);
  const cartId = c.body.data.id as string;
  const applied = await post(k, "/agent/apply-coupon", { cartId, code });
  expect(applied.body.data).toMatchObject({ applied: true, discount_minor: 1000 });
  const p = await post(k, "/agent/checkout/preview", { cartId });
  expect(p.status).toBe(200);
  expect(p.body.data.totals.discount_minor).toBe(1000);
  return { k, cartId, sid: p.body.data.checkout_session_id, total: p.body.data.totals.total_minor };
}

const complete = (b: Buyer, paymentMethod: string, idempotencyKey: string = crypto.randomUUID()) =>
  post(b.k, "/agent/checkout", { cartId: b.cartId, checkout_session_id: b.sid, idempotency_key: idempotencyKey, payment_method: paymentMethod });

const ordersOf = (cartId: string) =>
  srv.db.sql<{ status: string; discount_minor: number; coupon_code: string | null; capture_ref: string | null }[]>`
    SELECT status, discount_minor::int, coupon_code, capture_ref FROM orders WHERE cart_id = ${cartId}`;

describe("concurrent checkouts with a limited coupon", () => {
  for (const [stock, path] of [
    [null, "untracked stock: the light hold riding in the cart's state statement"],
    [1000, "tracked stock: the full hold riding in the cart's state statement"],
  ] as const) {
    test(`six buyers racing for a coupon with two uses left make exactly two discounted orders and the other four are refused with nothing charged (${path})`, async () => {
      const productId = await newProduct(stock);
      const code = await newCoupon(2);
      const buyers = await Promise.all(Array.from({ length: 6 }, () => buyerWithCoupon(productId, code)));
      const results = await Promise.all(buyers.map((b) => complete(b, "tok_approve")));

      const won = results.filter((r) => r.status === 200);
      const lost = results.filter((r) => r.status !== 200);
      expect(won.map((r) => r.body.data.status)).toEqual(["COMPLETED", "COMPLETED"]);
      expect(lost.map((r) => r.status)).toEqual([409, 409, 409, 409]);
      for (const r of lost) {
        expect(r.body.code).toBe("STATE_EXECUTION_BLOCKED");
        // refused by the hold's claim, or (a buyer whose completion started once both uses were taken) by the state
        // check re-pricing without the exhausted coupon: either way nothing is charged (a suite under load hit both)
        const reason = r.body.details.reasons[0];
        if (reason.code === "coupon_exhausted") expect(r.body.details.reasons).toEqual([{ code: "coupon_exhausted", store_id: STORE, coupon_code: code }]);
        else expect(reason).toMatchObject({ code: "price_beyond_cut", previewed_total_minor: 9000, current_total_minor: 10000 });
      }
      expect(await usage(code)).toEqual({ used: 2, claims: 2 });
      const orders = await Promise.all(buyers.map((b) => ordersOf(b.cartId)));
      const paidOrders = orders.filter((_, i) => results[i]!.status === 200).flat();
      expect(paidOrders.map((o) => [o.status, o.discount_minor, o.coupon_code])).toEqual([
        ["paid", 1000, code],
        ["paid", 1000, code],
      ]);
      // A refused leg wrote no order: nothing was sent to the processor.
      expect(orders.filter((_, i) => results[i]!.status !== 200).flat()).toEqual([]);

      // A refused buyer previews again: the coupon shows exhausted and the total is the list price, which it can pay.
      const loser = buyers[results.findIndex((r) => r.status === 409)]!;
      const again = await post(loser.k, "/agent/checkout/preview", { cartId: loser.cartId });
      expect(again.status).toBe(200);
      expect(again.body.data.totals.discount_minor).toBe(0);
      expect(again.body.data.coupon).toMatchObject({ code, applied: false, reason: "exhausted" });
      const paid = await complete({ ...loser, sid: again.body.data.checkout_session_id }, "tok_approve");
      expect(paid.status).toBe(200);
      expect(paid.body.data.total_minor).toBe(10000);
      expect(await usage(code)).toEqual({ used: 2, claims: 2 });
    }, 120_000);
  }
});

describe("concurrent two-store checkouts with a limited coupon at one store", () => {
  test("three buyers racing for a greenleaf coupon with one use make one order of it; the others are refused naming that store and their demo-store orders are canceled unpaid (the transactional hold)", async () => {
    await srv.db.sql`UPDATE products SET stock_quantity = 1000, reserved_quantity = 0, in_stock = true WHERE id = ${TRACKED_BOARD}`;
    const code = `Y2M${crypto.randomUUID().slice(0, 8).toUpperCase()}`;
    await srv.db.sql`INSERT INTO coupons (store_slug, code, kind, value, min_spend_minor, currency, usage_limit, active) VALUES (${LEAF}, ${code}, 'percent', 10, 0, 'USD', 1, true)`;
    const buyers = await Promise.all(
      Array.from({ length: 3 }, async () => {
        const k = await newKey();
        const c = await post(k, "/agent/cart", { items: [{ product_id: TRACKED_BOARD, quantity: 1 }, { product_id: GREEN, quantity: 1 }] });
        const cartId = c.body.data.id as string;
        expect((await post(k, "/agent/apply-coupon", { cartId, code })).body.data.applied).toBe(true);
        const p = await post(k, "/agent/checkout/preview", { cartId });
        expect(p.status).toBe(200);
        return { k, cartId, sid: p.body.data.checkout_session_id as string };
      }),
    );
    const results = await Promise.all(
      buyers.map((b) => post(b.k, "/agent/checkout", { cartId: b.cartId, checkout_session_id: b.sid, idempotency_key: crypto.randomUUID(), payment_methods: { [DEMO]: "tok_approve", [LEAF]: "tok_approve" } })),
    );
    expect(results.map((r) => r.status).sort()).toEqual([200, 409, 409]);
    for (const r of results.filter((x) => x.status === 409)) {
      expect(r.body.code).toBe("STATE_EXECUTION_BLOCKED");
      expect(r.body.details.reasons).toEqual([{ code: "coupon_exhausted", store_id: LEAF, coupon_code: code }]);
    }
    const [c] = await srv.db.sql<{ used: number; claims: number }[]>`
      SELECT used_count AS used, (SELECT count(*)::int FROM coupon_claims WHERE store_slug = ${LEAF} AND code = ${code}) AS claims FROM coupons WHERE store_slug = ${LEAF} AND code = ${code}`;
    expect(c).toEqual({ used: 1, claims: 1 });
    const lost = (await Promise.all(buyers.filter((_, i) => results[i]!.status === 409).map((b) => ordersOf(b.cartId)))).flat();
    expect(lost.every((o) => o.status === "canceled" && o.capture_ref === null)).toBe(true);
    const held = await srv.db.sql`SELECT count(*)::int AS n FROM stock_reservations WHERE status = 'held'`;
    expect(held[0]!.n).toBe(0);
  }, 120_000);
});

describe("a use given back", () => {
  for (const token of ["tok_decline", "tok_fail"]) {
    test(`a ${token} attempt gives its use back: another buyer then pays with the coupon, and the first buyer's next preview shows it exhausted`, async () => {
      const productId = await newProduct(null);
      const code = await newCoupon(1);
      const first = await buyerWithCoupon(productId, code);
      const second = await buyerWithCoupon(productId, code);
      const refused = await complete(first, token);
      expect(refused.status).toBe(402);
      expect(await usage(code)).toEqual({ used: 0, claims: 0 });

      const paid = await complete(second, "tok_approve");
      expect(paid.status).toBe(200);
      expect(paid.body.data.total_minor).toBe(second.total);
      expect(await usage(code)).toEqual({ used: 1, claims: 1 });

      const again = await post(first.k, "/agent/checkout/preview", { cartId: first.cartId });
      expect(again.body.data.totals.discount_minor).toBe(0);
      expect(again.body.data.coupon).toMatchObject({ code, applied: false, reason: "exhausted" });
    }, 60_000);
  }

  test("a declined attempt retried with the same key claims the use again once, and the paid order keeps it", async () => {
    const productId = await newProduct(1000);
    const code = await newCoupon(1);
    const b = await buyerWithCoupon(productId, code);
    const ik = crypto.randomUUID();
    expect((await complete(b, "tok_decline", ik)).status).toBe(402);
    expect(await usage(code)).toEqual({ used: 0, claims: 0 });
    const paid = await complete(b, "tok_approve", ik);
    expect(paid.status).toBe(200);
    expect(paid.body.data.total_minor).toBe(b.total);
    expect(await usage(code)).toEqual({ used: 1, claims: 1 });
    // The same call repeated is answered from the session: nothing claimed again.
    const repeat = await complete(b, "tok_approve", ik);
    expect(repeat.body.code).toBe("CHECKOUT_ALREADY_IN_PROGRESS");
    expect(await usage(code)).toEqual({ used: 1, claims: 1 });
  }, 60_000);

  test("a checkout waiting for the buyer's approval holds the use; canceling the session gives it back", async () => {
    const productId = await newProduct(null);
    const code = await newCoupon(1);
    const b = await buyerWithCoupon(productId, code);
    const waiting = await complete(b, "tok_needs_approval");
    expect(waiting.status).toBe(202);
    expect(await usage(code)).toEqual({ used: 1, claims: 1 });
    const other = await newKey();
    const c = await post(other, "/agent/cart", { items: [{ product_id: productId, quantity: 1 }] });
    const meanwhile = await post(other, "/agent/apply-coupon", { cartId: c.body.data.id, code });
    expect(meanwhile.body.data).toMatchObject({ applied: false, reason: "exhausted" });

    const canceled = await post(b.k, `/agent/checkout/${b.sid}/cancel`, {});
    expect(canceled.status).toBe(200);
    expect((await ordersOf(b.cartId)).map((o) => o.status)).toEqual(["canceled"]);
    expect(await usage(code)).toEqual({ used: 0, claims: 0 });
  }, 60_000);
});

describe("the leg's statements", () => {
  const legOf = (orderId: string, reservationId: string, productId: string, keyId: string, couponCode: string | null) => ({
    orderId, checkoutSessionId: `cs_${orderId}`, cartId: crypto.randomUUID(), reservationId, agentKeyId: keyId, currency: "USD",
    paymentRail: "card", paymentMethod: "MOCK", couponCode, subtotalMinor: 10000, discountMinor: couponCode ? 1000 : 0, shippingMinor: 0, taxMinor: 0,
    totalMinor: couponCode ? 9000 : 10000, lines: [{ productId, variantId: null, title: "kettle", quantity: 1, unitPriceMinor: 10000 }],
  });

  test("a replayed hold, a retry reusing the order and a light hold that falls through to the full one each claim the use once", async () => {
    const { readCatalog, beginLegRows, settleLegRows } = await import("../../actors/store/commerce.ts");
    const k = await newKey();
    const productId = await newProduct(null);
    const code = await newCoupon(5);
    const orderId = crypto.randomUUID();
    const first = crypto.randomUUID();
    const begin = (reservationId: string) => srv.db.sql.begin((tx) => beginLegRows(tx as never, STORE, legOf(orderId, reservationId, productId, k.id, code), Date.now()));

    expect(await begin(first)).toEqual({ orderId, created: true });
    expect(await begin(first)).toEqual({ orderId, created: false }); // the same reservation again
    expect(await usage(code)).toEqual({ used: 1, claims: 1 });

    await srv.db.sql.begin((tx) => settleLegRows(tx as never, STORE, { orderId, reservationId: first, outcome: "released", note: "declined" }, Date.now()));
    await srv.db.sql.begin((tx) => settleLegRows(tx as never, STORE, { orderId, reservationId: first, outcome: "released", note: "declined" }, Date.now()));
    expect(await usage(code)).toEqual({ used: 0, claims: 0 });

    // The process still thinks the product untracked (light hold), but the merchant started tracking it: the light
    // statement claims, finds the product tracked, and the full hold reuses the claim of this order.
    await readCatalog(srv.db.sql, [productId], k.id);
    await srv.db.sql`UPDATE products SET stock_quantity = 10 WHERE id = ${productId}`;
    const second = crypto.randomUUID();
    expect(await begin(second)).toEqual({ orderId, created: false });
    expect(await usage(code)).toEqual({ used: 1, claims: 1 });

    const paid = await srv.db.sql.begin((tx) =>
      settleLegRows(tx as never, STORE, { orderId, reservationId: second, outcome: "captured", intentId: second, captureRef: "cap_y2", simulated: true, totalMinor: 9000, currency: "USD" }, Date.now()),
    );
    expect(paid.status).toBe("paid");
    // A late release of the earlier attempt gives nothing back: the paid order keeps its use.
    await srv.db.sql.begin((tx) => settleLegRows(tx as never, STORE, { orderId, reservationId: first, outcome: "released", note: "late" }, Date.now()));
    expect(await usage(code)).toEqual({ used: 1, claims: 1 });
  }, 60_000);

  test("a hold refused for stock gives back the use its statement claimed", async () => {
    const { beginLegRows } = await import("../../actors/store/commerce.ts");
    const k = await newKey();
    const productId = await newProduct(0);
    const code = await newCoupon(1);
    const orderId = crypto.randomUUID();
    const refused = await srv.db.sql
      .begin((tx) => beginLegRows(tx as never, STORE, legOf(orderId, crypto.randomUUID(), productId, k.id, code), Date.now()))
      .catch((e) => e);
    expect(refused.code).toBe("STATE_EXECUTION_BLOCKED");
    expect(refused.details.reasons[0].code).toBe("out_of_stock");
    expect(await usage(code)).toEqual({ used: 0, claims: 0 });
  }, 60_000);
});

describe("sequential checkouts", () => {
  test("a checkout previewed before another buyer paid with the last use is refused at complete as before, and the coupon is used once", async () => {
    const productId = await newProduct(null);
    const code = await newCoupon(1);
    const first = await buyerWithCoupon(productId, code);
    const second = await buyerWithCoupon(productId, code);
    expect((await complete(first, "tok_approve")).status).toBe(200);
    const late = await complete(second, "tok_approve");
    expect(late.status).toBe(409);
    expect(["STATE_EXECUTION_BLOCKED", "STATE_RECONFIRMATION_REQUIRED"]).toContain(late.body.code);
    expect(await usage(code)).toEqual({ used: 1, claims: 1 });
    expect((await ordersOf(first.cartId)).map((o) => [o.status, o.discount_minor])).toEqual([["paid", 1000]]);
  }, 60_000);

  test("an unlimited coupon is claimed by every order that uses it", async () => {
    const productId = await newProduct(null);
    const code = `Y2U${crypto.randomUUID().slice(0, 8).toUpperCase()}`;
    await srv.db.sql`INSERT INTO coupons (store_slug, code, kind, value, min_spend_minor, currency, active) VALUES (${STORE}, ${code}, 'percent', 10, 0, 'USD', true)`;
    const buyers = await Promise.all(Array.from({ length: 3 }, () => buyerWithCoupon(productId, code)));
    const results = await Promise.all(buyers.map((b) => complete(b, "tok_approve")));
    expect(results.map((r) => r.status)).toEqual([200, 200, 200]);
    expect(await usage(code)).toEqual({ used: 3, claims: 3 });
  }, 60_000);
});
