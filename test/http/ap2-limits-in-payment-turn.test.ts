/**
 * Review R4-5: an AP2 mandate's limits bind the total the cart charges, not the cart the gateway read one turn
 * earlier. The shipping pick is made to land between the gateway's check and the payment deterministically: the
 * test holds an uncommitted row on the mandate's binding key (bridge_sessions), so the gateway's bindMandate waits
 * there after checkMandate passed, and the agent picks the dearer option meanwhile.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { createHash } from "node:crypto";
import { CompactSign, exportJWK, generateKeyPair, type CryptoKey } from "jose";
import { mandateHash } from "../../gateway/bridge/ap2-auth.ts";
import { ALL_SCOPES, createKey, login, type TestKey } from "../helpers/agents.ts";
import { startServer, type TestServer } from "../helpers/server.ts";

const SUMMIT = "summit-sports-co";
const DEST = { country_code: "US", postal_code: "94107" };
let srv: TestServer;
let key: TestKey;
let userKey: CryptoKey;
let product: string;

beforeAll(async () => {
  srv = await startServer({ seed: true, config: { RATE_LIMITS_ENABLED: false } });
  const admin = await login(srv);
  key = await createKey(srv, { scopes: ALL_SCOPES, token: admin, tier: "ENTERPRISE" });
  const pair = await generateKeyPair("ES256", { extractable: true });
  userKey = pair.privateKey;
  await srv.json(`/api/v1/agent-keys/${key.id}/ap2-user-keys/phone`, { method: "PUT", headers: { authorization: `Bearer ${admin}` }, body: { jwk: await exportJWK(pair.publicKey) } });
  const [p] = await srv.db.sql<{ id: string }[]>`
    SELECT id FROM products WHERE store_slug = ${SUMMIT} AND active AND in_stock AND stock_quantity IS NULL ORDER BY id LIMIT 1`;
  product = p!.id;
}, 120_000);
afterAll(async () => {
  await srv?.stop();
});

const post = (path: string, body: unknown) => srv.json(`/api/v1/agent${path}`, { method: "POST", headers: key.headers, body });

async function sign(parts: unknown[]): Promise<string> {
  const payload = new TextEncoder().encode(JSON.stringify({ iat: Math.floor(Date.now() / 1000), aud: "ap2", transaction_data: parts.map(mandateHash) }));
  return new CompactSign(payload).setProtectedHeader({ alg: "ES256", kid: "phone", typ: "kb+jwt" }).sign(userKey);
}

/** A one-line summit cart previewed with its cheapest option; the dearest option's id for the change. */
async function cheapCart(): Promise<{ cartId: string; total: number; totalMinor: number; dear: string; line: { title: string; line_total: number } }> {
  const c = await post("/cart", { items: [{ product_id: product, quantity: 1 }] });
  const cartId = c.body.data.id as string;
  const listed = await post("/checkout/preview", { cartId, shipping: DEST });
  const opts = listed.body.details.options as { option_id: string; cost: number }[];
  const byCost = [...opts].sort((a, b) => a.cost - b.cost);
  const pv = await post("/checkout/preview", { cartId, shipping: { ...DEST, option_id: byCost[0]!.option_id } });
  expect(pv.status).toBe(200);
  const cart = (await srv.json(`/api/v1/agent/cart/${cartId}`, { headers: key.headers })).body.data;
  return { cartId, total: cart.totals.total, totalMinor: cart.totals.total_minor, dear: byCost[byCost.length - 1]!.option_id, line: cart.items[0] };
}

function paymentContents(max: number) {
  return {
    payment_mandate_id: `pm_${crypto.randomUUID()}`,
    payment_details_id: "d1",
    payment_details_total: { label: "Total", amount: { currency: "USD", value: max } },
    payment_response: { method_name: "CARD", details: { token: "tok_approve" } },
    merchant_agent: SUMMIT,
    timestamp: new Date().toISOString(),
  };
}

/** The binding key common.ts bindMandate inserts for this agent key and mandate id. */
const bindingId = (mandateId: string) => `ap2_${createHash("sha256").update(JSON.stringify([key.id, mandateId])).digest("hex").slice(0, 32)}`;

/**
 * Sends the AP2 payment while a transaction of the test holds the mandate's binding key: the gateway has checked the
 * mandate and waits in bindMandate; `meanwhile` runs then, the hold is released and the payment goes on.
 */
async function payWithChangeInBetween(body: unknown, mandateId: string, meanwhile: () => Promise<void>) {
  let paying!: Promise<{ status: number; body: any }>;
  await srv.db.sql
    .begin(async (tx) => {
      await tx`INSERT INTO bridge_sessions (id, protocol, agent_key_id, cart_id, meta)
        VALUES (${bindingId(mandateId)}, 'ap2', ${key.id}, ${crypto.randomUUID()}, '{}'::jsonb)`;
      paying = post("/ap2/payment-mandates", body);
      const deadline = Date.now() + 20_000;
      for (;;) {
        const [w] = await srv.db.sql<{ n: number }[]>`
          SELECT count(*)::int AS n FROM pg_stat_activity
          WHERE wait_event_type = 'Lock' AND query LIKE '%INSERT INTO bridge_sessions%' AND pid <> pg_backend_pid()`;
        if (w!.n > 0) break;
        if (Date.now() > deadline) throw new Error("the gateway never reached bindMandate");
        await Bun.sleep(10);
      }
      await meanwhile();
      throw new Error("rollback");
    })
    .catch((err: unknown) => {
      if (!(err instanceof Error) || err.message !== "rollback") throw err;
    });
  return paying;
}

