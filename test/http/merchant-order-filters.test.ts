/**
 * The merchant's order and refund lists (review R1-L2, R1-L3): paging values are integers, said in the house form
 * naming the field; `partly_refunded` (old name `partially_refunded`, a status no order has any more) lists the orders
 * with part of their capture refunded, whatever their fulfilment status, in the REST list and the dashboard's filter.
 */
import { beforeAll, describe, expect, test } from "bun:test";
import { ALL_SCOPES, createKey, type TestKey } from "../helpers/agents.ts";
import { dashboardSession } from "../helpers/dashboard.ts";
import { useServer } from "../helpers/server.ts";

const LEAF = "greenleaf-living";

const srv = useServer({ seed: true, config: { RATE_LIMITS_ENABLED: false }, admin: true });
let key: TestKey;

beforeAll(async () => {
  key = await createKey(srv, { tier: "ENTERPRISE", scopes: ALL_SCOPES });
}, 120_000);

type Res = { status: number; body: any };
const asAdmin = () => ({ authorization: `Bearer ${srv.admin}` });
const merchantGet = (path: string, slug = "demo-store"): Promise<Res> => srv.json(`/api/v1/merchant/stores/${slug}${path}`, { headers: asAdmin() });

describe("paging values of the merchant's lists are integers (R1-L3)", () => {
  for (const list of ["/refunds", "/orders"]) {
    for (const [field, value] of [["limit", "1.5"], ["offset", "0.5"]] as const) {
      test(`GET ${list}?${field}=${value} is 400 validation_error naming the field`, async () => {
        const r = await merchantGet(`${list}?${field}=${value}`);
        expect(r.status).toBe(400);
        expect(r.body).toMatchObject({ success: false, code: "validation_error" });
        const [min, max] = field === "limit" ? [1, 200] : [0, 1_000_000];
        expect(r.body.error).toBe(`Invalid query field '${field}': must be an integer from ${min} to ${max} (got "${value}")`);
        expect(r.body.details).toMatchObject({ field, minimum: min, maximum: max });
      });
    }
    test(`GET ${list}?limit=2&offset=1 pages as before`, async () => {
      const r = await merchantGet(`${list}?limit=2&offset=1`);
      expect(r.status).toBe(200);
      const meta = list === "/orders" ? r.body.data : r.body.meta;
      expect(meta).toMatchObject({ limit: 2, offset: 1 });
    });
  }
});

describe("the partly refunded filter (R1-L2)", () => {
  test("partly_refunded lists a paid order with part of its capture refunded, and neither a fully refunded nor an unrefunded one", async () => {
    // greenleaf-living: its owner logs in to the dashboard below.
    const [p] = await srv.db.sql<{ id: string }[]>`SELECT id FROM products WHERE store_slug = ${LEAF} AND active AND in_stock AND stock_quantity IS NULL
      AND jsonb_array_length(COALESCE(variants, '[]'::jsonb)) = 0 ORDER BY external_id LIMIT 1`;
    const buy = async (): Promise<string> => {
      const c = await srv.json("/api/v1/agent/cart", { method: "POST", headers: key.headers, body: { items: [{ product_id: p!.id, quantity: 1 }] } });
      const r = await srv.json("/api/v1/agent/checkout", { method: "POST", headers: key.headers, body: { cartId: c.body.data.id, payment_method: "tok_approve" } });
      expect(r.status).toBe(200);
      return r.body.data.order_id;
    };
    const refund = async (orderId: string, amount?: number) => {
      const asked = await srv.json(`/api/v1/agent/orders/${orderId}/refund`, { method: "POST", headers: key.headers, body: amount === undefined ? {} : { amount } });
      expect(asked.status).toBe(201);
      const ok = await srv.json(`/api/v1/merchant/stores/${LEAF}/refunds/${asked.body.data.refund_id}/approve`, { method: "POST", headers: asAdmin() });
      expect(ok.body.data.status).toBe("REFUNDED");
    };
    const partly = await buy();
    const full = await buy();
    const none = await buy();
    await refund(partly, 100);
    await refund(full);

    for (const name of ["partly_refunded", "partially_refunded"]) {
      const r = await merchantGet(`/orders?status=${name}&limit=200`, LEAF);
      expect(r.status).toBe(200);
      const ids = (r.body.data.items as { id: string; status: string; refundedMinor: number }[]).map((o) => o.id);
      expect(ids).toContain(partly);
      expect(ids).not.toContain(full);
      expect(ids).not.toContain(none);
      expect(r.body.data.items.find((o: { id: string }) => o.id === partly)).toMatchObject({ status: "paid", refundedMinor: 100 });
    }
    const bad = await merchantGet("/orders?status=partly", LEAF);
    expect(bad.status).toBe(400);
    expect(bad.body.details.allowed).toContain("partly_refunded");

    const d = await dashboardSession(srv, LEAF);
    const page = await srv.fetch(`/dashboard/s/${LEAF}/orders?status=partly_refunded`, { headers: { cookie: d.cookie } });
    expect(page.status).toBe(200);
    const html = await page.text();
    expect(html).toContain(`<option value="partly_refunded" selected>partly refunded</option>`);
    expect(html).not.toContain(`value="partially_refunded"`);
    expect(html).toContain(partly.slice(0, 8));
    expect(html).not.toContain(full.slice(0, 8));
  }, 60_000);
});
