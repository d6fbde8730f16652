/**
 * Every MCP error code reachable through a tool, driven by the SDK client with outputSchema validation on.
 * Codes covered elsewhere: purchase.test.ts (HUMAN_CONFIRMATION_*, IDEMPOTENCY_KEY_CONFLICT, CHECKOUT_ALREADY_IN_PROGRESS,
 * ORDER_NOT_CANCELLABLE, PAYMENT_DECLINED, PAYMENT_FAILED_ROLLED_BACK, PAYMENT_NOT_APPROVED), error-mapping.test.ts
 * (INTERNAL_ERROR), oauth.test.ts (bearer tokens), preconditions.test.ts (PRECONDITION_NOT_MET: shipping method not
 * picked, or shipping changed after the preview; CHECKOUT_STATUS_INVALID: re-preview while the buyer approves, cancel
 * while a capture awaits reconciliation).
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { ERROR_TABLE } from "../../actors/runtime/errors.ts";
import { ALL_SCOPES, createKey, login, merchantLogin, type TestKey } from "../helpers/agents.ts";
import type { TestServer } from "../helpers/server.ts";
import { accept, connect, DEMO, DEMO_PRODUCT, errorOf, rpc, startBuyingAgent, structured, type Connected } from "./helpers.ts";

let srv: TestServer;
let key: TestKey;
let agent: Connected;
let platform: ReturnType<typeof Bun.serve>;
let platformMode: "ok" | "500" | "garbage" = "ok";

beforeAll(async () => {
  ({ srv, key, agent } = await startBuyingAgent());
  platform = Bun.serve({
    hostname: "127.0.0.1",
    port: 0,
    fetch: () => (platformMode === "500" ? new Response("boom", { status: 500 }) : platformMode === "garbage" ? Response.json({ stock: "lots" }) : Response.json({ in_stock: true, quantity: 3 })),
  });
}, 60_000);
afterAll(async () => {
  platform?.stop(true);
  await agent?.close();
  await srv?.stop();
});

function expectShape(e: ReturnType<typeof errorOf>, code: keyof typeof ERROR_TABLE) {
  expect(e.code).toBe(code);
  expect(e.remedy).toBe(ERROR_TABLE[code].remedy);
  expect(e.retryable).toBe(ERROR_TABLE[code].retryable);
  expect(e.scope).toBe(ERROR_TABLE[code].scope);
  expect(e.reference).toBe(`${srv.url}/docs/errors#${code}`);
}

/** The spec's table, written out (not read from our code table), for the codes whose row matters most. */
function expectSpec(e: ReturnType<typeof errorOf>, remedy: string, retryable: boolean, scope: "call" | "merchant") {
  expect({ remedy: e.remedy, retryable: e.retryable, scope: e.scope }).toEqual({ remedy, retryable, scope });
}

async function preview(c: Connected = agent) {
  const cart = structured(await c.call("create_cart", { items: [{ product_id: DEMO_PRODUCT, quantity: 1 }] }));
  return { cart, preview: structured(await c.call("preview_checkout", { cart_id: cart.cart_id })) };
}

describe("argument validation", () => {
  test("a non-UUID id is INVALID_ARGUMENT with details.field", async () => {
    const e = errorOf(await agent.call("get_product_details", { product_id: "nope" }));
    expectShape(e, "INVALID_ARGUMENT");
    expect(e.details.field).toBe("product_id");
  }, 30_000);

  test("an omitted required argument is MISSING_REQUIRED_ARGUMENT with details.field", async () => {
    const e = errorOf(await agent.call("search_products", {}));
    expectShape(e, "MISSING_REQUIRED_ARGUMENT");
    expect(e.details.field).toBe("query");
  }, 30_000);

  test("an unknown tool is TOOL_NOT_FOUND, merchant-wide", async () => {
    const e = errorOf(await agent.call("launch_rockets", {}));
    expectShape(e, "TOOL_NOT_FOUND");
    expect(e.scope).toBe("merchant");
  }, 30_000);

  test("a tool the store disabled is TOOL_NOT_FOUND for new callers", async () => {
    await srv.db.sql`UPDATE stores SET enabled_mcp_tools = ARRAY['search_products'] WHERE slug = 'greenleaf-living'`;
    await Bun.sleep(1100);
    const r = await rpc(srv, "/greenleaf-living/mcp", "tools/call", { name: "browse_categories", arguments: {} });
    expect(r.body.result.structuredContent.error.code).toBe("TOOL_NOT_FOUND");
    const list = await rpc(srv, "/greenleaf-living/mcp", "tools/list", {});
    expect(list.body.result.tools.map((t: any) => t.name)).toEqual(["search_products"]);
  }, 30_000);

  test("a comparison with one resolvable product is INSUFFICIENT_INPUT", async () => {
    const e = errorOf(await agent.call("compare_products", { product_ids: [DEMO_PRODUCT, crypto.randomUUID()] }));
    expectShape(e, "INSUFFICIENT_INPUT");
  }, 30_000);
});

