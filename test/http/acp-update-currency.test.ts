/**
 * ACP update's new line_items against the currency the session was created for (session 21's "known and left":
 * ACP update's currency unchecked). A 2026-04-17 create names its `currency`, and a create in another than its items'
 * is refused; an update was not checked: new line_items priced in EUR moved a session created for `usd` to `eur`, 200,
 * and its platform, which had asked for dollars, was shown amounts in euro cents. Now, as UCP's update: 400
 * INVALID_ARGUMENT on `$.line_items` in the version's Error, the new cart discarded, the session left on its cart and in
 * its currency. A session whose create asked no currency (2025-09-29 has none) follows its items, as UCP's does.
 */
import { beforeAll, describe, expect, test } from "bun:test";
import { ALL_SCOPES, createKey, type TestKey } from "../helpers/agents.ts";
import { ACP, aEuroProduct } from "../helpers/bridge.ts";
import { BOARD } from "../helpers/partly-paid.ts";
import { useServer } from "../helpers/server.ts";

const V = "2026-04-17";
const srv = useServer({ seed: true, config: { RATE_LIMITS_ENABLED: false } });
let key: TestKey;
let euro: string; // a product of qualified-eu-shop, priced in EUR

beforeAll(async () => {
  key = await createKey(srv, { scopes: ALL_SCOPES });
  euro = await aEuroProduct(srv);
}, 120_000);

type Res = { status: number; body: any };
const send = (method: string, path: string, body?: unknown, version: string | null = V): Promise<Res> =>
  srv.json(path, {
    method,
    headers: { ...key.headers, "idempotency-key": crypto.randomUUID(), ...(version ? { "api-version": version } : {}) },
    ...(body === undefined ? {} : { body }),
  });
const sessionCart = async (id: string) => (await srv.db.sql<{ cart_id: string }[]>`SELECT cart_id FROM bridge_sessions WHERE id = ${id}`)[0]!.cart_id;
const cartStatus = async (cartId: string) =>
  (await srv.db.sql<{ s: string }[]>`SELECT state->'cart'->>'status' AS s FROM actor_state WHERE kind = 'cart' AND id = ${cartId}`)[0]?.s;
const newestCartOfKey = async () =>
  (await srv.db.sql<{ id: string }[]>`SELECT id FROM actor_state WHERE kind = 'cart' ORDER BY updated_at DESC LIMIT 1`)[0]!.id;

describe("ACP update with new line_items in another currency", () => {
  test("a 2026-04-17 session created for usd refuses line_items priced in eur: 400 INVALID_ARGUMENT on $.line_items, the new cart discarded, the session unchanged", async () => {
    const made = await send("POST", ACP, { line_items: [{ id: BOARD }], currency: "usd" });
    expect(made.status).toBe(201);
    const cartId = await sessionCart(made.body.id);
    const r = await send("POST", `${ACP}/${made.body.id}`, { line_items: [{ id: euro }] });
    expect({ status: r.status, type: r.body.type, code: r.body.code, param: r.body.param }).toEqual({ status: 400, type: "invalid_request", code: "INVALID_ARGUMENT", param: "$.line_items" });
    expect(r.body.message).toContain("eur");
    expect(r.body.message).toContain("usd");
    expect(await sessionCart(made.body.id)).toBe(cartId);
    expect(await cartStatus(await newestCartOfKey())).toBe("ABANDONED");
    const read = await send("GET", `${ACP}/${made.body.id}`);
    expect({ status: read.status, currency: read.body.currency, items: read.body.line_items.map((l: any) => l.item.id) }).toEqual({ status: 200, currency: "usd", items: [BOARD] });
  }, 60_000);

  test("new line_items in the session's own currency are an update as before", async () => {
    const made = await send("POST", ACP, { line_items: [{ id: BOARD }], currency: "usd" });
    const r = await send("POST", `${ACP}/${made.body.id}`, { line_items: [{ id: BOARD, quantity: 2 }] });
    expect({ status: r.status, currency: r.body.currency }).toEqual({ status: 200, currency: "usd" });
  }, 60_000);

  test("a session whose create asked no currency (2025-09-29) follows its new items into eur", async () => {
    const made = await send("POST", ACP, { items: [{ id: BOARD, quantity: 1 }] }, "2025-09-29");
    expect(made.status).toBe(201);
    const r = await send("POST", `${ACP}/${made.body.id}`, { items: [{ id: euro, quantity: 1 }] }, "2025-09-29");
    expect({ status: r.status, currency: r.body.currency }).toEqual({ status: 200, currency: "eur" });
  }, 60_000);
});
