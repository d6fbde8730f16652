/**
 * The cart actor's stored checkout session: compact (actors/cart/stored-pricing.ts), and sessions stored by the
 * previous version (whole `totals` and `previewed` state) still load, pay and re-preview.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { previewedOf, totalsOf, type StoredPricing } from "../../actors/cart/stored-pricing.ts";
import { createKey, type TestKey } from "../helpers/agents.ts";
import { startServer, type TestServer } from "../helpers/server.ts";

const BOARD = "5befd987-79cd-540c-8a5d-2ba5a30aed41"; // DS-0011, 26.95, untracked stock, demo store (MOCK)
/** Postgres compresses (TOAST) a row larger than this on every write. */
const TOAST_TUPLE_THRESHOLD = 2032;

let srv: TestServer;
let key: TestKey;

beforeAll(async () => {
  srv = await startServer({ seed: true });
  key = await createKey(srv, { scopes: ["cart", "checkout"] });
}, 120_000);
afterAll(async () => {
  await srv?.stop();
});

/** `row_bytes`: the row as written before any compression (a fresh jsonb datum is never compressed). */
type Row = { state: { session: Record<string, unknown> & { pricing?: StoredPricing } }; row_bytes: number };
const stored = async (cartId: string): Promise<Row> =>
  (
    await srv.db.sql<Row[]>`SELECT state, pg_column_size(actor_state.*) - pg_column_size(state) + pg_column_size(state::text::jsonb) AS row_bytes
      FROM actor_state WHERE kind = 'cart' AND id = ${cartId}`
  )[0];

async function previewedCart(): Promise<{ cartId: string; sessionId: string; stateHash: string }> {
  const c = await srv.json("/api/v1/agent/cart", { method: "POST", headers: key.headers, body: { items: [{ product_id: BOARD, quantity: 1 }] } });
  expect(c.status).toBe(201);
  const p = await srv.json("/api/v1/agent/checkout/preview", { method: "POST", headers: key.headers, body: { cartId: c.body.data.id } });
  expect(p.status).toBe(200);
  return { cartId: c.body.data.id, sessionId: p.body.data.checkout_session_id, stateHash: p.body.data.state_hash };
}

/** Rewrites the cart's stored session as the previous version wrote it, and drops the live activation. */
async function asStoredByPreviousVersion(cartId: string): Promise<void> {
  const { state } = await stored(cartId);
  const { pricing, ...session } = state.session;
  const legacy = { ...state, session: { ...session, totals: totalsOf({ pricing }), previewed: previewedOf({ pricing }) } };
  await srv.db.sql`UPDATE actor_state SET state = ${srv.db.sql.json(legacy as never)} WHERE kind = 'cart' AND id = ${cartId}`;
  srv.running.host!.deactivate((kind, id) => kind === "cart" && id === cartId);
}

const complete = (cartId: string, sessionId: string) =>
  srv.json("/api/v1/agent/checkout", {
    method: "POST",
    headers: key.headers,
    body: { cartId, checkout_session_id: sessionId, payment_method: "MOCK", idempotency_key: crypto.randomUUID() },
  });

describe("the cart's stored checkout session", () => {
  test("keeps of the risk gate what the completed answer reports: rule codes and decisions, no messages", async () => {
    // ten checkouts of one key within the hour raise VELOCITY_STEP_UP (observe mode: reported, not enforced)
    const busy = await createKey(srv, { scopes: ["cart", "checkout"] });
    let last: { status: number; body: any } | undefined;
    let cartId = "";
    for (let i = 0; i < 11; i++) {
      const c = await srv.json("/api/v1/agent/cart", { method: "POST", headers: busy.headers, body: { items: [{ product_id: BOARD, quantity: 1 }] } });
      cartId = c.body.data.id;
      last = await srv.json("/api/v1/agent/checkout", { method: "POST", headers: busy.headers, body: { cartId, payment_method: "MOCK" } });
      expect(last.status).toBe(200);
    }
    expect(last!.body.data.risk).toEqual({ mode: "observe", decision: "step_up", signals: [{ rule_code: "VELOCITY_STEP_UP", decision: "step_up" }] });
    const { state } = await stored(cartId);
    expect(state.session.risk).toEqual(last!.body.data.risk);
  });

  test("a preview stores its pricing compact: no whole totals or previewed state, and a one-item cart's row stays under the TOAST threshold", async () => {
    const { cartId } = await previewedCart();
    const row = await stored(cartId);
    expect(row.state.session.pricing).toBeDefined();
    expect(row.state.session.totals).toBeUndefined();
    expect(row.state.session.previewed).toBeUndefined();
    expect(row.row_bytes).toBeLessThan(TOAST_TUPLE_THRESHOLD);
  });

  test("a session stored by the previous version is paid from its own totals: 200 COMPLETED with the previewed hash and total", async () => {
    const { cartId, sessionId, stateHash } = await previewedCart();
    await asStoredByPreviousVersion(cartId);
    const d = await complete(cartId, sessionId);
    expect(d.status).toBe(200);
    expect(d.body.data).toMatchObject({ status: "COMPLETED", state_hash: stateHash, total: 33.94, total_minor: 3394, currency: "USD" });
    const [order] = await srv.db.sql<{ total_minor: number }[]>`SELECT total_minor FROM orders WHERE checkout_session_id = ${sessionId}`;
    expect(Number(order.total_minor)).toBe(3394);
  });

  test("a session stored by the previous version and previewed again is stored compact, then paid", async () => {
    const { cartId, stateHash } = await previewedCart();
    await asStoredByPreviousVersion(cartId);
    const again = await srv.json("/api/v1/agent/checkout/preview", { method: "POST", headers: key.headers, body: { cartId } });
    expect(again.status).toBe(200);
    expect(again.body.data.state_hash).toBe(stateHash);
    const row = await stored(cartId);
    expect(row.state.session.pricing).toBeDefined();
    expect(row.state.session.totals).toBeUndefined();
    expect(row.state.session.previewed).toBeUndefined();
    const d = await complete(cartId, again.body.data.checkout_session_id);
    expect(d.status).toBe(200);
    expect(d.body.data).toMatchObject({ status: "COMPLETED", state_hash: stateHash, total_minor: 3394 });
  });
});
