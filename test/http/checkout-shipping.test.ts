/**
 * The REST side of the shipping precondition (docs/checkout.md "Shipping"): `shipping` on POST /agent/checkout/preview
 * and POST /agent/checkout records the buyer's destination and pick; a merchant with more than one shipping method
 * (summit-sports-co in the seed) answers 409 PRECONDITION_NOT_MET until it has them. Plus 409 CHECKOUT_STATUS_INVALID
 * for a preview while the buyer approves a payment.
 */
import { beforeAll, describe, expect, test } from "bun:test";
import { ALL_SCOPES, createKey, type TestKey } from "../helpers/agents.ts";
import { useServer } from "../helpers/server.ts";

const SUMMIT = "summit-sports-co";
const DEMO_PRODUCT = "f8ec3e58-f9ca-55ec-8c27-4eb42af7009e"; // DS-0024, 97.00, no variants (audit A2-F13: a variant product needs variant_id)
const SF = { country_code: "US", postal_code: "94107" };

const srv = useServer({ seed: true });
let key: TestKey;
let summitProduct: string;

beforeAll(async () => {
  key = await createKey(srv, { scopes: ALL_SCOPES });
  const [p] = await srv.db.sql<{ id: string }[]>`
    SELECT id FROM products WHERE store_slug = ${SUMMIT} AND active AND in_stock AND (stock_quantity IS NULL OR stock_quantity >= 5) ORDER BY id LIMIT 1`;
  summitProduct = p!.id;
}, 120_000);

async function cart(productId: string): Promise<string> {
  const r = await srv.json("/api/v1/agent/cart", { method: "POST", headers: key.headers, body: { items: [{ product_id: productId, quantity: 1 }] } });
  expect(r.status).toBe(201);
  return r.body.data.id;
}
const preview = (body: Record<string, unknown>) => srv.json("/api/v1/agent/checkout/preview", { method: "POST", headers: key.headers, body });
const checkout = (body: Record<string, unknown>) => srv.json("/api/v1/agent/checkout", { method: "POST", headers: key.headers, body });

describe("a merchant with more than one shipping method over REST", () => {
  test("a preview without shipping is 409 PRECONDITION_NOT_MET naming the step; with a destination it lists the options; with an option it previews", async () => {
    const id = await cart(summitProduct);
    const bare = await preview({ cartId: id });
    expect(bare.status).toBe(409);
    expect(bare.body).toMatchObject({ success: false, code: "PRECONDITION_NOT_MET", details: { required_step: "get_shipping_rates", reason: "shipping_destination_required", merchant_slugs: [SUMMIT] } });

    const noPick = await preview({ cartId: id, shipping: SF });
    expect(noPick.status).toBe(409);
    expect(noPick.body.details.reason).toBe("shipping_option_required");
    const options = noPick.body.details.options as { option_id: string; name: string; cost_minor: number }[];
    expect(options.map((o) => o.name)).toEqual(["Contiguous US", "Express"]);

    const ok = await preview({ cartId: id, shipping: { ...SF, option_id: options[0]!.option_id } });
    expect(ok.status).toBe(200);
    expect(ok.body.data.status).toBe("READY_FOR_PAYMENT");
    expect(ok.body.data.merchants[0].shipping_option.name).toBe("Contiguous US");
    expect(ok.body.data.totals.shipping_minor).toBe(options[0]!.cost_minor);

    const read = await srv.json(`/api/v1/agent/cart/${id}`, { headers: key.headers });
    expect(read.body.data.shipping).toEqual({ country_code: "US", postal_code: "94107", selected_options: { [SUMMIT]: options[0]!.option_id } });
    expect(read.body.data.checkout_status).toBe("READY_FOR_PAYMENT");
  });

  test("the one-call checkout without shipping is 409 PRECONDITION_NOT_MET and nothing is held; with shipping and an option it completes", async () => {
    const id = await cart(summitProduct);
    const refused = await checkout({ cartId: id, payment_method: "tok_approve" });
    expect(refused.status).toBe(409);
    expect(refused.body.code).toBe("PRECONDITION_NOT_MET");
    expect(await srv.db.sql`SELECT id FROM orders WHERE cart_id = ${id}`).toHaveLength(0);

    // Without a destination there are no options to list yet; a preview with one lists them.
    expect(refused.body.details.options).toBeUndefined();
    const listed = await preview({ cartId: id, shipping: SF });
    const express = listed.body.details.options.find((o: { name: string }) => o.name === "Express");
    const done = await checkout({ cartId: id, payment_method: "tok_approve", shipping: { ...SF, option_id: express.option_id } });
    expect(done.status).toBe(200);
    expect(done.body.data.status).toBe("COMPLETED");
    const [o] = await srv.db.sql<{ id: string; shipping_minor: string }[]>`SELECT id, shipping_minor FROM orders WHERE cart_id = ${id}`;
    expect(Number(o!.shipping_minor)).toBe(express.cost_minor);
    // the merchant learns how and where it ships: the order's created history carries the approved pick
    const [created] = await srv.db.sql<{ data: { shipping: unknown } }[]>`SELECT data FROM order_events WHERE order_id = ${o!.id} AND type = 'created'`;
    expect(created!.data.shipping).toEqual({ optionId: express.option_id, name: "Express", countryCode: "US", postalCode: "94107" });
  });

  test("shipping with a checkout_session_id is 400: a previewed session pays what was previewed", async () => {
    const id = await cart(DEMO_PRODUCT);
    const pv = await preview({ cartId: id });
    const r = await checkout({ cartId: id, checkout_session_id: pv.body.data.checkout_session_id, shipping: SF });
    expect(r.status).toBe(400);
    expect(r.body.details.field).toBe("shipping");
  });

  test("the OpenAPI description documents the shipping field and the 409 code", async () => {
    const doc = await srv.json("/api/v1/openapi.json");
    const op = doc.body.paths["/api/v1/agent/checkout/preview"].post;
    expect(JSON.stringify(op.requestBody)).toContain("option_id");
    expect(op.description).toContain("PRECONDITION_NOT_MET");
  });
});

