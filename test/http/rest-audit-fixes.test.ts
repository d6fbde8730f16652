/**
 * The REST audit's findings (session 4, /tmp/notes/C-audit-rest.md), each pinned through HTTP against the real
 * service: optional bodies that do not parse are refused (H1), money beyond the business maximum and unstorable
 * items are per-item rejections (H2, L1, L2), the partly captured checkout's text (M3), the buyer approval page
 * (L3), the query length in characters (N1), ISO country codes (N6), the fractional limit (N7), the rail label
 * (N8) and the public merchant directory (G1).
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { EXTRAS_RESOLVER } from "../../actors/webhook/dispatcher.ts";
import { getIndexer } from "../../search/indexer.ts";
import { ALL_SCOPES, createKey, login, merchantLogin, placeOrder, type TestKey } from "../helpers/agents.ts";
import { startServer, type TestServer } from "../helpers/server.ts";

const BOARD = "5befd987-79cd-540c-8a5d-2ba5a30aed41"; // demo-store DS-0011, 26.95 + 6.99 shipping = 33.94
const GREENLEAF = "7f7dea8b-5ff1-530b-ba42-07399d7cf493"; // greenleaf-living
const MAPLE = "0a68801e-4648-523c-8609-fbe56d3955d2"; // maple-pine-home

let srv: TestServer;
let key: TestKey;
let admin: string;
let greenleafOwner: Record<string, string>;

beforeAll(async () => {
  srv = await startServer({ seed: true });
  key = await createKey(srv, { scopes: ALL_SCOPES, tier: "ENTERPRISE" });
  admin = await login(srv);
  greenleafOwner = { authorization: `Bearer ${await login(srv, merchantLogin("greenleaf-living"))}` };
}, 120_000);
afterAll(async () => {
  await srv?.stop();
});

/** A POST with a raw body and content type, as a client with a bug would send it. */
const raw = (path: string, body: string, contentType: string | null, headers: Record<string, string> = key.headers) =>
  srv.json(path, { method: "POST", headers: { ...headers, ...(contentType ? { "content-type": contentType } : {}) }, body });
const settle = () => getIndexer(srv.running.services)!.idle();
const search = (query: string) => srv.json("/api/v1/agent/search", { method: "POST", headers: key.headers, body: { query, filters: { inStock: false } } });

