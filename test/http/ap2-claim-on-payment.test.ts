/**
 * Review RV-3: a verified AP2 mandate was claimed for the presenting agent key before its cart was read or its limits
 * checked, and the claim committed on its own. Any other agent key holding the user's key (another agent of the
 * user, or a legacy registration under another account) could present the mandate with any cart_id, even one that
 * 404s, and the agent the user signed for was then refused for good. The claim is now taken with the cart binding,
 * once the cart is found and inside the limits, so a presentation that pays nothing claims nothing.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import * as ap2 from "../helpers/ap2.ts";
import { DEST, paymentContents, type Ap2Agent } from "../helpers/ap2.ts";
import { ALL_SCOPES, createKey, login, type TestKey } from "../helpers/agents.ts";
import type { TestServer } from "../helpers/server.ts";

let a: Ap2Agent;
let srv: TestServer;
/** Another agent key of the same account, with the user's key registered (with its proof). */
let other: TestKey;

beforeAll(async () => {
  a = await ap2.startAp2Agent();
  srv = a.srv;
  const admin = await login(srv);
  other = await createKey(srv, { scopes: ALL_SCOPES, token: admin, tier: "ENTERPRISE" });
  expect((await ap2.registerUserKey(srv, admin, other.id, "phone", a.userPair)).status).toBe(200);
}, 120_000);
afterAll(async () => {
  await srv?.stop();
});

const pay = (k: TestKey, body: unknown) => ap2.agentPost(srv, k)("/ap2/payment-mandates", body);

/** One signed mandate capped at `max` USD, for any cart. */
async function oneMandate(max = 1_000) {
  const pmc = paymentContents(max);
  const user_authorization = await ap2.signMandate(a.userKey, [pmc]);
  return { id: pmc.payment_mandate_id, forCart: (cartId: string) => ({ cart_id: cartId, payment_mandate: { payment_mandate_contents: pmc, user_authorization } }) };
}

const claims = async (mandateId: string) =>
  (await srv.db.sql<{ n: number }[]>`SELECT count(*)::int AS n FROM ap2_mandate_agents WHERE payment_mandate_id = ${mandateId}`)[0]!.n;
const paidCount = async (cartIds: string[]) =>
  (await srv.db.sql<{ n: number }[]>`SELECT count(*)::int AS n FROM orders WHERE cart_id = ANY(${cartIds}::uuid[]) AND status = 'paid'`)[0]!.n;

describe("an AP2 mandate is claimed only when its payment goes ahead (review RV-3)", () => {
  test("presented by another agent key with a cart that does not exist (404 CART_NOT_FOUND), it claims nothing: the agent the user signed for then pays it", async () => {
    const m = await oneMandate();
    const miss = await pay(other, m.forCart(crypto.randomUUID()));
    expect(miss.status).toBe(404);
    expect(miss.body).toMatchObject({ success: false, code: "CART_NOT_FOUND" });
    expect(await claims(m.id)).toBe(0);
    const mine = await ap2.cheapCart(a);
    const paid = await pay(a.key, m.forCart(mine.cartId));
    expect(paid.status).toBe(200);
    expect(paid.body.data.order_ids).toHaveLength(1);
    // and now it is the paying key's: the other key is refused, nothing more is charged
    const theirs = await ap2.cheapCart({ ...a, key: other });
    const late = await pay(other, m.forCart(theirs.cartId));
    expect(late.status).toBe(403);
    expect(late.body).toMatchObject({ code: "MANDATE_LIMIT_EXCEEDED", details: { violated: "cart", reason: "presented_by_another_agent_key" } });
    expect(await paidCount([mine.cartId, theirs.cartId])).toBe(1);
  });

  test("presented by another agent key for a cart over its limit (403 MANDATE_LIMIT_EXCEEDED amount), it claims nothing: the agent the user signed for then pays it", async () => {
    const mine = await ap2.cheapCart(a);
    const m = await oneMandate(mine.total);
    // the other key's cart with the dearest shipping: over the mandate's amount
    const theirs = await ap2.cheapCart({ ...a, key: other });
    const dear = await ap2.agentPost(srv, other)("/checkout/preview", { cartId: theirs.cartId, shipping: { ...DEST, option_id: theirs.dear } });
    expect(dear.status).toBe(200);
    const over = await pay(other, m.forCart(theirs.cartId));
    expect(over.status).toBe(403);
    expect(over.body).toMatchObject({ success: false, code: "MANDATE_LIMIT_EXCEEDED", details: { violated: "amount" } });
    expect(await claims(m.id)).toBe(0);
    const paid = await pay(a.key, m.forCart(mine.cartId));
    expect(paid.status).toBe(200);
    expect(await paidCount([mine.cartId, theirs.cartId])).toBe(1);
  });

  test("a refused presentation leaves the mandate to the key that presented it too: it may pay a cart inside the limits", async () => {
    const m = await oneMandate();
    expect((await pay(other, m.forCart(crypto.randomUUID()))).status).toBe(404);
    const theirs = await ap2.cheapCart({ ...a, key: other });
    expect((await pay(other, m.forCart(theirs.cartId))).status).toBe(200);
    expect(await claims(m.id)).toBe(1);
    const mine = await ap2.cheapCart(a);
    expect((await pay(a.key, m.forCart(mine.cartId))).status).toBe(403);
    expect(await paidCount([mine.cartId, theirs.cartId])).toBe(1);
  });
});
