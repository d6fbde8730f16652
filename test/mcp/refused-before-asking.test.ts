/**
 * A write tool never asks the human to approve something that cannot happen (audit E, [MCP]): every refusal that is
 * known before the elicitation is answered before it, with the same code the call would have ended with. Each test
 * counts the elicitations the client received (an SDK client in a session, declaring `elicitation`, accepting all).
 * A preview whose merchant is below the agent-checkout trust threshold carries a NOT_ELIGIBLE warning, on MCP and REST.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { ALL_SCOPES, createKey, login, type TestKey } from "../helpers/agents.ts";
import { startServer, type TestServer } from "../helpers/server.ts";
import { accept, connect, counted, DEMO_PRODUCT, errorOf, structured, type Connected } from "./helpers.ts";

const NORTHWIND = "northwind-outfitters";
const HARBOUR = "harbour-lane-uk"; // scored in the CAUTION band, below the 0.7 agent-checkout threshold (asserted below)

let srv: TestServer;
let key: TestKey;
let demo: Connected;

async function productOf(slug: string): Promise<string> {
  const [p] = await srv.db.sql<{ id: string }[]>`
    SELECT id FROM products WHERE store_slug = ${slug} AND active AND in_stock AND (stock_quantity IS NULL OR stock_quantity >= 5) ORDER BY id LIMIT 1`;
  return p!.id;
}

/** A machine (client_credentials) token for a store's dedicated checkout endpoint, from the real token endpoint. */
async function machineToken(slug: string): Promise<string> {
  const session = await login(srv);
  const reg = await srv.json("/api/v1/oauth/register", {
    method: "POST",
    headers: { authorization: `Bearer ${session}` },
    body: { client_name: "m2m", grant_types: ["client_credentials"], token_endpoint_auth_method: "client_secret_post", scope: "search cart checkout" },
  });
  const res = await srv.json("/api/v1/oauth/token", {
    method: "POST",
    headers: { "content-type": "application/x-www-form-urlencoded" },
    body: new URLSearchParams({
      grant_type: "client_credentials",
      client_id: reg.body.client_id,
      client_secret: reg.body.client_secret,
      resource: `${srv.url}/${slug}/mcp/checkout`,
      scope: "search cart checkout",
    }).toString(),
  });
  expect(res.status).toBe(200);
  return res.body.access_token as string;
}

beforeAll(async () => {
  srv = await startServer({ seed: true, config: { RATE_LIMITS_ENABLED: false } });
  key = await createKey(srv, { scopes: ALL_SCOPES, tier: "ENTERPRISE" });
  demo = await connect(srv, { headers: key.headers, elicit: accept });
}, 60_000);
afterAll(async () => {
  await demo?.close();
  await srv?.stop();
});

describe("cancel_order", () => {
  test("a paid order is answered ORDER_NOT_CANCELLABLE without asking the human", async () => {
    const cart = structured(await demo.call("create_cart", { items: [{ product_id: DEMO_PRODUCT, quantity: 1 }] }));
    const pv = structured(await demo.call("preview_checkout", { cart_id: cart.cart_id }));
    const paid = structured(await demo.call("complete_checkout", { checkout_session_id: pv.checkout_session_id, idempotency_key: crypto.randomUUID(), payment_method: "MOCK" }));
    expect(paid.status).toBe("COMPLETED");

    const { result, asked } = await counted(demo, () => demo.call("cancel_order", { order_id: paid.order_id }));
    const e = errorOf(result);
    expect(e.code).toBe("ORDER_NOT_CANCELLABLE");
    expect(e.details).toMatchObject({ status: "paid", order_id: paid.order_id });
    expect(e.message).toContain("onx_create_return");
    expect(asked).toBe(0);
  }, 60_000);

  test("a pending order whose capture awaits reconciliation is answered payment_in_progress without asking the human", async () => {
    const cart = structured(await demo.call("create_cart", { items: [{ product_id: DEMO_PRODUCT, quantity: 1 }] }));
    const pv = structured(await demo.call("preview_checkout", { cart_id: cart.cart_id }));
    const first = await demo.call("complete_checkout", { checkout_session_id: pv.checkout_session_id, idempotency_key: crypto.randomUUID(), payment_method: "tok_finalization_fails" });
    expect(errorOf(first).code).toBe("PAYMENT_CAPTURED_FINALIZATION_FAILED");
    const [order] = await srv.db.sql<{ id: string }[]>`SELECT id FROM orders WHERE cart_id = ${cart.cart_id}`;

    const { result, asked } = await counted(demo, () => demo.call("cancel_order", { order_id: order!.id }));
    expect(errorOf(result)).toMatchObject({ code: "ORDER_NOT_CANCELLABLE", details: { reason: "payment_in_progress", status: "pending" } });
    expect(asked).toBe(0);
  }, 60_000);
});