describe("H1: an optional body that does not parse is refused, never read as 'no body'", () => {
  const bad: [string, string, string | null][] = [
    ["truncated JSON", '{"amount": 100, "reason": "one strap broken"', "application/json"],
    ["a JSON array", "[100]", "application/json"],
    ["form-encoded", "amount=100", "application/x-www-form-urlencoded"],
  ];
  for (const [name, body, type] of bad) {
    test(`refund with ${name}: 400 validation_error and no refund written`, async () => {
      const id = await placeOrder(srv, key, BOARD);
      const r = await raw(`/api/v1/agent/orders/${id}/refund`, body, type);
      expect(r.status).toBe(400);
      expect(r.body).toMatchObject({ success: false, code: "validation_error" });
      const rows = await srv.db.sql`SELECT id FROM order_refunds WHERE order_id = ${id}`;
      expect(rows.length).toBe(0);
    });
  }

  test("refund with JSON sent as text/plain is refused like any non-JSON body (REST audit A-4), never read as a full refund", async () => {
    const id = await placeOrder(srv, key, BOARD);
    const r = await raw(`/api/v1/agent/orders/${id}/refund`, '{"amount":100}', "text/plain");
    expect(r.status).toBe(400);
    expect(r.body).toMatchObject({ code: "validation_error", details: { contentType: "text/plain", expectedContentType: "application/json" } });
    expect((await srv.db.sql`SELECT id FROM order_refunds WHERE order_id = ${id}`).length).toBe(0);
  });

  test("an empty refund body still means the full amount", async () => {
    const id = await placeOrder(srv, key, BOARD);
    const r = await raw(`/api/v1/agent/orders/${id}/refund`, "", "application/json");
    expect(r.status).toBe(201);
    expect(r.body.data.amount_minor).toBe(3394);
  });

  test("cancel with a truncated body: 400, and the paid order is neither canceled nor refunded", async () => {
    const id = await placeOrder(srv, key, BOARD);
    const r = await raw(`/api/v1/agent/orders/${id}/cancel`, '{"reason": "changed my mind"', "application/json");
    expect(r.status).toBe(400);
    expect(r.body.code).toBe("validation_error");
    const [o] = await srv.db.sql<{ status: string }[]>`SELECT status FROM orders WHERE id = ${id}`;
    expect(o!.status).toBe("paid");
  });

  test("webhook secret rotation with a truncated body: 400, not the default 24 h overlap", async () => {
    const auth = { authorization: `Bearer ${admin}` };
    // a public address for the receiver's name, without DNS (the SSRF check resolves it)
    srv.running.services.extras.set(EXTRAS_RESOLVER, async () => [{ address: "93.184.216.34", family: 4 }]);
    const created = await srv.json("/api/v1/merchant/stores/demo-store/webhooks", {
      method: "POST",
      headers: auth,
      body: { url: "https://hooks.example.com/acs", events: ["order.created"] },
    });
    expect(created.status).toBe(201);
    const path = `/api/v1/merchant/stores/demo-store/webhooks/${created.body.data.id}/rotate-secret`;
    const r = await raw(path, '{"overlapSeconds":0', "application/json", auth);
    expect(r.status).toBe(400);
    expect(r.body.code).toBe("validation_error");
    const zero = await raw(path, '{"overlapSeconds":0}', "application/json", auth);
    expect(zero.status).toBe(200);
    expect(zero.body.data.previousSecretExpiresAt ?? null).toBeNull();
  });
});

