/**
 * Audit A (REST conformance), the points fixed by engineer K besides shipping (shipping-estimate-matches-preview):
 * A-7 the refund answer's units, A-8 the merchant directory's page bound, A-9 a hosted storefront's payment protocols.
 * A-6 (the OpenAPI document) is pinned in openapi-complete.test.ts.
 */
import { beforeAll, describe, expect, test } from "bun:test";
import { ALL_SCOPES, createKey, placeOrder, type TestKey } from "../helpers/agents.ts";
import { useServer } from "../helpers/server.ts";
import { connect, structured } from "../mcp/helpers.ts";

const SKILLET = "399d72f1-303c-5cf3-bc6a-5c82714b85d4"; // demo-store, MOCK
const NORTHWIND = "northwind-outfitters"; // hosted storefront; payment methods card and x402

const srv = useServer({ seed: true, config: { RATE_LIMITS_ENABLED: false } });
let key: TestKey;

beforeAll(async () => {
  key = await createKey(srv, { scopes: ALL_SCOPES, tier: "ENTERPRISE" });
}, 120_000);

describe("the merchant directory bounds its page like search (A-8)", () => {
  test("page 10,000 is served (an empty page) and echoed exactly", async () => {
    const r = await srv.json("/api/v1/merchants?page=10000");
    expect(r.status).toBe(200);
    expect(r.body.data).toEqual([]);
    expect(r.body.meta.page).toBe(10_000);
  });

  for (const page of ["10001", "99999999999999999999"]) {
    test(`page ${page} is 400 validation_error on page, naming the maximum`, async () => {
      const r = await srv.json(`/api/v1/merchants?page=${page}`);
      expect(r.status).toBe(400);
      expect(r.body).toMatchObject({ success: false, code: "validation_error", details: { location: "query", field: "page", maximum: 10_000 } });
    });
  }
});

describe("a merchant profile lists only the payment protocols a checkout there accepts (A-9)", () => {
  test("a hosted storefront lists its native rails, not x402, and the x402 refusal names the same rails", async () => {
    const [store] = await srv.db.sql<{ payment_methods: string[]; hosted_storefront: boolean }[]>`SELECT payment_methods, hosted_storefront FROM stores WHERE slug = ${NORTHWIND}`;
    expect(store).toMatchObject({ hosted_storefront: true, payment_methods: expect.arrayContaining(["card", "x402"]) });
    const profile = await srv.json(`/api/v1/agent/merchants/${NORTHWIND}`, { headers: key.headers });
    expect(profile.status).toBe(200);
    expect(profile.body.data.paymentProtocols).toEqual(["card"]);

    const [p] = await srv.db.sql<{ id: string }[]>`SELECT id FROM products WHERE store_slug = ${NORTHWIND} AND active AND in_stock AND variants = '[]'::jsonb ORDER BY id LIMIT 1`;
    const cart = await srv.json("/api/v1/agent/cart", { method: "POST", headers: key.headers, body: { items: [{ product_id: p!.id, quantity: 1 }] } });
    expect(cart.status).toBe(201);
    const r = await srv.json("/api/v1/agent/checkout", {
      method: "POST",
      headers: key.headers,
      body: {
        cartId: cart.body.data.id,
        payment_rail: "x402",
        x402_config: { merchant_wallet_address: "0x0000000000000000000000000000000000000001", network: "base-sepolia", facilitator_url: "https://facilitator.example" },
      },
    });
    expect(r.status).toBe(403);
    expect(r.body).toMatchObject({ code: "NATIVE_CHECKOUT_REQUIRED", details: { rail: "x402", native_rails: profile.body.data.paymentProtocols } });
  });

  test("the protocols page and MCP's get_supported_protocols, get_payment_methods and get_merchant_profile list the same", async () => {
    const page = await srv.json(`/api/v1/agent/merchants/${NORTHWIND}/protocols`, { headers: key.headers });
    expect(page.status).toBe(200);
    expect(page.body.data.protocols.map((p: { id: string }) => p.id)).toEqual(["card"]);
    expect(page.body.data.preferred).toBe("card");
    const mcp = await connect(srv, { path: `/${NORTHWIND}/mcp`, headers: key.headers });
    try {
      expect(structured(await mcp.call("get_supported_protocols")).protocols.map((p: { id: string }) => p.id)).toEqual(["card"]);
      expect(structured(await mcp.call("get_payment_methods")).methods.map((m: { id: string }) => m.id)).toEqual(["card"]);
      expect(structured(await mcp.call("get_merchant_profile")).paymentProtocols).toEqual(["card"]);
    } finally {
      await mcp.close();
    }
  });

  test("a merchant with its own checkout still lists x402 (whether it settles is the protocols page's `configured`)", async () => {
    const profile = await srv.json("/api/v1/agent/merchants/demo-store", { headers: key.headers });
    expect(profile.status).toBe(200);
    expect(profile.body.data.paymentProtocols).toContain("x402");
    const page = await srv.json("/api/v1/agent/merchants/demo-store/protocols", { headers: key.headers });
    expect(page.body.data.protocols.map((p: { id: string }) => p.id)).toContain("x402");
  });
});

describe("the refund answer's amount units (A-7)", () => {
  test("a request of 150 cents is answered amount 1.5 (major units) and amount_minor 150, and the OpenAPI document says so", async () => {
    const orderId = await placeOrder(srv, key, SKILLET);
    const r = await srv.json(`/api/v1/agent/orders/${orderId}/refund`, { method: "POST", headers: key.headers, body: { amount: 150 } });
    expect(r.status).toBe(201);
    expect(r.body.data).toMatchObject({ amount: 1.5, amount_minor: 150, currency: "USD" });

    const doc = (await srv.json("/api/v1/openapi.json")).body;
    const op = doc.paths["/api/v1/agent/orders/{orderId}/refund"].post;
    const request = op.requestBody.content["application/json"].schema.properties.amount.description as string;
    expect(request).toContain("Integer cents");
    expect(request).toContain("major units");
    const answer = JSON.stringify(op.responses["201"]);
    expect(answer).toContain("Major units");
    expect(answer).toContain("integer minor units (cents)");
  });
});
