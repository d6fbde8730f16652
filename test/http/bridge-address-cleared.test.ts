/**
 * Review A-8: clearing an ACP session's address (2025-09-29 `fulfillment_address: null`, 2026-04-17
 * `fulfillment_details.address: null` or `fulfillment_details: null`) cleared what the session showed but not the
 * cart's destination and quote: the session stayed ready with the option quoted for the old address, and a complete
 * paid it. Now the cart's destination and picks are dropped too (the cart's `clearShipping`): at a store that quotes
 * by destination (summit-sports-co) the session is not ready until an address is sent again, and the complete is
 * refused until then. UCP has no way to clear a destination (a `fulfillment` without one keeps the session's).
 */
import { beforeAll, describe, expect, test } from "bun:test";
import { ALL_SCOPES, createKey, type TestKey } from "../helpers/agents.ts";
import { useServer } from "../helpers/server.ts";

const ACP = "/api/v1/agent/acp/checkout_sessions";
const ADDRESS = { name: "Ada Lovelace", line_one: "1 Main St", city: "San Francisco", state: "CA", country: "US", postal_code: "94107" };
const OTHER = { name: "Ada Lovelace", line_one: "2 Elm St", city: "Boston", state: "MA", country: "US", postal_code: "02108" };

const srv = useServer({ seed: true, config: { RATE_LIMITS_ENABLED: false } });
let key: TestKey;
let product: string;

beforeAll(async () => {
  key = await createKey(srv, { scopes: ALL_SCOPES });
  const [p] = await srv.db.sql<{ id: string }[]>`
    SELECT id FROM products WHERE store_slug = 'summit-sports-co' AND active AND in_stock AND (stock_quantity IS NULL OR stock_quantity >= 5) ORDER BY id LIMIT 1`;
  product = p!.id;
}, 120_000);

function send(version: "2025-09-29" | "2026-04-17", method: string, path: string, body?: unknown) {
  const headers = { ...key.headers, "api-version": version, "idempotency-key": crypto.randomUUID() };
  return srv.json(path, { method, headers, ...(body === undefined ? {} : { body }) });
}
const fulfillment = (totals: { type: string; amount: number }[]) => totals.find((t) => t.type === "fulfillment")?.amount ?? 0;
/** A session's cart (`cs_` and the cart id without dashes; no update here moves it to a new cart). */
const cartIdOf = (sessionId: string) => sessionId.replace(/^cs_/, "").replace(/^(.{8})(.{4})(.{4})(.{4})(.{12})$/, "$1-$2-$3-$4-$5");
const cartShipping = async (sessionId: string) => {
  const cartId = cartIdOf(sessionId);
  const [row] = await srv.db.sql<{ shipping: unknown }[]>`SELECT state -> 'cart' -> 'shipping' AS shipping FROM actor_state WHERE kind = 'cart' AND id = ${cartId}`;
  return row?.shipping ?? null;
};

