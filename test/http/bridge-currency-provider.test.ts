/**
 * Helper A (session 21), two bridge inputs that were not read:
 * - UCP create's `currency`: a checkout asked for in EUR was created in the items' USD (201), its buyer shown amounts
 *   in a currency the platform had not asked for. Another currency than the items' is now 400 INVALID_ARGUMENT on
 *   `$.currency` in UCP's error shape, with the cart it made discarded (as ACP 2026-04-17's create does); the items'
 *   own currency, in any case, is accepted; a value that is no currency code is refused before any cart is made.
 * - ACP 2025-09-29 complete's `payment_data.provider`: any value was ignored and the token charged on our card rail.
 *   Its schema's only provider is `stripe` (what clients send); another one is now 400 INVALID_ARGUMENT on
 *   `$.payment_data.provider` in ACP's error shape, before anything is charged; no provider at all stays accepted.
 */
import { beforeAll, describe, expect, test } from "bun:test";
import { ALL_SCOPES, createKey, type TestKey } from "../helpers/agents.ts";
import { ACP, sendAs, UCP } from "../helpers/bridge.ts";
import { BOARD } from "../helpers/partly-paid.ts";
import { useServer } from "../helpers/server.ts";

const srv = useServer({ seed: true, config: { RATE_LIMITS_ENABLED: false } });
let key: TestKey;

beforeAll(async () => {
  key = await createKey(srv, { scopes: ALL_SCOPES });
}, 120_000);

type Res = { status: number; body: any };
const send = (method: string, path: string, body?: unknown, headers: Record<string, string> = {}): Promise<Res> =>
  srv.json(path, { method, headers: { ...key.headers, "idempotency-key": crypto.randomUUID(), ...headers }, ...(body === undefined ? {} : { body }) });
const carts = async () => (await srv.db.sql<{ n: number }[]>`SELECT count(*)::int AS n FROM actor_state WHERE kind = 'cart'`)[0]!.n;
const lastCartStatus = async () =>
  (await srv.db.sql<{ status: string }[]>`SELECT state->'cart'->>'status' AS status FROM actor_state WHERE kind = 'cart' ORDER BY updated_at DESC LIMIT 1`)[0]!.status;
const sessionsOfKey = async () => (await srv.db.sql<{ n: number }[]>`SELECT count(*)::int AS n FROM bridge_sessions WHERE agent_key_id = ${key.id}`)[0]!.n;
const paidOrders = async () => (await srv.db.sql<{ n: number }[]>`SELECT count(*)::int AS n FROM orders WHERE agent_key_id = ${key.id} AND status = 'paid'`)[0]!.n;
const line = { line_items: [{ item: { id: BOARD }, quantity: 1 }] };

describe("UCP create with a currency", () => {
  test("another currency than the items' is 400 INVALID_ARGUMENT on $.currency in UCP's shape, its cart discarded and no session made", async () => {
    const [c, s] = [await carts(), await sessionsOfKey()];
    const r = await send("POST", UCP, { ...line, currency: "EUR" });
    expect(r.status).toBe(400);
    expect(r.body.ucp).toMatchObject({ version: expect.any(String) });
    expect(r.body.messages).toHaveLength(1);
    expect(r.body.messages[0]).toMatchObject({ type: "error", code: "INVALID_ARGUMENT", path: "$.currency", severity: "requires_buyer_input", details: { field: "currency", currency: "USD" } });
    expect(r.body.messages[0].content).toContain("USD");
    expect(await carts()).toBe(c + 1);
    expect(await lastCartStatus()).toBe("ABANDONED");
    expect(await sessionsOfKey()).toBe(s);
  }, 60_000);

  test("the items' currency, in either case, is a 201 checkout in it", async () => {
    for (const currency of ["USD", "usd"]) {
      const r = await send("POST", UCP, { ...line, currency });
      expect(r.status).toBe(201);
      expect(r.body.currency).toBe("USD");
    }
  }, 60_000);

  test("a currency that is no ISO 4217 code is refused before any cart is made", async () => {
    const c = await carts();
    for (const currency of ["dollars", 840, ""]) {
      const r = await send("POST", UCP, { ...line, currency });
      expect(r.status).toBe(400);
      expect(r.body.messages[0]).toMatchObject({ code: "INVALID_ARGUMENT", path: "$.currency" });
    }
    expect(await carts()).toBe(c);
  }, 60_000);
});

describe("ACP complete with a payment provider", () => {
  const created = async () => {
    const r = await send("POST", ACP, { items: [{ id: BOARD, quantity: 1 }] });
    expect(r.status).toBe(201);
    return r.body.id as string;
  };

  test("an unknown provider is 400 INVALID_ARGUMENT on $.payment_data.provider in ACP's shape, and nothing is charged", async () => {
    const id = await created();
    for (const provider of ["adyen", "sandbox", 42, { name: "stripe" }]) {
      const r = await send("POST", `${ACP}/${id}/complete`, { payment_data: { token: "tok_approve", provider } });
      expect(r.status).toBe(400);
      expect(r.body).toMatchObject({ type: "invalid_request", code: "INVALID_ARGUMENT", param: "$.payment_data.provider", details: { field: "payment_data.provider", allowed: ["stripe"] } });
    }
    expect(await paidOrders()).toBe(0);
    const read = await srv.json(`${ACP}/${id}`, { headers: key.headers });
    expect(read.body.status).toBe("ready_for_payment");
  }, 60_000);

  test("in 2026-04-17, 2025-09-29's payment_data.token with an unknown provider is refused alike", async () => {
    const id = await created();
    const r = await send("POST", `${ACP}/${id}/complete`, { payment_data: { token: "tok_approve", provider: "adyen" } }, { "api-version": "2026-04-17" });
    expect(r.status).toBe(400);
    expect(r.body).toMatchObject({ type: "invalid_request", code: "INVALID_ARGUMENT", param: "$.payment_data.provider" });
    expect(await paidOrders()).toBe(0);
  }, 60_000);

  test("stripe, or no provider, completes as before", async () => {
    const before = await paidOrders();
    for (const payment_data of [{ token: "tok_approve", provider: "stripe" }, { token: "tok_approve" }]) {
      const id = await created();
      const r = await send("POST", `${ACP}/${id}/complete`, { payment_data });
      expect(r.status).toBe(200);
      expect(r.body.status).toBe("completed");
    }
    expect(await paidOrders()).toBe(before + 2);
  }, 60_000);
});
