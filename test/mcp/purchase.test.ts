import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import type { TestKey } from "../helpers/agents.ts";
import type { TestServer } from "../helpers/server.ts";
import { accept, connect, decline, DEMO, DEMO_PRODUCT, errorOf, rpc, startBuyingAgent, structured, type Connected } from "./helpers.ts";

let srv: TestServer;
let key: TestKey;
let agent: Connected;

beforeAll(async () => {
  ({ srv, key, agent } = await startBuyingAgent());
}, 60_000);
afterAll(async () => {
  await agent?.close();
  await srv?.stop();
});

async function cartAndPreview(c: Connected, quantity = 1) {
  const cart = structured(await c.call("create_cart", { items: [{ product_id: DEMO_PRODUCT, quantity }] }));
  const preview = structured(await c.call("preview_checkout", { cart_id: cart.cart_id ?? cart.id }));
  return { cart, preview };
}

describe("a full purchase on the demo store", () => {
  test("search, details, cart, preview and a MOCK payment end in an order the agent can read", async () => {
    const found = structured(await agent.call("search_products", { query: "headphones", max_price: 500, limit: 5 }));
    expect(found.products.length).toBeGreaterThan(0);
    expect(found.products.every((p: any) => p.merchant.slug === DEMO)).toBe(true);
    const detail = structured(await agent.call("get_product_details", { product_id: DEMO_PRODUCT }));
    expect(detail.id).toBe(DEMO_PRODUCT);

    const before = agent.elicitations.length;
    const { cart, preview } = await cartAndPreview(agent);
    expect(cart.items[0].product_id).toBe(DEMO_PRODUCT);
    expect(preview.checkout_session_id).toMatch(/^cs_/);
    expect(preview.state_hash).toMatch(/^[0-9a-f]{64}$/);

    const done = await agent.call("complete_checkout", {
      checkout_session_id: preview.checkout_session_id,
      idempotency_key: crypto.randomUUID(),
      payment_method: "MOCK",
    });
    expect(done.isError).toBeFalsy();
    const order = structured(done);
    expect(order.status).toBe("COMPLETED");
    expect(order.order_id).toBeString();

    // create_cart and complete_checkout each asked the human, with the amount and its currency
    const asked = agent.elicitations.slice(before);
    expect(asked.length).toBe(2);
    expect(asked[1]!.message).toContain("USD");
    expect(asked[1]!.mode).toBe("form");

    const orders = structured(await agent.call("onx_get_orders", {}));
    expect(orders.orders.map((o: any) => o.order_id)).toContain(order.order_id);
    const one = structured(await agent.call("get_order", { order_id: order.order_id }));
    expect(one.status).toBe(order.orders[0].status);
  }, 60_000);

  test("the same idempotency key again returns CHECKOUT_ALREADY_IN_PROGRESS with the existing order", async () => {
    const { preview } = await cartAndPreview(agent);
    const args = { checkout_session_id: preview.checkout_session_id, idempotency_key: crypto.randomUUID(), payment_method: "MOCK" };
    const first = structured(await agent.call("complete_checkout", args));
    const again = errorOf(await agent.call("complete_checkout", args));
    expect(again.code).toBe("CHECKOUT_ALREADY_IN_PROGRESS");
    expect(again.retryable).toBe(true);
    expect(again.remedy).toBe("retry_same_call");
    expect(JSON.stringify(again.details)).toContain(first.order_id);
  }, 60_000);

  test("a different idempotency key on a bound session is IDEMPOTENCY_KEY_CONFLICT", async () => {
    const { preview } = await cartAndPreview(agent);
    await agent.call("complete_checkout", { checkout_session_id: preview.checkout_session_id, idempotency_key: crypto.randomUUID(), payment_method: "MOCK" });
    const e = errorOf(await agent.call("complete_checkout", { checkout_session_id: preview.checkout_session_id, idempotency_key: crypto.randomUUID(), payment_method: "MOCK" }));
    expect(e.code).toBe("IDEMPOTENCY_KEY_CONFLICT");
    expect(e.remedy).toBe("stop");
  }, 60_000);

  test("a paid order cannot be cancelled by the agent", async () => {
    const { preview } = await cartAndPreview(agent);
    const order = structured(await agent.call("complete_checkout", { checkout_session_id: preview.checkout_session_id, idempotency_key: crypto.randomUUID(), payment_method: "MOCK" }));
    const e = errorOf(await agent.call("cancel_order", { order_id: order.order_id }));
    expect(e.code).toBe("ORDER_NOT_CANCELLABLE");
    expect(e.details.status).toBeString();
    expect(e.remedy).toBe("human_decides");
  }, 60_000);
});