describe("H2, L1, L2: money and unstorable values are rejected per item; the rest of the batch is written", () => {
  test("PUT /catalog: a price above the maximum, a sub-cent price, stock >= 2^31 and a NUL byte are each rejected with their field; the good items land and are searchable", async () => {
    const r = await srv.json("/api/v1/merchant/stores/greenleaf-living/catalog", {
      method: "PUT",
      headers: greenleafOwner,
      body: {
        products: [
          { externalId: "AUD-OK-1", title: "Wombat Linen Cushion", price: 31.5, currency: "USD", stockQuantity: 3 },
          { externalId: "AUD-POISON", title: "Poison", price: 1e15, currency: "USD", stockQuantity: 1 },
          { externalId: "AUD-TINY", title: "Tiny", price: 1e-9, currency: "USD" },
          { externalId: "AUD-STOCK", title: "Stocky", price: 5, currency: "USD", stockQuantity: 2 ** 31 },
          { externalId: "AUD-NUL", title: "Nul\u0000Title", price: 5, currency: "USD" },
          { externalId: "AUD-CMP", title: "Compare", price: 5, compareAtPrice: 1e13, currency: "USD" },
          { externalId: "AUD-VAR", title: "Variant", price: 5, currency: "USD", variants: [{ title: "Big", price: 2e10 }] },
          { externalId: "AUD-OK-2", title: "Numbat Oak Tray", price: 9_999_999_999.99, currency: "USD" },
        ],
      },
    });
    expect(r.status).toBe(200);
    expect(r.body.data.accepted).toBe(2);
    const fields = Object.fromEntries(r.body.data.rejected.map((x: any) => [x.externalId ?? x.index, x.errors.map((e: any) => e.field)]));
    expect(fields["AUD-POISON"]).toEqual(["price"]);
    expect(fields["AUD-TINY"]).toEqual(["price"]);
    expect(fields["AUD-STOCK"]).toEqual(["stockQuantity"]);
    expect(fields["AUD-NUL"]).toEqual(["title"]);
    expect(fields["AUD-CMP"]).toEqual(["compareAtPrice"]);
    expect(fields["AUD-VAR"]).toEqual(["variants.0.price"]);
    const poison = r.body.data.rejected.find((x: any) => x.externalId === "AUD-POISON");
    expect(poison.errors[0].message).toContain("maximum");
    await settle();
    expect((await search("wombat")).body.data.products.map((p: any) => p.title)).toEqual(["Wombat Linen Cushion"]);
    expect((await search("numbat")).body.data.products.map((p: any) => p.price)).toEqual([9_999_999_999.99]);
  });

  test("PATCH /inventory: stock >= 2^31 is rejected for that item only; the others are written", async () => {
    const r = await srv.json("/api/v1/merchant/stores/greenleaf-living/inventory", {
      method: "PATCH",
      headers: greenleafOwner,
      body: { items: [{ externalId: "AUD-OK-1", stockQuantity: 7 }, { externalId: "AUD-OK-2", stockQuantity: 2 ** 31 }, { externalId: "no-such", stockQuantity: 1 }] },
    });
    expect(r.status).toBe(200);
    expect(r.body.data.updated).toBe(1);
    expect(r.body.data.rejected.map((x: any) => [x.index, x.errors[0].field])).toEqual([
      [1, "stockQuantity"],
      [2, "externalId"],
    ]);
    const [row] = await srv.db.sql<{ stock_quantity: number }[]>`SELECT stock_quantity FROM products WHERE external_id = 'AUD-OK-1'`;
    expect(row!.stock_quantity).toBe(7);
  });

  test("shipping zones, human orders and coupons refuse amounts above the maximum, naming the field", async () => {
    const zones = await srv.json("/api/v1/merchant/stores/greenleaf-living/shipping-zones", {
      method: "PUT",
      headers: greenleafOwner,
      body: { zones: [{ name: "US", countries: ["US"], currency: "USD", base: 1e13, minDays: 1, maxDays: 3 }] },
    });
    expect(zones.status).toBe(400);
    expect(zones.body.details.field).toBe("zones.0.base");
    const orders = await srv.json("/api/v1/merchant/stores/greenleaf-living/orders", {
      method: "POST",
      headers: greenleafOwner,
      body: {
        orders: [
          { externalId: "AUD-HO-1", buyer: "a@example.com", status: "delivered", currency: "USD", items: [{ title: "Lamp", quantity: 1, unitPrice: 1e15 }] },
          { externalId: "AUD-HO-2", buyer: "b@example.com", status: "delivered", currency: "USD", items: [{ title: "Lamp", quantity: 1, unitPrice: 12 }] },
        ],
      },
    });
    expect(orders.status).toBe(201);
    expect(orders.body.data.accepted).toBe(1);
    expect(orders.body.data.rejected[0]).toMatchObject({ index: 0, errors: [{ field: "items.0.unitPrice" }] });
    const coupon = await srv.json("/api/v1/merchant/stores/greenleaf-living/coupons", {
      method: "POST",
      headers: greenleafOwner,
      body: { code: "HUGE", kind: "fixed", value: 1e13 },
    });
    expect(coupon.status).toBe(400);
    expect(coupon.body.details.field).toBe("value");
  });

  test("negotiate refuses a bid below one cent (1e-9) as 400 on bidPrice", async () => {
    const r = await srv.json("/api/v1/agent/negotiate", {
      method: "POST",
      headers: key.headers,
      body: { productId: GREENLEAF, merchantSlug: "greenleaf-living", bidPrice: 1e-9, currency: "USD" },
    });
    expect(r.status).toBe(400);
    expect(r.body.details.field).toBe("bidPrice");
  });

  test("a cart whose total would pass 2^53 minor units is refused instead of summed wrongly", async () => {
    const put = await srv.json("/api/v1/merchant/stores/greenleaf-living/catalog", {
      method: "PUT",
      headers: greenleafOwner,
      body: { products: [{ externalId: "AUD-DEAR", title: "Dear Thing", price: 9_000_000_000, currency: "USD", stockQuantity: 1_000_000 }] },
    });
    expect(put.body.data.accepted).toBe(1);
    const id = put.body.data.upserted[0].id;
    const items = Array.from({ length: 100 }, () => ({ product_id: id, quantity: 10_000 }));
    const r = await srv.json("/api/v1/agent/cart", { method: "POST", headers: key.headers, body: { items } });
    expect(r.status).toBe(400);
    expect(r.body.code).toBe("INVALID_ARGUMENT");
  });
});

