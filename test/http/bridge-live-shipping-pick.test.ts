/**
 * An ACP/UCP session's shown shipping pick is the cart's, through HTTP against the real server (helper E, session
 * 20). A session's cart is the agent's own and takes a shipping pick through REST too (a preview with `shipping`,
 * MCP get_shipping_rates): the cart is the one writer of the pick, and its totals and payment follow it. The session
 * kept showing the pick recorded by its own last update (UCP `selected_option_id`, ACP `fulfillment_option_id` /
 * 2026-04-17 `selected_fulfillment_options`) beside totals carrying the other option's cost, and the complete's answer
 * said the cheap option was selected while the dear one was charged. A read now shows each store's pick as the cart
 * has it, so the selected option's cost is the `fulfillment` total the payment charges, to the minor unit.
 */
import { describe, expect, test } from "bun:test";
import { ALL_SCOPES, createKey, type TestKey } from "../helpers/agents.ts";
import { summitProduct } from "../helpers/ap2.ts";
import { ACP, UCP } from "../helpers/bridge.ts";
import { useServer } from "../helpers/server.ts";

const srv = useServer({ seed: true, config: { RATE_LIMITS_ENABLED: false } });
const ADDRESS = { name: "Ada Lovelace", line_one: "1 Main St", city: "San Francisco", state: "CA", country: "US", postal_code: "94107" };

const send = (k: TestKey, method: string, path: string, body?: unknown, headers: Record<string, string> = {}) =>
  srv.json(path, { method, headers: { ...k.headers, "idempotency-key": crypto.randomUUID(), ...headers }, ...(body === undefined ? {} : { body }) });
/** The cart behind a bridge session (its id is the session id's hex). */
const cartOf = async (sessionId: string) => (await srv.db.sql<{ cart_id: string }[]>`SELECT cart_id::text AS cart_id FROM bridge_sessions WHERE id = ${sessionId}`)[0]!.cart_id;
/** The agent picks `optionId` on the session's cart through REST. */
async function restPick(k: TestKey, sessionId: string, optionId: string): Promise<number> {
  const pv = await srv.json("/api/v1/agent/checkout/preview", { method: "POST", headers: k.headers, body: { cartId: await cartOf(sessionId), shipping: { country_code: "US", postal_code: "94107", option_id: optionId } } });
  expect(pv.status).toBe(200);
  return pv.body.data.totals.total_minor as number;
}
const paidTotal = async (k: TestKey) => (await srv.db.sql<{ t: number }[]>`SELECT total_minor::int AS t FROM orders WHERE agent_key_id = ${k.id} AND status = 'paid'`).map((r) => r.t);
const amountOf = (totals: { type: string; amount: number }[], type: string) => totals.find((t) => t.type === type)!.amount;

describe("a shipping pick made on the session's cart through REST", () => {
  test("UCP shows the cart's pick (selected_option_id and its cost = the fulfillment total) on a read and in the complete's answer", async () => {
    const k = await createKey(srv, { scopes: ALL_SCOPES });
    const product = await summitProduct(srv);
    const c = await send(k, "POST", UCP, { line_items: [{ item: { id: product }, quantity: 1 }], fulfillment: { methods: [{ destinations: [{ address_country: "US", postal_code: "94107" }] }] } });
    expect(c.status).toBe(201);
    const options = c.body.fulfillment.methods[0].groups[0].options as { id: string; totals: { type: string; amount: number }[] }[];
    const [cheap, dear] = [...options].sort((a, b) => amountOf(a.totals, "total") - amountOf(b.totals, "total"));
    expect(amountOf(dear!.totals, "total")).toBeGreaterThan(amountOf(cheap!.totals, "total"));
    const picked = await send(k, "PUT", `${UCP}/${c.body.id}`, { fulfillment: { methods: [{ groups: [{ selected_option_id: cheap!.id }] }] } });
    expect(picked.body.fulfillment.methods[0].groups[0].selected_option_id).toBe(cheap!.id);

    const restTotal = await restPick(k, c.body.id, dear!.id);
    const read = await srv.json(`${UCP}/${c.body.id}`, { headers: k.headers });
    expect(read.status).toBe(200);
    expect(read.body.fulfillment.methods[0].groups[0].selected_option_id).toBe(dear!.id);
    expect(amountOf(read.body.totals, "fulfillment")).toBe(amountOf(dear!.totals, "total"));
    expect(amountOf(read.body.totals, "total")).toBe(restTotal);

    const done = await send(k, "POST", `${UCP}/${c.body.id}/complete`, { payment: { instruments: [{ handler_id: "sandbox_card", credential: { token: "tok_approve" } }] } });
    expect(done.status).toBe(200);
    expect(done.body.status).toBe("completed");
    expect(done.body.fulfillment.methods[0].groups[0].selected_option_id).toBe(dear!.id);
    expect(await paidTotal(k)).toEqual([amountOf(done.body.totals, "total")]);
  }, 60_000);

  test("ACP 2025-09-29 and 2026-04-17 show the cart's pick (fulfillment_option_id, selected_fulfillment_options), and the complete charges that total", async () => {
    const k = await createKey(srv, { scopes: ALL_SCOPES });
    const product = await summitProduct(srv);
    const c = await send(k, "POST", ACP, { items: [{ id: product, quantity: 1 }], fulfillment_address: ADDRESS });
    expect(c.status).toBe(201);
    const options = c.body.fulfillment_options as { id: string; total: number }[];
    const [cheap, dear] = [...options].sort((a, b) => a.total - b.total);
    const picked = await send(k, "POST", `${ACP}/${c.body.id}`, { fulfillment_option_id: cheap!.id });
    expect(picked.body.fulfillment_option_id).toBe(cheap!.id);

    const restTotal = await restPick(k, c.body.id, dear!.id);
    const read = await srv.json(`${ACP}/${c.body.id}`, { headers: k.headers });
    expect(read.body.fulfillment_option_id).toBe(dear!.id);
    expect(amountOf(read.body.totals, "fulfillment")).toBe(dear!.total);
    expect(amountOf(read.body.totals, "total")).toBe(restTotal);
    const read26 = await srv.json(`${ACP}/${c.body.id}`, { headers: { ...k.headers, "api-version": "2026-04-17" } });
    expect(read26.body.selected_fulfillment_options.map((o: { option_id: string }) => o.option_id)).toEqual([dear!.id]);

    const done = await send(k, "POST", `${ACP}/${c.body.id}/complete`, { payment_data: { token: "tok_approve", provider: "stripe" } });
    expect(done.status).toBe(200);
    expect(done.body.status).toBe("completed");
    expect(done.body.fulfillment_option_id).toBe(dear!.id);
    expect(await paidTotal(k)).toEqual([amountOf(done.body.totals, "total")]);
  }, 60_000);

  test("a pick through the session itself is shown as before", async () => {
    const k = await createKey(srv, { scopes: ALL_SCOPES });
    const product = await summitProduct(srv);
    const c = await send(k, "POST", ACP, { items: [{ id: product, quantity: 1 }], fulfillment_address: ADDRESS });
    const [, dear] = [...(c.body.fulfillment_options as { id: string; total: number }[])].sort((a, b) => a.total - b.total);
    await send(k, "POST", `${ACP}/${c.body.id}`, { fulfillment_option_id: dear!.id });
    const read = await srv.json(`${ACP}/${c.body.id}`, { headers: k.headers });
    expect(read.body.fulfillment_option_id).toBe(dear!.id);
    expect(amountOf(read.body.totals, "fulfillment")).toBe(dear!.total);
  }, 60_000);
});