describe("a merchant with one shipping method keeps the old behaviour", () => {
  test("a demo-store cart previews without shipping, quoted from the store's domestic zone", async () => {
    const pv = await preview({ cartId: await cart(DEMO_PRODUCT) });
    expect(pv.status).toBe(200);
    expect(pv.body.data.merchants[0]).toMatchObject({ shipping_quoted: true, shipping_option: null });
  });
});

describe("an operation the session's status forbids over REST", () => {
  test("a preview while the buyer approves the payment is 409 CHECKOUT_STATUS_INVALID naming the status", async () => {
    const id = await cart(DEMO_PRODUCT);
    const pending = await checkout({ cartId: id, payment_method: "tok_needs_approval", idempotency_key: crypto.randomUUID() });
    expect(pending.status).toBe(202);
    const r = await preview({ cartId: id });
    expect(r.status).toBe(409);
    expect(r.body).toMatchObject({ success: false, code: "CHECKOUT_STATUS_INVALID", details: { status: "PENDING_EXTERNAL_CONFIRMATION" } });
  });
});

describe("a shipping change after a merchant of the checkout is paid", () => {
  test("is 409 CHECKOUT_STATUS_INVALID naming the paid merchant, and the same choice again is still accepted", async () => {
    const r = await srv.json("/api/v1/agent/cart", {
      method: "POST",
      headers: key.headers,
      body: { items: [{ product_id: DEMO_PRODUCT, quantity: 1 }, { product_id: summitProduct, quantity: 1 }] },
    });
    expect(r.status).toBe(201);
    const id = r.body.data.id as string;
    const listed = await preview({ cartId: id, shipping: SF });
    const options = listed.body.details.options as { option_id: string; name: string }[];
    const standard = options.find((o) => o.name === "Contiguous US")!;
    const express = options.find((o) => o.name === "Express")!;
    const pv = await preview({ cartId: id, shipping: { ...SF, option_id: standard.option_id } });
    expect(pv.status).toBe(200);

    // the demo store's leg is captured, summit's is declined: the session waits for a retry of the unpaid leg
    const partial = await checkout({
      cartId: id,
      checkout_session_id: pv.body.data.checkout_session_id,
      idempotency_key: crypto.randomUUID(),
      payment_methods: { "demo-store": "MOCK", [SUMMIT]: "tok_decline" },
    });
    expect(partial.status).toBeGreaterThanOrEqual(400);
    const read = await srv.json(`/api/v1/agent/cart/${id}`, { headers: key.headers });
    expect(read.body.data.checkout_status).toBe("READY_FOR_PAYMENT");

    const moved = await preview({ cartId: id, shipping: { ...SF, option_id: express.option_id } });
    expect(moved.status).toBe(409);
    expect(moved.body).toMatchObject({ success: false, code: "CHECKOUT_STATUS_INVALID", details: { status: "READY_FOR_PAYMENT", reason: "merchant_already_paid", merchant_slugs: ["demo-store"] } });

    const same = await preview({ cartId: id, shipping: { ...SF, option_id: standard.option_id } });
    expect(same.status).toBe(200);
    expect(same.body.data.merchants.find((m: { merchant_slug: string }) => m.merchant_slug === SUMMIT)?.shipping_option.name).toBe("Contiguous US");
  });
});