describe("complete_checkout on a merchant's dedicated checkout endpoint", () => {
  let agent: Connected;
  let sessionId: string;
  let totalMinor: number;

  beforeAll(async () => {
    const token = await machineToken(NORTHWIND);
    agent = await connect(srv, { path: `/${NORTHWIND}/mcp/checkout`, headers: { authorization: `Bearer ${token}` }, elicit: accept });
    const cart = structured(await agent.call("create_cart", { items: [{ product_id: await productOf(NORTHWIND), quantity: 1 }] }));
    const pv = structured(await agent.call("preview_checkout", { cart_id: cart.cart_id }));
    sessionId = pv.checkout_session_id;
    totalMinor = pv.totals.total_minor;
  }, 60_000);
  afterAll(async () => {
    await agent?.close();
  });

  test("without payment_mandate it is MISSING_REQUIRED_ARGUMENT and the human is not asked to pay", async () => {
    const { result, asked } = await counted(agent, () =>
      agent.call("complete_checkout", { checkout_session_id: sessionId, idempotency_key: crypto.randomUUID(), payment_method: "tok_approve" }),
    );
    expect(errorOf(result)).toMatchObject({ code: "MISSING_REQUIRED_ARGUMENT", details: { field: "payment_mandate" } });
    expect(asked).toBe(0);
  }, 60_000);

  test("with a mandate below the cart total it is MANDATE_LIMIT_EXCEEDED and the human is not asked to pay", async () => {
    const mandate = structured(await agent.call("issue_payment_mandate", { max_amount: (totalMinor - 100) / 100, currency: "USD" }));
    const { result, asked } = await counted(agent, () =>
      agent.call("complete_checkout", { checkout_session_id: sessionId, idempotency_key: crypto.randomUUID(), payment_method: "tok_approve", payment_mandate: mandate.payment_mandate }),
    );
    expect(errorOf(result)).toMatchObject({ code: "MANDATE_LIMIT_EXCEEDED", details: { violated: "amount", cart_total_minor: totalMinor } });
    expect(asked).toBe(0);

    // the same session with a mandate that covers it is asked once, then paid
    const enough = structured(await agent.call("issue_payment_mandate", { max_amount: totalMinor / 100, currency: "USD" }));
    const paid = await counted(agent, () =>
      agent.call("complete_checkout", { checkout_session_id: sessionId, idempotency_key: crypto.randomUUID(), payment_method: "tok_approve", payment_mandate: enough.payment_mandate }),
    );
    expect(structured(paid.result).status).toBe("COMPLETED");
    expect(paid.asked).toBe(1);
    expect(agent.elicitations.at(-1)!.message).toContain(`Pay ${(totalMinor / 100).toFixed(2)} USD`);
  }, 60_000);
});

