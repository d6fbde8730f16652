/**
 * What an agent developer reads in the answers (review AD, a newcomer integrating as an AI-agent developer): a
 * decline names the key to pay again with (AD-3), the sandbox approval says the approval took (AD-4),
 * tok_lost_response shows the lost answer it rehearses (AD-5), an accepted bid says how it is used (AD-8), and
 * refusals name their next step (AD-9).
 */
import { beforeAll, describe, expect, test } from "bun:test";
import { ALL_SCOPES, createKey, type TestKey } from "../helpers/agents.ts";
import { approvalLink, decideAt } from "../helpers/sandbox-approval.ts";
import { useServer } from "../helpers/server.ts";
import { connect, errorOf } from "../mcp/helpers.ts";

const P = {
  skillet: "399d72f1-303c-5cf3-bc6a-5c82714b85d4", // DS-0005, 36.95, tracked stock, demo-store
  board: "5befd987-79cd-540c-8a5d-2ba5a30aed41", // DS-0011, 26.95, untracked stock, demo-store
};
const srv = useServer({ seed: true, config: { RATE_LIMITS_ENABLED: false } });
let key: TestKey;

beforeAll(async () => {
  key = await createKey(srv, { scopes: ALL_SCOPES, tier: "PRO" });
}, 120_000);

async function cart(productId: string): Promise<string> {
  const r = await srv.json("/api/v1/agent/cart", { method: "POST", headers: key.headers, body: { items: [{ product_id: productId, quantity: 1 }] } });
  expect(r.status).toBe(201);
  return r.body.data.id;
}
const checkout = (body: Record<string, unknown>) => srv.json("/api/v1/agent/checkout", { method: "POST", headers: key.headers, body });

describe("after a decline", () => {
  test("the 402 tells the agent to pay again with the SAME idempotency_key, and that call with another method completes", async () => {
    const id = await cart(P.board);
    const k = crypto.randomUUID();
    const declined = await checkout({ cartId: id, payment_method: "tok_decline", idempotency_key: k });
    expect(declined.status).toBe(402);
    expect(declined.body.code).toBe("PAYMENT_DECLINED");
    expect(declined.body.error).toContain("call again with the SAME idempotency_key and another payment_method");
    expect(declined.body.details).toMatchObject({ status: "READY_FOR_PAYMENT", idempotency_key_bound: true });
    const paid = await checkout({ cartId: id, payment_method: "tok_approve", idempotency_key: k });
    expect(paid.status).toBe(200);
    expect(paid.body.data.status).toBe("COMPLETED");
  });

  test("a failed payment (tok_fail) says the same, with idempotency_key_bound", async () => {
    const id = await cart(P.board);
    const r = await checkout({ cartId: id, payment_method: "tok_fail", idempotency_key: crypto.randomUUID() });
    expect(r.body.code).toBe("PAYMENT_FAILED_ROLLED_BACK");
    expect(r.body.error).toContain("SAME idempotency_key");
    expect(r.body.details.idempotency_key_bound).toBe(true);
  });
});

describe("the buyer's approval", () => {
  test("the JSON approval answers approved (not needs_buyer_approval), then captured once the agent's call captured it; a preview meanwhile names the way on", async () => {
    const id = await cart(P.skillet);
    const k = crypto.randomUUID();
    const waiting = await checkout({ cartId: id, payment_method: "tok_needs_approval", idempotency_key: k });
    expect(waiting.status).toBe(202);
    const link = approvalLink(waiting, "demo-store");

    const preview = await srv.json("/api/v1/agent/checkout/preview", { method: "POST", headers: key.headers, body: { cartId: id } });
    expect(preview.status).toBe(409);
    expect(preview.body.code).toBe("CHECKOUT_STATUS_INVALID");
    expect(preview.body.error).toContain("same checkout_session_id and idempotency_key");
    expect(preview.body.error).toContain("/cancel");

    const approved = await decideAt(srv, link, "approve");
    expect(approved.status).toBe(200);
    expect(approved.body.data).toMatchObject({ decision: "approve", status: "approved" });
    const done = await checkout({ cartId: id, idempotency_key: k, checkout_session_id: waiting.body.details.checkout_session_id });
    expect(done.status).toBe(200);
    expect((await decideAt(srv, link, "approve")).body.data.status).toBe("captured");
  });

  test("a refusal at the link answers not_approved", async () => {
    const id = await cart(P.skillet);
    const waiting = await checkout({ cartId: id, payment_method: "tok_needs_approval", idempotency_key: crypto.randomUUID() });
    expect(waiting.status).toBe(202);
    const refused = await decideAt(srv, approvalLink(waiting, "demo-store"), "reject");
    expect(refused.body.data).toMatchObject({ decision: "reject", status: "not_approved" });
  });
});