describe("catalog and merchant", () => {
  test("a product of another store is PRODUCT_NOT_FOUND here", async () => {
    expectShape(errorOf(await agent.call("get_product_details", { product_id: crypto.randomUUID() })), "PRODUCT_NOT_FOUND");
  }, 30_000);

  test("a BASIC merchant's plan does not include natural-language search", async () => {
    const [basic] = await srv.db.sql<{ slug: string }[]>`SELECT slug FROM stores WHERE verification_level = 'BASIC' AND operational_status = 'active' AND trust_score >= 0.3 LIMIT 1`;
    expect(basic).toBeDefined();
    const r = await rpc(srv, `/${basic!.slug}/mcp`, "tools/call", { name: "nlweb_ask", arguments: { question: "a lamp under 50 dollars" } });
    expect(r.body.result.structuredContent.error.code).toBe("PLAN_UPGRADE_REQUIRED");
  }, 30_000);

  test("nlweb_ask turns a sentence into a structured search", async () => {
    const r = structured(await agent.call("nlweb_ask", { question: "wireless headphones under 300 dollars in stock" }));
    expect(r.interpreted.maxPrice).toBe(300);
    expect(r.interpreted.inStockOnly).toBe(true);
    expect(r.interpreted.query).toBe("wireless headphones");
    expect(r.products.every((p: any) => p.price <= 300)).toBe(true);
  }, 30_000);

  test("negotiation on a store without rules is FEATURE_NOT_ENABLED", async () => {
    const [p] = await srv.db.sql<{ id: string }[]>`SELECT id FROM products WHERE store_slug = 'qualified-eu-shop' AND active LIMIT 1`;
    const c = await connect(srv, { path: "/qualified-eu-shop/mcp", headers: key.headers, elicit: accept });
    try {
      expectShape(errorOf(await c.call("negotiate_price", { product_id: p!.id, bid_price: 1, currency: "EUR" })), "FEATURE_NOT_ENABLED");
    } finally {
      await c.close();
    }
  }, 30_000);

  test("an excluded category cannot be negotiated: NOT_ELIGIBLE", async () => {
    const [p] = await srv.db.sql<{ id: string }[]>`SELECT id FROM products WHERE store_slug = 'northwind-outfitters' AND category = 'Sports & Outdoors' AND active LIMIT 1`;
    const c = await connect(srv, { path: "/northwind-outfitters/mcp", headers: key.headers, elicit: accept });
    try {
      expectShape(errorOf(await c.call("negotiate_price", { product_id: p!.id, bid_price: 1, currency: "USD" })), "NOT_ELIGIBLE");
    } finally {
      await c.close();
    }
  }, 30_000);
});