describe("human confirmation", () => {
  test("a human who declines stops the write and nothing is created", async () => {
    const c = await connect(srv, { headers: key.headers, elicit: decline });
    try {
      const e = errorOf(await c.call("create_cart", { items: [{ product_id: DEMO_PRODUCT, quantity: 1 }] }));
      expect(e.code).toBe("HUMAN_CONFIRMATION_DECLINED");
      expect(e.remedy).toBe("stop");
      expect(e.retryable).toBe(false);
      expect(e.reference).toBe(`${srv.url}/docs/errors#HUMAN_CONFIRMATION_DECLINED`);
      expect(c.elicitations.length).toBe(1);
    } finally {
      await c.close();
    }
  }, 30_000);

  test("a client without the elicitation capability gets HUMAN_CONFIRMATION_REQUIRED naming the approver", async () => {
    const c = await connect(srv, { headers: key.headers });
    try {
      const e = errorOf(await c.call("create_cart", { items: [{ product_id: DEMO_PRODUCT, quantity: 1 }] }));
      expect(e.code).toBe("HUMAN_CONFIRMATION_REQUIRED");
      expect(e.details.approver).toBeString();
      expect(e.remedy).toBe("human_decides");
    } finally {
      await c.close();
    }
  }, 30_000);

  test("a sessionless JSON-RPC call to a write tool cannot ask anyone", async () => {
    const r = await rpc(srv, `/${DEMO}/mcp`, "tools/call", { name: "create_cart", arguments: { items: [{ product_id: DEMO_PRODUCT, quantity: 1 }] } }, key.headers);
    expect(r.status).toBe(200);
    expect(r.body.result.isError).toBe(true);
    expect(r.body.result.structuredContent.error.code).toBe("HUMAN_CONFIRMATION_REQUIRED");
  }, 30_000);

  test("a payment that needs the buyer returns the link and shows it through URL-mode elicitation", async () => {
    const c = await connect(srv, { headers: key.headers, elicit: accept, urlElicitation: true });
    try {
      const { preview } = await cartAndPreview(c);
      const r = structured(await c.call("complete_checkout", { checkout_session_id: preview.checkout_session_id, idempotency_key: crypto.randomUUID(), payment_method: "tok_needs_approval" }));
      expect(r.status).toBe("PENDING_EXTERNAL_CONFIRMATION");
      expect(r.approval_url).toStartWith(srv.url);
      expect(c.elicitations.some((e) => e.mode === "url" && e.url === r.approval_url)).toBe(true);
    } finally {
      await c.close();
    }
  }, 60_000);
});

describe("payment outcomes", () => {
  for (const [token, code] of [
    ["tok_decline", "PAYMENT_DECLINED"],
    ["tok_fail", "PAYMENT_FAILED_ROLLED_BACK"],
    ["tok_not_approved", "PAYMENT_NOT_APPROVED"],
  ] as const) {
    test(`payment_method ${token} answers ${code}`, async () => {
      const { preview } = await cartAndPreview(agent);
      const e = errorOf(await agent.call("complete_checkout", { checkout_session_id: preview.checkout_session_id, idempotency_key: crypto.randomUUID(), payment_method: token }));
      expect(e.code).toBe(code);
    }, 60_000);
  }
});

describe("a lost processor answer", () => {
  test("payment_method tok_lost_response: the first answer is lost (UPSTREAM_UNAVAILABLE); the same call again is COMPLETED with exactly one capture", async () => {
    const { preview } = await cartAndPreview(agent);
    const args = { checkout_session_id: preview.checkout_session_id, idempotency_key: crypto.randomUUID(), payment_method: "tok_lost_response" };
    const lost = errorOf(await agent.call("complete_checkout", args));
    expect(lost.code).toBe("UPSTREAM_UNAVAILABLE");
    expect(lost.details.status).toBe("SETTLEMENT_UNKNOWN");
    const r = await agent.call("complete_checkout", args);
    const done = structured(r);
    expect(done.status).toBe("COMPLETED");
    const rows = await srv.db.sql<{ state: string }[]>`SELECT state FROM sandbox_ledger_intents WHERE intent_id = (SELECT intent_id FROM orders WHERE id = ${done.order_id})`;
    expect(rows.map((x) => x.state)).toEqual(["captured"]);
  }, 60_000);
});
