/**
 * Shared set-up of the AP2 mandate tests: a seeded server, an ENTERPRISE agent key with a registered user key
 * ("phone") that signs mandates, a summit product that never runs out, and the one-line cart previewed with its
 * cheapest shipping option that the limit tests pay.
 */
import { expect } from "bun:test";
import { createHash } from "node:crypto";
import { CompactSign, exportJWK, generateKeyPair, type CryptoKey } from "jose";
import { mandateHash } from "../../gateway/bridge/ap2-auth.ts";
import { KEY_PROOF_TYP } from "../../gateway/bridge/ap2-keys.ts";
import { ALL_SCOPES, createKey, login, type TestKey } from "./agents.ts";
import { startServer, type TestServer } from "./server.ts";

export const SUMMIT = "summit-sports-co";
export const DEST = { country_code: "US", postal_code: "94107" };

export interface Ap2Agent {
  srv: TestServer;
  key: TestKey;
  /** The private half of the key registered as the agent key's AP2 user key "phone". */
  userKey: CryptoKey;
  /** Both halves of that key (to register it on another agent key). */
  userPair: { publicKey: CryptoKey; privateKey: CryptoKey };
  /** A summit product with unlimited stock. */
  product: string;
}

/** The first active summit product with no stock count (so repeated carts never run it out). */
export async function summitProduct(srv: TestServer): Promise<string> {
  const [p] = await srv.db.sql<{ id: string }[]>`
    SELECT id FROM products WHERE store_slug = ${SUMMIT} AND active AND in_stock AND stock_quantity IS NULL ORDER BY id LIMIT 1`;
  return p!.id;
}

/**
 * Registers `pair`'s public key as the agent key's AP2 user key `kid`, with the proof of possession the server asks
 * for: a PUT without proof answers 400 with a nonce, and the proof is a JWS by the key over {nonce, agent_key_id, kid}.
 * Returns the final answer (200 when registered).
 */
export async function registerUserKey(srv: TestServer, bearer: string, agentKeyId: string, kid: string, pair: { publicKey: CryptoKey; privateKey: CryptoKey }, alg = "ES256") {
  const url = `/api/v1/agent-keys/${agentKeyId}/ap2-user-keys/${kid}`;
  const headers = { authorization: `Bearer ${bearer}` };
  const jwk = await exportJWK(pair.publicKey);
  const challenge = await srv.json(url, { method: "PUT", headers, body: { jwk } });
  if (challenge.status !== 400 || typeof challenge.body.details?.nonce !== "string") return challenge;
  return srv.json(url, { method: "PUT", headers, body: { jwk, proof: await keyProof(pair.privateKey, challenge.body.details.proof_payload, alg) } });
}

/** The proof of possession: a compact JWS by the user key over the payload the server's challenge names. */
export function keyProof(privateKey: CryptoKey, payload: unknown, alg = "ES256"): Promise<string> {
  return new CompactSign(new TextEncoder().encode(JSON.stringify(payload))).setProtectedHeader({ alg, typ: KEY_PROOF_TYP }).sign(privateKey);
}

/** Starts a seeded server (rate limits off) with an agent key whose AP2 user key "phone" is registered. */
export async function startAp2Agent(): Promise<Ap2Agent> {
  const srv = await startServer({ seed: true, config: { RATE_LIMITS_ENABLED: false } });
  const admin = await login(srv);
  const key = await createKey(srv, { scopes: ALL_SCOPES, token: admin, tier: "ENTERPRISE" });
  const pair = await generateKeyPair("ES256", { extractable: true });
  const registered = await registerUserKey(srv, admin, key.id, "phone", pair);
  expect(registered.status).toBe(200);
  return { srv, key, userKey: pair.privateKey, userPair: pair, product: await summitProduct(srv) };
}

/** POST to the agent API with the key's headers. */
export const agentPost = (srv: TestServer, key: TestKey) => (path: string, body: unknown) =>
  srv.json(`/api/v1/agent${path}`, { method: "POST", headers: key.headers, body });

/** The user's authorization (a kb+jwt) over the hashes of the mandate parts. */
export async function signMandate(userKey: CryptoKey, parts: unknown[]): Promise<string> {
  const payload = new TextEncoder().encode(JSON.stringify({ iat: Math.floor(Date.now() / 1000), aud: "ap2", transaction_data: parts.map(mandateHash) }));
  return new CompactSign(payload).setProtectedHeader({ alg: "ES256", kid: "phone", typ: "kb+jwt" }).sign(userKey);
}

