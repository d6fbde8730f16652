/**
 * Audit W-7: a key the merchant write routes do not know (a misspelling), at any level of the body, is 400
 * validation_error naming it (`details.field`, `details.allowed`), and nothing is written, as PUT
 * /admin/search/settings does since audit U MED-4. The gateway's TypeBox normaliser dropped such keys before
 * validation, so a misspelt key was a silent 200 and the replacing write stored other terms than the merchant sent:
 * a single-use coupon became unlimited (`usageLimt`), a 14-day return window became the 30-day default
 * (`returnWindow`), a zone's free-shipping threshold was lost (`freeAbove`), `removeIds` removed nothing.
 * (W's cases for the merchant routes of gateway/rest/merchant-*.ts; its rotate-secret case is the webhook routes'.)
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { login, merchantLogin } from "../helpers/agents.ts";
import { startServer, type TestServer } from "../helpers/server.ts";

const SLUG = "greenleaf-living";
let srv: TestServer;
let owner: Record<string, string>;

beforeAll(async () => {
  srv = await startServer({ seed: true, config: { RATE_LIMITS_ENABLED: false } });
  owner = { authorization: `Bearer ${await login(srv, merchantLogin(SLUG))}` };
}, 60_000);
afterAll(async () => {
  await srv?.stop();
});

const call = (method: string, path: string, body: unknown, headers = owner) => srv.json(`/api/v1/merchant/stores/${SLUG}/${path}`, { method, headers, body });

describe("a misspelt key on a merchant write: 400 naming it, nothing written", () => {
  test("POST /coupons {usageLimt: 1}: 400 on usageLimt with the allowed keys, no coupon (it was created with no usage limit)", async () => {
    const r = await call("POST", "coupons", { code: "W7ONCE", kind: "fixed", value: 5, usageLimt: 1 });
    expect(r.status).toBe(400);
    expect(r.body).toMatchObject({ success: false, code: "validation_error", details: { location: "body", field: "usageLimt" } });
    expect(r.body.details.allowed).toEqual(["code", "kind", "value", "minSpend", "expiresAt", "usageLimit"]);
    const [n] = await srv.db.sql<{ n: number }[]>`SELECT count(*)::int AS n FROM coupons WHERE store_slug = ${SLUG} AND code = 'W7ONCE'`;
    expect(n!.n).toBe(0);
  });

  test("PUT /policies {returnWindow: 7}: 400 on returnWindow, the 14-day window kept (it became the 30-day default)", async () => {
    const set = await call("PUT", "policies", { acceptsReturns: true, returnWindowDays: 14 });
    expect(set.status).toBe(200);
    const r = await call("PUT", "policies", { acceptsReturns: true, returnWindow: 7 });
    expect(r.status).toBe(400);
    expect(r.body).toMatchObject({ success: false, code: "validation_error", details: { field: "returnWindow" } });
    const [row] = await srv.db.sql<{ policies: { returnWindowDays?: number } }[]>`SELECT policies FROM stores WHERE slug = ${SLUG}`;
    expect(row!.policies.returnWindowDays).toBe(14);
  });

  test("PUT /policies with a misspelt negotiation rule: 400 on negotiation.<key>", async () => {
    const r = await call("PUT", "policies", { acceptsReturns: true, negotiation: { enabled: true, floorPercent: 80, autoAcceptPercent: 95, maxRoundz: 3 } });
    expect(r.status).toBe(400);
    expect(r.body).toMatchObject({ code: "validation_error", details: { field: "negotiation.maxRoundz" } });
  });

  test("PUT /shipping-zones with a zone's {freeAbove: 50}: 400 on zones.0.freeAbove, the zones unchanged", async () => {
    const before = await srv.db.sql`SELECT name, free_over_minor FROM shipping_zones WHERE store_slug = ${SLUG} ORDER BY name`;
    const r = await call("PUT", "shipping-zones", { zones: [{ name: "US", countries: ["US"], currency: "USD", base: 5, minDays: 1, maxDays: 3, freeAbove: 50 }] });
    expect(r.status).toBe(400);
    expect(r.body).toMatchObject({ success: false, code: "validation_error", details: { field: "zones.0.freeAbove" } });
    expect(await srv.db.sql`SELECT name, free_over_minor FROM shipping_zones WHERE store_slug = ${SLUG} ORDER BY name`).toEqual(before);
  });

  test("PUT /catalog {products: [], removeIds: [...]}: 400 on removeIds (nothing was removed, answered 200)", async () => {
    const r = await call("PUT", "catalog", { products: [], removeIds: ["x"] });
    expect(r.status).toBe(400);
    expect(r.body).toMatchObject({ code: "validation_error", details: { field: "removeIds", allowed: ["products", "remove"] } });
  });

  test("PATCH /inventory {items, dryRun: true}: 400 on dryRun, nothing applied", async () => {
    const put = await call("PUT", "catalog", { products: [{ externalId: "W7-INV", title: "W7 mug", price: 9, currency: "USD", stockQuantity: 3 }] });
    expect(put.body.data.accepted).toBe(1);
    const r = await call("PATCH", "inventory", { items: [{ externalId: "W7-INV", stockQuantity: 0 }], dryRun: true });
    expect(r.status).toBe(400);
    expect(r.body).toMatchObject({ code: "validation_error", details: { field: "dryRun" } });
    const [p] = await srv.db.sql<{ stock_quantity: number }[]>`SELECT stock_quantity FROM products WHERE store_slug = ${SLUG} AND external_id = 'W7-INV'`;
    expect(p!.stock_quantity).toBe(3);
  });

  test("POST /orders, PUT /payment-methods, PUT /mcp-tools: an extra top-level key is 400 naming it", async () => {
    const o = await call("POST", "orders", { orders: [{}], source: "shopify" });
    expect(o.status).toBe(400);
    expect(o.body.details.field).toBe("source");
    const pm = await call("PUT", "payment-methods", { methods: ["card"], method: "x402" });
    expect(pm.status).toBe(400);
    expect(pm.body.details.field).toBe("method");
    const mcp = await call("PUT", "mcp-tools", { enabled: null, disabled: ["search_products"] });
    expect(mcp.status).toBe(400);
    expect(mcp.body.details.field).toBe("disabled");
    // a key that is also a property of every JS object is unknown too
    const proto = await call("POST", "coupons", { code: "W7PROTO", kind: "fixed", value: 5, constructor: 1 });
    expect(proto.status).toBe(400);
    expect(proto.body.details.field).toBe("constructor");
  });

  test("the keys each route has still pass; item keys stay per-item rejections (not a 400)", async () => {
    const c = await call("POST", "coupons", { code: "W7OK", kind: "percent", value: 10, minSpend: 0, usageLimit: 1, expiresAt: "2030-01-01T00:00:00Z" });
    expect(c.status).toBe(201);
    const cat = await call("PUT", "catalog", { products: [{ externalId: "W7-ITEM", title: "t", price: 1, currency: "USD", colour: "red" }], remove: [] });
    expect(cat.status).toBe(200);
    expect(cat.body.data.rejected[0].errors[0].field).toBe("colour");
    const z = await call("PUT", "shipping-zones", { zones: [{ name: "US", countries: ["US"], currency: "USD", base: 5, freeOver: null, minDays: 1, maxDays: 3 }] });
    expect(z.status).toBe(200);
  });

  test("without a session the answer is 401 whatever the body's keys", async () => {
    const r = await call("POST", "coupons", { code: "W7NOAUTH", kind: "fixed", value: 5, usageLimt: 1 }, {});
    expect(r.status).toBe(401);
  });
});