describe("merchant platform integration", () => {
  let productId: string;
  beforeAll(async () => {
    const [p] = await srv.db.sql<{ id: string }[]>`SELECT id FROM products WHERE store_slug = ${DEMO} AND active AND in_stock AND currency = 'USD' AND variants = '[]'::jsonb AND id <> ${DEMO_PRODUCT} ORDER BY id LIMIT 1 OFFSET 10`;
    productId = p!.id;
    await srv.db.sql`UPDATE products SET attributes = attributes || ${srv.db.sql.json({ platform_endpoint: `http://127.0.0.1:${platform.port}/items/1` })} WHERE id = ${productId}`;
  });

  test("a product without a platform integration is STORE_NOT_CONFIGURED", async () => {
    expectShape(errorOf(await agent.call("check_live_availability", { product_id: DEMO_PRODUCT })), "STORE_NOT_CONFIGURED");
  }, 30_000);

  test("the platform's live answer is returned", async () => {
    platformMode = "ok";
    const r = structured(await agent.call("check_live_availability", { product_id: productId }));
    expect(r).toMatchObject({ inStock: true, quantity: 3, source: "merchant_platform" });
  }, 30_000);

  test("a platform error is UPSTREAM_ERROR and a malformed answer UPSTREAM_RESPONSE_INVALID", async () => {
    platformMode = "500";
    expectShape(errorOf(await agent.call("check_live_availability", { product_id: productId })), "UPSTREAM_ERROR");
    platformMode = "garbage";
    expectShape(errorOf(await agent.call("check_live_availability", { product_id: productId })), "UPSTREAM_RESPONSE_INVALID");
    platformMode = "ok";
  }, 30_000);

  test("an unreachable platform is UPSTREAM_UNAVAILABLE", async () => {
    const [p] = await srv.db.sql<{ id: string }[]>`SELECT id FROM products WHERE store_slug = ${DEMO} AND active AND id NOT IN (${DEMO_PRODUCT}, ${productId}) ORDER BY id LIMIT 1`;
    await srv.db.sql`UPDATE products SET attributes = attributes || ${srv.db.sql.json({ platform_endpoint: "http://127.0.0.1:9/items/x" })} WHERE id = ${p!.id}`;
    expectShape(errorOf(await agent.call("check_live_availability", { product_id: p!.id })), "UPSTREAM_UNAVAILABLE");
  }, 30_000);

  test("an attribute the platform refuses is CART_ATTRIBUTE_WRITE_FAILED; a written one can be polled, a bad reference is VERIFICATION_NOT_FOUND", async () => {
    const cart = structured(await agent.call("create_cart", { items: [{ product_id: productId, quantity: 1 }] }));
    platformMode = "500";
    expectShape(errorOf(await agent.call("start_attribute_verification", { cart_id: cart.cart_id, attribute: "age_over_18", value: true })), "CART_ATTRIBUTE_WRITE_FAILED");
    platformMode = "ok";
    const v = structured(await agent.call("start_attribute_verification", { cart_id: cart.cart_id, attribute: "age_over_18", value: true }));
    const polled = structured(await agent.call("get_attribute_verification", { verification_reference: v.verification_reference }));
    expect(polled.status).toBe("VERIFIED");
    expectShape(errorOf(await agent.call("get_attribute_verification", { verification_reference: v.verification_reference + "x" })), "VERIFICATION_NOT_FOUND");
  }, 30_000);
});

