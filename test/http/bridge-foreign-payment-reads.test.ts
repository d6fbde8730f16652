/**
 * Review R-2: audit B-6's fallback (index.ts `boundToAnotherKey`) asked the cart for a `precheck` (a pricing, in the
 * cart's turn, serialized with its writes) on every read and update of an ACP/UCP session whose cart waits on a
 * payment another route (REST, MCP) started: none of the 64 attempts the bridge recomputes names such a payment, so
 * the fallback ran every time, not only "past them" as docs/protocols.md said. The session now counts its completes
 * (`meta.completes`, in the complete's claim), and the cart is asked only when that count could exceed the attempts
 * recomputed, or for a session older than the count.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { ALL_SCOPES, createKey, login, type TestKey } from "../helpers/agents.ts";
import { ACP, UCP, sendAs } from "../helpers/bridge.ts";
import { BOARD } from "../helpers/partly-paid.ts";
import { startServer, type TestServer } from "../helpers/server.ts";

let srv: TestServer;
let key: TestKey;
let prechecks = 0;

beforeAll(async () => {
  srv = await startServer({ seed: true, config: { RATE_LIMITS_ENABLED: false } });
  key = await createKey(srv, { scopes: ALL_SCOPES, token: await login(srv) });
  const svc = srv.running.services as unknown as { actors: { ask: (...a: unknown[]) => unknown } };
  const ask = svc.actors.ask.bind(svc.actors);
  svc.actors.ask = (...a: unknown[]) => {
    if (a[2] === "precheck") prechecks++;
    return ask(...a);
  };
}, 120_000);
afterAll(async () => {
  await srv?.stop();
});

const cartOf = async (sessionId: string) =>
  (await srv.db.sql<{ cart_id: string }[]>`SELECT cart_id::text AS cart_id FROM bridge_sessions WHERE id = ${sessionId}`)[0]!.cart_id;
const completesOf = async (sessionId: string) =>
  (await srv.db.sql<{ n: number | null }[]>`SELECT (meta->>'completes')::int AS n FROM bridge_sessions WHERE id = ${sessionId}`)[0]!.n;

/** The session's cart put into payment through REST with a token that asks the buyer's approval (202). */
async function waitingThroughRest(sessionId: string): Promise<void> {
  const r = await srv.json("/api/v1/agent/checkout", { method: "POST", headers: key.headers, body: { cartId: await cartOf(sessionId), payment_method: "tok_needs_approval", idempotency_key: crypto.randomUUID() } });
  expect(r.status).toBe(202);
}
const texts = (body: { messages: { content: string }[] }) => body.messages.map((m) => m.content).join("\n");

describe("a session whose cart waits on another route's payment is told so without asking the cart on every read", () => {
  test("ACP: three reads ask the cart for no precheck and still read the payment as another route's", async () => {
    const made = await sendAs(srv, key, "POST", ACP, { items: [{ id: BOARD, quantity: 1 }] });
    expect(made.status).toBe(201);
    const id = made.body.id as string;
    await waitingThroughRest(id);
    prechecks = 0;
    for (let i = 0; i < 3; i++) {
      const read = await sendAs(srv, key, "GET", `${ACP}/${id}`);
      expect(read.status).toBe(200);
      expect(texts(read.body)).toContain("started through another route of this service");
    }
    expect(prechecks).toBe(0);
  }, 60_000);

  test("UCP: reads and an update's refusal ask the cart for no precheck", async () => {
    const made = await sendAs(srv, key, "POST", UCP, { line_items: [{ item: { id: BOARD }, quantity: 1 }] });
    expect(made.status).toBe(201);
    const id = made.body.id as string;
    await waitingThroughRest(id);
    prechecks = 0;
    const read = await sendAs(srv, key, "GET", `${UCP}/${id}`);
    expect(read.status).toBe(200);
    expect(read.body.messages.map((m: { code: string }) => m.code)).toContain("payment_started_elsewhere");
    const update = await sendAs(srv, key, "PUT", `${UCP}/${id}`, { line_items: [{ item: { id: BOARD }, quantity: 2 }] });
    expect(update.status).toBe(409);
    expect(prechecks).toBe(0);
  }, 60_000);

  test("a session counts its completes as each claims it, a refused one too, and not its updates", async () => {
    const made = await sendAs(srv, key, "POST", ACP, { items: [{ id: BOARD, quantity: 1 }] });
    const id = made.body.id as string;
    expect(await completesOf(id)).toBe(0);
    const declined = await sendAs(srv, key, "POST", `${ACP}/${id}/complete`, { payment_data: { token: "tok_decline", provider: "stripe" } });
    expect(declined.status).toBe(402);
    expect(await completesOf(id)).toBe(1);
    // counted before any cart work, so a complete the bridge refuses counts too: the count is never short
    const noToken = await sendAs(srv, key, "POST", `${ACP}/${id}/complete`, { payment_data: {} });
    expect(noToken.status).toBe(400);
    expect(await completesOf(id)).toBe(2);
    const update = await sendAs(srv, key, "POST", `${ACP}/${id}`, { items: [{ id: BOARD, quantity: 2 }] });
    expect(update.status).toBe(200);
    expect(await completesOf(id)).toBe(2);
  }, 60_000);

  test("a session older than the count is still asked of the cart, so its own payment past 64 attempts is never another route's", async () => {
    const made = await sendAs(srv, key, "POST", ACP, { items: [{ id: BOARD, quantity: 1 }] });
    const id = made.body.id as string;
    await srv.db.sql`UPDATE bridge_sessions SET meta = meta - 'completes' WHERE id = ${id}`;
    await waitingThroughRest(id);
    prechecks = 0;
    const read = await sendAs(srv, key, "GET", `${ACP}/${id}`);
    expect(read.status).toBe(200);
    expect(texts(read.body)).toContain("started through another route of this service");
    expect(prechecks).toBe(1);
  }, 60_000);
});
