/**
 * Review R6 LOW-1: a valid, signed AP2 intent mandate may name any number of merchants, of any length (AP2 bounds
 * neither; only the body limit does). 339602b copied that list into the cart's `checkout` message, whose schema
 * bounds payees (100 slugs of at most 200 characters), so such a mandate was refused with 400 "invalid cart.checkout
 * message". The gateway now passes only the cart's own merchants that the mandate names, and the payment goes
 * through as before; the limits still bind the paying turn.
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

/** A one-line summit cart previewed with its cheapest option; the dearest option's id for a change. */
async function cheapCart(): Promise<{ cartId: string; total: number; totalMinor: number; dear: string }> {
  const c = await post("/cart", { items: [{ product_id: product, quantity: 1 }] });
  const cartId = c.body.data.id as string;
  const listed = await post("/checkout/preview", { cartId, shipping: DEST });
  const byCost = [...(listed.body.details.options as { option_id: string; cost: number }[])].sort((a, b) => a.cost - b.cost);
  const pv = await post("/checkout/preview", { cartId, shipping: { ...DEST, option_id: byCost[0]!.option_id } });
  expect(pv.status).toBe(200);
  const cart = (await srv.json(`/api/v1/agent/cart/${cartId}`, { headers: key.headers })).body.data;
  return { cartId, total: cart.totals.total, totalMinor: cart.totals.total_minor, dear: byCost[byCost.length - 1]!.option_id };
}

/** An AP2 payment for `cartId` capped at `max`, with a signed intent mandate naming `merchants`. */
async function mandateBody(cartId: string, max: number, merchants: string[]) {
  const pmc = {
    payment_mandate_id: `pm_${crypto.randomUUID()}`,
    payment_details_id: "d1",
    payment_details_total: { label: "Total", amount: { currency: "USD", value: max } },
    payment_response: { method_name: "CARD", details: { token: "tok_approve" } },
    merchant_agent: SUMMIT,
    timestamp: new Date().toISOString(),
  };
  const im = { natural_language_description: "running shoes", merchants, intent_expiry: new Date(Date.now() + 3_600_000).toISOString() };
  return { mandateId: pmc.payment_mandate_id, body: { cart_id: cartId, intent_mandate: im, payment_mandate: { payment_mandate_contents: pmc, user_authorization: await sign([pmc, im]) } } };
}

const paidOrders = (cartId: string) => srv.db.sql<{ total_minor: string }[]>`SELECT total_minor FROM orders WHERE cart_id = ${cartId} AND status = 'paid'`;

describe("an AP2 intent mandate's merchant list is not bounded by the cart's message (R6 LOW-1)", () => {
  const cases: [string, () => string[]][] = [
    ["101 merchants", () => [SUMMIT, ...Array.from({ length: 100 }, (_, i) => `shop-${i}`)]],
    ["a merchant name of 201 characters", () => [SUMMIT, "x".repeat(201)]],
    ["1,000 merchants of 300 characters", () => [...Array.from({ length: 999 }, (_, i) => `${i}-${"m".repeat(296)}`), SUMMIT]],
  ];
  for (const [label, merchants] of cases) {
    test(`a signed mandate naming ${label} pays the cart (200)`, async () => {
      const cart = await cheapCart();
      const { body } = await mandateBody(cart.cartId, cart.total, merchants());
      const res = await post("/ap2/payment-mandates", body);
      expect(res.status).toBe(200);
      expect(res.body.success).toBe(true);
      expect(res.body.data.payment_status.merchant_confirmation_id).toBeString();
      expect((await paidOrders(cart.cartId)).map((o) => Number(o.total_minor))).toEqual([cart.totalMinor]);
    }, 60_000);
  }

  test("a long list that does not name the cart's merchant is still 403 payee, and nothing is paid", async () => {
    const cart = await cheapCart();
    const { body } = await mandateBody(cart.cartId, cart.total, Array.from({ length: 150 }, (_, i) => `shop-${i}`));
    const res = await post("/ap2/payment-mandates", body);
    expect(res.status).toBe(403);
    expect(res.body.code).toBe("MANDATE_LIMIT_EXCEEDED");
    expect(res.body.details.violated).toBe("payee");
    expect((await paidOrders(cart.cartId)).length).toBe(0);
  }, 60_000);

  test("with a long list the paying turn still binds the amount: a dearer option picked after the check is 403 amount", async () => {
    const cart = await cheapCart();
    const { body, mandateId } = await mandateBody(cart.cartId, cart.total, [SUMMIT, ...Array.from({ length: 120 }, (_, i) => `shop-${i}`)]);
    // Holds the mandate's binding key (common.ts bindMandate) so the gateway waits there after its own check, and
    // the dearer option lands in between (as in ap2-limits-in-payment-turn.test.ts).
    const binding = `ap2_${createHash("sha256").update(JSON.stringify([key.id, mandateId])).digest("hex").slice(0, 32)}`;
    let paying!: Promise<{ status: number; body: any }>;
    await srv.db.sql
      .begin(async (tx) => {
        await tx`INSERT INTO bridge_sessions (id, protocol, agent_key_id, cart_id, meta) VALUES (${binding}, 'ap2', ${key.id}, ${crypto.randomUUID()}, '{}'::jsonb)`;
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
        expect((await post("/checkout/preview", { cartId: cart.cartId, shipping: { ...DEST, option_id: cart.dear } })).status).toBe(200);
        throw new Error("rollback");
      })
      .catch((err: unknown) => {
        if (!(err instanceof Error) || err.message !== "rollback") throw err;
      });
    const res = await paying;
    expect(res.status).toBe(403);
    expect(res.body.code).toBe("MANDATE_LIMIT_EXCEEDED");
    expect(res.body.details.violated).toBe("amount");
    expect(res.body.details.checked_at).toBe("payment");
    // the paying turn's echo names the mandate's merchants this cart pays, not the whole list
    expect(res.body.details.mandate.merchants).toEqual([SUMMIT]);
    expect((await paidOrders(cart.cartId)).length).toBe(0);
  }, 60_000);
});
