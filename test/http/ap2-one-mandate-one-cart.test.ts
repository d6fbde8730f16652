/**
 * Audit V1: one signed AP2 payment mandate paid one cart per agent key that had the signer's key registered. The
 * mandate → cart binding was per agent key, so the same mandate presented by a second agent key of the account (or
 * by another account's key with the user's public key registered) paid another cart on the user's payment token.
 * A mandate (its id within its signer's key) now belongs to the first agent key that presents it; every other key
 * is 403 MANDATE_LIMIT_EXCEEDED (`violated: cart`) and nothing is charged.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { CompactSign, generateKeyPair } from "jose";
import { mandateHash } from "../../gateway/bridge/ap2-auth.ts";
import * as ap2 from "../helpers/ap2.ts";
import { paymentContents, type Ap2Agent } from "../helpers/ap2.ts";
import { ALL_SCOPES, createKey, login, merchantLogin, type TestKey } from "../helpers/agents.ts";
import type { TestServer } from "../helpers/server.ts";

let a: Ap2Agent;
let srv: TestServer;
let admin: string;
/** A second agent key of the same account, with the same user key registered (with its proof). */
let b: TestKey;
/** Another account's agent key. */
let stranger: TestKey;

beforeAll(async () => {
  a = await ap2.startAp2Agent();
  srv = a.srv;
  admin = await login(srv);
  b = await createKey(srv, { scopes: ALL_SCOPES, token: admin, tier: "ENTERPRISE" });
  expect((await ap2.registerUserKey(srv, admin, b.id, "phone", a.userPair)).status).toBe(200);
  stranger = await createKey(srv, { scopes: ALL_SCOPES, token: await login(srv, merchantLogin("greenleaf-living")) });
}, 120_000);
afterAll(async () => {
  await srv?.stop();
});

/** A cart of `k`'s like the helper's cheap cart (one summit line, cheapest shipping). */
const cartOf = (k: TestKey) => ap2.cheapCart({ ...a, key: k });

/** One signed mandate (payment contents + user authorization by the user's "phone" key) for any cart. */
async function oneMandate() {
  const pmc = paymentContents(1_000);
  const user_authorization = await ap2.signMandate(a.userKey, [pmc]);
  return (cartId: string) => ({ cart_id: cartId, payment_mandate: { payment_mandate_contents: pmc, user_authorization } });
}

const pay = (k: TestKey, body: unknown) => ap2.agentPost(srv, k)("/ap2/payment-mandates", body);

async function paidCount(cartIds: string[]): Promise<number> {
  const [r] = await srv.db.sql<{ n: number }[]>`SELECT count(*)::int AS n FROM orders WHERE cart_id = ANY(${cartIds}::uuid[]) AND status = 'paid'`;
  return r!.n;
}

function expectRefusedForCart(r: { status: number; body: any }, otherCart: string) {
  expect(r.status).toBe(403);
  expect(r.body).toMatchObject({ success: false, code: "MANDATE_LIMIT_EXCEEDED", details: { violated: "cart", reason: "presented_by_another_agent_key" } });
  // The refusal names neither the key that holds the mandate nor the cart it paid.
  expect(JSON.stringify(r.body)).not.toContain(otherCart);
  expect(JSON.stringify(r.body)).not.toContain(a.key.id);
}

describe("one AP2 mandate pays one cart, whichever agent key presents it (audit V1)", () => {
  test("a second agent key of the account presenting the paid mandate for its own cart is 403 MANDATE_LIMIT_EXCEEDED and charges nothing", async () => {
    const forCart = await oneMandate();
    const first = await cartOf(a.key);
    const paid = await pay(a.key, forCart(first.cartId));
    expect(paid.status).toBe(200);
    expect(paid.body.data.order_ids).toHaveLength(1);
    const second = await cartOf(b);
    expectRefusedForCart(await pay(b, forCart(second.cartId)), first.cartId);
    // the first key is still held to the first cart, and its replay answers that cart's order
    const third = await cartOf(a.key);
    const again = await pay(a.key, forCart(third.cartId));
    expect(again.status).toBe(403);
    expect(again.body).toMatchObject({ code: "MANDATE_LIMIT_EXCEEDED", details: { violated: "cart" } });
    const replay = await pay(a.key, forCart(first.cartId));
    expect(replay.status).toBe(200);
    expect(replay.body.data.order_ids).toEqual(paid.body.data.order_ids);
    expect(await paidCount([first.cartId, second.cartId, third.cartId])).toBe(1);
  });

  test("the same mandate presented at once by two agent keys for two carts pays exactly one of them", async () => {
    for (let round = 0; round < 3; round++) {
      const forCart = await oneMandate();
      const [ca, cb] = await Promise.all([cartOf(a.key), cartOf(b)]);
      const answers = await Promise.all([pay(a.key, forCart(ca.cartId)), pay(b, forCart(cb.cartId))]);
      expect(answers.map((r) => r.status).sort()).toEqual([200, 403]);
      expect(await paidCount([ca.cartId, cb.cartId])).toBe(1);
    }
  });

  test("another account's key holding the user's key from before proofs (unproven) cannot spend a mandate another key presented", async () => {
    // A registration as it was before 0077: the user's public key alone, no proof, under another account.
    await srv.db.sql`INSERT INTO ap2_user_keys (agent_key_id, kid, alg, jwk)
      SELECT ${stranger.id}, 'phone', alg, jwk FROM ap2_user_keys WHERE agent_key_id = ${a.key.id} AND kid = 'phone'`;
    try {
      const forCart = await oneMandate();
      const first = await cartOf(a.key);
      expect((await pay(a.key, forCart(first.cartId))).status).toBe(200);
      const theirs = await ap2.cheapCart({ ...a, key: stranger });
      expectRefusedForCart(await pay(stranger, forCart(theirs.cartId)), first.cartId);
      expect(await paidCount([first.cartId, theirs.cartId])).toBe(1);
    } finally {
      await srv.db.sql`DELETE FROM ap2_user_keys WHERE agent_key_id = ${stranger.id}`;
    }
  });

  test("another user's mandate with an equal mandate id is its own: it pays its own cart", async () => {
    const forCart = await oneMandate();
    const first = await cartOf(a.key);
    expect((await pay(a.key, forCart(first.cartId))).status).toBe(200);
    // the stranger's own device key, with its proof, signing a mandate that reuses the id
    const own = await generateKeyPair("ES256", { extractable: true });
    const strangerBearer = await login(srv, merchantLogin("greenleaf-living"));
    expect((await ap2.registerUserKey(srv, strangerBearer, stranger.id, "own", own)).status).toBe(200);
    const pmc = forCart(first.cartId).payment_mandate.payment_mandate_contents;
    const payload = new TextEncoder().encode(JSON.stringify({ iat: Math.floor(Date.now() / 1000), transaction_data: [mandateHash(pmc)] }));
    const jws = await new CompactSign(payload).setProtectedHeader({ alg: "ES256", kid: "own", typ: "kb+jwt" }).sign(own.privateKey);
    const theirs = await ap2.cheapCart({ ...a, key: stranger });
    const r = await pay(stranger, { cart_id: theirs.cartId, payment_mandate: { payment_mandate_contents: pmc, user_authorization: jws } });
    expect(r.status).toBe(200);
    expect(await paidCount([theirs.cartId])).toBe(1);
  });
});