describe("carts and checkout sessions", () => {
  test("another caller's cart is CART_NOT_FOUND", async () => {
    const { cart } = await preview();
    const other = await createKey(srv, { scopes: ALL_SCOPES });
    const c = await connect(srv, { headers: other.headers });
    try {
      expectShape(errorOf(await c.call("get_cart", { cart_id: cart.cart_id })), "CART_NOT_FOUND");
    } finally {
      await c.close();
    }
  }, 30_000);

  test("a stale cart revision is CART_NOT_MUTABLE", async () => {
    const { cart } = await preview();
    await agent.call("apply_coupon", { cart_id: cart.cart_id, code: "WELCOME10" });
    expectShape(errorOf(await agent.call("apply_coupon", { cart_id: cart.cart_id, code: "WELCOME10", expected_revision: 1 })), "CART_NOT_MUTABLE");
  }, 30_000);

  test("items in two currencies are CURRENCY_MISMATCH", async () => {
    const [p] = await srv.db.sql<{ id: string }[]>`UPDATE products SET currency = 'EUR' WHERE id = (SELECT id FROM products WHERE store_slug = ${DEMO} AND active AND in_stock AND variants = '[]'::jsonb ORDER BY id DESC LIMIT 1) RETURNING id`;
    expectShape(errorOf(await agent.call("create_cart", { items: [{ product_id: DEMO_PRODUCT, quantity: 1 }, { product_id: p!.id, quantity: 1 }] })), "CURRENCY_MISMATCH");
  }, 30_000);

  test("an unknown session is CHECKOUT_SESSION_NOT_FOUND", async () => {
    expectShape(errorOf(await agent.call("complete_checkout", { checkout_session_id: "cs_nope", idempotency_key: crypto.randomUUID(), payment_method: "MOCK" })), "CHECKOUT_SESSION_NOT_FOUND");
  }, 30_000);

  test("a cancelled session is SESSION_INACTIVE", async () => {
    const a = await preview();
    await agent.call("cancel_checkout", { checkout_session_id: a.preview.checkout_session_id });
    const e = errorOf(await agent.call("complete_checkout", { checkout_session_id: a.preview.checkout_session_id, idempotency_key: crypto.randomUUID(), payment_method: "MOCK" }));
    expectShape(e, "SESSION_INACTIVE");
    expect(e.details.status).toBe("CANCELED");
  }, 60_000);

  // COMPLETED is a finished status in the checkout machine (actors/cart/checkout-machine.ts): every event on it,
  // cancel included, is SESSION_INACTIVE; CHECKOUT_STATUS_INVALID is for a live session (preconditions.test.ts).
  test("a completed session cannot be cancelled: SESSION_INACTIVE with details.status COMPLETED", async () => {
    const b = await preview();
    const paid = structured(await agent.call("complete_checkout", { checkout_session_id: b.preview.checkout_session_id, idempotency_key: crypto.randomUUID(), payment_method: "MOCK" }));
    expect(paid.status).toBe("COMPLETED");
    const e = errorOf(await agent.call("cancel_checkout", { checkout_session_id: b.preview.checkout_session_id }));
    expectShape(e, "SESSION_INACTIVE");
    expect(e.details.status).toBe("COMPLETED");
  }, 60_000);

  /** A USD product of the demo store (n-th from the end by id, priced >= 50.00 so 4 % of it exceeds the 50-cent floor), carted and previewed. */
  async function previewedPriceCase(n: number) {
    const [p] = await srv.db.sql<{ id: string; price_minor: number }[]>`
      SELECT id, price_minor FROM products WHERE store_slug = ${DEMO} AND active AND in_stock AND currency = 'USD' AND price_minor >= 5000 AND variants = '[]'::jsonb
        AND id <> ${DEMO_PRODUCT} ORDER BY id DESC LIMIT 1 OFFSET ${n}`;
    const cart = structured(await agent.call("create_cart", { items: [{ product_id: p!.id, quantity: 1 }] }));
    const pv = structured(await agent.call("preview_checkout", { cart_id: cart.cart_id }));
    return { id: p!.id, priceMinor: Number(p!.price_minor), totalMinor: Number(pv.totals.total_minor), pv };
  }
  const setPrice = (id: string, priceMinor: number) => srv.db.sql`UPDATE products SET price_minor = ${priceMinor} WHERE id = ${id}`;

  // docs/checkout.md, "State hash": any rise of the total reconfirms; a fall beyond max(50 minor units, 0.5 %)
  // reconfirms; a move of more than 10 % of the previewed total either way blocks.
  test("a price rise inside the 10 % cut is STATE_RECONFIRMATION_REQUIRED, and the returned hash completes the purchase", async () => {
    const c = await previewedPriceCase(1);
    await setPrice(c.id, c.priceMinor + Math.max(1, Math.floor(c.totalMinor * 0.02)));
    const args = { checkout_session_id: c.pv.checkout_session_id, idempotency_key: crypto.randomUUID(), payment_method: "MOCK" };
    const e = errorOf(await agent.call("complete_checkout", args));
    expectShape(e, "STATE_RECONFIRMATION_REQUIRED");
    expect(e.details.reconfirm_state_hash).toMatch(/^[0-9a-f]{64}$/);
    expect(e.details.reconfirm_state_hash).not.toBe(c.pv.state_hash);
    // Without the hash the same call is refused again; with it, the payment goes through at the new price.
    expectShape(errorOf(await agent.call("complete_checkout", args)), "STATE_RECONFIRMATION_REQUIRED");
    const ok = structured(await agent.call("complete_checkout", { ...args, reconfirmed_state_hash: e.details.reconfirm_state_hash }));
    expect(ok.status).toBe("COMPLETED");
    expect(ok.order_id).toBeString();
  }, 60_000);

  test("a price fall beyond the tolerance but inside the cut is STATE_RECONFIRMATION_REQUIRED", async () => {
    const c = await previewedPriceCase(2);
    const drop = Math.floor(c.totalMinor * 0.04);
    expect(drop).toBeGreaterThan(Math.max(50, c.totalMinor * 0.005));
    await setPrice(c.id, c.priceMinor - drop);
    const e = errorOf(await agent.call("complete_checkout", { checkout_session_id: c.pv.checkout_session_id, idempotency_key: crypto.randomUUID(), payment_method: "MOCK" }));
    expectShape(e, "STATE_RECONFIRMATION_REQUIRED");
    expect(e.details.reconfirm_state_hash).toMatch(/^[0-9a-f]{64}$/);
  }, 60_000);

  test("a price rise beyond the 10 % cut is STATE_EXECUTION_BLOCKED and no hash lets it through", async () => {
    const c = await previewedPriceCase(3);
    await setPrice(c.id, c.priceMinor + Math.ceil(c.totalMinor * 0.2));
    const e = errorOf(await agent.call("complete_checkout", { checkout_session_id: c.pv.checkout_session_id, idempotency_key: crypto.randomUUID(), payment_method: "MOCK" }));
    expectShape(e, "STATE_EXECUTION_BLOCKED");
    expect(e.details.reasons.map((r: { code: string }) => r.code)).toContain("price_beyond_cut");
    expect(e.details.reconfirm_state_hash).toBeUndefined();
  }, 60_000);

  test("a sold-out item since the preview is STATE_EXECUTION_BLOCKED", async () => {
    const [p] = await srv.db.sql<{ id: string }[]>`SELECT id FROM products WHERE store_slug = ${DEMO} AND active AND in_stock AND currency = 'USD' AND stock_quantity IS NOT NULL AND id <> ${DEMO_PRODUCT} ORDER BY id LIMIT 1 OFFSET 5`;
    const cart = structured(await agent.call("create_cart", { items: [{ product_id: p!.id, quantity: 1 }] }));
    const pv = structured(await agent.call("preview_checkout", { cart_id: cart.cart_id }));
    await srv.db.sql`UPDATE products SET stock_quantity = 0, in_stock = false WHERE id = ${p!.id}`;
    expectShape(errorOf(await agent.call("complete_checkout", { checkout_session_id: pv.checkout_session_id, idempotency_key: crypto.randomUUID(), payment_method: "MOCK" })), "STATE_EXECUTION_BLOCKED");
  }, 60_000);

  test("MOCK on a real merchant is PAYMENT_METHOD_NOT_CONFIGURED, merchant-wide", async () => {
    const [p] = await srv.db.sql<{ id: string }[]>`SELECT id FROM products WHERE store_slug = 'greenleaf-living' AND active AND in_stock LIMIT 1`;
    await srv.db.sql`UPDATE stores SET enabled_mcp_tools = NULL WHERE slug = 'greenleaf-living'`;
    await Bun.sleep(1100);
    const c = await connect(srv, { path: "/greenleaf-living/mcp", headers: key.headers, elicit: accept });
    try {
      const cart = structured(await c.call("create_cart", { items: [{ product_id: p!.id, quantity: 1 }] }));
      const pv = structured(await c.call("preview_checkout", { cart_id: cart.cart_id }));
      expectShape(errorOf(await c.call("complete_checkout", { checkout_session_id: pv.checkout_session_id, idempotency_key: crypto.randomUUID(), payment_method: "MOCK" })), "PAYMENT_METHOD_NOT_CONFIGURED");
    } finally {
      await c.close();
    }
  }, 60_000);

  test("x402 at a hosted-storefront merchant needs its native checkout, named in details.checkout_url", async () => {
    await srv.db.sql`UPDATE stores SET hosted_checkout_url = 'https://northwind.example/checkout' WHERE slug = 'northwind-outfitters'`;
    const [p] = await srv.db.sql<{ id: string }[]>`SELECT id FROM products WHERE store_slug = 'northwind-outfitters' AND active AND in_stock AND variants = '[]'::jsonb LIMIT 1`;
    const c = await connect(srv, { path: "/northwind-outfitters/mcp", headers: key.headers, elicit: accept });
    try {
      const cart = structured(await c.call("create_cart", { items: [{ product_id: p!.id, quantity: 1 }] }));
      const pv = structured(await c.call("preview_checkout", { cart_id: cart.cart_id }));
      const e = errorOf(await c.call("complete_checkout", { checkout_session_id: pv.checkout_session_id, idempotency_key: crypto.randomUUID(), payment_method: "x402" }));
      expectShape(e, "NATIVE_CHECKOUT_REQUIRED");
      expect(e.scope).toBe("merchant");
      expectSpec(e, "human_decides", false, "merchant");
      expect(e.details).toMatchObject({ merchant_slug: "northwind-outfitters", rail: "x402", checkout_url: "https://northwind.example/checkout" });
    } finally {
      await c.close();
    }
  }, 60_000);
});