describe("tok_lost_response", () => {
  test("the first call's answer is lost (503 UPSTREAM_UNAVAILABLE, SETTLEMENT_UNKNOWN); the same call again returns the order, with one capture", async () => {
    const id = await cart(P.board);
    const k = crypto.randomUUID();
    const lost = await checkout({ cartId: id, payment_method: "tok_lost_response", idempotency_key: k });
    expect(lost.status).toBe(503);
    expect(lost.body.code).toBe("UPSTREAM_UNAVAILABLE");
    expect(lost.body.details.status).toBe("SETTLEMENT_UNKNOWN");
    const again = await checkout({ cartId: id, payment_method: "tok_lost_response", idempotency_key: k, checkout_session_id: lost.body.details.checkout_session_id });
    // The session's 5 s reconcile timer may have settled it first: then the repeat carries the receipt.
    const orderId = again.status === 200 ? again.body.data.order_id : again.body.details.order_id;
    expect(again.status === 200 ? again.body.data.status : again.body.details.status).toBe("COMPLETED");
    const rows = await srv.db.sql<{ state: string }[]>`SELECT state FROM sandbox_ledger_intents WHERE intent_id = (SELECT intent_id FROM orders WHERE id = ${orderId})`;
    expect(rows.map((x) => x.state)).toEqual(["captured"]);
  });
});

describe("captured money of another amount", () => {
  test("PAYMENT_AMOUNT_MISMATCH says money was captured, not to retry, and who reconciles", async () => {
    const id = await cart(P.board);
    const r = await checkout({ cartId: id, payment_method: "tok_amount_mismatch", idempotency_key: crypto.randomUUID() });
    expect(r.status).toBe(409);
    expect(r.body.code).toBe("PAYMENT_AMOUNT_MISMATCH");
    expect(r.body.error).toContain("Money was captured");
    expect(r.body.error).toContain("do not retry");
    expect(r.body.error).toContain("merchant");
  });
});

describe("negotiation", () => {
  test("an accepted bid's message says the key's cart with the product gets the price until expiresAt, for every unit of its line", async () => {
    const r = await srv.json("/api/v1/agent/negotiate", {
      method: "POST",
      headers: key.headers,
      body: { productId: P.board, merchantSlug: "demo-store", bidPrice: 26.95, currency: "USD" },
    });
    expect(r.status).toBe(200);
    expect(r.body.data.status).toBe("accepted");
    expect(r.body.data.message).toContain("Until expiresAt");
    expect(r.body.data.message).toContain("every unit of its line");
  });
});

describe("MCP refusals name the next step", () => {
  test("negotiate_price with a STARTER key is feature_not_in_tier naming the tier to mint; a SANDBOX key's create_cart names a STARTER key", async () => {
    const starter = await createKey(srv, { scopes: ALL_SCOPES, tier: "STARTER" });
    const sandbox = await createKey(srv, { scopes: ALL_SCOPES, tier: "SANDBOX" });
    const a = await connect(srv, { headers: starter.headers });
    const b = await connect(srv, { headers: sandbox.headers });
    try {
      const tier = errorOf(await a.call("negotiate_price", { product_id: P.board, bid_price: 20, currency: "USD" }));
      expect(tier.code).toBe("feature_not_in_tier");
      expect(tier.message).toContain('POST /api/v1/agent-keys {"tier":"PRO"}');
      const sb = errorOf(await b.call("create_cart", { items: [{ product_id: P.board, quantity: 1 }] }));
      expect(sb.code).toBe("sandbox_not_allowed");
      expect(sb.message).toContain("STARTER key or higher");
      // the negotiate tool's description names the answer's real field
      const tools = await a.client.listTools();
      const negotiate = tools.tools.find((t) => t.name === "negotiate_price");
      expect(negotiate?.description).toContain("counterPrice");
      expect(negotiate?.description).not.toContain("counter_price");
    } finally {
      await a.close();
      await b.close();
    }
  });
});