const paidOrders = (cartId: string) => srv.db.sql<{ total_minor: string }[]>`SELECT total_minor FROM orders WHERE cart_id = ${cartId} AND status = 'paid'`;

describe("AP2 limits are checked on the total the payment charges (R4-5)", () => {
  test("a dearer shipping option picked after the gateway's check is refused with 403 MANDATE_LIMIT_EXCEEDED amount, and nothing is charged", async () => {
    const cart = await cheapCart();
    const pmc = paymentContents(cart.total);
    const body = { cart_id: cart.cartId, payment_mandate: { payment_mandate_contents: pmc, user_authorization: await sign([pmc]) } };
    let dearTotalMinor = 0;
    const res = await payWithChangeInBetween(body, pmc.payment_mandate_id, async () => {
      const pv = await post("/checkout/preview", { cartId: cart.cartId, shipping: { ...DEST, option_id: cart.dear } });
      expect(pv.status).toBe(200);
      dearTotalMinor = pv.body.data.totals.total_minor;
    });
    expect(dearTotalMinor).toBeGreaterThan(cart.totalMinor);
    expect(res.status).toBe(403);
    expect(res.body.code).toBe("MANDATE_LIMIT_EXCEEDED");
    expect(res.body.details.violated).toBe("amount");
    expect(res.body.details.cart_total_minor).toBe(dearTotalMinor);
    expect(res.body.details.mandate.max_amount_minor).toBe(cart.totalMinor);
    expect(res.body.details.mandate.payment_mandate_id).toBe(pmc.payment_mandate_id);
    expect((await paidOrders(cart.cartId)).length).toBe(0);
    const [held] = await srv.db.sql<{ n: number }[]>`SELECT count(*)::int AS n FROM orders WHERE cart_id = ${cart.cartId}`;
    expect(held!.n).toBe(0); // refused before the hold: no pending order either
  }, 60_000);

  test("a signed cart mandate's exact total binds the payment: a dearer option picked after the check is 403 cart_contents", async () => {
    const cart = await cheapCart();
    const cm = {
      contents: {
        id: `cart_${cart.cartId}`,
        cart_expiry: new Date(Date.now() + 3_600_000).toISOString(),
        merchant_name: SUMMIT,
        payment_request: {
          details: {
            display_items: [{ label: cart.line.title, amount: { currency: "USD", value: cart.line.line_total } }],
            total: { label: "Total", amount: { currency: "USD", value: cart.total } },
          },
        },
      },
    };
    const pmc = paymentContents(500); // the payment's own cap would allow the dearer total: the cart mandate must not
    const body = { cart_id: cart.cartId, cart_mandate: cm, payment_mandate: { payment_mandate_contents: pmc, user_authorization: await sign([pmc, cm]) } };
    const res = await payWithChangeInBetween(body, pmc.payment_mandate_id, async () => {
      expect((await post("/checkout/preview", { cartId: cart.cartId, shipping: { ...DEST, option_id: cart.dear } })).status).toBe(200);
    });
    expect(res.status).toBe(403);
    expect(res.body.code).toBe("MANDATE_LIMIT_EXCEEDED");
    expect(res.body.details.violated).toBe("cart_contents");
    expect(res.body.details.cart_mandate).toEqual({ id: `cart_${cart.cartId}`, currency: "USD", total_minor: cart.totalMinor });
    expect(res.body.details.cart_total_minor).toBeGreaterThan(cart.totalMinor);
    expect((await paidOrders(cart.cartId)).length).toBe(0);
  }, 60_000);

  test("with no change in between the same mandate pays the total it was checked on", async () => {
    const cart = await cheapCart();
    const pmc = paymentContents(cart.total);
    const body = { cart_id: cart.cartId, payment_mandate: { payment_mandate_contents: pmc, user_authorization: await sign([pmc]) } };
    const res = await payWithChangeInBetween(body, pmc.payment_mandate_id, async () => {});
    expect(res.status).toBe(200);
    expect((await paidOrders(cart.cartId)).map((o) => Number(o.total_minor))).toEqual([cart.totalMinor]);
  }, 60_000);

  test("racing payments and shipping changes never charge more than the mandate (the reviewer's race, 12 tries)", async () => {
    let over = 0;
    let refused = 0;
    for (let i = 0; i < 12; i++) {
      const cart = await cheapCart();
      const pmc = paymentContents(cart.total);
      const body = { cart_id: cart.cartId, payment_mandate: { payment_mandate_contents: pmc, user_authorization: await sign([pmc]) } };
      const [a] = await Promise.all([
        post("/ap2/payment-mandates", body),
        Bun.sleep(i % 6).then(() => post("/checkout/preview", { cartId: cart.cartId, shipping: { ...DEST, option_id: cart.dear } })),
      ]);
      if (a.status === 403) {
        expect(a.body.code).toBe("MANDATE_LIMIT_EXCEEDED");
        refused++;
      } else expect(a.status).toBe(200);
      for (const o of await paidOrders(cart.cartId)) if (Number(o.total_minor) > cart.totalMinor) over++;
    }
    console.log(`R4-5 race: ${refused} of 12 refused, ${over} paid over the mandate`);
    expect(over).toBe(0);
  }, 240_000);
});
