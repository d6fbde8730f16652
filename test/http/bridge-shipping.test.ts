/**
 * ACP and UCP at a store with more than one shipping method (summit-sports-co: "Contiguous US" and "Express"), audit
 * B F3b: a session is created without a destination (not ready, with a message naming what is missing), the
 * buyer's address puts the store's real options on the session, a picked option prices the shipping, and the
 * session completes with that shipping on the order. The address and option travel the same path as MCP
 * get_shipping_rates and the REST preview's `shipping` (the cart's selectShipping).
 */
import { beforeAll, describe, expect, test } from "bun:test";
import { ALL_SCOPES, createKey, type TestKey } from "../helpers/agents.ts";
import { useServer } from "../helpers/server.ts";

const SUMMIT = "summit-sports-co";
const ADDRESS = { name: "Ada Lovelace", line_one: "1 Main St", city: "San Francisco", state: "CA", country: "US", postal_code: "94107" };

/** ACP 2025-09-29 FulfillmentOptionShipping (spec/json-schema/schema.agentic_checkout.json). */
const ACP_SHIPPING_OPTION_FIELDS = ["type", "id", "title", "subtitle", "carrier", "earliest_delivery_time", "latest_delivery_time", "subtotal", "tax", "total"];

const srv = useServer({ seed: true });
let key: TestKey;
let product: string;

beforeAll(async () => {
  key = await createKey(srv, { scopes: ALL_SCOPES });
  const [p] = await srv.db.sql<{ id: string }[]>`
    SELECT id FROM products WHERE store_slug = ${SUMMIT} AND active AND in_stock AND (stock_quantity IS NULL OR stock_quantity >= 5) ORDER BY id LIMIT 1`;
  product = p!.id;
}, 120_000);

const send = (method: string, path: string, body?: unknown) => srv.json(`/api/v1/agent${path}`, { method, headers: key.headers, ...(body === undefined ? {} : { body }) });
const orderOf = async (orderId: string) =>
  (await srv.db.sql<{ shipping_minor: string; total_minor: string }[]>`SELECT shipping_minor, total_minor FROM orders WHERE id = ${orderId}`).map((o) => ({ shipping: Number(o.shipping_minor), total: Number(o.total_minor) }))[0];
const amount = (totals: { type: string; amount: number }[], type: string) => totals.find((t) => t.type === type)?.amount;

describe("ACP at a store with several shipping methods", () => {
  test("create → address → option → complete: not_ready_for_payment until an option is picked, then paid with its shipping", async () => {
    const created = await send("POST", "/acp/checkout_sessions", { items: [{ id: product, quantity: 1 }] });
    expect(created.status).toBe(201);
    expect(created.body).toMatchObject({ status: "not_ready_for_payment", fulfillment_options: [] });
    expect(created.body.fulfillment_option_id).toBeUndefined(); // nothing picked: left out (ACP's schema allows no null)
    expect(created.body.messages).toEqual([expect.objectContaining({ type: "error", code: "missing", param: "$.fulfillment_address" })]);
    const id = created.body.id as string;

    // An early complete is refused in ACP's words (the field to send), and nothing is paid.
    const early = await send("POST", `/acp/checkout_sessions/${id}/complete`, { payment_data: { token: "tok_approve", provider: "stripe" } });
    expect(early.status).toBe(409);
    expect(early.body).toMatchObject({ type: "invalid_request", code: "PRECONDITION_NOT_MET", param: "$.fulfillment_address" });

    const addressed = await send("POST", `/acp/checkout_sessions/${id}`, { fulfillment_address: ADDRESS });
    expect(addressed.status).toBe(200);
    expect(addressed.body.status).toBe("not_ready_for_payment");
    expect(addressed.body.fulfillment_address).toMatchObject({ city: "San Francisco" });
    const options = addressed.body.fulfillment_options as { id: string; title: string; total: number; type: string }[];
    expect(options.map((o) => o.title)).toEqual(["Contiguous US", "Express"]);
    expect(options.every((o) => o.type === "shipping" && Number.isInteger(o.total))).toBe(true);
    // Only ACP's FulfillmentOptionShipping members (its schema has additionalProperties: false; review R3-7).
    for (const o of options) expect(Object.keys(o).filter((k) => !ACP_SHIPPING_OPTION_FIELDS.includes(k))).toEqual([]);
    expect(options.map((o) => (o as { subtitle?: string }).subtitle)).toEqual([expect.stringMatching(/^summit-sports-co: \d+-\d+ business days$/), expect.stringMatching(/^summit-sports-co: /)]);
    expect(addressed.body.messages).toEqual([expect.objectContaining({ code: "missing", param: "$.fulfillment_option_id" })]);

    const express = options.find((o) => o.title === "Express")!;
    const picked = await send("POST", `/acp/checkout_sessions/${id}`, { fulfillment_option_id: express.id });
    expect(picked.status).toBe(200);
    expect(picked.body).toMatchObject({ status: "ready_for_payment", fulfillment_option_id: express.id, messages: [] });
    expect(amount(picked.body.totals, "fulfillment")).toBe(express.total);
    const read = await send("GET", `/acp/checkout_sessions/${id}`);
    expect(read.body).toMatchObject({ status: "ready_for_payment", fulfillment_option_id: express.id });

    const done = await send("POST", `/acp/checkout_sessions/${id}/complete`, { payment_data: { token: "tok_approve", provider: "stripe" } });
    expect(done.status).toBe(200);
    expect(done.body.status).toBe("completed");
    expect(await orderOf(done.body.order.id)).toEqual({ shipping: express.total, total: amount(picked.body.totals, "total")! });
  });

  test("an address and an option on the create make the session ready at once", async () => {
    const first = await send("POST", "/acp/checkout_sessions", { items: [{ id: product, quantity: 1 }], fulfillment_address: ADDRESS });
    expect(first.status).toBe(201);
    expect(first.body.status).toBe("not_ready_for_payment");
    const standard = first.body.fulfillment_options.find((o: { title: string }) => o.title === "Contiguous US");
    const r = await send("POST", "/acp/checkout_sessions", { items: [{ id: product, quantity: 1 }], fulfillment_address: ADDRESS, fulfillment_option_id: standard.id });
    expect(r.status).toBe(201);
    expect(r.body).toMatchObject({ status: "ready_for_payment", fulfillment_option_id: standard.id });
    expect(amount(r.body.totals, "fulfillment")).toBe(standard.total);
  });

  test("an option the store does not offer, or an address without a country, is 400 naming the ACP field", async () => {
    const created = await send("POST", "/acp/checkout_sessions", { items: [{ id: product, quantity: 1 }], fulfillment_address: ADDRESS });
    const bad = await send("POST", `/acp/checkout_sessions/${created.body.id}`, { fulfillment_option_id: crypto.randomUUID() });
    expect(bad.status).toBe(400);
    expect(bad.body).toMatchObject({ type: "invalid_request", code: "INVALID_ARGUMENT", param: "$.fulfillment_option_id" });
    const noCountry = await send("POST", `/acp/checkout_sessions/${created.body.id}`, { fulfillment_address: { ...ADDRESS, country: undefined } });
    expect(noCountry.status).toBe(400);
    expect(noCountry.body).toMatchObject({ code: "INVALID_ARGUMENT", param: "$.fulfillment_address" });
  });
});