describe("a merchant paid in a session that then ended", () => {
  test("is not charged again by the cart's next session: its captured leg and order carry over", async () => {
    const r = await srv.json("/api/v1/agent/cart", {
      method: "POST",
      headers: key.headers,
      body: { items: [{ product_id: DEMO_PRODUCT, quantity: 1 }, { product_id: summitProduct, quantity: 1 }] },
    });
    const id = r.body.data.id as string;
    const listed = await preview({ cartId: id, shipping: SF });
    const standard = (listed.body.details.options as { option_id: string; name: string }[]).find((o) => o.name === "Contiguous US")!;
    const first = await preview({ cartId: id, shipping: { ...SF, option_id: standard.option_id } });
    const firstSession = first.body.data.checkout_session_id as string;
    await checkout({ cartId: id, checkout_session_id: firstSession, idempotency_key: crypto.randomUUID(), payment_methods: { "demo-store": "MOCK", [SUMMIT]: "tok_decline" } });
    const canceled = await srv.json(`/api/v1/agent/checkout/${firstSession}/cancel`, { method: "POST", headers: key.headers, body: {} });
    expect(canceled.status).toBe(200);
    expect(canceled.body.data.status).toBe("CANCELED");

    const second = await preview({ cartId: id });
    expect(second.status).toBe(200);
    expect(second.body.data.checkout_session_id).not.toBe(firstSession);
    const done = await checkout({ cartId: id, checkout_session_id: second.body.data.checkout_session_id, idempotency_key: crypto.randomUUID(), payment_methods: { [SUMMIT]: "tok_approve" } });
    expect(done.status).toBe(200);
    expect(done.body.data.status).toBe("COMPLETED");

    const orders = await srv.db.sql<{ store_slug: string; status: string }[]>`SELECT store_slug, status FROM orders WHERE cart_id = ${id} ORDER BY store_slug`;
    expect(orders.filter((o) => o.store_slug === "demo-store")).toEqual([{ store_slug: "demo-store", status: "paid" }]);
    expect(orders.filter((o) => o.store_slug === SUMMIT && o.status === "paid")).toHaveLength(1);
    const captures = await srv.db.sql<{ store_id: string }[]>`SELECT store_id FROM sandbox_ledger_intents WHERE intent_id IN (
      SELECT data->>'intent_id' FROM order_events WHERE order_id IN (SELECT id FROM orders WHERE cart_id = ${id})) AND capture_ref IS NOT NULL`;
    expect(captures.filter((c) => c.store_id === "demo-store")).toHaveLength(1);
  });
});

describe("a store's zone in another currency", () => {
  test("neither prices a cart nor makes the store ask for a shipping choice", async () => {
    const before = await preview({ cartId: await cart(DEMO_PRODUCT) });
    expect(before.status).toBe(200);
    const [store] = await srv.db.sql<{ country: string }[]>`SELECT country FROM stores WHERE slug = 'demo-store'`;
    await srv.db.sql`INSERT INTO shipping_zones (store_slug, name, countries, currency, base_minor, min_days, max_days)
      VALUES ('demo-store', 'Cheap in another currency', ${[store!.country]}, 'JPY', 1, 1, 2)`;
    try {
      const after = await preview({ cartId: await cart(DEMO_PRODUCT) });
      expect(after.status).toBe(200);
      expect(after.body.data.totals.shipping_minor).toBe(before.body.data.totals.shipping_minor);
    } finally {
      await srv.db.sql`DELETE FROM shipping_zones WHERE store_slug = 'demo-store' AND name = 'Cheap in another currency'`;
    }
  });
});