describe("captured money that cannot complete, and merchant rules (docs/checkout.md sandbox triggers)", () => {
  const pay = (sessionId: string, method: string, key1 = crypto.randomUUID()) =>
    agent.call("complete_checkout", { checkout_session_id: sessionId, idempotency_key: key1, payment_method: method });

  test("a capture of another amount than authorised is PAYMENT_AMOUNT_MISMATCH: stop, with the capture reference; the same call never captures twice", async () => {
    const { preview: pv } = await preview();
    const k = crypto.randomUUID();
    const e = errorOf(await pay(pv.checkout_session_id, "tok_amount_mismatch", k));
    expectShape(e, "PAYMENT_AMOUNT_MISMATCH");
    expectSpec(e, "stop", false, "call");
    expect(e.details.capture_reference).toMatch(/^cap_/);
    expect(e.details.captured_minor).toBe(e.details.expected_minor + 1);
    const again = errorOf(await pay(pv.checkout_session_id, "tok_amount_mismatch", k));
    expect(again.code).toBe("PAYMENT_AMOUNT_MISMATCH");
    expect(again.details.capture_reference).toBe(e.details.capture_reference);
    const [n] = await srv.db.sql<{ n: number }[]>`SELECT count(*)::int AS n FROM sandbox_ledger_intents l JOIN orders o ON o.intent_id = l.intent_id WHERE o.cart_id = ${pv.cart_id}`;
    expect(n!.n).toBe(1);
  }, 60_000);

  test("a capture whose order cannot be finalised is PAYMENT_CAPTURED_FINALIZATION_FAILED: stop, with the capture reference", async () => {
    const { preview: pv } = await preview();
    const e = errorOf(await pay(pv.checkout_session_id, "tok_finalization_fails"));
    expectShape(e, "PAYMENT_CAPTURED_FINALIZATION_FAILED");
    expectSpec(e, "stop", false, "call");
    expect(e.details.capture_reference).toMatch(/^cap_/);
  }, 60_000);

  test("an order above the merchant's limit is CHECKOUT_BLOCKED_BY_POLICY with details.rule_code, and nothing is charged", async () => {
    const { preview: pv } = await preview();
    await srv.db.sql`UPDATE stores SET checkout_enforcement = '{"max_order_minor": 100}'::jsonb WHERE slug = ${DEMO}`;
    try {
      const e = errorOf(await pay(pv.checkout_session_id, "MOCK"));
      expectShape(e, "CHECKOUT_BLOCKED_BY_POLICY");
      expectSpec(e, "different_path", false, "call");
      expect(e.details).toMatchObject({ rule_code: "MERCHANT_MAX_ORDER_AMOUNT", limit_minor: 100 });
      expect(await srv.db.sql`SELECT id FROM orders WHERE cart_id = ${pv.cart_id}`).toHaveLength(0);
    } finally {
      await srv.db.sql`UPDATE stores SET checkout_enforcement = NULL WHERE slug = ${DEMO}`;
    }
  }, 60_000);

  test("merchant rules that cannot be read are ENFORCEMENT_UNAVAILABLE: retry with backoff, and the same call passes once they can", async () => {
    const { preview: pv } = await preview();
    const k = crypto.randomUUID();
    await srv.db.sql`UPDATE stores SET checkout_enforcement = '{"unavailable": true}'::jsonb WHERE slug = ${DEMO}`;
    try {
      const e = errorOf(await pay(pv.checkout_session_id, "MOCK", k));
      expectShape(e, "ENFORCEMENT_UNAVAILABLE");
      expectSpec(e, "retry_with_backoff", true, "call");
      expect(await srv.db.sql`SELECT id FROM orders WHERE cart_id = ${pv.cart_id}`).toHaveLength(0);
    } finally {
      await srv.db.sql`UPDATE stores SET checkout_enforcement = NULL WHERE slug = ${DEMO}`;
    }
    expect(structured(await pay(pv.checkout_session_id, "MOCK", k)).status).toBe("COMPLETED");
  }, 60_000);
});