describe("UCP at a store with several shipping methods", () => {
  test("create → fulfillment destination → selected option → complete: incomplete until picked, then paid with its shipping", async () => {
    const created = await send("POST", "/ucp/checkout-sessions", { line_items: [{ item: { id: product }, quantity: 1 }] });
    expect(created.status).toBe(201);
    expect(created.body.status).toBe("incomplete");
    expect(created.body.messages).toEqual([expect.objectContaining({ type: "error", code: "missing", path: "$.fulfillment.methods[0].destinations[0]", severity: "requires_buyer_input" })]);
    expect(created.body.fulfillment.methods[0]).toMatchObject({ type: "shipping", destinations: [], groups: [] });
    const id = created.body.id as string;

    const destination = { id: "home", street_address: "1 Main St", address_locality: "San Francisco", address_region: "CA", postal_code: "94107", address_country: "US" };
    const addressed = await send("PUT", `/ucp/checkout-sessions/${id}`, { fulfillment: { methods: [{ type: "shipping", destinations: [destination] }] } });
    expect(addressed.status).toBe(200);
    expect(addressed.body.status).toBe("incomplete");
    const method = addressed.body.fulfillment.methods[0];
    expect(method.destinations).toEqual([{ id: "dest_1", address_country: "US", postal_code: "94107" }]);
    expect(method.groups).toHaveLength(1);
    expect(method.groups[0]).toMatchObject({ id: `grp_${SUMMIT}`, selected_option_id: null });
    const options = method.groups[0].options as { id: string; title: string; totals: { type: string; amount: number }[] }[];
    expect(options.map((o) => o.title)).toEqual(["Contiguous US", "Express"]);
    expect(addressed.body.messages).toEqual([expect.objectContaining({ code: "missing", path: "$.fulfillment.methods[0].groups[0].selected_option_id" })]);

    const express = options.find((o) => o.title === "Express")!;
    const picked = await send("PUT", `/ucp/checkout-sessions/${id}`, {
      fulfillment: { methods: [{ type: "shipping", destinations: [destination], groups: [{ id: `grp_${SUMMIT}`, selected_option_id: express.id }] }] },
    });
    expect(picked.status).toBe(200);
    expect(picked.body).toMatchObject({ status: "ready_for_complete", messages: [] });
    expect(picked.body.fulfillment.methods[0].groups[0].selected_option_id).toBe(express.id);
    expect(amount(picked.body.totals, "fulfillment")).toBe(amount(express.totals, "total"));

    const done = await send("POST", `/ucp/checkout-sessions/${id}/complete`, { payment: { instruments: [{ handler_id: "sandbox_card", credential: { token: "tok_approve" } }] } });
    expect(done.status).toBe(200);
    expect(done.body.status).toBe("completed");
    expect(await orderOf(done.body.order.id)).toEqual({ shipping: amount(express.totals, "total")!, total: amount(picked.body.totals, "total")! });
  });

  test("an early complete is 409 PRECONDITION_NOT_MET naming the UCP field, and nothing is paid", async () => {
    const created = await send("POST", "/ucp/checkout-sessions", { line_items: [{ item: { id: product }, quantity: 1 }] });
    const r = await send("POST", `/ucp/checkout-sessions/${created.body.id}/complete`, { payment: { instruments: [{ handler_id: "sandbox_card", credential: { token: "tok_approve" } }] } });
    expect(r.status).toBe(409);
    expect(r.body.messages[0]).toMatchObject({ type: "error", code: "PRECONDITION_NOT_MET", details: { field: "fulfillment.methods[0].destinations[0]", reason: "shipping_destination_required" } });
    const cartId = (await srv.db.sql<{ cart_id: string }[]>`SELECT cart_id FROM bridge_sessions WHERE id = ${created.body.id}`)[0]!.cart_id;
    expect(await srv.db.sql`SELECT id FROM orders WHERE cart_id = ${cartId}`).toHaveLength(0);
  });
});
