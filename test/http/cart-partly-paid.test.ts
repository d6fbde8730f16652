/**
 * Review R5-5: a two-store cart where one store was paid and the session then ended unpaid stays CHECKOUT (so the
 * paid leg carries over into the next preview), but it must not stay there for ever: edits say what happened and
 * what to do, and the cart expires like an idle OPEN cart. Through HTTP against the real server.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { ManualClock } from "../../actors/runtime/clock.ts";
import { ALL_SCOPES, createKey, type TestKey } from "../helpers/agents.ts";
import { partlyPaidThenCanceled } from "../helpers/partly-paid.ts";
import { startServer, type TestServer } from "../helpers/server.ts";

const DAY_MS = 24 * 60 * 60 * 1000;
const clock = new ManualClock(Date.now());
let srv: TestServer;
let key: TestKey;

beforeAll(async () => {
  srv = await startServer({ seed: true, boot: { clock } });
  key = await createKey(srv, { scopes: ALL_SCOPES, tier: "ENTERPRISE" });
}, 120_000);
afterAll(async () => {
  await srv?.stop();
});

describe("a multi-store cart with one store paid and its session then canceled", () => {
  test("refuses edits with 409 CART_NOT_MUTABLE reason partly_paid naming the paid merchant and the preview that pays the rest", async () => {
    const { cartId, sid } = await partlyPaidThenCanceled(srv, key);
    const cp = await srv.json("/api/v1/agent/apply-coupon", { method: "POST", headers: key.headers, body: { cartId, code: "WELCOME10" } });
    expect(cp.status).toBe(409);
    expect(cp.body.success).toBe(false);
    expect(cp.body.code).toBe("CART_NOT_MUTABLE");
    expect(cp.body.details).toMatchObject({
      reason: "partly_paid",
      status: "CHECKOUT",
      checkout_session_id: sid,
      checkout_status: "CANCELED",
      paid_merchant_slugs: ["demo-store"],
      required_step: "preview_checkout",
    });
    expect(cp.body.error).toContain("demo-store");
    expect(cp.body.error).not.toContain("in progress");
  }, 90_000);

  test("expires 24 hours after its last change: reads are 404 CART_NOT_FOUND expired, edits and previews 409 CART_NOT_MUTABLE expired", async () => {
    const { cartId, paidOrderId } = await partlyPaidThenCanceled(srv, key);
    const g = await srv.json(`/api/v1/agent/cart/${cartId}`, { headers: key.headers });
    expect(g.status).toBe(200);
    expect(g.body.data.status).toBe("CHECKOUT");
    clock.advance(DAY_MS + 1000);
    const read = await srv.json(`/api/v1/agent/cart/${cartId}`, { headers: key.headers });
    expect(read.status).toBe(404);
    expect(read.body.code).toBe("CART_NOT_FOUND");
    expect(read.body.details.reason).toBe("expired");
    const write = await srv.json("/api/v1/agent/apply-coupon", { method: "POST", headers: key.headers, body: { cartId, code: "WELCOME10" } });
    expect(write.status).toBe(409);
    expect(write.body.code).toBe("CART_NOT_MUTABLE");
    expect(write.body.details.reason).toBe("expired");
    const p = await srv.json("/api/v1/agent/checkout/preview", { method: "POST", headers: key.headers, body: { cartId } });
    expect(p.status).toBe(409);
    expect(p.body.code).toBe("CART_NOT_MUTABLE");
    expect(p.body.details.reason).toBe("expired");
    // the paid merchant's order stays paid
    const [order] = await srv.db.sql<{ status: string }[]>`SELECT status FROM orders WHERE id = ${paidOrderId}`;
    expect(order?.status).toBe("paid");
  }, 90_000);

  test("can still be paid for the remaining merchant by a new preview before it expires, without charging the paid one again", async () => {
    const { cartId, paidOrderId } = await partlyPaidThenCanceled(srv, key);
    const r = await srv.json("/api/v1/agent/checkout", {
      method: "POST",
      headers: key.headers,
      body: { cartId, idempotency_key: crypto.randomUUID(), payment_methods: { "demo-store": "tok_approve", "greenleaf-living": "tok_approve" } },
    });
    expect(r.status).toBe(200);
    expect(JSON.stringify(r.body.data)).toContain(paidOrderId); // the paid leg carried over, not charged again
    const g = await srv.json(`/api/v1/agent/cart/${cartId}`, { headers: key.headers });
    expect(g.body.data.status).toBe("COMPLETED");
  }, 90_000);
});
