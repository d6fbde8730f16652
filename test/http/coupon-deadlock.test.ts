/**
 * Checkouts that share a coupon never deadlock (review RN HIGH-1; docs/checkout.md "Lock order"). A leg's hold takes
 * the coupon row, then the product rows; the release of a declined leg (and the cancel of an unpaid order) once read
 * its given-back products in the statement's result, which made them lock the products before the coupon: a decline
 * racing an approval of the same product and coupon was a 40P01 deadlock, and the buyer got a 503 (120 concurrent
 * checkouts: 56 deadlocks, 77 × 503). Every statement now takes the coupon row before the product rows.
 */
import { expect, test } from "bun:test";
import { ALL_SCOPES, createKey, type TestKey } from "../helpers/agents.ts";
import { useServer } from "../helpers/server.ts";

const srv = useServer({ seed: true, config: { RATE_LIMITS_ENABLED: false }, admin: true });

type Res = { status: number; body: any };
const post = (k: TestKey, path: string, body: unknown): Promise<Res> => srv.json(`/api/v1${path}`, { method: "POST", headers: k.headers, body });
const deadlocks = async () => (await srv.db.sql<{ n: number }[]>`SELECT deadlocks::int AS n FROM pg_stat_database WHERE datname = current_database()`)[0]!.n;

test("concurrent approved and declined checkouts of one tracked product with one coupon all answer, without a deadlock", async () => {
  const r = await srv.json(`/api/v1/merchant/stores/demo-store/catalog`, {
    method: "PUT",
    headers: { authorization: `Bearer ${srv.admin}` },
    body: { products: [{ externalId: `dl-${crypto.randomUUID()}`, title: "Deadlock Board", category: "Kitchen", price: 100, currency: "USD", stockQuantity: 100000, inStock: true }] },
  });
  expect(r.status).toBe(200);
  const productId = r.body.data.upserted[0].id as string;
  const code = `DL${crypto.randomUUID().slice(0, 8).toUpperCase()}`;
  await srv.db.sql`INSERT INTO coupons (store_slug, code, kind, value, min_spend_minor, currency, active) VALUES ('demo-store', ${code}, 'percent', 10, 0, 'USD', true)`;
  const before = await deadlocks();
  const answers: string[] = [];
  const ROUNDS = 3;
  const BUYERS = 30;
  for (let round = 0; round < ROUNDS; round++) {
    const buyers = await Promise.all(
      Array.from({ length: BUYERS }, async () => {
        const k = await createKey(srv, { tier: "ENTERPRISE", scopes: ALL_SCOPES });
        const c = await post(k, "/agent/cart", { items: [{ product_id: productId, quantity: 1 }] });
        const cartId = c.body.data.id as string;
        const a = await post(k, "/agent/apply-coupon", { cartId, code });
        expect(a.body.data.applied).toBe(true);
        const p = await post(k, "/agent/checkout/preview", { cartId });
        return { k, cartId, sid: p.body.data.checkout_session_id as string };
      }),
    );
    // Half approve (the hold: coupon, then product), half decline (the hold, then its release) at the same moment.
    const res = await Promise.all(
      buyers.map((b, i) =>
        post(b.k, "/agent/checkout", { cartId: b.cartId, checkout_session_id: b.sid, idempotency_key: crypto.randomUUID(), payment_method: i % 2 ? "tok_decline" : "tok_approve" }),
      ),
    );
    for (const x of res) answers.push(`${x.status} ${x.body.code ?? x.body.data?.status ?? ""}`);
  }
  const tally = (s: string) => answers.filter((a) => a.startsWith(s)).length;
  expect({ paid: tally("200 "), declined: tally("402 "), other: answers.filter((a) => !a.startsWith("200 ") && !a.startsWith("402 ")) }).toEqual({
    paid: (ROUNDS * BUYERS) / 2,
    declined: (ROUNDS * BUYERS) / 2,
    other: [],
  });
  expect((await deadlocks()) - before).toBe(0);
  // Every paid order holds its use, every declined one gave its back.
  const [u] = await srv.db.sql<{ used: number; claims: number; paid: number }[]>`
    SELECT used_count AS used, (SELECT count(*)::int FROM coupon_claims WHERE code = ${code}) AS claims,
      (SELECT count(*)::int FROM orders WHERE coupon_code = ${code} AND status = 'paid') AS paid
    FROM coupons WHERE store_slug = 'demo-store' AND code = ${code}`;
  expect(u).toEqual({ used: (ROUNDS * BUYERS) / 2, claims: (ROUNDS * BUYERS) / 2, paid: (ROUNDS * BUYERS) / 2 });
}, 120_000);
