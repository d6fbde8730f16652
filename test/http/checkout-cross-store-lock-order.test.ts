/**
 * Two-store checkouts lock the stores' rows in one order (docs/checkout.md "Lock order"): a turn's holds, settles and
 * cancels run store by store in slug order, not in the order of the cart's lines. Before, a cart of [A, B] held A's
 * coupon and product, then B's, while a cart of [B, A] held them the other way round: 40P01 deadlocks and 503s (80
 * concurrent two-store checkouts: 70 deadlocks, 75 × 503; without a coupon, 65 on the products alone).
 */
import { expect, test } from "bun:test";
import { ALL_SCOPES, createKey, type TestKey } from "../helpers/agents.ts";
import { GREEN } from "../helpers/partly-paid.ts";
import { useServer } from "../helpers/server.ts";
import { DEMO, LEAF, TRACKED_BOARD } from "../helpers/two-store-session.ts";

const srv = useServer({ seed: true, config: { RATE_LIMITS_ENABLED: false } });

type Res = { status: number; body: any };
const post = (k: TestKey, path: string, body: unknown): Promise<Res> => srv.json(`/api/v1${path}`, { method: "POST", headers: k.headers, body });

test("concurrent two-store checkouts whose carts list the stores in opposite orders all pay, without a deadlock", async () => {
  await srv.db.sql`UPDATE products SET stock_quantity = 100000, reserved_quantity = 0, in_stock = true WHERE id IN (${TRACKED_BOARD}, ${GREEN})`;
  const code = `XS${crypto.randomUUID().slice(0, 8).toUpperCase()}`;
  await srv.db.sql`INSERT INTO coupons (store_slug, code, kind, value, min_spend_minor, currency, active)
    VALUES (${DEMO}, ${code}, 'percent', 10, 0, 'USD', true), (${LEAF}, ${code}, 'percent', 10, 0, 'USD', true)`;
  const board = { product_id: TRACKED_BOARD, quantity: 1 };
  const green = { product_id: GREEN, quantity: 1 };
  const answers: string[] = [];
  const ROUNDS = 2;
  const BUYERS = 20;
  for (let round = 0; round < ROUNDS; round++) {
    const buyers = await Promise.all(
      Array.from({ length: BUYERS }, async (_, i) => {
        const k = await createKey(srv, { tier: "ENTERPRISE", scopes: ALL_SCOPES });
        const c = await post(k, "/agent/cart", { items: i % 2 ? [board, green] : [green, board] });
        const cartId = c.body.data.id as string;
        expect((await post(k, "/agent/apply-coupon", { cartId, code })).body.data.applied).toBe(true);
        const p = await post(k, "/agent/checkout/preview", { cartId });
        return { k, cartId, sid: p.body.data.checkout_session_id as string };
      }),
    );
    const res = await Promise.all(
      buyers.map((b) =>
        post(b.k, "/agent/checkout", { cartId: b.cartId, checkout_session_id: b.sid, idempotency_key: crypto.randomUUID(), payment_methods: { [DEMO]: "tok_approve", [LEAF]: "tok_approve" } }),
      ),
    );
    for (const x of res) answers.push(`${x.status} ${x.body.code ?? x.body.data?.status ?? ""}`);
  }
  expect(answers.filter((a) => a !== "200 COMPLETED")).toEqual([]);
  const [u] = await srv.db.sql<{ paid: number; claims: number }[]>`
    SELECT (SELECT count(*)::int FROM orders WHERE coupon_code = ${code} AND status = 'paid') AS paid,
      (SELECT count(*)::int FROM coupon_claims WHERE code = ${code}) AS claims`;
  expect(u).toEqual({ paid: ROUNDS * BUYERS * 2, claims: ROUNDS * BUYERS * 2 });
}, 120_000);