describe("ACP 2025-09-29: fulfillment_address null", () => {
  test("clears the cart's destination and picked option: the session is not ready, shows no option, and a complete is refused until a new address is sent", async () => {
    const v = "2025-09-29";
    const created = await send(v, "POST", ACP, { items: [{ id: product, quantity: 1 }], fulfillment_address: ADDRESS });
    expect(created.status).toBe(201);
    const id = created.body.id as string;
    const express = (created.body.fulfillment_options as { id: string; title: string }[]).find((o) => o.title === "Express")!;
    const picked = await send(v, "POST", `${ACP}/${id}`, { fulfillment_option_id: express.id });
    expect(picked.body).toMatchObject({ status: "ready_for_payment", fulfillment_option_id: express.id });
    expect(fulfillment(picked.body.totals)).toBeGreaterThan(0);
    expect(await cartShipping(id)).toMatchObject({ countryCode: "US", postalCode: "94107" });

    const cleared = await send(v, "POST", `${ACP}/${id}`, { fulfillment_address: null });
    expect(cleared.status).toBe(200);
    expect(cleared.body).toMatchObject({ status: "not_ready_for_payment", fulfillment_options: [] });
    expect("fulfillment_address" in cleared.body).toBe(false);
    expect("fulfillment_option_id" in cleared.body).toBe(false);
    expect(cleared.body.messages).toEqual([expect.objectContaining({ type: "error", code: "missing", param: "$.fulfillment_address" })]);
    expect(await cartShipping(id)).toBeNull();
    const read = await send(v, "GET", `${ACP}/${id}`);
    expect(read.body).toMatchObject({ status: "not_ready_for_payment", fulfillment_options: [] });

    const refused = await send(v, "POST", `${ACP}/${id}/complete`, { payment_data: { token: "tok_approve", provider: "stripe" } });
    expect({ status: refused.status, code: refused.body.code, param: refused.body.param }).toEqual({ status: 409, code: "PRECONDITION_NOT_MET", param: "$.fulfillment_address" });
    const [{ n }] = await srv.db.sql<{ n: number }[]>`SELECT count(*)::int AS n FROM orders WHERE cart_id = ${cartIdOf(id)}::uuid AND status <> 'canceled'`;
    expect(n).toBe(0);

    // a new address quotes again, and its pick is what the order ships on
    const again = await send(v, "POST", `${ACP}/${id}`, { fulfillment_address: OTHER });
    expect(again.body.status).toBe("not_ready_for_payment");
    const standard = (again.body.fulfillment_options as { id: string; title: string; total: number }[]).find((o) => o.title !== "Express")!;
    const repicked = await send(v, "POST", `${ACP}/${id}`, { fulfillment_option_id: standard.id });
    expect(repicked.body).toMatchObject({ status: "ready_for_payment", fulfillment_option_id: standard.id });
    const done = await send(v, "POST", `${ACP}/${id}/complete`, { payment_data: { token: "tok_approve", provider: "stripe" } });
    expect(done.body.status).toBe("completed");
    const [o] = await srv.db.sql<{ shipping_minor: string }[]>`SELECT shipping_minor FROM orders WHERE id = ${done.body.order.id}`;
    expect(Number(o!.shipping_minor)).toBe(standard.total);
  }, 60_000);
});

describe("ACP 2026-04-17: fulfillment_details.address null, and fulfillment_details null", () => {
  for (const [what, clear] of [
    ["fulfillment_details.address null", { fulfillment_details: { address: null } }],
    ["fulfillment_details null", { fulfillment_details: null }],
  ] as const) {
    test(`${what} clears the cart's destination and picked option: not_ready_for_payment naming fulfillment_details.address, no selected option, and a complete is refused`, async () => {
      const v = "2026-04-17";
      const created = await send(v, "POST", ACP, { line_items: [{ id: product }], fulfillment_details: { address: ADDRESS } });
      expect(created.status).toBe(201);
      const id = created.body.id as string;
      const express = (created.body.fulfillment_options as { id: string; title: string }[]).find((o) => o.title === "Express")!;
      const picked = await send(v, "POST", `${ACP}/${id}`, { selected_fulfillment_options: [{ type: "shipping", option_id: express.id, item_ids: [created.body.line_items[0].id] }] });
      expect(picked.body.status).toBe("ready_for_payment");
      expect(await cartShipping(id)).toMatchObject({ countryCode: "US", postalCode: "94107" });

      const cleared = await send(v, "POST", `${ACP}/${id}`, clear);
      expect(cleared.status).toBe(200);
      expect(cleared.body).toMatchObject({ status: "not_ready_for_payment", fulfillment_options: [] });
      expect(cleared.body.selected_fulfillment_options ?? []).toEqual([]);
      expect(cleared.body.fulfillment_details?.address).toBeUndefined();
      expect(cleared.body.messages).toEqual([expect.objectContaining({ type: "error", code: "missing", param: "$.fulfillment_details.address" })]);
      expect(await cartShipping(id)).toBeNull();

      const pay = { payment_data: { handler_id: "sandbox_card", instrument: { type: "card", credential: { type: "spt", token: "tok_approve" } } } };
      const refused = await send(v, "POST", `${ACP}/${id}/complete`, pay);
      expect(refused.status).toBe(409);
      expect(refused.body).toMatchObject({ code: "PRECONDITION_NOT_MET", param: "$.fulfillment_details.address" });
    }, 60_000);
  }
});