describe("M3: a partly captured multi-store checkout says who was paid", () => {
  test("one leg captured, one declined: the message does not claim that nothing was captured", async () => {
    const cart = await srv.json("/api/v1/agent/cart", {
      method: "POST",
      headers: key.headers,
      body: { items: [{ product_id: GREENLEAF, quantity: 1 }, { product_id: MAPLE, quantity: 1 }] },
    });
    expect(cart.status).toBe(201);
    const r = await srv.json("/api/v1/agent/checkout", {
      method: "POST",
      headers: key.headers,
      body: { cartId: cart.body.data.id, payment_methods: { "greenleaf-living": "tok_approve", "maple-pine-home": "tok_decline" } },
    });
    expect(r.body.code).toBe("PAYMENT_DECLINED");
    expect(r.body.error).not.toMatch(/; nothing was captured\.$/);
    expect(r.body.error).toContain("greenleaf-living was paid");
    expect(r.body.details).toMatchObject({ partially_captured: true, captured_merchant_slugs: ["greenleaf-living"] });
    expect(r.body.details.order_ids.length).toBe(1);
  });
});

describe("L3: the 202 buyer link opens a page", () => {
  test("GET on the approval link shows the payment with approve and refuse buttons; the button's form post comes back to the page", async () => {
    const cart = await srv.json("/api/v1/agent/cart", { method: "POST", headers: key.headers, body: { items: [{ product_id: GREENLEAF, quantity: 1 }] } });
    const r = await srv.json("/api/v1/agent/checkout", { method: "POST", headers: key.headers, body: { cartId: cart.body.data.id, payment_method: "tok_needs_approval" } });
    expect(r.status).toBe(202);
    const link = new URL(r.body.details.approval_url);
    const page = await srv.fetch(link.pathname);
    expect(page.status).toBe(200);
    expect(page.headers.get("content-type")).toContain("text/html");
    // a page whose buttons move money is never framed (clickjacking), and its forms post only to itself
    expect(page.headers.get("x-frame-options")).toBe("DENY");
    expect(page.headers.get("content-security-policy")).toContain("frame-ancestors 'none'");
    expect(page.headers.get("content-security-policy")).toContain("form-action 'self'");
    const html = await page.text();
    expect(html).toContain(`action="${link.pathname}/approve"`);
    expect(html).toContain(`action="${link.pathname}/reject"`);
    expect(html).toContain("greenleaf-living");
    const post = await srv.fetch(`${link.pathname}/approve`, { method: "POST", headers: { "content-type": "application/x-www-form-urlencoded" }, body: "", redirect: "manual" });
    expect(post.status).toBe(303);
    expect(post.headers.get("location")).toBe(link.pathname);
    expect(await (await srv.fetch(link.pathname)).text()).toContain("approved");
    expect((await srv.json(`${link.pathname.replace(/[0-9a-f]{40}$/, "0".repeat(40))}`)).status).toBe(404);
  });
});

