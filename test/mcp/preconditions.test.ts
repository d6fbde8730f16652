/**
 * The two checkout-order codes of the spec's MCP table, reached through tools against the real server:
 * PRECONDITION_NOT_MET (a merchant with more than one shipping method, summit-sports-co in the seed, cannot be
 * previewed before get_shipping_rates records the buyer's destination and pick; a shipping change after a preview
 * asks for a new preview) and CHECKOUT_STATUS_INVALID (an operation the session's status forbids: re-preview while
 * the buyer approves, cancel while a capture awaits reconciliation). docs/checkout.md "Shipping".
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { ERROR_TABLE } from "../../actors/runtime/errors.ts";
import { ALL_SCOPES, createKey, type TestKey } from "../helpers/agents.ts";
import { startServer, type TestServer } from "../helpers/server.ts";
import { accept, connect, DEMO_PRODUCT, errorOf, structured, type Connected } from "./helpers.ts";

const SUMMIT = "summit-sports-co";
const SF = { country_code: "US", postal_code: "94107" };

let srv: TestServer;
let key: TestKey;
let demo: Connected;
let summit: Connected;
let summitProduct: string;

beforeAll(async () => {
  srv = await startServer({ seed: true, config: { RATE_LIMITS_ENABLED: false } });
  key = await createKey(srv, { scopes: ALL_SCOPES, tier: "ENTERPRISE" });
  demo = await connect(srv, { headers: key.headers, elicit: accept });
  summit = await connect(srv, { path: `/${SUMMIT}/mcp`, headers: key.headers, elicit: accept });
  const [p] = await srv.db.sql<{ id: string }[]>`
    SELECT id FROM products WHERE store_slug = ${SUMMIT} AND active AND in_stock AND (stock_quantity IS NULL OR stock_quantity >= 5) ORDER BY id LIMIT 1`;
  summitProduct = p!.id;
}, 60_000);
afterAll(async () => {
  await Promise.all([demo?.close(), summit?.close()]);
  await srv?.stop();
});

function expectCode(e: ReturnType<typeof errorOf>, code: keyof typeof ERROR_TABLE) {
  expect(e.code).toBe(code);
  expect({ remedy: e.remedy, retryable: e.retryable, scope: e.scope }).toEqual({ remedy: ERROR_TABLE[code].remedy, retryable: false, scope: "call" });
  expect(e.reference).toBe(`${srv.url}/docs/errors#${code}`);
}

async function summitCart(quantity = 1): Promise<string> {
  return structured(await summit.call("create_cart", { items: [{ product_id: summitProduct, quantity }] })).cart_id;
}

describe("a merchant with more than one shipping method", () => {
  test("cannot be previewed until get_shipping_rates records a destination and a picked option, then is paid with that option's shipping", async () => {
    const cartId = await summitCart(2);

    const noDestination = await summit.call("preview_checkout", { cart_id: cartId });
    expect(noDestination.isError).toBe(true);
    const e1 = errorOf(noDestination);
    expectCode(e1, "PRECONDITION_NOT_MET");
    expect(e1.details).toMatchObject({ required_step: "get_shipping_rates", reason: "shipping_destination_required", merchant_slugs: [SUMMIT], cart_id: cartId });
    expect(e1.remedy).toBe("refresh_state");

    const rates = structured(await summit.call("get_shipping_rates", { cart_id: cartId, ...SF }));
    expect(rates.ready_for_preview).toBe(false);
    const [m] = rates.merchants;
    expect(m).toMatchObject({ merchant_slug: SUMMIT, shippable: true, selected_option_id: null });
    expect(m.options.map((o: any) => o.name)).toEqual(["Contiguous US", "Express"]);

    const noPick = errorOf(await summit.call("preview_checkout", { cart_id: cartId }));
    expectCode(noPick, "PRECONDITION_NOT_MET");
    expect(noPick.details.required_step).toBe("get_shipping_rates");
    expect(noPick.details.reason).toBe("shipping_option_required");
    expect(noPick.details.options.map((o: any) => o.option_id)).toEqual(m.options.map((o: any) => o.option_id));

    const express = m.options.find((o: any) => o.name === "Express");
    const picked = structured(await summit.call("get_shipping_rates", { cart_id: cartId, ...SF, option_id: express.option_id }));
    expect(picked.ready_for_preview).toBe(true);
    expect(picked.merchants[0].selected_option_id).toBe(express.option_id);
    expect(picked.totals.shipping_minor).toBe(express.cost_minor);

    const pv = structured(await summit.call("preview_checkout", { cart_id: cartId }));
    expect(pv.status).toBe("READY_FOR_PAYMENT");
    expect(pv.merchants[0].shipping_option).toMatchObject({ option_id: express.option_id, name: "Express", min_days: 1, max_days: 2 });
    expect(pv.totals.shipping_minor).toBe(express.cost_minor);

    const paid = structured(await summit.call("complete_checkout", { checkout_session_id: pv.checkout_session_id, idempotency_key: crypto.randomUUID(), payment_method: "tok_approve" }));
    expect(paid.status).toBe("COMPLETED");
    const [order] = await srv.db.sql<{ shipping_minor: string }[]>`SELECT shipping_minor FROM orders WHERE id = ${paid.order_id}`;
    expect(Number(order!.shipping_minor)).toBe(express.cost_minor);
  }, 60_000);

  test("a destination it does not ship to answers shippable:false, and preview is NOT_ELIGIBLE (different path)", async () => {
    const cartId = await summitCart();
    const rates = structured(await summit.call("get_shipping_rates", { cart_id: cartId, country_code: "BR", postal_code: "01000-000" }));
    expect(rates.merchants[0]).toMatchObject({ shippable: false, options: [], selected_option_id: null });
    const e = errorOf(await summit.call("preview_checkout", { cart_id: cartId }));
    expect(e.code).toBe("NOT_ELIGIBLE");
    expect(e.remedy).toBe("different_path");
    expect(e.details).toMatchObject({ reason: "destination_not_served", merchant_slugs: [SUMMIT] });
  }, 60_000);

  test("get_shipping_rates needs a cart_id or a product_id, and refuses an option_id that is not one of the cart's options", async () => {
    const missing = errorOf(await summit.call("get_shipping_rates", { ...SF }));
    expect(missing.code).toBe("MISSING_REQUIRED_ARGUMENT");
    expect(missing.details.field).toBe("cart_id");
    const cartId = await summitCart();
    const bad = errorOf(await summit.call("get_shipping_rates", { cart_id: cartId, ...SF, option_id: crypto.randomUUID() }));
    expect(bad.code).toBe("INVALID_ARGUMENT");
    expect(bad.details.field).toBe("option_id");
  }, 60_000);

  test("the same get_shipping_rates call twice changes nothing (the cart's revision stays)", async () => {
    const cartId = await summitCart();
    const a = structured(await summit.call("get_shipping_rates", { cart_id: cartId, ...SF }));
    const b = structured(await summit.call("get_shipping_rates", { cart_id: cartId, ...SF }));
    expect(b.revision).toBe(a.revision);
  }, 60_000);
});

describe("a shipping change after the preview", () => {
  test("sends the session back to OPEN: complete_checkout is PRECONDITION_NOT_MET naming preview_checkout, without asking the human", async () => {
    const cart = structured(await demo.call("create_cart", { items: [{ product_id: DEMO_PRODUCT, quantity: 1 }] }));
    const first = structured(await demo.call("preview_checkout", { cart_id: cart.cart_id }));
    expect(first.status).toBe("READY_FOR_PAYMENT");

    // The buyer turns out to live in Alaska: a different zone, a different quote.
    const rates = structured(await demo.call("get_shipping_rates", { cart_id: cart.cart_id, country_code: "US", postal_code: "99501" }));
    expect(rates.merchants[0].options.map((o: any) => o.name)).toEqual(["Alaska & Hawaii"]);
    expect(rates.checkout_status).toBe("OPEN");

    const asked = demo.elicitations.length;
    const e = errorOf(await demo.call("complete_checkout", { checkout_session_id: first.checkout_session_id, idempotency_key: crypto.randomUUID(), payment_method: "MOCK" }));
    expectCode(e, "PRECONDITION_NOT_MET");
    expect(e.details).toMatchObject({ required_step: "preview_checkout", status: "OPEN" });
    expect(demo.elicitations.length).toBe(asked);

    const again = structured(await demo.call("preview_checkout", { cart_id: cart.cart_id }));
    expect(again.checkout_session_id).toBe(first.checkout_session_id);
    expect(again.status).toBe("READY_FOR_PAYMENT");
    expect(again.merchants[0].shipping_option.name).toBe("Alaska & Hawaii");
    expect(again.totals.shipping_minor).toBe(rates.totals.shipping_minor);
    expect(again.state_hash).not.toBe(first.state_hash);
    const paid = structured(await demo.call("complete_checkout", { checkout_session_id: again.checkout_session_id, idempotency_key: crypto.randomUUID(), payment_method: "MOCK" }));
    expect(paid.status).toBe("COMPLETED");
    expect(paid.total_minor).toBe(again.totals.total_minor);
  }, 60_000);
});

describe("an operation the session's status forbids is CHECKOUT_STATUS_INVALID naming the status", () => {
  test("re-previewing or changing the destination while the buyer approves the payment; cancelling is still allowed", async () => {
    const cart = structured(await demo.call("create_cart", { items: [{ product_id: DEMO_PRODUCT, quantity: 1 }] }));
    const pv = structured(await demo.call("preview_checkout", { cart_id: cart.cart_id }));
    const pending = structured(await demo.call("complete_checkout", { checkout_session_id: pv.checkout_session_id, idempotency_key: crypto.randomUUID(), payment_method: "tok_needs_approval" }));
    expect(pending.status).toBe("PENDING_EXTERNAL_CONFIRMATION");

    const r = await demo.call("preview_checkout", { cart_id: cart.cart_id });
    expect(r.isError).toBe(true);
    const e = errorOf(r);
    expectCode(e, "CHECKOUT_STATUS_INVALID");
    expect(e.details.status).toBe("PENDING_EXTERNAL_CONFIRMATION");

    const moved = errorOf(await demo.call("get_shipping_rates", { cart_id: cart.cart_id, country_code: "US", postal_code: "99501" }));
    expectCode(moved, "CHECKOUT_STATUS_INVALID");
    expect(moved.details.status).toBe("PENDING_EXTERNAL_CONFIRMATION");

    const canceled = structured(await demo.call("cancel_checkout", { checkout_session_id: pv.checkout_session_id }));
    expect(canceled.status).toBe("CANCELED");
  }, 60_000);

  test("cancelling while a capture awaits reconciliation (SETTLEMENT_UNKNOWN after an amount mismatch)", async () => {
    const cart = structured(await demo.call("create_cart", { items: [{ product_id: DEMO_PRODUCT, quantity: 1 }] }));
    const pv = structured(await demo.call("preview_checkout", { cart_id: cart.cart_id }));
    const mismatch = errorOf(await demo.call("complete_checkout", { checkout_session_id: pv.checkout_session_id, idempotency_key: crypto.randomUUID(), payment_method: "tok_amount_mismatch" }));
    expect(mismatch.code).toBe("PAYMENT_AMOUNT_MISMATCH");

    const e = errorOf(await demo.call("cancel_checkout", { checkout_session_id: pv.checkout_session_id }));
    expectCode(e, "CHECKOUT_STATUS_INVALID");
    expect(e.details.status).toBe("SETTLEMENT_UNKNOWN");
    const status = structured(await demo.call("get_checkout_status", { checkout_session_id: pv.checkout_session_id }));
    expect(status.checkout_status).toBe("SETTLEMENT_UNKNOWN");
  }, 60_000);
});