/**
 * A mandate for up to 100 USD at demo-store signed by `userKey` (kid "phone"), paying with `token`: returns the body of
 * POST /ap2/payment-mandates for a cart (`cart_id` is the request's, not signed).
 */
export async function demoStoreMandate(userKey: CryptoKey, mandateId: string, token = "tok_approve") {
  const contents = {
    payment_mandate_id: mandateId,
    payment_details_id: "details_1",
    payment_details_total: { label: "Total", amount: { currency: "USD", value: 100 } },
    payment_response: { request_id: "req_1", method_name: "CARD", details: { token } },
    merchant_agent: "demo-store",
    timestamp: new Date().toISOString(),
  };
  const intent = { merchants: ["demo-store"], intent_expiry: new Date(Date.now() + 3_600_000).toISOString() };
  const jws = await signMandate(userKey, [contents, intent]);
  return (cartId: string) => ({ cart_id: cartId, intent_mandate: intent, payment_mandate: { payment_mandate_contents: contents, user_authorization: jws } });
}

export interface CheapCart {
  cartId: string;
  total: number;
  totalMinor: number;
  /** The dearest shipping option's id, for a change after the check. */
  dear: string;
  line: { title: string; line_total: number };
}

/** A one-line summit cart previewed with its cheapest option. */
export async function cheapCart(a: Ap2Agent): Promise<CheapCart> {
  const post = agentPost(a.srv, a.key);
  const c = await post("/cart", { items: [{ product_id: a.product, quantity: 1 }] });
  const cartId = c.body.data.id as string;
  const listed = await post("/checkout/preview", { cartId, shipping: DEST });
  const byCost = [...(listed.body.details.options as { option_id: string; cost: number }[])].sort((x, y) => x.cost - y.cost);
  const pv = await post("/checkout/preview", { cartId, shipping: { ...DEST, option_id: byCost[0]!.option_id } });
  expect(pv.status).toBe(200);
  const cart = (await a.srv.json(`/api/v1/agent/cart/${cartId}`, { headers: a.key.headers })).body.data;
  return { cartId, total: cart.totals.total, totalMinor: cart.totals.total_minor, dear: byCost[byCost.length - 1]!.option_id, line: cart.items[0] };
}

/** AP2 payment mandate contents capped at `max` USD, paid by a card token that is approved. */
export function paymentContents(max: number) {
  return {
    payment_mandate_id: `pm_${crypto.randomUUID()}`,
    payment_details_id: "d1",
    payment_details_total: { label: "Total", amount: { currency: "USD", value: max } },
    payment_response: { method_name: "CARD", details: { token: "tok_approve" } },
    merchant_agent: SUMMIT,
    timestamp: new Date().toISOString(),
  };
}

/**
 * Sends the AP2 payment while a transaction of the test holds the mandate's binding key (the id common.ts
 * bindMandate inserts): the gateway has checked the mandate and waits in bindMandate; `meanwhile` runs then, the
 * hold is released and the payment goes on.
 */
export async function payWithChangeInBetween(a: Ap2Agent, body: unknown, mandateId: string, meanwhile: () => Promise<void>) {
  const binding = `ap2_${createHash("sha256").update(JSON.stringify([a.key.id, mandateId])).digest("hex").slice(0, 32)}`;
  let paying!: Promise<{ status: number; body: any }>;
  await a.srv.db.sql
    .begin(async (tx) => {
      await tx`INSERT INTO bridge_sessions (id, protocol, agent_key_id, cart_id, meta)
        VALUES (${binding}, 'ap2', ${a.key.id}, ${crypto.randomUUID()}, '{}'::jsonb)`;
      paying = agentPost(a.srv, a.key)("/ap2/payment-mandates", body);
      const deadline = Date.now() + 20_000;
      for (;;) {
        const [w] = await a.srv.db.sql<{ n: number }[]>`
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

/** The cart's paid orders. */
export const paidOrders = (srv: TestServer, cartId: string) =>
  srv.db.sql<{ total_minor: string }[]>`SELECT total_minor FROM orders WHERE cart_id = ${cartId} AND status = 'paid'`;