describe("nits", () => {
  test("N1: the search query is bounded in characters: 500 emoji pass, 501 do not", async () => {
    const ok = await srv.json("/api/v1/agent/search", { method: "POST", headers: key.headers, body: { query: "😀".repeat(500) } });
    expect(ok.status).toBe(200);
    const over = await srv.json("/api/v1/agent/search", { method: "POST", headers: key.headers, body: { query: "😀".repeat(501) } });
    expect(over.status).toBe(400);
    expect(over.body.details.field).toBe("query");
  });

  test("N6: a country code that is not ISO 3166-1 alpha-2 is a 400, a real one is served", async () => {
    const est = (countryCode: string) =>
      srv.json("/api/v1/agent/shipping-estimate", { method: "POST", headers: key.headers, body: { productId: BOARD, postalCode: "10001", countryCode } });
    const zz = await est("ZZ");
    expect(zz.status).toBe(400);
    expect(zz.body.details.field).toBe("countryCode");
    expect((await est("us")).status).toBe(200);
  });

  test("N7 (A-9): a fractional recommendations limit below 1 is > 0 as the spec bounds it, and is served as one product", async () => {
    const r = await srv.json("/api/v1/agent/recommendations", { method: "POST", headers: key.headers, body: { productId: BOARD, limit: 0.5 } });
    expect(r.status).toBe(200);
    expect(r.body.data.limit).toBe(1);
    expect(r.body.data.products.length).toBeLessThanOrEqual(1);
    const zero = await srv.json("/api/v1/agent/recommendations", { method: "POST", headers: key.headers, body: { productId: BOARD, limit: 0 } });
    expect(zero.status).toBe(400);
    expect(zero.body.details.field).toBe("limit");
  });

  test("N8: the order names the same rail as the checkout reply", async () => {
    const cart = await srv.json("/api/v1/agent/cart", { method: "POST", headers: key.headers, body: { items: [{ product_id: BOARD, quantity: 1 }] } });
    const c = await srv.json("/api/v1/agent/checkout", { method: "POST", headers: key.headers, body: { cartId: cart.body.data.id } });
    expect(c.status).toBe(200);
    const o = await srv.json(`/api/v1/agent/orders/${c.body.data.order_id}`, { headers: key.headers });
    expect(o.body.data.payment_rail).toBe(c.body.data.payment_rail);
    expect(o.body.data.payment_method).toBe("MOCK");
  });
});

describe("G1: the public merchant directory", () => {
  test("GET /api/v1/merchants lists eligible merchants as MerchantSummary, paginated, without a credential, under the 30/min/IP limit", async () => {
    const r = await srv.json("/api/v1/merchants?limit=2");
    expect(r.status).toBe(200);
    expect(r.body.data.length).toBe(2);
    expect(Object.keys(r.body.data[0]).sort()).toEqual(["lastSyncAt", "name", "slug", "storeStatus", "trustScore", "verificationLevel"]);
    expect(r.body.meta).toMatchObject({ page: 1, limit: 2 });
    expect(r.body.meta.totalPages).toBe(Math.ceil(r.body.meta.total / 2));
    expect(r.headers.get("x-ratelimit-limit")).toBe("30");
    const all = await srv.json(`/api/v1/merchants?limit=100`);
    const slugs = all.body.data.map((m: any) => m.slug);
    expect(slugs).toEqual([...slugs].sort());
    // only eligible stores: every listed one has trust >= 0.3 and a verification level of BASIC or higher
    const rows = await srv.db.sql<{ slug: string }[]>`SELECT slug FROM stores WHERE trust_score >= 0.3 AND verification_level <> 'UNVERIFIED'
      AND operational_status NOT IN ('suspended', 'hidden') ORDER BY slug`;
    expect(slugs).toEqual(rows.map((x) => x.slug).sort());
    const page2 = await srv.json("/api/v1/merchants?limit=2&page=2");
    expect(page2.body.data[0].slug).toBe(slugs[2]);
    expect(Number(page2.headers.get("x-ratelimit-remaining"))).toBeLessThan(Number(r.headers.get("x-ratelimit-remaining")));
    expect((await srv.json("/api/v1/merchants?page=0")).status).toBe(400);
    const spec = await srv.json("/api/v1/openapi.json");
    expect(Object.keys(spec.body.paths)).toContain("/api/v1/merchants");
  });
});