describe("a merchant below the agent-checkout trust threshold", () => {
  let harbour: Connected;
  let cartId: string;

  beforeAll(async () => {
    harbour = await connect(srv, { path: `/${HARBOUR}/mcp`, headers: key.headers, elicit: accept });
    cartId = structured(await harbour.call("create_cart", { items: [{ product_id: await productOf(HARBOUR), quantity: 1 }] })).cart_id;
  }, 60_000);
  afterAll(async () => {
    await harbour?.close();
  });

  test("its preview carries a NOT_ELIGIBLE warning, over MCP and over REST", async () => {
    const pv = structured(await harbour.call("preview_checkout", { cart_id: cartId }));
    expect(pv.warnings).toEqual([
      expect.objectContaining({ code: "NOT_ELIGIBLE", reason: "trust_below_agent_threshold", merchant_slug: HARBOUR, threshold: 0.7, trust_score: expect.any(Number) }),
    ]);
    expect(pv.warnings[0].trust_score).toBeLessThan(0.7);

    const rest = await srv.json("/api/v1/agent/checkout/preview", { method: "POST", headers: key.headers, body: { cartId } });
    expect(rest.status).toBe(200);
    expect(rest.body.data.warnings).toEqual([expect.objectContaining({ code: "NOT_ELIGIBLE", reason: "trust_below_agent_threshold", merchant_slug: HARBOUR })]);
  }, 60_000);

  test("complete_checkout is NOT_ELIGIBLE before the human is asked, and nothing is held", async () => {
    const pv = structured(await harbour.call("preview_checkout", { cart_id: cartId }));
    const { result, asked } = await counted(harbour, () =>
      harbour.call("complete_checkout", { checkout_session_id: pv.checkout_session_id, idempotency_key: crypto.randomUUID(), payment_method: "tok_approve" }),
    );
    expect(errorOf(result)).toMatchObject({ code: "NOT_ELIGIBLE", details: { merchant_slug: HARBOUR, reason: "trust_below_agent_threshold" } });
    expect(asked).toBe(0);
    expect(await srv.db.sql`SELECT id FROM orders WHERE cart_id = ${cartId}`).toHaveLength(0);
  }, 60_000);

  test("an eligible merchant's preview has no warnings", async () => {
    const cart = structured(await demo.call("create_cart", { items: [{ product_id: DEMO_PRODUCT, quantity: 1 }] }));
    expect(structured(await demo.call("preview_checkout", { cart_id: cart.cart_id })).warnings).toEqual([]);
  }, 60_000);
});

