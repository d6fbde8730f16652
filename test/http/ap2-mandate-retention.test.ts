/**
 * AP2 mandate bindings have a retention rule (session 11, infra/retention.ts "AP2 mandate bindings"): each binding and
 * claim records the last instant its mandate could be accepted (the first of its signed expiries), and the job deletes
 * them a grace after it. What read them must answer the same afterwards: a replay of the paid mandate gets its receipt
 * from the cart, and the expired mandate pays nothing else, binding nothing, with or without the rows.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { CompactSign } from "jose";
import { mandateHash } from "../../gateway/bridge/ap2-auth.ts";
import { runRetention, type RetentionSettings } from "../../infra/retention.ts";
import * as ap2 from "../helpers/ap2.ts";
import { paymentContents, type Ap2Agent } from "../helpers/ap2.ts";
import type { TestServer } from "../helpers/server.ts";
import { ALL_SCOPES, createKey, login } from "../helpers/agents.ts";

const DAY = 24 * 60 * 60 * 1000;
const SETTINGS: RetentionSettings = {
  RETENTION_BATCH: 100,
  RETENTION_OAUTH_GRACE_DAYS: 1,
  RETENTION_CART_GRACE_DAYS: 7,
  RETENTION_WEBHOOK_EVENT_DAYS: 30,
  RETENTION_AP2_MANDATE_GRACE_DAYS: 7,
};

let a: Ap2Agent;
let srv: TestServer;
beforeAll(async () => {
  a = await ap2.startAp2Agent();
  srv = a.srv;
}, 120_000);
afterAll(async () => {
  await srv?.stop();
});

const pay = (body: unknown, key = a.key) => ap2.agentPost(srv, key)("/ap2/payment-mandates", body);

/** The user's authorization over `parts`, with an `exp` when given (seconds). */
function sign(parts: unknown[], exp?: number): Promise<string> {
  const payload = { iat: Math.floor(Date.now() / 1000), aud: "ap2", transaction_data: parts.map(mandateHash), ...(exp === undefined ? {} : { exp }) };
  return new CompactSign(new TextEncoder().encode(JSON.stringify(payload))).setProtectedHeader({ alg: "ES256", kid: "phone", typ: "kb+jwt" }).sign(a.userKey);
}

/** A signed mandate capped at `max` whose intent expires at `expiry` (ms; none when null). */
async function mandate(max: number, expiry: number | null, exp?: number) {
  const pmc = paymentContents(max);
  const intent = expiry === null ? undefined : { merchants: [ap2.SUMMIT], intent_expiry: new Date(expiry).toISOString() };
  const user_authorization = await sign(intent ? [pmc, intent] : [pmc], exp);
  return {
    id: pmc.payment_mandate_id,
    pmc,
    body: (cartId: string) => ({ cart_id: cartId, ...(intent ? { intent_mandate: intent } : {}), payment_mandate: { payment_mandate_contents: pmc, user_authorization } }),
  };
}

const recorded = async (mandateId: string) => {
  const [b] = await srv.db.sql<{ at: string | null }[]>`SELECT mandate_expires_at::text AS at FROM bridge_sessions WHERE protocol = 'ap2' AND meta->>'payment_mandate_id' = ${mandateId}`;
  const [c] = await srv.db.sql<{ at: string | null }[]>`SELECT expires_at::text AS at FROM ap2_mandate_agents WHERE payment_mandate_id = ${mandateId}`;
  return { binding: b ? b.at : "none", claim: c ? c.at : "none" };
};
const ms = (text: string | null) => (text === null ? null : Date.parse(text.replace(" ", "T").replace(/\+00$/, "Z")));
const paidCount = async (cartId: string) => (await ap2.paidOrders(srv, cartId)).length;

