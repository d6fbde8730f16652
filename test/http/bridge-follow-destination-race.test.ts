/**
 * Review R (session 21) of ca9b94a: a read of an ACP/UCP session notices that its cart took another destination through
 * REST or MCP and quotes it with the cart's own `selectShipping` (shipping.ts `followCartDestination`). That quote is a
 * cart write: sent with the destination of the cart view the read took a moment before, it moved the cart back there
 * when the agent had moved it again in between (a REST preview with another `shipping`): a GET changed where the cart
 * ships and what it charges, and reopened the preview the agent had just made. The quote now carries the revision of
 * the view it was built from, so a cart that moved since refuses it and the read changes nothing.
 *
 * The race is driven deterministically: the test wraps the server's actor client so that the agent's second REST
 * preview runs (through HTTP, to the end) right before the read's `selectShipping` reaches the cart.
 */
import { beforeAll, describe, expect, test } from "bun:test";
import { ALL_SCOPES, createKey, type TestKey } from "../helpers/agents.ts";
import { summitProduct } from "../helpers/ap2.ts";
import { ACP, UCP } from "../helpers/bridge.ts";
import { useServer } from "../helpers/server.ts";

const srv = useServer({ seed: true, config: { RATE_LIMITS_ENABLED: false } });
const US = { name: "Ada Lovelace", line_one: "1 Main St", city: "San Francisco", state: "CA", country: "US", postal_code: "94107" };
const TORONTO = { country_code: "CA", postal_code: "M5V 2T6" };
const VANCOUVER = { country_code: "CA", postal_code: "V6B 1A1" };

/** Run once, right before the next cart `selectShipping` without an option reaches the cart (then cleared). */
let beforeFollow: (() => Promise<void>) | null = null;

beforeAll(() => {
  const actors = srv.running.services.actors;
  const ask = actors.ask.bind(actors);
  actors.ask = (async (def, id, type, body, opts) => {
    if (type === "selectShipping" && !(body as { shipping?: { optionId?: string } }).shipping?.optionId && beforeFollow) {
      const hook = beforeFollow;
      beforeFollow = null;
      await hook();
    }
    return ask(def, id, type, body, opts);
  }) as typeof actors.ask;
});

const send = (k: TestKey, method: string, path: string, body?: unknown) =>
  srv.json(path, { method, headers: { ...k.headers, "idempotency-key": crypto.randomUUID() }, ...(body === undefined ? {} : { body }) });
const cartOf = async (sessionId: string) => (await srv.db.sql<{ cart_id: string }[]>`SELECT cart_id::text AS cart_id FROM bridge_sessions WHERE id = ${sessionId}`)[0]!.cart_id;
const cartState = async (cartId: string) =>
  (await srv.db.sql<{ revision: number; postal: string | null; status: string | null }[]>`
    SELECT (state->'cart'->>'revision')::int AS revision, state->'cart'->'shipping'->>'postalCode' AS postal, state->'session'->>'status' AS status
    FROM actor_state WHERE kind = 'cart' AND id = ${cartId}`)[0]!;
const restPreview = async (k: TestKey, cartId: string, shipping: { country_code: string; postal_code: string }) => {
  const pv = await srv.json("/api/v1/agent/checkout/preview", { method: "POST", headers: k.headers, body: { cartId, shipping } });
  expect(pv.status).toBe(200);
  return pv.body.data.totals.total_minor as number;
};

async function readRacingAMove(k: TestKey, path: string, sessionId: string) {
  const cartId = await cartOf(sessionId);
  await restPreview(k, cartId, TORONTO); // the cart ships to Toronto; the session still records its own address
  let moved: ReturnType<typeof cartState> | null = null;
  beforeFollow = async () => {
    await restPreview(k, cartId, VANCOUVER); // the agent moves the cart again while the read is under way
    moved = cartState(cartId);
  };
  const read = await srv.json(`${path}/${sessionId}`, { headers: k.headers });
  expect(beforeFollow).toBeNull(); // the read did quote the cart, after the move
  return { read, cartId, moved: await moved! };
}

describe("a session read that follows its cart's destination while the agent moves the cart again", () => {
  test("ACP: the read leaves the cart where the agent last sent it, its preview still ready for payment", async () => {
    const k = await createKey(srv, { scopes: ALL_SCOPES });
    const c = await send(k, "POST", ACP, { items: [{ id: await summitProduct(srv) }], fulfillment_address: US });
    expect(c.status).toBe(201);
    const { read, cartId, moved } = await readRacingAMove(k, ACP, c.body.id);
    expect(read.status).toBe(200);
    expect(moved).toMatchObject({ postal: "V6B 1A1", status: "READY_FOR_PAYMENT" });
    expect(await cartState(cartId)).toEqual(moved); // not moved back to Toronto, nor reopened, by a read
    // the next read follows where the cart ships now
    const next = await srv.json(`${ACP}/${c.body.id}`, { headers: k.headers });
    expect(next.body.fulfillment_address).toMatchObject({ country: "CA", postal_code: "V6B 1A1" });
    expect(await cartState(cartId)).toEqual(moved);
  }, 60_000);

  test("UCP: the read leaves the cart where the agent last sent it, its preview still ready for payment", async () => {
    const k = await createKey(srv, { scopes: ALL_SCOPES });
    const c = await send(k, "POST", UCP, { line_items: [{ item: { id: await summitProduct(srv) }, quantity: 1 }], fulfillment: { methods: [{ destinations: [{ address_country: "US", postal_code: "94107" }] }] } });
    expect(c.status).toBe(201);
    const { read, cartId, moved } = await readRacingAMove(k, UCP, c.body.id);
    expect(read.status).toBe(200);
    expect(moved).toMatchObject({ postal: "V6B 1A1", status: "READY_FOR_PAYMENT" });
    expect(await cartState(cartId)).toEqual(moved);
  }, 60_000);
});
