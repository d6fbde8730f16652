/**
 * Model finding M-2 (session 12, test/helpers/checkout-model.ts negotiated prices): a cart prices a negotiated line
 * with the key's latest accepted, unused offer for the product; its payment leg claimed instead the latest offer *at
 * that price* no other order held. With two accepted offers at the same price (the key bid the same amount twice),
 * a second cart priced with the offer another order held took the older one, even after the older had expired, and
 * paid the negotiated price with it; the docs say the second checkout is refused (negotiated_price_used) and an
 * expired offer prices nothing. The leg now claims exactly the offer the cart priced with
 * (actors/store/commerce.ts offerClaim).
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { ManualClock } from "../../actors/runtime/clock.ts";
import { ALL_SCOPES, createKey } from "../helpers/agents.ts";
import { startServer, type TestServer } from "../helpers/server.ts";

const MINUTE_MS = 60_000;
const clock = new ManualClock(Date.now());
let srv: TestServer;

beforeAll(async () => {
  srv = await startServer({ seed: true, boot: { clock }, config: { RATE_LIMITS_ENABLED: false } });
}, 120_000);
afterAll(async () => {
  await srv?.stop();
});

describe("the offer a negotiated line pays with (model finding M-2)", () => {
  test("with the latest offer held by another order, a second cart is refused negotiated_price_used and an older, expired offer of the same price pays nothing", async () => {
    const k = await createKey(srv, { tier: "ENTERPRISE", scopes: ALL_SCOPES });
    const post = (path: string, body: unknown) => srv.json(`/api/v1${path}`, { method: "POST", headers: k.headers, body });
    const [p] = await srv.db.sql<{ id: string; price_minor: string }[]>`
      SELECT id, price_minor FROM products WHERE store_slug = 'demo-store' AND active AND in_stock AND stock_quantity IS NULL
         AND jsonb_array_length(COALESCE(variants, '[]'::jsonb)) = 0 ORDER BY external_id LIMIT 1`;
    const bid = Math.ceil(Number(p!.price_minor) * 0.98);
    // two accepted offers at the same price, 10 minutes apart
    const older = await post("/agent/negotiate", { productId: p!.id, merchantSlug: "demo-store", bidPrice: bid / 100, currency: "USD" });
    clock.advance(10 * MINUTE_MS);
    const newer = await post("/agent/negotiate", { productId: p!.id, merchantSlug: "demo-store", bidPrice: bid / 100, currency: "USD" });
    expect([older.body.data?.status, newer.body.data?.status]).toEqual(["accepted", "accepted"]);

    // cart A's order holds the newer offer while the buyer approves
    const a = await post("/agent/cart", { items: [{ product_id: p!.id, quantity: 1 }] });
    const ra = await post("/agent/checkout", { cartId: a.body.data.id, idempotency_key: crypto.randomUUID(), payment_method: "tok_needs_approval" });
    expect({ status: ra.status, code: ra.body.code }).toEqual({ status: 202, code: "user_action_required" });

    // the older offer expires (15 min); the newer still stands, held by A's order
    clock.advance(6 * MINUTE_MS);
    const b = await post("/agent/cart", { items: [{ product_id: p!.id, quantity: 1 }] });
    const pv = await post("/agent/checkout/preview", { cartId: b.body.data.id });
    expect({ status: pv.status, subtotal: pv.body.data?.totals?.subtotal_minor }).toEqual({ status: 200, subtotal: bid });
    const rb = await post("/agent/checkout", { cartId: b.body.data.id, checkout_session_id: pv.body.data.checkout_session_id, idempotency_key: crypto.randomUUID(), payment_method: "MOCK" });
    expect({ status: rb.status, success: rb.body.success, code: rb.body.code, reasons: rb.body.details?.reasons?.map((r: { code: string; product_id: string }) => [r.code, r.product_id]) }).toEqual({
      status: 409,
      success: false,
      code: "STATE_EXECUTION_BLOCKED",
      reasons: [["negotiated_price_used", p!.id]],
    });
    // nothing was charged, and the older offer is neither claimed nor used
    const offers = await srv.db.sql<{ id: string; order_id: string | null; used: boolean }[]>`
      SELECT id, order_id::text, used_at IS NOT NULL AS used FROM negotiation_offers WHERE agent_key_id = ${k.id} AND status = 'accepted' ORDER BY created_at`;
    expect(offers.map((o) => ({ claimed: o.order_id !== null, used: o.used }))).toEqual([
      { claimed: false, used: false },
      { claimed: true, used: false },
    ]);
    const paid = await srv.db.sql<{ n: number }[]>`SELECT count(*)::int AS n FROM orders WHERE cart_id = ${b.body.data.id} AND paid_at IS NOT NULL`;
    expect(paid[0]!.n).toBe(0);
  }, 60_000);
});