describe("other refusals known before the question", () => {
  test("a second idempotency key on a bound session is IDEMPOTENCY_KEY_CONFLICT without asking the human", async () => {
    const cart = structured(await demo.call("create_cart", { items: [{ product_id: DEMO_PRODUCT, quantity: 1 }] }));
    const pv = structured(await demo.call("preview_checkout", { cart_id: cart.cart_id }));
    const declined = await demo.call("complete_checkout", { checkout_session_id: pv.checkout_session_id, idempotency_key: crypto.randomUUID(), payment_method: "tok_decline" });
    expect(errorOf(declined).code).toBe("PAYMENT_DECLINED");
    const { result, asked } = await counted(demo, () =>
      demo.call("complete_checkout", { checkout_session_id: pv.checkout_session_id, idempotency_key: crypto.randomUUID(), payment_method: "MOCK" }),
    );
    expect(errorOf(result).code).toBe("IDEMPOTENCY_KEY_CONFLICT");
    expect(asked).toBe(0);
  }, 60_000);

  test("cancel_checkout of a finished session or of one whose capture awaits reconciliation is refused without asking the human", async () => {
    const cart = structured(await demo.call("create_cart", { items: [{ product_id: DEMO_PRODUCT, quantity: 1 }] }));
    const pv = structured(await demo.call("preview_checkout", { cart_id: cart.cart_id }));
    await demo.call("complete_checkout", { checkout_session_id: pv.checkout_session_id, idempotency_key: crypto.randomUUID(), payment_method: "MOCK" });
    const done = await counted(demo, () => demo.call("cancel_checkout", { checkout_session_id: pv.checkout_session_id }));
    expect(errorOf(done.result)).toMatchObject({ code: "SESSION_INACTIVE", details: { status: "COMPLETED" } });
    expect(done.asked).toBe(0);

    const cart2 = structured(await demo.call("create_cart", { items: [{ product_id: DEMO_PRODUCT, quantity: 1 }] }));
    const pv2 = structured(await demo.call("preview_checkout", { cart_id: cart2.cart_id }));
    await demo.call("complete_checkout", { checkout_session_id: pv2.checkout_session_id, idempotency_key: crypto.randomUUID(), payment_method: "tok_amount_mismatch" });
    const held = await counted(demo, () => demo.call("cancel_checkout", { checkout_session_id: pv2.checkout_session_id }));
    expect(errorOf(held.result)).toMatchObject({ code: "CHECKOUT_STATUS_INVALID", details: { status: "SETTLEMENT_UNKNOWN" } });
    expect(held.asked).toBe(0);
  }, 60_000);

  test("apply_coupon on a cart frozen by its checkout session is CART_NOT_MUTABLE naming the session, without asking the human", async () => {
    const cart = structured(await demo.call("create_cart", { items: [{ product_id: DEMO_PRODUCT, quantity: 1 }] }));
    const pv = structured(await demo.call("preview_checkout", { cart_id: cart.cart_id }));
    const { result, asked } = await counted(demo, () => demo.call("apply_coupon", { cart_id: cart.cart_id, code: "WELCOME10" }));
    expect(errorOf(result)).toMatchObject({ code: "CART_NOT_MUTABLE", details: { reason: "checkout_in_progress", checkout_session_id: pv.checkout_session_id } });
    expect(asked).toBe(0);
    const stale = await counted(demo, () => demo.call("apply_coupon", { cart_id: cart.cart_id, code: "WELCOME10", expected_revision: 1 }));
    expect(errorOf(stale.result)).toMatchObject({ code: "CART_NOT_MUTABLE", details: { reason: "stale_revision", expected_revision: 1 } });
    expect(stale.asked).toBe(0);
  }, 60_000);

  test("a return past the window is RETURN_WINDOW_EXPIRED and a return of a blocked key ORDER_NOT_FOUND, without asking the human", async () => {
    const cart = structured(await demo.call("create_cart", { items: [{ product_id: DEMO_PRODUCT, quantity: 1 }] }));
    const pv = structured(await demo.call("preview_checkout", { cart_id: cart.cart_id }));
    const o = structured(await demo.call("complete_checkout", { checkout_session_id: pv.checkout_session_id, idempotency_key: crypto.randomUUID(), payment_method: "MOCK" }));
    await srv.db.sql`UPDATE orders SET created_at = now() - interval '400 days' WHERE id = ${o.order_id}`;
    const late = await counted(demo, () => demo.call("onx_create_return", { order_id: o.order_id, reason: "too late" }));
    expect(errorOf(late.result).code).toBe("RETURN_WINDOW_EXPIRED");
    expect(late.asked).toBe(0);

    await srv.db.sql`UPDATE orders SET created_at = now() WHERE id = ${o.order_id}`;
    await srv.db.sql`UPDATE store_agent_allowlist SET status = 'blocked' WHERE store_slug = 'demo-store' AND agent_key_id = ${key.id}`;
    try {
      const blocked = await counted(demo, () => demo.call("onx_create_return", { order_id: o.order_id }));
      expect(errorOf(blocked.result).code).toBe("ORDER_NOT_FOUND");
      expect(blocked.asked).toBe(0);
    } finally {
      await srv.db.sql`UPDATE store_agent_allowlist SET status = 'allowed' WHERE store_slug = 'demo-store' AND agent_key_id = ${key.id}`;
    }
    // allowed again and inside the window: asked once, then requested
    const ok = await counted(demo, () => demo.call("onx_create_return", { order_id: o.order_id, amount: 100 }));
    expect(structured(ok.result).status).toBe("PENDING_APPROVAL");
    expect(ok.asked).toBe(1);
  }, 60_000);

  test("a bid on a store without negotiation is FEATURE_NOT_ENABLED without asking the human", async () => {
    const eu = await connect(srv, { path: "/qualified-eu-shop/mcp", headers: key.headers, elicit: accept });
    try {
      const { result, asked } = await counted(eu, () => eu.call("negotiate_price", { product_id: DEMO_PRODUCT, bid_price: 1, currency: "EUR" }));
      expect(errorOf(result).code).toBe("FEATURE_NOT_ENABLED");
      expect(asked).toBe(0);
    } finally {
      await eu.close();
    }
  }, 60_000);

  test("an attribute verification for a cart without a platform integration is STORE_NOT_CONFIGURED without asking the human", async () => {
    const cart = structured(await demo.call("create_cart", { items: [{ product_id: DEMO_PRODUCT, quantity: 1 }] }));
    const { result, asked } = await counted(demo, () => demo.call("start_attribute_verification", { cart_id: cart.cart_id, attribute: "age_over_18", value: true }));
    expect(errorOf(result)).toMatchObject({ code: "STORE_NOT_CONFIGURED", details: { missing: "platform_endpoint" } });
    expect(asked).toBe(0);
  }, 60_000);

  test("a cart beyond the product's stock is INVALID_ARGUMENT stock_insufficient without asking the human, on create and on edit", async () => {
    const [p] = await srv.db.sql<{ id: string; stock: number }[]>`
      SELECT id, stock_quantity AS stock FROM products WHERE store_slug = 'demo-store' AND active AND in_stock AND stock_quantity BETWEEN 1 AND 9000 ORDER BY id LIMIT 1`;
    const created = await counted(demo, () => demo.call("create_cart", { items: [{ product_id: p!.id, quantity: p!.stock + 1 }] }));
    expect(errorOf(created.result)).toMatchObject({ code: "INVALID_ARGUMENT", details: { field: "items[0].quantity", reason: "stock_insufficient", product_id: p!.id, requested: p!.stock + 1 } });
    expect(created.asked).toBe(0);

    const cart = structured(await demo.call("create_cart", { items: [{ product_id: p!.id, quantity: 1 }] }));
    const edited = await counted(demo, () => demo.call("update_cart_item", { cart_id: cart.cart_id, product_id: p!.id, quantity: p!.stock + 1 }));
    expect(errorOf(edited.result)).toMatchObject({ code: "INVALID_ARGUMENT", details: { reason: "stock_insufficient" } });
    expect(edited.asked).toBe(0);
    expect(structured(await demo.call("get_cart", { cart_id: cart.cart_id })).status).toBe("OPEN");
  }, 60_000);

  test("x402 over MCP is PAYMENT_METHOD_NOT_CONFIGURED without asking the human", async () => {
    const cart = structured(await demo.call("create_cart", { items: [{ product_id: DEMO_PRODUCT, quantity: 1 }] }));
    const pv = structured(await demo.call("preview_checkout", { cart_id: cart.cart_id }));
    const { result, asked } = await counted(demo, () =>
      demo.call("complete_checkout", { checkout_session_id: pv.checkout_session_id, idempotency_key: crypto.randomUUID(), payment_method: "x402" }),
    );
    expect(errorOf(result)).toMatchObject({ code: "PAYMENT_METHOD_NOT_CONFIGURED", details: { rail: "x402" } });
    expect(asked).toBe(0);
  }, 60_000);

  test("a mandate amount the currency cannot hold is INVALID_ARGUMENT without asking the human", async () => {
    const { result, asked } = await counted(demo, () => demo.call("issue_payment_mandate", { max_amount: 10.005, currency: "USD" }));
    expect(errorOf(result)).toMatchObject({ code: "INVALID_ARGUMENT", details: { field: "max_amount" } });
    expect(asked).toBe(0);
  }, 60_000);

  test("removing a product that is not in the cart is PRODUCT_NOT_FOUND without asking the human", async () => {
    const cart = structured(await demo.call("create_cart", { items: [{ product_id: DEMO_PRODUCT, quantity: 1 }] }));
    const { result, asked } = await counted(demo, () => demo.call("remove_cart_item", { cart_id: cart.cart_id, product_id: crypto.randomUUID() }));
    expect(errorOf(result).code).toBe("PRODUCT_NOT_FOUND");
    expect(asked).toBe(0);
  }, 60_000);
});
