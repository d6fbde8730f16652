/**
 * The lock order of coupon and product rows, made deterministic (review RN HIGH-1; docs/checkout.md "Lock order").
 * A trigger makes every give-back of held stock sleep 1.5 s while it holds the product row. A release or cancel of
 * one order starts first; 300 ms later a hold of another order of the same product with the same coupon starts. The
 * hold takes the coupon row, then the product row. Had the release taken the product first, it would then wait for
 * the coupon the hold has while the hold waits for its product: a 40P01 deadlock. With one order (coupon first) the
 * hold just waits for the release to commit, and both go through. Covered: the `released` settle (a declined leg),
 * `cancelPendingOrderRows` (session cancel, expiry) and the store's own cancel of a pending order (`cancelOrder`).
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { beginLegRows, cancelPendingOrderRows, settleLegRows, storeCommerce, type BeginLegBody } from "../../actors/store/commerce.ts";
import { connect } from "../../infra/db.ts";
import { startServer, type TestServer } from "../helpers/server.ts";
import { DEMO, TRACKED_BOARD } from "../helpers/two-store-session.ts";

let srv: TestServer;

beforeAll(async () => {
  srv = await startServer({ seed: true, config: { RATE_LIMITS_ENABLED: false } });
  await srv.db.sql`UPDATE products SET stock_quantity = 1000, reserved_quantity = 0, in_stock = true, active = true WHERE id = ${TRACKED_BOARD}`;
  await srv.db.sql.unsafe(`CREATE FUNCTION slow_give_back() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN
      IF NEW.reserved_quantity < OLD.reserved_quantity THEN PERFORM pg_sleep(1.5); END IF; RETURN NEW; END $$`);
}, 120_000);
afterAll(async () => {
  await srv?.stop();
}, 30_000);

function legOf(code: string): BeginLegBody {
  const orderId = crypto.randomUUID();
  return {
    orderId,
    checkoutSessionId: `cs_${orderId.replace(/-/g, "")}_1`,
    cartId: crypto.randomUUID(),
    reservationId: crypto.randomUUID(),
    agentKeyId: crypto.randomUUID(),
    currency: "USD",
    paymentRail: "card",
    paymentMethod: "MOCK",
    couponCode: code,
    subtotalMinor: 10000,
    discountMinor: 1000,
    shippingMinor: 0,
    taxMinor: 0,
    totalMinor: 9000,
    lines: [{ productId: TRACKED_BOARD, variantId: null, title: "Board", quantity: 1, unitPriceMinor: 10000 }],
  } as BeginLegBody;
}

type Outcome = { ok: true } | { ok: false; code: string | undefined; message: string };
const outcome = (p: Promise<unknown>): Promise<Outcome> => p.then(() => ({ ok: true }) as const, (e) => ({ ok: false, code: e?.code, message: String(e?.message ?? e) }));

/**
 * Holds order 1 (coupon use claimed, one unit held), then runs `giveBack(order 1)` with the slow trigger on and, while
 * it sleeps holding the product row, the hold of order 2 on its own connection. Both outcomes, and the coupon's count.
 */
async function race(giveBack: (first: BeginLegBody, sql: ReturnType<typeof connect>) => Promise<unknown>) {
  const code = `LO${crypto.randomUUID().slice(0, 8).toUpperCase()}`;
  await srv.db.sql`INSERT INTO coupons (store_slug, code, kind, value, min_spend_minor, currency, active) VALUES (${DEMO}, ${code}, 'percent', 10, 0, 'USD', true)`;
  const first = legOf(code);
  await srv.db.sql.begin((tx) => beginLegRows(tx as never, DEMO, first, Date.now()));
  const holder = connect(srv.db.url, 1);
  const releaser = connect(srv.db.url, 1);
  await srv.db.sql.unsafe(`CREATE TRIGGER slow_give_back BEFORE UPDATE ON products FOR EACH ROW EXECUTE FUNCTION slow_give_back()`);
  try {
    const released = outcome(giveBack(first, releaser));
    await Bun.sleep(300);
    const held = outcome(holder.begin((tx) => beginLegRows(tx as never, DEMO, legOf(code), Date.now())));
    const result = { release: await released, hold: await held };
    const [u] = await srv.db.sql<{ used: number; claims: number }[]>`
      SELECT used_count AS used, (SELECT count(*)::int FROM coupon_claims WHERE code = ${code}) AS claims FROM coupons WHERE store_slug = ${DEMO} AND code = ${code}`;
    return { ...result, coupon: u };
  } finally {
    await srv.db.sql.unsafe(`DROP TRIGGER slow_give_back ON products`);
    await holder.end();
    await releaser.end();
  }
}

describe("a release racing a hold of the same product and coupon", () => {
  test("a declined leg's release and another order's hold both go through", async () => {
    const r = await race((first, sql) =>
      sql.begin((tx) => settleLegRows(tx as never, DEMO, { orderId: first.orderId, reservationId: first.reservationId, outcome: "released", note: "declined" }, Date.now())),
    );
    expect(r).toEqual({ release: { ok: true }, hold: { ok: true }, coupon: { used: 1, claims: 1 } });
  }, 30_000);

  test("an unpaid order canceled with its session and another order's hold both go through", async () => {
    const r = await race((first, sql) => sql.begin((tx) => cancelPendingOrderRows(tx as never, DEMO, { orderId: first.orderId, reason: "checkout_expired" }, Date.now())));
    expect(r).toEqual({ release: { ok: true }, hold: { ok: true }, coupon: { used: 1, claims: 1 } });
  }, 30_000);

  test("the store's own cancel of a pending order and another order's hold both go through", async () => {
    const r = await race((first) => srv.running.services.actors.ask(storeCommerce, DEMO, "cancelOrder", { orderId: first.orderId, reason: "test" }));
    expect(r).toEqual({ release: { ok: true }, hold: { ok: true }, coupon: { used: 1, claims: 1 } });
  }, 30_000);
});
