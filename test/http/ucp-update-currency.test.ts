/**
 * UCP update's `currency` (helper D, session 21). Create refuses a currency other than its items' (ca9b94a); an update
 * was not checked: one carrying `currency: "EUR"` on a USD checkout answered 200 in USD, and new `line_items` priced in
 * EUR moved a checkout asked for in USD to EUR, 200. Now, as create: the currency the update asks for (else the one its
 * create asked for) must be the currency of the cart the update leaves the session on, else 400 INVALID_ARGUMENT on
 * `$.currency` in UCP's error shape and nothing changed (the session keeps its cart, its new cart is discarded).
 */
import { beforeAll, describe, expect, test } from "bun:test";
import { ALL_SCOPES, createKey, type TestKey } from "../helpers/agents.ts";
import { aEuroProduct, UCP } from "../helpers/bridge.ts";
import { BOARD } from "../helpers/partly-paid.ts";
import { useServer } from "../helpers/server.ts";

const srv = useServer({ seed: true, config: { RATE_LIMITS_ENABLED: false } });
let key: TestKey;
let euro: string; // a product of qualified-eu-shop, priced in EUR

beforeAll(async () => {
  key = await createKey(srv, { scopes: ALL_SCOPES });
  euro = await aEuroProduct(srv);
}, 120_000);

type Res = { status: number; body: any };
const send = (method: string, path: string, body?: unknown): Promise<Res> =>
  srv.json(path, { method, headers: { ...key.headers, "idempotency-key": crypto.randomUUID() }, ...(body === undefined ? {} : { body }) });
const board = { line_items: [{ item: { id: BOARD }, quantity: 1 }] };
const sessionCart = async (id: string) => (await srv.db.sql<{ cart_id: string }[]>`SELECT cart_id FROM bridge_sessions WHERE id = ${id}`)[0]!.cart_id;
const refusedOnCurrency = (r: Res, its: string) => {
  expect(r.status).toBe(400);
  expect(r.body.messages).toHaveLength(1);
  expect(r.body.messages[0]).toMatchObject({ type: "error", code: "INVALID_ARGUMENT", path: "$.currency", details: { field: "currency", currency: its } });
};

async function created(body: Record<string, unknown>): Promise<{ id: string; cartId: string; total: unknown }> {
  const r = await send("POST", UCP, body);
  expect(r.status).toBe(201);
  return { id: r.body.id, cartId: await sessionCart(r.body.id), total: r.body.totals };
}

describe("UCP update with a currency", () => {
  test("an update asking for another currency than its cart's is 400 on $.currency, nothing changed; the cart's own currency is 200", async () => {
    const s = await created(board);
    const r = await send("PUT", `${UCP}/${s.id}`, { currency: "EUR", buyer: { email: "a@example.com" } });
    refusedOnCurrency(r, "USD");
    const read = await send("GET", `${UCP}/${s.id}`);
    expect({ currency: read.body.currency, buyer: read.body.buyer ?? null, cart: await sessionCart(s.id) }).toEqual({ currency: "USD", buyer: null, cart: s.cartId });
    const same = await send("PUT", `${UCP}/${s.id}`, { currency: "usd" });
    expect({ status: same.status, currency: same.body.currency }).toEqual({ status: 200, currency: "USD" });
  }, 60_000);

  test("new line_items in another currency than the update asks for are 400 on $.currency, the session kept on its cart", async () => {
    const s = await created(board);
    const r = await send("PUT", `${UCP}/${s.id}`, { line_items: [{ item: { id: euro }, quantity: 1 }], currency: "USD" });
    refusedOnCurrency(r, "EUR");
    expect(await sessionCart(s.id)).toBe(s.cartId);
    // asking for the new items' currency moves the checkout to it
    const moved = await send("PUT", `${UCP}/${s.id}`, { line_items: [{ item: { id: euro }, quantity: 1 }], currency: "EUR" });
    expect({ status: moved.status, currency: moved.body.currency }).toEqual({ status: 200, currency: "EUR" });
  }, 60_000);

  test("new line_items in another currency than the create asked for are 400 on $.currency; without a currency asked they move the checkout", async () => {
    const asked = await created({ ...board, currency: "USD" });
    const r = await send("PUT", `${UCP}/${asked.id}`, { line_items: [{ item: { id: euro }, quantity: 1 }] });
    refusedOnCurrency(r, "EUR");
    expect(await sessionCart(asked.id)).toBe(asked.cartId);
    const read = await send("GET", `${UCP}/${asked.id}`);
    expect(read.body.currency).toBe("USD");

    const free = await created(board);
    const moved = await send("PUT", `${UCP}/${free.id}`, { line_items: [{ item: { id: euro }, quantity: 1 }] });
    expect({ status: moved.status, currency: moved.body.currency }).toEqual({ status: 200, currency: "EUR" });
  }, 60_000);

  test("a currency that is no ISO 4217 code is refused before anything is touched", async () => {
    const s = await created(board);
    const r = await send("PUT", `${UCP}/${s.id}`, { currency: "dollars", line_items: [{ item: { id: euro }, quantity: 1 }] });
    expect(r.status).toBe(400);
    expect(r.body.messages[0]).toMatchObject({ code: "INVALID_ARGUMENT", path: "$.currency" });
    expect(await sessionCart(s.id)).toBe(s.cartId);
  }, 60_000);
});
