/**
 * Helper A (session 21): a bridge session's cart is the agent's own, and takes another destination through REST (a
 * preview with `shipping`) or MCP (get_shipping_rates). Its totals and payment then follow the new destination, while
 * the ACP/UCP session kept showing its own address and the options quoted for it (helper E, session 20: "known and
 * left"), and a pick-only update priced the session's old address again, moving the cart back. Every answer reads the
 * cart, whose view carries its destination, so the change is noticed at no cost and quoted once: the session shows the
 * cart's destination and the options there, saves them, and an update prices where the cart ships. The quote is the
 * cart's own with the destination it has: it reopens no previewed checkout.
 */
import { describe, expect, test } from "bun:test";
import { ALL_SCOPES, createKey, type TestKey } from "../helpers/agents.ts";
import { summitProduct } from "../helpers/ap2.ts";
import { ACP, UCP } from "../helpers/bridge.ts";
import { useServer } from "../helpers/server.ts";

const srv = useServer({ seed: true, config: { RATE_LIMITS_ENABLED: false } });
const US = { name: "Ada Lovelace", line_one: "1 Main St", city: "San Francisco", state: "CA", country: "US", postal_code: "94107" };
const TORONTO = { country_code: "CA", postal_code: "M5V 2T6" };

type Res = { status: number; body: any };
const send = (k: TestKey, method: string, path: string, body?: unknown, headers: Record<string, string> = {}): Promise<Res> =>
  srv.json(path, { method, headers: { ...k.headers, "idempotency-key": crypto.randomUUID(), ...headers }, ...(body === undefined ? {} : { body }) });
const cartOf = async (sessionId: string) => (await srv.db.sql<{ cart_id: string }[]>`SELECT cart_id::text AS cart_id FROM bridge_sessions WHERE id = ${sessionId}`)[0]!.cart_id;
const cartState = async (cartId: string) =>
  (await srv.db.sql<{ revision: number; country: string | null; status: string | null }[]>`
    SELECT (state->'cart'->>'revision')::int AS revision, state->'cart'->'shipping'->>'countryCode' AS country, state->'session'->>'status' AS status
    FROM actor_state WHERE kind = 'cart' AND id = ${cartId}`)[0]!;
const savedDestination = async (sessionId: string) =>
  (await srv.db.sql<{ d: unknown }[]>`SELECT meta->'shipping'->'destination' AS d FROM bridge_sessions WHERE id = ${sessionId}`)[0]!.d;
/** The agent ships the session's cart to Toronto through REST: a preview with `shipping` (READY_FOR_PAYMENT). */
async function restMove(k: TestKey, sessionId: string): Promise<number> {
  const pv = await srv.json("/api/v1/agent/checkout/preview", { method: "POST", headers: k.headers, body: { cartId: await cartOf(sessionId), shipping: TORONTO } });
  expect(pv.status).toBe(200);
  return pv.body.data.totals.total_minor as number;
}
const amountOf = (totals: { type: string; amount: number }[], type: string) => totals.find((t) => t.type === type)!.amount;
const paidTotals = async (k: TestKey) => (await srv.db.sql<{ t: number }[]>`SELECT total_minor::int AS t FROM orders WHERE agent_key_id = ${k.id} AND status = 'paid'`).map((r) => r.t);