describe("mandates", () => {
  test("a checkout above the mandate is MANDATE_LIMIT_EXCEEDED; a tampered mandate is AGENT_TOKEN_INVALID", async () => {
    const m = structured(await agent.call("issue_payment_mandate", { max_amount: 1, currency: "USD" }));
    const { preview: pv } = await preview();
    const args = { checkout_session_id: pv.checkout_session_id, idempotency_key: crypto.randomUUID(), payment_method: "MOCK" };
    const over = errorOf(await agent.call("complete_checkout", { ...args, payment_mandate: m.payment_mandate }));
    expectShape(over, "MANDATE_LIMIT_EXCEEDED");
    expect(over.details.cart_total_minor).toBeGreaterThan(over.details.mandate.max_amount_minor);
    const bad = errorOf(await agent.call("complete_checkout", { ...args, payment_mandate: m.payment_mandate.slice(0, -4) + "AAAA" }));
    expectShape(bad, "AGENT_TOKEN_INVALID");
    expect(bad.details.reason).toBeString();
  }, 60_000);
});

describe("orders, returns and customers", () => {
  test("an unknown order is ORDER_NOT_FOUND", async () => {
    expectShape(errorOf(await agent.call("get_order", { order_id: crypto.randomUUID() })), "ORDER_NOT_FOUND");
  }, 30_000);

  test("a return after the window is RETURN_WINDOW_EXPIRED", async () => {
    const { preview: pv } = await preview();
    const o = structured(await agent.call("complete_checkout", { checkout_session_id: pv.checkout_session_id, idempotency_key: crypto.randomUUID(), payment_method: "MOCK" }));
    expect(o.status).toBe("COMPLETED");
    // The key's first order with the store created its refund binding; without it the answer would be ORDER_NOT_FOUND.
    const [binding] = await srv.db.sql<{ status: string }[]>`SELECT status FROM store_agent_allowlist WHERE store_slug = ${DEMO} AND agent_key_id = ${key.id}`;
    expect(binding?.status).toBe("allowed");
    // Test setup: the order was paid one day longer ago than the store's return window.
    const [store] = await srv.db.sql<{ days: number | null }[]>`SELECT (policies->>'returnWindowDays')::int AS days FROM stores WHERE slug = ${DEMO}`;
    const days = (store?.days ?? 30) + 1;
    await srv.db.sql`UPDATE orders SET created_at = now() - make_interval(days => ${days}) WHERE id = ${o.order_id}`;
    const e = errorOf(await agent.call("onx_create_return", { order_id: o.order_id, reason: "too late" }));
    expectShape(e, "RETURN_WINDOW_EXPIRED");
    expect(e.details.return_window_days).toBe(days - 1);
  }, 60_000);

  test("customer identity tokens: a forged one is IDENTITY_TOKEN_REJECTED, another store's IDENTITY_TOKEN_STORE_MISMATCH, another customer's order ORDER_OWNERSHIP_FAILED", async () => {
    const token = await login(srv, merchantLogin("greenleaf-living"));
    const minted = await srv.json("/api/v1/merchant/stores/greenleaf-living/customer-tokens", { method: "POST", headers: { authorization: `Bearer ${token}` }, body: { customer_id: "cust-42" } });
    expect(minted.status).toBe(201);
    const admin = await login(srv);
    const demoTok = (await srv.json(`/api/v1/merchant/stores/${DEMO}/customer-tokens`, { method: "POST", headers: { authorization: `Bearer ${admin}` }, body: { customer_id: "cust-7" } })).body.data.token;

    const mismatch = await connect(srv, { path: `/${DEMO}/mcp/customer`, headers: { ...key.headers, "x-customer-identity": minted.body.data.token } });
    const forged = await connect(srv, { path: `/${DEMO}/mcp/customer`, headers: { ...key.headers, "x-customer-identity": demoTok.slice(0, -3) + "abc" } });
    const good = await connect(srv, { path: `/${DEMO}/mcp/customer`, headers: { ...key.headers, "x-customer-identity": demoTok } });
    try {
      expectShape(errorOf(await mismatch.call("verify_customer_identity", {})), "IDENTITY_TOKEN_STORE_MISMATCH");
      const f = errorOf(await forged.call("verify_customer_identity", {}));
      expectShape(f, "IDENTITY_TOKEN_REJECTED");
      expect(f.details.reason).toBeString();
      const me = structured(await good.call("verify_customer_identity", {}));
      expect(me.customer_id).toBe("cust-7");
      const [someone] = await srv.db.sql<{ id: string }[]>`SELECT id FROM orders WHERE store_slug = ${DEMO} LIMIT 1`;
      expectShape(errorOf(await good.call("get_order", { order_id: someone!.id })), "ORDER_OWNERSHIP_FAILED");
      expect(structured(await good.call("onx_get_orders", {})).orders).toEqual([]);
    } finally {
      await Promise.all([mismatch.close(), forged.close(), good.close()]);
    }
  }, 60_000);
});