describe("AP2 mandate bindings and the retention job (session 11)", () => {
  test("a binding and its claim record the mandate's first signed expiry, 'infinity' when it has none", async () => {
    const intentExpiry = Date.now() + 3_600_000;
    const exp = Math.floor(Date.now() / 1000) + 1800; // the authorization's exp comes first
    const cart1 = await ap2.cheapCart(a);
    const m1 = await mandate(cart1.total, intentExpiry, exp);
    expect((await pay(m1.body(cart1.cartId))).status).toBe(200);
    const r1 = await recorded(m1.id);
    expect(ms(r1.binding)).toBe(exp * 1000);
    expect(ms(r1.claim)).toBe(exp * 1000);

    const cart2 = await ap2.cheapCart(a);
    const m2 = await mandate(cart2.total, null);
    expect((await pay(m2.body(cart2.cartId))).status).toBe(200);
    expect(await recorded(m2.id)).toEqual({ binding: "infinity", claim: "infinity" });
  }, 60_000);

  test("the same mandate id signed again with a later expiry moves its binding's expiry later, and an earlier one never moves it back", async () => {
    const cart = await ap2.cheapCart(a);
    const pmc = paymentContents(cart.total);
    const withIntent = async (expiry: number) => {
      const intent = { merchants: [ap2.SUMMIT], intent_expiry: new Date(expiry).toISOString() };
      return { cart_id: cart.cartId, intent_mandate: intent, payment_mandate: { payment_mandate_contents: pmc, user_authorization: await sign([pmc, intent]) } };
    };
    const soon = Date.now() + 3_600_000;
    const later = Date.now() + 2 * 3_600_000;
    expect((await pay(await withIntent(soon))).status).toBe(200);
    expect(ms((await recorded(pmc.payment_mandate_id)).binding)).toBe(soon);
    // presented again for the same (now paid) cart: the receipt, and the binding now lasts as long as the later signature
    const again = await pay(await withIntent(later));
    expect(again.status).toBe(200);
    expect(ms((await recorded(pmc.payment_mandate_id)).binding)).toBe(later);
    expect(ms((await recorded(pmc.payment_mandate_id)).claim)).toBe(later);
    expect((await pay(await withIntent(soon))).status).toBe(200);
    expect(ms((await recorded(pmc.payment_mandate_id)).binding)).toBe(later);
    expect(await paidCount(cart.cartId)).toBe(1);
  }, 60_000);

  test("after its expiry and the job's deletion of its rows, a paid mandate's replay still gets its receipt, and it pays no other cart: a paid one or an unpaid one is refused for its expiry, nothing bound", async () => {
    const paid = await ap2.cheapCart(a);
    const m = await mandate(paid.total, Date.now() + 4_000);
    const first = await pay(m.body(paid.cartId));
    expect(first.status).toBe(200);
    const orderIds = first.body.data.order_ids as string[];
    expect(orderIds.length).toBe(1);
    // another cart, paid by a mandate without expiry (its binding stays for good)
    const other = await ap2.cheapCart(a);
    const forever = await mandate(other.total, null);
    expect((await pay(forever.body(other.cartId))).status).toBe(200);

    await Bun.sleep(4_500); // the intent has expired
    const replayBefore = await pay(m.body(paid.cartId));
    expect(replayBefore.status).toBe(200);
    expect(replayBefore.body.data.order_ids).toEqual(orderIds);

    const deleted = await runRetention(srv.db.sql, SETTINGS, Date.now() + 8 * DAY);
    expect(deleted.ap2_mandate_bindings).toBeGreaterThanOrEqual(1);
    expect(deleted.ap2_mandate_agents).toBeGreaterThanOrEqual(1);
    expect(await recorded(m.id)).toEqual({ binding: "none", claim: "none" });
    expect(await recorded(forever.id)).toEqual({ binding: "infinity", claim: "infinity" });

    // the replay: the same receipt, answered from the cart, and no row written again
    const replay = await pay(m.body(paid.cartId));
    expect(replay.status).toBe(200);
    expect(replay.body.data).toMatchObject({ payment_mandate_id: m.id, order_ids: orderIds, cart_id: paid.cartId });
    expect(await recorded(m.id)).toEqual({ binding: "none", claim: "none" });

    // the expired mandate for a cart another mandate paid, and for an unpaid cart: its expiry, nothing bound or paid
    for (const cartId of [other.cartId, (await ap2.cheapCart(a)).cartId]) {
      const before = await paidCount(cartId);
      const r = await pay(m.body(cartId));
      expect(r.status).toBe(403);
      expect(r.body).toMatchObject({ success: false, code: "MANDATE_LIMIT_EXCEEDED", details: { violated: "expiry" } });
      expect(await paidCount(cartId)).toBe(before);
      expect(await recorded(m.id)).toEqual({ binding: "none", claim: "none" });
    }
  }, 60_000);

  test("a later signature of a paid mandate, refused for another cart, still keeps the claim alive: once the first signature's expiry passed and the job ran, a second agent key is refused, nothing paid", async () => {
    const admin = await login(srv);
    const b = await createKey(srv, { scopes: ALL_SCOPES, token: admin, tier: "ENTERPRISE" });
    expect((await ap2.registerUserKey(srv, admin, b.id, "phone", a.userPair)).status).toBe(200);
    const first = await ap2.cheapCart(a);
    const pmc = paymentContents(first.total);
    const signed = async (cartId: string, expiry: number) => {
      const intent = { merchants: [ap2.SUMMIT], intent_expiry: new Date(expiry).toISOString() };
      return { cart_id: cartId, intent_mandate: intent, payment_mandate: { payment_mandate_contents: pmc, user_authorization: await sign([pmc, intent]) } };
    };
    expect((await pay(await signed(first.cartId, Date.now() + 4_000))).status).toBe(200);
    // the user signs the same mandate again, valid for an hour; the agent presents it for another of its carts: refused
    const inAnHour = Date.now() + 3_600_000;
    const elsewhere = await pay(await signed((await ap2.cheapCart(a)).cartId, inAnHour));
    expect(elsewhere.status).toBe(403);
    expect(elsewhere.body.details).toMatchObject({ violated: "cart", mandate_cart_id: first.cartId });
    expect(await recorded(pmc.payment_mandate_id)).toEqual({ binding: expect.any(String), claim: expect.any(String) });
    expect(ms((await recorded(pmc.payment_mandate_id)).claim)).toBe(inAnHour);

    await Bun.sleep(4_500); // the first signature has expired
    // a horizon half an hour from now: past the first signature's expiry, before the second's
    await runRetention(srv.db.sql, SETTINGS, Date.now() + 7 * DAY + 1_800_000);
    expect(ms((await recorded(pmc.payment_mandate_id)).claim)).toBe(inAnHour);

    const theirs = await ap2.cheapCart({ ...a, key: b });
    const r = await pay(await signed(theirs.cartId, inAnHour), b);
    expect(r.status).toBe(403);
    expect(r.body).toMatchObject({ code: "MANDATE_LIMIT_EXCEEDED", details: { violated: "cart", reason: "presented_by_another_agent_key" } });
    expect(await paidCount(theirs.cartId)).toBe(0);
  }, 60_000);

  test("a later signature another agent key presented moves the holder's binding too: after the first signature's expiry and the job, the holder cannot pay a second cart with it (review V1-2)", async () => {
    const admin = await login(srv);
    const b = await createKey(srv, { scopes: ALL_SCOPES, token: admin, tier: "ENTERPRISE" });
    expect((await ap2.registerUserKey(srv, admin, b.id, "phone", a.userPair)).status).toBe(200);
    const first = await ap2.cheapCart(a);
    const pmc = paymentContents(first.total);
    const signed = async (expiry: number) => {
      const intent = { merchants: [ap2.SUMMIT], intent_expiry: new Date(expiry).toISOString() };
      const user_authorization = await sign([pmc, intent]);
      return (cartId: string) => ({ cart_id: cartId, intent_mandate: intent, payment_mandate: { payment_mandate_contents: pmc, user_authorization } });
    };
    expect((await pay((await signed(Date.now() + 4_000))(first.cartId))).status).toBe(200);
    // the user signs the same mandate again, valid for an hour; the other agent key presents it first: refused
    const inAnHour = Date.now() + 3_600_000;
    const later = await signed(inAnHour);
    const byB = await pay(later((await ap2.cheapCart({ ...a, key: b })).cartId), b);
    expect(byB.status).toBe(403);
    expect(byB.body).toMatchObject({ code: "MANDATE_LIMIT_EXCEEDED", details: { violated: "cart", reason: "presented_by_another_agent_key" } });
    // both rows now last as long as the later signature, the holder's binding as well as the claim
    const rows = await recorded(pmc.payment_mandate_id);
    expect({ binding: ms(rows.binding), claim: ms(rows.claim) }).toEqual({ binding: inAnHour, claim: inAnHour });

    await Bun.sleep(4_500); // the first signature has expired
    // a horizon half an hour from now: past the first signature's expiry, before the second's
    await runRetention(srv.db.sql, SETTINGS, Date.now() + 7 * DAY + 1_800_000);
    expect(await recorded(pmc.payment_mandate_id)).toEqual({ binding: expect.any(String), claim: expect.any(String) });

    // the holder presents that same later signature (the service has seen it) for a second cart: refused, nothing paid
    const second = await ap2.cheapCart(a);
    const r = await pay(later(second.cartId));
    expect(r.status).toBe(403);
    expect(r.body).toMatchObject({ code: "MANDATE_LIMIT_EXCEEDED", details: { violated: "cart", mandate_cart_id: first.cartId } });
    expect(await paidCount(second.cartId)).toBe(0);
  }, 60_000);
});