describe("the destination of a session's cart changed through REST", () => {
  test("ACP (both versions) shows the cart's destination and its options, saved once, and the read reopens nothing", async () => {
    const k = await createKey(srv, { scopes: ALL_SCOPES });
    const c = await send(k, "POST", ACP, { items: [{ id: await summitProduct(srv) }], fulfillment_address: US });
    expect(c.status).toBe(201);
    expect(c.body.fulfillment_options.length).toBe(2); // Contiguous US and Express

    const restTotal = await restMove(k, c.body.id);
    const cartId = await cartOf(c.body.id);
    const previewed = await cartState(cartId);
    expect(previewed).toMatchObject({ country: "CA", status: "READY_FOR_PAYMENT" });

    const read = await srv.json(`${ACP}/${c.body.id}`, { headers: k.headers });
    expect(read.status).toBe(200);
    expect(read.body.fulfillment_address).toEqual({ name: "Ada Lovelace", country: "CA", postal_code: "M5V 2T6" });
    expect(read.body.fulfillment_options).toHaveLength(1);
    const [canada] = read.body.fulfillment_options;
    expect(canada.title).toBe("Canada");
    expect(read.body.fulfillment_option_id).toBe(canada.id);
    expect(amountOf(read.body.totals, "fulfillment")).toBe(canada.total);
    expect(amountOf(read.body.totals, "total")).toBe(restTotal);
    expect(read.body.status).toBe("ready_for_payment");
    expect(await cartState(cartId)).toEqual(previewed); // same revision, still READY_FOR_PAYMENT
    expect(await savedDestination(c.body.id)).toEqual({ country_code: "CA", postal_code: "M5V 2T6" });

    const read26 = await srv.json(`${ACP}/${c.body.id}`, { headers: { ...k.headers, "api-version": "2026-04-17" } });
    expect(read26.body.fulfillment_details.address).toMatchObject({ country: "CA", postal_code: "M5V 2T6" });
    expect(read26.body.selected_fulfillment_options.map((o: { option_id: string }) => o.option_id)).toEqual([canada.id]);

    const done = await send(k, "POST", `${ACP}/${c.body.id}/complete`, { payment_data: { token: "tok_approve", provider: "stripe" } });
    expect(done.status).toBe(200);
    expect(done.body.status).toBe("completed");
    expect(done.body.fulfillment_address.country).toBe("CA");
    expect(await paidTotals(k)).toEqual([restTotal]);
  }, 60_000);

  test("UCP shows the cart's destination and options, and a pick-only update is priced there instead of moving the cart back", async () => {
    const k = await createKey(srv, { scopes: ALL_SCOPES });
    const c = await send(k, "POST", UCP, { line_items: [{ item: { id: await summitProduct(srv) }, quantity: 1 }], fulfillment: { methods: [{ destinations: [{ address_country: "US", postal_code: "94107" }] }] } });
    expect(c.status).toBe(201);
    expect(c.body.fulfillment.methods[0].groups[0].options).toHaveLength(2);

    await restMove(k, c.body.id);
    const read = await srv.json(`${UCP}/${c.body.id}`, { headers: k.headers });
    const method = read.body.fulfillment.methods[0];
    expect(method.destinations).toEqual([{ id: "dest_1", address_country: "CA", postal_code: "M5V 2T6" }]);
    expect(method.groups[0].options.map((o: { title: string }) => o.title)).toEqual(["Canada"]);
    const canada = method.groups[0].options[0].id as string;
    expect(method.groups[0].selected_option_id).toBe(canada);

    const picked = await send(k, "PUT", `${UCP}/${c.body.id}`, { fulfillment: { methods: [{ groups: [{ selected_option_id: canada }] }] } });
    expect(picked.status).toBe(200);
    expect(picked.body.status).toBe("ready_for_complete");
    expect(picked.body.fulfillment.methods[0].destinations[0].address_country).toBe("CA");
    expect((await cartState(await cartOf(c.body.id))).country).toBe("CA");
  }, 60_000);

  test("a session whose cart kept its destination is answered as before, with no quote saved", async () => {
    const k = await createKey(srv, { scopes: ALL_SCOPES });
    const c = await send(k, "POST", ACP, { items: [{ id: await summitProduct(srv) }], fulfillment_address: US });
    const cartId = await cartOf(c.body.id);
    const before = await cartState(cartId);
    const read = await srv.json(`${ACP}/${c.body.id}`, { headers: k.headers });
    expect(read.body.fulfillment_address).toEqual(US);
    expect(read.body.fulfillment_options).toHaveLength(2);
    expect(await cartState(cartId)).toEqual(before);
  }, 60_000);
});