describe("protocol edges", () => {
  test("a fast-path answer is JSON with its own status and the gateway's headers; a search result is canonical JSON whose text block is its structured content", async () => {
    const post = (body: string) =>
      fetch(`${srv.url}/${DEMO}/mcp`, { method: "POST", headers: { "content-type": "application/json", accept: "application/json, text/event-stream", ...key.headers }, body });
    const search = await post(JSON.stringify({ jsonrpc: "2.0", id: 7, method: "tools/call", params: { name: "search_products", arguments: { query: "wireless headphones", limit: 3 } } }));
    expect(search.status).toBe(200);
    expect(search.headers.get("content-type")).toBe("application/json");
    expect(search.headers.get("x-request-id")).toBeString();
    expect(search.headers.get("x-agent-commerce")).toBe("1");
    expect(search.headers.get("x-ratelimit-limit")).toBeString();
    const text = await search.text();
    const msg = JSON.parse(text) as { id: number; result: { content: { type: string; text: string }[]; structuredContent: { products: unknown[] } } };
    expect(JSON.stringify(msg)).toBe(text); // the exact bytes JSON.stringify gives
    expect(msg.id).toBe(7);
    expect(msg.result.structuredContent.products.length).toBe(3);
    expect(msg.result.content).toEqual([{ type: "text", text: JSON.stringify(msg.result.structuredContent) }]);

    const parseError = await post("{not json");
    expect(parseError.status).toBe(400);
    expect(parseError.headers.get("content-type")).toBe("application/json");
    expect(parseError.headers.get("x-request-id")).toBeString();
    expect(((await parseError.json()) as { error: { code: number } }).error.code).toBe(-32700);

    const notification = await post(JSON.stringify({ jsonrpc: "2.0", method: "notifications/initialized" }));
    expect(notification.status).toBe(202);
    expect(await notification.text()).toBe("");
    expect(notification.headers.get("x-request-id")).toBeString();
  });

  test("an unknown store is a 404 store_not_found envelope", async () => {
    const r = await rpc(srv, "/no-such-store/mcp", "tools/list", {});
    expect(r.status).toBe(404);
    expect(r.body.code).toBe("store_not_found");
  });

  test("preview_checkout without a credential is HTTP 401 with the OAuth resource metadata challenge", async () => {
    const r = await rpc(srv, `/${DEMO}/mcp`, "tools/call", { name: "preview_checkout", arguments: { cart_id: crypto.randomUUID() } });
    expect(r.status).toBe(401);
    expect(r.headers.get("www-authenticate")).toContain("resource_metadata=");
  });

  test("the older path /mcp/{slug} answers the same tools", async () => {
    const a = await rpc(srv, `/mcp/${DEMO}`, "tools/list", {});
    const b = await rpc(srv, `/${DEMO}/mcp`, "tools/list", {});
    expect(a.body.result.tools.length).toBe(50);
    expect(a.body).toEqual(b.body);
  });

  test("the discovery endpoint serves only discovery tools", async () => {
    const c = await connect(srv, { path: `/${DEMO}/mcp/discovery` });
    try {
      const names = (await c.client.listTools()).tools.map((t) => t.name);
      expect(names).toContain("search_products");
      expect(names).not.toContain("create_cart");
      expectShape(errorOf(await c.call("create_cart", { items: [{ product_id: DEMO_PRODUCT, quantity: 1 }] })), "TOOL_NOT_FOUND");
    } finally {
      await c.close();
    }
  }, 30_000);

  test("older protocol revisions still initialize, and ping works", async () => {
    const res = await fetch(`${srv.url}/${DEMO}/mcp`, {
      method: "POST",
      headers: { "content-type": "application/json", accept: "application/json, text/event-stream" },
      body: JSON.stringify({ jsonrpc: "2.0", id: 1, method: "initialize", params: { protocolVersion: "2025-03-26", capabilities: {}, clientInfo: { name: "old", version: "0" } } }),
    });
    expect(res.status).toBe(200);
    expect(res.headers.get("mcp-session-id")).toBeString();
    expect(await res.text()).toContain('"protocolVersion":"2025-03-26"');
    const c = await connect(srv);
    try {
      expect(await c.client.ping()).toEqual({});
      expect(c.client.getServerVersion()?.name).toBe("agent-commerce-service");
    } finally {
      await c.close();
    }
  }, 30_000);

  test("every one of the 50 tools advertises input and output schemas and annotations", async () => {
    const c = await connect(srv);
    try {
      const tools = (await c.client.listTools()).tools;
      expect(tools.length).toBe(50);
      for (const t of tools) {
        expect(t.inputSchema.type).toBe("object");
        expect(t.outputSchema?.type).toBe("object");
        expect(typeof t.annotations?.readOnlyHint).toBe("boolean");
        expect(t.description!.length).toBeGreaterThan(40);
      }
    } finally {
      await c.close();
    }
  }, 30_000);
});
